"""Every game behind one interface: what the service asks of a match, whatever it plays.

The service stores, deals, plays, times out, shows and settles a match without knowing its
game: this module is the only place that does. It starts the right engine for a table's
:class:`~service.formats.MatchSettings` (two-player :class:`~service.formats.Match`,
:class:`~service.formats.ThreePlayerMatch`, :class:`~service.formats.PartnershipMatch`,
:class:`~service.formats.RummyMatch`), restores one from its stored state, deals the hands a
match waits for from a server seed and the seats' client seeds (10.2, 11.6.4), reports the
hands a change ended with their histories, and computes the settlement statement from the
payout maths of the match's game and format (6, 11.4-11.7).

Seats are match seats throughout. A dealt hand has a ``number`` within the match (the
fairness nonce), the ``seats`` dealt in (ascending) and a ``dealer``.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from service.formats.match import RESIGN, Match, MatchStatus
from service.formats.multi_common import renamed
from service.formats.partnership import PartnershipMatch
from service.formats.payout import settle_match
from service.formats.payout_multi import (
    PARTNERSHIP_TEAMS,
    match_play_forfeit,
    partnership_classic,
    partnership_classic_forfeit,
    partnership_match_play,
    rummy_match,
    rummy_penalty,
    rummy_per_hand,
    settle_three_player,
    three_player_match_play,
)
from service.formats.payout_multi.statement import MultiStatement, renamed_statement
from service.formats.rummy_match import RummyMatch, RummyMatchSettings
from service.formats.settings import Format, GameKind, MatchSettings
from service.formats.three_player import Seating, ThreePlayerMatch
from service.rules import Action, fair
from service.rules.errors import InvalidState
from service.rules.rummy.actions import RummyAction
from service.rules.rummy.rules import Scoring

AnyMatch = Match | ThreePlayerMatch | PartnershipMatch | RummyMatch
MultiGin = ThreePlayerMatch | PartnershipMatch

_KINDS: dict[str, type[ThreePlayerMatch] | type[PartnershipMatch] | type[RummyMatch]] = {
    ThreePlayerMatch.KIND: ThreePlayerMatch,
    PartnershipMatch.KIND: PartnershipMatch,
    RummyMatch.KIND: RummyMatch,
}


def game_of(match: AnyMatch) -> GameKind:
    if isinstance(match, RummyMatch):
        return GameKind.RUMMY
    if isinstance(match, ThreePlayerMatch):
        return GameKind.GIN_THREE
    if isinstance(match, PartnershipMatch):
        return GameKind.GIN_PARTNERSHIP
    return GameKind.GIN


def new_match(
    settings: MatchSettings, players: int, randbelow: Callable[[int], int] = secrets.randbelow
) -> AnyMatch:
    """A new match of the table's game for ``players`` seats (the seats taken), its first
    dealer (or seating, or dealing team) drawn with ``randbelow``."""
    if settings.game is GameKind.GIN:
        return Match(settings, randbelow(2))
    if settings.game is GameKind.GIN_THREE:
        return ThreePlayerMatch(settings, Seating.drawn(randbelow))
    if settings.game is GameKind.GIN_PARTNERSHIP:
        return PartnershipMatch(settings, PartnershipMatch.drawn_dealing_team(randbelow))
    rummy = RummyMatchSettings(players, randbelow(players), settings.rummy, settings.clock)
    return RummyMatch(rummy)


def from_state(state: Mapping[str, Any]) -> AnyMatch:
    """The match a stored state (``to_dict``) holds, of whatever game.

    :raises InvalidState: when the state is malformed.
    """
    kind = state.get("kind")
    if kind is None:
        return Match.from_dict(dict(state))
    engine = _KINDS.get(kind)
    if engine is None:
        raise InvalidState(f"unknown match kind {kind!r}")
    return engine.from_dict(dict(state))


@dataclass(frozen=True, slots=True)
class Deal:
    """A hand the match waits for: its ``number``, the ``seats`` dealt in, the ``dealer``."""

    number: int
    seats: tuple[int, ...]
    dealer: int

    def client_seeds(self, seeds_by_seat: Sequence[str]) -> tuple[str, ...]:
        """The client seeds of the seats dealt in, ascending (11.6.4)."""
        return tuple(seeds_by_seat[seat] for seat in self.seats)


def pending_deal(match: AnyMatch) -> Deal | None:
    """The next hand the match waits for, or None (a partnership deal waits for two)."""
    if match.status is not MatchStatus.AWAITING_DEAL:
        return None
    if isinstance(match, Match):
        return Deal(match.hand_number, (0, 1), match.dealer)
    slot = match.next_hand()
    return None if slot is None else Deal(slot.number, tuple(slot.seats), slot.dealer)


def deal(match: AnyMatch, server_seed: str, seeds_by_seat: Sequence[str], now_ms: int) -> Deal:
    """Deal :func:`pending_deal` from ``server_seed`` and the seats' client seeds (10.2,
    11.6.4); the hand dealt.

    :raises InvalidState: when the match waits for no deal.
    """
    coming = pending_deal(match)
    if coming is None:
        raise InvalidState(f"the match is {match.status.value}, not awaiting a deal")
    seeds = coming.client_seeds(seeds_by_seat)
    if isinstance(match, RummyMatch):
        slot = match.next_hand()
        assert slot is not None
        shuffle = slot.fair_shuffle(server_seed, seeds_by_seat)
        match.deal(shuffle.deck, shuffle, now_ms=now_ms)
        return coming
    deck = fair.shuffled_deck(server_seed, seeds[0], seeds[1], coming.number)
    match.deal(deck, now_ms=now_ms)
    return coming


def live_hands(match: AnyMatch) -> set[int]:
    """The numbers of the hands being played."""
    if isinstance(match, Match):
        hand = match.hand
        return set() if hand is None or hand.ended else {match.hand_number}
    if isinstance(match, RummyMatch):
        if match.hand is None or match.slot is None or match.hand.ended:
            return set()
        return {match.slot.number}
    return {t.slot.number for t in match.tables if not t.hand.ended}


@dataclass(frozen=True, slots=True)
class EndedHand:
    """A hand that ended: its result in match seats and its full history (10.3)."""

    number: int
    seats: tuple[int, ...]
    outcome: str  # knock, gin, ..., dead, forfeit; Rummy: rummy, out, void
    winner: int | None
    points: int | None
    record: dict[str, Any]
    history: dict[str, Any]


def ended_hand(match: AnyMatch, number: int) -> EndedHand:
    """Hand ``number``, which was live before the change that ended it.

    :raises InvalidState: when that hand is not one that has just ended.
    """
    if isinstance(match, Match):
        record = match.ended_hand()
        hand = match.hand
        if record is None or hand is None or record.number != number:
            raise InvalidState(f"hand {number} has not just ended")
        return EndedHand(
            number,
            (0, 1),
            record.kind,
            record.winner,
            record.points,
            record.to_dict(),
            hand.history(),
        )
    if isinstance(match, RummyMatch):
        slot, rhand = match.slot, match.hand
        if slot is None or rhand is None or slot.number != number or not rhand.ended:
            raise InvalidState(f"hand {number} has not just ended")
        found = [r for r in match.records if r.number == number]
        if found:
            rec = found[0]
            outcome = "void" if rec.winner is None else ("rummy" if rec.went_rummy else "out")
            data = rec.to_dict()
            return EndedHand(
                number,
                slot.seats,
                outcome,
                rec.winner,
                sum(rec.points) or None,
                data,
                {**rhand.history(), "seats": list(slot.seats)},
            )
        # a hand the match's end cut short (every seat but one forfeited)
        data = {**slot.to_dict(), "winner": None, "void": "match_ended"}
        return EndedHand(
            number,
            slot.seats,
            "forfeit",
            None,
            None,
            data,
            {**rhand.history(), "seats": list(slot.seats)},
        )
    for table in match.tables:
        if table.slot.number != number:
            continue
        if not table.hand.ended:
            break
        out = table.hand.outcome
        assert out is not None
        seats = table.slot.seats
        winner = None if out.winner is None else seats[out.winner]
        data = {
            **table.slot.to_dict(),
            "kind": out.kind,
            "winner": winner,
            "points": out.points,
            "knocker": None if out.knocker is None else seats[out.knocker],
        }
        return EndedHand(
            number,
            seats,
            out.kind,
            winner,
            out.points,
            data,
            {**table.hand.history(), "seats": list(seats)},
        )
    raise InvalidState(f"hand {number} has not just ended")


def hand_of(match: AnyMatch, seat: int) -> int | None:
    """The number of the hand ``seat`` plays now, or None (sitting out, none being played)."""
    if isinstance(match, Match):
        return next(iter(live_hands(match)), None)
    if isinstance(match, RummyMatch):
        slot = match.slot
        live = live_hands(match)
        return (
            slot.number if slot is not None and slot.number in live and seat in slot.seats else None
        )
    table = match.table_of(seat)
    return table.slot.number if table is not None and not table.hand.ended else None


def acting(match: AnyMatch) -> tuple[int, ...]:
    """The seats to act now."""
    if isinstance(match, Match):
        hand = match.hand
        if match.status is not MatchStatus.PLAYING or hand is None or hand.to_act is None:
            return ()
        return (hand.to_act,)
    return match.to_act


def apply(match: AnyMatch, seat: int, action: str, *, at: str, now_ms: int) -> str:
    """Apply ``seat``'s action (its text form); the action's text as logged.

    :raises RulesError: when the rules refuse it (the match is unchanged).
    """
    if isinstance(match, RummyMatch):
        move = RummyAction.parse(action)
        match.apply(seat, move, at=at, now_ms=now_ms)
        return str(move)
    parsed = Action.parse(action)
    match.apply(seat, parsed, at=at, now_ms=now_ms)
    return str(parsed)


def timeout(match: AnyMatch, now_ms: int, *, at: str) -> tuple[int, str] | None:
    """Act for the seat whose time ran out (9.2, 11.6.1): (the seat, the outcome), or None
    when nobody's time is spent."""
    due = due_seat(match, now_ms)
    if due is None:
        return None
    outcome = match.timeout(now_ms, at=at)
    return None if outcome is None else (due, outcome)


def due_seat(match: AnyMatch, now_ms: int) -> int | None:
    """The seat whose clock ran out first by ``now_ms`` (the one :func:`timeout` acts for)."""
    if match.status is not MatchStatus.PLAYING:
        return None
    if isinstance(match, MultiGin):
        return match.due_seat(now_ms)
    deadline = match.deadline_ms()
    seats = acting(match)
    if deadline is None or deadline > now_ms or not seats:
        return None
    return seats[0]


def forfeit(match: AnyMatch, seat: int, reason: str, *, at: str, now_ms: int) -> None:
    """``seat`` forfeits (9.3, 11.6.2, 11.6.3)."""
    if isinstance(match, RummyMatch):
        match.forfeit(seat, reason, at=at, now_ms=now_ms)
    else:
        match.forfeit(seat, reason, at=at)


def result(match: AnyMatch) -> dict[str, Any]:
    """How a match that is over ended: the winner and forfeiter (at more than two seats
    also every winner and every forfeiter)."""
    if isinstance(match, Match):
        return {
            "winner": match.winner,
            "forfeiter": match.forfeiter,
            "forfeit_reason": match.forfeit_reason,
        }
    if isinstance(match, RummyMatch):
        winners = list(match.standings().winners)
        forfeiters = list(match.forfeiters)
        reasons = [r for r in match.forfeit_reasons if r is not None]
        return {
            "winner": winners[0] if len(winners) == 1 else None,
            "winners": winners,
            "forfeiter": forfeiters[0] if len(forfeiters) == 1 else None,
            "forfeiters": forfeiters,
            "forfeit_reason": reasons[0] if reasons else None,
        }
    standings = match.standings()
    winners = list(standings.pot_seats)
    return {
        "winner": winners[0] if len(winners) == 1 else None,
        "winners": winners,
        "forfeiter": match.forfeiter,
        "forfeiters": [] if match.forfeiter is None else [match.forfeiter],
        "forfeit_reason": match.forfeit_reason,
    }


@dataclass(frozen=True, slots=True)
class Settled:
    """A match's settlement: what leaves escrow for each seat, the fee, and the statement
    as JSON-ready data (``escrow``, ``payouts`` and ``net`` as lists by seat, ``winner``,
    ``forfeiter`` and ``void`` for every game)."""

    payouts: tuple[int, ...]
    net: tuple[int, ...]
    fee: int
    data: dict[str, Any]


def statement(match: AnyMatch, settings: MatchSettings, escrow: Sequence[int]) -> Settled:
    """The settlement of a match that is over, played at a table of ``settings``, given what
    each seat has at the table (its stake, buy-in, or remaining table balance on a per-hand
    Rummy table).

    :raises SettlementError: when the match is not over or the escrow does not fit it.
    """
    if isinstance(match, Match):
        two = settle_match(match, (escrow[0], escrow[1]))
        return Settled(two.payouts, two.net, two.fee, two.to_dict())
    by_seat = {seat: amount for seat, amount in enumerate(escrow)}
    if isinstance(match, RummyMatch):
        multi = _rummy_statement(match, by_seat, settings)
    else:
        multi = _multi_statement(match, by_seat)
    data = multi.to_dict()
    payouts = tuple(multi.payouts[s] for s in range(len(escrow)))
    net = tuple(multi.net[s] for s in range(len(escrow)))
    # The figures every statement has at its top, as lists by seat (the two-player shape).
    data["escrow"], data["payouts"], data["net"] = list(escrow), list(payouts), list(net)
    data |= result(match) | {"void": match.status is MatchStatus.VOID}
    return Settled(payouts, net, multi.fee, data)


def seated_statement(data: Mapping[str, Any], seats: Sequence[int]) -> dict[str, Any]:
    """The statement ``data`` (a :class:`Settled`'s, with its ``players`` beside it) of a
    Rummy hand or a match of more than two seats whose match seat ``i`` is table seat
    ``seats[i]``, with every player it names by table seat: the result's ``winner``,
    ``forfeiter``, ``winners`` and ``forfeiters``, and the statement's own seats
    (:func:`~service.formats.payout_multi.statement.renamed_statement`: the keys of its
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


def _multi_statement(match: MultiGin, escrow: dict[int, int]) -> MultiStatement:
    settings = match.settings
    standings = match.standings()
    fee, r = settings.fee, settings.stake_per_point
    if isinstance(match, ThreePlayerMatch):
        if settings.format is Format.MATCH_PLAY:
            if standings.forfeiter is not None:
                return match_play_forfeit(escrow, standings.forfeiter, standings.hand_points, fee)
            assert standings.winner is not None
            return three_player_match_play(escrow, standings.winner, fee)
        return settle_three_player(
            standings, r, escrow, fee, shutout_mode=settings.ruleset.shutout_mode
        )
    if settings.format is Format.MATCH_PLAY:
        if standings.forfeiter is not None:
            return match_play_forfeit(
                escrow, standings.forfeiter, standings.hand_points, fee, sides=PARTNERSHIP_TEAMS
            )
        assert standings.winner is not None
        return partnership_match_play(escrow, standings.winner, fee)
    if standings.forfeiter is not None:
        return partnership_classic_forfeit(
            standings.totals,
            standings.forfeiter,
            r,
            escrow,
            fee,
            game_bonus=settings.ruleset.game_bonus,
            cap_mode=settings.cap_mode,
        )
    return partnership_classic(standings.totals, r, escrow, fee, cap_mode=settings.cap_mode)


def _rummy_statement(
    match: RummyMatch, escrow: dict[int, int], settings: MatchSettings
) -> MultiStatement:
    """A Rummy match's or per-hand table hand's statement (5.8, 11.5, 11.7.3)."""
    standings = match.standings()
    fee, r = settings.fee, settings.stake_per_point
    money = match.settings.money_format
    if standings.scoring is Scoring.PENALTY:
        penalties = {s: standings.penalties[s] for s in escrow}
        return rummy_penalty(penalties, r, escrow, fee, format=money)
    if settings.continuous:
        deciding = standings.deciding_hand
        if deciding is None or deciding.winner is None:
            return rummy_penalty({s: 0 for s in escrow}, r, escrow, fee, format=money)
        return rummy_per_hand(
            deciding.winner,
            deciding.loser_counts,
            r,
            escrow,
            fee,
            went_rummy=deciding.went_rummy,
            forfeited=deciding.forfeited,
        )
    return rummy_match(dict(standings.net_points), r, escrow, fee, format=money)


def restart(state: Mapping[str, Any]) -> AnyMatch:
    """A new match with the same settings and first draw (dealer, seating or dealing team)
    as the stored ``state``: where a replay of its log starts.

    :raises InvalidState: when the state is malformed.
    """
    try:
        kind = state.get("kind")
        if kind is None:
            return Match(MatchSettings.from_dict(state["settings"]), int(state["first_dealer"]))
        if kind == RummyMatch.KIND:
            return RummyMatch(RummyMatchSettings.from_dict(state["settings"]))
        settings = MatchSettings.from_dict(state["settings"])
        if kind == ThreePlayerMatch.KIND:
            return ThreePlayerMatch(settings, Seating.from_dict(state["first_seating"]))
        if kind == PartnershipMatch.KIND:
            return PartnershipMatch(settings, int(state["first_dealing_team"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidState(f"malformed match state: {exc!r}") from None
    raise InvalidState(f"unknown match kind {kind!r}")


@dataclass(frozen=True, slots=True)
class Logged:
    """One entry of a match's action log, as a replay reads it: who, what, when."""

    seat: int | None
    action: str
    at_ms: int
    at: str


def replay_log(
    start: AnyMatch,
    server_seeds: Mapping[int, str],
    seeds_by_seat: Sequence[str],
    log: Sequence[Logged],
) -> AnyMatch:
    """The match ``start`` after every logged change, each hand dealt from its revealed
    server seed: what the service must have stored if it played by the rules.

    :raises RulesError: when an entry is one the rules refuse, a timeout that was not due
        or for another seat, or a hand's seed is missing (the log does not replay).
    """
    match = start
    for entry in log:
        if entry.action == "START":
            pass
        elif entry.action == RESIGN:
            if entry.seat is None:
                raise InvalidState("a resignation names its seat")
            forfeit(match, entry.seat, "resign", at=entry.at, now_ms=entry.at_ms)
        elif entry.action.startswith("TIMEOUT "):
            done = timeout(match, entry.at_ms, at=entry.at)
            if done is None or done != (entry.seat, entry.action.removeprefix("TIMEOUT ")):
                raise InvalidState(f"logged {entry.action!r} for seat {entry.seat}, not {done!r}")
        else:
            if entry.seat is None:
                raise InvalidState(f"action {entry.action!r} names no seat")
            apply(match, entry.seat, entry.action, at=entry.at, now_ms=entry.at_ms)
        while (coming := pending_deal(match)) is not None:
            seed = server_seeds.get(coming.number)
            if seed is None:
                raise InvalidState(f"hand {coming.number} has no revealed seed")
            deal(match, seed, seeds_by_seat, entry.at_ms)
    return match
