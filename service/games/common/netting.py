"""Settlement of any number of seats: a pot shared by its receivers, or stakes per point
(pair amounts, the net-loss cap, the fee).

A pot (6.2, 6.3, 11.4): every seat stakes the same amount; the pot less the house fee goes to
the receivers, who share it equally, odd minor units one each to the lowest seats. The fee is
on the whole pot (``POT``) or on the pot less the receivers' own stakes (``WINNINGS``),
rounded down.

Stakes per point, in steps (11.4.2, 11.4.3):

1. Each seat's raw net is the sum of what it is owed and owes (pair by pair, or given as net
   points), times the stake per point.
2. A loser pays at most its cap: its buy-in, or its remaining table balance in Rummy.
3. When a cap binds, the winners share what the losers actually pay in proportion to their raw
   gains, each rounded down; the units left over go one each to the winners in descending
   order of raw gain (ties: lower seat first). Winners are never capped.
4. Each winner pays the house fee on its own net gain (``WINNINGS``), rounded down.

Lines: when no cap binds, pair amounts are the payments themselves (``seat 2 pays seat 0``).
When one binds, they are kept as ``OWES`` lines and the payments follow: straight from each
loser to the only winner, or through the table's pot when there are several winners.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeGuard

from service.games.common.errors import SettlementError
from service.games.common.settings import FeeBase, FeeRule, Format
from service.games.common.statement import HOUSE, TABLE, LineKind, Statement, StatementLine


def is_int(value: object) -> TypeGuard[int]:
    """An integer, and not a bool (money and points are never floats)."""
    return isinstance(value, int) and not isinstance(value, bool)


def checked_int(name: str, value: object, minimum: int = 0) -> int:
    """``value`` if it is an integer of at least ``minimum``.

    :raises SettlementError: otherwise (floats are refused: money is in minor units).
    """
    if not is_int(value):
        raise SettlementError(f"{name} must be an integer, not {value!r}")
    if value < minimum:
        raise SettlementError(f"{name} must be at least {minimum}, not {value!r}")
    return value


def checked_seats(name: str, values: Mapping[int, int], minimum: int = 0) -> dict[int, int]:
    """A copy of a per-seat mapping of integers, seats being distinct non-negative integers.

    :raises SettlementError: on a bad seat or value.
    """
    out: dict[int, int] = {}
    for seat, value in values.items():
        checked_int(f"{name} seat", seat)
        out[seat] = checked_int(f"{name}[{seat}]", value, minimum)
    return out


def winnings_fee(fee: FeeRule) -> FeeRule:
    """``fee`` if it may be charged on a winner's gain (11.4.3).

    :raises SettlementError: for a charged fee on any other base.
    """
    charged = fee.bps > 0 or fee.minimum > 0
    if charged and fee.base is not FeeBase.WINNINGS:
        raise SettlementError(f"stake-per-point fees are on WINNINGS, not {fee.base.value}")
    return fee


def stake_table(
    stake_per_point: int, caps: Mapping[int, int], fee: FeeRule | None
) -> tuple[int, dict[int, int], FeeRule]:
    """A stake-per-point table's checked figures: ``r`` (at least 1), each seat's cap, and
    the fee on winnings (none when not given).

    :raises SettlementError: on a bad figure or a fee on another base.
    """
    r = checked_int("stake per point", stake_per_point, 1)
    escrow = checked_seats("cap", caps)
    return r, escrow, winnings_fee(fee or FeeRule(base=FeeBase.WINNINGS))


@dataclass(frozen=True, slots=True)
class PairAmount:
    """Points one seat owes another, before the stake per point (a pair's margin, a shutout,
    a Rummy loser's count)."""

    payee: int
    payer: int
    points: int
    rule: str
    reason: str

    @classmethod
    def signed(cls, seats: tuple[int, int], margin: int, rule: str, reason: str) -> PairAmount:
        """From a signed margin: what ``seats[0]`` receives from ``seats[1]`` (negative: the
        other way round), as a match's standings give a money pair."""
        x, y = seats
        if margin < 0:
            return cls(y, x, -margin, rule, reason)
        return cls(x, y, margin, rule, reason)

    def __post_init__(self) -> None:
        checked_int("payee", self.payee)
        checked_int("payer", self.payer)
        checked_int("points", self.points)
        if self.payee == self.payer:
            raise SettlementError(f"seat {self.payer} cannot owe itself")


@dataclass(frozen=True, slots=True)
class CapResult:
    """The net-loss cap applied to raw nets (11.4.2).

    ``settled[s]`` is each seat's net before the fee; ``paid`` what the losers pay in all and
    ``raw_total`` what the winners would have received uncapped; ``capped`` the losers whose
    cap bound; ``leftover_to`` the winners that received one leftover unit.
    """

    settled: dict[int, int]
    paid: int
    raw_total: int
    capped: tuple[int, ...]
    leftover_to: tuple[int, ...]

    @property
    def applied(self) -> bool:
        return self.paid < self.raw_total


def net_loss_cap(raw_net: Mapping[int, int], caps: Mapping[int, int]) -> CapResult:
    """Cap each loser's net loss at its cap; share what is paid among the winners (11.4.2).

    :raises SettlementError: when the nets are not zero-sum or a loser has no cap.
    """
    raw = checked_seats("raw net", raw_net, minimum=-(10**18))
    if sum(raw.values()) != 0:
        raise SettlementError(f"raw nets must add up to zero, not {raw!r}")
    missing = [s for s, v in raw.items() if v < 0 and s not in caps]
    if missing:
        raise SettlementError(f"no cap for the losing seats {missing!r}")
    cap = checked_seats("cap", {s: caps[s] for s, v in raw.items() if v < 0})
    gains = {s: v for s, v in raw.items() if v > 0}
    paid_by = {s: min(-v, cap[s]) for s, v in raw.items() if v < 0}
    raw_total = sum(gains.values())
    paid = sum(paid_by.values())
    capped = tuple(sorted(s for s in paid_by if paid_by[s] < -raw[s]))
    settled = dict(raw)
    leftover_to: tuple[int, ...] = ()
    if paid < raw_total:
        share = {s: g * paid // raw_total for s, g in gains.items()}
        order = sorted(gains, key=lambda s: (-gains[s], s))
        leftover_to = tuple(order[: paid - sum(share.values())])
        for s in leftover_to:
            share[s] += 1
        settled.update(share)
        settled.update({s: -p for s, p in paid_by.items()})
    return CapResult(settled, paid, raw_total, capped, leftover_to)


def _settlement_lines(
    raw: Mapping[int, int], cap: CapResult, caps: Mapping[int, int], cap_rule: str, cap_name: str
) -> list[StatementLine]:
    """The payments of capped (or net-only) results: loser to winner, or through the pot."""
    settled = cap.settled
    losers = sorted(s for s in settled if raw[s] < 0)
    winners = sorted(s for s in settled if raw[s] > 0)

    def loss_reason(s: int) -> str:
        if s in cap.capped:
            return f"net loss {-raw[s]}, capped at {cap_name} {caps[s]}"
        return f"net loss {-raw[s]}"

    if len(winners) == 1:
        (winner,) = winners
        return [
            StatementLine(LineKind.PAYS, s, winner, -settled[s], cap_rule, loss_reason(s))
            for s in losers
        ]
    lines = [
        StatementLine(LineKind.PAYS, s, TABLE, -settled[s], cap_rule, loss_reason(s))
        for s in losers
    ]
    for s in winners:
        if cap.applied:
            reason = (
                f"raw gain {raw[s]} cut in proportion to what was paid: "
                f"{raw[s]} x {cap.paid} / {cap.raw_total} rounded down"
            )
            if s in cap.leftover_to:
                reason += ", plus one leftover unit"
        else:
            reason = f"net gain {raw[s]}"
        lines.append(StatementLine(LineKind.PAYS, TABLE, s, settled[s], cap_rule, reason))
    return lines


def finish(
    format: Format,
    stake_per_point: int,
    escrow: Mapping[int, int],
    raw_net: Mapping[int, int],
    settled: Mapping[int, int],
    fee: FeeRule,
    lines: Iterable[StatementLine],
    *,
    cap_applied: bool,
    fee_rule: str = "11.4.3",
) -> Statement:
    """The statement of settled nets, after each winner pays the fee on its gain (11.4.3)."""
    out = list(lines)
    fees: dict[int, int] = {}
    for s in sorted(settled):
        gain = settled[s]
        charge = fee.fee_on(gain)
        if charge:
            fees[s] = charge
            reason = f"house fee, {fee.bps} bps of its net gain {gain}, rounded down"
            if charge != gain * fee.bps // 10_000:
                reason += " and held within the fee's minimum and maximum"
            out.append(StatementLine(LineKind.FEE, s, HOUSE, charge, fee_rule, reason))
    return Statement(
        format=format,
        escrow=dict(escrow),
        raw_net=dict(raw_net),
        net={s: settled[s] - fees.get(s, 0) for s in escrow},
        fees=fees,
        fee=sum(fees.values()),
        fee_base_amount=sum(v for v in settled.values() if v > 0),
        stake_per_point=stake_per_point,
        cap_applied=cap_applied,
        receivers=tuple(sorted(s for s, v in settled.items() if v > 0)),
        lines=tuple(out),
    )


def settle_pairs(
    margins: Iterable[PairAmount],
    stake_per_point: int,
    caps: Mapping[int, int],
    fee: FeeRule | None = None,
    *,
    format: Format,
    cap_rule: str = "11.4.2",
    cap_name: str = "its buy-in",
    fee_rule: str = "11.4.3",
) -> Statement:
    """Settle pair amounts in points: raw nets, the net-loss cap, the fee per winner.

    ``caps`` names every seat at the table with its buy-in (or remaining table balance, or
    the most it may lose to its one opponent).

    :raises SettlementError: on a seat without a cap, or bad amounts.
    """
    r, escrow, fee = stake_table(stake_per_point, caps, fee)
    margins = [m for m in margins if m.points]
    raw = dict.fromkeys(escrow, 0)
    for m in margins:
        for seat in (m.payer, m.payee):
            if seat not in raw:
                raise SettlementError(f"seat {seat} has no buy-in at this table")
        raw[m.payee] += m.points * r
        raw[m.payer] -= m.points * r
    cap = net_loss_cap(raw, escrow)

    def pair_line(kind: LineKind, m: PairAmount) -> StatementLine:
        reason = f"{m.reason}: {m.points} points x {r}"
        return StatementLine(kind, m.payer, m.payee, m.points * r, m.rule, reason)

    if not cap.applied:
        lines = [pair_line(LineKind.PAYS, m) for m in margins]
    else:
        lines = [pair_line(LineKind.OWES, m) for m in margins]
        lines += _settlement_lines(raw, cap, escrow, cap_rule, cap_name)
    return finish(
        format, r, escrow, raw, cap.settled, fee, lines, cap_applied=cap.applied, fee_rule=fee_rule
    )


def settle_nets(
    net_points: Mapping[int, int],
    stake_per_point: int,
    caps: Mapping[int, int],
    fee: FeeRule | None = None,
    *,
    format: Format,
    rule: str,
    cap_name: str = "its buy-in",
) -> Statement:
    """Settle net positions in points (zero-sum) with the net-loss cap and the fee per winner.

    :raises SettlementError: when the points are not zero-sum, a seat has no cap, or amounts
        are bad.
    """
    r, escrow, fee = stake_table(stake_per_point, caps, fee)
    points = checked_seats("net points", net_points, minimum=-(10**18))
    unknown = sorted(set(points) - set(escrow))
    if unknown:
        raise SettlementError(f"seats {unknown!r} have no buy-in at this table")
    if sum(points.values()) != 0:
        raise SettlementError(f"net points must add up to zero, not {points!r}")
    raw = {s: points.get(s, 0) * r for s in escrow}
    cap = net_loss_cap(raw, escrow)
    lines: list[StatementLine] = []
    for s in sorted(points):
        p = points[s]
        if p < 0:
            lines.append(
                StatementLine(LineKind.OWES, s, TABLE, -p * r, rule, f"net {p} points x {r}")
            )
        elif p > 0:
            lines.append(
                StatementLine(LineKind.OWES, TABLE, s, p * r, rule, f"net +{p} points x {r}")
            )
    lines += _settlement_lines(raw, cap, escrow, rule if not cap.applied else "11.4.2", cap_name)
    return finish(format, r, escrow, raw, cap.settled, fee, lines, cap_applied=cap.applied)


def split_equally(amount: int, seats: Sequence[int]) -> dict[int, int]:
    """``amount`` shared equally among ``seats``, the odd units one each to the lowest seats."""
    order = sorted(seats)
    each, odd = divmod(amount, len(order))
    return {s: each + (1 if i < odd else 0) for i, s in enumerate(order)}


def share_pot(
    stakes: Mapping[int, int],
    receivers: Sequence[int],
    fee: FeeRule | None = None,
    *,
    format: Format,
    rule: str,
    why: str,
) -> Statement:
    """The pot less the fee, shared equally by ``receivers`` (odd units to the lower seats);
    ``why`` says why they receive it, under ``rule``.

    :raises SettlementError: on unequal or missing stakes, or receivers not at the table.
    """
    escrow = checked_seats("stake", stakes, minimum=1)
    if len(escrow) < 2 or len(set(escrow.values())) != 1:
        raise SettlementError(f"every seat stakes the same amount, not {escrow!r}")
    chosen = sorted(set(receivers))
    if not chosen or len(chosen) != len(receivers) or any(s not in escrow for s in chosen):
        raise SettlementError(f"receivers {list(receivers)!r} must be distinct seated seats")
    fee = fee or FeeRule()
    pot = sum(escrow.values())
    base = pot if fee.base is FeeBase.POT else pot - sum(escrow[s] for s in chosen)
    charge = fee.fee_on(base)
    shares = split_equally(pot - charge, chosen)
    uncharged = split_equally(pot, chosen)
    lines = [
        StatementLine(LineKind.PAYS, s, TABLE, escrow[s], rule, "its stake into the pot")
        for s in sorted(escrow)
    ]
    if charge:
        what = "the pot" if fee.base is FeeBase.POT else "the pot less the receivers' stakes"
        reason = f"house fee, {fee.bps} bps of {what} {base}, rounded down"
        fee_rule = "6.1.3" if fee.base is FeeBase.POT else "11.7.4"
        lines.append(StatementLine(LineKind.FEE, TABLE, HOUSE, charge, fee_rule, reason))
    for s in chosen:
        reason = f"{why}: the pot {pot}" + (f" less the fee {charge}" if charge else "")
        if len(chosen) > 1:
            reason += f", shared by seats {', '.join(map(str, chosen))}"
            if shares[s] > shares[chosen[-1]]:
                reason += ", with an odd unit (lower seat)"
        lines.append(StatementLine(LineKind.PAYS, TABLE, s, shares[s], rule, reason))
    return Statement(
        format=format,
        escrow=escrow,
        raw_net={s: uncharged.get(s, 0) - escrow[s] for s in escrow},
        net={s: shares.get(s, 0) - escrow[s] for s in escrow},
        fees={},
        fee=charge,
        fee_base_amount=base,
        stake_per_point=0,
        cap_applied=False,
        receivers=tuple(chosen),
        lines=tuple(lines),
    )
