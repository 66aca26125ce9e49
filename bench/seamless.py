"""Seamless wallets beside transfer mode, through gunicorn, PostgreSQL, a real Celery worker and
the reference operator wallet (``python -m refwallet serve``) as its own process.

Two operators share the run: one in ``transfer`` mode for EUR (its players funded by deposits,
not timed), one in ``seamless`` mode for EUR (``PUT /v1/wallet-settings/EUR`` over HTTP; its
players registered in the reference wallet beforehand, not timed), whose stakes are debits of
the reference wallet and whose payouts are credits to it.

1. Seats/s: ``--players`` fresh players (two to a Match Play table, ``--stake`` a seat) take
   their seats (``POST /v1/tables/{id}/seats`` with the player's token and an
   ``Idempotency-Key``) from ``--clients`` concurrent clients; the second seat of a table
   starts its match. One unmeasured round per mode warms up; then ``--rounds`` rounds per
   mode, alternating (transfer, seamless, seamless, transfer, ...: which goes first
   alternates too). Prints each round's seats/s, seat latency and CPU per seat (gunicorn,
   PostgreSQL, the reference wallet), the medians and the ratio seamless / transfer (target
   >= 0.5). After each seamless round every player's balance at the wallet is checked (its
   start less the stake).
2. End to payout: ``--matches`` matches per mode (both seats taken over HTTP, not timed), ended
   one at a time, the modes alternating (after two unmeasured ones per mode), by the first
   player resigning (``POST /v1/matches/{id}/actions`` ``{"action": "RESIGN"}``). Seamless:
   from sending the resignation until the reference wallet shows the winner's credit applied
   (``GET /admin/players/{external_id}`` every ``--poll`` ms); transfer, the baseline: until
   the settlement is readable (``GET /v1/matches/{id}/settlement`` every ``--poll`` ms). The
   worker settles the match (the API kicks the outbox relay after the commit) and, seamless,
   sends the credits right after its commit (``settlement.settle_match``); no beat runs, so a
   credit left to the wallet sweep would not arrive (a problem). Prints p50/p99 of both, the
   ratio, and where the time went from the rows (the match's ``finished_at``, the settlement's
   ``created_at``, the credit's ``created_at`` and ``completed_at``).

A final table gives the figures with PASS/FAIL against the targets. Exits 0 whatever the
figures, 1 on a functional error (a seat or resignation refused, a payout that never came, a
wallet balance that does not add up).

    .venv/bin/python bench/seamless.py [--players 64] [--rounds 4] [--matches 30]
        [--clients 8] [--poll 5] [--workers N]

Needs PostgreSQL (BENCH_DATABASE_URL, else TEST_DATABASE_URL, else the local server) and
Redis (BENCH_BROKER_URL, else TEST_BROKER_URL, else redis://127.0.0.1:6379/0).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

from harness import (  # noqa: E402
    Http,
    cpu_seconds,
    database_base_url,
    default_workers,
    describe,
    free_port,
    gunicorn,
    percentile,
    report_cpu,
)

from tests.integration.workers import Broker  # noqa: E402

MODES = ("transfer", "seamless")
START = 100_000  # every player's money: deposited (transfer) or at the wallet (seamless)
FEE_BPS = 500
#: Part 2's unmeasured matches per mode first: the worker's first settlements (a pool process's
#: first task, its first statements) would otherwise be the baseline's p99.
WARM_MATCHES = 2


# --- the reference wallet, its own process -------------------------------------------------


class RefWallet:
    """``python -m refwallet serve`` on ``port`` (chosen before the operator's wallet
    settings name it), its SQLite file in ``folder``; its admin API over HTTP."""

    def __init__(self, folder: str, port: int, secret: str) -> None:
        command = [sys.executable, "-m", "refwallet", "serve", "--port", str(port)]
        command += ["--db", str(Path(folder) / "refwallet.sqlite")]
        env = {**os.environ, "REFWALLET_SECRET": secret}  # never on a command line
        self.port = port
        self.log = Path(folder) / "refwallet.log"  # its request log (werkzeug's, on stderr)
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=log, text=True
            )
        assert self.process.stdout is not None
        line = self.process.stdout.readline().strip()
        if not line.startswith("listening on http://"):
            self.stop()
            raise RuntimeError(
                f"the reference wallet did not start: {line!r} {self.log.read_text()[-500:]}"
            )
        self.url = line.removeprefix("listening on ")

    def admin(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.url + "/admin" + path,
            data=data,
            method=method,
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            return json.loads(answer.read())

    def register(self, external_id: str, balance: int) -> None:
        body = {"currency": "EUR", "balance": balance, "disabled": False}
        self.admin("PUT", f"/players/{external_id}", body)

    def balance(self, external_id: str) -> int:
        return int(self.admin("GET", f"/players/{external_id}")["balance"])

    def cpu(self) -> float:
        """CPU seconds the wallet process used so far (Linux /proc; 0 elsewhere)."""
        try:
            with open(f"/proc/{self.process.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()


# --- set-up through the use cases (not timed) ----------------------------------------------


@dataclass(frozen=True)
class Seat:
    table_id: str
    match_id: str
    player_id: str
    external_id: str
    token: str


class Setup:
    """The two operators and a way to make fresh tables and players for either."""

    def __init__(self, url: str, secret_key: str) -> None:
        from service import create_app
        from service.clock import utcnow
        from service.usecases.auth import Principal
        from service.usecases.operators import create_operator
        from service.usecases.unit_of_work import run

        self.secret_key = secret_key
        self.app = create_app({"DATABASE_URL": url, "SECRET_KEY": secret_key})
        self.session = self.app.extensions["gin"]["sessionmaker"]()
        self.operators: dict[str, Any] = {}
        self.keys: dict[str, str] = {}
        for mode in MODES:
            operator, issued = run(
                self.session, create_operator, self.session, f"Bench {mode}", utcnow()
            )
            self.operators[mode] = Principal(operator.id)
            self.keys[mode] = issued.secret
        self.made = 0
        self.wallet: RefWallet | None = None

    def close(self) -> None:
        self.session.close()
        self.app.extensions["gin"]["engine"].dispose()

    def seats(self, mode: str, tables: int, stake: int) -> list[Seat]:
        """``tables`` fresh two-seat Match Play tables of ``mode``'s operator and two fresh
        players for each (funded: deposits, or registered at the wallet), in seat order."""
        from service.clock import utcnow
        from service.games.common.settings import MatchSettings
        from service.usecases import players, wallets
        from service.usecases import tables as tables_
        from service.usecases.auth import mint_player_token
        from service.usecases.unit_of_work import run

        operator = self.operators[mode]
        settings = MatchSettings.from_dict(
            {
                "format": "match_play",
                "stake": stake,
                "fee": {"bps": FEE_BPS},
                "clock": {"turn_seconds": 600, "bank_seconds": 600},
            }
        )
        expires = utcnow() + timedelta(hours=2)
        out: list[Seat] = []
        for _ in range(tables):
            self.made += 1
            n = self.made
            now = utcnow()
            view = run(
                self.session,
                tables_.create_table,
                self.session,
                operator,
                name=f"bench {n}",
                currency="EUR",
                settings=settings,
                practice=False,
                private=False,
                now=now,
            )
            for i in range(2):
                external_id = f"{mode[0]}{n}.{i}.{secrets.token_hex(3)}"
                player = run(
                    self.session,
                    players.create_player,
                    self.session,
                    operator,
                    external_id,
                    "P",
                    None,
                    now,
                )
                if mode == "transfer":
                    key = f"in-{player.id}"
                    run(
                        self.session,
                        wallets.deposit,
                        self.session,
                        operator,
                        player.id,
                        "EUR",
                        START,
                        key,
                        now,
                    )
                else:
                    assert self.wallet is not None
                    self.wallet.register(external_id, START)
                token = mint_player_token(operator.operator_id, player.id, self.secret_key, expires)
                out.append(Seat(view.table.id, view.table.match_id, player.id, external_id, token))
        return out


# --- part 1: seats per second --------------------------------------------------------------


@dataclass
class Round:
    mode: str
    seats: int
    seconds: float
    latencies: list[float] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.seats / self.seconds


async def sit(http: Http, seat: Seat) -> tuple[int, Any]:
    return await http.request(
        "POST",
        f"/v1/tables/{seat.table_id}/seats",
        seat.token,
        {},
        {"Idempotency-Key": secrets.token_hex(8)},
    )


async def take_seats(port: int, mode: str, seats: list[Seat], clients: int) -> Round:
    """Every seat of ``seats`` taken, in order, by ``clients`` clients at once."""
    todo = list(reversed(seats))
    found = Round(mode, len(seats), 0.0)

    async def client() -> None:
        http = Http(port)
        while todo:
            seat = todo.pop()
            start = time.perf_counter()
            status, body = await sit(http, seat)
            found.latencies.append(time.perf_counter() - start)
            if status != 201:
                found.refused.append(f"seat {seat.player_id}: {status} {body}")
        await http.close()

    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    found.seconds = time.perf_counter() - started
    return found


def seat_round(port: int, setup: Setup, mode: str, args: argparse.Namespace) -> Round:
    seats = setup.seats(mode, args.players // 2, args.stake)
    wallet = setup.wallet
    assert wallet is not None
    before, wallet_before = cpu_seconds(), wallet.cpu()
    found = asyncio.run(take_seats(port, mode, seats, args.clients))
    spent, wallet_spent = cpu_seconds(), wallet.cpu()
    if mode == "seamless":  # each player's stake left its balance at the wallet, once
        for seat in seats:
            balance = wallet.balance(seat.external_id)
            if balance != START - args.stake:
                found.refused.append(f"wallet balance of {seat.external_id}: {balance}")
    print(
        f"{mode:<9} {found.rate:7.1f} seats/s   p50 {percentile(found.latencies, 50):6.1f} ms   "
        f"p99 {percentile(found.latencies, 99):6.1f} ms   n={found.seats}   "
        f"refused={len(found.refused)}"
    )
    report_cpu(before, found.seats, spent)
    if mode == "seamless":
        used = (wallet_spent - wallet_before) / found.seats * 1000
        before_unit = debit_times(setup, [seat.player_id for seat in seats])
        print(
            f"{'':9} cpu per seat: refwallet {used:.2f} ms; rows: debit intent written -> "
            f"seat's unit began p50 {percentile(before_unit, 50):.1f} ms, p99 "
            f"{percentile(before_unit, 99):.1f} ms (the wallet call and its own small units; "
            f"the rest of a seat is the seat's unit)"
        )
    for problem in found.refused[:3]:
        print(f"{'':9} {problem}")
    return found


def debit_times(setup: Setup, player_ids: list[str]) -> list[float]:
    """Each booked debit of ``player_ids``: from its intent's ``created_at`` (before the call)
    to its ``completed_at`` (the seat's unit's clock, taken as that unit began), seconds."""
    from sqlalchemy import select

    from service.db.wallet_models import WalletCall

    with setup.session.begin():
        rows = setup.session.execute(
            select(WalletCall.created_at, WalletCall.completed_at).where(
                WalletCall.player_id.in_(player_ids),
                WalletCall.kind == "debit",
                WalletCall.state == "booked",
            )
        ).all()
    return [(done - made).total_seconds() for made, done in rows if done is not None] or [0.0]


def seats_per_second(port: int, setup: Setup, args: argparse.Namespace) -> dict[str, list[Round]]:
    for mode in MODES:  # warm-up: workers' pools, PostgreSQL's backends, the wallet
        asyncio.run(take_seats(port, mode, setup.seats(mode, 8, args.stake), args.clients))
    print(describe(args.workers, args.clients, 0, True).replace("; 0 s per phase", ""))
    print(
        f"part 1: seats/s, {args.players} players taking seats at {args.players // 2} two-player "
        f"tables (stake {args.stake}), {args.clients} clients at once; {args.rounds} rounds "
        f"per mode, alternating"
    )
    rounds: dict[str, list[Round]] = {mode: [] for mode in MODES}
    for n in range(args.rounds):
        for mode in MODES if n % 2 == 0 else tuple(reversed(MODES)):
            rounds[mode].append(seat_round(port, setup, mode, args))
    medians = {mode: statistics.median(r.rate for r in rounds[mode]) for mode in MODES}
    ratios = [s.rate / t.rate for t, s in zip(rounds["transfer"], rounds["seamless"], strict=True)]
    print(
        f"median seats/s: transfer {medians['transfer']:.1f}, seamless {medians['seamless']:.1f}; "
        f"ratio seamless/transfer per round: {', '.join(f'{r:.2f}' for r in ratios)}; "
        f"ratio of the medians {medians['seamless'] / medians['transfer']:.2f} (target >= 0.5)"
    )
    return rounds


# --- part 2: end to payout -----------------------------------------------------------------


@dataclass
class Ended:
    mode: str
    match_id: str
    seconds: float  # from sending the resignation to seeing the payout
    resign: float  # the resignation's own answer


async def end_match(
    port: int, wallet: RefWallet, mode: str, pair: list[Seat], args: argparse.Namespace
) -> Ended | str:
    """Resign ``pair``'s match (the first player) and wait for the winner's payout: an
    :class:`Ended`, or the problem."""
    loser, winner = pair
    http, poller = Http(port), Http(port)
    refwallet = Http(wallet.port, keep_alive=False)
    try:
        start = time.perf_counter()
        status, body = await http.request(
            "POST", f"/v1/matches/{loser.match_id}/actions", loser.token, {"action": "RESIGN"}
        )
        resigned = time.perf_counter() - start
        if status != 200 or body["status"] == "playing":
            return f"resign {loser.match_id}: {status} {body}"
        while True:
            if mode == "seamless":
                path = f"/admin/players/{winner.external_id}"
                status, body = await refwallet.request("GET", path)
                done = status == 200 and body["balance"] != START - args.stake
            else:
                path = f"/v1/matches/{loser.match_id}/settlement"
                status, body = await poller.request("GET", path, winner.token)
                done = status == 200
            seconds = time.perf_counter() - start
            if done:
                break
            if status not in (200, 404) or seconds > args.settle_timeout:
                return f"{mode} payout of {loser.match_id}: {status} {body} after {seconds:.1f} s"
            await asyncio.sleep(args.poll / 1000)
        if mode == "seamless":
            paid = 2 * args.stake - 2 * args.stake * FEE_BPS // 10_000
            if body["balance"] != START - args.stake + paid:
                return f"credit of {loser.match_id}: wallet balance {body['balance']}"
        return Ended(mode, loser.match_id, seconds, resigned)
    finally:
        await http.close()
        await poller.close()


def _ms(values: list[float]) -> str:
    if not values:
        return "none"
    return (
        f"p50 {percentile(values, 50):6.1f} ms   p99 {percentile(values, 99):6.1f} ms   "
        f"max {max(values) * 1000:6.1f} ms"
    )


def end_to_payout(
    port: int, setup: Setup, args: argparse.Namespace
) -> tuple[dict[str, list[Ended]], list[str]]:
    from sqlalchemy import select

    from service.db.match_models import MatchRow, Settlement
    from service.db.wallet_models import WalletCall

    wallet = setup.wallet
    assert wallet is not None
    problems: list[str] = []
    pairs: dict[str, list[list[Seat]]] = {}
    start = time.perf_counter()
    for mode in MODES:  # both seats taken over HTTP (a seamless seat needs its debit)
        seats = setup.seats(mode, args.matches + WARM_MATCHES, args.stake)
        found = asyncio.run(take_seats(port, mode, seats, args.clients))
        problems += found.refused
        pairs[mode] = [seats[i : i + 2] for i in range(0, len(seats), 2)]
    print(
        f"part 2: end -> payout, {args.matches} matches per mode ended one at a time by a "
        f"resignation, the modes alternating, after {WARM_MATCHES} unmeasured ones per mode; "
        f"polling every {args.poll:.0f} ms; set up in {time.perf_counter() - start:.0f} s "
        f"(not timed)"
    )
    ended: dict[str, list[Ended]] = {mode: [] for mode in MODES}
    for n in range(WARM_MATCHES + args.matches):
        for mode in MODES if n % 2 == 0 else tuple(reversed(MODES)):
            got = asyncio.run(end_match(port, wallet, mode, pairs[mode][n], args))
            if isinstance(got, str):
                problems.append(got)
            elif n >= WARM_MATCHES:
                ended[mode].append(got)

    # Where the time went, from the rows: end -> settlement -> credit acknowledged.
    ids = [e.match_id for done in ended.values() for e in done]
    session = setup.session
    with session.begin():
        finished = dict(
            session.execute(
                select(MatchRow.id, MatchRow.finished_at).where(MatchRow.id.in_(ids))
            ).all()
        )
        settled = dict(
            session.execute(
                select(Settlement.match_id, Settlement.created_at).where(
                    Settlement.match_id.in_(ids)
                )
            ).all()
        )
        credits = list(
            session.execute(
                select(
                    WalletCall.match_id,
                    WalletCall.created_at,
                    WalletCall.completed_at,
                    WalletCall.attempts,
                ).where(
                    WalletCall.match_id.in_(ids),
                    WalletCall.kind == "credit",
                    WalletCall.amount > 0,
                )
            ).all()
        )
    for mode in MODES:
        done = ended[mode]
        seen = [e.seconds for e in done]
        label = "wallet credit seen" if mode == "seamless" else "settlement read"
        print(f"{mode:<9} end -> {label:<18} {_ms(seen)}   n={len(seen)}")
        print(f"{'':9} the resignation's answer     {_ms([e.resign for e in done])}")
        rows = [(settled[e.match_id] - finished[e.match_id]).total_seconds() for e in done]
        print(f"{'':9} rows: finished -> settlement {_ms(rows)}")
    tries = [c.attempts for c in credits]
    print(
        f"{'':9} rows: settlement -> credit acknowledged "
        + _ms(
            [
                (c.completed_at - settled[c.match_id]).total_seconds()
                for c in credits
                if c.completed_at is not None
            ]
        )
        + f"   credits {len(credits)}, tries {sum(tries)}"
    )
    return ended, problems


# --- the run -------------------------------------------------------------------------------


@contextmanager
def seamless_operator(port: int, setup: Setup, folder: str, timeout_ms: int) -> Iterator[None]:
    """The seamless operator's EUR wallet set over HTTP (the answer names the signing secret,
    once), then the reference wallet started on the port the settings name."""
    wallet_port = free_port()
    http = Http(port)
    body = {"mode": "seamless", "url": f"http://127.0.0.1:{wallet_port}", "timeout_ms": timeout_ms}

    async def put() -> tuple[int, Any]:
        try:
            return await http.request(
                "PUT", "/v1/wallet-settings/EUR", setup.keys["seamless"], body
            )
        finally:
            await http.close()

    status, answer = asyncio.run(put())
    if status != 200 or "secret" not in answer:
        raise RuntimeError(f"PUT /v1/wallet-settings/EUR: {status} {answer}")
    setup.wallet = RefWallet(folder, wallet_port, answer["secret"])
    try:
        yield
    finally:
        setup.wallet.stop()


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def percentiles(
    label: str, samples: dict[str, list[float]], p: float
) -> tuple[str, float, float, float, str, str]:
    """A table row: the p-th percentile of each mode and their ratio, no target."""
    transfer, seamless = (percentile(samples[m], p) for m in ("transfer", "seamless"))
    return (label, transfer, seamless, seamless / transfer, "", "")


def final_table(
    rounds: dict[str, list[Round]], ended: dict[str, list[Ended]], problems: list[str]
) -> None:
    rates = {m: statistics.median(r.rate for r in rounds[m]) for m in MODES}
    seat_ms = {m: [t for r in rounds[m] for t in r.latencies] for m in MODES}
    pay = {m: [e.seconds for e in ended[m]] or [float("nan")] for m in MODES}
    ratio = rates["seamless"] / rates["transfer"]
    rows = [
        (
            "seats/s, median of rounds",
            rates["transfer"],
            rates["seamless"],
            ratio,
            ">= 0.5 ratio",
            verdict(ratio >= 0.5),
        ),
        percentiles("seat p50 ms", seat_ms, 50),
        percentiles("seat p99 ms", seat_ms, 99),
        percentiles("end -> payout p50 ms", pay, 50),
        (
            *percentiles("end -> payout p99 ms", pay, 99)[:4],
            "< 1000 ms seamless",
            verdict(percentile(pay["seamless"], 99) < 1000),
        ),
    ]
    print()
    print(f"{'figure':<28} {'transfer':>9} {'seamless':>9} {'ratio':>6}  {'target':<19} result")
    for name, transfer, seamless, r, target, result in rows:
        print(f"{name:<28} {transfer:9.1f} {seamless:9.1f} {r:6.2f}  {target:<19} {result}")
    print(
        f"{'functional problems':<28} {len(problems):>9}{'':27} {'none':<19} "
        f"{verdict(not problems)}"
    )
    print(
        "(payout: transfer = the settlement readable over the API, the baseline; seamless = the "
        "credit applied at the operator's wallet)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--players", type=int, default=64, help="part 1: seats taken per round")
    parser.add_argument("--rounds", type=int, default=4, help="part 1: rounds per mode")
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients")
    parser.add_argument("--matches", type=int, default=30, help="part 2: matches per mode")
    parser.add_argument("--stake", type=int, default=100, help="a seat's stake (EUR cents)")
    parser.add_argument("--poll", type=float, default=5.0, help="ms between payout reads")
    parser.add_argument("--settle-timeout", type=float, default=15.0, help="seconds")
    parser.add_argument("--timeout-ms", type=int, default=3000, help="the wallet's timeout_ms")
    parser.add_argument("--workers", type=int, default=default_workers())
    args = parser.parse_args()
    if args.players < 2 or args.players % 2 or args.rounds < 1 or args.matches < 1:
        parser.error("--players must be even and >= 2; --rounds and --matches >= 1")

    from tests.conftest import throwaway_postgres
    from tests.integration.workers import wait_until, worker

    broker = Broker(
        os.environ.get("BENCH_BROKER_URL")
        or os.environ.get("TEST_BROKER_URL")
        or "redis://127.0.0.1:6379/0"
    )
    # gunicorn and the worker (started with this environment) use this run's own queue, and
    # may call the reference wallet on loopback.
    os.environ.update(
        broker.env, SECRET_KEY=secrets.token_hex(16), WEBHOOK_ALLOW_PRIVATE_NETWORKS="1"
    )
    started = time.perf_counter()
    try:
        with (
            throwaway_postgres(database_base_url()) as url,
            tempfile.TemporaryDirectory(prefix="bench-seamless-") as folder,
            gunicorn(url, args.workers, os.environ["SECRET_KEY"]) as port,
            worker(url, broker, concurrency=2),
        ):
            setup = Setup(url, os.environ["SECRET_KEY"])
            try:
                with seamless_operator(port, setup, folder, args.timeout_ms):
                    rounds = seats_per_second(port, setup, args)
                    ended, problems = end_to_payout(port, setup, args)
                    wait_until(broker.idle, 30, "the worker to finish its tasks")
            finally:
                setup.close()
    finally:
        broker.cleanup()
    problems += [p for mode in MODES for r in rounds[mode] for p in r.refused]
    final_table(rounds, ended, problems)
    for problem in problems[:10]:
        print(f"problem: {problem}")
    print(f"ran in {time.perf_counter() - started:.0f} s")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
