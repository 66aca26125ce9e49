"""Basic Rummy for 2 to 6 (docs/rummy.md): the :class:`~service.games.rummy.match.RummyMatch`
engine, each hand dealt from every seat's client seed; per hand, to a target or a number of deals
(5, 11.3, 11.5, 11.7.3)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from service.games.bots import decide_multi
from service.games.common.errors import InvalidState
from service.games.common.seats import multi_settled, multi_view
from service.games.common.settings import GAME_FORMATS, GameKind, MatchSettings
from service.games.common.statement import MultiStatement
from service.games.protocol import Deal, EndedHand, MatchStatus, Settled
from service.games.rummy.actions import RummyAction
from service.games.rummy.match import RummyMatch, RummyMatchSettings
from service.games.rummy.payout import rummy_match, rummy_penalty, rummy_per_hand
from service.games.rummy.rules import RummyRules, Scoring


class RummySpec:
    """Rummy: one hand at a time, every seat dealt in that is not sitting out."""

    kind = GameKind.RUMMY
    seat_counts = range(2, RummyRules().max_players + 1)
    formats = GAME_FORMATS[GameKind.RUMMY]
    options = RummyRules
    engine = RummyMatch
    bot = staticmethod(decide_multi)

    def new_match(
        self, settings: MatchSettings, players: int, randbelow: Callable[[int], int]
    ) -> RummyMatch:
        rummy = RummyMatchSettings(players, randbelow(players), settings.rummy, settings.clock)
        return RummyMatch(rummy)

    def restart(self, state: Mapping[str, Any]) -> RummyMatch:
        try:
            return RummyMatch(RummyMatchSettings.from_dict(state["settings"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidState(f"malformed match state: {exc!r}") from None

    def pending_deal(self, match: RummyMatch) -> Deal | None:
        if match.status is not MatchStatus.AWAITING_DEAL:
            return None
        slot = match.next_hand()
        return None if slot is None else Deal(slot.number, tuple(slot.seats), slot.dealer)

    def deal(
        self, match: RummyMatch, server_seed: str, seeds_by_seat: Sequence[str], now_ms: int
    ) -> Deal:
        slot = match.next_hand() if match.status is MatchStatus.AWAITING_DEAL else None
        if slot is None:
            raise InvalidState(f"the match is {match.status.value}, not awaiting a deal")
        shuffle = slot.fair_shuffle(server_seed, seeds_by_seat)
        match.deal(shuffle.deck, shuffle, now_ms=now_ms)
        return Deal(slot.number, tuple(slot.seats), slot.dealer)

    def live_hands(self, match: RummyMatch) -> set[int]:
        if match.hand is None or match.slot is None or match.hand.ended:
            return set()
        return {match.slot.number}

    def ended_hand(self, match: RummyMatch, number: int) -> EndedHand:
        slot, hand = match.slot, match.hand
        if slot is None or hand is None or slot.number != number or not hand.ended:
            raise InvalidState(f"hand {number} has not just ended")
        history = {**hand.history(), "seats": list(slot.seats)}
        found = [r for r in match.records if r.number == number]
        if not found:  # a hand the match's end cut short (every seat but one forfeited)
            data = {**slot.to_dict(), "winner": None, "void": "match_ended"}
            return EndedHand(number, slot.seats, "forfeit", None, None, data, history)
        rec = found[0]
        outcome = "void" if rec.winner is None else ("rummy" if rec.went_rummy else "out")
        points = sum(rec.points) or None
        return EndedHand(number, slot.seats, outcome, rec.winner, points, rec.to_dict(), history)

    def hand_of(self, match: RummyMatch, seat: int) -> int | None:
        slot = match.slot
        live = self.live_hands(match)
        return (
            slot.number if slot is not None and slot.number in live and seat in slot.seats else None
        )

    def acting(self, match: RummyMatch) -> tuple[int, ...]:
        return match.to_act

    def apply(self, match: RummyMatch, seat: int, action: str, *, at: str, now_ms: int) -> str:
        move = RummyAction.parse(action)
        match.apply(seat, move, at=at, now_ms=now_ms)
        return str(move)

    def due_seat(self, match: RummyMatch, now_ms: int) -> int | None:
        if match.status is not MatchStatus.PLAYING:
            return None
        deadline = match.deadline_ms()
        seats = match.to_act
        if deadline is None or deadline > now_ms or not seats:
            return None
        return seats[0]

    def forfeit(self, match: RummyMatch, seat: int, reason: str, *, at: str, now_ms: int) -> None:
        match.forfeit(seat, reason, at=at, now_ms=now_ms)

    def result(self, match: RummyMatch) -> dict[str, Any]:
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

    def view(self, match: RummyMatch, seat: int | None) -> dict[str, Any]:
        return multi_view(
            self.kind, match.view(seat), self.result(match) if match.over else None, match
        )

    def statement(
        self, match: RummyMatch, settings: MatchSettings, escrow: Sequence[int]
    ) -> Settled:
        by_seat = {seat: amount for seat, amount in enumerate(escrow)}
        return multi_settled(
            self.settle(match, by_seat, settings), escrow, self.result(match), match
        )

    def settle(
        self, match: RummyMatch, escrow: dict[int, int], settings: MatchSettings
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


RUMMY = RummySpec()
