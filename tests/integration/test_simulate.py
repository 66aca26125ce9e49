"""The simulator end to end: it starts the service itself (gunicorn and a Celery worker with
beat), plays a few matches of every format through the HTTP API (a continuous Rummy table hand
by hand), and the ledger invariants hold; on the embedded default, and on PostgreSQL + Redis
when the test run has them."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from werkzeug.serving import make_server

from service import simulate, simulate_tournaments
from service.client import GinClient
from tests.conftest import new_operator, serving, throwaway_postgres
from tests.integration.workers import Broker, free_port

ROOT = Path(__file__).resolve().parents[2]
MATCHES_PER_FORMAT = 1
HANDS = 3  # at each rummy_per_hand table
#: The seats of each game as the simulator plays it (Rummy at its default of four).
SEATS = {"gin": 2, "gin_three": 3, "gin_partnership": 4, "rummy": 4}


def simulator_env(extra: dict[str, str]) -> dict[str, str]:
    """The simulator process's environment: this one's without its database, broker and var
    folder (the simulator starts a service of its own), plus ``extra`` (:func:`backend`)."""
    kept = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CELERY_", "DATABASE_URL", "GIN_VAR_DIR"))
    }
    return kept | extra


@contextmanager
def backend(kind: str) -> Iterator[dict[str, str]]:
    """Environment for the simulator's own service: nothing (the embedded default), or a
    throwaway PostgreSQL database and this run's own Redis queue and key prefix."""
    if kind == "embedded":
        yield {}
        return
    base, broker_url = os.environ.get("TEST_DATABASE_URL"), os.environ.get("TEST_BROKER_URL")
    if not (base and broker_url):
        pytest.skip("needs TEST_DATABASE_URL and TEST_BROKER_URL")
    broker = Broker(broker_url)
    try:
        with throwaway_postgres(base) as url:
            yield {"DATABASE_URL": url, **broker.env}
    finally:
        broker.cleanup()


def simulated(
    env: dict[str, str], report_path: Path, *args: str
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """``gin-service simulate`` with ``args`` as a process of its own (no progress bar, 45 s
    for each settlement), which must succeed: what it printed, and its JSON report."""
    done = subprocess.run(
        [
            *(sys.executable, "-m", "service.simulate", *args, "--no-progress"),
            *("--settle-timeout", "45", "--report", str(report_path)),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done, json.loads(report_path.read_text())


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["embedded", "postgres_redis"])
def test_simulation_of_every_game_and_format_keeps_the_books(kind: str, tmp_path: Path) -> None:
    report_path = tmp_path / "report.json"
    with backend(kind) as extra:
        env = simulator_env(extra)
        done, report = simulated(
            env,
            report_path,
            "--matches",
            str(MATCHES_PER_FORMAT),
            "--game",
            "all",
            "--format",
            "all",
            "--target",
            "25",
            "--hands",
            str(HANDS),
            "--parallel",
            "4",
        )
    plays = [(game, f) for game, formats in simulate.GAMES.items() for f in formats]
    played = MATCHES_PER_FORMAT * len(plays)
    assert (report["matches"], report["failed"]) == (played, 0)
    assert report["invariants"]["violations"] == []
    assert report["hands"] >= played and report["actions"] > 10 * played
    assert len(report["bots"]) == MATCHES_PER_FORMAT * sum(SEATS[g] for g, _f in plays)
    assert report["games"] == list(simulate.GAMES)
    assert ("rummy", "rummy_per_hand") in plays
    # One settlement per match, one per hand at a per-hand table; the third bot to sit down
    # there, not dealt into the first hand, topped up during it.
    per_hand = [p for p in plays if p[1] in simulate.CONTINUOUS]
    assert report["settlements"] == MATCHES_PER_FORMAT * (len(plays) + (HANDS - 1) * len(per_hand))
    assert report["top_ups"] >= MATCHES_PER_FORMAT * len(per_hand)
    assert report["fees"] > 0
    assert sum(report["bots"].values()) + report["fees"] == 0  # every cent accounted for
    lat = report["settlement_latency_ms"]
    assert 0 < lat["p50"] <= lat["p99"]
    by_format = report["settlement_latency_ms_by_format"]
    assert sorted(by_format) == sorted(f"{g} {f}" for g, f in plays)
    assert all(0 < by["p50"] <= by["p99"] <= by["max"] for by in by_format.values()), by_format
    assert "ledger invariants: OK" in done.stdout and "hands/s" in done.stdout
    phases = [line for line in done.stderr.splitlines() if line.startswith("simulate: ")]
    assert [p.split()[1] for p in phases] == ["starting", "operator", "playing", f"{played}"], (
        done.stderr
    )


def test_a_violation_fails_the_run() -> None:
    """The exit status follows the invariants: any violation is exit status 1."""

    class Books:
        def wallet(self, player: str, currency: str) -> dict[str, Any]:
            held = 5 if player == "p2" else 0
            return {
                k: {"amount": v}
                for k, v in (("available", 10), ("held", held), ("balance", 10 + held))
            }

        def audit_ledger(self) -> dict[str, Any]:
            return {"ok": True, "discrepancies": []}

        def audit_settlement(self, match_id: str) -> dict[str, Any]:
            return {"ok": True, "discrepancies": []}

    result = simulate.SimulatedMatch(0, "match_play", "mch_1", ["p1", "p2"], [10, 10], fee=0)
    problems = simulate.check_books(Books(), [result], "EUR", 1)  # type: ignore[arg-type]
    assert any("still in escrow" in p for p in problems)
    assert any("not zero-sum" in p for p in problems)
    # A bot whose wallet is not its deposit plus its nets (p1 won 4 but holds 10 of 10).
    result.net = [4, -4]
    problems = simulate.check_books(Books(), [result], "EUR", 1)  # type: ignore[arg-type]
    assert "p1: wallet 10 != deposit 10 + nets 4" in problems
    assert simulate.main(["--url", "http://127.0.0.1:9", "--api-key", ""]) == 2


def test_the_audit_sample_spans_every_format_and_a_per_hand_tables_hands() -> None:
    def played(index: int, fmt: str, settled: list[str]) -> simulate.SimulatedMatch:
        return simulate.SimulatedMatch(index, fmt, settled=settled, game="rummy")

    results = [
        played(0, "rummy_target", ["t0"]),
        played(1, "rummy_target", ["t1"]),
        played(2, "rummy_per_hand", ["a1", "a2", "a3"]),
        played(3, "rummy_per_hand", ["b1", "b2"]),
    ]
    assert simulate.audit_sample_of(results, 4) == ["t0", "a1", "t1", "b1"]
    assert simulate.audit_sample_of(results, 100) == ["t0", "a1", "t1", "b1", "a2", "b2", "a3"]
    assert simulate.audit_sample_of(results, 0) == []


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["embedded", "postgres_redis"])
def test_a_per_hand_table_is_played_hand_by_hand_and_its_books_balance(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One ``rummy_per_hand`` table as the simulator plays it, against its own service with a
    real worker: three bots sit down one by one, the hands follow the table's ``match_id``,
    each settled by the worker, the third bot tops up during the first hand (not dealt in),
    nobody is dealt a hand after every bot sat out, everybody leaves with its money."""
    hands = 3
    args = simulate.parser().parse_args(
        ["--rummy-seats", "3", "--hands", str(hands), "--settle-timeout", "45"]
    )
    for name in [k for k in os.environ if k.startswith(("CELERY_", "DATABASE_URL", "GIN_VAR"))]:
        monkeypatch.delenv(name)
    with backend(kind) as extra:
        for name, value in extra.items():
            monkeypatch.setenv(name, value)
        with (
            simulate.embedded_service(tmp_path / "service.log") as (url, key),
            GinClient(url, key, timeout=60.0) as operator,
        ):
            result = simulate.play_one(operator, 0, "rummy", "rummy_per_hand", args)
            assert (result.error, result.problems) == (None, []), (result.error, result.problems)
            played = [operator.match(match_id) for match_id in result.settled]
            table = operator.table(played[0]["table_id"])
            settlements = [operator.settlement(match_id) for match_id in result.settled]
            books = simulate.check_books(operator, [result], "EUR", hands)
    assert books == []
    assert len(set(result.settled)) == hands == len(result.latencies)
    # A void hand (the stock run out) is dealt again within the same match: at least one
    # hand was played per settlement, sometimes more.
    assert result.hands == sum(len(hand["play"]["hands"]) for hand in played) >= hands
    assert all(latency > 0 for latency in result.latencies)
    assert result.match_id == result.settled[-1]
    assert simulate.audit_sample_of([result], hands) == result.settled
    assert all(hand["status"] in ("finished", "void") for hand in played)
    dealt = [[s["player_id"] for s in hand["seats"]] for hand in played]
    assert dealt[0] == result.players[:2], "the second bot to sit down deals the first hand"
    assert any(len(players) == 3 for players in dealt[1:]), "the third one is dealt in later"
    assert result.top_ups >= 1 and len(result.deposited) == 3
    # Every bot left; the last hand, played after every bot sat out, was the table's last.
    assert table["seats"] == [] and table["match_id"] == result.settled[-1]
    assert sum(s["fee"]["amount"] for s in settlements) == result.fee
    assert sum(result.net) + result.fee == 0


@contextmanager
def live_api(database_url: str) -> Iterator[tuple[str, str]]:
    """(base URL, operator API key) of the test app served over real HTTP in a thread."""
    with serving(database_url) as app:
        _, key = new_operator(app)
        server = make_server("127.0.0.1", 0, app, threaded=True)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_port}", key
        finally:
            server.shutdown()
            thread.join(timeout=10)


def run_main(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        status = simulate.main(list(argv))
    except SystemExit as exc:  # argparse
        status = exc.code if isinstance(exc.code, int) else 2
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_bad_inputs_are_one_line_on_stderr_and_status_2(
    fresh_database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    with live_api(fresh_database_url) as (url, _key):
        cases = [
            (["--url", dead, "--api-key", "sk_anything"], f"cannot reach {dead}"),
            (["--url", url, "--api-key", "sk_bogus"], "refused the API key"),
            (["--url", url], "--api-key"),
            (["--matches", "0"], "--matches"),
            (["--format", "snap"], "snap"),
            (["--report", "/no/such/folder/report.json"], "/no/such/folder"),
        ]
        for argv, named in cases:
            status, out, err = run_main(capsys, *argv)
            assert (status, out) == (2, ""), (argv, out, err)
            assert len(err.strip().splitlines()) == 1 and named in err, (argv, err)


def test_without_a_progress_bar_each_phase_is_still_one_line(
    fresh_database_url: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``--no-progress`` drops the bar, not the news: the operator found, the matches being
    played, the books being checked (the matches themselves are faked here)."""

    def played(
        operator: Any, index: int, game: str, fmt: str, args: argparse.Namespace
    ) -> simulate.SimulatedMatch:
        return simulate.SimulatedMatch(index, fmt, latencies=[0.01], game=game)

    monkeypatch.setattr(simulate, "play_one", played)
    with live_api(fresh_database_url) as (url, key):
        status, out, err = run_main(
            capsys,
            "--url",
            url,
            "--api-key",
            key,
            "--matches",
            "3",
            "--no-progress",
            "--audit-sample",
            "0",
        )
    assert status == 0, out + err
    lines = err.strip().splitlines()
    assert len(lines) == 3 and all(line.startswith("simulate: ") for line in lines), err
    assert "Acme Casino" in lines[0] and url in lines[0]
    assert "playing 3 matches" in lines[1]
    assert "3 matches played" in lines[2] and "checking the books" in lines[2]
    assert "matches: 3 played" in out


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["embedded", "postgres_redis"])
def test_tournaments_of_every_kind_are_played_and_their_books_balance(
    kind: str, tmp_path: Path
) -> None:
    """A knockout, a single table of each multi-player game, a scheduled knockout started by
    the beat and a cancelled one, all through the HTTP API; each statement sums to zero,
    each audit passes, every bot's wallet is its deposit plus its net."""
    report_path = tmp_path / "report.json"
    with backend(kind) as extra:
        env = simulator_env(extra)
        done, report = simulated(
            env,
            report_path,
            "--matches",
            "1",
            "--format",
            "first_to_knock",
            "--tournaments",
            "1",
            "--rummy-seats",
            "3",
            "--parallel",
            "7",
        )
    assert report["invariants"]["violations"] == []
    played = report["tournaments"]
    assert (played["played"], played["failed"]) == (len(simulate_tournaments.KINDS), 0)
    assert played["kinds"] == sorted(simulate_tournaments.KINDS)
    # Two knockouts of 4 (3 matches each), a table of each multi-player game, the
    # cancelled one none.
    assert played["matches"] == 3 + 3 + 3
    # Every fee but the cancelled tournament's, returned: 4 + 4 + 3 + 4 + 3 entries.
    assert played["fees"] == 18 * (500 * 500 // 10_000)
    # 1 match's 2 bots, the tournaments' 4 + 4 + 4 + 3 + 4 + 3 entrants.
    assert len(report["bots"]) == 2 + 22
    assert sum(report["bots"].values()) + report["fees"] == 0
    assert "tournaments: 6 played (0 failed)" in done.stdout
    assert "ledger invariants: OK" in done.stdout


def test_a_tournaments_own_books_are_checked() -> None:
    """A statement that does not sum to zero, a failed audit, prizes short of the pool:
    each one a violation."""

    class Books:
        def tournament_statement(self, tid: str) -> dict[str, Any]:
            lines = [
                {"player_id": "p1", "amount": {"amount": 105}},
                {"player_id": None, "amount": {"amount": -10}},
                {"player_id": "p1", "amount": {"amount": -90}},
            ]
            return {"lines": lines, "held": {"amount": 5}}

        def audit_tournament(self, tid: str) -> dict[str, Any]:
            return {
                "ok": False,
                "discrepancies": [{"field": "ledger.held", "expected": 0, "actual": 5}],
            }

    result = simulate.SimulatedMatch(0, "knockout", "tnm_1", ["p1", "p2"], [105, 105])
    done = {
        "id": "tnm_1",
        "status": "finished",
        "prize_pool": {"amount": 200},
        "entries": [
            {"player_id": "p1", "state": "champion", "prize": {"amount": 90}},
            {"player_id": "p2", "state": "knocked_out", "prize": {"amount": 0}},
        ],
    }
    simulate_tournaments._check_tournament(
        Books(),  # type: ignore[arg-type]
        result,
        done,
        {"buy_in": 100, "fee": 5},
    )
    assert result.problems == [
        "tournament tnm_1: statement sums to 5, holds 5",
        "tournament tnm_1 audit: ledger.held: expected 0, actual 5",
        "tournament tnm_1: prizes 90 != pool 200",
    ]
    assert (result.net, result.fee) == ([-15, -105], 10)
