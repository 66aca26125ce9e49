"""Sit-and-go knockouts over HTTP: registration with the entry held, the start when the field
is full, matches at tables the system opens, results advancing the bracket once, prizes
paid to the cent, cancellations refunded by docs/tournaments.md, and the statement."""

from __future__ import annotations

import secrets
import time
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import event, select

from service.clock import utcnow
from service.db.match_models import MatchAction, OutboxEvent
from service.db.tournament_models import Tournament, TournamentEntry
from service.errors import TournamentNotOpen
from service.usecases import play, settlement, tournaments, webhooks
from service.usecases.audit import run_audit
from service.usecases.auth import Principal
from tests.api.play_clients import player_client, wallet
from tests.conftest import ApiClient, assert_problem, in_unit

DEPOSIT = 5_000
BUY_IN, FEE = 1_000, 100


def open_tournament(api: ApiClient, **overrides: Any) -> dict[str, Any]:
    body = {
        "name": "Sunday 4",
        "format": "match_play",
        "target": 50,
        "currency": "EUR",
        "buy_in": BUY_IN,
        "fee": FEE,
        "entrants": 4,
        "payout_table": "2-5: 7000/3000",
        **overrides,
    }
    body = {key: value for key, value in body.items() if value is not None}
    response = api.post("/v1/tournaments", body)
    assert response.status_code == 201, response.get_json()
    return dict(response.get_json())


def register(client: ApiClient, tournament_id: str) -> Any:
    return client.post(f"/v1/tournaments/{tournament_id}/entries", key=secrets.token_hex(8))


def full_field(api: ApiClient, **overrides: Any) -> tuple[dict[str, Any], dict[str, ApiClient]]:
    """A tournament whose four entrants registered (so it started), and their clients by
    player id."""
    tournament = open_tournament(api, **overrides)
    clients = {}
    for _ in range(tournament["entrants"]):
        client = player_client(api, deposit=DEPOSIT, currency=tournament["currency"])
        response = register(client, tournament["id"])
        assert response.status_code == 201, response.get_json()
        clients[client.player_id] = client  # type: ignore[attr-defined]
    return response.get_json(), clients


def cancel(api: ApiClient, tournament_id: str) -> Any:
    return api.post(f"/v1/tournaments/{tournament_id}/cancel", key=secrets.token_hex(8))


def conclude(app: Any, match_id: str) -> str | None:
    """What the settlement task does when a match has finished."""
    session = app.extensions["gin"]["sessionmaker"]()
    try:
        return in_unit(session, settlement.conclude, match_id, utcnow())
    finally:
        session.close()


def resign_first_seat(
    api: ApiClient,
    app: Any,
    clients: dict[str, ApiClient],
    tournament: dict[str, Any],
    r: int,
    settle: Callable[[str], str | None] | None = None,
) -> dict[str, Any]:
    """Every match of round ``r`` is lost by its first seat's resignation; the results are
    concluded twice each (a retried task), by ``settle`` when given. The tournament after
    them."""
    players = {e["seat"]: e["player_id"] for e in tournament["entries"]}
    for pairing in tournament["rounds"][r - 1]["matches"]:
        if pairing["second_seat"] is None:  # a bye: no match
            continue
        loser = clients[players[pairing["first_seat"]]]
        answer = loser.post(f"/v1/matches/{pairing['match_id']}/actions", {"action": "RESIGN"})
        assert answer.status_code == 200, answer.get_json()
        run = settle or (lambda match_id: conclude(app, match_id))
        assert run(pairing["match_id"]) is None  # no settlement: no money moves
        assert run(pairing["match_id"]) is None  # a second run changes nothing
    return dict(api.get(f"/v1/tournaments/{tournament['id']}").get_json())


def statement_sum(api: ApiClient, tournament_id: str) -> tuple[list[dict[str, Any]], int]:
    body = api.get(f"/v1/tournaments/{tournament_id}/statement").get_json()
    total = sum(line["amount"]["amount"] for line in body["lines"])
    assert body["held"]["amount"] == total
    return body["lines"], total


def events(app: Any, tournament_id: str) -> list[str]:
    session = app.extensions["gin"]["sessionmaker"]()
    try:
        return list(
            session.scalars(
                select(OutboxEvent.type)
                .where(OutboxEvent.subject_id == tournament_id)
                .order_by(OutboxEvent.created_at, OutboxEvent.id)
            )
        )
    finally:
        session.close()


def test_a_four_entrant_knockout_is_played_and_paid_to_the_cent(
    api: ApiClient, app: Any, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    tournament, clients = full_field(api)
    assert tournament["status"] == "running" and tournament["entries_taken"] == 4
    assert tournament["server_seed"] and sorted(tournament["draw"]) == [1, 2, 3, 4]
    first_round = tournament["rounds"][0]["matches"]
    assert len(first_round) == 2 and all(m["match_id"] for m in first_round)
    for player_id in clients:  # the fee is the house's, the buy-in still held
        w = wallet(api, player_id)
        assert (w["available"]["amount"], w["held"]["amount"]) == (DEPOSIT - 1_100, BUY_IN)
    players = {e["seat"]: e["player_id"] for e in tournament["entries"]}
    for pairing in first_round:  # each entrant is seated at its match, the first seat first
        view = clients[players[pairing["first_seat"]]].get(f"/v1/matches/{pairing['match_id']}")
        assert view.status_code == 200 and view.get_json()["you"] == 0
        assert view.get_json()["status"] == "playing"

    after_one = resign_first_seat(api, app, clients, tournament, 1)
    assert [m["winner_seat"] for m in after_one["rounds"][0]["matches"]] == [
        m["second_seat"] for m in first_round
    ]
    final = after_one["rounds"][1]["matches"]
    assert len(final) == 1 and final[0]["match_id"] and final[0]["winner_seat"] is None
    assert [m["second_seat"] for m in first_round] == [
        final[0]["first_seat"],
        final[0]["second_seat"],
    ]

    # The final's result goes through the settlement task itself, as a worker runs it.
    from worker.tasks import settle_match

    monkeypatch.setenv("DATABASE_URL", database_url)
    done = resign_first_seat(
        api, app, clients, after_one, 2, lambda m: settle_match.apply(args=[m]).get()
    )
    assert done["status"] == "finished" and done["finished_at"]
    champion, runner_up = final[0]["second_seat"], final[0]["first_seat"]
    by_seat = {e["seat"]: e for e in done["entries"]}
    # A pool of 4,000 at 7000/3000: 2,800 and 1,200; the semi-finals' losers share nothing.
    assert by_seat[champion]["prize"]["amount"] == 2_800
    assert by_seat[champion]["state"] == "champion"
    assert by_seat[runner_up]["prize"]["amount"] == 1_200
    assert sorted(e["prize"]["amount"] for e in done["entries"]) == [0, 0, 1_200, 2_800]
    assert done["standings"][0] == {"seats": [champion], "first_place": 1, "last_place": 1}
    assert done["standings"][-1]["first_place"] == 3 and done["standings"][-1]["last_place"] == 4
    for entry in done["entries"]:
        w = wallet(api, entry["player_id"])
        assert w["held"]["amount"] == 0
        assert w["available"]["amount"] == DEPOSIT - 1_100 + entry["prize"]["amount"]

    lines, total = statement_sum(api, done["id"])
    assert total == 0
    kinds = [line["kind"] for line in lines]
    assert kinds.count("entry") == 4 and kinds.count("fee") == 1 and kinds.count("prize") == 2
    assert next(line for line in lines if line["kind"] == "fee")["amount"]["amount"] == -400
    audit = api.get("/v1/audit/ledger").get_json()
    assert audit["ok"] is True, audit
    recomputed = api.get(f"/v1/audit/tournaments/{done['id']}").get_json()
    assert recomputed["ok"] is True and recomputed["matches_checked"] == 3, recomputed
    assert events(app, done["id"]) == ["tournament.started", "tournament.finished"]
    # A finished match of the bracket concluded once more changes nothing.
    assert conclude(app, final[0]["match_id"]) is None
    assert api.get(f"/v1/tournaments/{done['id']}").get_json() == done


def test_the_registration_that_starts_a_knockout_writes_its_round_in_few_statements(
    api: ApiClient, app: Any
) -> None:
    """The start reads every entrant's row once and writes round 1's tables, seats and
    matches in one statement each, however many matches the round has (docs/performance.md,
    the registration figures)."""
    tournament = open_tournament(api, entrants=8, payout_table="2-9: 10000")
    clients = [player_client(api, deposit=DEPOSIT) for _ in range(8)]
    for client in clients[:7]:
        assert register(client, tournament["id"]).status_code == 201
    statements: list[str] = []

    def seen(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        statements.append(" ".join(statement.split())[:40])

    engine = app.extensions["gin"]["engine"]
    event.listen(engine, "before_cursor_execute", seen)
    try:
        started = register(clients[7], tournament["id"])
    finally:
        event.remove(engine, "before_cursor_execute", seen)
    assert started.status_code == 201 and started.get_json()["status"] == "running"
    assert len(started.get_json()["rounds"][0]["matches"]) == 4
    counted = Counter(s.split(" (")[0] for s in statements if s.startswith("INSERT INTO"))
    assert counted["INSERT INTO game_tables"] == 1
    assert counted["INSERT INTO seats"] == 1
    assert counted["INSERT INTO matches"] == 1
    players_read = [s for s in statements if s.startswith("SELECT players.id")]
    assert len(players_read) <= 2  # the registrant's token check, then the field at once
    entries_read = [s for s in statements if s.startswith("SELECT tournament_entries.")]
    assert len(entries_read) == 1


def test_unregistering_before_the_start_releases_the_entry(api: ApiClient) -> None:
    tournament = open_tournament(api)
    client = player_client(api, deposit=DEPOSIT)
    player_id = client.player_id  # type: ignore[attr-defined]
    assert register(client, tournament["id"]).status_code == 201
    assert wallet(api, player_id)["available"]["amount"] == DEPOSIT - 1_100
    path = f"/v1/tournaments/{tournament['id']}/entries/me"
    response = client.delete(path, key=secrets.token_hex(8))
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["entries"] == []
    w = wallet(api, player_id)
    assert (w["available"]["amount"], w["held"]["amount"]) == (DEPOSIT, 0)
    assert_problem(client.delete(path, key=secrets.token_hex(8)), 404, "not_found")
    again = register(client, tournament["id"])  # registering again is a new entry
    assert again.status_code == 201 and again.get_json()["entries_taken"] == 1
    lines, total = statement_sum(api, tournament["id"])
    assert [line["kind"] for line in lines] == ["entry", "refund", "entry"] and total == 1_100


def test_cancelling_before_any_match_finished_refunds_every_entry_in_full(
    api: ApiClient, app: Any
) -> None:
    endpoint = api.post(
        "/v1/webhook-endpoints",
        {
            "url": "https://receiver.example/gin",
            "event_types": ["tournament.started", "tournament.cancelled"],
        },
    )
    assert endpoint.status_code == 201, endpoint.get_json()
    tournament, clients = full_field(api)
    match_ids = [p["match_id"] for p in tournament["rounds"][0]["matches"]]
    versions = {m: api.get(f"/v1/matches/{m}").get_json()["version"] for m in match_ids}
    path = f"/v1/tournaments/{tournament['id']}/cancel"
    response = api.post(path, key="cancel-once")
    assert response.status_code == 200, response.get_json()
    cancelled = response.get_json()
    replay = api.post(path, key="cancel-once")  # a retry is answered the same, nothing moves
    assert replay.headers["Idempotent-Replayed"] == "true" and replay.get_json() == cancelled
    assert cancelled["status"] == "cancelled"
    assert {e["state"] for e in cancelled["entries"]} == {"refunded"}
    for player_id in clients:
        w = wallet(api, player_id)
        assert (w["available"]["amount"], w["held"]["amount"]) == (DEPOSIT, 0)
    lines, total = statement_sum(api, tournament["id"])
    assert total == 0 and [line["kind"] for line in lines].count("fee_returned") == 1
    for match_id, version in versions.items():  # its matches end, unplayed, as a new version
        started = time.monotonic()
        view = api.get(f"/v1/matches/{match_id}?wait_for_version={version}&timeout=20")
        assert time.monotonic() - started < 5  # a client waiting on the version wakes at once
        assert view.get_json()["status"] == "cancelled"
        assert view.get_json()["version"] == version + 1
    session = app.extensions["gin"]["sessionmaker"]()
    try:
        logged = session.execute(
            select(MatchAction.match_id, MatchAction.version, MatchAction.actor).where(
                MatchAction.match_id.in_(match_ids), MatchAction.action == "CANCEL"
            )
        ).all()
    finally:
        session.close()
    assert sorted(logged) == sorted((m, v + 1, "system") for m, v in versions.items())
    assert api.get("/v1/audit/ledger").get_json()["ok"] is True
    assert api.get(f"/v1/audit/tournaments/{tournament['id']}").get_json()["ok"] is True
    assert events(app, tournament["id"]) == ["tournament.started", "tournament.cancelled"]
    assert_problem(cancel(api, tournament["id"]), 409, "tournament_not_open")
    # The events go to the operator's endpoint that asked for them, as any event does.
    session = app.extensions["gin"]["sessionmaker"]()
    try:
        with session.begin():
            ids = session.scalars(
                select(OutboxEvent.id).where(OutboxEvent.subject_id == tournament["id"])
            ).all()
        for event_id in ids:
            assert len(in_unit(session, webhooks.fan_out, event_id, utcnow())) == 1
    finally:
        session.close()
    log = api.get(f"/v1/webhook-endpoints/{endpoint.get_json()['id']}/deliveries").get_json()
    assert sorted(d["event_type"] for d in log["data"]) == [
        "tournament.cancelled",
        "tournament.started",
    ]


def test_cancelling_after_a_match_finished_pays_the_pool_by_standing(
    api: ApiClient, app: Any
) -> None:
    tournament, clients = full_field(api)
    players = {e["seat"]: e["player_id"] for e in tournament["entries"]}
    first, second = tournament["rounds"][0]["matches"]
    loser = clients[players[first["first_seat"]]]
    resigned = loser.post(f"/v1/matches/{first['match_id']}/actions", {"action": "RESIGN"})
    assert resigned.status_code == 200
    # Cancelled before the result was recorded: the cancellation records it.
    cancelled = cancel(api, tournament["id"]).get_json()
    assert conclude(app, first["match_id"]) is None
    prizes = {e["seat"]: e["prize"]["amount"] for e in cancelled["entries"]}
    # Pool 4,000 at 7000/3000: the semi-final's winner is first (2,800); the two still
    # playing share places 2-3 (1,200 + 0): 600 each; the loser is fourth, unpaid.
    assert prizes == {
        first["second_seat"]: 2_800,
        second["first_seat"]: 600,
        second["second_seat"]: 600,
        first["first_seat"]: 0,
    }
    assert statement_sum(api, tournament["id"])[1] == 0
    assert api.get("/v1/audit/ledger").get_json()["ok"] is True
    assert api.get(f"/v1/audit/tournaments/{tournament['id']}").get_json()["ok"] is True


def test_refusals_name_what_is_wrong(api: ApiClient) -> None:
    base = {"format": "match_play", "currency": "EUR", "buy_in": 1_000, "entrants": 4}
    bad_table = assert_problem(
        api.post("/v1/tournaments", {**base, "payout_table": "2-5: 6000/3000"}),
        422,
        "validation_failed",
    )
    assert [e["field"] for e in bad_table["errors"]] == ["payout_table"]
    no_band = assert_problem(
        api.post("/v1/tournaments", {**base, "entrants": 8, "payout_table": "2-5: 10000"}),
        422,
        "validation_failed",
    )
    assert [e["field"] for e in no_band["errors"]] == ["payout_table"]
    six = assert_problem(
        api.post("/v1/tournaments", {**base, "entrants": 6}), 422, "validation_failed"
    )
    assert [e["field"] for e in six["errors"]] == ["entrants"]
    play_money = assert_problem(
        api.post("/v1/tournaments", {**base, "currency": "XPM"}), 422, "validation_failed"
    )
    assert [e["field"] for e in play_money["errors"]] == ["currency"]

    tournament = open_tournament(api)
    poor = player_client(api, deposit=1_099)
    assert_problem(register(poor, tournament["id"]), 422, "insufficient_funds")
    assert wallet(api, poor.player_id)["available"]["amount"] == 1_099  # type: ignore[attr-defined]
    rich = player_client(api, deposit=DEPOSIT)
    assert register(rich, tournament["id"]).status_code == 201
    assert_problem(register(rich, tournament["id"]), 409, "already_registered")
    assert_problem(register(api, tournament["id"]), 403, "forbidden")  # an operator key
    assert_problem(
        rich.post(f"/v1/tournaments/{tournament['id']}/entries"), 400, "idempotency_key_required"
    )


def test_no_registration_or_unregistration_after_the_start(api: ApiClient) -> None:
    tournament, clients = full_field(api)
    late = player_client(api, deposit=DEPOSIT)
    assert_problem(register(late, tournament["id"]), 409, "tournament_not_open")
    assert wallet(api, late.player_id)["available"]["amount"] == DEPOSIT  # type: ignore[attr-defined]
    entrant = next(iter(clients.values()))
    path = f"/v1/tournaments/{tournament['id']}/entries/me"
    assert_problem(entrant.delete(path, key=secrets.token_hex(8)), 409, "tournament_not_open")


def test_the_lobby_filters_by_status_and_currency(api: ApiClient, other_api: ApiClient) -> None:
    open_one = open_tournament(api)
    running, _ = full_field(api, currency="USD")
    mine = api.get("/v1/tournaments").get_json()["data"]
    assert [t["id"] for t in mine] == [running["id"], open_one["id"]]
    assert [t["id"] for t in api.get("/v1/tournaments?status=open").get_json()["data"]] == [
        open_one["id"]
    ]
    usd = api.get("/v1/tournaments?currency=USD").get_json()["data"]
    assert [t["id"] for t in usd] == [running["id"]]
    assert other_api.get("/v1/tournaments").get_json()["data"] == []
    assert_problem(other_api.get(f"/v1/tournaments/{open_one['id']}"), 404, "not_found")
    assert open_one["server_seed"] is None and len(open_one["commitment"]) == 64


def test_self_exclusion_refuses_registration_and_withdraws_an_open_entry(
    api: ApiClient,
) -> None:
    tournament = open_tournament(api)
    excluded = player_client(api, deposit=DEPOSIT)
    entrant = player_client(api, deposit=DEPOSIT)
    assert register(entrant, tournament["id"]).status_code == 201
    until = (utcnow() + timedelta(days=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
    for client in (excluded, entrant):
        path = f"/v1/players/{client.player_id}/self-exclusion"  # type: ignore[attr-defined]
        assert api.put(path, {"until": until}).status_code == 200
    assert_problem(register(excluded, tournament["id"]), 422, "self_excluded")
    # The entrant's entry is released, as at a table that has not started.
    after = api.get(f"/v1/tournaments/{tournament['id']}").get_json()
    assert after["entries"] == [] and after["entries_taken"] == 0
    w = wallet(api, entrant.player_id)  # type: ignore[attr-defined]
    assert (w["available"]["amount"], w["held"]["amount"]) == (DEPOSIT, 0)
    assert statement_sum(api, tournament["id"])[1] == 0


def test_a_practice_tournament_plays_for_play_money(api: ApiClient) -> None:
    tournament, clients = full_field(api, currency="XPM", practice=True)
    assert tournament["practice"] is True and tournament["status"] == "running"
    for player_id in clients:
        assert wallet(api, player_id, "XPM")["held"]["amount"] == BUY_IN
    assert_problem(
        api.post(
            "/v1/tournaments",
            {
                "format": "match_play",
                "currency": "EUR",
                "buy_in": 10,
                "entrants": 4,
                "practice": True,
            },
        ),
        422,
        "validation_failed",
    )


def test_a_player_who_lets_the_clock_run_out_forfeits_and_the_other_advances(
    api: ApiClient, app: Any
) -> None:
    clock = {"turn_seconds": 5, "bank_seconds": 0, "on_timeout": "FORFEIT"}
    tournament, _ = full_field(api, clock=clock)
    pairing = tournament["rounds"][0]["matches"][0]
    session = app.extensions["gin"]["sessionmaker"]()
    try:
        later = utcnow() + timedelta(seconds=60)
        assert play.time_out(session, pairing["match_id"], later)
    finally:
        session.close()
    view = api.get(f"/v1/matches/{pairing['match_id']}").get_json()
    assert view["status"] == "finished"
    # A result whose task was lost (a broker outage) is found by the settlement sweep.
    session = app.extensions["gin"]["sessionmaker"]()
    try:
        swept = in_unit(session, settlement.unsettled_finished_matches, limit=10_000)
        assert pairing["match_id"] in swept
        conclude(app, pairing["match_id"])
        swept = in_unit(session, settlement.unsettled_finished_matches, limit=10_000)
        assert pairing["match_id"] not in swept
    finally:
        session.close()
    after = api.get(f"/v1/tournaments/{tournament['id']}").get_json()
    winner = after["rounds"][0]["matches"][0]["winner_seat"]
    assert winner in (pairing["first_seat"], pairing["second_seat"])
    loser = pairing["first_seat"] if winner == pairing["second_seat"] else pairing["second_seat"]
    states = {e["seat"]: e["state"] for e in after["entries"]}
    assert (states[winner], states[loser]) == ("playing", "knocked_out")


def test_an_unfilled_sit_and_go_is_cancelled_at_its_deadline_and_refunded(
    api: ApiClient, app: Any
) -> None:
    tournament = open_tournament(api, registration_seconds=60)
    client = player_client(api, deposit=DEPOSIT)
    assert register(client, tournament["id"]).status_code == 201
    session = app.extensions["gin"]["sessionmaker"]()
    try:
        assert tournaments.start_or_cancel_due(session, utcnow()) == 0  # not yet
        later = utcnow() + timedelta(seconds=61)
        late = Principal(api.operator_id, player_client(api).player_id)  # type: ignore[attr-defined]
        with pytest.raises(TournamentNotOpen):  # registration closed at the deadline
            in_unit(session, tournaments.register, late, tournament["id"], later)
        assert tournaments.start_or_cancel_due(session, later) >= 1
        assert tournaments.start_or_cancel_due(session, later) == 0  # once
    finally:
        session.close()
    after = api.get(f"/v1/tournaments/{tournament['id']}").get_json()
    assert after["status"] == "cancelled" and after["entries"][0]["state"] == "refunded"
    w = wallet(api, client.player_id)  # type: ignore[attr-defined]
    assert (w["available"]["amount"], w["held"]["amount"]) == (DEPOSIT, 0)
    assert statement_sum(api, tournament["id"])[1] == 0
    assert events(app, tournament["id"]) == ["tournament.cancelled"]


def test_the_audit_recomputes_the_draw_the_bracket_and_the_prizes(api: ApiClient, app: Any) -> None:
    tournament, clients = full_field(api)
    done = resign_first_seat(api, app, clients, tournament, 1)
    done = resign_first_seat(api, app, clients, done, 2)
    path = f"/v1/audit/tournaments/{done['id']}"
    assert api.get(path).get_json()["ok"] is True
    session = app.extensions["gin"]["sessionmaker"]()
    try:
        clean = run_audit(session, operator_id=api.operator_id)  # type: ignore[attr-defined]
        assert clean.ok and clean.to_dict()["tournaments_checked"] == 1
        with session.begin():  # tamper: the draw, a recorded winner, a prize
            row = session.get(Tournament, done["id"])
            assert row is not None and row.draw is not None and row.bracket is not None
            row.draw = list(reversed(row.draw))
            bracket = [[dict(p) for p in pairings] for pairings in row.bracket]
            pairing = bracket[0][0]
            pairing["winner"] = pairing["first"]
            row.bracket = bracket
            entry = session.scalars(
                select(TournamentEntry).where(
                    TournamentEntry.tournament_id == done["id"],
                    TournamentEntry.prize > 0,
                )
            ).first()
            assert entry is not None
            entry.prize += 1
        tampered = run_audit(session, operator_id=api.operator_id)  # type: ignore[attr-defined]
        assert not tampered.ok and tampered.to_dict()["tournaments_failed"] == 1
    finally:
        session.close()
    report = api.get(path).get_json()
    fields = {d["field"] for d in report["discrepancies"]}
    assert report["ok"] is False
    assert {"draw", "rounds[1].matches[1].winner", f"entries[{entry.seat}].prize"} <= fields


# --- single tables ----------------------------------------------------------------------


def seated(tournament: dict[str, Any], clients: dict[str, ApiClient]) -> list[ApiClient]:
    """The entrants' clients in table seat order (0 up)."""
    players = {e["seat"]: e["player_id"] for e in tournament["entries"]}
    return [clients[players[seat]] for seat in tournament["table"]["seats"]]


def resign(client: ApiClient, match_id: str) -> None:
    answer = client.post(f"/v1/matches/{match_id}/actions", {"action": "RESIGN"})
    assert answer.status_code == 200, answer.get_json()


def test_a_three_player_gin_table_is_played_and_its_tie_paid_to_the_cent(
    api: ApiClient, app: Any
) -> None:
    tournament, clients = full_field(
        api,
        name="Gin for three",
        kind="single_table",
        game="gin_three",
        format="match_play",
        target=50,
        buy_in=1_001,
        entrants=None,  # the game's seat count
    )
    assert tournament["status"] == "running" and tournament["entrants"] == 3
    assert tournament["rounds"] == [] and sorted(tournament["table"]["seats"]) == [1, 2, 3]
    assert tournament["table"]["seats"] == tournament["draw"]
    match_id = tournament["table"]["match_id"]
    at_table = seated(tournament, clients)
    for place, client in enumerate(at_table):  # each entrant sits where the draw put it
        view = client.get(f"/v1/matches/{match_id}").get_json()
        assert view["you"] == place and view["game"] == "gin_three"
    # Table seat 1 resigns before a hand is won: the other two tie for the pot.
    resign(at_table[1], match_id)
    assert conclude(app, match_id) is None and conclude(app, match_id) is None
    done = api.get(f"/v1/tournaments/{tournament['id']}").get_json()
    assert done["status"] == "finished"
    forfeiter = tournament["table"]["seats"][1]
    tied = sorted(s for s in tournament["table"]["seats"] if s != forfeiter)
    assert done["standings"] == [
        {"seats": tied, "first_place": 1, "last_place": 2},
        {"seats": [forfeiter], "first_place": 3, "last_place": 3},
    ]
    # A pool of 3,003 at 7000/3000 pays 2,103 and 900: the tied two share 3,003, the odd
    # unit to the lower seat; the forfeiter is unpaid.
    by_seat = {e["seat"]: e for e in done["entries"]}
    assert by_seat[tied[0]]["prize"]["amount"] == 1_502
    assert by_seat[tied[1]]["prize"]["amount"] == 1_501
    assert by_seat[forfeiter]["prize"]["amount"] == 0
    assert {by_seat[s]["state"] for s in tied} == {"champion"}
    assert by_seat[forfeiter]["state"] == "placed"
    for entry in done["entries"]:
        w = wallet(api, entry["player_id"])
        assert w["held"]["amount"] == 0
        assert w["available"]["amount"] == DEPOSIT - 1_101 + entry["prize"]["amount"]
    lines, total = statement_sum(api, done["id"])
    assert total == 0 and [line["kind"] for line in lines].count("prize") == 2
    assert next(line for line in lines if line["kind"] == "fee")["amount"]["amount"] == -300
    recomputed = api.get(f"/v1/audit/tournaments/{done['id']}").get_json()
    assert recomputed["ok"] is True and recomputed["matches_checked"] == 1, recomputed
    assert events(app, done["id"]) == ["tournament.started", "tournament.finished"]
    session = app.extensions["gin"]["sessionmaker"]()
    try:
        with session.begin():  # tamper: the places recorded
            row = session.get(Tournament, done["id"])
            assert row is not None and row.bracket is not None
            [[table]] = row.bracket
            row.bracket = [[{**table, "places": [[forfeiter], tied]}]]
    finally:
        session.close()
    report = api.get(f"/v1/audit/tournaments/{done['id']}").get_json()
    assert report["ok"] is False
    assert "table.places" in {d["field"] for d in report["discrepancies"]}


def test_a_rummy_table_of_three_places_its_forfeiters_last_the_later_one_higher(
    api: ApiClient, app: Any
) -> None:
    tournament, clients = full_field(
        api,
        name="Rummy for three",
        kind="single_table",
        game="rummy",
        seat_count=3,
        format="rummy_target",
        target=100,
        entrants=3,
        payout_table="3-6: 5000/3000/2000",
    )
    match_id = tournament["table"]["match_id"]
    seats = tournament["table"]["seats"]
    at_table = seated(tournament, clients)
    resign(at_table[1], match_id)  # table seat 1 first, then table seat 0: seat 2 wins
    resign(at_table[0], match_id)
    view = api.get(f"/v1/matches/{match_id}").get_json()
    assert view["status"] == "finished"
    assert conclude(app, match_id) is None
    done = api.get(f"/v1/tournaments/{tournament['id']}").get_json()
    assert done["status"] == "finished"
    # The later forfeit (table seat 0) above the earlier, whatever their cards counted.
    assert [s["seats"] for s in done["standings"]] == [[seats[2]], [seats[0]], [seats[1]]]
    prizes = {e["seat"]: e["prize"]["amount"] for e in done["entries"]}
    # A pool of 3,000 at 5000/3000/2000.
    assert prizes == {seats[2]: 1_500, seats[0]: 900, seats[1]: 600}
    assert statement_sum(api, done["id"])[1] == 0
    assert api.get("/v1/audit/ledger").get_json()["ok"] is True
    assert api.get(f"/v1/audit/tournaments/{done['id']}").get_json()["ok"] is True


def test_a_single_table_cancelled_while_its_match_is_played_refunds_every_entry(
    api: ApiClient, app: Any
) -> None:
    tournament, clients = full_field(
        api, kind="single_table", game="gin_partnership", format="match_play", entrants=4
    )
    match_id = tournament["table"]["match_id"]
    cancelled = cancel(api, tournament["id"]).get_json()
    assert cancelled["status"] == "cancelled"
    assert {e["state"] for e in cancelled["entries"]} == {"refunded"}
    assert api.get(f"/v1/matches/{match_id}").get_json()["status"] == "cancelled"
    for player_id in clients:
        w = wallet(api, player_id)
        assert (w["available"]["amount"], w["held"]["amount"]) == (DEPOSIT, 0)
    assert statement_sum(api, tournament["id"])[1] == 0
    assert api.get(f"/v1/audit/tournaments/{tournament['id']}").get_json()["ok"] is True


def test_a_single_table_cancelled_after_its_match_ended_pays_by_its_places(
    api: ApiClient, app: Any
) -> None:
    tournament, clients = full_field(
        api, kind="single_table", game="gin_three", format="match_play", entrants=None
    )
    match_id = tournament["table"]["match_id"]
    resign(seated(tournament, clients)[0], match_id)
    # Cancelled before the result was recorded: the cancellation records it and pays.
    cancelled = cancel(api, tournament["id"]).get_json()
    assert conclude(app, match_id) is None
    forfeiter = tournament["table"]["seats"][0]
    prizes = {e["seat"]: e["prize"]["amount"] for e in cancelled["entries"]}
    # A pool of 3,000 at 7000/3000 (2,100 + 900), shared by the two still in: 1,500 each.
    assert prizes == {seat: 0 if seat == forfeiter else 1_500 for seat in (1, 2, 3)}
    assert cancelled["status"] == "cancelled"
    assert statement_sum(api, tournament["id"])[1] == 0
    assert api.get(f"/v1/audit/tournaments/{tournament['id']}").get_json()["ok"] is True


def test_single_table_refusals_name_the_field(api: ApiClient) -> None:
    base = {"kind": "single_table", "currency": "EUR", "buy_in": 100}
    cases = [
        ({"game": "gin", "format": "match_play", "entrants": 4}, "game"),
        ({"game": "gin_three", "format": "classic"}, "format"),
        ({"game": "gin_three", "format": "match_play", "entrants": 4}, "entrants"),
        ({"game": "rummy", "format": "rummy_target"}, "seat_count"),
        # A sit-and-go starts with its field full.
        ({"game": "gin", "format": "match_play", "entrants": 4, "min_entrants": 3}, "min_entrants"),
        ({"game": "gin", "format": "match_play", "entrants": 4, "kind": "knockout"}, "game"),
    ]
    for extra, field in cases:
        response = api.post("/v1/tournaments", {**base, **extra})
        if extra.get("kind") == "knockout":  # the control: a knockout plays two-player Gin
            assert response.status_code == 201, response.get_json()
            continue
        problem = assert_problem(response, 422, "validation_failed")
        assert field in [e["field"] for e in problem["errors"]], (extra, problem)


# --- scheduled tournaments -----------------------------------------------------------------


def sweep(app: Any, now: Any) -> int:
    """What the beat task does at ``now``."""
    session = app.extensions["gin"]["sessionmaker"]()
    try:
        return tournaments.start_or_cancel_due(session, now)
    finally:
        session.close()


def scheduled(api: ApiClient, count: int, **overrides: Any) -> tuple[dict[str, Any], Any]:
    """A tournament scheduled a minute ahead with ``count`` entrants registered, and its
    start."""
    starts_at = (utcnow() + timedelta(seconds=60)).replace(microsecond=0)
    tournament = open_tournament(
        api, starts_at=starts_at.strftime("%Y-%m-%dT%H:%M:%SZ"), **overrides
    )
    assert tournament["starts_at"] == starts_at.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert tournament["registration_deadline"] == tournament["starts_at"]
    for _ in range(count):
        client = player_client(api, deposit=DEPOSIT)
        assert register(client, tournament["id"]).status_code == 201
    return api.get(f"/v1/tournaments/{tournament['id']}").get_json(), starts_at


def test_a_scheduled_rummy_table_starts_at_its_time_with_the_entrants_it_has(
    api: ApiClient, app: Any
) -> None:
    tournament, starts_at = scheduled(
        api,
        3,
        kind="single_table",
        game="rummy",
        seat_count=4,
        format="rummy_deals",
        target=2,
        entrants=None,
        min_entrants=3,
        payout_table="2-6: 10000",
    )
    assert (tournament["entrants"], tournament["min_entrants"]) == (4, 3)
    assert tournament["status"] == "open" and tournament["entries_taken"] == 3
    assert sweep(app, starts_at - timedelta(seconds=1)) == 0  # not yet
    assert sweep(app, starts_at) >= 1
    assert sweep(app, starts_at) == 0  # once
    started = api.get(f"/v1/tournaments/{tournament['id']}").get_json()
    assert started["status"] == "running" and started["prize_pool"]["amount"] == 3 * BUY_IN
    match = api.get(f"/v1/matches/{started['table']['match_id']}").get_json()
    assert len(match["seats"]) == 3 and match["status"] == "playing"
    late = player_client(api, deposit=DEPOSIT)
    assert_problem(register(late, tournament["id"]), 409, "tournament_not_open")
    assert events(app, tournament["id"]) == ["tournament.started"]
    assert api.get(f"/v1/audit/tournaments/{tournament['id']}").get_json()["ok"] is True


def test_a_scheduled_tournament_short_of_a_field_it_may_start_with_is_cancelled(
    api: ApiClient, app: Any
) -> None:
    # A knockout of up to 8 from 5, with 4 registered.
    knockout, starts_at = scheduled(api, 4, entrants=8, min_entrants=5, payout_table="2-9: 10000")
    # A Rummy table of up to 4 from 3, with 2 registered.
    table, later = scheduled(
        api,
        2,
        kind="single_table",
        game="rummy",
        seat_count=4,
        format="rummy_target",
        entrants=None,
        min_entrants=3,
    )
    assert sweep(app, max(starts_at, later) + timedelta(seconds=1)) >= 2  # both are due
    for tournament in (knockout, table):
        after = api.get(f"/v1/tournaments/{tournament['id']}").get_json()
        assert after["status"] == "cancelled"
        assert {e["state"] for e in after["entries"]} == {"refunded"}
        for entry in after["entries"]:
            w = wallet(api, entry["player_id"])
            assert (w["available"]["amount"], w["held"]["amount"]) == (DEPOSIT, 0)
        assert statement_sum(api, tournament["id"])[1] == 0
        assert events(app, tournament["id"]) == ["tournament.cancelled"]
        assert api.get(f"/v1/audit/tournaments/{tournament['id']}").get_json()["ok"] is True


def test_a_scheduled_knockout_starts_with_a_field_of_four_from_eight(
    api: ApiClient, app: Any
) -> None:
    tournament, starts_at = scheduled(api, 4, entrants=8, min_entrants=4, payout_table="2-9: 10000")
    assert sweep(app, starts_at) >= 1
    started = api.get(f"/v1/tournaments/{tournament['id']}").get_json()
    assert started["status"] == "running" and sorted(started["draw"]) == [1, 2, 3, 4]
    assert len(started["rounds"][0]["matches"]) == 2
    assert started["prize_pool"]["amount"] == 4 * BUY_IN
    lines, held = statement_sum(api, tournament["id"])
    assert held == 4 * BUY_IN and [line["kind"] for line in lines].count("fee") == 1
    assert api.get(f"/v1/audit/tournaments/{tournament['id']}").get_json()["ok"] is True


@pytest.mark.parametrize("field", [5, 6])
def test_a_scheduled_knockout_short_of_its_field_starts_with_byes_and_plays_to_the_end(
    api: ApiClient, app: Any, field: int
) -> None:
    """docs/tournaments.md, "Byes": the draw's first seats advance without a match or any
    money moving; the places, the prizes and the audit count only the entrants there are."""
    tournament, starts_at = scheduled(
        api, 0, entrants=8, min_entrants=4, payout_table="2-9: 6000/4000"
    )
    clients = {}
    for _ in range(field):
        client = player_client(api, deposit=DEPOSIT)
        assert register(client, tournament["id"]).status_code == 201
        clients[client.player_id] = client  # type: ignore[attr-defined]
    assert sweep(app, starts_at) >= 1
    started = api.get(f"/v1/tournaments/{tournament['id']}").get_json()
    assert started["status"] == "running" and started["prize_pool"]["amount"] == field * BUY_IN
    first = started["rounds"][0]["matches"]
    byes = [m for m in first if m["second_seat"] is None]
    assert len(first) == 4 and len(byes) == 8 - field
    assert sorted(m["first_seat"] for m in byes) == sorted(started["draw"][: 8 - field])
    for bye in byes:  # advanced at once, no match dealt
        assert bye["winner_seat"] == bye["first_seat"] and bye["match_id"] is None
    assert all(m["match_id"] for m in first if m["second_seat"] is not None)
    done = started
    for r in (1, 2, 3):
        done = resign_first_seat(api, app, clients, done, r)
    assert done["status"] == "finished"
    prizes = {e["seat"]: e["prize"]["amount"] for e in done["entries"]}
    assert sorted(prizes.values(), reverse=True)[:2] == [
        6 * field * BUY_IN // 10,
        4 * field * BUY_IN // 10,
    ]
    assert sum(prizes.values()) == field * BUY_IN
    places = sorted((e["first_place"], e["last_place"]) for e in done["entries"])
    assert places[0] == (1, 1) and places[-1][1] == field
    lines, held = statement_sum(api, tournament["id"])
    assert held == 0 and [line["kind"] for line in lines].count("entry") == field
    for entry in done["entries"]:
        w = wallet(api, entry["player_id"])
        assert w["available"]["amount"] == DEPOSIT - BUY_IN - FEE + prizes[entry["seat"]]
    # (the start was swept at starts_at, a minute ahead of the clock: its event sorts last)
    assert sorted(events(app, tournament["id"])) == ["tournament.finished", "tournament.started"]
    assert api.get(f"/v1/audit/tournaments/{tournament['id']}").get_json()["ok"] is True


def test_scheduling_refusals_name_the_field(api: ApiClient) -> None:
    base = {"format": "match_play", "currency": "EUR", "buy_in": 100, "entrants": 8}
    past = (utcnow() - timedelta(seconds=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
    ahead = (utcnow() + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    cases = [
        ({"starts_at": past}, "starts_at"),
        ({"starts_at": ahead, "min_entrants": 9}, "min_entrants"),
        # It may start with 4: the table must pay 4 too.
        ({"starts_at": ahead, "payout_table": "6-9: 6500/3500"}, "payout_table"),
        (
            {
                "starts_at": ahead,
                "kind": "single_table",
                "game": "gin_three",
                "entrants": 3,
                "min_entrants": 2,
            },
            "min_entrants",
        ),
    ]
    for extra, field in cases:
        response = api.post("/v1/tournaments", {**base, **extra})
        problem = assert_problem(response, 422, "validation_failed")
        assert [e["field"] for e in problem["errors"]] == [field], (extra, problem)
