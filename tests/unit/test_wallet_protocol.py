"""The seamless wallet contract's pure parts: how an answer is classified (definite success,
definite failure, ambiguous) and how a day's report is reconciled with an operator's export."""

from __future__ import annotations

import json

import pytest

from service.outbound.transport import Response
from service.outbound.wallet_protocol import (
    DECLINES,
    ESCALATE_AFTER,
    Line,
    Verdict,
    backoff_seconds,
    classify,
    reconcile,
    request_body,
)


def _answer(code: int | None, body: object = None, error: str | None = None) -> Response:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return Response(code, error, 5, raw)


@pytest.mark.parametrize("status", ["ok", "already_processed"])
def test_a_200_with_a_success_status_is_definite_success(status: str) -> None:
    outcome = classify(_answer(200, {"status": status, "balance": 1200}))
    assert (outcome.verdict, outcome.status, outcome.balance) == (Verdict.OK, status, 1200)


@pytest.mark.parametrize("status", sorted(DECLINES))
def test_a_4xx_with_a_known_refusal_is_definite_failure(status: str) -> None:
    outcome = classify(_answer(409, {"status": status}))
    assert (outcome.verdict, outcome.status) == (Verdict.DECLINED, status)


@pytest.mark.parametrize(
    "answer",
    [
        _answer(None, b"", "timed out after 3 s"),
        _answer(None, b"", "ConnectionRefusedError: [Errno 111]"),
        _answer(500, {"status": "ok"}),  # a 5xx is never a success, whatever it says
        _answer(503, {"status": "insufficient_funds"}),  # nor a refusal
        _answer(200, b"not json"),
        _answer(200, b"\xff\xfe"),
        _answer(200, {"status": "maybe"}),
        _answer(200, ["ok"]),
        _answer(200, {}),
        _answer(409, {"status": "ok"}),  # a success word with a refusal's code
        _answer(404, b"<html>not found</html>"),
        _answer(302, {"status": "ok"}),
        _answer(201, {"status": "ok"}),
    ],
)
def test_anything_else_is_ambiguous(answer: Response) -> None:
    outcome = classify(answer)
    assert outcome.verdict is Verdict.AMBIGUOUS and outcome.error


def test_a_balance_that_is_not_an_integer_is_not_reported() -> None:
    assert classify(_answer(200, {"status": "ok", "balance": 12.5})).balance is None
    assert classify(_answer(200, {"status": "ok", "balance": True})).balance is None


def test_the_body_is_canonical_json() -> None:
    assert request_body({"b": 1, "a": [2]}) == b'{"a":[2],"b":1}'


def test_backoff_doubles_to_a_ceiling_and_never_stops() -> None:
    delays = [backoff_seconds(n) for n in range(1, 20)]
    assert delays[:4] == [1, 2, 4, 8]
    assert max(delays) == 300 and delays[-1] == 300
    assert ESCALATE_AFTER > 1


def _line(tid: str, kind: str, state: str, amount: int = 500, round_id: str = "rnd_1") -> Line:
    return Line(tid, kind, round_id, amount, "EUR", state)


def test_matching_books_reconcile_to_nothing() -> None:
    ours = [
        _line("d1", "debit", "booked"),
        _line("c1", "credit", "acknowledged", 950),
        _line("d2", "debit", "rolled_back"),
        _line("r2", "rollback", "acknowledged"),  # its debit never arrived: a tombstone there
        _line("d3", "debit", "failed"),
        _line("d4", "debit", "rolled_back"),
        _line("r4", "rollback", "acknowledged"),
    ]
    theirs = [
        _line("d1", "debit", "applied"),
        _line("c1", "credit", "applied", 950),
        _line("d4", "debit", "rolled_back"),
        _line("r4", "rollback", "applied"),
    ]
    assert reconcile(ours, theirs) == []


def test_every_kind_of_disagreement_is_reported() -> None:
    ours = [
        _line("d1", "debit", "booked"),  # the operator lost it
        _line("c1", "credit", "acknowledged", 950),  # the operator has another amount
        _line("d2", "debit", "rolled_back"),  # the operator still holds it applied
        _line("d3", "debit", "failed"),  # the operator applied it anyway
        _line("c2", "credit", "pending", 10),  # still being sent
    ]
    theirs = [
        _line("c1", "credit", "applied", 900),
        _line("d2", "debit", "applied"),
        _line("d3", "debit", "applied"),
        _line("x9", "debit", "applied"),  # never ours
    ]
    found = {d.transaction_id: d.problem for d in reconcile(ours, theirs)}
    assert found == {
        "d1": "missing_at_operator",
        "c1": "mismatch",
        "d2": "applied_at_operator",
        "d3": "applied_at_operator",
        "c2": "in_flight",
        "x9": "unknown_to_us",
    }
