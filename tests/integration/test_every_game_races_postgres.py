"""Races on PostgreSQL for the games of more than two seats (three-player and partnership
Gin, Rummy at three to six seats), with real parallel clients: HTTP requests on their own
connections to a threaded server, and worker calls on sessions of their own.

- Every seat and the turn clock act at once on the same match version: exactly one change
  applies (the others are refused with 409 ``stale_version`` or 422 ``illegal_action``), the
  version moves on by one and the log has one entry for it; turn after turn.
- More players than free seats join one table at once: each seat goes to exactly one of
  them, the others are refused, the escrow holds the seats taken and nothing else, and the
  wallets of the refused did not move.
- Two workers settle the same finished match at once: one settlement, one capture, every
  wallet moved by its net, the escrow emptied.

Runs only with TEST_DATABASE_URL (CI sets it), on a database of its own that it drops after.
"""

from __future__ import annotations

import os
import random
import secrets
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import datetime
from functools import partial
from typing import Any

import pytest
from sqlalchemy import func, select

from service import games
from service.client.api import action_body
from service.clock import utcnow
from service.db.match_models import GameTable, MatchAction, MatchRow, Seat, Settlement
from service.db.models import LedgerAccount, LedgerTransaction
from service.games.bots import action_text, decide_multi
from service.games.multi_gin.partnership import PartnershipMatch
from service.games.multi_gin.three_player import ThreePlayerMatch
from service.games.rummy.match import RummyMatch
from service.ledger import store
from service.usecases import play, settlement
from service.usecases.play import epoch_ms, from_epoch_ms
from tests.api.play_clients import join, open_table, player_client, wallet
from tests.conftest import ApiClient, in_unit, new_operator
from tests.integration.conftest import threaded_postgres_server
from tests.integration.workers import send

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(not os.environ.get("TEST_DATABASE_URL"), reason="needs PostgreSQL"),
]

BUYINS = {"stake_per_point": 2, "min_buyin": 300, "max_buyin": 600}
BUYIN = 450
STAKE = 100
DEPOSIT = 1_000
# No bank, so a deadline is the turn's start plus the allowance; far more timeouts than ROUNDS
# before a forfeit.
CLOCK = {"turn_seconds": 30, "bank_seconds": 0, "max_timeouts": 100}
ROUNDS = 12
# The clock's call starts up to this many seconds after the players' requests are sent (a
# request's round trip takes a few milliseconds): either side wins some turns.
CLOCK_LAG = 0.008

GAMES: dict[str, dict[str, Any]] = {
    "gin_three": {"game": "gin_three", "format": "match_play", "stake": STAKE},
    "gin_partnership": {"game": "gin_partnership", "format": "match_play", "stake": STAKE},
    "rummy-3": {
        "game": "rummy",
        "seat_count": 3,
        "format": "rummy_target",
        **BUYINS,
        "target": 100,
    },
    "rummy-6": {"game": "rummy", "seat_count": 6, "format": "rummy_deals", **BUYINS, "target": 3},
}


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[Any, int]]:
    with threaded_postgres_server(30) as served:
        yield served


@pytest.fixture
def operator(server: tuple[Any, int]) -> ApiClient:
    """A fresh operator's in-process client, for the set-up (the races go over sockets)."""
    app, _port = server
    operator_id, key = new_operator(app)
    client = ApiClient(app.test_client(), key)
    client.operator_id = operator_id  # type: ignore[attr-defined]
    return client


# --- helpers ------------------------------------------------------------------------------


def _at_once(calls: list[Callable[[], Any]]) -> list[Any]:
    """Every call on a thread of its own, released together; each one's answer, or the
    exception it raised."""
    barrier = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)

    def run(i: int) -> None:
        try:
            barrier.wait(timeout=30)
            results[i] = calls[i]()
        except BaseException as error:  # judged by the caller
            results[i] = error

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads), "a racer hangs"
    return results


def _session(app: Any) -> Any:
    return app.extensions["gin"]["sessionmaker"]()


def _seated(
    operator: ApiClient, settings: dict[str, Any], clock: dict[str, int] | None = None
) -> tuple[dict[str, Any], list[ApiClient]]:
    """A table of ``settings`` with every seat taken (the match started); its clients by seat."""
    table = open_table(operator, currency="EUR", **settings, clock=clock or {})
    clients = [player_client(operator, deposit=DEPOSIT) for _ in range(table["seat_count"])]
    for client in clients:
        response = join(client, table["id"], **_buyin(settings))
        assert response.status_code == 201, response.get_json()
    return table, clients


def _buyin(settings: dict[str, Any]) -> dict[str, int]:
    return {"buyin": BUYIN} if "min_buyin" in settings else {}


def _escrow(settings: dict[str, Any]) -> int:
    return BUYIN if "min_buyin" in settings else STAKE


def _state(app: Any, match_id: str) -> tuple[int, str, Any]:
    """The match's (version, status, game state) as stored."""
    session = _session(app)
    try:
        row = session.get(MatchRow, match_id)
        assert row is not None
        return row.version, row.status, None if row.state is None else games.from_state(row.state)
    finally:
        session.close()


def _clocks(match: Any) -> dict[int, tuple[int, int]]:
    """Each seat to act: (when its turn started, its deadline), in epoch ms."""
    if isinstance(match, RummyMatch):
        started = match.turn_started_ms
        turns = [(match.to_act[0], started)] if match.to_act and started is not None else []
    else:
        assert isinstance(match, ThreePlayerMatch | PartnershipMatch)
        turns = [
            (t.to_act, t.turn_started_ms)
            for t in match.tables
            if t.to_act is not None and t.turn_started_ms is not None
        ]
    clock = match.settings.clock
    return {seat: (at, clock.deadline_ms(at, match.banks_ms[seat])) for seat, at in turns}


def _log(app: Any, match_id: str) -> tuple[int, list[MatchAction]]:
    """The match's version and its action log."""
    session = _session(app)
    try:
        row = session.get(MatchRow, match_id)
        assert row is not None
        actions = list(
            session.scalars(
                select(MatchAction)
                .where(MatchAction.match_id == match_id)
                .order_by(MatchAction.version, MatchAction.seq)
            )
        )
        return row.version, actions
    finally:
        session.close()


def _view(port: int, token: str, match_id: str) -> dict[str, Any]:
    status, view, _ = send(port, "GET", f"/v1/matches/{match_id}", token)
    assert status == 200, view
    return view


def _bot_body(view: dict[str, Any]) -> dict[str, Any]:
    """The practice bot's action on ``view``, as a request body decided on its version."""
    text = action_text(decide_multi(view["play"]))
    return action_body(text) | {"expected_version": view["version"]}


def _move(port: int, token: str, match_id: str) -> None:
    """The seat of ``token`` plays one action (the bot's), alone."""
    view = _view(port, token, match_id)
    status, answer, _ = send(
        port, "POST", f"/v1/matches/{match_id}/actions", token, _bot_body(view)
    )
    assert status == 200, answer


def _race_ready(
    app: Any, port: int, match_id: str, tokens: list[str]
) -> tuple[int, int, int, set[int]] | None:
    """Play single moves until a race of the due seat, the other seats and the clock set to
    the due seat's deadline can change the match once only; then (version, due seat, its
    deadline, the seats to act at another table). None when the match is over.

    The clock acts for every seat whose deadline has passed, whatever the version: so the due
    seat's turn must have begun before the race (its action then moves its deadline past the
    clock's time; a turn the clock began at its own, later, time is played first), and any
    other seat to act (partnership Gin: at the other table) must run out strictly later."""
    for _ in range(20):
        version, status, match = _state(app, match_id)
        if status != "playing":
            return None
        clocks = _clocks(match)
        assert clocks, "a live match with nobody to act"
        due = min(deadline for _start, deadline in clocks.values())
        seat = games.due_seat(match, due)
        assert seat is not None and clocks[seat][1] == due
        started = clocks[seat][0]
        now_ms = epoch_ms(utcnow())
        if started > now_ms:
            _move(port, tokens[seat], match_id)
            continue
        tied = [s for s, (_start, deadline) in clocks.items() if s != seat and deadline <= due]
        if tied:
            _move(port, tokens[tied[0]], match_id)
            continue
        if started >= now_ms - 2:  # an action in the same millisecond would not move it
            time.sleep(0.005)
        return version, seat, due, set(clocks) - {seat}
    raise AssertionError("the match never got ready for a race")


def _clock(session: Any, match_id: str, at: datetime, lag: float) -> bool:
    """The worker's turn clock for this match only, ``lag`` seconds late: whether it acted."""
    time.sleep(lag)
    return play.time_out(session, match_id, at)


# --- 1. every seat and the clock on one version ---------------------------------------------


@pytest.mark.parametrize("game", list(GAMES))
def test_every_seat_and_the_clock_at_once_change_the_match_once(
    server: tuple[Any, int], operator: ApiClient, game: str
) -> None:
    """Each turn: the seat due to act sends two different legal actions (one with an
    Idempotency-Key, so under the row lock), every other seat sends that action too, and the
    clock times the match out at the due seat's deadline, all on the same version. (A
    partnership seat to act at the other table has a legal action of its own on that version,
    and the clock would still act at this one: it is left out.)"""
    app, port = server
    settings = GAMES[game]
    table, clients = _seated(operator, settings, CLOCK)
    match_id = table["match_id"]
    tokens = [str(c.token) for c in clients]
    players = [c.player_id for c in clients]  # type: ignore[attr-defined]
    path = f"/v1/matches/{match_id}/actions"
    refusals: Counter[tuple[int, str]] = Counter()
    rng = random.Random(f"races-{game}")
    rounds = 0
    while rounds < ROUNDS:
        ready = _race_ready(app, port, match_id, tokens)
        if ready is None:  # the match ended: race on in a new one
            table, clients = _seated(operator, settings, CLOCK)
            match_id = table["match_id"]
            tokens = [str(c.token) for c in clients]
            players = [c.player_id for c in clients]  # type: ignore[attr-defined]
            path = f"/v1/matches/{match_id}/actions"
            continue
        version, due_seat, deadline, elsewhere = ready
        view = _view(port, tokens[due_seat], match_id)
        assert view["version"] == version and due_seat in view["play"]["to_act"], view["play"]
        body = _bot_body(view)
        chosen = {k: v for k, v in body.items() if k != "expected_version"}
        legal = [action_body(action_text(a)) for a in view["play"]["legal_actions"]]
        assert chosen in legal, (chosen, legal)
        other = next((b for b in legal if b != chosen), chosen) | {"expected_version": version}
        sends: list[tuple[int, dict[str, Any], str | None]] = [
            (due_seat, body, None),
            (due_seat, other, secrets.token_hex(8)),
        ]
        sends += [
            (seat, body, None)
            for seat in range(len(tokens))
            if seat != due_seat and seat not in elsewhere
        ]
        assert len(sends) >= 4  # the due seat twice and two other seats at least
        calls: list[Callable[[], Any]] = [
            partial(send, port, "POST", path, tokens[seat], b, key) for seat, b, key in sends
        ]
        clock_session = _session(app)
        try:
            at = from_epoch_ms(deadline)
            lag = rng.uniform(0, CLOCK_LAG)
            calls.append(partial(_clock, clock_session, match_id, at, lag))
            *answers, clock_acted = _at_once(calls)
        finally:
            clock_session.close()

        assert isinstance(clock_acted, bool), clock_acted
        assert all(isinstance(a, tuple) for a in answers), answers
        applied = [i for i, (status, _b, _r) in enumerate(answers) if status == 200]
        assert len(applied) + clock_acted == 1, (game, sends, answers, clock_acted)
        for (seat, _body, _key), (status, answer, _replayed) in zip(sends, answers, strict=True):
            if status == 200:
                assert seat == due_seat, (seat, answer)
                continue
            assert (status, answer.get("code")) in {
                (409, "stale_version"),
                (422, "illegal_action"),
            }, (seat, status, answer)
            refusals[(status, "due" if seat == due_seat else "other")] += 1
        # The due seat's own second action can only have lost by being stale.
        assert refusals[(422, "due")] == 0, refusals

        now_version, log = _log(app, match_id)
        assert now_version == version + 1, (game, version, now_version)
        assert [a.version for a in log] == list(range(1, version + 2)), "one entry a version"
        last = log[-1]
        assert last.seat == due_seat, (last.seat, due_seat)
        if clock_acted:
            assert last.actor == "system" and last.action.startswith("TIMEOUT"), last.action
        else:
            assert last.actor == players[due_seat], last.actor
            sent = sends[applied[0]][1]
            assert last.action.split()[0] == sent["action"], (last.action, sent)
        rounds += 1


# --- 2. the last seats taken at once ----------------------------------------------------------

JOINS = [  # (game, seats taken before, players then joining at once)
    ("gin_three", 1, 4),
    ("gin_partnership", 3, 4),
    ("rummy-3", 0, 5),
    ("rummy-6", 3, 6),
]


@pytest.mark.parametrize(("game", "taken", "joining"), JOINS, ids=[j[0] for j in JOINS])
def test_players_joining_at_once_take_each_free_seat_once(
    server: tuple[Any, int], operator: ApiClient, game: str, taken: int, joining: int
) -> None:
    app, port = server
    settings = GAMES[game]
    escrow = _escrow(settings)
    for _table in range(2):
        table = open_table(operator, currency="EUR", **settings)
        seats = table["seat_count"]
        free = seats - taken
        assert joining > free
        first = [player_client(operator, deposit=DEPOSIT) for _ in range(taken)]
        for client in first:
            assert join(client, table["id"], **_buyin(settings)).status_code == 201
        racers = [player_client(operator, deposit=DEPOSIT) for _ in range(joining)]
        path = f"/v1/tables/{table['id']}/seats"
        keys = [secrets.token_hex(8) for _ in racers]
        answers = _at_once(
            [
                partial(send, port, "POST", path, str(c.token), _buyin(settings), key)
                for c, key in zip(racers, keys, strict=True)
            ]
        )
        assert all(isinstance(a, tuple) for a in answers), answers
        statuses = Counter(status for status, _b, _r in answers)
        assert statuses == Counter({201: free, 409: joining - free}), answers
        assert {a[1]["code"] for a in answers if a[0] == 409} == {"table_not_open"}, answers
        # The last seat started the match, once.
        assert sorted(a[1]["status"] for a in answers if a[0] == 201) == sorted(
            ["open"] * (free - 1) + ["playing"]
        ), answers
        seated = {c.player_id for c, a in zip(racers, answers, strict=True) if a[0] == 201}  # type: ignore[attr-defined]
        refused = {c.player_id for c in racers} - seated  # type: ignore[attr-defined]
        everyone = seated | {c.player_id for c in first}  # type: ignore[attr-defined]

        session = _session(app)
        try:
            rows = list(session.scalars(select(Seat).where(Seat.table_id == table["id"])))
            assert sorted(r.seat_no for r in rows) == list(range(seats))
            assert {r.player_id for r in rows} == everyone and len(rows) == seats
            stored = session.get(GameTable, table["id"])
            assert stored is not None and (stored.seats_taken, stored.status) == (seats, "playing")
            match = session.get(MatchRow, table["match_id"])
            assert match is not None and (match.status, match.version) == ("playing", 1)
            assert {s["player_id"] for s in match.seats or []} == everyone
            holds = session.scalars(
                select(LedgerTransaction.player_id).where(
                    LedgerTransaction.kind == "hold",
                    LedgerTransaction.match_ref == table["match_id"],
                )
            ).all()
            assert sorted(holds) == sorted(everyone), "one hold a seat, none for the refused"
            in_escrow = dict(
                session.execute(
                    select(LedgerAccount.player_id, LedgerAccount.balance).where(
                        LedgerAccount.kind == "player_escrow",
                        LedgerAccount.match_ref == table["match_id"],
                    )
                ).all()
            )
        finally:
            session.close()
        assert {p: b for p, b in in_escrow.items() if b} == dict.fromkeys(everyone, escrow)
        for player_id in everyone:
            held = wallet(operator, player_id)
            assert (held["available"]["amount"], held["held"]["amount"]) == (
                DEPOSIT - escrow,
                escrow,
            )
        for player_id in refused:
            untouched = wallet(operator, player_id)
            assert (untouched["available"]["amount"], untouched["held"]["amount"]) == (DEPOSIT, 0)


# --- 3. two workers settling one match ---------------------------------------------------------

SETTLES: dict[str, dict[str, Any]] = {
    "gin_three-resigned": GAMES["gin_three"],
    "gin_partnership-classic": {
        "game": "gin_partnership",
        "format": "classic",
        **BUYINS,
        "ruleset": {"target": 30, "partnership_target": 30},
        "target": 30,
    },
    "rummy-4-deals": {
        "game": "rummy",
        "seat_count": 4,
        "format": "rummy_deals",
        **BUYINS,
        "target": 1,
        "rummy": {"scoring": "PENALTY"},
    },
}


def _finish(clients: list[ApiClient], match_id: str, resign: bool) -> None:
    """End the match: a resignation, or every seat playing the bot's actions in turn."""
    path = f"/v1/matches/{match_id}/actions"
    if resign:
        response = clients[1].post(path, {"action": "RESIGN"})
        assert response.status_code == 200 and response.get_json()["status"] == "finished"
        return
    for _step in range(5_000):
        view = clients[0].get(f"/v1/matches/{match_id}").get_json()
        if view["status"] != "playing":
            assert view["status"] == "finished", view["status"]
            return
        actor = view["play"]["to_act"][0]
        mine = clients[actor].get(f"/v1/matches/{match_id}").get_json()
        response = clients[actor].post(path, _bot_body(mine))
        assert response.status_code == 200, response.get_json()
    raise AssertionError("the match did not end")


def _settle(session: Any, match_id: str) -> Settlement:
    """A settlement worker's unit of work on its own session."""
    return in_unit(session, settlement.settle_match, match_id, utcnow())


@pytest.mark.parametrize("game", list(SETTLES))
def test_two_workers_settling_one_match_at_once_settle_it_once(
    server: tuple[Any, int], operator: ApiClient, game: str
) -> None:
    app, _port = server
    settings = SETTLES[game]
    table, clients = _seated(operator, settings)
    match_id = table["match_id"]
    players = [c.player_id for c in clients]  # type: ignore[attr-defined]
    _finish(clients, match_id, resign=game.endswith("resigned"))

    sessions = [_session(app), _session(app)]
    try:
        done = _at_once([partial(_settle, s, match_id) for s in sessions])
        assert all(isinstance(d, Settlement) for d in done), done
        ids = {d.id for d in done}
        statement = dict(done[0].statement)
        fee = done[0].fee
    finally:
        for s in sessions:
            s.close()
    assert len(ids) == 1, ids

    escrow = [_escrow(settings)] * len(players)
    assert statement["escrow"] == escrow
    assert sum(statement["payouts"]) + fee == sum(escrow)
    assert statement["net"] == [p - e for p, e in zip(statement["payouts"], escrow, strict=True)]
    session = _session(app)
    try:
        rows = session.scalars(select(Settlement).where(Settlement.match_id == match_id)).all()
        captures = session.scalars(
            select(LedgerTransaction).where(
                LedgerTransaction.kind == "capture", LedgerTransaction.match_ref == match_id
            )
        ).all()
        left = session.scalar(
            select(func.coalesce(func.sum(func.abs(LedgerAccount.balance)), 0)).where(
                LedgerAccount.kind == "player_escrow", LedgerAccount.match_ref == match_id
            )
        )
        problems = store.verify(session, operator.operator_id)  # type: ignore[attr-defined]
        totals = store.journal_totals(session, operator.operator_id)  # type: ignore[attr-defined]
    finally:
        session.close()
    assert [r.id for r in rows] == list(ids)
    assert [c.id for c in captures] == [rows[0].ledger_transaction_id]
    assert left == 0, "the escrow is empty"
    assert problems == [] and totals == {"EUR": 0}
    for seat, player_id in enumerate(players):
        after = wallet(operator, player_id)
        assert after["held"]["amount"] == 0, player_id
        assert after["available"]["amount"] - DEPOSIT == statement["net"][seat], (seat, statement)


def test_a_per_hand_table_settles_each_hand_once_while_seats_change(
    server: tuple[Any, int], operator: ApiClient
) -> None:
    """A continuous Rummy table (11.5.1): two workers settle one hand at once while a player
    dealt into it tries to leave and to top up and a player who sat down during it tops up
    and leaves. One settlement, one capture, one next hand; the player in the hand is
    refused until it is settled; every cent is in a wallet or the fee."""
    app, port = server
    settings = {
        "game": "rummy",
        "seat_count": 3,
        "format": "rummy_per_hand",
        "stake_per_point": 1,
        "min_buyin": 100,
        "max_buyin": 300,
    }
    table = open_table(operator, currency="EUR", **settings)
    clients = [player_client(operator, deposit=DEPOSIT) for _ in range(3)]
    players = [c.player_id for c in clients]  # type: ignore[attr-defined]
    for client in clients[:2]:
        assert join(client, table["id"], buyin=200).status_code == 201
    match_id = operator.get(f"/v1/tables/{table['id']}").get_json()["match_id"]
    assert join(clients[2], table["id"], buyin=100).status_code == 201  # waits for hand 2
    _finish(clients[:2], match_id, resign=False)

    base = f"/v1/tables/{table['id']}/seats/me"

    def over_socket(client: ApiClient, method: str, path: str, body: Any = None) -> int:
        assert client.token is not None
        status, _body, _replayed = send(
            port, method, base + path, client.token, body, key=secrets.token_hex(8)
        )
        return status

    sessions = [_session(app), _session(app)]
    try:
        answers = _at_once(
            [
                *(partial(_settle, s, match_id) for s in sessions),
                partial(over_socket, clients[0], "DELETE", ""),
                partial(over_socket, clients[0], "POST", "/top-ups", {"amount": 10}),
                partial(over_socket, clients[2], "POST", "/top-ups", {"amount": 50}),
            ]
        )
    finally:
        for s in sessions:
            s.close()
    done = answers[:2]
    assert all(isinstance(d, Settlement) for d in done), done
    assert done[0].id == done[1].id
    # Dealt into the hand: refused while it is unsettled, or let through after it.
    assert answers[2] in (200, 409) and answers[3] in (200, 409), answers
    # Seated during the hand: its top-up goes through before the settlement deals the next
    # hand, or is refused once it is dealt into that one (checked below). Which comes first
    # is the race's: a settlement's few round trips often beat a request over a socket.
    assert answers[4] in (200, 409), answers

    session = _session(app)
    try:
        captures = session.scalars(
            select(LedgerTransaction).where(
                LedgerTransaction.kind == "capture", LedgerTransaction.match_ref == match_id
            )
        ).all()
        hands = session.scalars(select(MatchRow).where(MatchRow.table_id == table["id"])).all()
        problems = store.verify(session, operator.operator_id)  # type: ignore[attr-defined]
    finally:
        session.close()
    assert [c.id for c in captures] == [done[0].ledger_transaction_id]
    assert len(hands) == 2, "the settlement dealt exactly one next hand"
    assert problems == []
    # Everybody sits out, the hand being played is finished and settled, everybody leaves.
    for client in clients:
        assert client.put(f"{base}/ready", {"ready": False}).status_code == 200
    latest = operator.get(f"/v1/tables/{table['id']}").get_json()["match_id"]
    assert latest in {h.id for h in hands} and latest != match_id
    current = operator.get(f"/v1/matches/{latest}").get_json()
    assert current["status"] == "playing"
    dealt = {s["player_id"] for s in current["seats"]}
    if answers[4] == 409:  # refused: dealt into the hand the settlement dealt
        assert clients[2].player_id in dealt, (answers, dealt)  # type: ignore[attr-defined]
    _finish([c for c in clients if c.token and c.player_id in dealt], current["id"], resign=False)  # type: ignore[attr-defined]
    settle = _session(app)
    try:
        _settle(settle, current["id"])
    finally:
        settle.close()
    assert operator.get(f"/v1/tables/{table['id']}").get_json()["match_id"] == current["id"]
    seated = {s["player_id"] for s in operator.get(f"/v1/tables/{table['id']}").get_json()["seats"]}
    for client in clients:
        if client.player_id in seated:  # type: ignore[attr-defined]
            assert over_socket(client, "DELETE", "") == 200
    fees = sum(s["fee"]["amount"] for s in operator.get("/v1/settlements").get_json()["data"])
    money = [wallet(operator, p) for p in players]
    assert all(m["held"]["amount"] == 0 for m in money)
    assert sum(m["available"]["amount"] for m in money) + fees == 3 * DEPOSIT
