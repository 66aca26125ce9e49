"""Structured logs: one JSON object per line, each carrying the request id it belongs to.

``LOG_FORMAT=json`` writes ``{"time", "level", "logger", "message", "request_id", ...}`` per
line (plus ``method``/``route``/``status``/``duration_ms`` on request lines, ``task``/
``task_id`` in Celery tasks, ``exception`` with a traceback); ``LOG_FORMAT=text`` (the local
default) writes the same facts readably. ``LOG_LEVEL`` sets the root level.

The request id comes from :data:`request_id_var` (set while a Celery task runs, from the id its
publisher put in the message headers) or, inside a Flask request, from ``flask.g.request_id``
(set from ``X-Request-Id`` by :mod:`service.api.context`).
"""

from __future__ import annotations

import json
import logging
import sys
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

#: The request id of the Celery task (or other unit of work) running in this context.
request_id_var: ContextVar[str | None] = ContextVar("gin_request_id", default=None)

#: ``extra=`` fields copied into a JSON line when a record carries them.
EXTRA_FIELDS = (
    "method",
    "route",
    "path",
    "status",
    "duration_ms",
    "remote_addr",
    "task",
    "task_id",
    "state",
    "retries",
)

# gunicorn's access log passes its atoms as the record's args: the ones worth keeping.
_ACCESS_ATOMS = {
    "m": "method",
    "U": "path",
    "s": "status",
    "h": "remote_addr",
    "a": "user_agent",
    "b": "bytes",
}


def current_request_id() -> str | None:
    """The request id of the task or request running here, if any."""
    found = request_id_var.get()
    if found:
        return found
    try:
        from flask import g, has_request_context
    except ImportError:  # pragma: no cover - flask is a dependency
        return None
    if has_request_context():
        value = g.get("request_id")
        return str(value) if value else None
    return None


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
        }
        if record.name == "gunicorn.access" and isinstance(record.args, dict):
            atoms = record.args
            out["message"] = f"{atoms.get('m')} {atoms.get('U')} {atoms.get('s')}"
            for atom, field in _ACCESS_ATOMS.items():
                if atoms.get(atom) not in (None, "-"):
                    out[field] = atoms[atom]
            if "L" in atoms:
                out["duration_ms"] = round(float(atoms["L"]) * 1000, 3)
            request_id = atoms.get("{x-request-id}o")
            if request_id not in (None, "-"):
                out["request_id"] = request_id
        else:
            out["message"] = record.getMessage()
            request_id = getattr(record, "request_id", None) or current_request_id()
            if request_id:
                out["request_id"] = request_id
        for field in EXTRA_FIELDS:
            value = getattr(record, field, None)
            if value is not None:
                out[field] = value
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            out["exception"] = record.exc_text
        if record.stack_info:
            out["stack"] = self.formatStack(record.stack_info)
        return json.dumps(out, default=str, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    """``time level logger [request id] message key=value ...`` for people reading a terminal."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s%(rid)s %(message)s%(extras)s")

    def format(self, record: logging.LogRecord) -> str:
        request_id = getattr(record, "request_id", None) or current_request_id()
        record.rid = f" [{request_id}]" if request_id else ""
        extras = [
            f"{field}={getattr(record, field)}"
            for field in EXTRA_FIELDS
            if getattr(record, field, None) is not None
        ]
        record.extras = (" " + " ".join(extras)) if extras else ""
        return super().format(record)


#: Loggers whose INFO lines are routine: alembic's, a line per plugin when a server imports
#: it and two each time the readiness check (``GET /readyz``) compares the database's
#: revision with the newest. Below INFO (``LOG_LEVEL=DEBUG``) they show again.
ROUTINE_AT_INFO = ("alembic",)


def routine_level(level: str) -> str:
    """The level of the :data:`ROUTINE_AT_INFO` loggers when the root logs at ``level``."""
    return level if logging.getLevelName(level) < logging.INFO else "WARNING"


def formatter(log_format: str) -> logging.Formatter:
    return JsonFormatter() if log_format == "json" else TextFormatter()


def configure(log_format: str = "text", level: str = "INFO") -> None:
    """Send every log record to stdout in ``log_format`` at ``level`` and above (one handler
    on the root logger; gunicorn and Celery loggers propagate to it)."""
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(formatter(log_format))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    for name in ROUTINE_AT_INFO:
        logging.getLogger(name).setLevel(routine_level(level))
    logging.captureWarnings(True)  # warnings become records too, in the same format


def dict_config(log_format: str, level: str, access_log: bool) -> dict[str, Any]:
    """A ``logging.config.dictConfig`` for gunicorn (``logconfig_dict``): its error log and,
    when ``access_log``, its access log in the same format as the application's lines."""
    formatter_class = (
        "service.observability.logs.JsonFormatter"
        if log_format == "json"
        else "service.observability.logs.TextFormatter"
    )
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"gin": {"()": formatter_class}},
        "handlers": {
            "stdout": {
                "class": "logging.StreamHandler",
                "formatter": "gin",
                "stream": "ext://sys.stdout",
            },
        },
        "root": {"level": level, "handlers": ["stdout"]},
        "loggers": {
            "gunicorn.error": {"level": level, "handlers": [], "propagate": True},
            "gunicorn.access": {
                "level": "INFO" if access_log else "CRITICAL",
                "handlers": [],
                "propagate": True,
            },
            **{name: {"level": routine_level(level)} for name in ROUTINE_AT_INFO},
        },
    }
