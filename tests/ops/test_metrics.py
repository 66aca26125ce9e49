"""GET /metrics: request latency by route, actions applied, the database's figures at scrape
time, the optional token, and figures summed across gunicorn workers (multiprocess mode)."""

from __future__ import annotations

import os
import re
import secrets
import signal
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY

from service.client.api import action_body
from service.games.bots import action_text, decide_multi
from tests.api.play_clients import join, open_table, player_client
from tests.conftest import ApiClient, make_test_app, new_operator
from tests.integration.workers import wait_until
from tests.ops.servers import HttpClient, get, gunicorn, metric_samples

LATENCY_COUNT = "gin_http_request_duration_seconds_count"


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


@pytest.fixture
def fresh_app(fresh_database_url: str) -> Iterator[Any]:
    """An app on a database of its own, reading database figures afresh at every scrape."""
    application = make_test_app(fresh_database_url, METRICS_DB_CACHE_SECONDS=0)
    yield application
    application.extensions["gin"]["engine"].dispose()


def scrape(client: Any) -> str:
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("text/plain")
    return str(response.get_data(as_text=True))


def value(text: str, name: str, **labels: str) -> float | None:
    for found, number in metric_samples(text, name):
        if all(found.get(k) == v for k, v in labels.items()):
            return number
    return None


def test_latency_is_labelled_by_url_rule_method_and_status(api: ApiClient) -> None:
    route = "/v1/matches/<match_id>"
    before = sample(LATENCY_COUNT, route=route, method="GET", status="404")
    for _ in range(3):
        missing = f"mch_{secrets.token_hex(8)}"
        assert api.get(f"/v1/matches/{missing}").status_code == 404
    assert sample(LATENCY_COUNT, route=route, method="GET", status="404") == before + 3
    text = scrape(api.client)
    assert "mch_" not in text  # raw paths (ids) never become labels
    unmatched = sample(LATENCY_COUNT, route="<unmatched>", method="GET", status="404")
    assert api.get(f"/no/such/{secrets.token_hex(4)}").status_code == 404
    assert sample(LATENCY_COUNT, route="<unmatched>", method="GET", status="404") == unmatched + 1


def test_actions_applied_count_successful_actions_only(api: ApiClient) -> None:
    table = open_table(api)
    players = [player_client(api), player_client(api)]
    for player in players:
        assert join(player, table["id"]).status_code == 201
    match_id = table["match_id"]
    views = [p.get(f"/v1/matches/{match_id}").get_json() for p in players]
    mover_view = next(v for v in views if v["you"] == v["hand"]["to_act"])
    mover = players[views.index(mover_view)]
    legal = mover_view["hand"]["legal_actions"]
    action = next(a["action"] for a in legal if a["action"] in ("PASS", "TAKE_UPCARD"))
    body = {"action": action, "expected_version": mover_view["version"]}
    before = sample("gin_actions_applied_total", action=action)
    first = mover.post(f"/v1/matches/{match_id}/actions", body, key="act-1")
    assert first.status_code == 200, first.get_json()
    assert sample("gin_actions_applied_total", action=action) == before + 1
    replay = mover.post(f"/v1/matches/{match_id}/actions", body, key="act-1")
    assert replay.status_code == 200 and replay.headers.get("Idempotent-Replayed") == "true"
    stale = mover.post(f"/v1/matches/{match_id}/actions", body)
    assert stale.status_code == 409
    assert sample("gin_actions_applied_total", action=action) == before + 1


def test_an_action_of_any_game_counts_under_its_own_name(api: ApiClient) -> None:
    """A Rummy hand played to its end: each action counts under its own name, Rummy's own
    (MELD, LAY_OFF, TURN_OVER: a hand cannot end without one) included, none as OTHER."""
    buyins = {"stake_per_point": 5, "min_buyin": 1000, "max_buyin": 5000}
    table = open_table(api, game="rummy", seat_count=2, format="rummy_target", **buyins)
    players = [player_client(api), player_client(api)]
    for player in players:
        assert join(player, table["id"], buyin=1000).status_code == 201
    match_id = table["match_id"]
    names = ("DRAW_STOCK", "DRAW_DISCARD", "TURN_OVER", "MELD", "LAY_OFF", "DISCARD", "OTHER")
    before = {name: sample("gin_actions_applied_total", action=name) for name in names}
    sent: Counter[str] = Counter()
    for _turn in range(2_000):
        views = [p.get(f"/v1/matches/{match_id}").get_json() for p in players]
        if views[0]["hand_number"] != 1 or views[0]["status"] != "playing":
            break
        mover_view = next(v for v in views if v["you"] in v["play"]["to_act"])
        text = action_text(decide_multi(mover_view["play"]))
        body = action_body(text) | {"expected_version": mover_view["version"]}
        response = players[views.index(mover_view)].post(f"/v1/matches/{match_id}/actions", body)
        assert response.status_code == 200, response.get_json()
        sent[text.split()[0]] += 1
    assert sent.keys() & {"MELD", "LAY_OFF", "TURN_OVER"}, sent
    after = {name: sample("gin_actions_applied_total", action=name) for name in names}
    assert {name: after[name] - before[name] for name in names} == {
        name: sent[name] for name in names
    }


def test_database_figures_at_scrape_time(fresh_app: Any) -> None:
    _operator, key = new_operator(fresh_app)
    api = ApiClient(fresh_app.test_client(), key)
    text = scrape(api.client)
    assert value(text, "gin_metrics_database_up") == 1
    assert value(text, "gin_matches_started_total") == 0
    assert value(text, "gin_outbox_backlog") == 0

    table = open_table(api, stake=100, fee={"bps": 500})
    players = [player_client(api, deposit=1000), player_client(api, deposit=1000)]
    for player in players:
        assert join(player, table["id"]).status_code == 201
    resigned = players[0].post(f"/v1/matches/{table['match_id']}/actions", {"action": "RESIGN"})
    assert resigned.status_code == 200

    text = scrape(api.client)
    assert value(text, "gin_matches_started_total") == 1
    assert value(text, "gin_matches_finished_total") == 1
    assert value(text, "gin_matches", status="finished") == 1
    # match.started, hand.ended (the resignation cut hand 1 short) and match.finished wait in
    # the outbox (no relay runs here), and the finished match waits for its settlement.
    assert value(text, "gin_outbox_backlog") == 3
    assert value(text, "gin_settlement_backlog") == 1
    assert value(text, "gin_settlements_total") == 0
    assert (
        value(text, "gin_ledger_balance_minor_units", currency="EUR", kind="player_available")
        == 2 * 1000 - 2 * 100
    )
    assert (
        value(text, "gin_ledger_balance_minor_units", currency="EUR", kind="player_escrow") == 200
    )
    assert (
        value(text, "gin_ledger_balance_minor_units", currency="EUR", kind="operator_clearing")
        == -2000
    )
    kinds = [
        v
        for labels, v in metric_samples(text, "gin_ledger_balance_minor_units")
        if labels["currency"] == "EUR"
    ]
    assert sum(kinds) == 0


def test_database_down_is_reported_not_raised(tmp_path: Path) -> None:
    application = make_test_app(f"sqlite:///{tmp_path}/missing/none.sqlite")
    text = scrape(application.test_client())
    assert value(text, "gin_metrics_database_up") == 0
    assert value(text, "gin_outbox_backlog") is None
    assert "gin_http_request_duration_seconds" in text


def test_metrics_token(database_url: str) -> None:
    application = make_test_app(database_url, METRICS_TOKEN="scrape-secret")
    client = application.test_client()
    refused = client.get("/metrics")
    assert refused.status_code == 401
    assert refused.headers["Content-Type"] == "application/problem+json"
    wrong = client.get("/metrics", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401
    allowed = client.get("/metrics", headers={"Authorization": "Bearer scrape-secret"})
    assert allowed.status_code == 200
    assert b"gin_http_request_duration_seconds" in allowed.data
    application.extensions["gin"]["engine"].dispose()


# --- several gunicorn workers -----------------------------------------------------------------


def _healthz_count(base: str) -> float:
    text = get(base, "/metrics").get_data(as_text=True)
    return value(text, LATENCY_COUNT, route="/healthz", method="GET", status="200") or 0.0


def _worker_pids(directory: Path) -> set[str]:
    return {
        match.group(1)
        for path in directory.glob("*/histogram_*.db")
        if (match := re.search(r"histogram_(\d+)\.db$", path.name))
    }


@pytest.mark.slow
def test_request_counts_are_summed_across_gunicorn_workers(
    fresh_database_url: str, tmp_path: Path
) -> None:
    metrics_root = tmp_path / "metrics"
    with gunicorn(
        fresh_database_url, workers=3, env={"PROMETHEUS_MULTIPROC_DIR": str(metrics_root)}
    ) as (_process, base):
        before = _healthz_count(base)
        sent = 0

        def burst() -> None:
            nonlocal sent
            lock = threading.Lock()

            def one() -> None:
                nonlocal sent
                assert HttpClient(base).open("/healthz").status_code == 200
                with lock:
                    sent += 1

            threads = [threading.Thread(target=one) for _ in range(20)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()

        # Concurrent bursts until at least two workers have answered some (the kernel picks).
        burst()
        wait_until(
            lambda: len(_worker_pids(metrics_root)) >= 2 or burst() or False,
            30,
            "requests answered by two workers",
        )
        assert sent >= 20
        # Every scrape, whichever worker answers it, sums every worker's samples.
        for _ in range(9):
            assert _healthz_count(base) == before + sent
        # A fresh folder per server start, inside the one given, removed at exit.
        assert len(list(metrics_root.iterdir())) == 1
    assert list(metrics_root.iterdir()) == []


# --- a Celery worker's own metrics ----------------------------------------------------------


@pytest.mark.slow
def test_worker_serves_its_pool_processes_task_metrics(
    fresh_database_url: str, tmp_path: Path
) -> None:
    from service.config import Settings
    from tests.integration.workers import ROOT, free_port, kill
    from worker.celery_app import make_celery

    broker_url = f"filesystem://{tmp_path / 'broker'}"
    port = free_port()
    env = dict(
        os.environ,
        DATABASE_URL=fresh_database_url,
        CELERY_BROKER_URL=broker_url,
        WORKER_METRICS_PORT=str(port),
        WORKER_METRICS_ADDR="127.0.0.1",
        CELERY_QUEUE="gin-metrics-test",
    )
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    client = make_celery(Settings(fresh_database_url, broker_url, "secret"))
    client.conf.task_default_queue = "gin-metrics-test"
    for _ in range(3):
        client.send_task("ops.ping")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "worker.celery_app",
            "worker",
            "--concurrency",
            "2",
            "--pool",
            "prefork",
            "--loglevel",
            "WARNING",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )

    def pings() -> float:
        try:
            text = get(f"http://127.0.0.1:{port}", "/metrics", timeout=2).get_data(as_text=True)
        except OSError:
            return 0.0
        return (
            value(text, "gin_task_duration_seconds_count", task="ops.ping", state="SUCCESS") or 0.0
        )

    try:
        wait_until(lambda: pings() == 3, 60, "three pings counted by the worker's metrics")
    finally:
        kill(process, signal.SIGTERM)
