"""WSGI entry point for gunicorn: ``gunicorn service.wsgi:app``.

Importing it builds the application and readies task publishing (Celery imported and set up,
no connection opened: :func:`worker.celery_app.prepare_publishing`), so that with
``preload_app`` every worker forked from the master starts with both done.
"""

from service import create_app
from worker.celery_app import prepare_publishing

app = create_app()
prepare_publishing()
