"""Celery workers: settlement, webhooks and sweeps (built in later issues)."""
