"""Writes journal transactions to the database and verifies what was written.

A write is: look the idempotency key up (a ledger transaction's key is unique per operator, so a
key moves money at most once), make sure the accounts exist (created and committed apart from
the movement, so no movement ever waits for another's new account), lock them with
``SELECT ... FOR UPDATE`` in ascending id order (the same order in every transaction, so two
writers never deadlock), check the balances in code, then append one entry per posting, each
carrying the account's running balance, version and hash chain. The caller owns the database
transaction and commits it.
"""

from __future__ import annotations

import hashlib
import logging
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Select, String, any_, bindparam, func, select, text, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.orm import Session

from service.db.driver import execute, execute_many, insert_row, pipeline
from service.db.models import LedgerAccount, LedgerEntry, LedgerTransaction, table_of
from service.errors import IdempotencyKeyReused, InsufficientFunds
from service.ids import new_id
from service.ledger.chain import GENESIS, EntryContent, entry_hash
from service.ledger.postings import AccountKind, AccountRef, JournalTransaction

log = logging.getLogger(__name__)
#: PostgreSQL's SQLSTATE for a foreign key violation.
FOREIGN_KEY_VIOLATION = "23503"


def fingerprint(*parts: object) -> str:
    """A stable digest of what a request asked for, to tell a replay from a reused key."""
    return hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()


def find_transaction(
    session: Session, operator_id: str, idempotency_key: str, fingerprint_: str
) -> LedgerTransaction | None:
    """The transaction already recorded under ``idempotency_key``, if any.

    :raises IdempotencyKeyReused: when that transaction was asked for with other parameters.
    """
    rows = execute(session, _FIND_TRANSACTION, {"operator_id": operator_id, "key": idempotency_key})
    if not rows:
        return None
    found = rows[0]
    if found.fingerprint != fingerprint_:
        raise IdempotencyKeyReused(
            f"Idempotency key {idempotency_key!r} was already used for a different request."
        )
    return session.get(LedgerTransaction, found.id)


_TXN = table_of(LedgerTransaction)
_FIND_TRANSACTION = select(_TXN.c.id, _TXN.c.fingerprint).where(
    _TXN.c.operator_id == bindparam("operator_id"),
    _TXN.c.idempotency_key == bindparam("key"),
)


@dataclass(frozen=True)
class LockedAccount:
    """An account row as read under its lock: enough to append entries to it."""

    id: int
    key: str
    kind: str
    currency: str
    balance: int
    entry_count: int
    last_hash: str


def lock_accounts(
    session: Session, refs: Iterable[AccountRef], now: datetime
) -> dict[AccountRef, LockedAccount]:
    """Lock the accounts in ascending id order, creating any that do not exist yet.

    When all of them exist (the usual case) this is one ``SELECT ... FOR UPDATE``, which
    locks nothing when any is missing. Then the missing ones are created empty
    (``INSERT ... ON CONFLICT DO NOTHING``, see :func:`_create_accounts`) and all are locked.

    On PostgreSQL that insert runs and commits in a transaction of its own, before this one
    locks the new accounts. Inside this transaction it would hold the new rows until commit,
    and a concurrent first movement of the same account would wait for that commit while
    holding locks this transaction goes on to take: deadlocks, three of them in a row at
    times when many first movements started together (a hold beside deposits of new
    players). Created apart, an account exists for everyone at once; creating one waits for
    nothing but another creation of the same key, and every transaction then locks committed
    rows in id order.
    """
    wanted = {str(ref): ref for ref in refs}
    keys = sorted(wanted)
    postgres = session.get_bind().dialect.name == "postgresql"
    params = {"keys": keys, "wanted": len(keys)}
    lock_all, lock = (_LOCK_ALL_PG, _LOCK_PG) if postgres else (_LOCK_ALL, _LOCK)
    locked = {wanted[row.key]: LockedAccount(*row) for row in execute(session, lock_all, params)}
    if locked:
        return locked
    # Only the missing ones: an account this transaction has already moved (a seamless
    # seat's debit, then its hold into a new escrow) must not be inserted again apart,
    # where the insert would wait on this very transaction's row until it gave up.
    existing = set(session.scalars(select(LedgerAccount.key).where(LedgerAccount.key.in_(keys))))
    missing = [wanted[key] for key in keys if key not in existing]
    if missing:
        _create_accounts(session, missing, now)
    return {wanted[row.key]: LockedAccount(*row) for row in execute(session, lock, params)}


def _locking(postgres: bool) -> tuple[Select[Any], Select[Any]]:
    """The account reads of :func:`lock_accounts` for ``:keys``: under ``FOR UPDATE`` on
    PostgreSQL (where the keys are one array parameter, so the statement is prepared once),
    in id order; the first reads all of them or none (``:wanted`` is how many there are):
    locking the ones there are, then creating the others, would lock out of id order when
    another creator had allocated a lower id and not yet committed."""
    table = table_of(LedgerAccount)
    counted = table.alias("wanted")
    if postgres:
        keys = bindparam("keys", type_=postgresql.ARRAY(String))
        is_wanted, is_counted = table.c.key == any_(keys), counted.c.key == any_(keys)
    else:
        keys = bindparam("keys", expanding=True)
        is_wanted, is_counted = table.c.key.in_(keys), counted.c.key.in_(keys)
    stmt = (
        select(
            table.c.id,
            table.c.key,
            table.c.kind,
            table.c.currency,
            table.c.balance,
            table.c.entry_count,
            table.c.last_hash,
        )
        .where(is_wanted)
        .order_by(table.c.id)
    )
    if postgres:
        stmt = stmt.with_for_update()
    all_there = select(func.count()).where(is_counted).scalar_subquery()
    return stmt.where(all_there == bindparam("wanted")), stmt


_LOCK_ALL_PG, _LOCK_PG = _locking(postgres=True)
_LOCK_ALL, _LOCK = _locking(postgres=False)


#: How long the separate creation waits for a twin's creation of the same account before
#: giving up and creating it inside the caller's transaction instead.
CREATE_LOCK_TIMEOUT_MS = 1000
#: ``session.info`` key: the transaction that has created accounts inside itself.
_CREATED_INSIDE = "gin.accounts_created_inside"


def _create_accounts(session: Session, refs: list[AccountRef], now: datetime) -> None:
    """Insert empty accounts for ``refs`` (key order), leaving alone any that exist.

    PostgreSQL: in a short transaction of its own on another pooled connection, committed
    before the caller goes on (see :func:`lock_accounts`). An empty account is no movement:
    if the caller's transaction then fails, the account stays, empty, and the next movement
    uses it. Should that insert fail (say a foreign key to a player the caller's own
    transaction has just written and not committed, which the other connection cannot see),
    or no pooled connection be free, the accounts are inserted in the caller's transaction
    as before. SQLite serialises writing transactions, so there they are inserted in the
    caller's.

    A match escrow starts closed (``closed_at``): closed while empty, as :func:`post` keeps
    it, so one made for a hold that then failed is not read as open.
    """
    rows = [
        {
            "key": str(ref),
            "operator_id": ref.operator_id,
            "kind": ref.kind.value,
            "player_id": ref.player_id,
            "match_ref": ref.match_ref,
            "currency": ref.currency,
            "balance": 0,
            "entry_count": 0,
            "last_hash": GENESIS,
            "created_at": now,
            "closed_at": now if ref.kind is AccountKind.PLAYER_ESCROW else None,
        }
        for ref in refs
    ]
    table = table_of(LedgerAccount)
    bind = session.get_bind()
    statement: Any
    if bind.dialect.name == "postgresql":
        statement = postgresql.insert(table).on_conflict_do_nothing(index_elements=["key"])
        if session.info.get(_CREATED_INSIDE) is not session.get_transaction():
            try:
                with bind.engine.begin() as apart:
                    apart.execute(text(f"SET LOCAL lock_timeout = {CREATE_LOCK_TIMEOUT_MS}"))
                    apart.execute(statement, rows)
                return
            except (DBAPIError, PoolTimeout) as error:  # no connection free: inside
                if isinstance(error, DBAPIError) and error.connection_invalidated:
                    raise
                cause = getattr(error, "orig", error)
                # A foreign key refusing them is the expected case (their player is this
                # transaction's own, not yet committed); anything else is worth a warning.
                expected = getattr(cause, "sqlstate", None) == FOREIGN_KEY_VIOLATION
                log.log(
                    logging.DEBUG if expected else logging.WARNING,
                    "accounts not created apart (%s); creating them in the transaction",
                    type(cause).__name__,
                )
        # From now on this transaction creates its accounts itself: created apart, one of
        # them could wait for a row this transaction inserted and has not committed (an
        # account of a player it created), which it never commits while it waits.
        session.info[_CREATED_INSIDE] = session.get_transaction()
    else:
        statement = sqlite.insert(table).on_conflict_do_nothing(index_elements=["key"])
    session.execute(statement, rows)


def post(
    session: Session,
    journal: JournalTransaction,
    locked: dict[AccountRef, LockedAccount],
    *,
    operator_id: str,
    idempotency_key: str | None,
    fingerprint_: str,
    currency: str,
    amount: int,
    now: datetime,
    player_id: str | None = None,
    match_ref: str | None = None,
    external_reference: str | None = None,
) -> LedgerTransaction:
    """Append ``journal`` to the accounts in ``locked`` (from :func:`lock_accounts`).

    Written with Core statements (one insert for the transaction, one multi-row insert for all
    its entries, one update for the account heads): this is the hot path of every money
    movement.

    :raises InsufficientFunds: when a player or house account would go below zero.
    """
    planned = []
    for posting in sorted(journal.postings, key=lambda p: locked[p.account].id):
        account = locked[posting.account]
        balance_after = account.balance + posting.amount
        if posting.account.non_negative and balance_after < 0:
            raise InsufficientFunds(
                f"Available {account.balance} {account.currency}, "
                f"needed {-posting.amount} {account.currency}."
            )
        planned.append((posting, account, balance_after))

    txn = LedgerTransaction(
        id=new_id("txn"),
        operator_id=operator_id,
        kind=journal.kind.value,
        idempotency_key=idempotency_key,
        fingerprint=fingerprint_,
        player_id=player_id,
        match_ref=match_ref,
        external_reference=external_reference,
        currency=currency,
        amount=amount,
        entry_count=len(planned),
        created_at=now,
    )
    entries, heads = [], []
    for posting, account, balance_after in planned:
        version = account.entry_count + 1
        content = EntryContent(
            entry_id=new_id("ent"),
            transaction_id=txn.id,
            account_key=account.key,
            account_version=version,
            currency=account.currency,
            amount=posting.amount,
            balance_after=balance_after,
            kind=journal.kind.value,
            created_at=now,
        )
        digest = entry_hash(account.last_hash, content)
        entries.append(
            {
                "id": content.entry_id,
                "transaction_id": txn.id,
                "account_id": account.id,
                "account_version": version,
                "currency": account.currency,
                "amount": posting.amount,
                "balance_after": balance_after,
                "kind": content.kind,
                "created_at": now,
                "prev_hash": account.last_hash,
                "hash": digest,
            }
        )
        heads.append(
            {
                "account_id": account.id,
                "new_balance": balance_after,
                "new_count": version,
                "new_hash": digest,
                # A match escrow is closed while empty (settled, released), open while it
                # holds money: what a player holds is read from the open ones alone.
                "new_closed_at": (
                    now
                    if account.kind == AccountKind.PLAYER_ESCROW.value and balance_after == 0
                    else None
                ),
            }
        )
    # The transaction, its entries, then the heads (on PostgreSQL a trigger checks each
    # account's head against its newest entry): sent together, one round trip.
    with pipeline(session):
        execute(
            session,
            _INSERT_TRANSACTION,
            {column.key: getattr(txn, column.key) for column in _TXN.c},
        )
        execute_many(session, _INSERT_ENTRY, entries)
        execute_many(session, _MOVE_HEAD, heads)
    return txn


_INSERT_TRANSACTION = insert_row(_TXN)
_INSERT_ENTRY = insert_row(table_of(LedgerEntry), leave_out=("seq",))  # the database numbers it
_ACCOUNTS = table_of(LedgerAccount)
_MOVE_HEAD = (
    update(_ACCOUNTS)
    .where(_ACCOUNTS.c.id == bindparam("account_id"))
    .values(
        balance=bindparam("new_balance"),
        entry_count=bindparam("new_count"),
        last_hash=bindparam("new_hash"),
        closed_at=bindparam("new_closed_at"),
    )
)


@dataclass(frozen=True)
class ChainProblem:
    """One inconsistency :func:`verify` found."""

    where: str
    problem: str

    def __str__(self) -> str:
        return f"{self.where}: {self.problem}"


Checkpoint = dict[str, tuple[int, str]]


def checkpoint(session: Session, operator_id: str | None = None) -> Checkpoint:
    """Every account's head, ``{account key: (entry count, head hash)}``, to keep outside the
    database (an auditor's copy, a signed log). Given back to :func:`verify` it also exposes
    rewrites that leave a consistent-looking chain, such as the newest entries deleted
    together with the account heads."""
    stmt = select(LedgerAccount.key, LedgerAccount.entry_count, LedgerAccount.last_hash)
    if operator_id is not None:
        stmt = stmt.where(LedgerAccount.operator_id == operator_id)
    return {key: (int(count), head) for key, count, head in session.execute(stmt)}


def verify(
    session: Session, operator_id: str | None = None, since: Checkpoint | None = None
) -> list[ChainProblem]:
    """Check every account's hash chain and running balance and every transaction's balance.

    Finds an edited entry (its hash no longer matches), a deleted one (a version gap, a broken
    link, or an account head that no longer matches), and an inserted one (a broken link).
    With ``since`` (an earlier :func:`checkpoint`), also checks that each account still holds
    the entry that was its head then, unchanged. Returns the problems found; an empty list
    means the ledger verifies.
    """
    problems: list[ChainProblem] = []
    accounts_stmt = select(LedgerAccount).order_by(LedgerAccount.id)
    entries_stmt = select(LedgerEntry).order_by(LedgerEntry.account_id, LedgerEntry.account_version)
    txns_stmt = select(LedgerTransaction)
    if operator_id is not None:
        accounts_stmt = accounts_stmt.where(LedgerAccount.operator_id == operator_id)
        entries_stmt = entries_stmt.join(LedgerAccount).where(
            LedgerAccount.operator_id == operator_id
        )
        txns_stmt = txns_stmt.where(LedgerTransaction.operator_id == operator_id)
    accounts = {account.id: account for account in session.scalars(accounts_stmt)}
    by_account: dict[int, list[LedgerEntry]] = defaultdict(list)
    by_txn: dict[str, list[LedgerEntry]] = defaultdict(list)
    for entry in session.scalars(entries_stmt):
        by_account[entry.account_id].append(entry)
        by_txn[entry.transaction_id].append(entry)

    for account in accounts.values():
        prev_hash, balance, expected_version = GENESIS, 0, 1
        for entry in by_account.get(account.id, []):
            where = f"{account.key} entry {entry.id}"
            if entry.account_version != expected_version:
                problems.append(
                    ChainProblem(
                        where, f"version {entry.account_version}, expected {expected_version}"
                    )
                )
            if entry.prev_hash != prev_hash:
                problems.append(ChainProblem(where, "does not link to the previous entry"))
            balance += entry.amount
            if entry.balance_after != balance:
                problems.append(
                    ChainProblem(
                        where, f"balance_after {entry.balance_after}, running total {balance}"
                    )
                )
            content = EntryContent(
                entry_id=entry.id,
                transaction_id=entry.transaction_id,
                account_key=account.key,
                account_version=entry.account_version,
                currency=entry.currency,
                amount=entry.amount,
                balance_after=entry.balance_after,
                kind=entry.kind,
                created_at=entry.created_at,
            )
            if entry_hash(entry.prev_hash, content) != entry.hash:
                problems.append(ChainProblem(where, "hash does not match its content"))
            prev_hash, expected_version = entry.hash, entry.account_version + 1
        recorded = (since or {}).get(account.key)
        if recorded is not None and recorded[0] > 0:
            hashes = {e.account_version: e.hash for e in by_account.get(account.id, [])}
            if hashes.get(recorded[0]) != recorded[1]:
                problems.append(
                    ChainProblem(
                        account.key,
                        f"entry {recorded[0]} no longer matches the checkpoint taken earlier",
                    )
                )
        if (account.entry_count, account.last_hash, account.balance) != (
            expected_version - 1,
            prev_hash,
            balance,
        ):
            problems.append(
                ChainProblem(
                    account.key,
                    f"head says {account.entry_count} entries, balance {account.balance}; "
                    f"chain has {expected_version - 1} entries, balance {balance}",
                )
            )

    known = {account.key for account in accounts.values()}
    for key in sorted(set(since or {}) - known):
        problems.append(ChainProblem(key, "account in the checkpoint is missing"))
    for txn in session.scalars(txns_stmt):
        entries = by_txn.get(txn.id, [])
        if len(entries) != txn.entry_count or len(entries) < 2:
            problems.append(
                ChainProblem(txn.id, f"{len(entries)} entries, declared {txn.entry_count}")
            )
        totals: dict[str, int] = defaultdict(int)
        for entry in entries:
            totals[entry.currency] += entry.amount
        for currency, total in totals.items():
            if total:
                problems.append(ChainProblem(txn.id, f"sums to {total} {currency}"))
    return problems


def journal_totals(session: Session, operator_id: str | None = None) -> dict[str, int]:
    """The sum of every entry per currency; double entry makes each of them zero."""
    stmt = select(LedgerEntry.currency, func.sum(LedgerEntry.amount)).group_by(LedgerEntry.currency)
    if operator_id is not None:
        stmt = stmt.join(LedgerAccount).where(LedgerAccount.operator_id == operator_id)
    return {currency: int(total) for currency, total in session.execute(stmt)}
