"""Postings: pure, immutable double-entry values.

Sign convention: a posting's ``amount`` is what it adds to the account's balance as its owner
sees it. A deposit is ``+X`` on the player's available account and ``-X`` on the operator's
clearing account; a hold is ``-X`` available, ``+X`` escrow. Every journal transaction has at
least two postings and sums to zero per currency.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from enum import StrEnum

from service.errors import LedgerInvariantBroken
from service.ledger.money import check_minor_units, exponent


class AccountKind(StrEnum):
    """What an account holds."""

    PLAYER_AVAILABLE = "player_available"
    PLAYER_ESCROW = "player_escrow"
    HOUSE_FEE = "house_fee"
    OPERATOR_CLEARING = "operator_clearing"


#: Kinds whose balance may never go below zero (checked in code and by the database).
NON_NEGATIVE = frozenset(
    {AccountKind.PLAYER_AVAILABLE, AccountKind.PLAYER_ESCROW, AccountKind.HOUSE_FEE}
)


class TransactionKind(StrEnum):
    """Why money moved."""

    DEPOSIT = "deposit"
    WITHDRAWAL = "withdrawal"
    HOLD = "hold"
    RELEASE = "release"
    CAPTURE = "capture"
    #: A seamless operator's wallet paid a stake to us (its wallet is the clearing side).
    WALLET_DEBIT = "wallet_debit"
    #: We paid a seamless operator's player back through its wallet.
    WALLET_CREDIT = "wallet_credit"
    #: The house gives back fees it took (a tournament cancelled before any match finished).
    FEE_REFUND = "fee_refund"


@dataclass(frozen=True, order=True)
class AccountRef:
    """Names one ledger account; its text form is its unique key and round-trips.

    >>> str(AccountRef.parse("player_available:op_1:ply_2:-:EUR"))
    'player_available:op_1:ply_2:-:EUR'
    """

    kind: AccountKind
    operator_id: str
    player_id: str | None
    match_ref: str | None
    currency: str

    def __post_init__(self) -> None:
        exponent(self.currency)
        needs_player = self.kind in (AccountKind.PLAYER_AVAILABLE, AccountKind.PLAYER_ESCROW)
        may_have_player = needs_player or self.kind is AccountKind.OPERATOR_CLEARING
        if (needs_player and self.player_id is None) or (
            not may_have_player and self.player_id is not None
        ):
            raise ValueError(f"{self.kind} account player_id mismatch: {self.player_id!r}")
        if (self.kind is AccountKind.PLAYER_ESCROW) != (self.match_ref is not None):
            raise ValueError(f"{self.kind} account match_ref mismatch: {self.match_ref!r}")

    @classmethod
    def player_available(cls, operator_id: str, player_id: str, currency: str) -> AccountRef:
        return cls(AccountKind.PLAYER_AVAILABLE, operator_id, player_id, None, currency)

    @classmethod
    def player_escrow(
        cls, operator_id: str, player_id: str, match_ref: str, currency: str
    ) -> AccountRef:
        return cls(AccountKind.PLAYER_ESCROW, operator_id, player_id, match_ref, currency)

    @classmethod
    def house_fee(cls, operator_id: str, currency: str) -> AccountRef:
        return cls(AccountKind.HOUSE_FEE, operator_id, None, None, currency)

    @classmethod
    def operator_clearing(
        cls, operator_id: str, currency: str, player_id: str | None = None
    ) -> AccountRef:
        """The operator's clearing account, or its sub-account for one player's cashier."""
        return cls(AccountKind.OPERATOR_CLEARING, operator_id, player_id, None, currency)

    @classmethod
    def cashier_clearing(cls, operator_id: str, player_id: str, currency: str) -> AccountRef:
        """The clearing sub-account that takes ``player_id``'s deposits and withdrawals.

        The operator's clearing account is kept per player (the operator's clearing balance is
        the sum of its sub-accounts), so a cashier movement locks only rows of its own player
        and concurrent deposits of different players never queue on one row lock.
        """
        return cls.operator_clearing(operator_id, currency, player_id)

    @classmethod
    def parse(cls, text: str) -> AccountRef:
        """The reference whose ``str`` is ``text``.

        :raises ValueError: when ``text`` is not ``kind:operator:player:match:currency``.
        """
        parts = text.split(":")
        if len(parts) != 5:
            raise ValueError(f"not an account key: {text!r}")
        kind, operator_id, player_id, match_ref, currency = parts
        return cls(
            AccountKind(kind),
            operator_id,
            None if player_id == "-" else player_id,
            None if match_ref == "-" else match_ref,
            currency,
        )

    def __str__(self) -> str:
        return ":".join(
            (
                self.kind.value,
                self.operator_id,
                self.player_id or "-",
                self.match_ref or "-",
                self.currency,
            )
        )

    @property
    def non_negative(self) -> bool:
        return self.kind in NON_NEGATIVE


@dataclass(frozen=True)
class Posting:
    """One leg of a journal transaction: ``amount`` minor units added to ``account``."""

    account: AccountRef
    amount: int

    def __post_init__(self) -> None:
        check_minor_units(self.amount)
        if self.amount == 0:
            raise LedgerInvariantBroken(f"zero posting on {self.account}")

    def __str__(self) -> str:
        return f"{self.account} {self.amount:+d}"

    @classmethod
    def parse(cls, text: str) -> Posting:
        """The posting whose ``str`` is ``text``, e.g. ``"house_fee:op_1:-:-:EUR +25"``."""
        account, _, amount = text.rpartition(" ")
        return cls(AccountRef.parse(account), int(amount))


@dataclass(frozen=True)
class JournalTransaction:
    """Two or more postings that sum to zero per currency, on distinct accounts."""

    kind: TransactionKind
    postings: tuple[Posting, ...]

    def __post_init__(self) -> None:
        if len(self.postings) < 2:
            raise LedgerInvariantBroken(f"{self.kind} needs two or more postings")
        accounts = [posting.account for posting in self.postings]
        if len(set(accounts)) != len(accounts):
            raise LedgerInvariantBroken(f"{self.kind} posts twice to one account")
        for currency, total in sums_by_currency(self.postings).items():
            if total != 0:
                raise LedgerInvariantBroken(
                    f"{self.kind} is unbalanced in {currency}: postings sum to {total}"
                )


def sums_by_currency(postings: tuple[Posting, ...] | list[Posting]) -> dict[str, int]:
    """The total of ``postings`` per currency."""
    totals: dict[str, int] = defaultdict(int)
    for posting in postings:
        totals[posting.account.currency] += posting.amount
    return dict(totals)


def deposit(operator_id: str, player_id: str, currency: str, amount: int) -> JournalTransaction:
    """Money entering through the operator's cashier into the player's available funds."""
    return _cashier(TransactionKind.DEPOSIT, operator_id, player_id, currency, amount, inward=True)


def withdrawal(operator_id: str, player_id: str, currency: str, amount: int) -> JournalTransaction:
    """Money leaving the player's available funds through the operator's cashier."""
    return _cashier(
        TransactionKind.WITHDRAWAL, operator_id, player_id, currency, amount, inward=False
    )


def wallet_debit(
    operator_id: str, player_id: str, currency: str, amount: int
) -> JournalTransaction:
    """A seamless operator's wallet paid ``amount`` for the player (a stake, a buy-in, a
    top-up): it enters the player's available funds from the operator's clearing side, and
    is held at once in the same database transaction."""
    return _cashier(
        TransactionKind.WALLET_DEBIT, operator_id, player_id, currency, amount, inward=True
    )


def wallet_credit(
    operator_id: str, player_id: str, currency: str, amount: int
) -> JournalTransaction:
    """Money paid back to a seamless operator's player through its wallet (a payout, a
    release): it leaves the player's available funds for the operator's clearing side."""
    return _cashier(
        TransactionKind.WALLET_CREDIT, operator_id, player_id, currency, amount, inward=False
    )


def _cashier(
    kind: TransactionKind,
    operator_id: str,
    player_id: str,
    currency: str,
    amount: int,
    *,
    inward: bool,
) -> JournalTransaction:
    """``amount`` crossing between the player's available funds and its clearing
    sub-account at the operator: into the available funds when ``inward``."""
    signed = _positive(amount) if inward else -_positive(amount)
    return JournalTransaction(
        kind,
        (
            Posting(AccountRef.player_available(operator_id, player_id, currency), signed),
            Posting(AccountRef.cashier_clearing(operator_id, player_id, currency), -signed),
        ),
    )


def hold(
    operator_id: str, player_id: str, match_ref: str, currency: str, amount: int
) -> JournalTransaction:
    """A stake moved from available funds into the player's escrow for one match."""
    _positive(amount)
    return JournalTransaction(
        TransactionKind.HOLD,
        (
            Posting(AccountRef.player_available(operator_id, player_id, currency), -amount),
            Posting(AccountRef.player_escrow(operator_id, player_id, match_ref, currency), amount),
        ),
    )


def release(
    operator_id: str, player_id: str, match_ref: str, currency: str, amount: int
) -> JournalTransaction:
    """Held money returned from escrow to the player's available funds."""
    _positive(amount)
    return JournalTransaction(
        TransactionKind.RELEASE,
        (
            Posting(AccountRef.player_escrow(operator_id, player_id, match_ref, currency), -amount),
            Posting(AccountRef.player_available(operator_id, player_id, currency), amount),
        ),
    )


def capture(
    operator_id: str,
    match_ref: str,
    currency: str,
    taken: dict[str, int],
    paid: dict[str, int],
    fee: int,
    *,
    paid_into_escrow: bool = False,
) -> JournalTransaction:
    """Escrowed stakes (``taken`` per player) paid out (``paid`` per player) plus the house fee.

    ``sum(taken) == sum(paid) + fee``; amounts are positive (a zero payout is simply omitted).
    The payouts go to the players' available funds, or with ``paid_into_escrow`` into their
    escrow for ``match_ref`` (a per-hand Rummy table's balances: the losers' losses move to
    the winner's table balance, 11.5.1).
    """
    postings = [
        Posting(AccountRef.player_escrow(operator_id, player, match_ref, currency), -amount)
        for player, amount in sorted(taken.items())
        if _positive(amount)
    ]
    postings += [
        Posting(
            AccountRef.player_escrow(operator_id, player, match_ref, currency)
            if paid_into_escrow
            else AccountRef.player_available(operator_id, player, currency),
            amount,
        )
        for player, amount in sorted(paid.items())
        if _positive(amount)
    ]
    if fee:
        postings.append(Posting(AccountRef.house_fee(operator_id, currency), _positive(fee)))
    return JournalTransaction(TransactionKind.CAPTURE, tuple(postings))


def _positive(amount: int) -> int:
    if check_minor_units(amount) <= 0:
        raise LedgerInvariantBroken(f"amount must be positive, got {amount!r}")
    return amount


def fee_refund(operator_id: str, currency: str, refunds: dict[str, int]) -> JournalTransaction:
    """Fees the house took returned to the players' available funds (``refunds`` per player,
    each positive): a tournament cancelled before any of its matches finished."""
    postings = [
        Posting(AccountRef.player_available(operator_id, player, currency), _positive(amount))
        for player, amount in sorted(refunds.items())
    ]
    postings.append(Posting(AccountRef.house_fee(operator_id, currency), -sum(refunds.values())))
    return JournalTransaction(TransactionKind.FEE_REFUND, tuple(postings))
