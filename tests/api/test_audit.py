"""The audit over HTTP: operator only, tenant-scoped, clean for honest settlements,
and a stored statement altered by hand shows up in the report."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select, text, update

from service.clock import utcnow
from service.db import make_engine
from service.db.match_models import Settlement
from service.usecases import settlement
from tests.api.play_clients import FORMATS, play_match, seated_match
from tests.conftest import ApiClient, in_unit, make_test_app, new_operator


def finished_and_settled(
    api: ApiClient, app: Any, *, resign: bool = False, **settings: Any
) -> tuple[list[ApiClient], str]:
    clients, table = seated_match(api, **settings)
    match_id: str = table["match_id"]
    if resign:
        clients[1].post(f"/v1/matches/{match_id}/actions", {"action": "RESIGN"})
    else:
        assert play_match(clients, match_id)["status"] == "finished"
    session = app.extensions["gin"]["sessionmaker"]()
    try:
        in_unit(session, settlement.settle_match, match_id, utcnow())
    finally:
        session.close()
    return clients, match_id


def test_an_honest_settlement_audits_clean(api: ApiClient, app: Any) -> None:
    _clients, match_id = finished_and_settled(api, app, **FORMATS[0])
    response = api.get(f"/v1/audit/settlements/{match_id}")
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert body["object"] == "settlement_audit" and body["match_id"] == match_id
    assert body["ok"] is True and body["discrepancies"] == [] and body["hands_replayed"] >= 1
    assert body["settlement_id"].startswith("stl_") and body["audited_at"].endswith("Z")
    _clients, resigned = finished_and_settled(api, app, resign=True, **FORMATS[2])
    assert api.get(f"/v1/audit/settlements/{resigned}").get_json()["ok"] is True


def test_the_audit_is_operator_only_and_tenant_scoped(
    api: ApiClient, other_api: ApiClient, app: Any
) -> None:
    clients, match_id = finished_and_settled(api, app, resign=True, **FORMATS[1])
    foreign = other_api.get(f"/v1/audit/settlements/{match_id}")
    assert foreign.status_code == 404 and foreign.get_json()["code"] == "not_found"
    assert foreign.headers["Content-Type"].startswith("application/problem+json")
    player = clients[0].get(f"/v1/audit/settlements/{match_id}")
    assert player.status_code == 403 and player.get_json()["code"] == "forbidden"
    assert clients[0].get("/v1/audit/ledger").status_code == 403
    assert api.as_(None).get(f"/v1/audit/settlements/{match_id}").status_code == 401
    assert api.as_(None).get("/v1/audit/ledger").status_code == 401
    assert api.get("/v1/audit/settlements/mch_nope").status_code == 404
    _clients, table = seated_match(api)  # playing, not settled
    unsettled = api.get(f"/v1/audit/settlements/{table['match_id']}")
    assert unsettled.status_code == 404
    # The ledger audit covers the caller's own books only.
    mine = api.get("/v1/audit/ledger").get_json()
    assert mine["ok"] is True and mine["operator_id"] == api.operator_id  # type: ignore[attr-defined]
    assert mine["settled_matches_checked"] == 1 and mine["transactions_checked"] >= 5
    theirs = other_api.get("/v1/audit/ledger").get_json()
    assert theirs["ok"] is True and theirs["settled_matches_checked"] == 0
    assert theirs["transactions_checked"] == 0


def test_an_altered_statement_is_reported(fresh_database_url: str) -> None:
    app = make_test_app(fresh_database_url)
    try:
        _operator_id, key = new_operator(app)
        api = ApiClient(app.test_client(), key)
        _clients, match_id = finished_and_settled(api, app, resign=True, **FORMATS[1])
        engine = make_engine(fresh_database_url)
        table = Settlement.__table__
        with engine.begin() as connection:
            if engine.dialect.name == "postgresql":
                connection.execute(text("SET LOCAL session_replication_role = replica"))
            else:
                connection.execute(text("DROP TRIGGER IF EXISTS settlements_no_update"))
            stored = connection.execute(
                select(table.c.statement, table.c.fee).where(table.c.match_id == match_id)
            ).one()
            statement = {**stored.statement, "fee": 0}
            connection.execute(
                update(table).where(table.c.match_id == match_id).values(statement=statement, fee=0)
            )
        engine.dispose()
        body = api.get(f"/v1/audit/settlements/{match_id}").get_json()
        assert body["ok"] is False
        wrong = {d["field"]: d for d in body["discrepancies"]}
        assert wrong["statement.fee"] == {
            "field": "statement.fee",
            "expected": stored.fee,
            "actual": 0,
        }
        assert wrong["settlement.fee"]["actual"] == 0
    finally:
        app.extensions["gin"]["engine"].dispose()
