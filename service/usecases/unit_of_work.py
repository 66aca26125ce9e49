"""The unit of work: one use case, one database transaction.

Use cases never begin, commit or roll back a transaction: they run inside the unit of work
their caller opened, so a request's idempotency claim, the use case and the answer stored for
its key commit together or not at all. Views and tasks call :func:`run` (or, for a request
that carries an ``Idempotency-Key``, :func:`run_once`); a process made of many units (the
timeouts sweep, a webhook delivery around its HTTP call) runs each of them through
:func:`run`. This is the only place a transaction is retried.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import ParamSpec, TypeVar

from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.orm import Session

from service.errors import ServiceError
from service.usecases import idempotency

T = TypeVar("T")
P = ParamSpec("P")

#: How many times a unit of work is run before a "try again" error is raised.
ATTEMPTS = 3
#: PostgreSQL's "try again" errors: a deadlock victim or a serialization failure.
RETRYABLE_SQLSTATES = frozenset({"40P01", "40001"})
#: A unique key taken by a twin that committed first (PostgreSQL; SQLite serialises writers).
UNIQUE_VIOLATION = "23505"


def _run_again(error: OperationalError | IntegrityError) -> bool:
    """Whether the failed (and wholly rolled back) unit is to be run again: a deadlock
    victim, a serialization failure, or a unique key a twin committed first (run again, the
    unit sees the twin's row and answers as a replay or a refusal would)."""
    sqlstate = getattr(error.orig, "sqlstate", None)
    if isinstance(error, IntegrityError):
        return sqlstate == UNIQUE_VIOLATION
    return sqlstate in RETRYABLE_SQLSTATES


def run(session: Session, work: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """``work(*args, **kwargs)`` in one transaction on ``session``, committed when it
    returns and rolled back when it raises; run again (at most :data:`ATTEMPTS` times in
    all) when the database asks for it (:func:`_run_again`)."""
    for attempt in range(ATTEMPTS):
        try:
            with session.begin():
                return work(*args, **kwargs)
        except (OperationalError, IntegrityError) as error:
            if attempt == ATTEMPTS - 1 or not _run_again(error):
                raise
    raise AssertionError("unreachable")  # pragma: no cover


@dataclass(frozen=True)
class IdempotencyClaim:
    """A request's ``Idempotency-Key``: whose it is (the operator's, or one of its players'),
    the request it was sent with (:func:`idempotency.request_hash`) and how long its answer
    is kept."""

    operator_id: str
    player_id: str | None
    key: str
    digest: str
    retention: timedelta


@dataclass(frozen=True)
class Answer:
    """What a request was answered: its status and body (JSON text), as stored for its key."""

    status: int
    body: str
    replayed: bool = False


class _Undo(Exception):
    """Rolls the unit back and answers with ``answer`` instead."""

    def __init__(self, answer: Answer) -> None:
        super().__init__(answer.status)
        self.answer = answer


def run_once(
    session: Session,
    claim: IdempotencyClaim,
    work: Callable[[], Answer],
    refusal: Callable[[ServiceError], Answer],
    clock: Callable[[], datetime],
) -> Answer:
    """``work()`` at most once for ``claim``'s key: the key's claim, the work and its stored
    answer in one unit of work. A key already answered replays that answer
    (``replayed``); an answer of 500 or more is rolled back and stored for nothing.

    Only a decision of the use case is stored (:attr:`ServiceError.decision`, answered by
    ``refusal``): a refusal of the request itself (not found, forbidden, invalid input)
    leaves the key unused, so the corrected request can be sent with it again."""
    scope = {"player_id": claim.player_id}

    def attempt() -> Answer:
        now = clock()
        stored = idempotency.claim(
            session, claim.operator_id, claim.key, claim.digest, now, **scope
        )
        if stored is not None:
            return Answer(stored.status, stored.body, replayed=True)
        answer = work()
        if answer.status >= 500:
            raise _Undo(answer)
        earlier = idempotency.record(
            session,
            claim.operator_id,
            claim.key,
            claim.digest,
            answer.status,
            answer.body,
            now,
            claim.retention,
            **scope,
        )
        if earlier is not None:  # a twin's answer got stored first: it is the key's
            raise _Undo(Answer(earlier.status, earlier.body, replayed=True))
        return answer

    try:
        return run(session, attempt)
    except _Undo as undo:
        return undo.answer
    except ServiceError as error:
        if error.status >= 500 or not error.decision:
            raise  # the key's own refusals among them (in use, reused): nothing stored
        refused = refusal(error)

    def store_refusal() -> Answer:
        # The use case refused: nothing was written. Store the refusal so a retry gets the
        # same answer, under the key's lock taken again, without waiting: a twin that took
        # the key meanwhile is running, and its answer will be the key's (409 meanwhile).
        idempotency.take_again(session, claim.operator_id, claim.key, **scope)
        earlier = idempotency.record(
            session,
            claim.operator_id,
            claim.key,
            claim.digest,
            refused.status,
            refused.body,
            clock(),
            claim.retention,
            **scope,
        )
        return refused if earlier is None else Answer(earlier.status, earlier.body, True)

    return run(session, store_refusal)
