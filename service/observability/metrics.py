"""Prometheus metrics: request latency, actions applied, task figures, and the database's own
figures (matches, outbox backlog, settlement backlog, webhook deliveries, ledger totals) read
at scrape time.

Process metrics live in prometheus-client's default registry. With ``PROMETHEUS_MULTIPROC_DIR``
set (``deploy/gunicorn.conf.py`` sets a fresh one per server start) every process writes its
samples to files there and ``GET /metrics`` sums them, so the figures are the same whichever
gunicorn worker answers the scrape. The variable must be set before ``prometheus_client`` is
first imported in a process; gunicorn's config file runs before the app is imported.

The database figures are a handful of aggregate queries, cached for
``METRICS_DB_CACHE_SECONDS`` per process, each bounded by a statement timeout on PostgreSQL;
if the database does not answer, ``gin_metrics_database_up`` is 0 and the rest is left out.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

from flask import Flask, Response, g, request
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from sqlalchemy import text
from sqlalchemy.engine import Engine

from service import config, live
from service.games import registry

log = logging.getLogger("gin.request")

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
ACTION_ENDPOINT = "matches.act"
#: The action labels: every game's actions (anything else counts as OTHER).
ACTIONS = frozenset(registry.ACTIONS)
UNMATCHED = "<unmatched>"
#: Paths whose requests are not logged at INFO (probes and scrapes would drown the log).
QUIET_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})

REQUEST_LATENCY = Histogram(
    "gin_http_request_duration_seconds",
    "HTTP request latency by route (the URL rule, not the raw path), method and status.",
    ["route", "method", "status"],
    buckets=LATENCY_BUCKETS,
)
IN_PROGRESS = Gauge(
    "gin_http_requests_in_progress",
    "HTTP requests being answered, by route.",
    ["route"],
    multiprocess_mode="livesum",
)
ACTIONS_APPLIED = Counter(
    "gin_actions_applied",
    "Match actions applied (successful POST /v1/matches/{id}/actions, replays excluded).",
    ["action"],
)
MATCH_STATE_READS = Counter(
    "gin_match_state_reads",
    "Reads of a started match's row for a view or an action, by whether this process held "
    "the row's state decoded (kept: the database left it out) or fetched it (fetched). "
    "Requests of one match that come back to the same process keep it.",
    ["state"],
)
WALLET_CALLS = Counter(
    "gin_wallet_calls",
    "Calls to seamless operators' wallets, by kind (debit, credit, rollback) and verdict "
    "(ok, declined, ambiguous).",
    ["kind", "verdict"],
)
WALLET_ESCALATIONS = Counter(
    "gin_wallet_escalations",
    "Wallet calls raised to operations after the retry ceiling (still retried; listed by "
    "GET /v1/wallet-calls?escalated=true), by kind.",
    ["kind"],
)
TASK_DURATION = Histogram(
    "gin_task_duration_seconds",
    "Celery task run time by task name and final state (settlement latency is "
    'task="settlement.settle_match").',
    ["task", "state"],
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0),
)
TASK_FAILURES = Counter(
    "gin_task_failures",
    "Celery task runs that raised, by task name (retries included).",
    ["task"],
)


def multiprocess_dir() -> str | None:
    return config.metrics_dir()


@functools.lru_cache(maxsize=4096)
def labelled(metric: Any, *values: str) -> Any:
    """``metric.labels(*values)``, looked up once per metric and values: prometheus-client
    checks and joins the values and takes a lock on every ``labels`` call, several times per
    request. Label values are routes, methods, statuses and outcomes, a few
    hundred at most; no metric here ever has a child removed."""
    return metric.labels(*values)


def route_label() -> str:
    rule = request.url_rule
    return rule.rule if rule is not None else UNMATCHED


# --- request hooks --------------------------------------------------------------------------


def _start() -> None:
    g.obs_started = time.perf_counter()
    g.obs_route = route_label()
    if not live.resumed(request.environ):  # a parked long-poll is in progress all along
        labelled(IN_PROGRESS, g.obs_route).inc()


def _finish(response: Response) -> Response:
    started = g.get("obs_started")
    if started is None or live.internal(request.environ):
        return response  # a long-poll parked (counted when it answers), a stream's events
    method = request.method if request.method in METHODS else "OTHER"
    status = response.status_code
    if (
        request.endpoint == ACTION_ENDPOINT
        and status == 200
        and response.headers.get("Idempotent-Replayed") != "true"
    ):
        body = request.get_json(silent=True)
        count_action(body.get("action") if isinstance(body, dict) else None)
    observe(
        g.obs_route,
        method,
        request.path,
        status,
        time.perf_counter() - started,
        request.remote_addr,
        g.get("request_id"),
    )
    return response


def count_action(action: Any) -> None:
    """One match action applied (its name as the request sent it)."""
    labelled(ACTIONS_APPLIED, action if action in ACTIONS else "OTHER").inc()


def count_state_read(kept: bool) -> None:
    labelled(MATCH_STATE_READS, "kept" if kept else "fetched").inc()


def observe(
    route: str,
    method: str,
    path: str,
    status: int,
    elapsed: float,
    remote_addr: str | None,
    request_id: str | None,
) -> None:
    """Count and log one answered request."""
    labelled(REQUEST_LATENCY, route, method, str(status)).observe(elapsed)
    level = logging.INFO if path not in QUIET_PATHS or status >= 400 else logging.DEBUG
    if log.isEnabledFor(level):
        log.log(
            level,
            "%s %s %s",
            method,
            path,
            status,
            extra={
                "method": method,
                "route": route,
                "path": path,
                "status": status,
                "duration_ms": round(elapsed * 1000, 3),
                "remote_addr": remote_addr,
                "request_id": request_id,
            },
        )


def _done(_exc: BaseException | None) -> None:
    route = g.pop("obs_route", None)
    if isinstance(request.environ.get(live.TICKET), live.Wait):
        return  # parked: still in progress until it answers (the waiting room always wakes it)
    if route is not None:
        labelled(IN_PROGRESS, route).dec()


def register(app: Flask) -> None:
    """Time every request; the hooks are registered before the API's own, so the timer
    starts before authentication and the response is measured after every other hook ran
    (Flask runs ``after_request`` functions in reverse order of registration)."""
    app.before_request(_start)
    app.after_request(_finish)
    app.teardown_request(_done)
    ttl = float(app.config.get("METRICS_DB_CACHE_SECONDS", 10))
    app.extensions["gin_metrics"] = DatabaseCollector(lambda: app.extensions["gin"]["engine"], ttl)


# --- exposition -----------------------------------------------------------------------------


def exposition(app: Flask) -> tuple[bytes, str]:
    """The text exposition of every metric: this process's (or, in multiprocess mode, every
    process's, summed) and the database's."""
    directory = multiprocess_dir()
    if directory:
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry, path=directory)  # type: ignore[no-untyped-call]
        body = generate_latest(registry)
    else:
        body = generate_latest(REGISTRY)
    database = CollectorRegistry()
    database.register(app.extensions["gin_metrics"])
    return body + generate_latest(database), CONTENT_TYPE_LATEST


# --- database figures at scrape time --------------------------------------------------------

# Each query is an aggregate over an indexed column or a small table; a statement timeout
# bounds them on PostgreSQL.
QUERIES = {
    "matches": text(
        "SELECT status, COUNT(*), COUNT(started_at), COUNT(finished_at) FROM matches "
        "GROUP BY status"
    ),
    "outbox": text("SELECT COUNT(*), MIN(created_at) FROM events WHERE published_at IS NULL"),
    "unsettled": text(
        "SELECT COUNT(*), MIN(m.finished_at) FROM matches m "
        "LEFT JOIN settlements s ON s.match_id = m.id "
        "WHERE m.status IN ('finished', 'void') AND s.id IS NULL"
    ),
    "settlements": text("SELECT COUNT(*) FROM settlements"),
    "webhooks": text(
        "SELECT status, COUNT(*), COUNT(last_error) FROM webhook_deliveries GROUP BY status"
    ),
    "ledger": text(
        "SELECT currency, kind, SUM(balance), COUNT(*) FROM ledger_accounts GROUP BY currency, kind"
    ),
}
STATEMENT_TIMEOUT_MS = 2000


def _age_seconds(oldest: Any, now: float) -> float:
    if oldest is None:
        return 0.0
    if isinstance(oldest, str):  # SQLite hands back the stored text
        from datetime import UTC, datetime

        parsed = datetime.fromisoformat(oldest.replace("Z", "+00:00"))
        oldest = parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    if oldest.tzinfo is None:
        from datetime import UTC

        oldest = oldest.replace(tzinfo=UTC)
    age: float = now - oldest.timestamp()
    return max(0.0, age)


class DatabaseCollector:
    """Figures that live in the database, read at scrape time and cached ``ttl`` seconds."""

    def __init__(self, engine: Any, ttl: float) -> None:
        self._engine = engine
        self._ttl = ttl
        self._lock = threading.Lock()
        self._cached: list[Metric] = []
        self._cached_at = float("-inf")

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            if time.monotonic() - self._cached_at >= self._ttl:
                self._cached = self._read()
                self._cached_at = time.monotonic()
            return iter(list(self._cached))

    def _read(self) -> list[Metric]:
        engine: Engine = self._engine()
        up = GaugeMetricFamily(
            "gin_metrics_database_up", "1 if the scrape-time database queries answered."
        )
        try:
            rows = self._query(engine)
        except Exception as exc:
            logging.getLogger(__name__).warning("metrics: database figures unavailable: %s", exc)
            up.add_metric([], 0)
            return [up]
        up.add_metric([], 1)
        return [up, *self._families(rows, time.time())]

    @staticmethod
    def _query(engine: Engine) -> dict[str, list[Any]]:
        with engine.connect() as connection, connection.begin():
            if engine.dialect.name == "postgresql":
                connection.execute(text(f"SET LOCAL statement_timeout = {STATEMENT_TIMEOUT_MS}"))
            return {name: list(connection.execute(query)) for name, query in QUERIES.items()}

    @staticmethod
    def _families(rows: dict[str, list[Any]], now: float) -> list[Metric]:
        matches = GaugeMetricFamily("gin_matches", "Matches by status.", labels=["status"])
        started = CounterMetricFamily("gin_matches_started", "Matches that have started.")
        finished = CounterMetricFamily(
            "gin_matches_finished", "Matches that have finished (or were void)."
        )
        started_total = finished_total = 0
        for status, count, with_start, with_finish in rows["matches"]:
            matches.add_metric([status], count)
            started_total += with_start
            finished_total += with_finish
        started.add_metric([], started_total)
        finished.add_metric([], finished_total)

        ((backlog, oldest),) = rows["outbox"]
        outbox = GaugeMetricFamily(
            "gin_outbox_backlog", "Outbox events not yet handed to the broker."
        )
        outbox.add_metric([], backlog)
        outbox_age = GaugeMetricFamily(
            "gin_outbox_oldest_age_seconds", "Age of the oldest unpublished outbox event."
        )
        outbox_age.add_metric([], _age_seconds(oldest, now))

        ((unsettled_count, oldest_finish),) = rows["unsettled"]
        unsettled = GaugeMetricFamily(
            "gin_settlement_backlog", "Finished matches without a settlement yet."
        )
        unsettled.add_metric([], unsettled_count)
        lag = GaugeMetricFamily(
            "gin_settlement_lag_seconds",
            "How long the longest-waiting finished match has waited for its settlement.",
        )
        lag.add_metric([], _age_seconds(oldest_finish, now))
        ((settled_count,),) = rows["settlements"]
        settled = CounterMetricFamily("gin_settlements", "Settlements written.")
        settled.add_metric([], settled_count)

        deliveries = GaugeMetricFamily(
            "gin_webhook_deliveries", "Webhook deliveries by status.", labels=["status"]
        )
        erring = GaugeMetricFamily(
            "gin_webhook_deliveries_with_errors",
            "Webhook deliveries whose last attempt failed, by status (pending ones are "
            "retrying; failed ones gave up).",
            labels=["status"],
        )
        for status, count, with_error in rows["webhooks"]:
            deliveries.add_metric([status], count)
            erring.add_metric([status], with_error)

        totals = GaugeMetricFamily(
            "gin_ledger_balance_minor_units",
            "Sum of ledger account balances in minor units, by currency and account kind "
            "(all kinds of one currency sum to zero).",
            labels=["currency", "kind"],
        )
        accounts = GaugeMetricFamily(
            "gin_ledger_accounts",
            "Ledger accounts by currency and kind.",
            labels=["currency", "kind"],
        )
        for currency, kind, balance, count in rows["ledger"]:
            totals.add_metric([currency, kind], int(balance or 0))
            accounts.add_metric([currency, kind], count)
        return [
            matches,
            started,
            finished,
            outbox,
            outbox_age,
            unsettled,
            lag,
            settled,
            deliveries,
            erring,
            totals,
            accounts,
        ]
