"""Periodic reconciliation (Audit): beat runs the ledger's invariant checks on each operator's
books in turn, keeps each report as that operator's last audit (the console's dashboard shows
it), and any failure is loud, an ERROR log line per problem and the
``gin_audit_failures_total`` metric."""

from __future__ import annotations

import logging
from typing import Any

from prometheus_client import Counter

from service.clock import utcnow
from service.usecases.audit import LedgerAudit, operator_ids, record_ledger_audit
from worker.celery_app import app
from worker.tasks import _in_unit

log = logging.getLogger(__name__)

RUNS = Counter("gin_audit_runs", "Reconciliation runs of the ledger invariant checks.")
FAILURES = Counter(
    "gin_audit_failures",
    "Problems the reconciliation found in the ledger (any increase needs a look).",
)
LOGGED_PER_RUN = 50  # the report counts them all; the log shows the first ones


@app.task(name="audit.reconcile", acks_late=True, ignore_result=True)
def reconcile() -> dict[str, Any]:
    """Check every transaction balanced, every balance equal to its entries, the hash chains
    intact and the escrow of every settled match empty. Read-only, so safe to run at any time
    and any number of times at once."""
    now = utcnow()

    def books_of(operator_id: str) -> LedgerAudit:  # each operator in a unit of its own
        return _in_unit(lambda session: record_ledger_audit(session, operator_id, now))

    report = LedgerAudit.of_all(books_of(operator) for operator in _in_unit(operator_ids))
    RUNS.inc()
    problems = report.discrepancies
    if problems:
        FAILURES.inc(len(problems))
        for problem in problems[:LOGGED_PER_RUN]:
            log.error("ledger reconciliation: %s", problem)
        log.error(
            "ledger reconciliation FAILED: %d problems in %d accounts, %d transactions",
            len(problems),
            report.accounts,
            report.transactions,
        )
    else:
        log.info(
            "ledger reconciliation ok: %d accounts, %d transactions, %d settled matches",
            report.accounts,
            report.transactions,
            report.settled_matches,
        )
    summary = report.to_dict()
    summary["failures_total"] = failures_total()
    return summary


def failures_total() -> float:
    """The metric's current value in this process."""
    for metric in FAILURES.collect():
        for sample in metric.samples:
            if sample.name.endswith("_total"):
                return float(sample.value)
    return 0.0
