"""Seamless wallet tasks: thin wrappers over :mod:`service.usecases.seamless`.

``wallet.sweep`` (beat, every two seconds) drives every wallet call that is due: debits whose
request is gone are rolled back, rollbacks and credits are sent again with their own ids
until the operator answers them definitely (rules 2, 3 and 5 of the use case).
"""

from __future__ import annotations

from service.usecases import seamless
from worker.celery_app import app
from worker.tasks import _with_session, operator_sender


@app.task(name="wallet.sweep", acks_late=True, ignore_result=True)
def sweep() -> int:
    """Send what is due; how many calls were sent."""
    return _with_session(lambda session: seamless.sweep(session, operator_sender()))
