"""Payout maths: the worked examples of docs/engine.md 7.8-7.11, forfeits (9.4) and invariants."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from service.games.common.errors import InvalidSettings, SettlementError
from service.games.common.settings import (
    CapMode,
    FeeBase,
    FeeRule,
    Format,
    FtkWinnerRule,
    MatchSettings,
)
from service.games.common.statement import Statement
from service.games.gin.match import HandRecord
from service.games.gin.payout import settle


def by_seat(values: dict[int, int]) -> tuple[int, int]:
    """A statement's figure of each seat (seats 0 and 1), as a pair."""
    assert sorted(values) == [0, 1]
    return values[0], values[1]


def pair(s: Statement, name: str) -> tuple[int, int]:
    """One of the statement's Gin figures of each seat, as a pair."""
    return tuple(s.figures[name])  # type: ignore[return-value]


def hands(
    *results: tuple[int | None, int] | tuple[int | None, int, int | None],
) -> list[HandRecord]:
    out = []
    for i, result in enumerate(results, 1):
        winner, points = result[0], result[1]
        knocker = result[2] if len(result) == 3 else winner
        kind = "dead" if winner is None else ("knock" if knocker == winner else "undercut")
        out.append(HandRecord(i, 0, kind, winner, points, knocker))
    return out


def money(
    target: int = 100, r: int = 10, cap: CapMode = CapMode.MIN_BOTH, **kw: object
) -> MatchSettings:
    return MatchSettings(
        Format.MONEY_PLAY,
        stake_per_point=r,
        min_buyin=1,
        max_buyin=10**9,
        target=target,
        cap_mode=cap,
        **kw,
    )  # type: ignore[arg-type]


def test_7_8_money_play_100_with_cap() -> None:
    s = settle(money(), hands((0, 40), (0, 72)), (2000, 1500))
    f = s.figures
    assert pair(s, "final_totals") == (362, 0)
    assert f["bonuses"]["line_bonus"] == [50, 0]
    assert f["bonuses"]["target_bonus"] == [100, 0]
    assert f["bonuses"]["zero_point_bonus"] == [100, 0]
    assert f["raw_amount"] == 3620 and f["transfer"] == 1500 and s.cap_applied
    assert by_seat(s.net) == (1500, -1500) and by_seat(s.payouts) == (3500, 0) and s.fee == 0


@pytest.mark.parametrize(
    ("mode", "expected"), [(CapMode.MIN_BOTH, 1000), (CapMode.LOSER_ONLY, 3620)]
)
def test_7_8_cap_contrast(mode: CapMode, expected: int) -> None:
    s = settle(money(cap=mode), hands((0, 40), (0, 72)), (1000, 5000))
    assert s.figures["transfer"] == expected and by_seat(s.net) == (expected, -expected)


def test_7_9_money_play_50_target_reacher_loses() -> None:
    record = hands((1, 9), (1, 8), (1, 6), (1, 12), (1, 11), (0, 52))
    s = settle(money(target=50, r=5), record, (1000, 1000))
    assert pair(s, "final_totals") == (127, 171)
    assert s.figures["winner"] == 1 and s.figures["margin"] == 44
    assert s.figures["transfer"] == 220 and not s.cap_applied
    assert by_seat(s.net) == (-220, 220)


def match_play(fee: FeeRule, stake: int = 500) -> MatchSettings:
    return MatchSettings(Format.MATCH_PLAY, stake=stake, target=100, fee=fee)


def test_7_10_match_play_pot_and_fee() -> None:
    record = hands((0, 40), (1, 27), (0, 72))
    s = settle(match_play(FeeRule(1000)), record, (500, 500))
    assert (s.figures["winner"], s.fee, by_seat(s.payouts), by_seat(s.net)) == (
        0,
        100,
        (900, 0),
        (400, -500),
    )
    s = settle(match_play(FeeRule(1000, FeeBase.WINNINGS)), record, (500, 500))
    assert (s.fee, by_seat(s.payouts)) == (50, (950, 0))
    s = settle(match_play(FeeRule(750), stake=25), record, (25, 25))
    assert (s.fee, by_seat(s.payouts)) == (3, (47, 0))


@pytest.mark.parametrize(
    ("rule", "winner"), [(FtkWinnerRule.FIRST_KNOCKER, 0), (FtkWinnerRule.HAND_WINNER, 1)]
)
def test_7_11_first_to_knock_winner_rules(rule: FtkWinnerRule, winner: int) -> None:
    settings = MatchSettings(
        Format.FIRST_TO_KNOCK, stake=200, fee=FeeRule(500), ftk_winner_rule=rule
    )
    # P1 (seat 0) knocks with 8, P2 undercuts for 27; a dead hand came first.
    s = settle(settings, hands((None, 0), (1, 27, 0)), (200, 200))
    assert s.figures["winner"] == winner and s.fee == 20
    assert s.payouts[winner] == 380 and s.payouts[1 - winner] == 0
    assert s.net[winner] == 180 and s.net[1 - winner] == -200


def test_first_to_knock_void_refunds_everything() -> None:
    settings = MatchSettings(
        Format.FIRST_TO_KNOCK, stake=200, fee=FeeRule(500), ftk_max_dead_hands=2
    )
    s = settle(settings, hands((None, 0), (None, 0), (None, 0)), (200, 200), void=True)
    assert s.figures["void"] and by_seat(s.payouts) == (200, 200) and s.fee == 0
    assert s.figures["winner"] is None


def test_forfeit_in_pot_formats_pays_the_opponent() -> None:
    s = settle(match_play(FeeRule(1000)), hands((0, 40)), (500, 500), forfeiter=0)
    assert s.figures["winner"] == 1 and by_seat(s.payouts) == (0, 900)


def test_forfeit_in_money_play_scores_opponent_as_target_reacher() -> None:
    # Seat 1 leads 30 to 0 in hand points; seat 0 resigns -> seat 1 gets target + zero-point.
    s = settle(money(r=1), hands((1, 30)), (1000, 1000), forfeiter=0)
    assert pair(s, "final_totals") == (0, 30 + 25 + 100 + 100)
    assert s.figures["winner"] == 1 and s.figures["transfer"] == 255


def test_forfeit_never_favours_the_forfeiter() -> None:
    # Seat 0 is far ahead and resigns: the margin would favour seat 0, so it is 0.
    record = hands((0, 90), (0, 5), (0, 4), (0, 3), (0, 2), (0, 1), (1, 1))
    s = settle(money(r=10), record, (5000, 5000), forfeiter=0)
    assert s.figures["winner"] is None and s.figures["margin"] == 0
    assert by_seat(s.payouts) == (5000, 5000)


def test_classic_for_stakes_uses_classic_bonuses() -> None:
    settings = MatchSettings(Format.CLASSIC, stake_per_point=2, min_buyin=1, max_buyin=10_000)
    s = settle(settings, hands((0, 40), (1, 27), (0, 72)), (1000, 1000))
    assert pair(s, "final_totals") == (252, 47) and s.figures["margin"] == 205
    assert s.figures["transfer"] == 410 and by_seat(s.net) == (410, -410)
    bonuses = s.figures["bonuses"]
    assert bonuses["box_bonus"] == [40, 20] and bonuses["game_bonus"] == [100, 0]


def test_money_play_fee_comes_from_the_transfer() -> None:
    settings = money(r=10, fee=FeeRule(250, FeeBase.WINNINGS, minimum=10, maximum=50))
    s = settle(settings, hands((0, 40), (0, 72)), (2000, 1500))
    assert s.fee == 37  # 2.5% of 1500 = 37.5, rounded down
    assert by_seat(s.payouts) == (2000 + 1500 - 37, 0)


def test_a_two_player_statement_has_lines_that_move_its_money() -> None:
    capped = settle(money(), hands((0, 40), (0, 72)), (2000, 1500))
    assert capped.text().splitlines() == [
        "seat 1 owes seat 0 3620: final totals 362 to 0, a margin of 362: 362 points x 10 (6.4.6)",
        "seat 1 pays seat 0 1500: net loss 3620, capped at the smaller buy-in 1500 (6.4.7)",
    ]
    with_fee = money(r=10, fee=FeeRule(250, FeeBase.WINNINGS))
    s = settle(with_fee, hands((1, 9), (1, 91)), (5000, 5000))
    assert s.payments() == [(0, 1, s.figures["transfer"]), (1, "house", s.fee)]
    assert s.lines[-1].rule == "6.4.8" and s.fee == s.figures["transfer"] * 250 // 10_000
    pot = settle(match_play(FeeRule(1000)), hands((0, 40)), (500, 500), forfeiter=0)
    assert pot.payments() == [
        (0, "table", 500),
        (1, "table", 500),
        ("table", "house", 100),
        ("table", 1, 900),
    ]
    assert pot.lines[-1].reason == "seat 0 forfeited: the pot 1000 less the fee 100"


def test_a_two_player_statement_is_served_as_it_always_was() -> None:
    s = settle(money(), hands((0, 40), (0, 72)), (2000, 1500)).settled(itemized=False)
    assert s.payouts == (3500, 0) and s.net == (1500, -1500) and s.fee == 0
    assert sorted(s.data) == sorted(
        [
            "format",
            "escrow",
            "payouts",
            "net",
            "fee",
            "fee_base_amount",
            "winner",
            "void",
            "forfeiter",
            "hands",
            "hand_points",
            "boxes",
            "bonuses",
            "final_totals",
            "margin",
            "stake_per_point",
            "raw_amount",
            "transfer",
            "cap",
            "cap_applied",
        ]
    )
    assert s.data["escrow"] == [2000, 1500] and s.data["bonuses"]["line_bonus"] == [50, 0]
    assert s.data["hands"][1] == {
        "number": 2,
        "dealer": 0,
        "kind": "knock",
        "winner": 0,
        "points": 72,
        "knocker": 0,
    }


def test_fee_minimum_and_maximum() -> None:
    assert FeeRule(100, minimum=10).fee_on(500) == 10
    assert FeeRule(5000, maximum=30).fee_on(500) == 30
    assert FeeRule(0, minimum=100).fee_on(40) == 40  # never more than its base
    assert FeeRule(1000).fee_on(0) == 0


@pytest.mark.parametrize(
    "kwargs",
    [
        {"format": "poker", "stake": 1},
        {"format": Format.MATCH_PLAY, "stake": 0},
        {"format": Format.MATCH_PLAY, "stake": 1.5},
        {
            "format": Format.MONEY_PLAY,
            "stake_per_point": 1,
            "min_buyin": 1,
            "max_buyin": 9,
            "target": 75,
        },
        {"format": Format.MONEY_PLAY, "stake_per_point": 1, "min_buyin": 10, "max_buyin": 9},
        {
            "format": Format.MONEY_PLAY,
            "stake_per_point": 1,
            "min_buyin": 1,
            "max_buyin": 9,
            "fee": FeeRule(100, FeeBase.POT),
        },
        {"format": Format.MATCH_PLAY, "stake": 10, "fee": {"bps": 10_001}},
    ],
)
def test_bad_settings_name_their_field(kwargs: dict[str, object]) -> None:
    with pytest.raises(InvalidSettings) as err:
        MatchSettings.from_dict(kwargs)
    assert err.value.field


def test_settlement_refuses_wrong_escrow() -> None:
    with pytest.raises(SettlementError):
        settle(match_play(FeeRule()), hands((0, 100)), (500, 400))
    with pytest.raises(SettlementError):
        settle(money(), hands((0, 100)), (0, 400))
    with pytest.raises(SettlementError):
        settle(money(), hands((0, 50)), (100, 100))  # nobody reached the target


hand_lists = st.lists(
    st.tuples(st.sampled_from([0, 1]), st.integers(1, 80)), min_size=1, max_size=25
)


def finish_at_target(results: list[tuple[int, int]], target: int) -> list[HandRecord] | None:
    h = [0, 0]
    kept = []
    for winner, points in results:
        kept.append((winner, points))
        h[winner] += points
        if h[winner] >= target:
            return hands(*kept)
    return None


@given(
    results=hand_lists,
    target=st.sampled_from([50, 100]),
    r=st.integers(1, 500),
    buyins=st.tuples(st.integers(1, 100_000), st.integers(1, 100_000)),
    cap=st.sampled_from(list(CapMode)),
    fee=st.builds(
        FeeRule,
        bps=st.integers(0, 10_000),
        base=st.just(FeeBase.WINNINGS),
        minimum=st.integers(0, 500),
    ),
    forfeiter=st.sampled_from([None, 0, 1]),
)
def test_money_play_invariants(
    results: list[tuple[int, int]],
    target: int,
    r: int,
    buyins: tuple[int, int],
    cap: CapMode,
    fee: FeeRule,
    forfeiter: int | None,
) -> None:
    record = finish_at_target(results, target)
    if forfeiter is not None:
        record = hands(*results[: len(results) // 2])
    if record is None:
        return
    s = settle(money(target, r, cap, fee=fee), record, buyins, forfeiter=forfeiter)
    payouts, net, f = by_seat(s.payouts), by_seat(s.net), s.figures
    assert sum(payouts) + s.fee == sum(buyins)  # nothing created or destroyed
    assert all(p >= 0 for p in payouts)  # nobody loses more than the escrow
    winner = f["winner"]
    if winner is not None:
        loser = 1 - winner
        assert f["final_totals"] is not None
        assert f["final_totals"][winner] > f["final_totals"][loser]  # the winner by totals
        assert net[winner] == f["transfer"] - s.fee >= 0
        assert net[loser] == -f["transfer"]
        assert f["transfer"] == min(f["raw_amount"], f["cap"] or 0)
        assert f["transfer"] <= buyins[loser]
        if cap is CapMode.MIN_BOTH:
            assert f["transfer"] <= buyins[winner]
    else:
        assert payouts == buyins and s.fee == 0
    if forfeiter is not None:
        assert winner != forfeiter


@given(
    stake=st.integers(1, 1_000_000),
    fee=st.builds(
        FeeRule,
        bps=st.integers(0, 10_000),
        base=st.sampled_from(list(FeeBase)),
        minimum=st.integers(0, 1000),
    ),
    results=hand_lists,
)
def test_pot_invariants(stake: int, fee: FeeRule, results: list[tuple[int, int]]) -> None:
    record = finish_at_target(results, 100)
    if record is None:
        return
    s = settle(match_play(fee, stake), record, (stake, stake))
    assert sum(by_seat(s.payouts)) + s.fee == 2 * stake
    winner = s.figures["winner"]
    assert winner is not None and s.payouts[1 - winner] == 0
    assert 0 <= s.fee <= (2 * stake if fee.base is FeeBase.POT else stake)
