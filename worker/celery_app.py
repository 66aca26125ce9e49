"""The Celery application, configured from the same settings as the web app."""

from __future__ import annotations

from celery import Celery

from service.config import Settings


def make_celery(settings: Settings | None = None) -> Celery:
    settings = settings or Settings.from_env()
    app = Celery("gin", broker=settings.broker_url)
    app.conf.update(
        task_serializer="json",
        accept_content=["json"],
        result_serializer="json",
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        broker_connection_retry_on_startup=True,
        imports=["worker.tasks"],
        beat_schedule={
            "purge-expired-idempotency-keys": {
                "task": "idempotency.purge_expired",
                "schedule": 3600.0,
            },
            # Turn clocks are enforced within about a second of a deadline.
            "enforce-turn-clocks": {
                "task": "matches.enforce_clocks",
                "schedule": 1.0,
                "options": {"expires": 5},
            },
            "cancel-unfilled-tables": {
                "task": "tables.cancel_unfilled",
                "schedule": 10.0,
                "options": {"expires": 30},
            },
        },
    )
    return app


app = make_celery()
