"""HTTP idempotency keys, as payments APIs keep them (API_CONVENTIONS, "Idempotency").

A key is claimed by inserting an ``in_flight`` row in its own short transaction. A second
request with the key then gets the stored response (same request), ``idempotency_key_reused``
(different request) or ``idempotency_key_in_use`` (first one still running). When the first
request ends, its response is stored; when it dies with a server error the claim is dropped so
the client can retry. A claim older than the lock timeout (a crashed worker) can be taken over:
that is safe because the ledger itself records each key's money movement once.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from service.db.models import IdempotencyRecord
from service.errors import IdempotencyKeyInUse, IdempotencyKeyRequired, IdempotencyKeyReused

MAX_KEY_LENGTH = 255


@dataclass(frozen=True)
class StoredResponse:
    status: int
    body: str


def check_key(key: str | None) -> str:
    """:raises IdempotencyKeyRequired: when the header is missing, empty or too long."""
    if not key or len(key) > MAX_KEY_LENGTH or not key.isprintable():
        raise IdempotencyKeyRequired(
            "Send an Idempotency-Key header of 1 to 255 printable characters."
        )
    return key


def request_hash(method: str, path: str, body: Any) -> str:
    """A digest of the request that ignores JSON formatting and key order."""
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(f"{method} {path}\n{canonical}".encode()).hexdigest()


def claim(
    session: Session,
    operator_id: str,
    key: str,
    digest: str,
    now: datetime,
    retention: timedelta,
    lock_timeout: timedelta,
) -> StoredResponse | None:
    """Claim ``key`` for this request; ``None`` means go ahead, a response means replay it.

    :raises IdempotencyKeyReused: when the key was used for a different request.
    :raises IdempotencyKeyInUse: while the key's first request is still running.
    """
    dialect = session.get_bind().dialect.name
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    table = IdempotencyRecord.__table__
    for _attempt in range(3):
        with session.begin():
            inserted = session.execute(
                insert(table)
                .values(
                    operator_id=operator_id,
                    key=key,
                    request_hash=digest,
                    state="in_flight",
                    locked_at=now,
                    response_status=None,
                    response_body=None,
                    created_at=now,
                    expires_at=now + retention,
                )
                .on_conflict_do_nothing(index_elements=["operator_id", "key"])
                .returning(table.c.key)
            ).first()
            if inserted is not None:
                return None
            record = session.execute(
                select(table).where(table.c.operator_id == operator_id, table.c.key == key)
            ).one_or_none()
            if record is None:
                continue
            if record.expires_at <= now:
                session.execute(
                    delete(IdempotencyRecord).where(
                        IdempotencyRecord.operator_id == operator_id,
                        IdempotencyRecord.key == key,
                        IdempotencyRecord.expires_at <= now,
                    )
                )
                continue
            if record.request_hash != digest:
                raise IdempotencyKeyReused(
                    f"Idempotency key {key!r} was already used for a different request."
                )
            if record.state == "complete":
                assert record.response_status is not None and record.response_body is not None
                return StoredResponse(record.response_status, record.response_body)
            if record.locked_at > now - lock_timeout:
                raise IdempotencyKeyInUse(
                    f"A request with idempotency key {key!r} is still being processed."
                )
            taken = session.execute(
                update(IdempotencyRecord)
                .where(
                    IdempotencyRecord.operator_id == operator_id,
                    IdempotencyRecord.key == key,
                    IdempotencyRecord.state == "in_flight",
                    IdempotencyRecord.locked_at == record.locked_at,
                )
                .values(locked_at=now)
            ).rowcount
            if taken:
                return None
            raise IdempotencyKeyInUse(
                f"A request with idempotency key {key!r} is still being processed."
            )
    raise IdempotencyKeyInUse(f"Idempotency key {key!r} is contended; retry.")


def complete(session: Session, operator_id: str, key: str, status: int, body: str) -> None:
    """Store the response of the request that holds the claim on ``key``."""
    table = IdempotencyRecord.__table__
    with session.begin():
        session.execute(
            update(table)
            .where(table.c.operator_id == operator_id, table.c.key == key)
            .values(state="complete", response_status=status, response_body=body)
        )


def release(session: Session, operator_id: str, key: str) -> None:
    """Drop an unfinished claim so the client may retry (after a server error)."""
    with session.begin():
        session.execute(
            delete(IdempotencyRecord).where(
                IdempotencyRecord.operator_id == operator_id,
                IdempotencyRecord.key == key,
                IdempotencyRecord.state == "in_flight",
            )
        )


def purge_expired(session: Session, now: datetime) -> int:
    """Delete keys past their retention; returns how many."""
    with session.begin():
        return session.execute(
            delete(IdempotencyRecord).where(IdempotencyRecord.expires_at <= now)
        ).rowcount
