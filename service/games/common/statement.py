"""The statement of a settlement, for every game: amounts per seat, the fee, and lines.

A :class:`Statement` is checked when it is built: the nets and the fee add up to zero,
nobody leaves with less than nothing, and its lines, read as money moving between parties
(seats, the table's pot and the house), produce exactly those nets and that fee. A statement
that breaks any of these is a bug and raises :class:`~service.games.common.errors.SettlementError`.
Besides the money, a statement carries the game's own figures behind it (two-player Gin's
final totals and bonuses, a multi-seat game's winners): each game's payout maths fills them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, Final, Literal

from service.games.common.errors import SettlementError
from service.games.common.settings import Format
from service.games.protocol import Settled

#: The table's pot: stakes go in and prizes come out (it always ends at zero).
TABLE: Final = "table"
#: The house, which receives the fee.
HOUSE: Final = "house"

Party = int | Literal["table", "house"]


class LineKind(StrEnum):
    """What a statement line says."""

    #: Money moves from the payer to the payee.
    PAYS = "PAYS"
    #: What the payer owed the payee before a cap; nothing moves on this line itself.
    OWES = "OWES"
    #: The house fee moves from the payer to the house.
    FEE = "FEE"


def party_name(party: Party, names: Mapping[int, str] | None = None) -> str:
    """``seat 2`` (or the name given for it), ``the table``, ``the house``."""
    if isinstance(party, int):
        return (names or {}).get(party, f"seat {party}")
    return f"the {party}"


@dataclass(frozen=True, slots=True)
class StatementLine:
    """One line of a statement: who pays (or owes) whom how much, why, and under which rule."""

    kind: LineKind
    payer: Party
    payee: Party
    amount: int
    rule: str
    reason: str

    def effect(self) -> dict[Party, int]:
        """The change this line makes to each party's money (nothing for an ``OWES`` line)."""
        if self.kind is LineKind.OWES:
            return {}
        return {self.payer: -self.amount, self.payee: self.amount}

    def text(self, names: Mapping[int, str] | None = None) -> str:
        verb = "owes" if self.kind is LineKind.OWES else "pays"
        payer, payee = party_name(self.payer, names), party_name(self.payee, names)
        return f"{payer} {verb} {payee} {self.amount}: {self.reason} ({self.rule})"

    def __str__(self) -> str:
        return self.text()

    def renamed(self, names: Sequence[int]) -> StatementLine:
        """This line with its seats renamed from ``s`` to ``names[s]`` (the table and the
        house stay); its ``reason`` is kept as written."""

        def named(party: Party) -> Party:
            return names[party] if isinstance(party, int) else party

        return replace(self, payer=named(self.payer), payee=named(self.payee))

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind.value,
            "payer": self.payer,
            "payee": self.payee,
            "amount": self.amount,
            "rule": self.rule,
            "reason": self.reason,
            "text": self.text(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StatementLine:
        """The line :meth:`to_dict` gave (its ``text`` is not read: :meth:`text` writes it).

        :raises SettlementError: when ``data`` is not a statement line.
        """
        try:
            parties = [data["payer"], data["payee"]]
            if not all(isinstance(p, int) or p in (TABLE, HOUSE) for p in parties):
                raise ValueError(f"parties {parties!r}")
            return cls(
                LineKind(data["kind"]),
                parties[0],
                parties[1],
                int(data["amount"]),
                str(data["rule"]),
                str(data["reason"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise SettlementError(f"not a statement line: {data!r} ({exc})") from None


@dataclass(frozen=True, slots=True)
class Statement:
    """The settlement of one match or per-hand table hand, every figure included.

    * ``escrow[s]``: what seat ``s`` has at the table (stake, buy-in or remaining balance);
    * ``raw_net[s]``: its money result before any cap and fee;
    * ``net[s]``: its result after them; ``sum(net) + fee == 0``;
    * ``fees[s]``: the fee taken from winner ``s`` (stake-per-point formats); a pot's fee is
      taken from the pot and is in ``fee`` only;
    * ``receivers``: the seats that gained (the pot's receivers, or every seat with a gain);
    * ``figures``: the game's own figures behind the money, JSON-ready (what its statement
      shows besides the amounts: a winner, final totals, bonuses...).
    """

    format: Format
    escrow: dict[int, int]
    raw_net: dict[int, int]
    net: dict[int, int]
    fees: dict[int, int]
    fee: int
    fee_base_amount: int
    stake_per_point: int
    cap_applied: bool
    receivers: tuple[int, ...]
    lines: tuple[StatementLine, ...]
    figures: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def refund(
        cls, format: Format, escrow: Mapping[int, int], *, stake_per_point: int = 0
    ) -> Statement:
        """Every seat takes back what it has at the table: no line, no fee."""
        nothing = dict.fromkeys(escrow, 0)
        return cls(
            format=format,
            escrow=dict(escrow),
            raw_net=nothing,
            net=dict(nothing),
            fees={},
            fee=0,
            fee_base_amount=0,
            stake_per_point=stake_per_point,
            cap_applied=False,
            receivers=(),
            lines=(),
        )

    def __post_init__(self) -> None:
        seats = set(self.escrow)
        if set(self.net) != seats or set(self.raw_net) != seats:
            raise SettlementError(f"nets name other seats than the escrow: {self.net!r}")
        if sum(self.net.values()) + self.fee != 0:
            raise SettlementError(f"not zero-sum: nets {self.net!r}, fee {self.fee}")
        if sum(self.fees.values()) > self.fee or self.fee < 0:
            raise SettlementError(f"fee {self.fee} does not cover the winners' {self.fees!r}")
        short = {s: p for s, p in self.payouts.items() if p < 0}
        if short:
            raise SettlementError(f"a seat would lose more than it has at the table: {short!r}")
        moved: dict[Party, int] = {}
        for line in self.lines:
            for party, amount in line.effect().items():
                moved[party] = moved.get(party, 0) + amount
        expected: dict[Party, int] = {s: n for s, n in self.net.items() if n}
        if self.fee:
            expected[HOUSE] = self.fee
        if {p: a for p, a in moved.items() if a} != expected:
            raise SettlementError(f"the lines move {moved!r}, not the nets {expected!r}")

    @property
    def seats(self) -> tuple[int, ...]:
        return tuple(sorted(self.escrow))

    @property
    def payouts(self) -> dict[int, int]:
        """What each seat takes from the table: its escrow plus its net."""
        return {s: self.escrow[s] + self.net[s] for s in sorted(self.escrow)}

    def payments(self) -> list[tuple[Party, Party, int]]:
        """Every movement of money, in order: ``(payer, payee, amount)``, the fee included."""
        return [
            (line.payer, line.payee, line.amount)
            for line in self.lines
            if line.kind is not LineKind.OWES
        ]

    def text(self, names: Mapping[int, str] | None = None) -> str:
        """The statement as lines a person can read, one per line."""
        return "\n".join(line.text(names) for line in self.lines)

    def to_dict(self, *, itemized: bool = True) -> dict[str, Any]:
        """Every figure, JSON-ready: the amounts by seat (the seat's number as text), the fee,
        and the game's figures. ``itemized`` adds the lines and what they are read with (raw
        nets, fees by seat, receivers); a game whose statements have never served them
        leaves them out."""

        def listed(values: Mapping[int, int]) -> dict[str, int]:
            return {str(s): values[s] for s in sorted(values)}

        data: dict[str, Any] = {
            "format": self.format.value,
            "escrow": listed(self.escrow),
            "net": listed(self.net),
            "payouts": listed(self.payouts),
            "fee": self.fee,
            "fee_base_amount": self.fee_base_amount,
            "stake_per_point": self.stake_per_point,
            "cap_applied": self.cap_applied,
        }
        if itemized:
            data |= {
                "raw_net": listed(self.raw_net),
                "fees": listed(self.fees),
                "receivers": list(self.receivers),
                "lines": [line.to_dict() for line in self.lines],
            }
        return data | dict(self.figures)

    def settled(self, *, itemized: bool = True) -> Settled:
        """The statement as the service keeps it: :meth:`to_dict` with the escrow, payouts
        and nets as lists by seat (a match's seats are 0 to n-1)."""
        data = self.to_dict(itemized=itemized)
        payouts = tuple(self.payouts[s] for s in self.seats)
        net = tuple(self.net[s] for s in self.seats)
        data["escrow"] = [self.escrow[s] for s in self.seats]
        data["payouts"], data["net"] = list(payouts), list(net)
        return Settled(payouts, net, self.fee, data)


#: The figures of :meth:`Statement.to_dict` keyed by seat (the seat's number as text).
BY_SEAT = ("escrow", "raw_net", "net", "payouts", "fees")


def renamed_statement(data: Mapping[str, Any], names: Sequence[int]) -> dict[str, Any]:
    """A statement as :meth:`Statement.to_dict` gives it (or a settlement's, which holds
    more) with every seat it names renamed from ``s`` to ``names[s]``: the keys of its figures
    by seat (:data:`BY_SEAT`, where a figure is such a map), its ``receivers``, and each
    line's ``payer`` and ``payee``, whose ``text`` is written again from them. Its other keys
    are as they were (a list of one entry per seat keeps its order). A line's ``reason`` is
    kept as written: the statements renamed, a per-hand Rummy table's hands' (whose players
    are named by table seat: :func:`~service.games.rummy.payout.rummy_per_hand`, and
    :func:`~service.games.rummy.payout.rummy_penalty` for a penalty-scored or void
    hand), name no seat in their reasons.

    :raises SettlementError: when a line is not a statement line.
    """
    out = dict(data)
    for key in BY_SEAT:
        if isinstance(data.get(key), Mapping):
            out[key] = {str(names[int(s)]): value for s, value in data[key].items()}
    if "receivers" in data:
        out["receivers"] = [names[s] for s in data["receivers"]]
    if "lines" in data:
        out["lines"] = [
            StatementLine.from_dict(line).renamed(names).to_dict() for line in data["lines"]
        ]
    return out
