"""Every game the service offers, by kind (docs/engine.md, Games and the registry).

:data:`GAMES` maps a table's ``game`` to its :class:`~service.games.protocol.GameSpec`, in
the order the service lists them (two-player Gin, the default, first). This is the one module
that imports every game's spec; adding a game is one line in :data:`SPECS`. Everything that
differs between games asks the spec found here: :func:`spec` by a table's game,
:func:`spec_of` by a match, :func:`kind_of` by a stored state (one without a ``kind`` is
two-player Gin's, as every Gin state stored before Gin's carried one). What every game shares
is derived from the specs: the formats offered and their stakes, the options a table
carries, and the formats and seats by game.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from service.games.common.errors import InvalidState
from service.games.common.settings import Format, GameKind
from service.games.gin.spec import GIN
from service.games.multi_gin.partnership_spec import GIN_PARTNERSHIP
from service.games.multi_gin.three_player_spec import GIN_THREE
from service.games.protocol import GameSpec, MatchEngine
from service.games.rummy.spec import RUMMY

#: The games offered, in the order the service lists them; the first is the default.
SPECS: tuple[GameSpec[Any], ...] = (GIN, GIN_THREE, GIN_PARTNERSHIP, RUMMY)

#: The games, by the ``game`` a table names.
GAMES: dict[GameKind, GameSpec[Any]] = {g.kind: g for g in SPECS}
#: The game a table plays when its request names none.
DEFAULT = SPECS[0]
#: The games by the ``KIND`` of their engines (what a stored state's ``kind`` says).
BY_ENGINE_KIND: dict[str, GameSpec[Any]] = {g.engine.KIND: g for g in SPECS}
#: The formats each game is played in (11.4), the first being the default.
GAME_FORMATS: dict[GameKind, tuple[Format, ...]] = {g.kind: g.formats for g in SPECS}
#: The seats of the games that have a fixed number of them.
GAME_SEATS: dict[GameKind, int] = {
    g.kind: g.seat_counts[0] for g in SPECS if len(g.seat_counts) == 1
}
#: Every format a table can be opened in, each once, in the games' order.
FORMATS: tuple[Format, ...] = tuple(dict.fromkeys(f for g in SPECS for f in g.formats))
#: The formats played for a fixed equal stake; every other one takes a buy-in.
FIXED_STAKE_FORMATS: tuple[Format, ...] = tuple(
    dict.fromkeys(f for g in SPECS for f in g.fixed_stake)
)
#: The formats one hand decides: no target, and bots knock at their first chance.
SINGLE_HAND_FORMATS: tuple[Format, ...] = tuple(
    dict.fromkeys(f for g in SPECS for f in g.single_hand)
)
#: The continuous formats: players come and go between hands, each hand settled (11.5.1).
CONTINUOUS_FORMATS: tuple[Format, ...] = tuple(
    dict.fromkeys(f for g in SPECS if g.continuous for f in g.continuous.formats)
)
#: Every action a seat may send, each once, in the games' order.
ACTIONS: tuple[str, ...] = tuple(dict.fromkeys(a for g in SPECS for a in g.actions))
#: Every game's options, by the key a table carries them under, with the spec that reads
#: them (the first game declaring the key: three-player Gin reads Gin's ``ruleset``).
OPTIONS: dict[str, GameSpec[Any]] = {}
for _game in SPECS:
    OPTIONS.setdefault(_game.options_key, _game)


def spec(kind: GameKind | str) -> GameSpec[Any]:
    """The game a table's ``game`` names.

    :raises ValueError: when no game is of that kind.
    """
    found = GAMES.get(GameKind(kind))
    if found is None:
        offered = ", ".join(g.value for g in GAMES)
        raise ValueError(f"no game is {kind!r}: the games are {offered}")
    return found


def spec_of(match: MatchEngine) -> GameSpec[Any]:
    """The game ``match`` is a match of."""
    return BY_ENGINE_KIND[match.KIND]


def kind_of(state: Mapping[str, Any]) -> GameSpec[Any]:
    """The game of a stored match state (its ``kind``; none: two-player Gin).

    :raises InvalidState: when the kind is not a game's.
    """
    kind = state.get("kind", GIN.engine.KIND)
    found = BY_ENGINE_KIND.get(kind) if isinstance(kind, str) else None
    if found is None:
        raise InvalidState(f"unknown match kind {kind!r}")
    return found
