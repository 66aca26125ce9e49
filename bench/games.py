"""Rummy through gunicorn, PostgreSQL and a real settlement worker, beside two-player Gin in
the same run.

1. Actions/s: 16 tables of 4-player Rummy (``rummy_deals``, 2 deals) and 16 tables of
   two-player Gin (bench/play.py's Match Play tables), one scripted client per table, the
   two games' phases alternating for ``--rounds`` rounds (which one goes first alternates
   too). A client reads the view of the player to act (``GET /v1/matches/{id}`` with that
   player's token) and posts one of its ``legal_actions`` (``POST .../actions`` with
   ``expected_version``): Gin as bench/play.py's client chooses (a knock whenever it may),
   Rummy as the greedy practice bot of service/games/bots.py decides (draw, meld, lay off,
   discard), as ``gin-service simulate`` plays it. An action's answer is the actor's own view:
   when the same player acts again the client decides on it without reading again. A match
   still being played when its phase ends goes back to its queue and is played on in the
   next phase; a finished one is replaced by the next prepared one (more are prepared
   between phases, not timed, as the finished ones call for). Prints each phase's reads
   and actions per second, p50/p99 and CPU per request (/proc), each round's ratio
   Rummy actions / Gin actions and their median (target >= 0.8), Rummy's pooled action
   latency (target p99 < 60 ms) and its latency by kind of action.
2. Settlement of continuous Rummy tables: a Celery worker (``--concurrency 2``, on a Redis
   queue of this run's own) is started and settles the matches part 1 finished; then
   ``--hand-tables`` ``rummy_per_hand`` tables (stake_per_point 1, six players seated with a
   buy-in of ``--buyin``) are played hand after hand over HTTP, as in part 1, by one client
   per table, which between two of its table's hands plays a two-player Gin First To Knock
   match (one hand, another after a dead hand) to its end: the baseline, the two alternating
   (which one goes first alternates too). Rummy is played as in part 1, Gin as the practice
   bot plays First To Knock (service/games/gin/bot.py, ``eager``), whose matches take a hand
   or two: part 1's random Gin choices make mostly dead hands, hundreds of actions a match.
   A table's first hand is dealt to the first two players to sit down (the others sat down
   during it): it is played unmeasured, and from the second on every hand is dealt to all
   six. When a hand ends the client polls, each on a connection of its own and every
   ``--poll`` ms, ``GET /v1/matches/{hand}/settlement`` until the hand's settlement is there
   and ``GET /v1/tables/{id}`` until the table's ``match_id`` names the next hand (the
   worker deals it in the settlement's transaction); a Gin match's settlement is polled the
   same way; both from the answer of the action that ended the hand or match. Prints that
   settlement latency's p50/p99 for the ``--hands`` measured hands of every table and for as
   many Gin matches, the ratios Rummy / Gin (target Rummy p99 < 1 s), the end-to-next-hand
   latency, the rows' clocks (the hand's ``finished_at`` to the settlement's ``created_at``,
   which is the next hand's ``started_at``), the load average, and checks that every
   statement's payouts and fee add up to its escrow.

Everything is set up through the use cases (not timed) in a throwaway PostgreSQL database,
dropped at the end. Clients keep their connection open (keep-alive) unless ``--close``.

    .venv/bin/python bench/games.py [--tables 16] [--seconds 5] [--rounds 3]
        [--hand-tables 8] [--hands 5] [--buyin 2000] [--poll 5] [--close]

Needs PostgreSQL (BENCH_DATABASE_URL, else TEST_DATABASE_URL, else the local server) and
Redis (BENCH_BROKER_URL, else TEST_BROKER_URL, else redis://127.0.0.1:6379/0).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import math
import os
import random
import secrets
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
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
    gunicorn,
    percentile,
    report,
    report_cpu,
    summary,
)
from play import action_body, by_kind, choose  # noqa: E402
from play import prepare as prepare_gin  # noqa: E402

from service.games.bots import decide_multi  # noqa: E402
from service.games.gin.bot import decide as decide_gin  # noqa: E402
from tests.integration.workers import Broker  # noqa: E402

View = dict[str, Any]


# --- the two games, as a client sees them -----------------------------------------------


@dataclass(frozen=True)
class Game:
    """How a client reads whose turn it is in a view and picks that player's action."""

    name: str
    to_act: Callable[[View], int | None]
    decide: Callable[[View, random.Random], dict[str, Any]]


def _gin_to_act(view: View) -> int | None:
    hand = view["hand"]
    return None if hand is None else hand["to_act"]


def _rummy_to_act(view: View) -> int | None:
    waiting = view["play"]["to_act"]  # every seat to act, in order; none between hands
    return waiting[0] if waiting else None


def _rummy_decide(view: View, _rng: random.Random) -> dict[str, Any]:
    action = decide_multi(view["play"])  # Rummy: the legal action as listed, a body
    assert isinstance(action, dict), action
    return action


GIN = Game("gin", _gin_to_act, lambda view, rng: choose(view["hand"]["legal_actions"], rng))
#: Part 2's Gin: the practice bot's First To Knock play (knocks as soon as it may), whose
#: match takes a hand or two; part 1's random choices make mostly dead hands, replayed.
GIN_BOT = Game("gin", _gin_to_act, lambda view, _rng: decide_gin(view["hand"], eager=True))
RUMMY = Game("rummy", _rummy_to_act, _rummy_decide)


@dataclass
class Table:
    """A prepared match: its id, its players' tokens and, once read, the token of each seat
    (of each seat dealt in, at a ``rummy_per_hand`` table: its hand's match)."""

    match_id: str
    tokens: list[str]
    seats: dict[int, str] = field(default_factory=dict)
    table_id: str = ""


@dataclass
class Tally:
    reads: list[float] = field(default_factory=list)
    acts: list[float] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    failures: int = 0
    finished: int = 0
    ran_dry: bool = False


async def seat(http: Http, table: Table) -> None:
    """Learn which seat each token holds (once per match, not timed)."""
    for token in table.tokens:
        if token not in table.seats.values():
            _, view = await http.request("GET", f"/v1/matches/{table.match_id}", token)
            if view["you"] is not None:  # None: seated at the table, not dealt this hand
                table.seats[view["you"]] = token


async def play_out(
    http: Http, game: Game, table: Table, until: float, tally: Tally, rng: random.Random
) -> tuple[float, View] | None:
    """Play ``table``'s match until it ends: ``(when the answer of the action that ended it
    arrived, that answer)``; ``None`` when ``until`` (perf_counter) came first."""
    await seat(http, table)
    path = f"/v1/matches/{table.match_id}"
    mover = min(table.seats)
    view: View | None = None  # the mover's view, when an answer already gave it
    while time.perf_counter() < until:
        if view is None:
            start = time.perf_counter()
            status, view = await http.request("GET", path, table.seats[mover])
            tally.reads.append(time.perf_counter() - start)
            if status != 200:
                tally.failures += 1
                view = None
                continue
        assert view is not None
        if view["status"] != "playing":  # ended by someone else (not in this benchmark)
            return time.perf_counter(), view
        to_act = game.to_act(view)
        if to_act is None:  # between hands: read again
            view = None
            continue
        if to_act != view["you"]:
            mover, view = to_act, None
            continue
        action = game.decide(view, rng)
        start = time.perf_counter()
        status, after = await http.request(
            "POST", f"{path}/actions", table.seats[mover], action_body(action, view["version"])
        )
        answered = time.perf_counter()
        tally.acts.append(answered - start)
        kind = action["action"]
        if status == 200 and (
            after["status"] != "playing" or after["hand_number"] != view["hand_number"]
        ):
            kind += " ending a hand"  # more rows written, under the match's lock
        tally.kinds.append(kind)
        view = None
        if status != 200:
            tally.failures += 1
            continue
        if after["status"] != "playing":
            tally.finished += 1
            return answered, after
        following = game.to_act(after)
        if following == mover:
            view = after
        elif following is not None:
            mover = following
    return None


# --- part 1: actions per second ----------------------------------------------------------


async def throughput(
    port: int, game: Game, queue: list[Table], clients: int, seconds: float, keep_alive: bool
) -> tuple[Tally, float]:
    """``clients`` clients each playing a match of ``queue`` at a time for ``seconds``; a
    match unfinished at the end goes back to the queue (the next phase plays it on)."""
    tally = Tally()
    until = time.perf_counter() + seconds
    rng = random.Random(1)

    async def client() -> None:
        http = Http(port, keep_alive)
        while time.perf_counter() < until:
            if not queue:
                tally.ran_dry = True
                break
            table = queue.pop()
            if await play_out(http, game, table, until, tally, rng) is None:
                queue.append(table)
        await http.close()

    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    return tally, time.perf_counter() - started


@dataclass
class Supply:
    """A game's prepared matches: unfinished ones are played first, then new ones."""

    game: Game
    make: Callable[[int], list[Table]]
    queue: list[Table] = field(default_factory=list)
    pace: float = 0.0  # the most matches finished per second in a phase so far
    made: int = 0
    setting_up: float = 0.0  # seconds

    def top_up(self, tables: int, seconds: float) -> None:
        """Before a phase (not timed): a match for every table and, to replace the finished
        ones, twice as many again or twice as many as the fastest phase so far finished."""
        wanted = tables + max(2 * tables, math.ceil(2 * self.pace * seconds))
        missing = wanted - len(self.queue)
        if missing > 0:
            start = time.perf_counter()
            self.queue[:0] = self.make(missing)  # popped last: unfinished matches go first
            self.made += missing
            self.setting_up += time.perf_counter() - start

    def run(self, port: int, seconds: float, args: argparse.Namespace) -> tuple[Tally, float]:
        self.top_up(args.tables, seconds)
        tally, elapsed = asyncio.run(
            throughput(port, self.game, self.queue, args.tables, seconds, not args.close)
        )
        self.pace = max(self.pace, tally.finished / elapsed)
        return tally, elapsed


def phase(port: int, supply: Supply, args: argparse.Namespace) -> tuple[Tally, float]:
    """One measured phase of a game, reported: the tally and the actions per second."""
    before = cpu_seconds()
    tally, elapsed = supply.run(port, args.seconds, args)
    spent = cpu_seconds()
    name = supply.game.name
    report(f"{name} get", len(tally.reads), elapsed, tally.reads, 0)
    rate = report(f"{name} act", len(tally.acts), elapsed, tally.acts, tally.failures)
    report_cpu(before, len(tally.reads) + len(tally.acts), spent)
    if tally.ran_dry:
        print(f"{'':9} the prepared {name} matches ran out: some clients stopped early")
    return tally, rate


@contextmanager
def quiet_setup() -> Iterator[None]:
    """The set-up creates each player and makes its deposit in one transaction: the ledger
    then creates the player's accounts inside it after trying apart (a foreign key to the
    uncommitted player), as service/ledger/store.py's _create_accounts documents, and warns
    each time (psycopg too, for the aborted pipeline). Those warnings, not the errors, are
    kept out of the report."""
    loggers = [logging.getLogger(name) for name in ("service.ledger.store", "psycopg")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


def prepare(url: str, count: int, players: int, settings: dict[str, Any]) -> list[Table]:
    """``count`` tables of ``settings`` (the fields of ``POST /v1/tables``), every one of its
    ``players`` seats taken by a player funded with 1000 or the buy-in if more, who sits
    down with ``max_buyin`` (through the use cases: not timed)."""
    from datetime import timedelta

    from service import create_app
    from service.clock import utcnow
    from service.usecases import players as players_
    from service.usecases import tables, wallets
    from service.usecases.auth import Principal, mint_player_token
    from service.usecases.operators import create_operator
    from service.usecases.unit_of_work import run

    secret = os.environ["SECRET_KEY"]
    app = create_app({"DATABASE_URL": url, "SECRET_KEY": secret})
    session = app.extensions["gin"]["sessionmaker"]()
    operator = Principal(run(session, lambda: create_operator(session, "Games", utcnow())[0].id))
    table_settings = tables.settings_from(settings)
    buyin = table_settings.max_buyin if table_settings.uses_buyins else None
    deposit = max(1000, buyin or 0)

    def seated(n: int) -> Table:
        now = utcnow()
        opened = tables.create_table(
            session,
            operator,
            name=f"games {n}",
            currency="EUR",
            settings=table_settings,
            practice=False,
            private=False,
            now=now,
        )
        ids = [
            players_.create_player(session, operator, f"g{n}.{i}", "P", None, now).id
            for i in range(players)
        ]
        for player_id in ids:
            wallets.deposit(session, operator, player_id, "EUR", deposit, f"in-{player_id}", now)
            as_player = Principal(operator.operator_id, player_id)
            tables.join_table(
                session,
                as_player,
                opened.table.id,
                buyin=buyin,
                invite_code=None,
                client_seed=None,
                now=now,
            )
        expires = now + timedelta(hours=2)
        tokens = [mint_player_token(operator.operator_id, p, secret, expires) for p in ids]
        return Table(opened.table.match_id, tokens, table_id=opened.table.id)

    try:
        with quiet_setup():
            return [run(session, seated, n) for n in range(count)]
    finally:
        session.close()
        app.extensions["gin"]["engine"].dispose()


def rummy_table(players: int, deals: int) -> dict[str, Any]:
    return {
        "game": "rummy",
        "seat_count": players,
        "format": "rummy_deals",
        "target": deals,
        "stake_per_point": 1,
        "min_buyin": 300,
        "max_buyin": 300,
        "fee": {"bps": 500, "base": "WINNINGS"},
        "clock": {"turn_seconds": 600, "bank_seconds": 600},
    }


#: Part 2's baseline: a two-player Gin match of one hand (or a few, after dead hands).
FIRST_TO_KNOCK = {
    "format": "first_to_knock",
    "stake": 100,
    "fee": {"bps": 500},
    "clock": {"turn_seconds": 600, "bank_seconds": 600},
}


def gin_tables(url: str, count: int) -> list[Table]:
    """bench/play.py's Match Play tables (to 100), both seats taken."""
    with quiet_setup():
        return [Table(match_id, tokens) for match_id, tokens in prepare_gin(url, count)]


def actions_per_second(port: int, url: str, args: argparse.Namespace) -> None:
    gin = Supply(GIN, lambda n: gin_tables(url, n))
    rummy = Supply(RUMMY, lambda n: prepare(url, n, 4, rummy_table(4, args.deals)))
    # Warm up both games unmeasured (the workers' pools, PostgreSQL's backends, the code).
    for supply in (gin, rummy):
        supply.run(port, args.warmup, args)
    print(describe(args.workers, args.tables, args.seconds, not args.close))
    print(
        f"part 1: actions/s, {args.tables} tables of each game at once (Gin 2 players, "
        f"Match Play; Rummy 4 players, {args.deals} deals)"
    )
    ratios: list[float] = []
    tallies: dict[str, list[Tally]] = {"gin": [], "rummy": []}
    for n in range(args.rounds):
        rates = {}
        for supply in (gin, rummy) if n % 2 == 0 else (rummy, gin):
            tally, rates[supply.game.name] = phase(port, supply, args)
            tallies[supply.game.name].append(tally)
        ratios.append(rates["rummy"] / rates["gin"])
    acts = {name: [t for tally in kept for t in tally.acts] for name, kept in tallies.items()}
    finished = {name: sum(tally.finished for tally in kept) for name, kept in tallies.items()}
    gin_kinds = [k for tally in tallies["gin"] for k in tally.kinds]
    ends = [t for k, t in zip(gin_kinds, acts["gin"], strict=True) if k.endswith("a hand")]
    print(
        f"matches finished: gin {finished['gin']}, rummy {finished['rummy']}; "
        f"gin actions, all rounds: p50 {percentile(acts['gin'], 50):.1f} ms, "
        f"p99 {percentile(acts['gin'], 99):.1f} ms, {len(ends) / len(gin_kinds):.1%} ending a "
        f"hand (p50 {percentile(ends or [0.0], 50):.1f} ms); Rummy actions by kind, all rounds:"
    )
    by_kind(acts["rummy"], [k for tally in tallies["rummy"] for k in tally.kinds])
    print(
        f"set up between phases (not timed): {gin.made} Gin and {rummy.made} Rummy matches "
        f"in {gin.setting_up + rummy.setting_up:.0f} s"
    )
    print(
        summary(
            "rummy/gin actions",
            ratios,
            acts["rummy"],
            "Rummy actions; target: ratio >= 0.8, Rummy action p99 < 60 ms",
        )
    )


# --- part 2: settlement latency ----------------------------------------------------------


def per_hand_table(buyin: int) -> dict[str, Any]:
    """A continuous six-seat Rummy table: each hand settled on its own, the next one dealt."""
    return {
        "game": "rummy",
        "seat_count": 6,
        "format": "rummy_per_hand",
        "stake_per_point": 1,
        "min_buyin": buyin,
        "max_buyin": buyin,
        "fee": {"bps": 500, "base": "WINNINGS"},
        "clock": {"turn_seconds": 600, "bank_seconds": 600},
    }


class Reconnecting(Http):
    """Part 2's client connection: a request on a kept-alive connection that the server
    closed meanwhile (gunicorn closes one idle for ``keepalive`` seconds, and a worker's
    connections when it is recycled after ``max_requests``) is sent again once on a new
    connection, as an HTTP client library does. Nothing of it was read, so the server did
    not answer it; an action sent twice would be refused as stale (``expected_version``)."""

    reconnects = 0  # of every connection, this run

    async def request(self, *args: Any, **kwargs: Any) -> tuple[int, Any]:
        reused = self._writer is not None
        try:
            return await super().request(*args, **kwargs)
        except (asyncio.IncompleteReadError, ConnectionError) as exc:
            if not reused or (isinstance(exc, asyncio.IncompleteReadError) and exc.partial):
                raise
            await self.close()
            Reconnecting.reconnects += 1
            return await super().request(*args, **kwargs)


@dataclass
class Settled:
    seen: list[float] = field(default_factory=list)  # from the ending action's answer
    match_ids: list[str] = field(default_factory=list)
    dealt: list[float] = field(default_factory=list)  # rummy_per_hand: to the next hand
    next_hands: list[tuple[str, str]] = field(default_factory=list)  # (hand, next hand)
    problems: list[str] = field(default_factory=list)
    tally: Tally = field(default_factory=Tally)  # the actions that played the matches


async def poll(
    http: Http,
    path: str,
    token: str,
    ready: Callable[[int, Any], bool],
    end: float,
    args: argparse.Namespace,
) -> tuple[float | None, int, Any]:
    """``GET path`` every ``--poll`` ms until ``ready(status, body)``: ``(seconds from
    end (perf_counter) to that answer, status, body)``, the seconds ``None`` when
    ``--settle-timeout`` came first."""
    while True:
        status, body = await http.request("GET", path, token)
        if ready(status, body):
            return time.perf_counter() - end, status, body
        if time.perf_counter() - end > args.settle_timeout:
            return None, status, body
        await asyncio.sleep(args.poll / 1000)


async def read_settlement(
    http: Http, match_id: str, token: str, end: float, out: Settled, args: argparse.Namespace
) -> None:
    """Wait for ``match_id``'s settlement over HTTP (from ``end``) and check it adds up."""
    path = f"/v1/matches/{match_id}/settlement"
    seconds, status, body = await poll(http, path, token, lambda st, _: st != 404, end, args)
    if seconds is None or status != 200:
        out.problems.append(f"{match_id}: settlement answered {status}")
        return
    out.seen.append(seconds)
    out.match_ids.append(match_id)
    paid = sum(p["amount"] for p in body["payouts"]) + body["fee"]["amount"]
    if paid != sum(e["amount"] for e in body["escrow"]):
        out.problems.append(f"{match_id}: payouts and fee {paid} != escrow")


async def play_hand(
    http: Http, side: Http, hand: Table, out: Settled, rng: random.Random, args: argparse.Namespace
) -> str | None:
    """Play ``hand`` (a hand of a ``rummy_per_hand`` table) to its end, then wait both for
    its settlement (on ``http``) and for the table to name the next hand (on ``side``);
    the next hand's match id (``None``: there is none, a problem in ``out``)."""
    ended = await play_out(http, RUMMY, hand, time.perf_counter() + 120, out.tally, rng)
    if ended is None:
        out.problems.append(f"{hand.match_id}: did not end in 120 s")
        return None
    end, _ = ended
    token = hand.seats[min(hand.seats)]  # a player dealt in: it may read the settlement

    def moved_on(status: int, body: Any) -> bool:
        return status == 200 and body["match_id"] != hand.match_id

    table_path = f"/v1/tables/{hand.table_id}"
    _, (dealt, status, body) = await asyncio.gather(
        read_settlement(http, hand.match_id, token, end, out, args),
        poll(side, table_path, token, moved_on, end, args),
    )
    await side.close()  # idle until the next hand ends: the server would close it meanwhile
    if dealt is None:
        out.problems.append(f"{hand.match_id}: no next hand at its table (answered {status})")
        return None
    out.dealt.append(dealt)
    out.next_hands.append((hand.match_id, body["match_id"]))
    return str(body["match_id"])


async def settle_all(
    port: int, tables: list[Table], gins: list[Table], args: argparse.Namespace
) -> dict[str, Settled]:
    """A client per table: its first hand (unmeasured), then ``--hands`` hands alternating
    with as many Gin matches from ``gins``, every one played to its end and its
    settlement (and, at the table, the next hand) waited for over HTTP."""
    found = {"warm-up": Settled(), GIN.name: Settled(), RUMMY.name: Settled()}
    rng = random.Random(2)

    async def client(i: int, table: Table) -> None:
        http, side = Reconnecting(port, not args.close), Reconnecting(port, not args.close)

        def hand(match_id: str) -> Table:
            return Table(match_id, table.tokens, table_id=table.table_id)

        hand_id = await play_hand(http, side, hand(table.match_id), found["warm-up"], rng, args)
        for k in range(args.hands):
            for game in (GIN, RUMMY) if (i + k) % 2 == 0 else (RUMMY, GIN):
                if hand_id is None:
                    break
                if game is RUMMY:
                    hand_id = await play_hand(http, side, hand(hand_id), found["rummy"], rng, args)
                    continue
                match, out = gins.pop(), found["gin"]
                ended = await play_out(
                    http, GIN_BOT, match, time.perf_counter() + 120, out.tally, rng
                )
                if ended is None:
                    out.problems.append(f"{match.match_id}: did not end in 120 s")
                else:
                    await read_settlement(
                        http, match.match_id, match.tokens[0], ended[0], out, args
                    )
        await http.close()
        await side.close()

    await asyncio.gather(*(client(i, table) for i, table in enumerate(tables)))
    return found


def _ms(values: list[float]) -> str:
    """p50, p99 and mean of ``values`` (seconds) in ms."""
    if not values:
        return "none"
    return (
        f"p50 {percentile(values, 50):6.1f} ms   p99 {percentile(values, 99):6.1f} ms   "
        f"mean {statistics.mean(values) * 1000:6.1f} ms"
    )


def _load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def settlement_latency(port: int, url: str, broker: Broker, args: argparse.Namespace) -> None:
    from sqlalchemy import select

    from service import create_app
    from service.db.match_models import MatchRow, Settlement
    from service.usecases.settlement import unsettled_finished_matches
    from tests.integration.workers import wait_until, worker

    start = time.perf_counter()
    gins = prepare(url, args.hand_tables * args.hands, 2, FIRST_TO_KNOCK)
    tables = prepare(url, args.hand_tables, 6, per_hand_table(args.buyin))
    setting_up = time.perf_counter() - start
    app = create_app({"DATABASE_URL": url, "SECRET_KEY": os.environ["SECRET_KEY"]})
    Session = app.extensions["gin"]["sessionmaker"]

    def all_settled() -> bool:
        with Session() as session:
            return not unsettled_finished_matches(session, limit=1)

    try:
        with worker(url, broker, concurrency=2):
            start = time.perf_counter()
            wait_until(all_settled, 300, "part 1's matches to be settled")
            print(
                f"part 2: the worker settled part 1's finished matches "
                f"{time.perf_counter() - start:.1f} s after it was started; now "
                f"{args.hand_tables} rummy_per_hand tables of 6 players (buy-in {args.buyin}, "
                f"1 per point), each a client playing its first hand unmeasured, then "
                f"{args.hands} hands alternating with as many Gin FTK matches; polling every "
                f"{args.poll:.0f} ms; {_load()}"
            )
            start = time.perf_counter()
            found = asyncio.run(settle_all(port, tables, gins, args))
            playing = time.perf_counter() - start
        ids = {m for got in found.values() for m in got.match_ids}
        ids |= {m for got in found.values() for pair in got.next_hands for m in pair}
        with Session() as session:  # the API's timestamps are whole seconds: the rows
            rows = {
                row.id: row for row in session.scalars(select(MatchRow).where(MatchRow.id.in_(ids)))
            }
            created = dict(
                session.execute(
                    select(Settlement.match_id, Settlement.created_at).where(
                        Settlement.match_id.in_(ids)
                    )
                ).all()
            )
    finally:
        app.extensions["gin"]["engine"].dispose()

    def server(match_ids: list[str]) -> list[float]:
        return [(created[m] - rows[m].finished_at).total_seconds() for m in match_ids]

    for name, label in (("gin", "gin FTK"), ("rummy", "rummy 6p"), ("warm-up", "warm-up")):
        got = found[name]
        print(
            f"{label:<9} end -> settlement read {_ms(got.seen)}   n={len(got.seen)}   "
            f"problems={len(got.problems)}"
        )
        if name == "warm-up":
            print(f"{'':9} (each table's first hand, dealt to 2 players: not counted)")
            continue
        rows_ = server(got.match_ids)
        print(f"{'':9} rows: finished_at -> settlement created_at {_ms(rows_)}")
        print(
            f"{'':9} read minus rows, by match (the settling transaction, the end's commit, "
            f"the polling) {_ms([a - b for a, b in zip(got.seen, rows_, strict=True)])}"
        )
        if name == "rummy":
            players = sorted({len(rows[m].seats or []) for m in got.match_ids})
            alike = sum(rows[after].started_at == created[hand] for hand, after in got.next_hands)
            print(f"{'':9} end -> next hand read   {_ms(got.dealt)}   n={len(got.dealt)}")
            print(
                f"{'':9} rows: the next hand's started_at is the settlement's created_at in "
                f"{alike} of {len(got.next_hands)}; players dealt in per measured hand: {players}"
            )
        acts = got.tally.acts
        print(
            f"{'':9} played with {len(acts)} actions ({len(acts) / max(1, len(got.seen)):.0f} "
            f"per {'hand' if name == 'rummy' else 'match'}), action {_ms(acts)}, "
            f"failures={got.tally.failures}"
        )
        for problem in got.problems[:5]:
            print(f"{'':9} {problem}")
    rummy_, gin_ = found["rummy"].seen or [math.nan], found["gin"].seen or [math.nan]
    print(
        f"ratio rummy/gin settlement latency: p50 "
        f"{percentile(rummy_, 50) / percentile(gin_, 50):.2f}, p99 "
        f"{percentile(rummy_, 99) / percentile(gin_, 99):.2f}; Rummy p99 "
        f"{percentile(rummy_, 99):.0f} ms over {len(found['rummy'].seen)} hands (target p99 < "
        f"1000 ms); set up in {setting_up:.0f} s (not timed), played in {playing:.0f} s "
        f"({Reconnecting.reconnects} requests sent again on a new connection); {_load()}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tables", type=int, default=16, help="tables of each game played at once")
    parser.add_argument("--seconds", type=float, default=5.0, help="per phase")
    parser.add_argument("--rounds", type=int, default=3, help="Gin and Rummy phases, alternated")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds per game, unmeasured")
    parser.add_argument("--deals", type=int, default=2, help="deals of a part 1 Rummy match")
    parser.add_argument(
        "--hand-tables", type=int, default=8, help="part 2: rummy_per_hand tables, a client each"
    )
    parser.add_argument(
        "--hands", type=int, default=5, help="part 2: measured hands per table (and Gin matches)"
    )
    parser.add_argument("--buyin", type=int, default=2000, help="part 2: each player's buy-in")
    parser.add_argument(
        "--settle-timeout", type=float, default=30.0, help="seconds, for a settlement or a deal"
    )
    parser.add_argument("--poll", type=float, default=5.0, help="ms between settlement reads")
    parser.add_argument("--workers", type=int, default=default_workers())
    parser.add_argument(
        "--close", action="store_true", help="a new connection per request instead of keep-alive"
    )
    args = parser.parse_args()

    from tests.conftest import throwaway_postgres

    broker = Broker(
        os.environ.get("BENCH_BROKER_URL")
        or os.environ.get("TEST_BROKER_URL")
        or "redis://127.0.0.1:6379/0"
    )
    # gunicorn (started with this environment) kicks the outbox relay on this run's own queue.
    os.environ.update(broker.env, SECRET_KEY=secrets.token_hex(16))
    try:
        with (
            throwaway_postgres(database_base_url()) as url,
            gunicorn(url, args.workers, os.environ["SECRET_KEY"]) as port,
        ):
            actions_per_second(port, url, args)
            settlement_latency(port, url, broker, args)
    finally:
        broker.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
