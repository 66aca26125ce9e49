"""Invariants of every multi-player settlement (hypothesis): zero-sum with the fee, no loser
beyond its cap, the net-loss cap's shares and leftover units exactly, fees within their
bounds, integers throughout, and lines that add up to the nets."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from service.games.common.netting import PairAmount, net_loss_cap, settle_pairs, share_pot
from service.games.common.settings import CapMode, FeeBase, FeeRule, Format
from service.games.common.statement import (
    HOUSE,
    TABLE,
    LineKind,
    Party,
    Statement,
)
from service.games.gin.ruleset import ShutoutMode
from service.games.multi_gin.payout import (
    MONEY_PAIRS,
    classic_three_player,
    classic_three_player_forfeit,
    partnership_classic,
)
from service.games.rummy.payout import rummy_match, rummy_penalty, rummy_per_hand

winnings_fees = st.builds(
    FeeRule,
    bps=st.integers(0, 10_000),
    base=st.just(FeeBase.WINNINGS),
    minimum=st.integers(0, 50),
    maximum=st.one_of(st.none(), st.integers(50, 500)),
)


def assert_sound(s: Statement, fee: FeeRule) -> None:
    """What every statement must satisfy, checked from its figures and lines."""
    figures = [*s.net.values(), *s.raw_net.values(), *s.fees.values(), s.fee]
    figures += [line.amount for line in s.lines]
    assert all(type(x) is int for x in figures)
    assert sum(s.net.values()) + s.fee == 0
    assert all(s.escrow[seat] + s.net[seat] >= 0 for seat in s.escrow)  # never beyond the cap
    assert all(line.amount >= 0 for line in s.lines)
    assert s.fee >= 0 and sum(s.fees.values()) <= s.fee
    for seat, charge in s.fees.items():
        gain = s.net[seat] + charge
        assert 0 < charge <= gain
        assert charge <= max(gain * fee.bps // 10_000, fee.minimum)
        if fee.minimum == 0:
            assert charge <= gain * fee.bps // 10_000
    moved: dict[Party, int] = {}
    for line in s.lines:
        if line.kind is not LineKind.OWES:
            moved[line.payer] = moved.get(line.payer, 0) - line.amount
            moved[line.payee] = moved.get(line.payee, 0) + line.amount
    assert moved.get(TABLE, 0) == 0 and moved.get(HOUSE, 0) == s.fee
    assert all(moved.get(seat, 0) == s.net[seat] for seat in s.escrow)


@st.composite
def zero_sum_nets(draw: st.DrawFn) -> tuple[dict[int, int], dict[int, int]]:
    values = draw(st.lists(st.integers(-5000, 5000), min_size=1, max_size=6))
    values.append(-sum(values))
    raw = dict(enumerate(values))
    caps = {s: draw(st.integers(0, 6000)) for s in raw}
    return raw, caps


@given(zero_sum_nets())
def test_11_4_2_net_loss_cap_shares_and_leftover_exactly(
    case: tuple[dict[int, int], dict[int, int]],
) -> None:
    raw, caps = case
    cap = net_loss_cap(raw, caps)
    settled = cap.settled
    assert sum(settled.values()) == 0
    gains = {s: v for s, v in raw.items() if v > 0}
    for s, v in raw.items():
        if v < 0:
            assert settled[s] == -min(-v, caps[s])  # a loser pays its loss, at most its cap
        elif v == 0:
            assert settled[s] == 0
    paid = sum(-settled[s] for s, v in raw.items() if v < 0)
    if paid == sum(gains.values()):
        assert settled == raw and not cap.applied
        return
    assert cap.applied
    floors = {s: g * paid // sum(gains.values()) for s, g in gains.items()}
    extra = {s for s in gains if settled[s] == floors[s] + 1}
    assert all(settled[s] in (floors[s], floors[s] + 1) for s in gains)
    left = paid - sum(floors.values())
    assert 0 <= left < len(gains) and len(extra) == left
    order = sorted(gains, key=lambda s: (-gains[s], s))
    assert extra == set(order[:left])  # by raw gain, ties to the lower seat
    assert all(0 <= settled[s] <= gains[s] for s in gains)


@st.composite
def pair_tables(draw: st.DrawFn) -> tuple[list[PairAmount], dict[int, int]]:
    seats = draw(st.lists(st.integers(0, 9), min_size=2, max_size=6, unique=True))
    pairs = st.tuples(st.sampled_from(seats), st.sampled_from(seats), st.integers(0, 400))
    margins = [
        PairAmount(x, y, p, "11.5.3", "test")
        for x, y, p in draw(st.lists(pairs, max_size=12))
        if x != y
    ]
    caps = {s: draw(st.integers(0, 8000)) for s in seats}
    return margins, caps


@given(pair_tables(), st.integers(1, 50), winnings_fees)
def test_pairs_settle_soundly(
    case: tuple[list[PairAmount], dict[int, int]], r: int, fee: FeeRule
) -> None:
    margins, caps = case
    s = settle_pairs(margins, r, caps, fee, format=Format.RUMMY_DEALS)
    assert_sound(s, fee)
    expected = dict.fromkeys(caps, 0)
    for m in margins:
        expected[m.payee] += m.points * r
        expected[m.payer] -= m.points * r
    assert s.raw_net == expected
    for seat, v in expected.items():
        if v < 0:
            assert s.net[seat] == -min(-v, caps[seat])


@given(
    st.lists(st.integers(0, 60), min_size=2, max_size=6),
    st.data(),
    st.integers(1, 40),
    st.booleans(),
    winnings_fees,
)
def test_rummy_per_hand_each_loser_pays_min_of_owed_and_balance(
    counts: list[int], data: st.DataObject, r: int, rummy: bool, fee: FeeRule
) -> None:
    seats = list(range(len(counts)))
    winner = data.draw(st.sampled_from(seats))
    balances = {s: data.draw(st.integers(0, 3000)) for s in seats}
    owed = {s: counts[s] for s in seats if s != winner}
    s = rummy_per_hand(winner, owed, r, balances, fee, went_rummy=rummy)
    assert_sound(s, fee)
    paid = {seat: min(v * r * (2 if rummy else 1), balances[seat]) for seat, v in owed.items()}
    assert all(s.net[seat] == -p for seat, p in paid.items())
    assert s.net[winner] + s.fees.get(winner, 0) == sum(paid.values())


@given(
    st.lists(st.integers(-400, 400), min_size=1, max_size=5),
    st.integers(1, 30),
    st.lists(st.integers(0, 5000), min_size=6, max_size=6),
    winnings_fees,
)
def test_rummy_match_nets_within_caps(
    values: list[int], r: int, buyins: list[int], fee: FeeRule
) -> None:
    points = dict(enumerate([*values, -sum(values)]))
    caps = {s: buyins[s] for s in points}
    s = rummy_match(points, r, caps, fee)
    assert_sound(s, fee)
    assert s.cap_applied == any(-v * r > caps[seat] for seat, v in points.items() if v < 0)


@given(
    st.lists(st.integers(0, 200), min_size=2, max_size=6),
    st.integers(1, 30),
    st.data(),
    winnings_fees,
)
def test_rummy_penalty_pairs_within_caps(
    penalties: list[int], r: int, data: st.DataObject, fee: FeeRule
) -> None:
    caps = {s: data.draw(st.integers(0, 4000)) for s in range(len(penalties))}
    s = rummy_penalty(dict(enumerate(penalties)), r, caps, fee)
    assert_sound(s, fee)
    n = len(penalties)
    for seat, pen in enumerate(penalties):  # each pair: the lower penalty receives the gap
        assert s.raw_net[seat] == (sum(penalties) - n * pen) * r


@given(
    st.integers(2, 4),
    st.integers(1, 100_000),
    st.data(),
    st.builds(
        FeeRule,
        bps=st.integers(0, 10_000),
        base=st.sampled_from(list(FeeBase)),
        minimum=st.integers(0, 100),
    ),
)
def test_match_play_pot_shares(n: int, stake: int, data: st.DataObject, fee: FeeRule) -> None:
    stakes = dict.fromkeys(range(n), stake)
    receivers = data.draw(st.lists(st.sampled_from(range(n)), min_size=1, unique=True))
    s = share_pot(stakes, receivers, fee, format=Format.MATCH_PLAY, rule="11.4", why="won")
    assert_sound(s, fee)
    base = n * stake if fee.base is FeeBase.POT else (n - len(receivers)) * stake
    assert s.fee_base_amount == base and 0 <= s.fee <= base
    assert s.fee <= max(base * fee.bps // 10_000, fee.minimum)
    shares = [s.payouts[seat] for seat in sorted(receivers)]
    assert sum(shares) == n * stake - s.fee
    assert max(shares) - min(shares) <= 1 and shares == sorted(shares, reverse=True)
    assert all(s.payouts[seat] == 0 for seat in range(n) if seat not in receivers)


@given(
    st.tuples(st.integers(0, 600), st.integers(0, 600)),
    st.integers(1, 20),
    st.lists(st.integers(0, 8000), min_size=4, max_size=4),
    st.sampled_from(list(CapMode)),
    winnings_fees,
)
def test_partnership_pairs_capped_by_mode(
    totals: tuple[int, int], r: int, buyins: list[int], mode: CapMode, fee: FeeRule
) -> None:
    b = dict(enumerate(buyins))
    s = partnership_classic(totals, r, b, fee, cap_mode=mode)
    assert_sound(s, fee)
    margin = abs(totals[0] - totals[1])
    for x, y in MONEY_PAIRS:
        w, lo = (x, y) if totals[0] >= totals[1] else (y, x)
        cap = min(b[w], b[lo]) if mode is CapMode.MIN_BOTH else b[lo]
        assert s.net[lo] == -min(margin * r, cap)
        assert s.net[w] + s.fees.get(w, 0) == min(margin * r, cap)


three_totals = st.lists(st.integers(0, 400), min_size=3, max_size=3)


@given(
    three_totals,
    st.lists(st.integers(0, 1), min_size=3, max_size=3),
    st.integers(0, 2),
    st.integers(1, 20),
    st.lists(st.integers(0, 20_000), min_size=3, max_size=3),
    st.sampled_from(list(ShutoutMode)),
    winnings_fees,
)
def test_three_player_classic_raw_nets_and_caps(
    totals: list[int],
    scored: list[int],
    winner: int,
    r: int,
    buyins: list[int],
    mode: ShutoutMode,
    fee: FeeRule,
) -> None:
    scored[winner] = 1  # the winner reached the target
    hand = {seat: totals[seat] * scored[seat] for seat in range(3)}
    f = dict(enumerate(totals))
    s = classic_three_player(f, hand, winner, r, dict(enumerate(buyins)), fee, shutout_mode=mode)
    assert_sound(s, fee)
    extra = {ShutoutMode.BONUS: 100, ShutoutMode.DOUBLE_GAME_BONUS: 100}.get(mode, hand[winner])
    shut = [y for y in range(3) if y != winner and hand[y] == 0]
    for x in range(3):
        expected = (2 * f[x] - sum(f[y] for y in range(3) if y != x)) * r
        if x == winner:
            expected += len(shut) * extra * r
        elif x in shut:
            expected -= extra * r
        assert s.raw_net[x] == expected


@given(three_totals, st.integers(0, 2), st.integers(0, 150), st.integers(1, 20), winnings_fees)
def test_three_player_forfeit_never_favours_the_forfeiter(
    totals: list[int], forfeiter: int, bonus: int, r: int, fee: FeeRule
) -> None:
    plenty = dict.fromkeys(range(3), 10**7)
    s = classic_three_player_forfeit(
        dict(enumerate(totals)), forfeiter, r, plenty, fee, game_bonus=bonus
    )
    assert_sound(s, fee)
    assert s.net[forfeiter] <= 0
    assert all(line.payee != forfeiter for line in s.lines)
    assert s.raw_net[forfeiter] <= -2 * bonus * r
