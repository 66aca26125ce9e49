"""The seamless wallet contract: what we send an operator's wallet, and what its answer means.

Pure: no database, no HTTP. :mod:`service.usecases.seamless` writes the intent, sends the
bytes this module builds (signed like our webhooks, :mod:`service.outbound.signing`) and acts
on :func:`classify`'s verdict. ``docs/seamless-wallet.md`` states the contract for operators;
``refwallet`` implements it.

An answer is exactly one of three things:

- definite success: HTTP 200 with ``{"status": "ok"}`` or ``{"status": "already_processed"}``
  (the same transaction id was applied before, with the same payload);
- definite failure: HTTP 4xx with one of :data:`DECLINES` as its status: nothing was applied;
- ambiguous: anything else (no answer in time, a connection error, a 5xx, a body that is not
  the JSON above, an unknown status). Whether the operator applied it is unknown.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from service.outbound.transport import Response

SUCCESSES = frozenset({"ok", "already_processed"})
#: The refusals an operator may answer with; nothing was applied.
DECLINES = frozenset(
    {
        "insufficient_funds",
        "limit_exceeded",
        "player_disabled",
        "wrong_currency",
        "unknown_player",
        "round_closed",
        "conflict",
        "transaction_rolled_back",
        "bad_request",
        "bad_signature",
    }
)


class Verdict(StrEnum):
    OK = "ok"
    DECLINED = "declined"
    AMBIGUOUS = "ambiguous"


@dataclass(frozen=True)
class CallOutcome:
    """What one call's answer means: the verdict, the operator's status word and the
    balance it reported (if any), and for the log what went wrong."""

    verdict: Verdict
    status: str | None = None
    balance: int | None = None
    error: str | None = None


def classify(response: Response) -> CallOutcome:
    """The verdict on one HTTP exchange with an operator's wallet."""
    if response.error is not None or response.status_code is None:
        return CallOutcome(Verdict.AMBIGUOUS, error=response.error or "no answer")
    code = response.status_code
    try:
        body = json.loads(response.body)
    except (ValueError, UnicodeDecodeError):
        return CallOutcome(Verdict.AMBIGUOUS, error=f"HTTP {code} with a body that is not JSON")
    status = body.get("status") if isinstance(body, dict) else None
    balance = body.get("balance") if isinstance(body, dict) else None
    if not isinstance(balance, int) or isinstance(balance, bool):
        balance = None
    if code == 200 and status in SUCCESSES:
        return CallOutcome(Verdict.OK, status, balance)
    if 400 <= code < 500 and status in DECLINES:
        return CallOutcome(Verdict.DECLINED, status, balance, f"HTTP {code} {status}")
    return CallOutcome(Verdict.AMBIGUOUS, error=f"HTTP {code} with status {status!r}")


def request_body(fields: dict[str, Any]) -> bytes:
    """A call's body: compact JSON, keys sorted (the bytes we sign and send on every retry
    of the same call are the same, but for ``sent_at``)."""
    return json.dumps(fields, sort_keys=True, separators=(",", ":")).encode()


def backoff_seconds(attempt: int) -> float:
    """How long after its ``attempt``-th failed try a call is tried again: 1 s doubling to
    at most 5 minutes; retried for ever (rules 2 and 3: a rollback and a credit reach a
    terminal answer or are raised to operations and still retried)."""
    return float(min(2 ** max(attempt - 1, 0), 300))


#: After this many failed tries a call is raised to operations (metric, log, API list).
ESCALATE_AFTER = 8


# --- reconciliation ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Line:
    """One transaction id of a reconciliation report: ours (a debit, its rollback, a credit)
    or the operator's export. ``state`` is ours (``booked``, ``rolled_back``...) or theirs
    (``applied``, ``rolled_back``)."""

    transaction_id: str
    kind: str
    round_id: str
    amount: int
    currency: str
    state: str


@dataclass(frozen=True)
class LineMismatch:
    transaction_id: str
    problem: str  # missing_at_operator, applied_at_operator, unknown_to_us, mismatch, in_flight
    ours: Line | None
    theirs: Line | None


#: Our states whose outcome is still open: reported as in flight, not compared.
IN_FLIGHT = frozenset({"pending", "applied", "rollback_pending"})


def reconcile(ours: list[Line], theirs: list[Line]) -> list[LineMismatch]:
    """Where our report and the operator's export of one day disagree (pure).

    What the operator must hold for each of our lines: a booked debit and an acknowledged
    credit applied, with the same kind, round, amount and currency; a failed debit not
    applied; a rolled-back debit absent or rolled back; a rollback we sent applied, or
    absent when the debit never reached it. A line still in flight is listed as such. An
    operator line we do not know is a discrepancy."""
    found: list[LineMismatch] = []
    by_id = {line.transaction_id: line for line in theirs}
    known = set()
    for line in ours:
        known.add(line.transaction_id)
        other = by_id.get(line.transaction_id)
        if line.state in IN_FLIGHT:
            found.append(LineMismatch(line.transaction_id, "in_flight", line, other))
            continue
        if other is not None and (other.kind, other.round_id, other.amount, other.currency) != (
            line.kind,
            line.round_id,
            line.amount,
            line.currency,
        ):
            found.append(LineMismatch(line.transaction_id, "mismatch", line, other))
            continue
        if line.kind == "rollback":  # of a debit it never applied: a tombstone, not listed
            continue
        applied = other is not None and other.state == "applied"
        if line.state in ("booked", "acknowledged") and not applied:
            found.append(LineMismatch(line.transaction_id, "missing_at_operator", line, other))
        elif line.state in ("failed", "rolled_back") and applied:
            found.append(LineMismatch(line.transaction_id, "applied_at_operator", line, other))
    for line in theirs:
        if line.transaction_id not in known:
            found.append(LineMismatch(line.transaction_id, "unknown_to_us", None, line))
    return found


def export_lines(raw: str) -> list[Line]:
    """The lines of an operator's export (JSON: a list, or an object with ``transactions``,
    of ``{transaction_id, kind, round_id, amount, currency, state}``), as :func:`reconcile`
    compares them.

    :raises ValueError: when ``raw`` is not such a document (the message says where).
    """
    try:
        exported = json.loads(raw)
        rows = exported["transactions"] if isinstance(exported, dict) else exported
        if not isinstance(rows, list):
            raise TypeError("the transactions are not a list")
        return [
            Line(
                str(r["transaction_id"]),
                str(r["kind"]),
                str(r["round_id"]),
                int(r["amount"]),
                str(r["currency"]),
                str(r["state"]),
            )
            for r in rows
        ]
    except KeyError as exc:
        raise ValueError(f"a transaction has no {exc}") from None
    except (TypeError, ValueError) as exc:
        raise ValueError(str(exc)) from None
