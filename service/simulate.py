"""``gin-service simulate``: play N complete matches through the HTTP API with bot clients.

Against ``--url`` (a running service, with ``--api-key``), or, without it, a service this
command starts itself on the embedded default: a temporary ``GIN_VAR_DIR``, the database
migrated, an operator created with ``gin-service create-operator``, gunicorn and a Celery
worker with beat as child processes (``DATABASE_URL``, ``CELERY_BROKER_URL``,
``CELERY_QUEUE`` and ``CELERY_KEY_PREFIX`` from the environment are passed through, so the
same run works on PostgreSQL and Redis).

Each match is played by its bot clients (one per seat) in a thread of its own (``--parallel``
at once), each deciding with :mod:`service.games.bots` from its own view, through
:class:`service.client.GinClient` only. A continuous table (``rummy_per_hand``) counts as one
"match": the bots sit down one by one (the second deals the first hand, the others are dealt
in from the next), play ``--hands`` hands following the table's ``match_id``, each settled by
the worker on its own, a bot tops up between its hands, every bot sits out during the last
hand and leaves once it is settled. The report: matches and hands per second, settlement
latency (a match's or per-hand hand's end seen by a client until its settlement is readable,
p50/p99), house fees, every bot's net result, and the ledger invariants checked through the
API: every settlement zero-sum, each bot's wallet equal to its deposit plus its nets, the
bots' money plus the fees equal to what was deposited, no negative balance, no escrow (or
table balance) left, the operator's ledger audit (balanced transactions, balances equal to
their entries, hash chains intact, settled matches' escrow empty) and a sample of the
settlements, spread over every game and format, replayed by the settlement audit. With
``--tournaments N``, N tournaments of each kind are played beside the matches and their books
checked too (:mod:`service.simulate_tournaments`). Exit
status 1 on any violation or failed match; 2, with one line on stderr, for a bad input (an
unreachable ``--url``, a refused ``--api-key``, a bad option). Each phase (the service, the
matches, the books) is announced by one line on stderr, with or without the progress bar.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import zip_longest
from pathlib import Path
from typing import Any

import httpx

from service.cli import Parser, Refused, positive_int
from service.client import ApiProblem, GinClient
from service.client.types import MatchView, SettlementView
from service.config import child_environment, simulation_api_key
from service.games import registry
from service.games.bots import action_text, decide_multi

#: Every game, and the formats a simulation plays it in (every one a table can be opened in).
GAMES: dict[str, tuple[str, ...]] = {
    game.kind.value: tuple(f.value for f in game.formats) for game in registry.GAMES.values()
}
FORMATS = GAMES[registry.DEFAULT.kind.value]
FIXED_STAKE = tuple(f.value for f in registry.FIXED_STAKE_FORMATS)
#: The formats whose tables deal hand after hand, each hand a match settled on its own.
CONTINUOUS = tuple(f.value for f in registry.CONTINUOUS_FORMATS)
ROOT = Path(__file__).resolve().parents[1]


@dataclass
class SimulatedMatch:
    index: int
    format: str
    match_id: str = ""
    players: list[str] = field(default_factory=list)
    deposited: list[int] = field(default_factory=list)
    hands: int = 0
    actions: int = 0
    fee: int = 0  # every settlement's
    net: list[int] = field(default_factory=list)  # each player's, over every settlement
    problems: list[str] = field(default_factory=list)
    error: str | None = None
    game: str = "gin"
    #: Each settlement's seconds from the end seen to the settlement readable.
    latencies: list[float] = field(default_factory=list)
    #: The matches settled: the match, or each hand of a per-hand table.
    settled: list[str] = field(default_factory=list)
    top_ups: int = 0
    #: A tournament's matches played (recorded by the worker, not settled).
    tournament_matches: list[str] = field(default_factory=list)


def _table_body(game: str, fmt: str, args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    """The table to open and what each bot escrows (a per-hand table: its buy-in, half the
    table's maximum, the rest being left for top-ups)."""
    body: dict[str, Any] = {
        "game": game,
        "format": fmt,
        "currency": args.currency,
        "name": f"simulation {game} {fmt}",
        # The stake-per-point formats take their fee from the transfer (WINNINGS).
        "fee": {"bps": args.fee_bps, "base": "POT" if fmt in FIXED_STAKE else "WINNINGS"},
        # Generous clocks: the bots answer at once, the clock must never decide a match.
        "clock": {"turn_seconds": 120, "bank_seconds": 600, "fill_timeout_seconds": 600},
        "practice": args.currency == "XPM",
    }
    if len(registry.spec(game).seat_counts) > 1:  # Rummy: the table says how many it seats
        body["seat_count"] = args.rummy_seats
    if fmt not in FIXED_STAKE:
        per_point = max(1, args.stake // 100)
        buyin = per_point * 300
        body.update(stake_per_point=per_point, min_buyin=buyin, max_buyin=buyin)
        if fmt in CONTINUOUS:
            body.update(max_buyin=2 * buyin, min_balance=10 * per_point)
        escrow = buyin
    else:
        body["stake"] = args.stake
        escrow = args.stake
    if fmt == "money_play":
        body["target"] = 50
    elif fmt == "rummy_deals":
        body["target"] = args.target or 3  # the number of deals
    elif fmt not in (*registry.SINGLE_HAND_FORMATS, *CONTINUOUS) and args.target:
        body["target"] = args.target
        if game in ("gin_three", "gin_partnership"):  # they play to the game's own target
            body["ruleset"] = {"target": args.target, "partnership_target": args.target}
    return body, escrow


def play_one(
    operator: GinClient, index: int, game: str, fmt: str, args: argparse.Namespace
) -> SimulatedMatch:
    """Open a table, seat funded bot players in every seat and play the match to its
    settlement."""
    result = SimulatedMatch(index, fmt, game=game)
    try:
        _play_one(operator, result, args)
    except (ApiProblem, httpx.HTTPError, AssertionError, KeyError) as exc:
        result.error = f"{type(exc).__name__}: {exc}"
    return result


def _play_one(operator: GinClient, result: SimulatedMatch, args: argparse.Namespace) -> None:
    body, escrow = _table_body(result.game, result.format, args)
    table = operator.create_table(**body)
    if result.format in CONTINUOUS:
        _play_table(operator, result, table["id"], body, args)
        return
    result.match_id = table["match_id"]
    buyin = None if result.format in FIXED_STAKE else escrow
    clients = [
        _seat_bot(operator, result, table["id"], escrow, buyin, args)
        for _ in range(table["seat_count"])
    ]
    _play_match(clients, result, args)
    settled = _settlement(operator, result, args)
    result.net = [n["amount"] for n in settled["net"]]
    if sorted(settled["players"]) != sorted(result.players):
        result.problems.append(f"{result.match_id}: settled players {settled['players']}")
    result.players = list(settled["players"])  # seat order, as the nets are


def _seat_bot(
    operator: GinClient,
    result: SimulatedMatch,
    table_id: str,
    deposit: int,
    buyin: int | None,
    args: argparse.Namespace,
) -> GinClient:
    """A new bot player with ``deposit`` in its wallet, seated at ``table_id``: its client."""
    seat = len(result.players)
    player = operator.create_player(
        f"sim-{secrets.token_hex(4)}-{result.index}-{seat}", f"Bot {result.index}.{seat}"
    )
    operator.deposit(player["id"], deposit, args.currency)
    result.players.append(player["id"])
    result.deposited.append(deposit)
    client = operator.as_(operator.player_token(player["id"], ttl_seconds=3600)["token"])
    client.join(table_id, buyin=buyin)
    return client


def _play_match(clients: list[GinClient], result: SimulatedMatch, args: argparse.Namespace) -> None:
    """Play ``result.match_id`` to its end with the clients of the players dealt in."""
    eager = result.format in registry.SINGLE_HAND_FORMATS
    views: list[MatchView] = [c.match(result.match_id) for c in clients]
    seat_of = [v["you"] for v in views]
    view = views[0]
    for _ in range(args.max_actions):
        if view["status"] != "playing":
            break
        if "play" in view:  # three-player or partnership Gin, Rummy
            view = _play_multi(clients, seat_of, result, view)
            continue
        hand = view["hand"]
        assert hand is not None, "a playing match without a hand"
        mover = seat_of.index(hand["to_act"])
        mine = view if view["you"] == hand["to_act"] else clients[mover].match(result.match_id)
        mine_hand = mine["hand"]
        assert mine_hand is not None
        if not mine_hand.get("legal_actions"):  # moved on meanwhile (a clock): read again
            view = mine
            continue
        action = decide_multi(mine_hand, eager=eager)
        view = clients[mover].act(result.match_id, action, mine["version"])
        result.actions += 1
    else:
        raise AssertionError(f"match {result.match_id} did not end in {args.max_actions} actions")
    scores = view["scores"] or {}
    result.hands += int(scores.get("hands_played", len(view.get("play", {}).get("hands", []))))


def _settlement(
    operator: GinClient, result: SimulatedMatch, args: argparse.Namespace
) -> SettlementView:
    """Wait for the settlement of ``result.match_id``, which just ended, and check it."""
    ended = time.monotonic()
    deadline = ended + args.settle_timeout
    while True:
        try:
            settled = operator.settlement(result.match_id)
            break
        except ApiProblem as exc:
            if exc.status != 404 or time.monotonic() > deadline:
                raise
            time.sleep(0.02)  # another process settles it; the API is our only window
    result.latencies.append(time.monotonic() - ended)
    result.settled.append(result.match_id)
    fee = settled["fee"]["amount"]
    result.fee += fee
    net = [n["amount"] for n in settled["net"]]
    escrow_sum = sum(m["amount"] for m in settled["escrow"])
    paid = sum(p["amount"] for p in settled["payouts"])
    if paid + fee != escrow_sum:
        result.problems.append(
            f"{result.match_id}: payouts {paid} + fee {fee} != escrow {escrow_sum}"
        )
    if sum(net) + fee != 0:
        result.problems.append(f"{result.match_id}: nets {net} + fee {fee} != 0")
    return settled


def _play_table(
    operator: GinClient,
    result: SimulatedMatch,
    table_id: str,
    body: dict[str, Any],
    args: argparse.Namespace,
) -> None:
    """A per-hand table: bots sit down one by one, play ``--hands`` hands (each a match of
    its own, the table's ``match_id`` naming the latest, settled by the worker, which deals
    the next), top up between their hands, sit out during the last hand and leave."""
    clients: dict[str, GinClient] = {}
    for _ in range(args.rummy_seats):  # the second deals the first hand
        client = _seat_bot(operator, result, table_id, body["max_buyin"], body["min_buyin"], args)
        clients[result.players[-1]] = client
    nets = dict.fromkeys(result.players, 0)
    added = dict.fromkeys(result.players, 0)  # each bot's top-ups
    for number in range(1, args.hands + 1):
        for player, amount in _top_up(operator, clients, table_id, body, args, any(added.values())):
            added[player] += amount
            result.top_ups += 1
        hand = operator.match(operator.table(table_id)["match_id"])
        if hand["status"] != "playing":  # fewer than two bots can pay for a hand any more
            if not result.settled:
                raise AssertionError(f"table {table_id}: no hand dealt ({hand['status']})")
            break
        result.match_id = hand["id"]
        dealt = [s["player_id"] for s in hand["seats"]]
        if number == args.hands:  # the hand being played is the last one
            for client in clients.values():
                client.set_ready(table_id, False)
        _play_match([clients[p] for p in dealt], result, args)
        settled = _settlement(operator, result, args)
        if settled["players"] != dealt:
            result.problems.append(f"{result.match_id}: settled {settled['players']} of {dealt}")
        for player, net in zip(settled["players"], settled["net"], strict=True):
            nets[player] += net["amount"]
    table = operator.table(table_id)
    if table["match_id"] != result.match_id:
        result.problems.append(
            f"table {table_id}: hand {table['match_id']} dealt after every bot sat out"
        )
    for seat in table["seats"]:
        player, balance = seat["player_id"], seat["escrow"]["amount"]
        if balance != body["min_buyin"] + added[player] + nets[player]:
            result.problems.append(
                f"table {table_id}: {player}'s balance {balance} is not its buy-in "
                f"{body['min_buyin']} + top-ups {added[player]} + nets {nets[player]}"
            )
    for client in clients.values():
        client.leave(table_id)
    result.net = list(nets.values())


def _top_up(
    operator: GinClient,
    clients: dict[str, GinClient],
    table_id: str,
    body: dict[str, Any],
    args: argparse.Namespace,
    topped: bool,
) -> list[tuple[str, int]]:
    """Between hands: every bot not dealt into the hand being played and below the table's
    minimum balance tops up from its wallet, and one more when none has yet (``topped``);
    the top-ups made (player, amount)."""
    table = operator.table(table_id)
    hand = operator.match(table["match_id"])
    busy = {s["player_id"] for s in hand["seats"]} if hand["status"] == "playing" else set()
    done: list[tuple[str, int]] = []
    for seat in table["seats"]:
        player, balance = seat["player_id"], seat["escrow"]["amount"]
        if player in busy or ((topped or done) and balance >= body["min_balance"]):
            continue
        spare = operator.wallet(player, args.currency)["available"]["amount"]
        amount = min(body["max_buyin"] - balance, spare)
        if amount > 0:
            done.append((player, amount))
            if clients[player].top_up(table_id, amount)["match_id"] != table["match_id"]:
                break  # it dealt a hand, which the others may be in
    return done


def _play_multi(
    clients: list[GinClient], seat_of: list[int | None], result: SimulatedMatch, view: MatchView
) -> MatchView:
    """One action of a game of more than two seats or of Rummy: the first seat to act."""
    to_act = view["play"]["to_act"]
    if not to_act:  # between hands: read again
        return clients[0].match(result.match_id)
    mover = seat_of.index(to_act[0])
    mine = clients[mover].match(result.match_id)
    game = mine["play"]
    if mine["status"] != "playing" or not game.get("legal_actions"):
        return mine  # moved on meanwhile (a clock)
    result.actions += 1
    return clients[mover].act(result.match_id, action_text(decide_multi(game)), mine["version"])


def check_books(
    operator: GinClient, results: list[SimulatedMatch], currency: str, audit_sample: int
) -> list[str]:
    """The ledger invariants, through the API."""
    problems: list[str] = []
    total_in = total_now = 0
    for result in results:
        nets: list[int | None] = list(result.net) or [None] * len(result.players)
        for player, deposited, net in zip(result.players, result.deposited, nets, strict=False):
            wallet = operator.wallet(player, currency)
            total_in += deposited
            total_now += wallet["balance"]["amount"]
            if net is not None and wallet["balance"]["amount"] != deposited + net:
                problems.append(
                    f"{player}: wallet {wallet['balance']['amount']} != deposit {deposited} "
                    f"+ nets {net}"
                )
            amounts = {
                "available": wallet["available"]["amount"],
                "held": wallet["held"]["amount"],
                "balance": wallet["balance"]["amount"],
            }
            problems += [
                f"{player}: negative {part} {amount}"
                for part, amount in amounts.items()
                if amount < 0
            ]
            if amounts["held"] != 0:
                problems.append(f"{player}: {amounts['held']} still in escrow")
    fees = sum(r.fee for r in results)
    if total_now + fees != total_in:
        problems.append(
            f"not zero-sum: bots hold {total_now} + fees {fees} != deposited {total_in}"
        )
    audit = operator.audit_ledger()
    problems += [
        f"ledger audit: {d['field']}: expected {d['expected']!r}, actual {d['actual']!r}"
        for d in audit["discrepancies"]
    ]
    if not audit["ok"] and not audit["discrepancies"]:
        problems.append("ledger audit: not ok")
    for match_id in audit_sample_of(results, audit_sample):
        replay = operator.audit_settlement(match_id)
        if not replay["ok"]:
            problems += [f"{match_id}: {d['field']}" for d in replay["discrepancies"]]
    return problems


def audit_sample_of(results: list[SimulatedMatch], size: int) -> list[str]:
    """``size`` settlements to replay, spread over every game and format and, within one,
    over its matches (a per-hand table's hands): each one's first settlement, then each
    one's second, and so on."""
    groups: dict[tuple[str, str], list[list[str]]] = {}
    for result in results:
        groups.setdefault((result.game, result.format), []).append(result.settled)
    return _interleaved(_interleaved(group) for group in groups.values())[:size]


def _interleaved(lists: Iterable[list[str]]) -> list[str]:
    return [item for row in zip_longest(*lists) for item in row if item is not None]


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _latency_ms(latencies: list[float]) -> dict[str, float]:
    """p50, p99 and max of settlement latencies in seconds, in milliseconds."""
    return {
        "p50": round(_percentile(latencies, 0.5) * 1000, 1),
        "p99": round(_percentile(latencies, 0.99) * 1000, 1),
        "max": round(max(latencies, default=0.0) * 1000, 1),
    }


def simulate(operator: GinClient, args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    from tqdm import tqdm  # type: ignore[import-untyped,unused-ignore]

    plays = [
        (game, fmt)
        for game in args.games
        for fmt in (args.formats if game == registry.DEFAULT.kind else GAMES[game])
    ]
    jobs = [(i, game, fmt) for game, fmt in plays for i in range(args.matches)]
    from service.simulate_tournaments import KINDS, play_tournament

    kinds = [kind for _ in range(args.tournaments) for kind in KINDS]
    results: list[SimulatedMatch] = []
    _phase(
        f"playing {len(jobs)} matches ({args.matches} of each of "
        f"{', '.join(f'{g} {f}' for g, f in plays)})"
        + (f" and {len(kinds)} tournaments ({args.tournaments} of each kind)" if kinds else "")
        + f", {args.parallel} at once"
    )
    started = time.monotonic()
    with (
        ThreadPoolExecutor(max_workers=args.parallel) as pool,
        tqdm(
            total=len(jobs) + len(kinds),
            desc="matches",
            unit="match",
            file=sys.stderr,
            disable=args.no_progress,
            dynamic_ncols=True,
        ) as bar,
    ):
        futures = [
            pool.submit(play_one, operator, n, game, fmt, args)
            for n, (_i, game, fmt) in enumerate(jobs)
        ] + [
            pool.submit(play_tournament, operator, len(jobs) + n, kind, args)
            for n, kind in enumerate(kinds)
        ]
        for future in as_completed(futures):
            results.append(future.result())
            bar.update(1)
    elapsed = time.monotonic() - started
    results.sort(key=lambda r: r.index)
    played = [r for r in results if r.error is None]
    done = [r for r in played if r.game != "tournament"]
    tournaments = [r for r in played if r.game == "tournament"]
    problems = [
        f"match {r.index} ({r.game} {r.format} {r.match_id}): {r.error}"
        for r in results
        if r.error is not None
    ]
    problems += [p for r in played for p in r.problems]
    _phase(
        f"{len(done)} matches"
        + (f" and {len(tournaments)} tournaments" if kinds else "")
        + f" played in {elapsed:.1f} s; checking the books (wallets, the "
        f"ledger audit, {len(audit_sample_of(done, args.audit_sample))} settlements replayed)"
    )
    problems += check_books(operator, played, args.currency, args.audit_sample)
    latencies = [t for r in done for t in r.latencies]
    report = {
        "matches": len(done),
        "failed": len([r for r in results if r.error is not None and r.game != "tournament"]),
        "tournaments": {
            "played": len(tournaments),
            "failed": len([r for r in results if r.error is not None and r.game == "tournament"]),
            "kinds": sorted({r.format for r in tournaments}),
            "matches": sum(len(r.tournament_matches) for r in tournaments),
            "fees": sum(r.fee for r in tournaments),
        },
        "formats": list(args.formats),
        "games": list(args.games),
        "hands": sum(r.hands for r in done),
        "actions": sum(r.actions for r in done),
        "settlements": sum(len(r.settled) for r in done),
        "top_ups": sum(r.top_ups for r in done),
        "seconds": round(elapsed, 3),
        "matches_per_second": round(len(done) / elapsed, 3) if elapsed else 0.0,
        "hands_per_second": round(sum(r.hands for r in done) / elapsed, 3) if elapsed else 0.0,
        "settlement_latency_ms": _latency_ms(latencies),
        # A per-hand table's figures are its hands' settlements.
        "settlement_latency_ms_by_format": {
            f"{game} {fmt}": _latency_ms(
                [t for r in done if (r.game, r.format) == (game, fmt) for t in r.latencies]
            )
            for game, fmt in plays
        },
        "currency": args.currency,
        "fees": sum(r.fee for r in played),
        "bots": {p: n for r in played for p, n in zip(r.players, r.net, strict=False)},
        "invariants": {
            "checked": [
                "settlements zero-sum",
                "each bot's wallet == its deposit + its nets",
                "bots + fees == deposits",
                "no negative balance",
                "escrow empty",
                "ledger audit (balanced, balances == entries, hash chains, settled escrow empty)",
                "settlement audit of a sample",
                *(
                    ["each tournament's statement sums to zero", "each tournament's audit"]
                    if kinds
                    else []
                ),
            ],
            "violations": problems,
        },
    }
    return report, 1 if problems else 0


def _print_report(report: dict[str, Any]) -> None:
    lat = report["settlement_latency_ms"]
    nets = report["bots"]
    print(
        f"matches: {report['matches']} played ({report['failed']} failed) of "
        f"{', '.join(report['games'])} ({', '.join(report['formats'])} for two-player "
        f"Gin); {report['hands']} hands, {report['actions']} "
        f"actions, {report['settlements']} settlements, {report['top_ups']} top-ups in "
        f"{report['seconds']} s"
    )
    print(
        f"throughput: {report['matches_per_second']} matches/s, "
        f"{report['hands_per_second']} hands/s"
    )
    if report["tournaments"]["played"] or report["tournaments"]["failed"]:
        t = report["tournaments"]
        print(
            f"tournaments: {t['played']} played ({t['failed']} failed) of "
            f"{', '.join(t['kinds'])}; {t['matches']} matches, house fees {t['fees']}"
        )
    print(f"settlement latency: p50 {lat['p50']} ms, p99 {lat['p99']} ms, max {lat['max']} ms")
    for play, by in report["settlement_latency_ms_by_format"].items():
        print(f"  {play}: p50 {by['p50']} ms, p99 {by['p99']} ms, max {by['max']} ms")
    print(f"house fees collected: {report['fees']} {report['currency']} (minor units)")
    print("bots' net results:")
    for player, net in sorted(nets.items(), key=lambda kv: kv[1], reverse=True):
        print(f"  {player}: {net:+d}")
    violations = report["invariants"]["violations"]
    print(
        f"ledger invariants: {'OK' if not violations else 'VIOLATED'} "
        f"({'; '.join(report['invariants']['checked'])})"
    )
    for problem in violations:
        print(f"  violation: {problem}")


def _phase(text: str) -> None:
    """What the run is doing now: one line on stderr per phase."""
    print(f"simulate: {text}", file=sys.stderr, flush=True)


# --- the embedded service ----------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def embedded_service(log_path: Path | None = None) -> Iterator[tuple[str, str]]:
    """(url, api key) of a service started on the embedded default in a temporary folder."""
    with tempfile.TemporaryDirectory(prefix="gin-simulate-") as tmp:
        var = Path(tmp)
        env = child_environment(GIN_VAR_DIR=str(var), PYTHONUNBUFFERED="1")
        env.setdefault("DATABASE_URL", f"sqlite:///{var}/gin.sqlite")
        env.setdefault("CELERY_BROKER_URL", f"filesystem://{var}/broker")
        created = subprocess.run(
            [sys.executable, "-m", "service.cli", "create-operator", "Simulator"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if created.returncode != 0:
            said = created.stderr.strip().splitlines() or [f"exit status {created.returncode}"]
            raise Refused(f"the embedded service could not start: {said[-1]}")
        key = json.loads(created.stdout)["api_key"]
        port = _free_port()
        out: Any = open(log_path, "ab") if log_path else subprocess.DEVNULL  # noqa: SIM115
        queue = env.get("CELERY_QUEUE", "gin")
        children = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "celery",
                    "-A",
                    "worker.celery_app",
                    "worker",
                    "--beat",
                    "--concurrency",
                    "2",
                    "--queues",
                    queue,
                    "--loglevel",
                    "WARNING",
                    "--schedule",
                    str(var / "celerybeat-schedule"),
                    "--without-gossip",
                    "--without-mingle",
                    "--without-heartbeat",
                ],
                cwd=ROOT,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            ),
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "gunicorn",
                    "--bind",
                    f"127.0.0.1:{port}",
                    "--workers",
                    "2",
                    "--worker-class",
                    "gthread",
                    "--threads",
                    "8",
                    "service.wsgi:app",
                ],
                cwd=ROOT,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            ),
        ]
        url = f"http://127.0.0.1:{port}"
        try:
            _wait_healthy(url, children)
            yield url, key
        finally:
            for child in children:
                _stop(child)
            if out is not subprocess.DEVNULL:
                out.close()


def _wait_healthy(url: str, children: list[subprocess.Popen[bytes]], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(c.poll() is not None for c in children):
            raise Refused("the embedded service exited while starting (see --service-log)")
        try:
            if httpx.get(f"{url}/healthz", timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)  # gunicorn is starting in another process: nothing to await
    raise Refused(f"the embedded service did not answer on {url} in {timeout} s")


def _stop(child: subprocess.Popen[bytes]) -> None:
    if child.poll() is not None:
        return
    try:
        os.killpg(child.pid, signal.SIGTERM)
        child.wait(timeout=30)
    except ProcessLookupError:
        return
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait(timeout=30)


# --- the command -------------------------------------------------------------------------


def _games(text: str) -> list[str]:
    chosen = tuple(GAMES) if text == "all" else tuple(g.strip() for g in text.split(","))
    for game in chosen:
        if game not in GAMES:
            raise argparse.ArgumentTypeError(f"unknown game {game!r}; one of {tuple(GAMES)}")
    return list(chosen)


def _formats(text: str) -> list[str]:
    chosen = FORMATS if text == "all" else tuple(f.strip() for f in text.split(","))
    for fmt in chosen:
        if fmt not in FORMATS:
            raise argparse.ArgumentTypeError(f"unknown format {fmt!r}; one of {FORMATS}")
    return list(chosen)


def parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="gin-service simulate",
        description="Play N complete matches through the HTTP API with bot clients, then "
        "check the ledger invariants (exit 1 on any violation).",
    )
    p.add_argument("-n", "--matches", type=positive_int, default=10, help="matches per format")
    p.add_argument(
        "--format",
        dest="formats",
        type=_formats,
        default="match_play",
        help=f"a format, a comma-separated list, or 'all' ({', '.join(FORMATS)})",
    )
    p.add_argument(
        "--game",
        dest="games",
        type=_games,
        default="gin",
        help=f"a game, a comma-separated list, or 'all' ({', '.join(GAMES)}); --format "
        "chooses two-player Gin's formats, every other game plays each of its own",
    )
    p.add_argument(
        "--rummy-seats", type=int, choices=range(2, 7), default=4, help="players at a Rummy table"
    )
    p.add_argument(
        "--hands",
        type=positive_int,
        default=3,
        help="hands played at each per-hand Rummy table (rummy_per_hand)",
    )
    p.add_argument(
        "--stake",
        type=int,
        default=500,
        help="stake in minor units (buy-in formats: stake/100 per point)",
    )
    p.add_argument(
        "--tournaments",
        type=int,
        default=0,
        metavar="N",
        help="also play N tournaments of each kind: a knockout, a single table of each "
        "multi-player game, a scheduled knockout and a cancelled one",
    )
    p.add_argument(
        "--knockout-entrants",
        type=int,
        choices=(4, 8, 16, 32),
        default=4,
        help="the field of a simulated knockout",
    )
    p.add_argument("--currency", default="EUR", help="EUR, ... or XPM (practice tables)")
    p.add_argument("--fee-bps", type=int, default=500, help="house fee in basis points")
    p.add_argument(
        "--target",
        type=int,
        default=None,
        help="match target for Match Play and classic (default: the table's)",
    )
    p.add_argument("--parallel", type=positive_int, default=4, help="matches played at once")
    p.add_argument(
        "--url",
        help="a running service (default: start one on the embedded default in a temporary folder)",
    )
    p.add_argument(
        "--api-key",  # no default shown: --help must never print a secret
        help="an operator API key for --url (default: $GIN_API_KEY)",
    )
    p.add_argument(
        "--settle-timeout",
        type=float,
        default=60.0,
        help="seconds to wait for a settlement to appear",
    )
    p.add_argument("--max-actions", type=int, default=20_000, help="per match, a safety net")
    p.add_argument(
        "--audit-sample", type=int, default=20, help="settlements replayed by the audit endpoint"
    )
    p.add_argument("--report", metavar="PATH", help="also write the report as JSON here")
    p.add_argument("--service-log", metavar="PATH", help="embedded service output (debugging)")
    p.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress bar (each phase is still one line on stderr)",
    )
    return p


def _check_operator(operator: GinClient, url: str) -> None:
    """The service answers at ``url`` and takes the key, before any match is opened."""
    try:
        found = operator.operator()
    except httpx.HTTPError as exc:
        raise Refused(f"cannot reach {url}: {exc or type(exc).__name__}") from None
    except ApiProblem as exc:
        if exc.status in (401, 403):
            raise Refused(f"{url} refused the API key ({exc})") from None
        raise Refused(f"{url} answered {exc}") from None
    _phase(f"operator {found.get('id')} ({found.get('name')}) at {url}")


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    args.api_key = args.api_key or simulation_api_key()
    if args.url and not args.api_key:
        print("simulate: --url needs --api-key (or GIN_API_KEY)", file=sys.stderr)
        return 2
    if args.report and not Path(args.report).resolve().parent.is_dir():
        print(f"simulate: --report {args.report}: no such folder", file=sys.stderr)
        return 2

    def run(url: str, key: str) -> int:
        with GinClient(url, key, timeout=60.0) as operator:
            _check_operator(operator, url)
            report, status = simulate(operator, args)
        _print_report(report)
        if args.report:
            Path(args.report).write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
        return status

    try:
        if args.url:
            return run(args.url, args.api_key)
        log = Path(args.service_log) if args.service_log else None
        _phase(
            "starting a service on the embedded default in a temporary folder"
            + (f" (its log: {log})" if log else "")
        )
        with embedded_service(log) as (url, key):
            return run(url, key)
    except Refused as exc:
        print(f"simulate: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
