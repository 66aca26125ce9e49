"""gunicorn defaults; production tuning arrives with the operations issue.

Threaded workers (gthread): a match view may long-poll for up to 30 s (it holds no database
connection while it waits), and a thread parked on it must not block the worker's other
requests.
"""

import multiprocessing
import os

bind = os.environ.get("GIN_BIND", "0.0.0.0:8000")
workers = int(os.environ.get("WEB_CONCURRENCY", multiprocessing.cpu_count() * 2 + 1))
worker_class = os.environ.get("GUNICORN_WORKER_CLASS", "gthread")
threads = int(os.environ.get("GUNICORN_THREADS", "4"))
timeout = 60
graceful_timeout = 30
