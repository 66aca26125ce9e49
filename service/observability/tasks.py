"""Celery signals: the request id travels from a request into the tasks it causes, task logs
and task metrics.

- ``before_task_publish`` (in whatever process publishes: a gunicorn worker, or a task that
  queues another) puts the current request id in the message headers as ``request_id``;
- ``task_prerun`` (in the worker) sets :data:`~service.observability.logs.request_id_var` from
  that header, so every line the task logs carries it, and tasks it publishes pass it on;
- ``task_postrun`` logs one line per task run (name, id, state, duration; at DEBUG when it
  succeeded and returned 0, a beat tick that found nothing to do), observes
  ``gin_task_duration_seconds`` and restores the context; ``task_failure`` counts
  ``gin_task_failures_total``;
- ``setup_logging`` makes Celery's worker and beat log through :mod:`.logs` (``LOG_FORMAT``,
  ``LOG_LEVEL``, else the ``--loglevel`` given) instead of its own format; Celery's own lines
  per task sent, received and succeeded (beat's every second) only at DEBUG, since the line
  above says the same once;
- with ``WORKER_METRICS_PORT`` set, ``worker_ready`` serves the worker's metrics (its pool
  processes' summed through prometheus-client's multiprocess mode) on that port at
  ``/metrics``; :func:`prepare_worker_metrics` makes a fresh ``PROMETHEUS_MULTIPROC_DIR`` when
  none is given (it runs when the Celery app is imported, before ``prometheus_client`` is).
"""

from __future__ import annotations

import logging
import os
import time
from contextvars import Token
from typing import Any

from celery import signals

from service.config import ServerSettings, metrics_dir, use_metrics_dir
from service.observability.logs import configure, current_request_id, request_id_var

HEADER = "request_id"
log = logging.getLogger("gin.tasks")

# task id -> (context token, start time); a prefork child runs one task at a time, a thread
# pool several, each in its own thread (signals fire in the thread running the task).
_running: dict[str, tuple[Token[str | None], float]] = {}


def _before_publish(headers: dict[str, Any] | None = None, **_: Any) -> None:
    if headers is None or headers.get(HEADER):
        return
    request_id = current_request_id()
    if request_id:
        headers[HEADER] = request_id


def _header(task: Any) -> str | None:
    context = getattr(task, "request", None)
    if context is None:
        return None
    value = getattr(context, HEADER, None)
    if value is None:
        value = (getattr(context, "headers", None) or {}).get(HEADER)
    return str(value) if value else None


def _prerun(task_id: str | None = None, task: Any = None, **_: Any) -> None:
    token = request_id_var.set(_header(task))
    if task_id is not None:
        _running[task_id] = (token, time.perf_counter())


def _postrun(
    task_id: str | None = None,
    task: Any = None,
    state: str | None = None,
    retval: Any = None,
    **_: Any,
) -> None:
    started = _running.pop(task_id, None) if task_id is not None else None
    name = getattr(task, "name", "unknown")
    if started is None:
        return
    token, began = started
    elapsed = time.perf_counter() - began
    from service.observability.metrics import TASK_DURATION

    TASK_DURATION.labels(name, state or "UNKNOWN").observe(elapsed)
    level = (
        logging.WARNING
        if state == "FAILURE"
        else logging.DEBUG
        if state == "SUCCESS" and retval == 0  # a tick with nothing done
        else logging.INFO
    )
    log.log(
        level,
        "task %s %s in %.3f s",
        name,
        state,
        elapsed,
        extra={
            "task": name,
            "task_id": task_id,
            "state": state,
            "duration_ms": round(elapsed * 1000, 3),
        },
    )
    try:
        request_id_var.reset(token)
    except ValueError:  # set in another context (should not happen): clear instead
        request_id_var.set(None)


def _failure(sender: Any = None, **_: Any) -> None:
    from service.observability.metrics import TASK_FAILURES

    TASK_FAILURES.labels(getattr(sender, "name", "unknown")).inc()


def _setup_logging(loglevel: Any = None, **_: Any) -> None:
    settings = ServerSettings.from_env()
    level = settings.log_level or loglevel or "INFO"
    if isinstance(level, int):
        level = logging.getLevelName(level)
    configure(settings.log_format, str(level).upper())
    if logging.getLogger().getEffectiveLevel() > logging.DEBUG:
        for chatty in _CELERY_PER_TASK_LOGGERS:
            logging.getLogger(chatty).setLevel(logging.WARNING)


#: Celery's loggers of a line per task sent (beat), received and succeeded: ``_postrun`` logs
#: each run once, so these show only at DEBUG (their warnings and errors always).
_CELERY_PER_TASK_LOGGERS = ("celery.beat", "celery.worker.strategy", "celery.app.trace")


def prepare_worker_metrics() -> None:
    """With ``WORKER_METRICS_PORT`` set and no ``PROMETHEUS_MULTIPROC_DIR``, make a fresh
    folder for this worker's processes (inherited by the pool's children)."""
    if ServerSettings.from_env().worker_metrics_port and not metrics_dir():
        import tempfile

        made = tempfile.mkdtemp(prefix="gin-worker-metrics-")
        use_metrics_dir(made)
        _made_dirs.append(made)


_made_dirs: list[str] = []


def _remove_made_dirs(**_: Any) -> None:
    import shutil

    while _made_dirs:
        shutil.rmtree(_made_dirs.pop(), ignore_errors=True)


def _serve_metrics(**_: Any) -> None:
    settings = ServerSettings.from_env()
    port = settings.worker_metrics_port
    if not port:
        return
    from prometheus_client import REGISTRY, CollectorRegistry, start_http_server

    registry = REGISTRY
    directory = metrics_dir()
    if directory:
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry, path=directory)  # type: ignore[no-untyped-call]
    address = settings.worker_metrics_addr
    start_http_server(port, addr=address, registry=registry)
    log.info("worker metrics at http://%s:%s/metrics", address, port)


def _child_exit(**_: Any) -> None:
    if metrics_dir():
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(os.getpid())  # type: ignore[no-untyped-call]


def connect(*, logging_setup: bool = True) -> None:
    """Connect the signal receivers (idempotent: each has a fixed dispatch uid)."""
    signals.before_task_publish.connect(_before_publish, weak=False, dispatch_uid="gin-rid-pub")
    signals.task_prerun.connect(_prerun, weak=False, dispatch_uid="gin-rid-prerun")
    signals.task_postrun.connect(_postrun, weak=False, dispatch_uid="gin-rid-postrun")
    signals.task_failure.connect(_failure, weak=False, dispatch_uid="gin-task-failure")
    if logging_setup:
        signals.setup_logging.connect(_setup_logging, weak=False, dispatch_uid="gin-logging")
        signals.worker_ready.connect(_serve_metrics, weak=False, dispatch_uid="gin-metrics")
        signals.worker_process_shutdown.connect(
            _child_exit, weak=False, dispatch_uid="gin-metrics-child"
        )
        signals.worker_shutdown.connect(
            _remove_made_dirs, weak=False, dispatch_uid="gin-metrics-cleanup"
        )
