"""Tournaments at speed, through the HTTP API on PostgreSQL and Redis with a real worker.

Starts the simulator's service (``service.simulate.embedded_service``: gunicorn and a Celery
worker with beat) on a throwaway PostgreSQL database and this run's own Redis queue, then:

1. **The bracket.** ``--knockouts`` 32-entrant Gin knockouts (First To Knock), played by bot
   clients through the API, every match of a round at once (``service.simulate``'s bots). The
   delay from a round's last match ending (its last action answered) to the next round's
   matches dealt (readable in the tournament), and from every match's end to its result
   recorded by the worker; p50 / p99 of each (target: next round dealt within 1 s, p99).
2. **Registration.** ``--entrants`` players register at once (``--concurrency`` clients
   with keep-alive connections, as in bench/harness.py) into sit-and-go knockouts of 8,
   each full field starting its tournament (fees, draw, four matches dealt); the baseline is
   the same number of seats taken at two-seat Gin tables by the same clients (each second
   seat deals the match). p50 / p99 of both and the ratio registration / seat (p50, p99).
   Players, deposits and tokens are made first, untimed.

    .venv/bin/python bench/tournaments.py [--knockouts 1] [--entrants 1000] [--concurrency 50]

Needs PostgreSQL (BENCH_DATABASE_URL / TEST_DATABASE_URL / local) and Redis
(BENCH_BROKER_URL / TEST_BROKER_URL / redis://127.0.0.1:6379/0).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from harness import Http, database_base_url, percentile  # noqa: E402

FIELD = 8  # each sit-and-go of the registration phase
BUY_IN, FEE = 500, 25


def _ms(values: list[float]) -> str:
    if not values:
        return "n=0"
    return (
        f"p50 {percentile(values, 50):7.1f} ms   p99 {percentile(values, 99):7.1f} ms   "
        f"max {max(values) * 1000:7.1f} ms   n={len(values)}"
    )


def _bots(operator: Any, count: int, deposit: int, tag: str) -> list[tuple[str, str]]:
    """``count`` funded players: (player id, token), made by 8 threads."""

    def one(i: int) -> tuple[str, str]:
        player = operator.create_player(f"bench-{tag}-{secrets.token_hex(4)}-{i}", f"B{i}")
        operator.deposit(player["id"], deposit, "EUR")
        return player["id"], operator.player_token(player["id"], ttl_seconds=3600)["token"]

    with ThreadPoolExecutor(max_workers=8) as pool:
        return list(pool.map(one, range(count)))


def _round(
    operator: Any, tid: str, number: int, clients: dict[str, Any]
) -> tuple[dict[str, float], dict[str, float]]:
    """Play every match of round ``number`` at once: (each match's end, each result's first
    sight in the tournament, read meanwhile and after), monotonic seconds."""
    from service.simulate import SimulatedMatch, _play_match

    now = operator.tournament(tid)
    players = {e["seat"]: e["player_id"] for e in now["entries"]}
    pairings = now["rounds"][number - 1]["matches"]
    ended: dict[str, float] = {}
    seen: dict[str, float] = {}
    play = argparse.Namespace(max_actions=20_000)

    def one(m: dict[str, Any]) -> None:
        result = SimulatedMatch(0, "first_to_knock", match_id=m["match_id"])
        seats = [players[m["first_seat"]], players[m["second_seat"]]]
        _play_match([clients[p] for p in seats], result, play)
        ended[m["match_id"]] = time.monotonic()

    with ThreadPoolExecutor(max_workers=len(pairings)) as pool:
        playing = [pool.submit(one, m) for m in pairings]
        while not all(f.done() for f in playing):  # results recorded meanwhile
            _look(operator, tid, number, seen)
            time.sleep(0.02)
        for f in playing:
            f.result()
    return ended, seen


def _look(operator: Any, tid: str, number: int, seen: dict[str, float]) -> dict[str, Any]:
    """The tournament now, each result of round ``number`` noted the first time it is seen."""
    now = dict(operator.tournament(tid))
    at = time.monotonic()
    for m in now["rounds"][number - 1]["matches"]:
        if m["winner_seat"] is not None:
            seen.setdefault(m["match_id"], at)
    return now


def bracket(operator: Any, args: argparse.Namespace) -> tuple[list[float], list[float]]:
    """Play ``args.knockouts`` 32-entrant knockouts: (next round dealt after the round's last
    match ended, each match's result recorded after it ended), in seconds."""
    next_round: list[float] = []
    recorded: list[float] = []
    for k in range(args.knockouts):
        tid = operator.create_tournament(
            format="first_to_knock",
            currency="EUR",
            buy_in=BUY_IN,
            fee=FEE,
            entrants=32,
            name=f"bench 32 #{k}",
            clock={"turn_seconds": 120, "bank_seconds": 600},
        )["id"]
        clients = {}
        for player, token in _bots(operator, 32, BUY_IN + FEE, f"ko{k}"):
            clients[player] = operator.as_(token)
            clients[player].register(tid)
        number = 1
        while operator.tournament(tid)["status"] == "running":
            ended, seen = _round(operator, tid, number, clients)
            last = max(ended.values())
            while True:  # the worker records each result; the last one deals the next round
                now = _look(operator, tid, number, seen)
                at = time.monotonic()
                if now["status"] == "finished":
                    break
                if len(now["rounds"]) > number and all(
                    m["match_id"] for m in now["rounds"][number]["matches"]
                ):
                    next_round.append(at - last)
                    break
                if at - last > 60:
                    raise SystemExit(f"round {number} of {tid} not recorded in 60 s")
                time.sleep(0.01)  # the worker records it in another process
            recorded += [max(0.0, seen[m] - ended[m]) for m in seen]
            number += 1
        assert operator.tournament(tid)["status"] == "finished", tid
        assert operator.audit_tournament(tid)["ok"], tid
        print(f"knockout {tid}: {number - 1} rounds, finished and audited", file=sys.stderr)
    return next_round, recorded


async def _at_once(
    port: int, jobs: list[tuple[str, str, Any]], concurrency: int, starts: list[float] | None = None
) -> list[float]:
    """Each job ``(path, token, body)`` POSTed once, by ``concurrency`` clients at once;
    the latencies (a refusal stops the run). Those whose answer is a running tournament (the
    registration that filled its field and started it) are also added to ``starts``."""
    latencies: list[float] = []
    queue = list(reversed(jobs))

    async def client() -> None:
        http = Http(port)
        while queue:
            path, token, body = queue.pop()
            start = time.perf_counter()
            status, answer = await http.request(
                "POST", path, token, body, {"Idempotency-Key": secrets.token_hex(8)}
            )
            latencies.append(time.perf_counter() - start)
            if starts is not None and answer.get("status") == "running":
                starts.append(latencies[-1])
            if status not in (200, 201):
                raise SystemExit(f"POST {path}: {status} {answer}")
        await http.close()

    await asyncio.gather(*(client() for _ in range(concurrency)))
    return latencies


def registration(operator: Any, port: int, args: argparse.Namespace) -> tuple[list[float], ...]:
    """(registrations, table seats): each one's latency, ``args.entrants`` of each."""
    count = args.entrants // FIELD * FIELD
    # The baseline: two-seat Gin tables, every seat taken by the same clients.
    tables = [
        operator.create_table(
            game="gin",
            format="match_play",
            currency="EUR",
            stake=BUY_IN,
            name=f"bench {i}",
            clock={"turn_seconds": 120, "bank_seconds": 600, "fill_timeout_seconds": 600},
        )["id"]
        for i in range(count // 2)
    ]
    sitters = _bots(operator, count, BUY_IN, "seat")
    seat_jobs: list[tuple[str, str, Any]] = [
        (f"/v1/tables/{tables[i // 2]}/seats", token, {}) for i, (_p, token) in enumerate(sitters)
    ]
    tournaments = [
        operator.create_tournament(
            format="first_to_knock",
            currency="EUR",
            buy_in=BUY_IN,
            fee=FEE,
            entrants=FIELD,
            name=f"bench sng {i}",
            clock={"turn_seconds": 120, "bank_seconds": 600},
        )["id"]
        for i in range(count // FIELD)
    ]
    entrants = _bots(operator, count, BUY_IN + FEE, "sng")
    # Interleaved: the fields fill together, as a lobby's do.
    entry_jobs: list[tuple[str, str, Any]] = [
        (f"/v1/tournaments/{tournaments[i % len(tournaments)]}/entries", token, None)
        for i, (_p, token) in enumerate(entrants)
    ]
    seats = asyncio.run(_at_once(port, seat_jobs, args.concurrency))
    starts: list[float] = []
    entries = asyncio.run(_at_once(port, entry_jobs, args.concurrency, starts))
    print(f"registration that starts its tournament  {_ms(starts)}")
    started = [operator.tournament(t)["status"] for t in tournaments]
    assert started == ["running"] * len(tournaments), sorted(set(started))
    return entries, seats


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--knockouts", type=int, default=1, help="32-entrant knockouts played")
    parser.add_argument("--entrants", type=int, default=1000, help="registrations (and seats)")
    parser.add_argument("--concurrency", type=int, default=50, help="clients at once")
    parser.add_argument("--service-log", help="the service's output (debugging)")
    args = parser.parse_args()

    from service.client import GinClient
    from service.simulate import embedded_service
    from tests.conftest import throwaway_postgres
    from tests.integration.workers import Broker

    broker = Broker(
        os.environ.get("BENCH_BROKER_URL")
        or os.environ.get("TEST_BROKER_URL")
        or "redis://127.0.0.1:6379/0"
    )
    try:
        with throwaway_postgres(database_base_url()) as url:
            os.environ.update(DATABASE_URL=url, **broker.env)
            log = Path(args.service_log) if args.service_log else None
            with embedded_service(log) as (base, key), GinClient(base, key, timeout=60) as op:
                port = int(base.rsplit(":", 1)[1])
                print(
                    f"load average before: {os.getloadavg()[0]:.2f}; {os.cpu_count()} CPUs; "
                    "gunicorn 2 workers x 8 threads, one Celery worker (concurrency 2)"
                )
                next_round, recorded = bracket(op, args)
                print(f"next round dealt    {_ms(next_round)}   (target p99 <= 1000 ms)")
                print(f"result recorded     {_ms(recorded)}")
                entries, seats = registration(op, port, args)
                print(f"table seat (base)   {_ms(seats)}   concurrency {args.concurrency}")
                print(
                    f"registration        {_ms(entries)}   into {len(entries) // FIELD} x {FIELD}"
                )
                print(
                    "ratio registration / seat: "
                    f"p50 {percentile(entries, 50) / percentile(seats, 50):.2f}, "
                    f"p99 {percentile(entries, 99) / percentile(seats, 99):.2f}"
                )
    finally:
        broker.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
