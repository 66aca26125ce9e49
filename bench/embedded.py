"""Settlement latency on what ``make run`` starts (the embedded default: SQLite, kombu's
filesystem broker, a real Celery worker with beat, gunicorn), beside the same command on
PostgreSQL and Redis.

Each setup is ``gin-service run`` itself, started in a temporary folder of its own (its
``var/``) with ``--demo`` (the demo operator's key is read from its file), on a free port:

- ``embedded``: nothing set, as ``make run``;
- ``postgres+redis``: ``DATABASE_URL`` a throwaway PostgreSQL database and
  ``CELERY_BROKER_URL`` Redis (a queue and key prefix of this run's own), when both answer.

Two figures per setup, every request over HTTP through :class:`service.client.GinClient`:

1. Match end -> settlement readable: ``--matches`` two-player Match Play matches, one at a
   time (set up over HTTP, not timed), each ended by its first player resigning; from the
   resignation's answer until ``GET /v1/matches/{id}/settlement`` answers 200 (polled every
   ``--poll`` ms). Target on the embedded default: p99 < 1 s.
2. Per-hand Rummy hand end -> next hand dealt: a two-seat ``rummy_per_hand`` table whose
   hands the project's practice bot plays (:func:`service.games.bots.decide_multi`, each
   player from its own view); from the answer of the action that ended a hand until
   ``GET /v1/tables/{id}`` names the next hand (the worker settles the hand and deals the
   next in one transaction), ``--hands`` hands. Target: p99 < 1.5 s.

Prints p50/p99/max of both figures per setup and the ratio embedded / postgres+redis.

    .venv/bin/python bench/embedded.py [--matches 20] [--hands 10] [--poll 5]
        [--only embedded|postgres]

PostgreSQL: BENCH_DATABASE_URL, else TEST_DATABASE_URL, else the local server; Redis:
BENCH_BROKER_URL, else TEST_BROKER_URL, else redis://127.0.0.1:6379/0 (skipped, said so,
when either is unreachable). To measure another checkout's code (as it was before a change),
run this file with ``PYTHONPATH=/that/checkout``: ``gin-service run`` is started as
``python -m service.cli run``, which then imports that checkout's service and worker.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

from harness import database_base_url, free_port, percentile  # noqa: E402

from service.client import ApiProblem, GinClient  # noqa: E402
from service.games.bots import action_text, decide_multi  # noqa: E402

#: Variables of this shell that would change what ``gin-service run`` starts.
CLEARED = (
    "DATABASE_URL",
    "CELERY_BROKER_URL",
    "CELERY_QUEUE",
    "CELERY_KEY_PREFIX",
    "GIN_VAR_DIR",
    "GIN_BIND",
    "LOG_LEVEL",
)


@dataclass
class Figures:
    name: str
    settled: list[float] = field(default_factory=list)  # match end -> settlement readable
    dealt: list[float] = field(default_factory=list)  # hand end -> next hand dealt
    problems: list[str] = field(default_factory=list)


@contextmanager
def gin_service_run(env: dict[str, str]) -> Iterator[tuple[str, str]]:
    """``gin-service run --demo`` in a temporary folder with ``env`` added: (its address,
    the demo operator's API key) once ``/readyz`` answers 200; the process group is stopped
    (SIGTERM, as Ctrl-C in a terminal) on exit."""
    with tempfile.TemporaryDirectory(prefix="gin-bench-embedded-") as folder:
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        child_env = {k: v for k, v in os.environ.items() if k not in CLEARED}
        child_env.update(env, LOG_LEVEL="WARNING")
        with open(Path(folder) / "run.log", "wb") as log:
            server = subprocess.Popen(
                [sys.executable, "-m", "service.cli", "run", "--demo", "--bind", base[7:]],
                cwd=folder,
                env=child_env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            wait(lambda: _ready(base, server), 120, "gin-service run to answer /readyz")
            key = json.loads((Path(folder) / "var" / "demo-operator.json").read_text())["api_key"]
            yield base, key
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait()


def _ready(base: str, server: subprocess.Popen[bytes]) -> bool:
    if server.poll() is not None:
        raise SystemExit(f"gin-service run exited with status {server.returncode}")
    try:
        with urllib.request.urlopen(f"{base}/readyz", timeout=2) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False


def wait(check: Callable[[], bool], timeout: float, what: str, interval: float = 0.05) -> float:
    """Poll ``check`` (another process's progress, seen over HTTP) until it holds: the seconds
    it took."""
    start = time.perf_counter()
    while not check():
        if time.perf_counter() - start > timeout:
            raise TimeoutError(f"waited {timeout} s for {what}")
        time.sleep(interval)
    return time.perf_counter() - start


def funded_player(operator: GinClient, amount: int) -> tuple[str, GinClient]:
    player = operator.create_player(f"bench-{secrets.token_hex(6)}", "Bench")
    operator.deposit(player["id"], amount, "EUR")
    token = operator.player_token(player["id"], ttl_seconds=3600)["token"]
    return player["id"], operator.as_(token)


def match_to_settlement(operator: GinClient, poll: float, out: Figures) -> None:
    """One Match Play match, resigned as soon as it starts: end -> settlement readable."""
    table = operator.create_table("match_play", "EUR", stake=100, fee={"bps": 500})
    players = [funded_player(operator, 100)[1] for _ in range(2)]
    for player in players:
        player.join(table["id"])
    match_id = table["match_id"]
    players[0].act(match_id, "RESIGN", players[0].match(match_id)["version"])
    ended = time.perf_counter()

    def readable() -> bool:
        try:
            operator.settlement(match_id)
        except ApiProblem as problem:
            if problem.status != 404:
                raise
            return False
        return True

    wait(readable, 60, f"{match_id}'s settlement", poll)
    out.settled.append(time.perf_counter() - ended)


def per_hand_rummy(operator: GinClient, hands: int, poll: float, out: Figures) -> None:
    """A two-seat per-hand Rummy table, ``hands`` hands played by the practice bot: each
    hand's end -> the next hand dealt (the table's ``match_id`` names it)."""
    table = operator.create_table(
        "rummy_per_hand",
        "EUR",
        game="rummy",
        seat_count=2,
        stake_per_point=1,
        min_buyin=5000,
        max_buyin=5000,
        fee={"bps": 500, "base": "WINNINGS"},
        clock={"turn_seconds": 600, "bank_seconds": 600},
    )
    players = [funded_player(operator, 5000)[1] for _ in range(2)]
    for player in players:
        player.join(table["id"], buyin=5000)
    hand = operator.table(table["id"])["match_id"]
    by_seat = {player.match(hand)["you"]: player for player in players}
    for _ in range(hands):
        play_hand(by_seat, hand)
        ended = time.perf_counter()

        def moved_on(last: str = hand) -> bool:
            return operator.table(table["id"])["match_id"] != last

        wait(moved_on, 60, f"the hand after {hand}", poll)
        out.dealt.append(time.perf_counter() - ended)
        hand = operator.table(table["id"])["match_id"]
        if operator.match(hand)["status"] != "playing":
            out.problems.append(f"{hand}: not dealt to both seats")
            return


def play_hand(by_seat: dict[Any, GinClient], match_id: str) -> None:
    """Play a Rummy hand to its end, each seat deciding on its own view."""
    view = next(iter(by_seat.values())).match(match_id)
    for _ in range(2000):
        if view["status"] != "playing":
            return
        to_act = view["play"]["to_act"]
        if not to_act:
            view = next(iter(by_seat.values())).match(match_id)
            continue
        mover = by_seat[to_act[0]]
        mine = mover.match(match_id)
        game = mine["play"]
        if mine["status"] != "playing" or not game.get("legal_actions"):
            view = mine
            continue
        view = mover.act(match_id, action_text(decide_multi(game)), mine["version"])
    raise AssertionError(f"{match_id} did not end in 2000 actions")


def measure(name: str, env: dict[str, str], args: argparse.Namespace) -> Figures:
    out = Figures(name)
    poll = args.poll / 1000
    started = time.perf_counter()
    with gin_service_run(env) as (base, key), GinClient(base, key) as operator:
        print(f"{name}: serving after {time.perf_counter() - started:.1f} s", file=sys.stderr)
        match_to_settlement(operator, poll, Figures("warm-up"))  # first imports, connections
        for n in range(args.matches):
            match_to_settlement(operator, poll, out)
            print(f"{name}: match {n + 1}: {out.settled[-1]:.3f} s", file=sys.stderr)
        per_hand_rummy(operator, args.hands, poll, out)
        print(f"{name}: hands: {' '.join(f'{s:.3f}' for s in out.dealt)}", file=sys.stderr)
    return out


@contextmanager
def postgres_and_redis() -> Iterator[dict[str, str] | None]:
    """The environment of ``gin-service run`` on a throwaway PostgreSQL database and a Redis
    queue of its own, or None (said on stderr) when either is unreachable."""
    import redis
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    from tests.conftest import throwaway_postgres
    from tests.integration.workers import Broker

    base = database_base_url()
    broker_url = (
        os.environ.get("BENCH_BROKER_URL")
        or os.environ.get("TEST_BROKER_URL")
        or "redis://127.0.0.1:6379/0"
    )
    try:
        engine = create_engine(make_url(base).set(database="postgres"))
        with engine.connect() as connection:
            connection.execute(text("SELECT 1"))
        engine.dispose()
        redis.Redis.from_url(broker_url, socket_connect_timeout=2).ping()
    except Exception as exc:  # any reason means "not here"
        print(f"postgres+redis: skipped ({type(exc).__name__}: {exc})", file=sys.stderr)
        yield None
        return
    broker = Broker(broker_url)
    with throwaway_postgres(base) as url:
        try:
            env = {**broker.env, "DATABASE_URL": url}
            env.pop("CELERY_VISIBILITY_TIMEOUT")  # the production default, not the tests' 3 s
            yield env
        finally:
            broker.cleanup()


def row(name: str, values: list[float]) -> str:
    if not values:
        return f"  {name:<34} (none)"
    return (
        f"  {name:<34} p50 {percentile(values, 50):7.0f} ms   p99 {percentile(values, 99):7.0f} ms"
        f"   max {max(values) * 1000:7.0f} ms   n={len(values)}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--matches", type=int, default=20, help="matches resigned per setup")
    parser.add_argument("--hands", type=int, default=10, help="per-hand Rummy hands per setup")
    parser.add_argument("--poll", type=float, default=5, help="polling interval, ms")
    parser.add_argument("--only", choices=("embedded", "postgres"), help="one setup only")
    args = parser.parse_args()
    results: list[Figures] = []
    with ExitStack() as stack:
        if args.only != "postgres":
            results.append(measure("embedded", {}, args))
        if args.only != "embedded":
            env = stack.enter_context(postgres_and_redis())
            if env is not None:
                results.append(measure("postgres+redis", env, args))
    print(f"load average: {os.getloadavg()[0]:.2f}; {os.cpu_count()} CPUs")
    for figures in results:
        print(f"{figures.name} (gin-service run):")
        print(row("match end -> settlement readable", figures.settled))
        print(row("hand end -> next hand dealt", figures.dealt))
        for problem in figures.problems:
            print(f"  problem: {problem}")
    if len(results) == 2:
        embedded, server = results
        for what, a, b in (
            ("settlement", embedded.settled, server.settled),
            ("next hand", embedded.dealt, server.dealt),
        ):
            if a and b:
                print(
                    f"ratio embedded / postgres+redis, {what}: p50 "
                    f"{percentile(a, 50) / percentile(b, 50):.2f}, p99 "
                    f"{percentile(a, 99) / percentile(b, 99):.2f}"
                )
    return 1 if any(f.problems for f in results) else 0


if __name__ == "__main__":
    raise SystemExit(main())
