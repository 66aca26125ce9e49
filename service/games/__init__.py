"""Every game behind one interface: what the service asks of a match, whatever it plays
(docs/engine.md, Games and the registry).

A game is a :class:`~service.games.protocol.GameSpec` in :mod:`service.games.registry`;
its matches are its engine's (:class:`~service.games.protocol.MatchEngine`). The functions
here are what the use cases call: each finds the match's game in the registry and asks it,
so that none of them knows which game it plays. :func:`replay_log` and :func:`timeout` are
the same for every game.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from service.games.common.errors import InvalidState, RulesError
from service.games.common.seats import renamed
from service.games.common.settings import MatchSettings
from service.games.common.statement import renamed_statement
from service.games.protocol import RESIGN, Deal, EndedHand, GameSpec, MatchEngine, Settled
from service.games.registry import BY_ENGINE_KIND as _GAMES
from service.games.registry import GAMES, kind_of, spec, spec_of

__all__ = [
    "GAMES",
    "AnyMatch",
    "Deal",
    "EndedHand",
    "GameSpec",
    "LogRefused",
    "Logged",
    "MatchEngine",
    "Settled",
    "acting",
    "apply",
    "deal",
    "due_seat",
    "ended_hand",
    "forfeit",
    "from_state",
    "hand_of",
    "kind_of",
    "live_hands",
    "new_match",
    "pending_deal",
    "replay_log",
    "restart",
    "result",
    "seated_statement",
    "spec",
    "spec_of",
    "statement",
    "timeout",
    "view",
]

#: A match of any game: an engine of one of the registry's games.
AnyMatch = MatchEngine


def new_match(
    settings: MatchSettings, players: int, randbelow: Callable[[int], int] = secrets.randbelow
) -> AnyMatch:
    """A new match of the table's game for ``players`` seats (:meth:`GameSpec.new_match`)."""
    match: AnyMatch = spec(settings.game).new_match(settings, players, randbelow)
    return match


def from_state(state: Mapping[str, Any]) -> AnyMatch:
    """The match a stored state (``to_dict``) holds. :raises InvalidState: if malformed."""
    match: AnyMatch = kind_of(state).engine.from_dict(dict(state))
    return match


def restart(state: Mapping[str, Any]) -> AnyMatch:
    """Where a replay of the stored ``state``'s log starts (:meth:`GameSpec.restart`)."""
    match: AnyMatch = kind_of(state).restart(state)
    return match


def pending_deal(match: AnyMatch) -> Deal | None:
    """The next hand the match waits for, or None (a partnership deal waits for two)."""
    return _GAMES[match.KIND].pending_deal(match)


def deal(match: AnyMatch, server_seed: str, seeds_by_seat: Sequence[str], now_ms: int) -> Deal:
    """Deal :func:`pending_deal` from the seeds (:meth:`GameSpec.deal`); the hand dealt."""
    return _GAMES[match.KIND].deal(match, server_seed, seeds_by_seat, now_ms)


def live_hands(match: AnyMatch) -> set[int]:
    """The numbers of the hands being played."""
    return _GAMES[match.KIND].live_hands(match)


def ended_hand(match: AnyMatch, number: int) -> EndedHand:
    """Hand ``number``, which the last change ended (:meth:`GameSpec.ended_hand`)."""
    return _GAMES[match.KIND].ended_hand(match, number)


def hand_of(match: AnyMatch, seat: int) -> int | None:
    """The number of the hand ``seat`` plays now, or None (sitting out, none being played)."""
    return _GAMES[match.KIND].hand_of(match, seat)


def acting(match: AnyMatch) -> tuple[int, ...]:
    """The seats to act now."""
    return _GAMES[match.KIND].acting(match)


def apply(match: AnyMatch, seat: int, action: str, *, at: str, now_ms: int) -> str:
    """Apply ``seat``'s action text (:meth:`GameSpec.apply`); its text as logged."""
    return _GAMES[match.KIND].apply(match, seat, action, at=at, now_ms=now_ms)


def due_seat(match: AnyMatch, now_ms: int) -> int | None:
    """The seat whose clock ran out first by ``now_ms`` (the one :func:`timeout` acts for)."""
    return _GAMES[match.KIND].due_seat(match, now_ms)


def timeout(match: AnyMatch, now_ms: int, *, at: str) -> tuple[int, str] | None:
    """Act for the seat whose time ran out (9.2, 11.6.1): (the seat, the outcome), or None
    when nobody's time is spent."""
    due = due_seat(match, now_ms)
    if due is None:
        return None
    outcome = match.timeout(now_ms, at=at)
    return None if outcome is None else (due, outcome)


def forfeit(match: AnyMatch, seat: int, reason: str, *, at: str, now_ms: int) -> None:
    """``seat`` forfeits (9.3, 11.6.2, 11.6.3)."""
    _GAMES[match.KIND].forfeit(match, seat, reason, at=at, now_ms=now_ms)


def result(match: AnyMatch) -> dict[str, Any]:
    """How a match that is over ended (:meth:`GameSpec.result`)."""
    return _GAMES[match.KIND].result(match)


def view(match: AnyMatch, seat: int | None) -> dict[str, Any]:
    """The fields of the match view that come from its game, as ``seat`` sees them."""
    return _GAMES[match.KIND].view(match, seat)


def statement(match: AnyMatch, settings: MatchSettings, escrow: Sequence[int]) -> Settled:
    """The settlement of a match that is over, given what each seat has at the table (its
    stake, buy-in, or table balance on a per-hand Rummy table) (:meth:`GameSpec.statement`)."""
    return _GAMES[match.KIND].statement(match, settings, escrow)


def seated_statement(data: Mapping[str, Any], seats: Sequence[int]) -> dict[str, Any]:
    """The statement ``data`` (a :class:`Settled`'s, with its ``players`` beside it) of a
    Rummy hand or a match of more than two seats whose match seat ``i`` is table seat
    ``seats[i]``, with every player it names by table seat: the result's ``winner``,
    ``forfeiter``, ``winners`` and ``forfeiters``, and the statement's own seats
    (:func:`~service.games.common.statement.renamed_statement`: the keys of its
    figures by seat, ``receivers``, each line's ``payer`` and ``payee`` and its text). Its
    lists by seat (``escrow``, ``payouts``, ``net``, ``players``) keep match seat order, which
    ``seats`` states. What a ``rummy_per_hand`` hand's settlement shows: its match seats are
    the players dealt in, 0 up, and the service names players by table seat only.

    :raises SettlementError: when a line of ``data`` is not a statement line.
    """
    named: dict[str, Any] = renamed({k: data[k] for k in _RESULT_SEATS if k in data}, seats)
    return renamed_statement(data, seats) | named


#: The keys of :func:`result` that name players.
_RESULT_SEATS = ("winner", "forfeiter", "winners", "forfeiters")


@dataclass(frozen=True, slots=True)
class Logged:
    """One entry of a match's action log, as a replay reads it: who, what, when."""

    seat: int | None
    action: str
    at_ms: int
    at: str


class LogRefused(InvalidState):
    """Raised when a logged change does not replay: the rules refuse it, it is a timeout that
    was not due or for another seat, or the hand it leads to has no revealed seed."""

    def __init__(self, index: int, entry: Logged, reason: str) -> None:
        super().__init__(f"log entry {index} ({entry.action!r}, seat {entry.seat}): {reason}")
        #: Where the entry is in the log (0 for the first).
        self.index = index
        self.entry = entry
        self.reason = reason


def replay_log(
    start: AnyMatch,
    server_seeds: Mapping[int, str],
    seeds_by_seat: Sequence[str],
    log: Sequence[Logged],
    seen: Callable[[Deal | EndedHand], None] | None = None,
) -> AnyMatch:
    """The match ``start`` after every logged change, each hand dealt from its revealed
    server seed: what the service must have stored if it played by the rules. ``seen`` is
    told of each hand as it is dealt (its :class:`Deal`) and as it ends (its
    :class:`EndedHand`), in the order the service recorded them.

    :raises LogRefused: when an entry is one the rules refuse, a timeout that was not due
        or for another seat, or a hand's seed is missing (the log does not replay).
    """
    match = start
    game = _GAMES[match.KIND]
    for index, entry in enumerate(log):
        try:
            live = game.live_hands(match)
            _replay_entry(game, match, entry)
            for number in sorted(live - game.live_hands(match)):
                if seen is not None:
                    seen(game.ended_hand(match, number))
            while (coming := game.pending_deal(match)) is not None:
                seed = server_seeds.get(coming.number)
                if seed is None:
                    raise InvalidState(f"hand {coming.number} has no revealed seed")
                dealt = game.deal(match, seed, seeds_by_seat, entry.at_ms)
                if seen is not None:
                    seen(dealt)
        except RulesError as exc:
            raise LogRefused(index, entry, str(exc)) from exc
    return match


def _replay_entry(game: GameSpec[Any], match: AnyMatch, entry: Logged) -> None:
    """Apply one logged change to ``match`` as the service applied it."""
    if entry.action == "START":
        return
    if entry.action == RESIGN:
        if entry.seat is None:
            raise InvalidState("a resignation names its seat")
        game.forfeit(match, entry.seat, "resign", at=entry.at, now_ms=entry.at_ms)
    elif entry.action.startswith("TIMEOUT "):
        done = timeout(match, entry.at_ms, at=entry.at)
        if done is None or done != (entry.seat, entry.action.removeprefix("TIMEOUT ")):
            raise InvalidState(f"logged {entry.action!r} for seat {entry.seat}, not {done!r}")
    else:
        if entry.seat is None:
            raise InvalidState(f"action {entry.action!r} names no seat")
        game.apply(match, entry.seat, entry.action, at=entry.at, now_ms=entry.at_ms)
