"""Deposits and withdrawals in one database round trip, on PostgreSQL.

The ordinary path of ``POST /v1/players/{id}/deposits`` (and ``/withdrawals``) costs about
twelve round trips and the whole Flask, webargs and SQLAlchemy stack; cashiers call it more
than anything else. This WSGI middleware answers the common case with one call of the
``cashier_post()`` database function (migration 0006), which authenticates the key, honours
the ``Idempotency-Key`` and posts the movement in one transaction. Anything else is handed,
untouched, to the Flask application, which owns every refusal and every uncommon case:

- here, before the database: a body, header or path the request schema would not take as it
  is (the same :class:`MovementIn` schema decides), a credential that is not an API key, a
  caller over its rate limit;
- in the database, which then writes nothing: an unknown or revoked key, a key whose twin is
  still running or whose stored answer is not a plain replay, an unknown player, a
  self-excluded player or one with deposit limits (deposits), a player with a display
  currency, accounts that do not exist yet (a first deposit), too little money, a ledger key
  already used;
- a database error (the function's transaction rolled back; if the connection died after the
  commit, the ordinary path finds the stored answer and replays it).

Both paths take the same advisory lock for a key and store answers in the same table, so a
retry is answered the same way whichever path served the first request. Requests answered
here are counted, logged and rate limited like any other (:mod:`service.observability`).
``CASHIER_FAST_PATH=false`` turns it off; on SQLite it is never installed.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

from flask import Flask

from service.api.fastpath import Answer, FastPath, WsgiApp, bearer, read_json_body
from service.api.schemas import MovementIn
from service.clock import rfc3339, utcnow
from service.db.driver import fetch_all_autocommit, fetch_one_autocommit
from service.ids import new_id
from service.ledger.store import fingerprint
from service.observability import metrics, ratelimit
from service.usecases import idempotency
from service.usecases.auth import API_KEY_PREFIX, hash_api_key

log = logging.getLogger(__name__)

ROUTE = re.compile(r"/v1/players/([A-Za-z0-9_-]{1,64})/(deposits|withdrawals)")
RULES = {kind: f"/v1/players/<player_id>/{kind}" for kind in ("deposits", "withdrawals")}
KINDS = {"deposits": "deposit", "withdrawals": "withdrawal"}
CALL = (
    "SELECT outcome, status, body FROM cashier_post(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s,"
    " %s, %s, %s, %s)"
)
BATCH_CALL = (
    "SELECT outcome, status, body FROM cashier_post_batch(%s::text[], %s::text[], %s::text[],"
    " %s::text[], %s::text[], %s::text[], %s::bigint[], %s::text[], %s::text[],"
    " %s::timestamptz[], %s, %s::text[], %s::text[], %s::text[])"
)
#: The arguments of ``cashier_post()`` that are the same for every request of a batch.
SHARED = 10  # p_retention_seconds

Params = tuple[Any, ...]
Row = tuple[str, int | None, str | None]


class Batches:
    """Calls of ``run`` that arrive while another is running, made as one (see the module
    docs): the first caller runs its own request alone; whoever arrives meanwhile waits, and
    when the running call ends, one of the waiting callers runs every waiting request (up to
    ``limit``) in one call of ``run_many``. No caller waits for a timer: a batch is what
    gathered while the previous one ran. A failed call fails each of its requests."""

    def __init__(self, run_one: Callable[[Params], Row],
                 run_many: Callable[[Sequence[Params]], list[Row]], limit: int) -> None:
        self._run_one = run_one
        self._run_many = run_many
        self._limit = max(1, limit)
        self._changed = threading.Condition()
        self._waiting: list[_Request] = []
        self._running = False

    @property
    def waiting(self) -> int:
        """How many requests wait for the running call to end."""
        with self._changed:
            return len(self._waiting)

    def run(self, params: Params) -> Row:
        """``params``' answer, from a call of its own or of a batch."""
        request = _Request(params)
        with self._changed:
            self._waiting.append(request)
            while self._running and not request.done:
                self._changed.wait()
            if not request.done:  # nothing running: this caller runs what is waiting
                self._running = True
                self._waiting.remove(request)
                batch = [request, *self._waiting[: self._limit - 1]]
                del self._waiting[: self._limit - 1]
        if not request.done:
            metrics.CASHIER_BATCH_SIZE.observe(len(batch))
            try:
                if len(batch) == 1:
                    rows = [self._run_one(request.params)]
                else:
                    rows = self._run_many([r.params for r in batch])
                    if len(rows) != len(batch):
                        raise RuntimeError(f"{len(rows)} answers for {len(batch)} requests")
                error = None
            except Exception as failure:  # every request of the batch fails with it
                rows, error = [], failure
            with self._changed:
                for n, each in enumerate(batch):
                    each.row = rows[n] if error is None else None
                    each.error = error
                    each.done = True
                self._running = False
                self._changed.notify_all()
        if request.error is not None:
            raise request.error
        assert request.row is not None
        return request.row


class _Request:
    __slots__ = ("params", "row", "error", "done")

    def __init__(self, params: Params) -> None:
        self.params = params
        self.row: Row | None = None
        self.error: Exception | None = None
        self.done = False


def call_params(kind: str, key_hash: str, key: str, path: str, payload: Any, player_id: str,
                movement: dict[str, Any], retention_seconds: int) -> Params:
    """``cashier_post()``'s arguments for a request: ``payload`` is its JSON body, ``movement``
    the body as :class:`MovementIn` loaded it."""
    amount = movement["amount"]["amount"]
    currency = movement["amount"]["currency"]
    reference = movement["external_reference"]
    now = utcnow()
    return (
        kind, key_hash, key, idempotency.request_hash("POST", path, payload),
        player_id, currency, amount, reference,
        fingerprint(kind, player_id, currency, amount, reference),
        now, retention_seconds, new_id("txn"), [new_id("ent"), new_id("ent")], rfc3339(now),
    )


class CashierFastPath(FastPath):
    """Deposits and withdrawals in one database call (see the module docs)."""

    def __init__(self, app: Flask, wsgi_app: WsgiApp) -> None:
        super().__init__(app, wsgi_app)
        self.engine = app.extensions["gin"]["engine"]
        self.schema = MovementIn()
        self.retention_seconds = int(
            timedelta(hours=app.config["IDEMPOTENCY_RETENTION_HOURS"]).total_seconds()
        )
        self.batches = Batches(self._call, self._call_many, app.config["CASHIER_BATCH"])

    def route(self, env: dict[str, Any]) -> tuple[str, re.Match[str]] | None:
        found = ROUTE.fullmatch(env.get("PATH_INFO", ""))
        if found is None or env.get("REQUEST_METHOD") != "POST":
            return None
        return RULES[found.group(2)], found

    def answer(self, env: dict[str, Any], found: re.Match[str]) -> Answer | None:
        player_id, kind = found.group(1), KINDS[found.group(2)]
        body = read_json_body(env)
        credential = bearer(env)
        try:
            if (
                body is None
                or env.get("QUERY_STRING")
                or credential is None
                or not credential.startswith(API_KEY_PREFIX)
            ):
                raise ValueError("not a plain request")
            key = idempotency.check_key(env.get("HTTP_IDEMPOTENCY_KEY"))
            payload = json.loads(body)
            movement = self.schema.load(payload)
        except Exception:  # a missing key, bad JSON, a schema error...: Flask's to answer
            metrics.CASHIER_FAST_PATH.labels("declined").inc()
            return None
        key_hash = hash_api_key(credential)
        if not self.within_limit(env, ratelimit.operator_key(key_hash)):
            metrics.CASHIER_FAST_PATH.labels("declined").inc()
            return None  # Flask answers the 429
        params = call_params(kind, key_hash, key, env["PATH_INFO"], payload, player_id,
                             movement, self.retention_seconds)
        try:
            outcome, status, text = self.batches.run(params)
        except Exception:  # rolled back: the ordinary path decides (503, retry, replay)
            log.warning("cashier_post failed; answering through the ordinary path",
                        exc_info=True)
            metrics.CASHIER_FAST_PATH.labels("error").inc()
            return None
        metrics.CASHIER_FAST_PATH.labels(outcome).inc()
        if outcome == "fallback":
            return None
        return Answer(status, text.encode(), replayed=outcome == "replay")

    def _call(self, params: Params) -> Row:
        """One autocommit call of ``cashier_post()`` on a pooled connection."""
        row = fetch_one_autocommit(self.engine, CALL, params)
        assert row is not None  # the function always returns its one row
        return row[0], row[1], row[2]

    def _call_many(self, batch: Sequence[Params]) -> list[Row]:
        """One autocommit call of ``cashier_post_batch()``: each argument of ``cashier_post()``
        as an array over the requests (the entry ids flattened), the retention once."""
        columns = list(zip(*batch, strict=True))
        columns[12] = [entry for ids in columns[12] for entry in ids]
        arguments = [list(column) for column in columns]
        arguments[SHARED] = batch[0][SHARED]
        return [(row[0], row[1], row[2])
                for row in fetch_all_autocommit(self.engine, BATCH_CALL, arguments)]


def install(app: Flask) -> None:
    """Put the fast path in front of ``app`` when it runs on PostgreSQL and is not disabled."""
    if app.config.get("CASHIER_FAST_PATH", True) and (
        app.extensions["gin"]["engine"].dialect.name == "postgresql"
    ):
        app.wsgi_app = CashierFastPath(app, app.wsgi_app)  # type: ignore[method-assign]
