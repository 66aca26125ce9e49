"""Continuous Rummy tables (``rummy_per_hand``, docs/multiplayer-money.md 11.5.1) end to end over
HTTP: players sit down with a buy-in between hands, a hand is dealt when two are ready, each hand
is a match of its own settled by moving money between the table balances of the players dealt in
and the house fee, players top up, sit out and leave between hands, the audit recomputes
every hand against the ledger, and no answer ever shows a card its reader may not know."""

from __future__ import annotations

import random
import secrets
from typing import Any

from service.client.api import action_body
from service.clock import utcnow
from service.games.bots import action_text, decide_multi, random_multi
from service.games.common import fair
from service.usecases import settlement
from tests.api.play_clients import join, open_table, player_client, wallet
from tests.api.test_every_game import _codes, _hidden, _leaks
from tests.conftest import ApiClient, in_unit

TABLE = {
    "game": "rummy",
    "seat_count": 4,
    "format": "rummy_per_hand",
    "stake_per_point": 1,
    "min_buyin": 100,
    "max_buyin": 300,
    "min_balance": 60,
    "fee": {"bps": 500, "base": "WINNINGS"},
}


def _table(client: ApiClient, table_id: str) -> dict[str, Any]:
    response = client.get(f"/v1/tables/{table_id}")
    assert response.status_code == 200, response.get_json()
    return dict(response.get_json())


def _balances(client: ApiClient, table_id: str) -> dict[str, int]:
    return {s["player_id"]: s["escrow"]["amount"] for s in _table(client, table_id)["seats"]}


def _held(api: ApiClient, player_id: str) -> tuple[int, int]:
    found = wallet(api, player_id)
    return found["available"]["amount"], found["held"]["amount"]


def _play_hand(
    app: Any, clients: dict[str, ApiClient], match_id: str, rng: random.Random
) -> dict[str, Any]:
    """Play the hand ``match_id`` to its end with bot clients (the players seated in it),
    checking every answer for cards its reader may not see; the last view. The view names
    the players by table seat; the i-th of its ``seats`` is the hand's match seat i."""
    spectator = next(iter(clients.values()))
    first = spectator.get(f"/v1/matches/{match_id}").get_json()
    dealt = {s["player_id"]: s["seat"] for s in first["seats"]}
    by_seat = {seat: clients[player] for player, seat in dealt.items()}
    in_match = {s["seat"]: i for i, s in enumerate(first["seats"])}
    public: dict[int, set[str]] = {}
    for _step in range(5_000):
        views = {seat: c.get(f"/v1/matches/{match_id}").get_json() for seat, c in by_seat.items()}
        view = next(iter(views.values()))
        if view["status"] != "playing":
            return view
        for seat, seen in views.items():
            assert seen["you"] == seat and seen["game"] == "rummy"
            for number, codes in _codes(seen).items():  # a card on the table is public
                public.setdefault(number, set()).update(
                    codes - _hidden(app, match_id, None).get(number, set())
                )
        for seat, seen in views.items():
            assert not _leaks(seen, _hidden(app, match_id, in_match[seat]), public), seat
        actor = view["play"]["to_act"][0]
        play = views[actor]["play"]
        choice = random_multi(play, rng) if rng.random() < 0.15 else decide_multi(play)
        body = action_body(action_text(choice)) | {"expected_version": views[actor]["version"]}
        response = by_seat[actor].post(f"/v1/matches/{match_id}/actions", body)
        assert response.status_code == 200, (body, response.get_json())
        hidden = _hidden(app, match_id, in_match[actor])
        assert not _leaks(response.get_json(), hidden, public)
    raise AssertionError("the hand did not end")


def _settle(app: Any, match_id: str) -> Any:
    session = app.extensions["gin"]["sessionmaker"]()
    try:
        done = in_unit(session, settlement.settle_match, match_id, utcnow())
        again = in_unit(session, settlement.settle_match, match_id, utcnow())
    finally:
        session.close()
    assert again.id == done.id, "a hand is settled once"
    return done


def test_players_come_and_go_between_hands_and_every_hand_is_settled(
    api: ApiClient, app: Any
) -> None:
    table = open_table(api, currency="EUR", **TABLE)
    table_id = table["id"]
    assert table["status"] == "open" and table["format"] == "rummy_per_hand"
    alice, bob, carol = (player_client(api, deposit=1_000) for _ in range(3))
    clients = {c.player_id: c for c in (alice, bob, carol)}  # type: ignore[attr-defined]
    ids = list(clients)

    # One player: no hand yet. The second one deals the first hand.
    assert join(alice, table_id, buyin=200).status_code == 201
    waiting = alice.get(f"/v1/matches/{table['match_id']}").get_json()
    assert waiting["status"] == "waiting"
    assert _held(api, ids[0]) == (800, 200)
    assert join(bob, table_id, buyin=150).status_code == 201
    first = _table(alice, table_id)
    assert first["status"] == "open" and first["match_id"] == table["match_id"]
    hand1 = alice.get(f"/v1/matches/{first['match_id']}").get_json()
    assert hand1["status"] == "playing"
    assert [s["player_id"] for s in hand1["seats"]] == ids[:2]
    assert [s["escrow"]["amount"] for s in hand1["seats"]] == [200, 150]

    # Carol sits down during the hand: she waits for the next one, and may top up meanwhile;
    # the players dealt in may neither leave nor top up until their hand is settled.
    assert join(carol, table_id, buyin=100).status_code == 201
    assert _table(carol, table_id)["match_id"] == first["match_id"]
    for client in (alice, bob):
        left = client.delete(f"/v1/tables/{table_id}/seats/me", key=secrets.token_hex(8))
        assert left.status_code == 409, left.get_json()
        topped = client.post(
            f"/v1/tables/{table_id}/seats/me/top-ups", {"amount": 10}, key=secrets.token_hex(8)
        )
        assert topped.status_code == 409, topped.get_json()
    past_max = carol.post(
        f"/v1/tables/{table_id}/seats/me/top-ups", {"amount": 201}, key=secrets.token_hex(8)
    )
    assert past_max.status_code == 422 and "amount" in str(past_max.get_json())
    topped = carol.post(
        f"/v1/tables/{table_id}/seats/me/top-ups", {"amount": 50}, key=secrets.token_hex(8)
    )
    assert topped.status_code == 200, topped.get_json()
    assert _held(api, ids[2]) == (850, 150)

    rng = random.Random(11)
    hands_played = 0
    match_id = first["match_id"]
    seen_players: set[int] = set()
    while hands_played < 4:
        balances = _balances(api, table_id)
        before = {p: _held(api, p) for p in ids if p in balances}
        dealt = [s["player_id"] for s in api.get(f"/v1/matches/{match_id}").get_json()["seats"]]
        seen_players.add(len(dealt))
        final = _play_hand(app, clients, match_id, rng)
        assert final["status"] in ("finished", "void")
        # Every hand verifies offline from its revealed seed.
        for number in sorted({h["number"] for h in final["play"]["hands"]}):
            record = alice.get(f"/v1/matches/{match_id}/hands/{number}").get_json()
            fairness = record["fairness"]
            assert fair.commitment(fairness["server_seed"]) == fairness["commitment"]
        done = _settle(app, match_id)
        statement = done.statement
        assert statement["escrow"] == [balances[p] for p in dealt]
        assert sum(statement["net"]) + done.fee == 0
        if done.fee:
            assert statement["lines"], "every per-loser line is listed"
        after = _balances(api, table_id)
        for i, player in enumerate(dealt):
            assert after[player] == balances[player] + statement["net"][i]
            available, held = _held(api, player)
            assert available == before[player][0], "a hand moves table balances only"
            assert held == after[player]
        audit = api.get(f"/v1/audit/settlements/{match_id}").get_json()
        assert audit["ok"] is True, audit["discrepancies"]
        hands_played += 1
        # The next hand was dealt in the settlement, to the players ready with at least
        # the minimum balance.
        now = _table(api, table_id)
        floor = TABLE["min_balance"]
        eligible = [
            s["player_id"] for s in now["seats"] if s["ready"] and s["escrow"]["amount"] >= floor
        ]
        if len(eligible) < 2:
            assert now["match_id"] == match_id
            for seat in now["seats"]:
                if seat["escrow"]["amount"] < floor:
                    client = clients[seat["player_id"]]
                    response = client.post(
                        f"/v1/tables/{table_id}/seats/me/top-ups",
                        {"amount": TABLE["max_buyin"] - seat["escrow"]["amount"]},
                        key=secrets.token_hex(8),
                    )
                    assert response.status_code == 200, response.get_json()
            now = _table(api, table_id)
        assert now["match_id"] != match_id
        match_id = now["match_id"]
        nxt = api.get(f"/v1/matches/{match_id}").get_json()
        assert nxt["status"] == "playing"
        assert sorted(s["player_id"] for s in nxt["seats"]) == sorted(
            s["player_id"]
            for s in _table(api, table_id)["seats"]
            if s["ready"] and s["escrow"]["amount"] >= floor
        )
    assert 3 in seen_players, "carol was dealt in from the second hand"

    # Sitting out: once the current hand is settled, bob is dealt no more hands.
    assert bob.put(f"/v1/tables/{table_id}/seats/me/ready", {"ready": False}).status_code == 200
    final = _play_hand(app, clients, match_id, rng)
    _settle(app, match_id)
    now = _table(api, table_id)
    if now["match_id"] != match_id:
        nxt = api.get(f"/v1/matches/{now['match_id']}").get_json()
        assert ids[1] not in [s["player_id"] for s in nxt["seats"]]
        _play_hand(app, clients, now["match_id"], rng)
        _settle(app, now["match_id"])

    # Leaving between hands releases the whole table balance; the books balance.
    total = 0
    for player, client in clients.items():
        balance = _balances(api, table_id).get(player, 0)
        current = api.get(f"/v1/matches/{_table(api, table_id)['match_id']}").get_json()
        if current["status"] == "playing" and player in [s["player_id"] for s in current["seats"]]:
            continue
        available = _held(api, player)[0]
        left = client.delete(f"/v1/tables/{table_id}/seats/me", key=secrets.token_hex(8))
        assert left.status_code == 200, left.get_json()
        assert _held(api, player) == (available + balance, 0)
    for player in ids:
        total += sum(_held(api, player))
    settled = api.get("/v1/settlements", query_string={"limit": 100}).get_json()["data"]
    assert len(settled) >= hands_played + 1
    fees = sum(s["fee"]["amount"] for s in settled)
    # Every cent is in a wallet (a table balance is held) or the house's fee.
    assert total + fees == 3_000
    ledger = api.get("/v1/audit/ledger").get_json()
    assert ledger["ok"] is True, ledger


def _entries(api: ApiClient, player_id: str) -> list[dict[str, Any]]:
    response = api.get(f"/v1/players/{player_id}/entries", query_string={"limit": 100})
    assert response.status_code == 200, response.get_json()
    return list(response.get_json()["data"])


def _audited(api: ApiClient, match_id: str) -> None:
    audit = api.get(f"/v1/audit/settlements/{match_id}").get_json()
    assert audit["ok"] is True, audit["discrepancies"]
    ledger = api.get("/v1/audit/ledger").get_json()
    assert ledger["ok"] is True, ledger


def test_a_forfeiter_leaves_the_table_with_its_balance_after_the_hand(
    api: ApiClient, app: Any
) -> None:
    """11.6.3: a player who forfeits a per-hand table's hand counts as a loser in it, then
    leaves the table: its remaining table balance is released to its wallet once (a ledger
    release), and the next hand is dealt among the others (11.5.1)."""
    table = open_table(api, currency="EUR", **TABLE)
    clients = [player_client(api, deposit=1_000) for _ in range(3)]
    ids = [c.player_id for c in clients]  # type: ignore[attr-defined]
    for client in clients:
        assert join(client, table["id"], buyin=200).status_code == 201
    match_id = _table(api, table["id"])["match_id"]
    view = clients[2].get(f"/v1/matches/{match_id}").get_json()
    assert [s["player_id"] for s in view["seats"]] == ids[:2]
    resigned = clients[1].post(
        f"/v1/matches/{match_id}/actions",
        {"action": "RESIGN", "expected_version": view["version"]},
    )
    assert resigned.status_code == 200, resigned.get_json()
    assert resigned.get_json()["status"] in ("finished", "void")
    # Until its hand is settled the forfeiter is still seated, its balance held.
    assert _held(api, ids[1]) == (800, 200)
    assert ids[1] in _balances(api, table["id"])
    done = _settle(app, match_id)  # settled twice: once
    lost = done.statement["net"][1]
    assert lost < 0, "the forfeiter's cards count against it"
    now = _table(api, table["id"])
    assert ids[1] not in [s["player_id"] for s in now["seats"]], "the forfeiter has left"
    assert now["free_seats"] == TABLE["seat_count"] - 2
    assert _held(api, ids[1]) == (800 + 200 + lost, 0), "its balance is back in its wallet"
    releases = [
        e for e in _entries(api, ids[1]) if e["kind"] == "release" and e["account"] == "available"
    ]
    assert [e["amount"]["amount"] for e in releases] == [200 + lost]
    # The next hand is dealt to the two others.
    nxt = api.get(f"/v1/matches/{now['match_id']}").get_json()
    assert now["match_id"] != match_id and nxt["status"] == "playing"
    assert sorted(s["player_id"] for s in nxt["seats"]) == sorted([ids[0], ids[2]])
    # It may sit down again, with a new buy-in, like anybody else.
    assert join(clients[1], table["id"], buyin=100).status_code == 201
    assert _held(api, ids[1]) == (900 + lost, 100)
    _audited(api, match_id)


def test_top_ups_and_readiness_are_for_per_hand_tables_only(api: ApiClient) -> None:
    table = open_table(
        api,
        currency="EUR",
        game="rummy",
        seat_count=3,
        format="rummy_deals",
        stake_per_point=1,
        min_buyin=100,
        max_buyin=300,
        target=1,
    )
    client = player_client(api, deposit=1_000)
    assert join(client, table["id"], buyin=100).status_code == 201
    topped = client.post(
        f"/v1/tables/{table['id']}/seats/me/top-ups", {"amount": 5}, key=secrets.token_hex(8)
    )
    assert topped.status_code == 409, topped.get_json()
    assert (
        client.put(f"/v1/tables/{table['id']}/seats/me/ready", {"ready": False}).status_code == 409
    )
    assert _held(api, client.player_id) == (900, 100)  # type: ignore[attr-defined]
    other = player_client(api, deposit=1_000)
    nowhere = other.post(
        f"/v1/tables/{table['id']}/seats/me/top-ups", {"amount": 5}, key=secrets.token_hex(8)
    )
    assert nowhere.status_code == 404, nowhere.get_json()
    for body in ({"amount": 0}, {"amount": 1.5}, {}):
        bad = client.post(
            f"/v1/tables/{table['id']}/seats/me/top-ups", body, key=secrets.token_hex(8)
        )
        assert bad.status_code == 422 and "amount" in str(bad.get_json()), bad.get_json()


def test_the_clock_forfeits_a_hand_and_the_player_leaves(api: ApiClient, app: Any) -> None:
    from datetime import timedelta

    from service.usecases import play

    clock = {"turn_seconds": 5, "bank_seconds": 0, "on_timeout": "FORFEIT"}
    table = open_table(api, currency="EUR", **TABLE, clock=clock)
    clients = [player_client(api, deposit=1_000) for _ in range(3)]
    for client in clients:
        assert join(client, table["id"], buyin=200).status_code == 201
    match_id = _table(api, table["id"])["match_id"]
    view = clients[0].get(f"/v1/matches/{match_id}").get_json()
    late = view["play"]["to_act"][0]
    late_player = view["seats"][late]["player_id"]
    session = app.extensions["gin"]["sessionmaker"]()
    try:
        assert play.time_out(session, match_id, utcnow() + timedelta(seconds=3)) is False
        assert play.time_out(session, match_id, utcnow() + timedelta(seconds=6)) is True
    finally:
        session.close()
    over = clients[0].get(f"/v1/matches/{match_id}").get_json()
    assert over["status"] == "finished" and over["result"]["forfeiters"] == [late], over["result"]
    done = _settle(app, match_id)
    assert done.statement["net"][late] < 0
    seats = {s["player_id"]: s for s in _table(api, table["id"])["seats"]}
    assert late_player not in seats
    assert _held(api, late_player) == (1_000 + done.statement["net"][late], 0)
    following = _table(api, table["id"])["match_id"]
    dealt = [s["player_id"] for s in api.get(f"/v1/matches/{following}").get_json()["seats"]]
    assert following != match_id and late_player not in dealt and len(dealt) == 2
    audit = api.get(f"/v1/audit/settlements/{match_id}").get_json()
    assert audit["ok"] is True, audit["discrepancies"]


def test_at_a_private_table_a_player_sitting_a_hand_out_watches_it(api: ApiClient) -> None:
    table = open_table(api, currency="EUR", **TABLE, private=True)
    clients = [player_client(api, deposit=1_000) for _ in range(3)]
    for client in clients:
        response = join(client, table["id"], buyin=200, invite_code=table["invite_code"])
        assert response.status_code == 201, response.get_json()
    match_id = _table(api, table["id"])["match_id"]
    watched = clients[2].get(f"/v1/matches/{match_id}")
    assert watched.status_code == 200, watched.get_json()
    body = watched.get_json()
    assert body["you"] is None and "legal_actions" not in body["play"]
    seated = clients[0].get(f"/v1/matches/{match_id}").get_json()
    assert seated["play"]["hand"]["hand"]["hand"], "a player dealt in sees its own cards"
    assert "hand" not in body["play"]["hand"]["hand"], "one sitting out sees nobody's cards"
    stranger = player_client(api, deposit=0)
    assert stranger.get(f"/v1/matches/{match_id}").status_code == 403


def test_a_self_excluded_player_is_dealt_no_more_hands_and_cannot_top_up(
    api: ApiClient, app: Any
) -> None:
    table = open_table(api, currency="EUR", **TABLE)
    clients = [player_client(api, deposit=1_000) for _ in range(3)]
    ids = [c.player_id for c in clients]  # type: ignore[attr-defined]
    for client in clients:
        assert join(client, table["id"], buyin=200).status_code == 201
    hand1 = _table(api, table["id"])["match_id"]
    excluded = api.put(f"/v1/players/{ids[2]}/self-exclusion", {"until": "2099-01-01T00:00:00Z"})
    assert excluded.status_code == 200, excluded.get_json()
    seats = {s["player_id"]: s for s in _table(api, table["id"])["seats"]}
    assert seats[ids[2]]["ready"] is False, "shown sitting out, its balance still held"
    assert seats[ids[2]]["escrow"]["amount"] == 200
    topped = clients[2].post(
        f"/v1/tables/{table['id']}/seats/me/top-ups", {"amount": 10}, key=secrets.token_hex(8)
    )
    assert topped.status_code == 422 and topped.get_json()["code"] == "self_excluded"
    _play_hand(app, {p: c for p, c in zip(ids, clients, strict=True)}, hand1, random.Random(3))
    _settle(app, hand1)
    hand2 = _table(api, table["id"])["match_id"]
    dealt = [s["player_id"] for s in api.get(f"/v1/matches/{hand2}").get_json()["seats"]]
    assert hand2 != hand1 and sorted(dealt) == sorted(ids[:2])
    left = clients[2].delete(f"/v1/tables/{table['id']}/seats/me", key=secrets.token_hex(8))
    assert left.status_code == 200, "leaving is always allowed between its hands"
    assert _held(api, ids[2]) == (1_000, 0)


def test_a_busted_player_is_sat_out_until_it_tops_up(api: ApiClient, app: Any) -> None:
    """At 100 a point any loser's count costs at least its buy-in of 100: it pays what it has
    (5.8.1), is left with nothing, sits the next hand out and comes back by topping up."""
    busting = {**TABLE, "stake_per_point": 100, "min_balance": 100, "max_buyin": 1_000}
    table = open_table(api, currency="EUR", **busting)
    clients = [player_client(api, deposit=1_000) for _ in range(2)]
    ids = [c.player_id for c in clients]  # type: ignore[attr-defined]
    by_id = dict(zip(ids, clients, strict=True))
    for client in clients:
        assert join(client, table["id"], buyin=100).status_code == 201
    hand1 = _table(api, table["id"])["match_id"]
    _play_hand(app, by_id, hand1, random.Random(5))
    done = _settle(app, hand1)
    loser = ids[done.statement["net"].index(min(done.statement["net"]))]
    winner = ids[1 - ids.index(loser)]
    balances = _balances(api, table["id"])
    assert balances[loser] == 0, "the loser paid its whole table balance and no more"
    assert balances[winner] == 200 - done.fee
    assert _table(api, table["id"])["match_id"] == hand1, "one player with money: no hand"
    # Busted: a top-up deals it in again.
    topped = by_id[loser].post(
        f"/v1/tables/{table['id']}/seats/me/top-ups", {"amount": 150}, key=secrets.token_hex(8)
    )
    assert topped.status_code == 200, topped.get_json()
    hand2 = _table(api, table["id"])["match_id"]
    assert hand2 != hand1
    dealt = api.get(f"/v1/matches/{hand2}").get_json()["seats"]
    assert {s["player_id"]: s["escrow"]["amount"] for s in dealt} == {
        loser: 150,
        winner: 200 - done.fee,
    }
    assert _held(api, loser) == (750, 150)
