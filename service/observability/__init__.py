"""Operations: metrics, structured logs with request ids, rate limits.

Everything hooks in from the outside: the app factory calls :func:`init_app`, which registers
``before_request``/``after_request``/``teardown_request`` hooks (keyed on ``request.endpoint``
and the URL rule, never on a view's code), and the Celery app connects the task signals of
:mod:`service.observability.tasks`. Nothing here is imported by the pure core.

- :mod:`.logs`: one JSON object per line (``LOG_FORMAT=json``) or readable text, each line with
  the request id of the request or task it belongs to;
- :mod:`.metrics`: Prometheus metrics, per process or aggregated across gunicorn workers
  (``PROMETHEUS_MULTIPROC_DIR``), plus figures read from the database at scrape time;
- :mod:`.ratelimit`: fixed-window limits (the ``limits`` library) keyed on the caller's
  credential, 429 problems;
- :mod:`.tasks`: the request id carried into Celery tasks, task logs and task metrics.
"""

from __future__ import annotations

from flask import Flask


def init_app(app: Flask) -> None:
    """Register the observability hooks and the rate limiter. Called before the API's own
    hooks are registered, so the timer starts and the limit is checked before authentication
    touches the database."""
    from service.observability import metrics, ratelimit

    metrics.register(app)
    ratelimit.register(app)
