"""What Gin at three and four seats share (docs/multiplayer-gin.md): two-player hands at one
or two tables at a time, each dealt from its own two seats' client seeds."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from service.games.common.errors import InvalidState
from service.games.common.seats import multi_settled, multi_view
from service.games.common.settings import Format, GameKind, MatchSettings, Stakes
from service.games.common.statement import Statement
from service.games.gin.actions import Action
from service.games.gin.formats import CLASSIC, MATCH_PLAY
from service.games.gin.spec import BUYINS, GinOptions, TwoSeatDeals
from service.games.multi_gin.match import MultiMatch
from service.games.protocol import Deal, EndedHand, MatchResult, MatchStatus, Settled

G = TypeVar("G", bound=MultiMatch)


class MultiGinSpec(GinOptions, TwoSeatDeals[G]):
    """The spec of a Gin game of more than two seats, played in Gin's Match Play or classic
    (their stakes are Gin's to state); its game states the rest."""

    kind: GameKind
    formats: tuple[Format, ...] = (MATCH_PLAY, CLASSIC)
    stakes: tuple[Stakes, ...] = ()
    fixed_stake: tuple[Format, ...] = (MATCH_PLAY,)
    single_hand: tuple[Format, ...] = ()
    knockout: tuple[Format, ...] = ()
    single_table: tuple[Format, ...] = (MATCH_PLAY,)

    def table_examples(self, classic: dict[str, Any]) -> dict[Format, dict[str, Any]]:
        """A table body for each format: Match Play for 500 with a 10% fee, and classic
        with what ``classic`` adds."""
        game = {"game": self.kind.value}
        return {
            MATCH_PLAY: {
                **game,
                "format": "match_play",
                "currency": "EUR",
                "stake": 500,
                "fee": {"bps": 1000},
            },
            CLASSIC: {**game, "format": "classic", "currency": "EUR", **BUYINS, **classic},
        }

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

    def standing(self, match: G) -> MatchResult | None:
        """Each seat's side's hand points; the winners are the seats of the sides the pot
        goes to."""
        gin = match.standings()
        scores = tuple(gin.hand_points[gin.side_of(seat)] for seat in range(len(match.seats)))
        winners = tuple(sorted(seat for side in gin.pot_sides for seat in gin.sides[side]))
        forfeiters = frozenset(() if match.forfeiter is None else (match.forfeiter,))
        return MatchResult(scores, winners, forfeiters)

    def view(self, match: G, seat: int | None) -> dict[str, Any]:
        return multi_view(
            self.kind, match.view(seat), self.result(match) if match.over else None, match
        )

    def statement(self, match: G, settings: MatchSettings, escrow: Sequence[int]) -> Settled:
        by_seat = {seat: amount for seat, amount in enumerate(escrow)}
        return multi_settled(self.settle(match, by_seat), self.result(match), match)

    def settle(self, match: G, escrow: dict[int, int]) -> Statement:
        """The game's payout maths for ``match`` (11.4)."""
        raise NotImplementedError
