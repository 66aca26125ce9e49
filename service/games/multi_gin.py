"""What Gin at three and four seats share (docs/multiplayer-gin.md): two-player hands at one
or two tables at a time, each dealt from its own two seats' client seeds."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from service.formats.match import MatchStatus
from service.formats.multi_common import MultiMatch
from service.formats.payout_multi.statement import MultiStatement
from service.formats.settings import GameKind, MatchSettings
from service.games.gin import TwoSeatDeals
from service.games.protocol import Deal, EndedHand, Settled
from service.rules import Action
from service.rules.errors import InvalidState

G = TypeVar("G", bound=MultiMatch)


class MultiGinSpec(TwoSeatDeals[G]):
    """The spec of a Gin game of more than two seats; its game states the rest."""

    kind: GameKind

    def pending_deal(self, match: G) -> Deal | None:
        if match.status is not MatchStatus.AWAITING_DEAL:
            return None
        slot = match.next_hand()
        return None if slot is None else Deal(slot.number, tuple(slot.seats), slot.dealer)

    def live_hands(self, match: G) -> set[int]:
        return {t.slot.number for t in match.tables if not t.hand.ended}

    def ended_hand(self, match: G, number: int) -> EndedHand:
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

    def hand_of(self, match: G, seat: int) -> int | None:
        table = match.table_of(seat)
        return table.slot.number if table is not None and not table.hand.ended else None

    def acting(self, match: G) -> tuple[int, ...]:
        return match.to_act

    def apply(self, match: G, seat: int, action: str, *, at: str, now_ms: int) -> str:
        parsed = Action.parse(action)
        match.apply(seat, parsed, at=at, now_ms=now_ms)
        return str(parsed)

    def due_seat(self, match: G, now_ms: int) -> int | None:
        if match.status is not MatchStatus.PLAYING:
            return None
        return match.due_seat(now_ms)

    def forfeit(self, match: G, seat: int, reason: str, *, at: str, now_ms: int) -> None:
        match.forfeit(seat, reason, at=at)

    def result(self, match: G) -> dict[str, Any]:
        winners = list(match.standings().pot_seats)
        return {
            "winner": winners[0] if len(winners) == 1 else None,
            "winners": winners,
            "forfeiter": match.forfeiter,
            "forfeiters": [] if match.forfeiter is None else [match.forfeiter],
            "forfeit_reason": match.forfeit_reason,
        }

    def view(self, match: G, seat: int | None) -> dict[str, Any]:
        return multi_view(
            self.kind, match.view(seat), self.result(match) if match.over else None, match
        )

    def statement(self, match: G, settings: MatchSettings, escrow: Sequence[int]) -> Settled:
        by_seat = {seat: amount for seat, amount in enumerate(escrow)}
        return multi_settled(self.settle(match, by_seat), escrow, self.result(match), match)

    def settle(self, match: G, escrow: dict[int, int]) -> MultiStatement:
        """The game's payout maths for ``match`` (11.4)."""
        raise NotImplementedError


def multi_view(
    kind: GameKind, play: dict[str, Any], result: dict[str, Any] | None, match: Any
) -> dict[str, Any]:
    """The match view's fields of a game whose engine has its own view (11.6.5): ``play``
    (every table or the hand's public part, the standings, who acts, the caller's own hand
    and legal actions), the hand number (the latest dealt) and the result once over."""
    dealt = play["tables"] if play.get("tables") else [play.get("hand")]
    numbers = [h["number"] for h in dealt if isinstance(h, dict) and "number" in h]
    view: dict[str, Any] = {
        "game": kind.value,
        "play": play,
        "hand_number": max(numbers, default=None),
    }
    if result is not None:
        view["result"] = result | {"void": match.status is MatchStatus.VOID}
    return view


def multi_settled(
    multi: MultiStatement, escrow: Sequence[int], result: dict[str, Any], match: Any
) -> Settled:
    """A statement of the payout maths at more than two seats in the shape every
    statement has: the figures at its top as lists by seat (the two-player shape), the
    result and ``void``."""
    data = multi.to_dict()
    payouts = tuple(multi.payouts[s] for s in range(len(escrow)))
    net = tuple(multi.net[s] for s in range(len(escrow)))
    data["escrow"], data["payouts"], data["net"] = list(escrow), list(payouts), list(net)
    data |= result | {"void": match.status is MatchStatus.VOID}
    return Settled(payouts, net, multi.fee, data)
