"""gunicorn defaults; production tuning arrives with the operations issue."""

import multiprocessing
import os

bind = os.environ.get("GIN_BIND", "0.0.0.0:8000")
workers = int(os.environ.get("WEB_CONCURRENCY", multiprocessing.cpu_count() * 2 + 1))
timeout = 30
graceful_timeout = 30
