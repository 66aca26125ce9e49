"""The reference operator wallet (refwallet) against the seamless-wallet contract.

Most tests drive the WSGI app in process (fast); the timeout faults, the concurrency checks and
the process lifecycle talk to the real ``python -m refwallet serve`` over HTTP, because
only a real socket can time out or race.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from refwallet import create_app
from refwallet.__main__ import SECRET_ENV
from refwallet.__main__ import main as refwallet_main
from service.outbound.signing import SIGNATURE_HEADER, signature_header

SECRET = "whsec_refwallet_test_current"
OLD_SECRET = "whsec_refwallet_test_previous"
REPO = Path(__file__).resolve().parents[2]
REASON = {"debit": "stake", "credit": "payout", "rollback": "cancel"}


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:12]}"


def tx(
    kind: str,
    transaction_id: str,
    player: str = "p1",
    amount: int = 100,
    round_id: str = "r1",
    **fields: Any,
) -> dict[str, Any]:
    """A contract body for ``kind`` with sensible values; ``fields`` override or add."""
    body: dict[str, Any] = {
        "transaction_id": transaction_id,
        "kind": kind,
        "player_id": f"ply_{player}",
        "external_player_id": player,
        "currency": "EUR",
        "amount": amount,
        "round_id": round_id,
        "table_id": "tbl_1",
        "match_id": "mat_1",
        "reason": REASON[kind],
        "references": [],
        "sent_at": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
    }
    if kind == "credit":
        body["round_closed"] = False
    body.update(fields)
    return body


def rollback_of(debit: dict[str, Any], transaction_id: str | None = None) -> dict[str, Any]:
    return tx(
        "rollback",
        transaction_id or new_id("rb"),
        debit["external_player_id"],
        debit["amount"],
        debit["round_id"],
        references=[debit["transaction_id"]],
    )


class Wallet:
    """The app in process, with signed calls (signed at the app's own clock)."""

    def __init__(self, app: Any, clock: Callable[[], float] = time.time) -> None:
        self.app = app
        self.client = app.test_client()
        self.clock = clock

    def call(
        self,
        path: str,
        body: dict[str, Any] | bytes,
        secrets: tuple[str, ...] = (SECRET,),
        header: str | None = None,
    ) -> tuple[int, Any]:
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"}
        if header is None and secrets:
            header = signature_header(list(secrets), int(self.clock()), raw)
        if header is not None:
            headers[SIGNATURE_HEADER] = header
        response = self.client.post(path, data=raw, headers=headers)
        text = response.get_data(as_text=True)
        try:
            return response.status_code, json.loads(text)
        except ValueError:
            return response.status_code, text

    def player(self, external_player_id: str = "p1", **fields: Any) -> None:
        body = {"currency": "EUR", "balance": 1000, "disabled": False, "debit_limit": None}
        response = self.client.put(f"/admin/players/{external_player_id}", json={**body, **fields})
        assert response.status_code in (200, 201), response.get_data(as_text=True)

    def balance(self, external_player_id: str = "p1") -> int:
        return int(self.client.get(f"/admin/players/{external_player_id}").get_json()["balance"])

    def transactions(self, query: str = "") -> list[dict[str, Any]]:
        return list(self.client.get(f"/admin/transactions{query}").get_json()["data"])

    def states(self) -> dict[str, str]:
        return {row["transaction_id"]: row["state"] for row in self.transactions()}

    def requests(self, transaction_id: str) -> list[dict[str, Any]]:
        url = f"/admin/requests?transaction_id={transaction_id}"
        return list(self.client.get(url).get_json()["data"])

    def faults(self, *rules: dict[str, Any]) -> None:
        response = self.client.post("/admin/faults", json={"rules": list(rules)})
        assert response.status_code == 200, response.get_data(as_text=True)


@pytest.fixture
def wallet(tmp_path: Path) -> Iterator[Wallet]:
    app = create_app(str(tmp_path / "wallet.sqlite"), [SECRET])
    yield Wallet(app)
    app.extensions["refwallet"].store.close()


# --- signatures -------------------------------------------------------------------------------


def test_a_request_without_a_valid_signature_is_refused_and_applies_nothing(
    wallet: Wallet,
) -> None:
    wallet.player()
    body = tx("debit", "d1")
    raw = json.dumps(body).encode()
    stale = signature_header([SECRET], int(time.time()) - 3600, raw)
    tampered = signature_header([SECRET], int(time.time()), raw.replace(b"100", b"1"))
    for header in (
        None,
        "",
        "t=1,v1=00",
        signature_header(["whsec_wrong"], int(time.time()), raw),
        stale,
        tampered,
    ):
        status, answer = wallet.call("/debit", raw, secrets=(), header=header)
        assert (status, answer) == (401, {"status": "bad_signature"})
    assert wallet.balance() == 1000
    assert wallet.transactions() == []
    assert [r["answer"] for r in wallet.requests("d1")] == ["bad_signature"] * 6
    # The same bytes, properly signed, go through.
    assert wallet.call("/debit", raw) == (200, {"status": "ok", "balance": 900})


def test_any_configured_secret_verifies_during_a_rotation(tmp_path: Path) -> None:
    app = create_app(str(tmp_path / "wallet.sqlite"), [OLD_SECRET, SECRET])
    wallet = Wallet(app)
    wallet.player()
    assert wallet.call("/debit", tx("debit", "d1"), secrets=(OLD_SECRET,))[0] == 200
    assert wallet.call("/debit", tx("debit", "d2"), secrets=(SECRET,))[0] == 200
    assert wallet.call("/debit", tx("debit", "d3"), secrets=("whsec_new", SECRET))[0] == 200
    assert wallet.call("/debit", tx("debit", "d4"), secrets=("whsec_other",))[0] == 401
    assert wallet.balance() == 700
    app.extensions["refwallet"].store.close()


# --- the money rules --------------------------------------------------------------------------


def test_debit_credit_rollback_move_the_balance(wallet: Wallet) -> None:
    wallet.player(balance=1000)
    stake, top_up = tx("debit", "d1", amount=100), tx("debit", "d2", amount=50, reason="top_up")
    assert wallet.call("/debit", stake) == (200, {"status": "ok", "balance": 900})
    assert wallet.call("/debit", top_up) == (200, {"status": "ok", "balance": 850})
    assert wallet.call("/rollback", rollback_of(top_up, "rb1")) == (
        200,
        {"status": "ok", "balance": 900},
    )
    payout = tx("credit", "c1", amount=300, references=["d1"], round_closed=True)
    assert wallet.call("/credit", payout) == (200, {"status": "ok", "balance": 1200})
    assert wallet.balance() == 1200
    assert wallet.states() == {
        "d1": "applied",
        "d2": "rolled_back",
        "rb1": "applied",
        "c1": "applied",
    }
    query = {"player_id": "ply_p1", "external_player_id": "p1", "currency": "EUR"}
    assert wallet.call("/balance", query) == (
        200,
        {"status": "ok", "balance": 1200, "currency": "EUR"},
    )
    rows = {row["transaction_id"]: row for row in wallet.transactions()}
    assert rows["c1"]["references"] == ["d1"] and rows["c1"]["round_closed"] is True
    assert rows["rb1"]["references"] == ["d2"]


def test_a_zero_credit_closes_the_round(wallet: Wallet) -> None:
    wallet.player(balance=1000)
    assert wallet.call("/debit", tx("debit", "d1", amount=1000))[1]["balance"] == 0
    release = tx("credit", "c1", amount=0, reason="release", round_closed=True)
    assert wallet.call("/credit", release) == (200, {"status": "ok", "balance": 0})
    assert wallet.call("/debit", tx("debit", "d2", amount=1)) == (
        409,
        {"status": "round_closed"},
    )


def test_a_replay_is_already_processed_and_applies_nothing(wallet: Wallet) -> None:
    wallet.player(balance=1000)
    debit = tx("debit", "d1", amount=100)
    credit = tx("credit", "c1", amount=40, references=["d1"])
    other = tx("debit", "d2", amount=10, round_id="r2")
    rollback = rollback_of(other, "rb1")
    for path, body in (
        ("/debit", debit),
        ("/credit", credit),
        ("/debit", other),
        ("/rollback", rollback),
    ):
        assert wallet.call(path, body)[1]["status"] == "ok"
    assert wallet.balance() == 940
    for path, body in (("/debit", debit), ("/credit", credit), ("/rollback", rollback)):
        retry = {**body, "sent_at": "2030-01-01T00:00:00Z"}  # a retry is stamped afresh
        assert wallet.call(path, retry) == (200, {"status": "already_processed", "balance": 940})
    assert wallet.balance() == 940
    assert len(wallet.transactions()) == 4


def test_the_same_id_with_another_payload_is_a_conflict(wallet: Wallet) -> None:
    wallet.player(balance=1000)
    assert wallet.call("/debit", tx("debit", "d1", amount=100))[0] == 200
    assert wallet.call("/debit", tx("debit", "d1", amount=101)) == (409, {"status": "conflict"})
    assert wallet.call("/debit", tx("debit", "d1", round_id="r2")) == (409, {"status": "conflict"})
    assert wallet.call("/credit", tx("credit", "d1")) == (409, {"status": "conflict"})
    assert wallet.balance() == 900


@pytest.mark.parametrize(
    ("player", "debit", "expected"),
    [
        ({"balance": 99}, {"amount": 100}, (402, "insufficient_funds")),
        ({"balance": 100}, {"amount": 100}, (200, "ok")),
        ({"disabled": True}, {}, (403, "player_disabled")),
        ({"currency": "USD"}, {}, (409, "wrong_currency")),
        ({"debit_limit": 99}, {"amount": 100}, (403, "limit_exceeded")),
        ({"debit_limit": 100}, {"amount": 100}, (200, "ok")),
        ({}, {"external_player_id": "nobody"}, (404, "unknown_player")),
    ],
)
def test_a_debit_is_refused_by_the_players_wallet(
    wallet: Wallet, player: dict[str, Any], debit: dict[str, Any], expected: tuple[int, str]
) -> None:
    wallet.player(**{"balance": 1000, **player})
    start = wallet.balance()
    status, answer = wallet.call("/debit", tx("debit", "d1", **debit))
    assert (status, answer["status"]) == expected
    applied = expected[1] == "ok"
    assert wallet.balance() == start - (100 if applied else 0)
    assert len(wallet.transactions()) == (1 if applied else 0)


def test_credits_and_rollbacks_are_still_accepted_for_a_disabled_player(wallet: Wallet) -> None:
    wallet.player(balance=500)
    debit = tx("debit", "d1", amount=200)
    assert wallet.call("/debit", debit)[0] == 200
    wallet.player(balance=300, disabled=True)
    assert wallet.call("/rollback", rollback_of(debit)) == (200, {"status": "ok", "balance": 500})
    credit = tx("credit", "c1", amount=5, round_id="r2")
    assert wallet.call("/credit", credit) == (200, {"status": "ok", "balance": 505})
    assert wallet.call("/credit", tx("credit", "c2", currency="USD"))[1] == {
        "status": "wrong_currency"
    }
    query = {"player_id": "x", "external_player_id": "p1", "currency": "USD"}
    assert wallet.call("/balance", query) == (409, {"status": "wrong_currency"})
    query = {"player_id": "x", "external_player_id": "ghost", "currency": "EUR"}
    assert wallet.call("/balance", query) == (404, {"status": "unknown_player"})


def test_rollback_of_an_unknown_debit_leaves_a_tombstone_that_refuses_the_late_debit(
    wallet: Wallet,
) -> None:
    wallet.player(balance=1000)
    debit = tx("debit", "d1", amount=300)
    rollback = rollback_of(debit, "rb1")
    assert wallet.call("/rollback", rollback) == (200, {"status": "ok", "balance": 1000})
    assert wallet.call("/rollback", rollback) == (
        200,
        {"status": "already_processed", "balance": 1000},
    )
    assert wallet.call("/rollback", rollback_of(debit, "rb2"))[1]["status"] == "already_processed"
    # The debit arrives late (reordered): never applied, however often it is retried.
    for _ in range(2):
        assert wallet.call("/debit", debit) == (409, {"status": "transaction_rolled_back"})
    assert wallet.balance() == 1000
    assert wallet.states() == {"rb1": "applied", "d1": "tombstone"}
    tombstone = next(row for row in wallet.transactions() if row["transaction_id"] == "d1")
    assert tombstone["kind"] == "debit" and tombstone["applied_at"] is None


def test_a_rolled_back_debit_sent_again_is_refused(wallet: Wallet) -> None:
    wallet.player(balance=1000)
    debit = tx("debit", "d1", amount=300)
    assert wallet.call("/debit", debit)[0] == 200
    assert wallet.call("/rollback", rollback_of(debit))[1]["balance"] == 1000
    assert wallet.call("/debit", debit) == (409, {"status": "transaction_rolled_back"})
    assert wallet.balance() == 1000


def test_rollback_after_a_credit_on_the_round_is_round_closed(wallet: Wallet) -> None:
    wallet.player(balance=1000)
    debit = tx("debit", "d1", amount=300)
    assert wallet.call("/debit", debit)[0] == 200
    # Any credit on the round, closing it or not, settles its debits.
    assert wallet.call("/credit", tx("credit", "c1", amount=50, references=["d1"]))[0] == 200
    assert wallet.call("/rollback", rollback_of(debit)) == (409, {"status": "round_closed"})
    assert wallet.balance() == 750
    assert wallet.states()["d1"] == "applied"


def test_a_rollback_must_match_its_debit(wallet: Wallet) -> None:
    wallet.player(balance=1000)
    debit = tx("debit", "d1", amount=300)
    credit = tx("credit", "c1", amount=1, round_id="r9")
    assert wallet.call("/debit", debit)[0] == 200 and wallet.call("/credit", credit)[0] == 200
    wrong_amount = {**rollback_of(debit), "amount": 299}
    assert wallet.call("/rollback", wrong_amount)[1]["status"] == "bad_request"
    of_a_credit = rollback_of({**credit, "kind": "debit"})
    assert wallet.call("/rollback", of_a_credit)[1]["status"] == "bad_request"
    assert wallet.balance() == 701


def test_a_debit_on_a_closed_round_is_refused_but_a_refund_is_still_credited(
    wallet: Wallet,
) -> None:
    wallet.player(balance=1000)
    assert wallet.call("/debit", tx("debit", "d1", amount=100))[0] == 200
    close = tx("credit", "c1", amount=0, reason="release", references=["d1"], round_closed=True)
    assert wallet.call("/credit", close)[1] == {"status": "ok", "balance": 900}
    assert wallet.call("/debit", tx("debit", "d2", amount=10)) == (409, {"status": "round_closed"})
    refund = tx("credit", "c2", amount=100, reason="refund", references=["d1"])
    assert wallet.call("/credit", refund) == (200, {"status": "ok", "balance": 1000})
    # Rounds belong to one player's stay: another round and another player are unaffected.
    assert wallet.call("/debit", tx("debit", "d3", amount=10, round_id="r2"))[0] == 200
    wallet.player("p2")
    assert wallet.call("/debit", tx("debit", "d4", player="p2", amount=10))[0] == 200


BAD_BODIES: list[tuple[str, Any]] = [
    ("/debit", {"amount": 1.0}),
    ("/debit", {"amount": True}),
    ("/debit", {"amount": -1}),
    ("/debit", {"amount": "100"}),
    ("/debit", {"amount": 0}),
    ("/debit", {"amount": 2**63}),
    ("/credit", {"amount": -5}),
    ("/debit", {"kind": "credit"}),
    ("/debit", {"reason": "payout"}),
    ("/debit", {"round_closed": True}),
    ("/debit", {"currency": "eur"}),
    ("/debit", {"transaction_id": ""}),
    ("/debit", {"round_id": None}),
    ("/debit", {"sent_at": "yesterday"}),
    ("/debit", {"references": "d0"}),
    ("/rollback", {"references": []}),
    ("/rollback", {"references": ["a", "b"]}),
    ("/credit", {"round_closed": "yes"}),
]


@pytest.mark.parametrize(("path", "override"), BAD_BODIES)
def test_a_malformed_body_is_a_bad_request(wallet: Wallet, path: str, override: Any) -> None:
    wallet.player(balance=1000)
    baseline = tx(path[1:], "t1", references=["d0"])
    status, answer = wallet.call(path, {**baseline, **override})
    assert (status, answer["status"]) == (400, "bad_request")
    assert wallet.balance() == 1000 and wallet.transactions() == []
    # Only the override was wrong: the same body without it is accepted.
    assert wallet.call(path, baseline)[1]["status"] == "ok"


def test_unreadable_bodies_are_bad_requests(wallet: Wallet) -> None:
    wallet.player(balance=1000)
    missing = tx("debit", "t1")
    del missing["round_id"]
    duplicate = json.dumps(tx("debit", "t1"))[:-1].encode() + b', "amount": 1}'
    for raw in (
        json.dumps(missing).encode(),
        duplicate,
        b"[1]",
        b"{",
        b"\xff\xfe",
        b'{"amount": NaN}',
    ):
        assert wallet.call("/debit", raw)[0] == 400
    status, answer = wallet.call("/debit", b"{" + b" " * 70_000 + b"}")
    assert (status, answer["status"]) == (413, "bad_request")
    assert wallet.balance() == 1000


def test_export_and_transactions_by_utc_day(tmp_path: Path) -> None:
    now = [datetime(2030, 5, 1, 23, 59, 0, tzinfo=UTC).timestamp()]
    app = create_app(str(tmp_path / "wallet.sqlite"), [SECRET], clock=lambda: now[0])
    wallet = Wallet(app, clock=lambda: now[0])
    wallet.player(balance=1000)
    debit = tx("debit", "d1", amount=100)
    assert wallet.call("/debit", debit)[0] == 200
    assert wallet.call("/rollback", rollback_of(tx("debit", "late"), "rb0"))[0] == 200
    now[0] += 120  # past midnight UTC
    assert wallet.call("/credit", tx("credit", "c1", amount=250, references=["d1"]))[0] == 200
    first = app.test_client().get("/admin/export?date=2030-05-01").get_json()
    assert first == {
        "date": "2030-05-01",
        "transactions": [
            {
                "transaction_id": "d1",
                "kind": "debit",
                "round_id": "r1",
                "amount": 100,
                "currency": "EUR",
                "state": "applied",
            },
            {
                "transaction_id": "rb0",
                "kind": "rollback",
                "round_id": "r1",
                "amount": 100,
                "currency": "EUR",
                "state": "applied",
            },
        ],
    }
    second = app.test_client().get("/admin/export?date=2030-05-02").get_json()["transactions"]
    assert [row["transaction_id"] for row in second] == ["c1"]
    first_day = wallet.transactions("?date=2030-05-01")
    assert [(r["transaction_id"], r["state"]) for r in first_day] == [
        ("d1", "applied"),
        ("late", "tombstone"),
        ("rb0", "applied"),
    ]
    assert len(wallet.transactions()) == 4
    assert app.test_client().get("/admin/export?date=May").status_code == 400
    assert app.test_client().get("/admin/export").status_code == 400
    app.extensions["refwallet"].store.close()


def test_admin_players(wallet: Wallet) -> None:
    client = wallet.client
    assert client.get("/admin/players/p9").status_code == 404
    body = {"currency": "GBP", "balance": 5, "disabled": True, "debit_limit": 3}
    assert client.put("/admin/players/p9", json=body).status_code == 201
    assert client.put("/admin/players/p9", json={**body, "balance": 7}).status_code == 200
    assert client.get("/admin/players/p9").get_json() == {
        "external_player_id": "p9",
        **body,
        "balance": 7,
    }
    for bad in ({"currency": "GB"}, {**body, "balance": -1}, {**body, "disabled": "no"}):
        assert client.put("/admin/players/p9", json=bad).status_code == 400
    assert client.get("/admin/health").get_json() == {"status": "ok"}


def test_an_unexpected_error_is_a_json_500_and_still_logged(
    wallet: Wallet, monkeypatch: pytest.MonkeyPatch
) -> None:
    wallet.player(balance=1000)

    def broken(*args: Any) -> Any:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(wallet.app.extensions["refwallet"].store, "apply", broken)
    assert wallet.call("/debit", tx("debit", "d1")) == (500, {"status": "error"})
    assert [(r["http_status"], r["answer"]) for r in wallet.requests("d1")] == [(500, "error")]
    assert wallet.balance() == 1000


# --- faults, in process -----------------------------------------------------------------------


def test_error_5xx_applies_nothing_and_is_used_up(wallet: Wallet) -> None:
    wallet.player(balance=1000)
    wallet.faults({"kinds": ["debit"], "fault": "error_5xx", "times": 2})
    debit = tx("debit", "d1")
    assert wallet.call("/credit", tx("credit", "c1", amount=1))[0] == 200  # not a debit
    assert wallet.call("/debit", debit)[0] == 500
    assert wallet.call("/debit", debit)[0] == 500
    assert wallet.balance() == 1001
    assert wallet.call("/debit", debit) == (200, {"status": "ok", "balance": 901})
    log = wallet.requests("d1")
    assert [(r["http_status"], r["fault"], r["applied"]) for r in log] == [
        (500, "error_5xx", False),
        (500, "error_5xx", False),
        (200, None, True),
    ]


@pytest.mark.parametrize(
    ("fault", "body"), [("bad_body", "not json"), ("unknown_status", {"status": "maybe"})]
)
def test_a_garbled_answer_still_applies(wallet: Wallet, fault: str, body: Any) -> None:
    wallet.player(balance=1000)
    wallet.faults({"fault": fault})
    debit = tx("debit", "d1")
    assert wallet.call("/debit", debit) == (200, body)
    assert wallet.balance() == 900
    # The caller's retry learns the truth.
    assert wallet.call("/debit", debit) == (200, {"status": "already_processed", "balance": 900})


def test_down_answers_503_for_a_while_then_recovers(wallet: Wallet) -> None:
    faults = wallet.app.extensions["refwallet"].faults
    monotonic = [1000.0]
    faults.clock = lambda: monotonic[0]  # the outage window, without sleeping through it
    wallet.player(balance=1000)
    wallet.faults({"fault": "down", "seconds": 0.3})
    query = {"player_id": "x", "external_player_id": "p1", "currency": "EUR"}
    assert wallet.call("/balance", query) == (503, {"status": "unavailable"})
    assert wallet.call("/debit", tx("debit", "d1"))[0] == 503
    assert wallet.call("/debit", tx("debit", "d1"), secrets=())[0] == 503  # before signatures
    monotonic[0] += 0.29
    assert wallet.call("/credit", tx("credit", "c1"))[0] == 503
    assert wallet.balance() == 1000
    assert [r["applied"] for r in wallet.requests("d1")] == [False, False]
    monotonic[0] += 0.02
    assert wallet.call("/debit", tx("debit", "d1")) == (200, {"status": "ok", "balance": 900})


def test_fault_rules_are_validated_replaced_and_cleared(wallet: Wallet) -> None:
    client = wallet.client
    for rules in (
        [{"fault": "gremlins"}],
        [{"fault": "bad_body", "kinds": ["deposit"]}],
        [{"fault": "bad_body", "times": 0}],
        [{"fault": "delay_apply", "seconds": -1}],
    ):
        assert client.post("/admin/faults", json={"rules": rules}).status_code == 400
    wallet.player(balance=1000)
    wallet.faults({"fault": "error_5xx", "times": 5})
    wallet.faults({"fault": "unknown_status", "kinds": ["credit"]})  # replaces the first
    assert wallet.call("/debit", tx("debit", "d1"))[0] == 200
    wallet.faults({"fault": "error_5xx"})
    assert client.delete("/admin/faults").get_json() == {"rules": []}
    assert wallet.call("/debit", tx("debit", "d2"))[0] == 200


# --- the real process -------------------------------------------------------------------------


class Live:
    """A running ``python -m refwallet serve``, over HTTP with urllib."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url

    def call(
        self,
        path: str,
        body: dict[str, Any] | None = None,
        method: str = "POST",
        timeout: float = 10.0,
        signed: bool = True,
        secret: str = SECRET,
    ) -> tuple[int, Any]:
        raw = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json"}
        if signed and raw is not None and not path.startswith("/admin"):
            headers[SIGNATURE_HEADER] = signature_header([secret], int(time.time()), raw)
        req = urllib.request.Request(self.base_url + path, raw, headers, method=method)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as response:
                status, text = response.status, response.read().decode()
        except urllib.error.HTTPError as exc:
            with exc:
                status, text = exc.code, exc.read().decode()
        try:
            return status, json.loads(text)
        except ValueError:
            return status, text

    def times_out(self, path: str, body: dict[str, Any], timeout: float = 0.1) -> bool:
        try:
            self.call(path, body, timeout=timeout)
        except TimeoutError:
            return True
        except urllib.error.URLError as exc:
            return isinstance(exc.reason, TimeoutError)
        return False

    def player(self, external_player_id: str, balance: int) -> None:
        body = {"currency": "EUR", "balance": balance}
        assert self.call(f"/admin/players/{external_player_id}", body, "PUT")[0] in (200, 201)

    def balance(self, external_player_id: str) -> int:
        return int(self.call(f"/admin/players/{external_player_id}", method="GET")[1]["balance"])

    def requests(self, transaction_id: str) -> list[dict[str, Any]]:
        path = f"/admin/requests?transaction_id={transaction_id}"
        return list(self.call(path, method="GET")[1]["data"])

    def transactions(self, external_player_id: str) -> list[dict[str, Any]]:
        rows = self.call("/admin/transactions", method="GET")[1]["data"]
        return [row for row in rows if row["external_player_id"] == external_player_id]

    def faults(self, *rules: dict[str, Any]) -> None:
        assert self.call("/admin/faults", {"rules": list(rules)})[0] == 200


@contextmanager
def serving(
    db: Path, log: Path, *secrets: str, secret_file: Path | None = None
) -> Iterator[tuple[Live, subprocess.Popen[str]]]:
    """Start the wallet process (its stderr to ``log``) with ``secrets`` in its environment
    (or only ``secret_file``), wait for its one line, stop it with SIGTERM on exit."""
    args = [
        sys.executable,
        "-m",
        "refwallet",
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "--db",
        str(db),
    ]
    env = {k: v for k, v in os.environ.items() if k != SECRET_ENV}
    if secret_file is not None:
        args += ["--secret-file", str(secret_file)]
    else:
        env[SECRET_ENV] = ",".join(secrets or (SECRET,))
    with open(log, "a") as stderr:
        process = subprocess.Popen(
            args, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=stderr, text=True
        )
        assert process.stdout is not None
        try:
            ready, _, _ = select.select([process.stdout], [], [], 20)
            assert ready, "the wallet printed nothing within 20 s"
            line = process.stdout.readline()
            assert line.startswith("listening on http://127.0.0.1:"), line
            yield Live(line.split()[-1]), process
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
            process.wait(timeout=10)
            process.stdout.close()


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    folder = tmp_path_factory.mktemp("refwallet")
    with serving(folder / "wallet.sqlite", folder / "wallet.log") as (server, process):
        yield server
        server.call("/admin/faults", method="DELETE")
    assert process.returncode == 0


def wait_for_answer(live: Live, transaction_id: str, attempts: int) -> list[dict[str, Any]]:
    """The request log of ``transaction_id`` once its ``attempts`` requests are all answered."""
    deadline = time.monotonic() + 5
    while True:
        log = live.requests(transaction_id)
        if len(log) >= attempts and all(r["http_status"] is not None for r in log):
            return log
        assert time.monotonic() < deadline, f"{transaction_id} never answered: {log}"
        time.sleep(0.02)


def test_the_process_serves_stops_on_sigterm_and_keeps_its_books(tmp_path: Path) -> None:
    db = tmp_path / "books" / "wallet.sqlite"  # the parent folder is created
    debit = tx("debit", "d1", player="p1", amount=250)
    log = tmp_path / "wallet.log"
    with serving(db, log, OLD_SECRET, SECRET) as (server, process):
        assert server.call("/admin/health", method="GET") == (200, {"status": "ok"})
        server.player("p1", 1000)
        assert server.call("/debit", debit) == (200, {"status": "ok", "balance": 750})
        assert server.call("/debit", debit, signed=False) == (401, {"status": "bad_signature"})
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
    with serving(db, log) as (server, process):
        assert server.balance("p1") == 750
        assert server.call("/debit", debit)[1] == {"status": "already_processed", "balance": 750}
    assert process.returncode == 0


def test_the_secrets_come_from_a_file_never_from_the_command_line(tmp_path: Path) -> None:
    """``--secret-file``: one secret a line (both accepted during a rotation), and nothing
    of them in the process's command line, which every user of the machine can read."""
    secret_file = tmp_path / "secrets"
    secret_file.write_text(f"{OLD_SECRET}\n\n{SECRET}\n")
    secret_file.chmod(0o600)
    debit = tx("debit", "d1", player="p1", amount=100)
    with serving(tmp_path / "wallet.sqlite", tmp_path / "wallet.log", secret_file=secret_file) as (
        server,
        process,
    ):
        command_line = Path(f"/proc/{process.pid}/cmdline").read_bytes().decode()
        assert "whsec_" not in command_line and str(secret_file) in command_line
        server.player("p1", 1000)
        assert server.call("/debit", debit, secret=OLD_SECRET) == (
            200,
            {"status": "ok", "balance": 900},
        )
        assert server.call("/debit", debit)[1]["status"] == "already_processed"
        wrong = server.call("/debit", tx("debit", "d2", player="p1"), secret="whsec_someone_else")
        assert wrong == (401, {"status": "bad_signature"})


@pytest.mark.parametrize(
    "argv, environment, said",
    [
        (["--secret", "whsec_on_the_command_line"], SECRET, "REFWALLET_SECRET"),
        ([], None, "REFWALLET_SECRET"),
        ([], " , ", "no signing secret"),
        (["--secret-file", "{empty}"], SECRET, "no signing secret in"),
        (["--secret-file", "{missing}"], SECRET, "No such file"),
    ],
)
def test_a_secret_on_the_command_line_or_none_at_all_is_refused(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    environment: str | None,
    said: str,
) -> None:
    (tmp_path / "empty").write_text("\n")
    argv = [a.format(empty=tmp_path / "empty", missing=tmp_path / "missing") for a in argv]
    if environment is None:
        monkeypatch.delenv(SECRET_ENV, raising=False)
    else:
        monkeypatch.setenv(SECRET_ENV, environment)
    db = tmp_path / "wallet.sqlite"
    try:
        status = refwallet_main(["serve", "--port", "0", "--db", str(db), *argv])
    except SystemExit as exc:  # argparse
        status = exc.code if isinstance(exc.code, int) else 2
    err = capsys.readouterr().err
    assert status == 2 and said in err, err
    assert "whsec_on_the_command_line" not in err  # a refused secret is not echoed
    assert not db.exists()


def test_timeout_after_apply_applies_once_and_the_retry_is_already_processed(live: Live) -> None:
    player, debit_id = new_id("p"), new_id("d")
    live.player(player, 1000)
    live.faults({"kinds": ["debit"], "fault": "timeout_after_apply", "seconds": 0.3})
    debit = tx("debit", debit_id, player=player, amount=100)
    assert live.times_out("/debit", debit)
    wait_for_answer(live, debit_id, 1)  # decided (and logged) before the deliberate wait
    assert live.balance(player) == 900  # applied although the caller never heard
    assert live.call("/debit", debit) == (200, {"status": "already_processed", "balance": 900})
    log = wait_for_answer(live, debit_id, 2)
    assert [(r["answer"], r["outcome"], r["applied"]) for r in log] == [
        ("dropped", "ok", True),
        ("already_processed", "already_processed", False),
    ]


def test_timeout_before_apply_applies_nothing(live: Live) -> None:
    player, debit_id = new_id("p"), new_id("d")
    live.player(player, 1000)
    live.faults({"kinds": ["debit"], "fault": "timeout_before_apply", "seconds": 0.3})
    debit = tx("debit", debit_id, player=player, amount=100)
    assert live.times_out("/debit", debit)
    first = wait_for_answer(live, debit_id, 1)
    assert [(r["http_status"], r["answer"], r["applied"]) for r in first] == [
        (503, "dropped", False)
    ]
    assert live.balance(player) == 1000
    assert live.call("/debit", debit) == (200, {"status": "ok", "balance": 900})


def test_a_delayed_debit_overtaken_by_its_rollback_is_never_applied(live: Live) -> None:
    player, debit_id = new_id("p"), new_id("d")
    live.player(player, 1000)
    live.faults({"kinds": ["debit"], "fault": "delay_apply", "seconds": 1.0})
    debit = tx("debit", debit_id, player=player, amount=100)
    assert live.times_out("/debit", debit)
    # The caller gives up and cancels; the rollback arrives while the debit is still delayed.
    assert live.call("/rollback", rollback_of(debit)) == (200, {"status": "ok", "balance": 1000})
    log = wait_for_answer(live, debit_id, 1)
    assert [(r["http_status"], r["outcome"], r["fault"]) for r in log] == [
        (409, "transaction_rolled_back", "delay_apply")
    ]
    assert live.balance(player) == 1000
    states = {row["transaction_id"]: row["state"] for row in live.transactions(player)}
    assert states[debit_id] == "tombstone"


@pytest.mark.timing
def test_a_deliberately_slow_answer_does_not_hold_other_requests(live: Live) -> None:
    slow, fast = new_id("p"), new_id("p")
    live.player(slow, 1000)
    live.player(fast, 1000)
    live.faults({"kinds": ["debit"], "fault": "timeout_after_apply", "seconds": 3.0})
    slow_id = new_id("d")
    assert live.times_out("/debit", tx("debit", slow_id, player=slow))
    wait_for_answer(live, slow_id, 1)  # applied; now sleeping for 3 s before answering
    started = time.monotonic()
    assert live.call("/debit", tx("debit", new_id("d"), player=fast))[1]["status"] == "ok"
    assert time.monotonic() - started < 1.5  # the slow one still sleeps, outside the lock


def _race(live: Live, bodies: list[dict[str, Any]]) -> list[str]:
    """Send ``bodies`` from one thread each, released together; the statuses answered."""
    barrier = threading.Barrier(len(bodies))
    statuses: list[str] = [""] * len(bodies)

    def send(index: int) -> None:
        barrier.wait()
        statuses[index] = live.call("/debit", bodies[index])[1]["status"]

    threads = [threading.Thread(target=send, args=(i,)) for i in range(len(bodies))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=20)
    return statuses


def test_ten_concurrent_debits_never_overdraw(live: Live) -> None:
    player = new_id("p")
    live.player(player, 1000)
    bodies = [
        tx("debit", new_id("d"), player=player, amount=150, round_id=new_id("r")) for _ in range(10)
    ]
    statuses = _race(live, bodies)
    assert sorted(statuses) == ["insufficient_funds"] * 4 + ["ok"] * 6
    applied = [row for row in live.transactions(player) if row["state"] == "applied"]
    assert len(applied) == 6
    assert live.balance(player) == 1000 - sum(row["amount"] for row in applied) == 100


def test_ten_concurrent_copies_of_one_debit_apply_once(live: Live) -> None:
    player = new_id("p")
    live.player(player, 1000)
    debit = tx("debit", new_id("d"), player=player, amount=100)
    statuses = _race(live, [debit] * 10)
    assert sorted(statuses) == ["already_processed"] * 9 + ["ok"]
    assert live.balance(player) == 900
