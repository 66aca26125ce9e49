"""The reference wallet's books: players, transactions, rounds and a request log in one SQLite
file (the operator's own system, deliberately unrelated to the service's models).

Every call that reads or writes money takes one process-wide lock and runs inside one SQLite
transaction (``BEGIN IMMEDIATE``), so a transaction id is applied at most once and a balance
can never be read by two debits at the same time. The rules of the seamless-wallet contract
(``docs/seamless-wallet.md``) live here; HTTP, signatures and faults live in
:mod:`refwallet.app`.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

KINDS = ("debit", "credit", "rollback")

# HTTP status of each definite answer; anything not listed here is never sent by the store.
HTTP_STATUS = {
    "ok": 200,
    "already_processed": 200,
    "bad_request": 400,
    "insufficient_funds": 402,
    "limit_exceeded": 403,
    "player_disabled": 403,
    "unknown_player": 404,
    "wrong_currency": 409,
    "round_closed": 409,
    "conflict": 409,
    "transaction_rolled_back": 409,
}

# The fields that make a transaction "the same payload" on a retry. ``sent_at`` is left out:
# a caller stamps every attempt afresh, and a retry must still be recognised as one.
FINGERPRINT_FIELDS = (
    "kind",
    "player_id",
    "external_player_id",
    "currency",
    "amount",
    "round_id",
    "table_id",
    "match_id",
    "reason",
    "references",
    "round_closed",
)

SCHEMA = """
CREATE TABLE IF NOT EXISTS players (
    external_player_id TEXT PRIMARY KEY,
    currency TEXT NOT NULL,
    balance INTEGER NOT NULL CHECK (balance >= 0),
    disabled INTEGER NOT NULL DEFAULT 0,
    debit_limit INTEGER
);
CREATE TABLE IF NOT EXISTS transactions (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    transaction_id TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    state TEXT NOT NULL,
    external_player_id TEXT NOT NULL,
    player_id TEXT NOT NULL,
    round_id TEXT NOT NULL,
    table_id TEXT NOT NULL,
    match_id TEXT,
    amount INTEGER NOT NULL,
    currency TEXT NOT NULL,
    reason TEXT,
    refs TEXT NOT NULL,
    round_closed INTEGER NOT NULL DEFAULT 0,
    fingerprint TEXT NOT NULL,
    sent_at TEXT,
    received_at TEXT NOT NULL,
    applied_at TEXT
);
CREATE INDEX IF NOT EXISTS transactions_by_arrival ON transactions (received_at, seq);
CREATE TABLE IF NOT EXISTS rounds (
    external_player_id TEXT NOT NULL,
    round_id TEXT NOT NULL,
    credited INTEGER NOT NULL DEFAULT 0,
    closed INTEGER NOT NULL DEFAULT 0,
    opened_at TEXT NOT NULL,
    PRIMARY KEY (external_player_id, round_id)
);
CREATE TABLE IF NOT EXISTS requests (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    received_at TEXT NOT NULL,
    path TEXT NOT NULL,
    kind TEXT NOT NULL,
    transaction_id TEXT,
    http_status INTEGER,
    answer TEXT,
    outcome TEXT,
    fault TEXT,
    applied INTEGER NOT NULL DEFAULT 0
);
"""


def timestamp(unix: float) -> str:
    """RFC 3339 in UTC with microseconds: sortable as text, and its first ten characters are
    the UTC day the date filters match."""
    return datetime.fromtimestamp(unix, UTC).isoformat(timespec="microseconds")[:-6] + "Z"


@dataclass(frozen=True)
class Transaction:
    """A validated debit, credit or rollback, as the caller sent it."""

    transaction_id: str
    kind: str
    player_id: str
    external_player_id: str
    currency: str
    amount: int
    round_id: str
    table_id: str
    match_id: str | None
    reason: str
    references: tuple[str, ...]
    round_closed: bool
    sent_at: str

    def fingerprint(self) -> str:
        """A digest of the fields a retry must repeat unchanged (not ``sent_at``)."""
        fields = asdict(self)
        fields["references"] = list(self.references)
        canonical = json.dumps({name: fields[name] for name in FINGERPRINT_FIELDS}, sort_keys=True)
        return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass(frozen=True)
class BalanceQuery:
    """A ``/balance`` request."""

    player_id: str
    external_player_id: str
    currency: str


@dataclass(frozen=True)
class Player:
    """One wallet: a single currency, a balance in minor units, and the operator's controls."""

    external_player_id: str
    currency: str
    balance: int
    disabled: bool
    debit_limit: int | None

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Decision:
    """The wallet's definite answer to one request (the HTTP layer may still garble it on
    purpose, see the faults in :mod:`refwallet.app`)."""

    status: str
    balance: int | None = None
    currency: str | None = None
    applied: bool = False

    @property
    def http_status(self) -> int:
        return HTTP_STATUS[self.status]

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"status": self.status}
        if self.balance is not None:
            body["balance"] = self.balance
        if self.currency is not None:
            body["currency"] = self.currency
        return body


def refused(status: str) -> Decision:
    """A definite failure: nothing was applied."""
    return Decision(status)


class WalletStore:
    """The wallet's SQLite file behind one lock. Safe to share between request threads."""

    def __init__(self, db_path: str) -> None:
        self._lock = threading.Lock()
        self._db = sqlite3.connect(db_path, check_same_thread=False, isolation_level=None)
        self._db.row_factory = sqlite3.Row
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.executescript(SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """The lock and one SQLite transaction: committed on return, rolled back on error."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    # --- the contract ----------------------------------------------------------------------

    def apply(self, tx: Transaction, received_at: float, now: float) -> Decision:
        """Apply a debit, credit or rollback exactly once, or refuse it without a change."""
        with self._transaction() as db:
            existing = _transaction_row(db, tx.transaction_id)
            if existing is not None:
                return _replay(db, tx, existing)
            player = _player(db, tx.external_player_id)
            if player is None:
                return refused("unknown_player")
            if player.currency != tx.currency:
                return refused("wrong_currency")
            stamps = (timestamp(received_at), timestamp(now))
            if tx.kind == "debit":
                return _debit(db, tx, player, stamps)
            if tx.kind == "credit":
                return _credit(db, tx, player, stamps)
            return _rollback(db, tx, player, stamps)

    def balance(self, query: BalanceQuery) -> Decision:
        """The player's balance in its wallet's currency."""
        with self._transaction() as db:
            player = _player(db, query.external_player_id)
        if player is None:
            return refused("unknown_player")
        if player.currency != query.currency:
            return refused("wrong_currency")
        return Decision("ok", balance=player.balance, currency=player.currency)

    # --- administration --------------------------------------------------------------------

    def put_player(self, player: Player) -> bool:
        """Create or replace a player (balance set as given); True when it is new."""
        with self._transaction() as db:
            created = _player(db, player.external_player_id) is None
            db.execute(
                "INSERT OR REPLACE INTO players"
                " (external_player_id, currency, balance, disabled, debit_limit)"
                " VALUES (?, ?, ?, ?, ?)",
                (
                    player.external_player_id,
                    player.currency,
                    player.balance,
                    int(player.disabled),
                    player.debit_limit,
                ),
            )
        return created

    def get_player(self, external_player_id: str) -> Player | None:
        with self._transaction() as db:
            return _player(db, external_player_id)

    def transactions(self, day: str | None = None) -> list[dict[str, Any]]:
        """Every recorded transaction in order of arrival, or those received on ``day``
        (``YYYY-MM-DD``, UTC)."""
        sql = "SELECT * FROM transactions"
        params: tuple[str, ...] = ()
        if day is not None:
            sql += " WHERE substr(received_at, 1, 10) = ?"
            params = (day,)
        with self._transaction() as db:
            rows = db.execute(sql + " ORDER BY received_at, seq", params).fetchall()
        return [_transaction_json(row) for row in rows]

    def export(self, day: str) -> list[dict[str, Any]]:
        """The daily reconciliation file: ``day``'s transactions without tombstones (a
        tombstone is a refusal kept for later, not a movement)."""
        keys = ("transaction_id", "kind", "round_id", "amount", "currency", "state")
        return [
            {key: row[key] for key in keys}
            for row in self.transactions(day)
            if row["state"] != "tombstone"
        ]

    # --- the request log -------------------------------------------------------------------

    def open_request(
        self, path: str, kind: str, transaction_id: str | None, received_at: float
    ) -> int:
        """Log a request as it arrives (before any deliberate delay), so a test sees every
        attempt at once; :meth:`close_request` records what it was answered."""
        with self._transaction() as db:
            cursor = db.execute(
                "INSERT INTO requests (received_at, path, kind, transaction_id)"
                " VALUES (?, ?, ?, ?)",
                (timestamp(received_at), path, kind, transaction_id),
            )
        assert cursor.lastrowid is not None
        return cursor.lastrowid

    def close_request(
        self,
        seq: int,
        http_status: int,
        answer: str,
        outcome: str | None,
        fault: str | None,
        applied: bool,
    ) -> None:
        with self._transaction() as db:
            db.execute(
                "UPDATE requests SET http_status = ?, answer = ?, outcome = ?, fault = ?,"
                " applied = ? WHERE seq = ?",
                (http_status, answer, outcome, fault, int(applied), seq),
            )

    def requests(self, transaction_id: str | None = None) -> list[dict[str, Any]]:
        """The request log in order of arrival, optionally one transaction id's attempts."""
        sql = "SELECT * FROM requests"
        params: tuple[str, ...] = ()
        if transaction_id is not None:
            sql += " WHERE transaction_id = ?"
            params = (transaction_id,)
        with self._transaction() as db:
            rows = db.execute(sql + " ORDER BY seq", params).fetchall()
        return [{**dict(row), "applied": bool(row["applied"])} for row in rows]


# --- the rules, each inside the caller's SQLite transaction ---------------------------------


def _replay(db: sqlite3.Connection, tx: Transaction, existing: sqlite3.Row) -> Decision:
    """A transaction id seen before: the same payload is answered without a change."""
    if existing["state"] == "tombstone":
        # The debit was rolled back before it arrived: it must never be applied.
        return refused("transaction_rolled_back" if tx.kind == "debit" else "conflict")
    if existing["fingerprint"] != tx.fingerprint():
        return refused("conflict")
    if existing["state"] == "rolled_back":
        return refused("transaction_rolled_back")
    player = _player(db, tx.external_player_id)
    balance = player.balance if player is not None else None
    return Decision("already_processed", balance=balance)


def _debit(
    db: sqlite3.Connection, tx: Transaction, player: Player, stamps: tuple[str, str]
) -> Decision:
    if player.disabled:
        return refused("player_disabled")
    round_row = _round(db, tx.external_player_id, tx.round_id)
    if round_row is not None and round_row["closed"]:
        return refused("round_closed")
    if player.debit_limit is not None and tx.amount > player.debit_limit:
        return refused("limit_exceeded")
    if player.balance < tx.amount:
        return refused("insufficient_funds")
    balance = _move(db, player, -tx.amount)
    _open_round(db, tx, stamps[1])
    _record(db, tx, "applied", stamps)
    return Decision("ok", balance=balance, applied=True)


def _credit(
    db: sqlite3.Connection, tx: Transaction, player: Player, stamps: tuple[str, str]
) -> Decision:
    """Always accepted, closed round or not (a refund is a new credit); never short of funds."""
    balance = _move(db, player, tx.amount)
    _open_round(db, tx, stamps[1])
    db.execute(
        "UPDATE rounds SET credited = 1, closed = MAX(closed, ?)"
        " WHERE external_player_id = ? AND round_id = ?",
        (int(tx.round_closed), tx.external_player_id, tx.round_id),
    )
    _record(db, tx, "applied", stamps)
    return Decision("ok", balance=balance, applied=True)


def _rollback(
    db: sqlite3.Connection, tx: Transaction, player: Player, stamps: tuple[str, str]
) -> Decision:
    debit_id = tx.references[0]
    debit = _transaction_row(db, debit_id)
    if debit is None:
        # Not arrived yet (or never will): remember the cancellation so a late debit is refused.
        _record_tombstone(db, tx, debit_id, stamps[0])
        _record(db, tx, "applied", stamps)
        return Decision("ok", balance=player.balance, applied=True)
    if debit["kind"] != "debit":
        return refused("bad_request")
    if debit["state"] == "tombstone":
        return Decision("already_processed", balance=player.balance)
    if (debit["external_player_id"], debit["amount"], debit["round_id"]) != (
        tx.external_player_id,
        tx.amount,
        tx.round_id,
    ):
        return refused("bad_request")
    if debit["state"] == "rolled_back":
        return Decision("already_processed", balance=player.balance)
    round_row = _round(db, debit["external_player_id"], debit["round_id"])
    if round_row is not None and round_row["credited"]:
        return refused("round_closed")
    balance = _move(db, player, tx.amount)
    db.execute(
        "UPDATE transactions SET state = 'rolled_back' WHERE transaction_id = ?", (debit_id,)
    )
    _record(db, tx, "applied", stamps)
    return Decision("ok", balance=balance, applied=True)


# --- rows -----------------------------------------------------------------------------------


def _player(db: sqlite3.Connection, external_player_id: str) -> Player | None:
    row = db.execute(
        "SELECT * FROM players WHERE external_player_id = ?", (external_player_id,)
    ).fetchone()
    if row is None:
        return None
    return Player(
        external_player_id=row["external_player_id"],
        currency=row["currency"],
        balance=row["balance"],
        disabled=bool(row["disabled"]),
        debit_limit=row["debit_limit"],
    )


def _move(db: sqlite3.Connection, player: Player, delta: int) -> int:
    """Add ``delta`` to the player's balance; the new balance. The CHECK constraint refuses a
    negative balance even if a rule above were wrong (the whole transaction rolls back)."""
    balance = player.balance + delta
    db.execute(
        "UPDATE players SET balance = ? WHERE external_player_id = ?",
        (balance, player.external_player_id),
    )
    return balance


def _transaction_row(db: sqlite3.Connection, transaction_id: str) -> sqlite3.Row | None:
    row: sqlite3.Row | None = db.execute(
        "SELECT * FROM transactions WHERE transaction_id = ?", (transaction_id,)
    ).fetchone()
    return row


def _round(db: sqlite3.Connection, external_player_id: str, round_id: str) -> sqlite3.Row | None:
    row: sqlite3.Row | None = db.execute(
        "SELECT * FROM rounds WHERE external_player_id = ? AND round_id = ?",
        (external_player_id, round_id),
    ).fetchone()
    return row


def _open_round(db: sqlite3.Connection, tx: Transaction, now: str) -> None:
    db.execute(
        "INSERT OR IGNORE INTO rounds (external_player_id, round_id, opened_at) VALUES (?, ?, ?)",
        (tx.external_player_id, tx.round_id, now),
    )


def _record(db: sqlite3.Connection, tx: Transaction, state: str, stamps: tuple[str, str]) -> None:
    db.execute(
        "INSERT INTO transactions (transaction_id, kind, state, external_player_id, player_id,"
        " round_id, table_id, match_id, amount, currency, reason, refs, round_closed,"
        " fingerprint, sent_at, received_at, applied_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            tx.transaction_id,
            tx.kind,
            state,
            tx.external_player_id,
            tx.player_id,
            tx.round_id,
            tx.table_id,
            tx.match_id,
            tx.amount,
            tx.currency,
            tx.reason,
            json.dumps(list(tx.references)),
            int(tx.round_closed),
            tx.fingerprint(),
            tx.sent_at,
            stamps[0],
            stamps[1],
        ),
    )


def _record_tombstone(
    db: sqlite3.Connection, rollback: Transaction, debit_id: str, received_at: str
) -> None:
    """A debit row that was never applied, under the debit's id, so its late arrival finds it.
    It has no fingerprint (nothing to compare a retry with) and no ``applied_at``."""
    db.execute(
        "INSERT INTO transactions (transaction_id, kind, state, external_player_id, player_id,"
        " round_id, table_id, match_id, amount, currency, reason, refs, round_closed,"
        " fingerprint, sent_at, received_at, applied_at)"
        " VALUES (?, 'debit', 'tombstone', ?, ?, ?, ?, ?, ?, ?, NULL, '[]', 0, '', NULL, ?, NULL)",
        (
            debit_id,
            rollback.external_player_id,
            rollback.player_id,
            rollback.round_id,
            rollback.table_id,
            rollback.match_id,
            rollback.amount,
            rollback.currency,
            received_at,
        ),
    )


def _transaction_json(row: sqlite3.Row) -> dict[str, Any]:
    return {
        "transaction_id": row["transaction_id"],
        "kind": row["kind"],
        "state": row["state"],
        "external_player_id": row["external_player_id"],
        "player_id": row["player_id"],
        "round_id": row["round_id"],
        "table_id": row["table_id"],
        "match_id": row["match_id"],
        "amount": row["amount"],
        "currency": row["currency"],
        "reason": row["reason"],
        "references": json.loads(row["refs"]),
        "round_closed": bool(row["round_closed"]),
        "sent_at": row["sent_at"],
        "received_at": row["received_at"],
        "applied_at": row["applied_at"],
    }
