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
retry is answered the same way whichever path served the first request.

Requests that reach a process while its previous call runs go to the database together
(:class:`Batches`, at most ``CASHIER_BATCH`` per call): one call of ``cashier_post_batch()``
(migration 0012) locks every account they may move in id order, then runs ``cashier_post()``
for each in arrival order, in one transaction with one commit. Each is decided as it would be
alone (one that falls back has written nothing; twins in one batch: the second replays the
first's answer), and a batch that fails sends each of its requests to the ordinary path. A
lone request is called alone, and no request waits for a timer: a batch is what gathered while
the previous call ran, so batches form only when requests queue anyway. A process then spends
one connection, one round trip and one commit (one WAL flush) on several deposits.

Requests answered here are counted, logged and rate limited like any other
(:mod:`service.observability`).
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
from service.api.schemas import REFERENCE_LENGTH, MovementIn
from service.clock import rfc3339, utcnow
from service.db.driver import array_literal, fetch_all_autocommit, fetch_one_autocommit
from service.ids import new_id
from service.ledger.money import EXPONENTS, MAX_AMOUNT
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
#: Where ``cashier_post()``'s arguments hold the retention (the same for every request of a
#: batch, passed once) and the two entry ids (flattened over the batch).
RETENTION, ENTRY_IDS = 10, 12

Params = tuple[Any, ...]
Row = tuple[str, int | None, str | None]


class Batches:
    """Calls of ``run`` that arrive while another is running, made as one (see the module
    docs): the first caller runs its own request alone; whoever arrives meanwhile waits, and
    when the running call ends, the first of the waiting callers runs every waiting request (up
    to ``limit``) in one call of ``run_many``. No caller waits for a timer: a batch is what
    gathered while the previous call ran. Each waiting caller is woken once, when its answer is
    there or when its turn to run the next call comes. A failed call fails each of its
    requests."""

    def __init__(self, run_one: Callable[[Params], Row],
                 run_many: Callable[[Sequence[Params]], list[Row]], limit: int) -> None:
        self._run_one = run_one
        self._run_many = run_many
        self._limit = max(1, limit)
        self._lock = threading.Lock()
        self._waiting: list[_Request] = []
        self._running = False

    @property
    def waiting(self) -> int:
        """How many requests wait for the running call to end."""
        with self._lock:
            return len(self._waiting)

    def run(self, params: Params) -> Row:
        """``params``' answer, from a call of its own or of a batch."""
        request = _Request(params)
        with self._lock:
            leads = not self._running
            if leads:
                self._running = True
            else:
                self._waiting.append(request)
        if not leads:
            request.woken.acquire()  # its answer is there, or it runs the next call
        if not request.done:
            self._lead(request)
        if request.error is not None:
            raise request.error
        assert request.row is not None
        return request.row

    def _lead(self, request: _Request) -> None:
        """Runs ``request`` with the requests waiting, hands the next call to the first of
        those that came meanwhile, and wakes every request answered."""
        with self._lock:
            batch = [request, *self._waiting[: self._limit - 1]]
            del self._waiting[: self._limit - 1]
        rows: list[Row] = []
        # What the others get if the call is interrupted (an exception that is not an
        # Exception goes on up this thread, after they are woken).
        error: Exception | None = RuntimeError("the batch's call was interrupted")
        try:
            rows, error = self._call(batch), None
        except Exception as failure:  # every request of the batch fails with it
            error = failure
        finally:
            with self._lock:
                successor = self._waiting.pop(0) if self._waiting else None
                self._running = successor is not None
            for n, each in enumerate(batch):
                each.row = rows[n] if error is None else None
                each.error = error
                each.done = True
                if each is not request:
                    each.woken.release()
            if successor is not None:
                successor.woken.release()

    def _call(self, batch: list[_Request]) -> list[Row]:
        metrics.CASHIER_BATCH_SIZE.observe(len(batch))
        if len(batch) == 1:
            return [self._run_one(batch[0].params)]
        rows = self._run_many([each.params for each in batch])
        if len(rows) != len(batch):
            raise RuntimeError(f"{len(rows)} answers for {len(batch)} requests")
        return rows


class _Request:
    __slots__ = ("done", "error", "params", "row", "woken")

    def __init__(self, params: Params) -> None:
        self.params = params
        self.row: Row | None = None
        self.error: Exception | None = None
        self.done = False
        self.woken = threading.Lock()  # held until the request is woken (released once)
        self.woken.acquire()


def plain_movement(payload: Any) -> dict[str, Any] | None:
    """``payload`` as :class:`MovementIn` loads it, when it is the plain form (an amount in
    minor units and a supported currency, perhaps a reference, nothing else); ``None`` for
    anything else, which the schema itself then decides. What this takes the schema takes
    too, to the same value (``tests/unit/test_cashier_plain_movement.py``): it only skips the
    schema's machinery for the body nearly every request sends."""
    if type(payload) is not dict or not payload.keys() <= {"amount", "external_reference"}:
        return None
    money = payload.get("amount")
    if type(money) is not dict or money.keys() != {"amount", "currency"}:
        return None
    amount, currency = money["amount"], money["currency"]
    reference = payload.get("external_reference")
    if (
        type(amount) is not int or not 1 <= amount <= MAX_AMOUNT
        or type(currency) is not str or currency not in EXPONENTS
        or not (reference is None
                or (type(reference) is str and 1 <= len(reference) <= REFERENCE_LENGTH))
    ):
        return None
    return {"amount": {"amount": amount, "currency": currency}, "external_reference": reference}


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
            movement = plain_movement(payload) or self.schema.load(payload)
        except Exception:  # a missing key, bad JSON, a schema error...: Flask's to answer
            metrics.labelled(metrics.CASHIER_FAST_PATH, "declined").inc()
            return None
        key_hash = hash_api_key(credential)
        if not self.within_limit(env, ratelimit.operator_key(key_hash)):
            metrics.labelled(metrics.CASHIER_FAST_PATH, "declined").inc()
            return None  # Flask answers the 429
        params = call_params(kind, key_hash, key, env["PATH_INFO"], payload, player_id,
                             movement, self.retention_seconds)
        try:
            outcome, status, text = self.batches.run(params)
        except Exception:  # rolled back: the ordinary path decides (503, retry, replay)
            log.warning("cashier_post failed; answering through the ordinary path",
                        exc_info=True)
            metrics.labelled(metrics.CASHIER_FAST_PATH, "error").inc()
            return None
        metrics.labelled(metrics.CASHIER_FAST_PATH, outcome).inc()
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
        as an array over the requests (the entry ids flattened), written as the array's text
        (:func:`array_literal`), the retention once."""
        columns: list[Sequence[Any]] = list(zip(*batch, strict=True))
        columns[ENTRY_IDS] = [entry for ids in columns[ENTRY_IDS] for entry in ids]
        arguments: list[Any] = [array_literal(column) for column in columns]
        arguments[RETENTION] = batch[0][RETENTION]
        return [(row[0], row[1], row[2])
                for row in fetch_all_autocommit(self.engine, BATCH_CALL, arguments)]


def install(app: Flask) -> None:
    """Put the fast path in front of ``app`` when it runs on PostgreSQL and is not disabled."""
    if app.config.get("CASHIER_FAST_PATH", True) and (
        app.extensions["gin"]["engine"].dialect.name == "postgresql"
    ):
        app.wsgi_app = CashierFastPath(app, app.wsgi_app)  # type: ignore[method-assign]
