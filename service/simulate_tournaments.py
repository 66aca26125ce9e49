"""``gin-service simulate --tournaments N``: tournaments of every kind, played by bot clients
through the HTTP API (docs/tournaments.md).

Each round of the set is, at once (``--parallel``): a two-player Gin knockout of
``--knockout-entrants`` (First To Knock), a single table of each multi-player game
(three-player Gin and partnership Gin in Match Play to ``--target``, default 25; Rummy of
``--rummy-seats`` over one deal), all sit-and-gos, a **scheduled** knockout of up to 8
started by the service's beat at its ``starts_at`` with the 4 entrants registered, and a
sit-and-go knockout **cancelled** by the operator once it has started (every entry back in
full). The bots register with their own tokens, play each match dealt to them through
:func:`service.simulate._play_match` and wait for the worker to record its result (the next
round's matches follow).

Each tournament's books, through the API: its statement sums to zero and holds nothing, its
audit (``GET /v1/audit/tournaments/{id}``) passes, each entry's prize or refund is what its
bot's net says; the wallets (each bot's deposit plus its net, nothing held) and the ledger
audit are the simulator's own checks (:func:`service.simulate.check_books`), with the house's
tournament fees counted as the fees.
"""

from __future__ import annotations

import argparse
import secrets
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from service.client import ApiProblem, GinClient
from service.simulate import SimulatedMatch, _play_match

#: Every kind a round of ``--tournaments`` plays.
KINDS = ("knockout", "gin_three", "gin_partnership", "rummy", "scheduled", "cancelled")
#: Pays every field a simulated tournament may start with (2 to 32).
PAYOUT_TABLE = "2-5: 7000/3000; 6-9: 6500/3500; 10-18: 5000/3000/2000; 19-32: 4000/2600/1800/1600"
#: Seconds ahead a scheduled tournament starts: its entrants register meanwhile.
SCHEDULE_LEAD = 4


def tournament_body(kind: str, args: argparse.Namespace) -> dict[str, Any]:
    """``POST /v1/tournaments``'s body for a simulated tournament of ``kind``."""
    buy_in = args.stake
    body: dict[str, Any] = {
        "name": f"simulation {kind}",
        "currency": args.currency,
        "practice": args.currency == "XPM",
        "buy_in": buy_in,
        "fee": buy_in * args.fee_bps // 10_000,
        "payout_table": PAYOUT_TABLE,
        # Generous clocks: the bots answer at once, the clock must never decide a match.
        "clock": {"turn_seconds": 120, "bank_seconds": 600},
    }
    if kind in ("knockout", "cancelled"):
        body.update(format="first_to_knock", entrants=args.knockout_entrants)
    elif kind == "scheduled":
        starts = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=SCHEDULE_LEAD)
        body.update(
            format="first_to_knock",
            entrants=8,
            min_entrants=4,
            starts_at=starts.strftime("%Y-%m-%dT%H:%M:%SZ"),
        )
    elif kind == "rummy":
        body.update(
            kind="single_table",
            game="rummy",
            format="rummy_deals",
            target=1,
            seat_count=args.rummy_seats,
        )
    else:  # three-player or partnership Gin
        body.update(kind="single_table", game=kind, format="match_play", target=args.target or 25)
    return body


def registrants(kind: str, body: dict[str, Any]) -> int:
    """How many bots register: the field, or a scheduled knockout's 4 of up to 8."""
    if kind == "scheduled":
        return 4
    return int(body.get("entrants") or body.get("seat_count") or {"gin_three": 3}.get(kind, 4))


def play_tournament(
    operator: GinClient, index: int, kind: str, args: argparse.Namespace
) -> SimulatedMatch:
    """Open a tournament of ``kind``, register funded bots, play it to its end (or cancel
    it) and check its own books; a :class:`SimulatedMatch` whose players, deposits and nets
    are its entrants', its fee the house's."""
    result = SimulatedMatch(index, kind, game="tournament")
    try:
        _play_tournament(operator, result, kind, args)
    except (ApiProblem, httpx.HTTPError, AssertionError, KeyError) as exc:
        result.error = f"{type(exc).__name__}: {exc}"
    return result


def _play_tournament(
    operator: GinClient, result: SimulatedMatch, kind: str, args: argparse.Namespace
) -> None:
    body = tournament_body(kind, args)
    tournament = operator.create_tournament(**body)
    tid = result.match_id = tournament["id"]
    entry = body["buy_in"] + body["fee"]
    clients: dict[str, GinClient] = {}
    for seat in range(registrants(kind, body)):
        player = operator.create_player(
            f"sim-t-{secrets.token_hex(4)}-{result.index}-{seat}", f"Bot T{result.index}.{seat}"
        )
        operator.deposit(player["id"], entry, args.currency)
        client = operator.as_(operator.player_token(player["id"], ttl_seconds=3600)["token"])
        client.register(tid)
        clients[player["id"]] = client
        result.players.append(player["id"])
        result.deposited.append(entry)
    if kind == "cancelled":
        assert operator.tournament(tid)["status"] == "running", "a full sit-and-go not started"
        operator.cancel_tournament(tid)
    done = _play_to_end(operator, result, tid, clients, args)
    _check_tournament(operator, result, done, body)


def _play_to_end(
    operator: GinClient,
    result: SimulatedMatch,
    tid: str,
    clients: dict[str, GinClient],
    args: argparse.Namespace,
) -> dict[str, Any]:
    """Play every match dealt until the tournament is over: the tournament then."""
    played: set[str] = set()
    deadline = time.monotonic() + args.settle_timeout
    while True:
        tournament: dict[str, Any] = dict(operator.tournament(tid))
        if tournament["status"] in ("finished", "cancelled"):
            return tournament
        dealt = _dealt(tournament)
        waiting = [m for m in dealt if m in played]
        new = [m for m in dealt if m not in played]
        if not new:  # a scheduled start, or a result the worker has yet to record
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"tournament {tid} still {tournament['status']} "
                    f"(matches awaiting their record: {waiting})"
                )
            time.sleep(0.05)  # another process starts it or records a result
            continue
        for match_id in new:
            seated = _seated(tournament, match_id)
            result.match_id = match_id
            _play_match([clients[p] for p in seated], result, args)
            result.tournament_matches.append(match_id)
            played.add(match_id)
        result.match_id = tid
        deadline = time.monotonic() + args.settle_timeout


def _dealt(tournament: dict[str, Any]) -> list[str]:
    """The matches dealt and not yet recorded."""
    if tournament.get("table"):
        table = tournament["table"]
        return [table["match_id"]] if table.get("match_id") and not table.get("places") else []
    return [
        m["match_id"]
        for r in tournament.get("rounds") or []
        for m in r["matches"]
        if m.get("match_id") and m.get("winner_seat") is None
    ]


def _seated(tournament: dict[str, Any], match_id: str) -> list[str]:
    """The players of ``match_id``, in its seat order."""
    players = {e["seat"]: e["player_id"] for e in tournament["entries"]}
    if tournament.get("table"):
        return [players[s] for s in tournament["table"]["seats"]]
    for r in tournament["rounds"]:
        for m in r["matches"]:
            if m["match_id"] == match_id:
                return [players[m["first_seat"]], players[m["second_seat"]]]
    raise KeyError(match_id)


def _check_tournament(
    operator: GinClient, result: SimulatedMatch, done: dict[str, Any], body: dict[str, Any]
) -> None:
    """Its statement, its audit and its entries' money; the bots' nets and the house fee."""
    tid = done["id"]
    expected = "cancelled" if result.format == "cancelled" else "finished"
    if done["status"] != expected:
        result.problems.append(f"tournament {tid}: {done['status']}, not {expected}")
    statement = operator.tournament_statement(tid)
    total = sum(line["amount"]["amount"] for line in statement["lines"])
    if total != 0 or statement["held"]["amount"] != 0:
        result.problems.append(
            f"tournament {tid}: statement sums to {total}, holds {statement['held']['amount']}"
        )
    # The house's lines: the fees it took (-) and any it gave back (+).
    result.fee += -sum(
        line["amount"]["amount"] for line in statement["lines"] if line["player_id"] is None
    )
    audit = operator.audit_tournament(tid)
    if not audit["ok"]:
        result.problems += [
            f"tournament {tid} audit: {d['field']}: expected {d['expected']!r}, "
            f"actual {d['actual']!r}"
            for d in audit["discrepancies"]
        ] or [f"tournament {tid} audit: not ok"]
    entries = {e["player_id"]: e for e in done["entries"]}
    prizes = 0
    for player in result.players:
        entry = entries[player]
        if entry["state"] == "refunded":
            result.net.append(0)
            continue
        prize = (entry.get("prize") or {}).get("amount", 0)
        prizes += prize
        result.net.append(prize - body["buy_in"] - body["fee"])
    if expected == "finished" and prizes != done["prize_pool"]["amount"]:
        result.problems.append(
            f"tournament {tid}: prizes {prizes} != pool {done['prize_pool']['amount']}"
        )
    if expected == "cancelled" and any(n != 0 for n in result.net):
        result.problems.append(f"tournament {tid}: cancelled at the start, nets {result.net}")
