"""Operators (tenants) and their API keys: created, listed, revoked; secrets shown once."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.db.models import ApiKey, Operator
from service.errors import NotFound, ValidationFailed
from service.ids import new_id
from service.live import notices
from service.usecases.auth import hash_api_key, new_api_key_secret

#: The longest operator name (the column's width).
NAME_MAX = 255


@dataclass(frozen=True)
class IssuedKey:
    """A new API key: its row, and the secret that is never shown again."""

    key: ApiKey
    secret: str


def create_operator(session: Session, name: str, now: datetime) -> tuple[Operator, IssuedKey]:
    """A new operator with its first API key."""
    if not name.strip():
        raise ValidationFailed("An operator needs a name.")
    if len(name.strip()) > NAME_MAX:
        raise ValidationFailed(f"An operator's name has at most {NAME_MAX} characters.")
    operator = Operator(id=new_id("op"), name=name.strip(), created_at=now)
    session.add(operator)
    session.flush()
    issued = _issue(session, operator.id, "initial", now)
    return operator, issued


def create_api_key(session: Session, operator_id: str, label: str, now: datetime) -> IssuedKey:
    if len(label) > NAME_MAX:
        raise ValidationFailed(f"An API key's label has at most {NAME_MAX} characters.")
    return _issue(session, operator_id, label, now)


def _issue(session: Session, operator_id: str, label: str, now: datetime) -> IssuedKey:
    secret = new_api_key_secret()
    key = ApiKey(
        id=new_id("key"),
        operator_id=operator_id,
        key_hash=hash_api_key(secret),
        prefix=secret[:10],
        label=label,
        created_at=now,
        revoked_at=None,
    )
    session.add(key)
    return IssuedKey(key, secret)


def list_api_keys(session: Session, operator_id: str) -> Sequence[ApiKey]:
    """The operator's keys, newest first (revoked ones included, marked)."""
    return session.scalars(
        select(ApiKey).where(ApiKey.operator_id == operator_id).order_by(ApiKey.id.desc())
    ).all()


def revoke_api_key(session: Session, operator_id: str, key_id: str, now: datetime) -> ApiKey:
    """Revoke one key at once; revoking a revoked key changes nothing.

    :raises NotFound: when the key does not exist or belongs to another operator.
    """
    key = session.get(ApiKey, key_id, with_for_update=True)
    if key is None or key.operator_id != operator_id:
        raise NotFound(f"No API key {key_id!r}.")
    if key.revoked_at is None:
        key.revoked_at = now
        notices.changed(session, key.id, 0, kind="auth")  # streams check their callers again
    return key


def list_operators(session: Session) -> Sequence[Operator]:
    """Every operator, oldest first."""
    return session.scalars(select(Operator).order_by(Operator.id)).all()


def get_operator(session: Session, operator_id: str) -> Operator:
    operator = session.get(Operator, operator_id)
    if operator is None:
        raise NotFound(f"No operator {operator_id!r}.")
    return operator
