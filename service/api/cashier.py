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
from datetime import timedelta
from typing import Any

from flask import Flask

from service.api.fastpath import Answer, FastPath, WsgiApp, bearer, read_json_body
from service.api.schemas import MovementIn
from service.clock import rfc3339, utcnow
from service.db.driver import fetch_one_autocommit
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


class CashierFastPath(FastPath):
    """Deposits and withdrawals in one database call (see the module docs)."""

    def __init__(self, app: Flask, wsgi_app: WsgiApp) -> None:
        super().__init__(app, wsgi_app)
        self.engine = app.extensions["gin"]["engine"]
        self.schema = MovementIn()
        self.retention_seconds = int(
            timedelta(hours=app.config["IDEMPOTENCY_RETENTION_HOURS"]).total_seconds()
        )

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
        amount = movement["amount"]["amount"]
        currency = movement["amount"]["currency"]
        reference = movement["external_reference"]
        now = utcnow()
        params = (
            kind, key_hash, key,
            idempotency.request_hash("POST", env["PATH_INFO"], payload),
            player_id, currency, amount, reference,
            fingerprint(kind, player_id, currency, amount, reference),
            now, self.retention_seconds, new_id("txn"), [new_id("ent"), new_id("ent")],
            rfc3339(now),
        )
        try:
            outcome, status, text = self._call(params)
        except Exception:  # rolled back: the ordinary path decides (503, retry, replay)
            log.warning("cashier_post failed; answering through the ordinary path",
                        exc_info=True)
            metrics.CASHIER_FAST_PATH.labels("error").inc()
            return None
        metrics.CASHIER_FAST_PATH.labels(outcome).inc()
        if outcome == "fallback":
            return None
        return Answer(status, text.encode(), replayed=outcome == "replay")

    def _call(self, params: tuple[Any, ...]) -> tuple[str, int | None, str]:
        """One autocommit call of ``cashier_post()`` on a pooled connection."""
        row = fetch_one_autocommit(self.engine, CALL, params)
        assert row is not None  # the function always returns its one row
        return row[0], row[1], row[2]


def install(app: Flask) -> None:
    """Put the fast path in front of ``app`` when it runs on PostgreSQL and is not disabled."""
    if app.config.get("CASHIER_FAST_PATH", True) and (
        app.extensions["gin"]["engine"].dialect.name == "postgresql"
    ):
        app.wsgi_app = CashierFastPath(app, app.wsgi_app)  # type: ignore[method-assign]
