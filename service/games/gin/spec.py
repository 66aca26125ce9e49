"""Two-player Gin (docs/engine.md 3, 6): the :class:`~service.games.gin.match.Match` engine, dealt
from the two seats' client seeds, settled by :func:`~service.games.gin.payout.settle_match`."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, TypeVar

from service.games.common import fair
from service.games.common.errors import InvalidState
from service.games.common.settings import GAME_FORMATS, GAME_SEATS, GameKind, MatchSettings
from service.games.gin.actions import Action
from service.games.gin.bot import decide
from service.games.gin.match import Match
from service.games.gin.payout import settle_match
from service.games.gin.ruleset import Ruleset
from service.games.multi_gin.match import MultiMatch
from service.games.protocol import Deal, EndedHand, MatchStatus, Settled

M = TypeVar("M", bound=Match | MultiMatch)


class TwoSeatDeals(Generic[M]):
    """How every Gin hand is dealt: a deck shuffled from its two seats' client seeds (the
    hand's seats say which two, at any table)."""

    def pending_deal(self, match: M) -> Deal | None:
        raise NotImplementedError

    def deal(self, match: M, server_seed: str, seeds_by_seat: Sequence[str], now_ms: int) -> Deal:
        coming = self.pending_deal(match)
        if coming is None:
            raise InvalidState(f"the match is {match.status.value}, not awaiting a deal")
        seeds = coming.client_seeds(seeds_by_seat)
        match.deal(fair.shuffled_deck(server_seed, seeds[0], seeds[1], coming.number), now_ms)
        return coming


class GinSpec(TwoSeatDeals[Match]):
    """Two-player Gin: seats 0 and 1, one hand at a time."""

    kind = GameKind.GIN
    seat_counts = range(GAME_SEATS[GameKind.GIN], GAME_SEATS[GameKind.GIN] + 1)
    formats = GAME_FORMATS[GameKind.GIN]
    options = Ruleset
    engine = Match
    bot = staticmethod(decide)

    def new_match(
        self, settings: MatchSettings, players: int, randbelow: Callable[[int], int]
    ) -> Match:
        return Match(settings, randbelow(2))

    def restart(self, state: Mapping[str, Any]) -> Match:
        try:
            return Match(MatchSettings.from_dict(state["settings"]), int(state["first_dealer"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidState(f"malformed match state: {exc!r}") from None

    def pending_deal(self, match: Match) -> Deal | None:
        if match.status is not MatchStatus.AWAITING_DEAL:
            return None
        return Deal(match.hand_number, (0, 1), match.dealer)

    def live_hands(self, match: Match) -> set[int]:
        hand = match.hand
        return set() if hand is None or hand.ended else {match.hand_number}

    def ended_hand(self, match: Match, number: int) -> EndedHand:
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

    def hand_of(self, match: Match, seat: int) -> int | None:
        return next(iter(self.live_hands(match)), None)

    def acting(self, match: Match) -> tuple[int, ...]:
        hand = match.hand
        if match.status is not MatchStatus.PLAYING or hand is None or hand.to_act is None:
            return ()
        return (hand.to_act,)

    def apply(self, match: Match, seat: int, action: str, *, at: str, now_ms: int) -> str:
        parsed = Action.parse(action)
        match.apply(seat, parsed, at=at, now_ms=now_ms)
        return str(parsed)

    def due_seat(self, match: Match, now_ms: int) -> int | None:
        if match.status is not MatchStatus.PLAYING:
            return None
        deadline = match.deadline_ms()
        seats = self.acting(match)
        if deadline is None or deadline > now_ms or not seats:
            return None
        return seats[0]

    def forfeit(self, match: Match, seat: int, reason: str, *, at: str, now_ms: int) -> None:
        match.forfeit(seat, reason, at=at)

    def result(self, match: Match) -> dict[str, Any]:
        return {
            "winner": match.winner,
            "forfeiter": match.forfeiter,
            "forfeit_reason": match.forfeit_reason,
        }

    def view(self, match: Match, seat: int | None) -> dict[str, Any]:
        """The scores, the hand being played as ``seat`` sees it (``Hand.view``), the hand
        before it while the match goes on, and the result once it is over."""
        game = match.game()
        view: dict[str, Any] = {
            "scores": {
                "hand_points": list(game.hand_points),
                "boxes": list(game.boxes),
                "target": match.target,
                "hands_played": len(match.records),
                "timeouts": list(match.timeouts),
                "bank_ms": list(match.banks_ms),
            },
            "hand_number": match.hand_number,
        }
        if match.hand is not None:
            view["dealer"] = match.hand.dealer
            view["hand"] = match.hand.view(seat)
        if match.records and not match.over:
            view["previous_hand"] = match.records[-1].to_dict()
        if match.over:
            view["result"] = self.result(match) | {"void": match.status is MatchStatus.VOID}
        return view

    def statement(self, match: Match, settings: MatchSettings, escrow: Sequence[int]) -> Settled:
        two = settle_match(match, (escrow[0], escrow[1]))
        return Settled(two.payouts, two.net, two.fee, two.to_dict())


GIN = GinSpec()
