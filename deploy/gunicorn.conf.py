"""gunicorn configuration for production (``gunicorn -c deploy/gunicorn.conf.py service.wsgi:app``).

- Workers: ``WEB_CONCURRENCY`` (default CPUs + 1), threaded (gthread, ``GUNICORN_THREADS``
  per worker, default 8). A match view may long-poll for up to 30 s, and an event stream
  lasts as long as its client: neither holds a thread (nor a database connection) while it
  waits, the worker's waiting room holds its connection (``service.gunicorn_worker``,
  ``service.live``), up to ``GUNICORN_WORKER_CONNECTIONS`` per worker.
- Preloaded: the application is imported once, in the master (``GUNICORN_PRELOAD``, on by
  default), and each worker is a fork of it: a worker starts (or is recycled, below) in
  milliseconds instead of importing Flask, the API and its OpenAPI document itself, which
  under load took that CPU from the workers serving requests. Nothing connects at import
  (``service.create_app``); each worker still empties its inherited connection pool after
  the fork (``post_fork``), so no database connection is ever shared between processes.
  Importing ``service.wsgi`` also readies task publishing (Celery imported and set up, no
  broker connection: ``worker.celery_app.prepare_publishing``), which a worker otherwise
  paid for on its first finished match. New code needs a new master (a deploy restarts the
  container; a SIGHUP reloads the configuration only). The master moves what it imported
  out of the garbage collector's reach before each fork (``gc.freeze``): a worker's full
  collection otherwise walked all of it every time, with none of its threads running
  meanwhile. The figures behind these choices are in docs/performance.md.
- Balanced: a keep-alive connection stays with the worker that accepted it, and each worker's
  threads share one interpreter lock, so clients on a crowded worker wait longer than those
  alone on theirs. A worker holding more than its fair share of the connections (the total
  over the live workers, rounded up) answers its next request with ``Connection: close``,
  and the client reconnects to a less busy worker (``service.connection_share``;
  ``GUNICORN_BALANCE=0`` turns it off).
- Graceful: on SIGTERM the master stops accepting, in-flight requests get
  ``GUNICORN_GRACEFUL_TIMEOUT`` seconds (default 35: longer than the longest long-poll) to
  finish, then the process exits 0. ``GUNICORN_TIMEOUT`` (60) restarts a stuck worker;
  ``GUNICORN_MAX_REQUESTS`` (10000, with jitter) recycles workers so that slow leaks never
  accumulate, one worker at a time.
- Metrics: prometheus-client's multiprocess mode. A fresh ``PROMETHEUS_MULTIPROC_DIR`` is made
  for every server start (a new folder, inside the one given if the variable is set), workers
  inherit it, a dead worker's live gauges are dropped (``child_exit``) and the folder is
  removed when the server stops. ``GET /metrics`` then sums every worker's samples.
- Limits: gunicorn refuses a request line longer than 8190 bytes (its maximum,
  ``limit_request_line``), and header fields beyond twice the service's own limits
  (``limit_request_fields``, ``limit_request_field_size``); within them the application
  reads the request and refuses what is longer than it reads (a path and query over
  ``MAX_REQUEST_TARGET_BYTES``, more or longer header fields than ``MAX_HEADER_FIELDS`` /
  ``MAX_HEADER_FIELD_BYTES``, a body over ``MAX_CONTENT_LENGTH``) as problems (414, 431,
  413). The worker (``gthread``: ``service.gunicorn_worker.Worker``) answers gunicorn's own
  refusals as problems too, and reads a refused body before it closes the connection, so
  that a client that sends its whole body before reading gets its 413. docs/deploy.md,
  "Request limits", lists which answers are whose.
- Logs: one line per record on stdout, JSON with ``LOG_FORMAT=json`` (see
  ``service.observability.logs``), at ``LOG_LEVEL``. The application logs one line per request
  (method, route, status, duration, request id); gunicorn's own access log (same format, with
  the request id from the ``X-Request-Id`` response header) is off unless
  ``GUNICORN_ACCESS_LOG=1``. ``--log-level`` on the command line overrides ``LOG_LEVEL``.
"""

import gc
import logging
import multiprocessing
import shutil
import sys
import tempfile
from pathlib import Path

# This file may be loaded from anywhere (-c path): make the project importable for the log
# formatter class named below.
_ROOT = str(Path(__file__).resolve().parents[1])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from gunicorn.glogging import Logger  # noqa: E402

from service import connection_share  # noqa: E402
from service.config import (  # noqa: E402
    MAX_HEADER_FIELD_BYTES,
    MAX_HEADER_FIELDS,
    ServerSettings,
    metrics_dir,
    use_metrics_dir,
    web_ready_dir,
)
from service.observability.logs import dict_config  # noqa: E402

_settings = ServerSettings.from_env()
bind = _settings.bind or "0.0.0.0:8000"
workers = _settings.web_concurrency or multiprocessing.cpu_count() + 1
# "gthread" is gunicorn's threaded worker as the service extends it: its own refusals are
# problems, and a refused body is read before the connection closes (service.gunicorn_worker).
worker_class = (
    "service.gunicorn_worker.Worker"
    if _settings.worker_class == "gthread"
    else _settings.worker_class
)
threads = _settings.threads
# Waiting long-polls and event streams are held by the worker's waiting room, each one
# connection of the worker's (service.gunicorn_worker): far more than gunicorn's default 1000.
worker_connections = _settings.worker_connections
timeout = _settings.timeout
graceful_timeout = _settings.graceful_timeout
keepalive = _settings.keepalive
preload_app = _settings.preload
max_requests = _settings.max_requests
max_requests_jitter = (
    _settings.max_requests_jitter
    if _settings.max_requests_jitter is not None
    else max(1, max_requests // 10)
)
forwarded_allow_ips = _settings.forwarded_allow_ips
# Beyond the application's limits, so that the application answers (problem+json) wherever
# gunicorn lets it: gunicorn's request line cannot be longer than 8190 bytes (the
# application's limit on a path and query, MAX_REQUEST_TARGET_BYTES, is 4096).
limit_request_line = 8190
limit_request_fields = 2 * MAX_HEADER_FIELDS
limit_request_field_size = 2 * MAX_HEADER_FIELD_BYTES
_balance = connection_share.ConnectionTable() if _settings.balance else None

_log_level = _settings.log_level or "INFO"
loglevel = _log_level.lower()
logconfig_dict = dict_config(_settings.log_format, _log_level, _settings.access_log)
access_log_format = '%(h)s "%(r)s" %(s)s %(b)s %(L)s %({x-request-id}o)s'


class QuietAccessLogger(Logger):
    """gunicorn's logger, but a disabled access log costs nothing: gunicorn itself formats
    every request's access line whenever a logging config is given, even when the
    ``gunicorn.access`` logger then drops it (its cost is in docs/performance.md)."""

    def access(self, resp, req, environ, request_time):  # type: ignore[no-untyped-def]
        if self.access_log.isEnabledFor(logging.INFO):
            super().access(resp, req, environ, request_time)


logger_class = QuietAccessLogger

# --- prometheus multiprocess mode: one fresh folder per server start -------------------------

_parent = metrics_dir()
if _parent:
    Path(_parent).mkdir(parents=True, exist_ok=True)
_metrics_dir = tempfile.mkdtemp(prefix="gin-metrics-", dir=_parent)
use_metrics_dir(_metrics_dir)


def on_starting(server):  # type: ignore[no-untyped-def]
    # --log-level on the command line (benchmarks pass "warning") applies to the application's
    # lines too, not only gunicorn's.
    import logging

    level = server.cfg.loglevel.upper()
    logging.getLogger().setLevel(level)
    logging.getLogger("gunicorn.error").setLevel(level)


def when_ready(server):  # type: ignore[no-untyped-def]
    gc.collect()  # what importing left behind, before the rest is frozen


def pre_fork(server, worker):  # type: ignore[no-untyped-def]
    if _balance is not None:
        connection_share.assign(_balance, worker)
    # Everything the master holds (the preloaded application above all) is long-lived: out of
    # the collector's generations, a worker's collections never walk it again (nor write to
    # its pages, which stay shared with the master).
    gc.freeze()


def post_fork(server, worker):  # type: ignore[no-untyped-def]
    if server.cfg.preload_app:
        # The pool built in the master is empty (nothing connects at import); drop it anyway
        # rather than ever share a connection across fork (SQLAlchemy's advice for pools).
        server.app.wsgi().extensions["gin"]["engine"].dispose(close=False)


def post_worker_init(worker):  # type: ignore[no-untyped-def]
    folder = web_ready_dir()
    if folder is not None:  # gin-service run: this worker has booted
        (Path(folder) / str(worker.pid)).touch()


def pre_request(worker, req):  # type: ignore[no-untyped-def]
    if _balance is not None:
        connection_share.before_request(worker, req)


def child_exit(server, worker):  # type: ignore[no-untyped-def]
    if _balance is not None:
        connection_share.retire(_balance, worker)
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid, _metrics_dir)


def on_exit(server):  # type: ignore[no-untyped-def]
    shutil.rmtree(_metrics_dir, ignore_errors=True)
