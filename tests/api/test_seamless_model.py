"""Seamless wallets under random programs: players sit down, leave and resign at two tables
while the operator's wallet fails in every way that can be told apart without waiting
(refusing unanswered, answering garbage after applying, answering garbage without applying),
on debits, credits and rollbacks alike; the sweep runs in between. Once the faults stop and
the sweep has driven everything home, the books must agree to the cent: each player's balance
at the operator moved by exactly what our ledger's clearing account for it says, no
transaction id was applied twice, every wallet call is terminal and the audit is clean.

The reference wallet runs in this process on a real socket (its sleeps made instant: a
"timeout" fault then answers at once, which is why only the faults above are drawn; the
reordering and timeout faults run for real in tests/api/test_seamless.py)."""

from __future__ import annotations

import secrets
import threading
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select
from werkzeug.serving import make_server

from refwallet import create_app
from service.clock import utcnow
from service.db.models import LedgerAccount
from service.db.wallet_models import WalletCall
from service.ledger.postings import AccountRef
from service.outbound.transport import http_sender
from service.usecases import seamless, settlement, unit_of_work
from service.usecases.audit import run_audit
from tests.api.play_clients import open_table
from tests.conftest import ApiClient, in_unit, new_operator, serving

POST = http_sender(allow_private=True)
STAKE = 500
START = 1_200  # two stakes and a bit: a third seat at once is refused for funds
FAULTS = ["error_5xx", "bad_body", "unknown_status", "timeout_before_apply"]


@pytest.fixture(scope="module")
def world(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The service (allowed to call loopback), one seamless operator, and its wallet served
    in-process with instant sleeps."""
    folder: Path = tmp_path_factory.mktemp("refwallet")
    wallet_app = create_app(
        str(folder / "wallet.sqlite"), ["whsec_placeholder"], sleep=lambda _s: None
    )
    server = make_server("127.0.0.1", 0, wallet_app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_port}"
    with serving(database_url, WEBHOOK_ALLOW_PRIVATE_NETWORKS=True) as app:
        operator_id, key = new_operator(app)
        api = ApiClient(app.test_client(), key)
        api.operator_id = operator_id  # type: ignore[attr-defined]
        made = api.put(
            "/v1/wallet-settings/EUR", {"mode": "seamless", "url": url, "timeout_ms": 2000}
        )
        assert made.status_code == 200, made.get_json()
        wallet_app.extensions["refwallet"].secrets.append(made.get_json()["secret"])
        yield app, api, wallet_app.test_client()
    server.shutdown()


ACTIONS = st.lists(
    st.one_of(
        st.tuples(st.just("join"), st.integers(0, 2), st.integers(0, 1)),
        st.tuples(st.just("leave"), st.integers(0, 2), st.integers(0, 1)),
        st.tuples(st.just("resign"), st.integers(0, 2), st.integers(0, 1)),
        st.tuples(st.just("sweep"), st.integers(0, 2), st.integers(0, 1)),
        st.tuples(
            st.just("fault"),
            st.sampled_from(["debit", "credit", "rollback"]),
            st.sampled_from(FAULTS),
        ),
    ),
    min_size=3,
    max_size=14,
)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(program=ACTIONS)
def test_any_program_of_seats_and_faults_ends_with_books_that_agree(
    world: Any, program: list[tuple[Any, ...]]
) -> None:
    app, api, wallet = world
    session = app.extensions["gin"]["sessionmaker"]()
    players = []
    for _ in range(3):
        created = api.new_player()
        wallet.put(
            f"/admin/players/{created['external_id']}", json={"currency": "EUR", "balance": START}
        )
        token = api.post(f"/v1/players/{created['id']}/tokens", {}).get_json()["token"]
        players.append((created, api.as_(token)))
    tables = [open_table(api, stake=STAKE) for _ in range(2)]
    clock = timedelta()
    try:
        for step in program:
            if step[0] == "fault":
                wallet.post(
                    "/admin/faults",
                    json={"rules": [{"kinds": [step[1]], "fault": step[2], "times": 2}]},
                )
                continue
            who, table = players[step[1]][1], tables[step[2]]
            if step[0] == "join":
                answer = who.post(f"/v1/tables/{table['id']}/seats", {}, key=secrets.token_hex(8))
                assert answer.status_code in (201, 409, 422, 503), answer.get_json()
            elif step[0] == "leave":
                answer = who.delete(f"/v1/tables/{table['id']}/seats/me", key=secrets.token_hex(8))
                assert answer.status_code in (200, 404, 409), answer.get_json()
            elif step[0] == "resign":
                answer = who.post(f"/v1/matches/{table['match_id']}/actions", {"action": "RESIGN"})
                if answer.status_code == 200:
                    in_unit(session, settlement.settle_match, table["match_id"], utcnow())
                    seamless.send_credits(session, table["match_id"], POST)
            else:
                clock += timedelta(minutes=10)
                seamless.sweep(session, POST, utcnow() + clock)
        wallet.delete("/admin/faults")
        for _ in range(6):  # past every backoff and the staleness of any debit
            clock += timedelta(hours=1)
            seamless.sweep(session, POST, utcnow() + clock)
        _books_agree(session, api, wallet, [p for p, _ in players])
    finally:
        session.close()


def _books_agree(session: Any, api: ApiClient, wallet: Any, players: list[dict[str, Any]]) -> None:
    operator_id = api.operator_id  # type: ignore[attr-defined]
    ids = [p["id"] for p in players]

    def read() -> tuple[list[WalletCall], dict[str, int]]:
        calls = list(session.scalars(select(WalletCall).where(WalletCall.player_id.in_(ids))))
        keys = {str(AccountRef.cashier_clearing(operator_id, p, "EUR")): p for p in ids}
        clearing = {
            keys[k]: b
            for k, b in session.execute(
                select(LedgerAccount.key, LedgerAccount.balance).where(LedgerAccount.key.in_(keys))
            )
        }
        return calls, clearing

    calls, clearing = unit_of_work.run(session, read)
    assert all(c.completed_at is not None for c in calls), [(c.id, c.kind, c.state) for c in calls]
    for player in players:
        held = wallet.get(f"/admin/players/{player['external_id']}").get_json()["balance"]
        assert held == START + clearing.get(player["id"], 0), player
    applied = Counter(
        t["transaction_id"]
        for t in wallet.get("/admin/transactions").get_json()["data"]
        if t["state"] != "tombstone"
    )
    assert not [tid for tid, n in applied.items() if n > 1]
    booked = {c.id for c in calls if c.state == "booked"}
    states = {
        t["transaction_id"]: t["state"]
        for t in wallet.get("/admin/transactions").get_json()["data"]
    }
    assert all(states.get(tid) == "applied" for tid in booked)  # never rolled back
    assert all(states.get(c.id) != "applied" for c in calls if c.state in ("failed", "rolled_back"))
    report = run_audit(session, operator_id=operator_id)
    assert report.ok, [str(d) for d in (report.ledger.discrepancies if report.ledger else [])]
