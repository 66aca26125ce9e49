"""Wallets: a player's money in one currency, ``balance = available + held``.

Deposits and withdrawals come from the operator's cashier (the operator's clearing account is
the other side). Holds, releases and captures are what tables and settlement call: a hold moves
a stake into the player's escrow for one match, a release returns it, a capture pays escrowed
stakes out to players and the house fee. Each runs inside the caller's unit of work
(:mod:`service.usecases.unit_of_work`: a seat and its hold, a settlement and its capture
commit together), and each takes an idempotency key: the same key with the same arguments
returns the first result and moves nothing; with other arguments it is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import bindparam, func, literal_column, select
from sqlalchemy.orm import Session

from service.db.driver import execute
from service.db.models import LedgerAccount, LedgerEntry, LedgerTransaction, Player
from service.db.wallet_models import OperatorWallet
from service.errors import NotFound, SeamlessWallet, ValidationFailed
from service.ledger import postings as ledger
from service.ledger import store
from service.ledger.money import exponent
from service.ledger.postings import AccountKind, AccountRef, JournalTransaction
from service.ledger.store import LockedAccount
from service.usecases.auth import Principal, authorize_player, load_players, require_operator
from service.usecases.limits import check_deposit_allowed
from service.usecases.pages import Page, page_of
from service.usecases.rates import Rate, display_rate


@dataclass(frozen=True)
class WalletView:
    player_id: str
    currency: str
    available: int
    held: int
    rate: Rate | None

    @property
    def balance(self) -> int:
        return self.available + self.held


@dataclass(frozen=True)
class Movement:
    """The result of a money movement: the ledger transaction and the wallet after it."""

    transaction: LedgerTransaction
    wallet: WalletView
    replayed: bool


_PLAYER_KINDS = (AccountKind.PLAYER_AVAILABLE.value, AccountKind.PLAYER_ESCROW.value)
#: A wallet: the available account (by its key) and what the open match escrows hold (closed
#: ones are empty; ix_ledger_accounts_open_escrows holds the open ones, so the sum does not
#: grow with the matches a player has played).
_WALLET = select(
    select(LedgerAccount.balance)
    .where(LedgerAccount.key == bindparam("available_key"))
    .scalar_subquery()
    .label("available"),
    select(func.coalesce(func.sum(LedgerAccount.balance), literal_column("0")))
    .where(
        LedgerAccount.player_id == bindparam("player_id"),
        LedgerAccount.currency == bindparam("currency"),
        # Written into the statement, not bound: the planner then knows the rows are in the
        # partial index of open escrows.
        LedgerAccount.kind == literal_column(f"'{AccountKind.PLAYER_ESCROW.value}'"),
        LedgerAccount.closed_at.is_(None),
    )
    .scalar_subquery()
    .label("held"),
)


def _wallet(
    session: Session, player: Player, currency: str, display_currency: str | None = None
) -> WalletView:
    available_key = str(AccountRef.player_available(player.operator_id, player.id, currency))
    [(available, held)] = execute(
        session,
        _WALLET,
        {"available_key": available_key, "player_id": player.id, "currency": currency},
    )
    return WalletView(
        player.id,
        currency,
        int(available or 0),
        int(held),
        display_rate(session, player.operator_id, currency, display_currency, player),
    )


def seamless_wallet(session: Session, operator_id: str, currency: str) -> OperatorWallet | None:
    """The operator's seamless wallet for ``currency`` (:mod:`service.usecases.seamless`);
    ``None`` in transfer mode, where its players' money is deposited here."""
    wallet = session.get(OperatorWallet, (operator_id, currency))
    return wallet if wallet is not None and wallet.mode == "seamless" else None


def get_wallet(
    session: Session,
    principal: Principal,
    player_id: str,
    currency: str,
    display_currency: str | None = None,
) -> WalletView:
    """One wallet; amounts shown in ``display_currency`` when given, else in the owner's."""
    exponent(currency)
    player = authorize_player(session, principal, player_id)
    return _wallet(session, player, currency, display_currency)


def list_wallets(
    session: Session, principal: Principal, player_id: str, display_currency: str | None = None
) -> list[WalletView]:
    """The player's wallets, one per currency that has ever held money, by currency; amounts
    shown in ``display_currency`` when given, else in the owner's."""
    player = authorize_player(session, principal, player_id)
    currencies = session.scalars(
        select(LedgerAccount.currency)
        .where(
            LedgerAccount.player_id == player_id,
            LedgerAccount.kind.in_(_PLAYER_KINDS),
            LedgerAccount.entry_count > 0,  # not one created for a movement that failed
        )
        .distinct()
        .order_by(LedgerAccount.currency)
    ).all()
    return [_wallet(session, player, currency, display_currency) for currency in currencies]


def move(
    session: Session,
    *,
    operator_id: str,
    player: Player | None,
    journal: JournalTransaction,
    idempotency_key: str,
    fingerprint: str,
    currency: str,
    amount: int,
    now: datetime,
    match_ref: str | None = None,
    external_reference: str | None = None,
    before_post: Callable[[dict[AccountRef, LockedAccount]], None] | None = None,
) -> tuple[LedgerTransaction, bool]:
    """Post ``journal`` once per idempotency key, inside the caller's open transaction
    (here, and for seamless wallets' debits and credits, :mod:`service.usecases.seamless`)."""
    locked = store.lock_accounts(session, [p.account for p in journal.postings], now)
    # Under the locks, a twin request with the same key has either committed (we see its
    # transaction and answer with it) or not started posting (and will see ours).
    existing = store.find_transaction(session, operator_id, idempotency_key, fingerprint)
    if existing is not None:
        return existing, True
    if before_post is not None:
        before_post(locked)
    txn = store.post(
        session,
        journal,
        locked,
        operator_id=operator_id,
        idempotency_key=idempotency_key,
        fingerprint_=fingerprint,
        currency=currency,
        amount=amount,
        now=now,
        player_id=player.id if player else None,
        match_ref=match_ref,
        external_reference=external_reference,
    )
    return txn, False


def deposit(
    session: Session,
    principal: Principal,
    player_id: str,
    currency: str,
    amount: int,
    idempotency_key: str,
    now: datetime,
    external_reference: str | None = None,
) -> Movement:
    """Credit the player's available funds from the operator's cashier.

    :raises SelfExcluded: while the player is self-excluded.
    :raises DepositLimitExceeded: when a deposit limit would be passed.
    """
    return _cashier(
        session,
        principal,
        "deposit",
        player_id,
        currency,
        amount,
        idempotency_key,
        now,
        external_reference,
    )


def withdraw(
    session: Session,
    principal: Principal,
    player_id: str,
    currency: str,
    amount: int,
    idempotency_key: str,
    now: datetime,
    external_reference: str | None = None,
) -> Movement:
    """Pay the player's available funds out through the operator's cashier.

    :raises InsufficientFunds: when the available balance is smaller than ``amount``.
    """
    return _cashier(
        session,
        principal,
        "withdrawal",
        player_id,
        currency,
        amount,
        idempotency_key,
        now,
        external_reference,
    )


_CASHIER_JOURNALS = {"deposit": ledger.deposit, "withdrawal": ledger.withdrawal}


def _cashier(
    session: Session,
    principal: Principal,
    kind: str,
    player_id: str,
    currency: str,
    amount: int,
    idempotency_key: str,
    now: datetime,
    external_reference: str | None,
) -> Movement:
    """A deposit or a withdrawal (``kind``) through the operator's cashier; deposits are
    checked against self-exclusion and the deposit limits under the account locks."""
    operator_id = require_operator(principal)
    if seamless_wallet(session, operator_id, currency) is not None:
        raise SeamlessWallet(
            f"{currency} runs in seamless mode: {player_id}'s money stays in the operator's "
            f"wallet, and there are no {kind}s here."
        )
    journal = _CASHIER_JOURNALS[kind](operator_id, player_id, currency, amount)
    owner = authorize_player(session, principal, player_id)

    def limits(locked: dict[AccountRef, LockedAccount]) -> None:
        available = locked[AccountRef.player_available(operator_id, player_id, currency)]
        check_deposit_allowed(session, owner, available, amount, now, currency)

    txn, replayed = move(
        session,
        operator_id=operator_id,
        player=owner,
        journal=journal,
        idempotency_key=idempotency_key,
        fingerprint=store.fingerprint(kind, player_id, currency, amount, external_reference),
        currency=currency,
        amount=amount,
        now=now,
        external_reference=external_reference,
        before_post=limits if kind == "deposit" else None,
    )
    return Movement(txn, _wallet(session, owner, currency), replayed)


_ESCROW_JOURNALS = {"hold": ledger.hold, "release": ledger.release}


def _escrow(
    session: Session,
    kind: str,
    operator_id: str,
    player_id: str,
    match_ref: str,
    currency: str,
    amount: int,
    idempotency_key: str,
    now: datetime,
) -> Movement:
    """A hold (available -> escrow for ``match_ref``) or a release (back), once per
    idempotency key, with the wallet after it."""
    player = authorize_player(session, Principal(operator_id), player_id)
    journal = _ESCROW_JOURNALS[kind](operator_id, player.id, match_ref, currency, amount)
    txn, replayed = move(
        session,
        operator_id=operator_id,
        player=player,
        journal=journal,
        idempotency_key=idempotency_key,
        fingerprint=store.fingerprint(kind, player.id, match_ref, currency, amount),
        currency=currency,
        amount=amount,
        now=now,
        match_ref=match_ref,
    )
    return Movement(txn, _wallet(session, player, currency), replayed)


def hold(
    session: Session,
    operator_id: str,
    player_id: str,
    match_ref: str,
    currency: str,
    amount: int,
    idempotency_key: str,
    now: datetime,
) -> Movement:
    """Move a stake from available funds into the player's escrow for ``match_ref``.

    :raises InsufficientFunds: when the available balance is smaller than ``amount``.
    """
    return _escrow(
        session, "hold", operator_id, player_id, match_ref, currency, amount, idempotency_key, now
    )


def release(
    session: Session,
    operator_id: str,
    player_id: str,
    match_ref: str,
    currency: str,
    amount: int,
    idempotency_key: str,
    now: datetime,
) -> Movement:
    """Return held money from the player's escrow for ``match_ref`` to available funds.

    :raises InsufficientFunds: when less than ``amount`` is held for that match.
    """
    return _escrow(
        session,
        "release",
        operator_id,
        player_id,
        match_ref,
        currency,
        amount,
        idempotency_key,
        now,
    )


def capture(
    session: Session,
    operator_id: str,
    match_ref: str,
    currency: str,
    taken: Mapping[str, int],
    paid: Mapping[str, int],
    fee: int,
    idempotency_key: str,
    now: datetime,
    *,
    table_ref: str | None = None,
) -> LedgerTransaction:
    """Settle a match: take ``taken`` from each player's escrow, pay ``paid`` to players'
    available funds and ``fee`` to the house. ``sum(taken) == sum(paid) + fee``; zero amounts
    are left out of the journal. With ``table_ref`` (a hand of a per-hand Rummy table) the
    escrow is the players' table balance held for ``table_ref``, and the payouts go back
    into it; the transaction still names the hand's match, ``match_ref``.

    :raises NotFound: when a player is not the operator's.
    :raises InsufficientFunds: when a player's escrow holds less than is taken.
    :raises ValidationFailed: when the amounts do not add up.
    """
    taken = {p: a for p, a in taken.items() if a}
    paid = {p: a for p, a in paid.items() if a}
    if sum(taken.values()) != sum(paid.values()) + fee:
        raise ValidationFailed(
            f"Capture takes {sum(taken.values())} but pays {sum(paid.values())} + fee {fee}."
        )
    principal = Principal(operator_id)
    ids = sorted(set(taken) | set(paid))
    # At most one round trip for every player's row; the checks below find them in the
    # session (held here: the session's identity map keeps only objects referred to).
    loaded = load_players(session, ids)
    for player_id in ids:
        authorize_player(session, principal, player_id)
    del loaded
    journal = ledger.capture(
        operator_id,
        table_ref or match_ref,
        currency,
        dict(taken),
        dict(paid),
        fee,
        paid_into_escrow=table_ref is not None,
    )
    where = match_ref if table_ref is None else f"{match_ref}@{table_ref}"
    fingerprint = store.fingerprint(
        "capture", where, currency, sorted(taken.items()), sorted(paid.items()), fee
    )
    txn, _ = move(
        session,
        operator_id=operator_id,
        player=None,
        journal=journal,
        idempotency_key=idempotency_key,
        fingerprint=fingerprint,
        currency=currency,
        amount=sum(taken.values()),
        now=now,
        match_ref=match_ref,
    )
    return txn


def refund_fees(
    session: Session,
    operator_id: str,
    match_ref: str,
    currency: str,
    refunds: Mapping[str, int],
    idempotency_key: str,
    now: datetime,
) -> LedgerTransaction:
    """Give back fees the house took for ``match_ref`` (a tournament): ``refunds`` per
    player from the house fee account to available funds, once per idempotency key.

    :raises InsufficientFunds: when the house fee account holds less.
    """
    refunds = {p: a for p, a in refunds.items() if a}
    journal = ledger.fee_refund(operator_id, currency, dict(refunds))
    txn, _ = move(
        session,
        operator_id=operator_id,
        player=None,
        journal=journal,
        idempotency_key=idempotency_key,
        fingerprint=store.fingerprint("fee_refund", match_ref, currency, sorted(refunds.items())),
        currency=currency,
        amount=sum(refunds.values()),
        now=now,
        match_ref=match_ref,
    )
    return txn


@dataclass(frozen=True)
class EntryView:
    entry: LedgerEntry
    account_kind: str
    match_ref: str | None
    external_reference: str | None
    rate: Rate | None


def list_entries(
    session: Session,
    principal: Principal,
    player_id: str,
    currency: str | None,
    limit: int,
    starting_after: str | None,
    ending_before: str | None,
    display_currency: str | None = None,
) -> Page[EntryView]:
    """The player's ledger entries (available and escrow accounts), newest first; amounts
    shown in ``display_currency`` when given, else in the player's."""
    if currency is not None:
        exponent(currency)
    player = authorize_player(session, principal, player_id)
    stmt = (
        select(LedgerEntry)
        .join(LedgerAccount, LedgerEntry.account_id == LedgerAccount.id)
        .where(
            LedgerAccount.player_id == player_id,
            LedgerAccount.kind.in_(_PLAYER_KINDS),  # not the operator's clearing
        )
    )
    if currency is not None:
        stmt = stmt.where(LedgerAccount.currency == currency)
    page = page_of(
        session, stmt, LedgerEntry.seq, LedgerEntry, limit, starting_after, ending_before
    )
    accounts = {
        a.id: a
        for a in session.scalars(select(LedgerAccount).where(LedgerAccount.player_id == player_id))
    }
    txns = {
        t.id: t
        for t in session.scalars(
            select(LedgerTransaction).where(
                LedgerTransaction.id.in_({e.transaction_id for e in page.data})
            )
        )
    }
    rates: dict[str, Rate | None] = {}
    views = []
    for entry in page.data:
        if entry.currency not in rates:
            rates[entry.currency] = display_rate(
                session, player.operator_id, entry.currency, display_currency, player
            )
        txn = txns[entry.transaction_id]
        views.append(
            EntryView(
                entry,
                accounts[entry.account_id].kind,
                txn.match_ref,
                txn.external_reference,
                rates[entry.currency],
            )
        )
    return Page(views, page.has_more, page.next_cursor)


def get_transaction(
    session: Session, principal: Principal, transaction_id: str
) -> LedgerTransaction:
    operator_id = require_operator(principal)
    txn = session.get(LedgerTransaction, transaction_id)
    if txn is None or txn.operator_id != operator_id:
        raise NotFound(f"No transaction {transaction_id!r}.")
    return txn


def entries_of(session: Session, transaction_id: str) -> Sequence[LedgerEntry]:
    return session.scalars(
        select(LedgerEntry)
        .where(LedgerEntry.transaction_id == transaction_id)
        .order_by(LedgerEntry.seq)
    ).all()
