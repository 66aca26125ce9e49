"""Actions per second through gunicorn and PostgreSQL, 16 matches played concurrently.

Creates a throwaway PostgreSQL database, an operator and pairs of funded players, opens Match
Play tables and seats both players (through the use cases, not timed), starts gunicorn
(deploy/gunicorn.conf.py), then runs one scripted client per concurrent match: it reads the
view of the player to act (``GET /v1/matches/{id}``, with that player's token) and posts a
legal action (``POST /v1/matches/{id}/actions`` with ``expected_version``), knocking whenever
it may. An action's answer is the actor's new view, so when the same player acts again (a
discard after a draw) the client decides on that answer, as a real client would, and reads
only when the turn passes to the opponent; a finished match is replaced by the next prepared
one. The same number of connections drive ``GET /healthz`` as the baseline, alternating with
the play phases for a few rounds. Prints requests per second and p50/p99 for the baseline, the
reads and the actions of each round with the gunicorn and PostgreSQL CPU per request (from
/proc), each client's mean action latency (their spread shows how evenly the workers share the
clients' connections), each round's ratio actions / baseline and their median, how many
match reads found the state kept by the worker that served them, and each kind of action's
latency with its count among the slowest 1%.
Drops the database.
Clients keep their connection open (keep-alive) unless ``--close`` is given.

    .venv/bin/python bench/play.py [--matches 16] [--seconds 5] [--rounds 3] [--close]

Needs PostgreSQL: BENCH_DATABASE_URL, else TEST_DATABASE_URL, else the local server.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import secrets
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from harness import (  # noqa: E402
    Http,
    baseline,
    cpu_seconds,
    database_base_url,
    default_workers,
    describe,
    gunicorn,
    percentile,
    report,
    report_cpu,
    summary,
)


def _as_body(listed: dict[str, Any] | str) -> dict[str, Any]:
    """A listed legal action as a body: as listed, or from the text form (``"DISCARD TD"``)
    that revisions before the ready-to-send bodies listed, so that a baseline can be driven."""
    if not isinstance(listed, str):
        return listed
    words = listed.split()
    return {"action": words[0], **({"card": words[1]} if len(words) > 1 else {})}


def choose(legal: list[Any], rng: random.Random) -> dict[str, Any]:
    """One of the view's legal actions (each the body to send but for the version), a knock
    whenever there is one."""
    bodies = [_as_body(a) for a in legal]
    knocks = [a for a in bodies if a["action"] in ("KNOCK", "BIG_GIN", "TAKE_DISCARD_AND_KNOCK")]
    return rng.choice(knocks or bodies)


def action_body(action: dict[str, Any], version: int) -> dict[str, Any]:
    return {**action, "expected_version": version}


async def play(
    port: int,
    queue: list[tuple[str, list[str]]],
    concurrency: int,
    seconds: float,
    keep_alive: bool,
) -> dict[str, Any]:
    reads: list[float] = []
    acts: list[float] = []
    per_client: list[list[float]] = []  # each client's action latencies
    kinds: list[str] = []  # each action's name, beside its latency in acts
    failures = 0
    finished = 0
    deadline = time.perf_counter() + seconds
    rng = random.Random(1)

    async def client() -> None:
        nonlocal failures, finished
        http = Http(port, keep_alive)
        mine: list[float] = []
        per_client.append(mine)
        match_id, tokens = queue.pop()
        seat_token: dict[int, str] = {}
        for token in tokens:
            _, view = await http.request("GET", f"/v1/matches/{match_id}", token)
            seat_token[view["you"]] = token
        mover = 0
        view: dict[str, Any] | None = None  # the mover's view, when an answer already gave it
        while time.perf_counter() < deadline:
            if view is None:
                start = time.perf_counter()
                status, view = await http.request(
                    "GET", f"/v1/matches/{match_id}", seat_token[mover]
                )
                reads.append(time.perf_counter() - start)
                if status != 200:
                    failures += 1
                    view = None
                    continue
            assert view is not None
            if view["status"] != "playing":
                finished += 1
                if not queue:
                    await http.close()
                    return
                match_id, tokens = queue.pop()
                seat_token = {}
                for token in tokens:
                    _, v = await http.request("GET", f"/v1/matches/{match_id}", token)
                    seat_token[v["you"]] = token
                view = None
                continue
            if view["hand"]["to_act"] != view["you"]:
                mover = view["hand"]["to_act"]
                view = None
                continue
            action = choose(view["hand"]["legal_actions"], rng)
            start = time.perf_counter()
            status, after = await http.request(
                "POST",
                f"/v1/matches/{match_id}/actions",
                seat_token[mover],
                action_body(action, view["version"]),
            )
            acts.append(time.perf_counter() - start)
            mine.append(acts[-1])
            kinds.append(action["action"])
            view = None
            if status != 200:
                failures += 1
                continue
            if after["status"] == "playing" and after["hand"]["to_act"] is not None:
                # The answer is the actor's own view: when the actor moves again (a draw is
                # followed by a discard), it decides on it without reading the match again;
                # the opponent reads its view first, as a waiting client's long-poll would.
                if after["hand"]["to_act"] == mover:
                    view = after
                mover = after["hand"]["to_act"]
        await http.close()

    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(concurrency)))
    return {
        "elapsed": time.perf_counter() - started,
        "reads": reads,
        "acts": acts,
        "kinds": kinds,
        "failures": failures,
        "finished": finished,
        "client_means": sorted(sum(m) / len(m) * 1000 for m in per_client if m),
    }


def by_kind(acts: list[float], kinds: list[str]) -> None:
    """Each action's share and latency, and which actions make the slowest 1%."""
    cut = percentile(acts, 99) / 1000
    slowest = Counter(k for k, t in zip(kinds, acts, strict=True) if t >= cut)
    for kind in sorted(set(kinds)):
        times = [t for k, t in zip(kinds, acts, strict=True) if k == kind]
        print(
            f"  {kind:<24} {len(times) / len(acts):6.1%} of actions   "
            f"p50 {percentile(times, 50):6.1f} ms   p99 {percentile(times, 99):6.1f} ms   "
            f"{slowest[kind]} of the slowest 1%"
        )


async def state_reads(port: int) -> dict[str, float]:
    """``gin_match_state_reads_total`` by state, summed over the workers (GET /metrics)."""
    http = Http(port, keep_alive=False)
    _, body = await http.request("GET", "/metrics", text=True)
    found = dict.fromkeys(("kept", "fetched"), 0.0)
    for line in body.splitlines():
        for state in found:
            if line.startswith(f'gin_match_state_reads_total{{state="{state}"}}'):
                found[state] += float(line.split()[-1])
    return found


def prepare(url: str, matches: int) -> list[tuple[str, list[str]]]:
    """Seated matches with both players' tokens (through the use cases: not timed)."""
    sys.path.insert(0, str(ROOT))
    from datetime import timedelta

    from service import create_app
    from service.clock import utcnow
    from service.games.common.settings import MatchSettings
    from service.usecases import players, tables, wallets

    try:  # bench/instructions.py runs this set-up on an older revision too
        from service.usecases.unit_of_work import run as in_unit
    except ImportError:  # use cases that still committed on their own (before 2026-12-03)

        def in_unit(_session: Any, work: Any, *args: Any) -> Any:
            return work(*args)

    from service.usecases.auth import Principal, mint_player_token
    from service.usecases.operators import create_operator

    app = create_app({"DATABASE_URL": url, "SECRET_KEY": os.environ["SECRET_KEY"]})
    session = app.extensions["gin"]["sessionmaker"]()
    operator_id = in_unit(session, lambda: create_operator(session, "Bench", utcnow())[0].id)
    operator = Principal(operator_id)
    settings = MatchSettings.from_dict(
        {"format": "match_play", "stake": 100, "target": 100, "clock": {"turn_seconds": 600}}
    )
    out = []
    now = utcnow()

    def seated(i: int) -> tuple[str, list[str]]:
        view = tables.create_table(
            session,
            operator,
            name=f"bench {i}",
            currency="EUR",
            settings=settings,
            practice=False,
            private=False,
            now=now,
        )
        tokens = []
        for seat in range(2):
            player = players.create_player(session, operator, f"b{i}-{seat}", "P", None, now)
            wallets.deposit(session, operator, player.id, "EUR", 1000, f"d{i}-{seat}", now)
            token = mint_player_token(
                operator_id, player.id, os.environ["SECRET_KEY"], now + timedelta(hours=1)
            )
            tables.join_table(
                session,
                Principal(operator_id, player.id),
                view.table.id,
                buyin=None,
                invite_code=None,
                client_seed=None,
                now=now,
            )
            tokens.append(token)
        return view.table.match_id, tokens

    for i in range(matches):
        out.append(in_unit(session, seated, i))
    session.close()
    app.extensions["gin"]["engine"].dispose()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--matches", type=int, default=16, help="matches played at once")
    parser.add_argument("--seconds", type=float, default=5.0, help="per phase")
    parser.add_argument(
        "--rounds", type=int, default=3, help="baseline and play phases, alternated"
    )
    parser.add_argument("--workers", type=int, default=default_workers())
    parser.add_argument(
        "--close", action="store_true", help="a new connection per request instead of keep-alive"
    )
    args = parser.parse_args()
    keep_alive = not args.close
    sys.path.insert(0, str(ROOT))
    from tests.conftest import throwaway_postgres

    os.environ["SECRET_KEY"] = secrets.token_hex(16)
    with throwaway_postgres(database_base_url()) as url:
        queue = prepare(url, args.matches * (args.rounds + 4))
        with gunicorn(url, args.workers, os.environ["SECRET_KEY"]) as port:
            # Warm up: right after prepare() the first healthz phase ran at half speed, and a
            # whole unmeasured play phase warms the workers' pools and PostgreSQL's backends
            # (as bench/deposits.py does).
            asyncio.run(baseline(port, args.matches, 3.0, keep_alive))
            asyncio.run(play(port, queue, args.matches, args.seconds, keep_alive))
            print(describe(args.workers, args.matches, args.seconds, keep_alive))
            ratios: list[float] = []
            latencies: list[float] = []
            kinds: list[str] = []
            finished = 0
            for _ in range(args.rounds):
                before = cpu_seconds()
                count, elapsed, lat, fail = asyncio.run(
                    baseline(port, args.matches, args.seconds, keep_alive)
                )
                base_rate = report("healthz", count, elapsed, lat, fail)
                report_cpu(before, count)
                before = cpu_seconds()
                result = asyncio.run(play(port, queue, args.matches, args.seconds, keep_alive))
                spent = cpu_seconds()
                report("reads", len(result["reads"]), result["elapsed"], result["reads"], 0)
                act_rate = report(
                    "actions",
                    len(result["acts"]),
                    result["elapsed"],
                    result["acts"],
                    result["failures"],
                )
                report_cpu(before, len(result["reads"]) + len(result["acts"]), spent)
                # Keep-alive connections stay with the worker that accepted them, and the OS
                # shares the CPU per worker process: clients sharing a crowded worker wait
                # longer than one alone on its worker, which this spread shows.
                print(
                    f"{'':9} each client's mean action latency, ms: "
                    + " ".join(f"{m:.0f}" for m in result["client_means"])
                )
                ratios.append(act_rate / base_rate)
                latencies += result["acts"]
                kinds += result["kinds"]
                finished += result["finished"]
            reads = asyncio.run(state_reads(port))
            total = sum(reads.values())
            if total:
                # Each worker keeps the states it decoded: a match whose requests come back to
                # the same worker (a keep-alive connection) is read without its state.
                print(
                    f"match reads that found the state kept by their worker: "
                    f"{reads['kept'] / total:.0%} of {total:.0f}"
                )
            print(f"matches finished: {finished}; actions by kind, all rounds:")
            by_kind(latencies, kinds)
            print(
                summary(
                    "actions/healthz",
                    ratios,
                    latencies,
                    "target: >= 400 actions/s, action p99 < 50 ms",
                )
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
