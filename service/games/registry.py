"""Every game the service offers, by kind (docs/engine.md, Games and the registry).

:data:`GAMES` maps a table's ``game`` to its :class:`~service.games.protocol.GameSpec`, in
the order the service lists them (two-player Gin, the default, first). Everything that
differs between games asks the spec found here: :func:`spec` by a table's game,
:func:`spec_of` by a match, :func:`kind_of` by a stored state (one without a ``kind`` is
two-player Gin's, as every Gin state stored before Gin's carried one).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from service.games.common.errors import InvalidState
from service.games.common.settings import GameKind
from service.games.gin.spec import GIN
from service.games.multi_gin.partnership_spec import GIN_PARTNERSHIP
from service.games.multi_gin.three_player_spec import GIN_THREE
from service.games.protocol import GameSpec, MatchEngine
from service.games.rummy.spec import RUMMY

#: The games, by the ``game`` a table names.
GAMES: dict[GameKind, GameSpec[Any]] = {g.kind: g for g in (GIN, GIN_THREE, GIN_PARTNERSHIP, RUMMY)}
#: The game a table plays when its request names none.
DEFAULT = GIN
#: The games by the ``KIND`` of their engines (what a stored state's ``kind`` says).
BY_ENGINE_KIND: dict[str, GameSpec[Any]] = {g.engine.KIND: g for g in GAMES.values()}


def spec(kind: GameKind | str) -> GameSpec[Any]:
    """The game a table's ``game`` names.

    :raises KeyError: when no game is of that kind.
    """
    return GAMES[GameKind(kind)]


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
