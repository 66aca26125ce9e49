"""Basic Rummy for 2 to 6 (docs/rummy.md): the :class:`~service.games.rummy.match.RummyMatch`
engine, each hand dealt from every seat's client seed; per hand, to a target or a number of deals
(5, 11.3, 11.5, 11.7.3)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields
from typing import Any, ClassVar

from service.games.bots import decide_multi
from service.games.common.errors import InvalidSettings, InvalidState, RulesError
from service.games.common.seats import multi_settled, multi_view
from service.games.common.settings import Format, GameKind, MatchSettings, Stakes
from service.games.common.statement import Statement
from service.games.protocol import (
    RESIGN,
    Deal,
    EndedHand,
    MatchResult,
    MatchStatus,
    OptionField,
    Settled,
)
from service.games.rummy.actions import RummyAction, RummyActionKind
from service.games.rummy.formats import RUMMY_DEALS, RUMMY_PER_HAND, RUMMY_TARGET
from service.games.rummy.hand import next_dealer
from service.games.rummy.match import RummyMatch, RummyMatchSettings
from service.games.rummy.payout import needs_top_up, rummy_match, rummy_penalty, rummy_per_hand
from service.games.rummy.rules import PREFIX, RummyRules, Scoring

#: The buy-in fields of the table examples.
_BUYINS: dict[str, Any] = {"stake_per_point": 5, "min_buyin": 1000, "max_buyin": 5000}

#: Rummy options whose range is not 0 to 10 000 (docs/rummy.md 5, 11.3).
_RANGES = {"max_players": (2, 6), "max_turns": (1, 10_000)}


def _rummy_field(name: str) -> OptionField:
    """A Rummy option, sent under its bare name alone (the rules refuse an option given
    twice); ``match`` is not sent at all (the format and the target fix it)."""
    low, high = _RANGES.get(name, (0, 10_000))
    return OptionField(name, f"{PREFIX}{name}", low, high, requested=name != "match")


class PerHandTables:
    """Rummy per hand (11.5.1): each hand a match of the players dealt in, match seats 0 up
    in table order; a player short of the minimum balance sits out until it tops up."""

    formats = (RUMMY_PER_HAND,)

    def short(self, balances: Mapping[int, int], settings: MatchSettings) -> tuple[int, ...]:
        return needs_top_up(balances, settings.stake_per_point, settings.balance_floor)

    def leaving(self, hand: RummyMatch) -> tuple[int, ...]:
        """A forfeiter leaves the table (11.6.3)."""
        return hand.forfeiters

    def next_dealer(
        self, hand: RummyMatch, table_seats: Sequence[int], dealt: Sequence[int], seat_count: int
    ) -> int:
        """The deal passes on by 5.1.4 (the winner of a two-player hand, else the seat on the
        dealer's left) to the first seat dealt in from there, clockwise."""
        assert hand.records
        record = hand.records[-1]
        after = next_dealer(len(record.slot.seats), record.slot.dealer, record.winner)
        start = table_seats[after]
        if after == record.slot.dealer or len(record.slot.seats) == 2:
            offset = 0  # the same seat (a void hand, or the winner of two) deals if it can
        else:
            start, offset = table_seats[record.slot.dealer], 1  # the seat on the dealer's left
        return min(range(len(dealt)), key=lambda i: (dealt[i] - start - offset) % seat_count)


class RummySpec:
    """Rummy: one hand at a time, every seat dealt in that is not sitting out."""

    kind = GameKind("rummy")
    title = "Rummy"
    seat_counts = range(2, RummyRules().max_players + 1)
    seats_text = "how many players it seats, 2 to rummy.max_players"
    formats = (RUMMY_PER_HAND, RUMMY_TARGET, RUMMY_DEALS)
    stakes = (
        Stakes(
            "Rummy per hand, to a target or a number of deals: a stake per point and a buy-in "
            "range",
            formats,
            False,
        ),
    )
    fixed_stake: tuple[Format, ...] = ()
    single_hand: tuple[Format, ...] = ()
    knockout: tuple[Format, ...] = ()
    single_table = (RUMMY_TARGET, RUMMY_DEALS)
    continuous = PerHandTables()
    options_key = "rummy"
    options = RummyRules
    option_fields = tuple(_rummy_field(option.name) for option in fields(RummyRules))
    options_description = (
        "Rummy options (`rummy.*`), each under its bare name: "
        '`{"restock": "SHUFFLE", "scoring": "PENALTY"}`; `match` follows from '
        "`format` and `target`. Left out: the default."
    )
    not_offered: tuple[str, ...] = ()
    actions = (*(kind.value for kind in RummyActionKind), RESIGN)
    engine = RummyMatch
    bot = staticmethod(decide_multi)
    description = (
        "`rummy` 2 to `rummy.max_players` seats, `seat_count` required (`rummy_target`: "
        "`target` is the points target; `rummy_deals`: `target` is the number of deals; "
        "`rummy_per_hand`: a continuous table of up to `seat_count` players, each hand "
        "settled, `min_balance` the table balance below which a player sits out)"
    )
    examples: ClassVar[dict[Format, dict[str, Any]]] = {
        RUMMY_PER_HAND: {
            "game": "rummy",
            "seat_count": 4,
            "format": "rummy_per_hand",
            "currency": "EUR",
            **_BUYINS,
            "fee": {"bps": 500},
        },
        RUMMY_TARGET: {
            "game": "rummy",
            "seat_count": 4,
            "format": "rummy_target",
            "currency": "EUR",
            **_BUYINS,
            "target": 100,
        },
        RUMMY_DEALS: {
            "game": "rummy",
            "seat_count": 3,
            "format": "rummy_deals",
            "currency": "EUR",
            **_BUYINS,
            "target": 5,
            "rummy": {"restock": "SHUFFLE"},
        },
    }

    @property
    def table_rules(self) -> tuple[dict[str, Any], ...]:
        """``rummy.max_players`` bounds a Rummy table's seat count (5.1)."""
        most = RummyRules().max_players
        return (
            {
                "anyOf": [
                    {
                        "title": "Not Rummy: `rummy.max_players` bounds no seat count",
                        "properties": {"game": {"not": {"const": self.kind.value}}},
                    },
                    {
                        "title": f"Rummy for up to {most} (the default `rummy.max_players`)",
                        "properties": {"rummy": {"not": {"required": ["max_players"]}}},
                    },
                ]
                + [
                    {
                        "title": f"Rummy for up to {seats} (`rummy.max_players`)",
                        "properties": {
                            "rummy": {
                                "properties": {"max_players": {"const": seats}},
                                "required": ["max_players"],
                            },
                            "seat_count": {"maximum": seats},
                        },
                    }
                    for seats in self.seat_counts
                ]
            },
        )

    def check_seats(self, settings: MatchSettings) -> None:
        limit = settings.rummy.max_players
        if settings.seats > limit:
            raise InvalidSettings("seats", f"Rummy seats 2-{limit} (rummy.max_players)")

    def fitted_options(self, settings: MatchSettings) -> RummyRules:
        """A Rummy table's ``rummy.match`` follows from its format and target (11.5.2)."""
        rules: RummyRules = settings.rummy
        if settings.game is not self.kind:
            return rules
        if settings.format is RUMMY_TARGET:
            match = f"TARGET({settings.target})"
        elif settings.format is RUMMY_DEALS:
            match = f"DEALS({settings.target})"
        else:
            match = "PER_HAND"
        return RummyRules.from_dict(rules.to_dict() | {"match": match})

    def settings_problems(self, settings: MatchSettings) -> list[tuple[str, str]]:
        return []

    def request_problems(self, data: dict[str, Any]) -> list[tuple[str, str]]:
        """The request's ``rummy`` options, read in place: ``rummy.match`` is refused (the
        format and the target fix it), as is every option the rules refuse."""
        problems: list[tuple[str, str]] = []
        options = dict(data.get("rummy") or {})
        for key in ("match", "rummy.match"):
            if options.pop(key, None) is not None:
                message = "follows from the format and the target: leave it out"
                problems.append(("rummy.match", message))
        try:
            data["rummy"] = RummyRules.from_dict(options)
        except RulesError as exc:
            problems.append(("rummy", str(exc)))
            data["rummy"] = RummyRules()
        return problems

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

    def standing(self, match: RummyMatch) -> MatchResult | None:
        """Each seat's points, or under penalty scoring the fewest penalties (5.7)."""
        standings = match.standings()
        penalty = standings.scoring is Scoring.PENALTY
        scores = tuple(-p for p in standings.penalties) if penalty else standings.points
        return MatchResult(scores, standings.winners, frozenset(match.forfeiters))

    def view(self, match: RummyMatch, seat: int | None) -> dict[str, Any]:
        return multi_view(
            self.kind, match.view(seat), self.result(match) if match.over else None, match
        )

    def statement(
        self, match: RummyMatch, settings: MatchSettings, escrow: Sequence[int]
    ) -> Settled:
        by_seat = {seat: amount for seat, amount in enumerate(escrow)}
        return multi_settled(self.settle(match, by_seat, settings), self.result(match), match)

    def settle(
        self, match: RummyMatch, escrow: dict[int, int], settings: MatchSettings
    ) -> Statement:
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
