"""One numbering in every match view of more than two players (docs/games.md, Playing): every
player a view names, inside a hand's own view too (``to_act``, ``dealer``, ``first_player``,
the reader's ``seat``, a log entry's ``seat``, a winner, a meld's ``melded_by``), is a seat of
the match, ``seats[].seat``, which at a table of fixed seats is the table's seat; the reader's
place in a hand is ``position`` and says so. The player ``play.to_act`` names is the one whose
token is given legal actions. At a ``rummy_per_hand`` table, where each hand is a match of the
players dealt in, the hand's view names them by their table seats too."""

from __future__ import annotations

import random
from typing import Any

import pytest
from sqlalchemy import select

from service.client.api import action_body
from service.clock import utcnow
from service.db.match_models import OutboxEvent
from service.games.bots import action_text, decide_multi
from service.usecases import settlement
from tests.api.play_clients import join, open_table, player_client
from tests.conftest import ApiClient, in_unit

BUYINS = {"stake_per_point": 2, "min_buyin": 300, "max_buyin": 600}
FEE = {"bps": 500, "base": "WINNINGS"}
PLAYER_KEYS = {"to_act", "dealer", "first_player", "seat", "winner", "knocker", "melded_by"}


def _hands(play: dict[str, Any]) -> list[dict[str, Any]]:
    if play.get("tables"):
        return list(play["tables"])
    return [play["hand"]] if play.get("hand") else []


def _named(value: Any, key: str | None = None) -> list[tuple[str, int]]:
    """Every (key, seat) a view names a player by, however deep."""
    if isinstance(value, dict):
        return [found for k, v in value.items() for found in _named(v, k)]
    if isinstance(value, list):
        return [found for v in value for found in _named(v, key)]
    if key in PLAYER_KEYS and isinstance(value, int) and not isinstance(value, bool):
        return [(key, value)]
    return []


def _check_one_numbering(view: dict[str, Any]) -> None:
    play, you = view["play"], view["you"]
    seats = {s["seat"] for s in view["seats"]}
    assert all(seat in seats for _, seat in _named(play)), _named(play)
    assert set(play["to_act"]) <= seats
    for part in _hands(play):
        inner = part["hand"]
        assert inner["seats"] == part["seats"]
        assert inner["dealer"] == part["dealer"], part
        assert inner.get("first_player", part["first_player"]) == part["first_player"], part
        assert inner["to_act"] == part["to_act"], part
        for _, seat in _named(inner):
            assert seat in part["seats"], (seat, part["seats"])
        if part["position"] is None:
            assert "seat" not in inner and you not in part["seats"]
        else:
            assert part["seats"][part["position"]] == you == inner["seat"]
        if inner.get("legal_actions"):
            assert part["to_act"] == you and you in play["to_act"]
    assert bool(play.get("legal_actions")) == (you in play["to_act"]), (you, play["to_act"])


def _check_history(record: dict[str, Any], seats: list[int]) -> list[dict[str, Any]]:
    """A hand's history (``GET /v1/matches/{id}/hands/{n}``) dealt to ``seats`` names every
    player by its seat, as the hand's view does; its actions."""
    history = record["history"]
    assert record["fairness"]["seats"] == history["seats"] == seats, record["fairness"]
    for key, seat in _named(history):
        assert seat in seats, (key, seat, seats)
    return list(history["actions"])


def _acted(actions: list[dict[str, Any]]) -> list[int]:
    """The seats an ended hand's actions name, in order (a hand cut short in nobody's name
    names none)."""
    return [entry["seat"] for entry in actions if "seat" in entry]


def _events(app: Any, match_id: str) -> dict[str, dict[str, Any]]:
    """The outbox events of a match, by type (one each), as webhooks deliver their data."""
    session = app.extensions["gin"]["sessionmaker"]()
    try:
        found = session.scalars(select(OutboxEvent).where(OutboxEvent.subject_id == match_id))
        events = [(event.type, dict(event.data)) for event in found]
    finally:
        session.close()
    by_type = dict(events)
    assert len(by_type) == len(events), [kind for kind, _ in events]
    return by_type


def _play_checking(
    clients: list[ApiClient], match_id: str, steps: int, until_hand: int = 0
) -> dict[str, Any]:
    """Play ``steps`` actions (or on to hand ``until_hand`` and a few of its actions),
    checking every player's view before each; the last view of the first client."""
    rng = random.Random(11)
    while steps > 0:
        steps -= 1
        views = [c.get(f"/v1/matches/{match_id}").get_json() for c in clients]
        if views[0]["status"] != "playing":
            break
        for view in views:
            _check_one_numbering(view)
        if until_hand and views[0]["hand_number"] >= until_hand:
            until_hand, steps = 0, 5
        to_act = views[0]["play"]["to_act"]
        actor = rng.choice(to_act)
        play = views[actor]["play"]
        assert play["legal_actions"], "the seat to act has its legal actions"
        body = action_body(action_text(decide_multi(play))) | {
            "expected_version": views[actor]["version"]
        }
        response = clients[actor].post(f"/v1/matches/{match_id}/actions", body)
        assert response.status_code == 200, (body, response.get_json())
    return dict(clients[0].get(f"/v1/matches/{match_id}").get_json())


def _seated(api: ApiClient, count: int, **settings: Any) -> tuple[dict[str, Any], list[ApiClient]]:
    table = open_table(api, **settings)
    clients = [player_client(api) for _ in range(count)]
    for client in clients:
        body = {"buyin": 450} if "min_buyin" in settings else {}
        assert join(client, table["id"], **body).status_code == 201
    return table, clients


@pytest.mark.parametrize(
    ("count", "settings"),
    [
        (3, {"game": "gin_three", "format": "match_play", "stake": 500}),
        (4, {"game": "gin_partnership", "format": "classic", **BUYINS}),
    ],
    ids=["gin_three", "gin_partnership"],
)
def test_a_multi_player_gin_view_names_every_player_by_its_table_seat(
    api: ApiClient, count: int, settings: dict[str, Any]
) -> None:
    table, clients = _seated(api, count, **settings)
    _play_checking(clients, table["match_id"], 40)


def test_a_rummy_view_names_every_player_by_its_table_seat_after_a_forfeit(
    api: ApiClient, app: Any
) -> None:
    """After seat 1 forfeits it is dealt no more, so the next hand's places 0, 1, 2 are the
    table's seats 0, 2 and 3 (hands of a few turns each, void at ``rummy.max_turns``): its
    view names them 0, 2 and 3, and so does its history once it has ended. Seats 0 and 2
    resign a later such hand, so seat 3 (its place 2) wins it and the match: the settlement
    names seat 3 the winner, as a table of fixed seats names every player."""
    table, clients = _seated(
        api,
        4,
        game="rummy",
        seat_count=4,
        format="rummy_target",
        **BUYINS,
        target=500,
        rummy={"max_turns": 6},
    )
    match_id = table["match_id"]
    version = clients[1].get(f"/v1/matches/{match_id}").get_json()["version"]
    resigned = clients[1].post(
        f"/v1/matches/{match_id}/actions", {"action": "RESIGN", "expected_version": version}
    )
    assert resigned.status_code == 200, resigned.get_json()
    last = _play_checking(clients, match_id, 3000, until_hand=3)
    assert last["hand_number"] >= 3 and last["play"]["hand"]["seats"] == [0, 2, 3], last["play"]
    second = clients[0].get(f"/v1/matches/{match_id}/hands/2").get_json()
    acted = _acted(_check_history(second, [0, 2, 3]))
    assert set(acted) & {2, 3}, acted
    for seat in (0, 2):  # two resign in the hand of seats 0, 2 and 3: seat 3 (place 2) wins
        version = clients[seat].get(f"/v1/matches/{match_id}").get_json()["version"]
        resigned = clients[seat].post(
            f"/v1/matches/{match_id}/actions", {"action": "RESIGN", "expected_version": version}
        )
        assert resigned.status_code == 200, resigned.get_json()
    shown = _settlement(app, api, match_id)
    assert shown["seats"] == [0, 1, 2, 3] and shown["winner"] == 3, shown
    statement = shown["statement"]
    assert (statement["winners"], statement["forfeiters"]) == ([3], [0, 1, 2]), statement
    assert shown["net"][3]["amount"] > 0 and statement["raw_net"]["3"] > 0, shown


def test_a_per_hand_rummy_hand_gives_each_player_its_table_seat(api: ApiClient, app: Any) -> None:
    """Four seated; the first hand is dealt to seats 0 and 1, seat 1 resigns it and sits
    out, so the next hand's match seats (its players dealt in, 0 up) are the table's seats
    0, 2 and 3: its view names them 0, 2 and 3 (``to_act``, ``dealer``, log entries...), and
    the player whose table seat is to act is the one given legal actions. Seats 0 and 2
    resign, so seat 3 (the hand's place 2) wins: the hand's history and its webhook events
    name the table's seats too (docs/webhooks.md), and so does an action's refusal (its
    problem's ``detail``)."""
    table, clients = _seated(
        api, 4, game="rummy", seat_count=4, format="rummy_per_hand", **BUYINS, fee=FEE
    )
    first = api.get(f"/v1/tables/{table['id']}").get_json()["match_id"]
    view = clients[1].get(f"/v1/matches/{first}").get_json()
    assert [(s["seat"], s["table_seat"]) for s in view["seats"]] == [(0, 0), (1, 1)]
    resigned = clients[1].post(
        f"/v1/matches/{first}/actions", {"action": "RESIGN", "expected_version": view["version"]}
    )
    assert resigned.status_code == 200, resigned.get_json()
    session = app.extensions["gin"]["sessionmaker"]()
    try:
        in_unit(session, settlement.settle_match, first, utcnow())
    finally:
        session.close()
    seats = {
        s["player_id"]: s["seat"] for s in api.get(f"/v1/tables/{table['id']}").get_json()["seats"]
    }
    second = api.get(f"/v1/tables/{table['id']}").get_json()["match_id"]
    by_seat = {seats[c.player_id]: c for c in clients if c.player_id in seats}  # type: ignore[attr-defined]
    spectator = api.get(f"/v1/matches/{second}").get_json()
    assert [(s["seat"], s["table_seat"]) for s in spectator["seats"]] == [(0, 0), (2, 2), (3, 3)]
    assert spectator["play"]["hand"]["seats"] == [0, 2, 3] and spectator["you"] is None
    (first_to_act,) = spectator["play"]["to_act"]
    waiting = max({0, 2, 3} - {first_to_act})  # a table seat whose place in the hand differs
    refused = (
        by_seat[waiting]
        .post(
            f"/v1/matches/{second}/actions",
            action_body("DRAW_STOCK") | {"expected_version": spectator["version"]},
        )
        .get_json()
    )
    assert refused["rule_code"] == "NOT_YOUR_TURN", refused  # the refusal names table seats
    assert refused["detail"] == f"it is seat {first_to_act}'s turn, not seat {waiting}'s", refused
    named: set[int] = set()
    actors: list[int] = []
    for _step in range(12):
        views = {seat: by_seat[seat].get(f"/v1/matches/{second}").get_json() for seat in (0, 2, 3)}
        if views[0]["status"] != "playing":
            break
        play = views[0]["play"]
        for seat, seen in views.items():
            assert seen["you"] == seat and seen["play"]["you"] == seat
            _check_one_numbering(seen)
            hand = seen["play"]["hand"]
            assert hand["hand"]["seats"] == [0, 2, 3]
            assert hand["seats"][hand["position"]] == seat
            assert {hand["dealer"], hand["hand"]["dealer"]} <= {0, 2, 3}
            for entry in hand["hand"]["log"]:
                if "seat" in entry:
                    assert entry["seat"] in (0, 2, 3), entry
                    named.add(entry["seat"])
            assert bool(seen["play"].get("legal_actions")) == (seat in play["to_act"])
        (actor,) = play["to_act"]
        assert actor in (0, 2, 3) and play["hand"]["to_act"] == actor
        if {0, 2, 3} <= set(actors) and actor != actors[-1]:
            break  # each has played a turn; a second could go out and end the hand
        body = action_body(action_text(decide_multi(views[actor]["play"]))) | {
            "expected_version": views[actor]["version"]
        }
        response = by_seat[actor].post(f"/v1/matches/{second}/actions", body)
        assert response.status_code == 200, (body, response.get_json())
        actors.append(actor)
    assert named & {2, 3}, "a log entry names a player by table seat 2 or 3"
    for seat in (0, 2):  # two resign: the hand ends, won by seat 3
        version = by_seat[seat].get(f"/v1/matches/{second}").get_json()["version"]
        resigned = by_seat[seat].post(
            f"/v1/matches/{second}/actions", {"action": "RESIGN", "expected_version": version}
        )
        assert resigned.status_code == 200, resigned.get_json()
    ended = by_seat[3].get(f"/v1/matches/{second}").get_json()
    assert ended["status"] == "finished" and ended["result"]["forfeiters"] == [0, 2], ended
    assert ended["result"]["winner"] == 3 and ended["play"]["hands"][-1]["seats"] == [0, 2, 3]
    (hand,) = ended["play"]["hands"]
    record = by_seat[3].get(f"/v1/matches/{second}/hands/{hand['number']}").get_json()
    actions = _check_history(record, [0, 2, 3])
    assert _acted(actions) == [*actors, 0, 2], actions
    assert record["history"]["dealer"] == hand["dealer"]
    assert record["history"]["outcome"]["winner"] == 3, record["history"]["outcome"]
    _check_per_hand_events(app, second, seats, hand["dealer"])
    _check_per_hand_settlement(app, api, by_seat[3], second)


def _check_per_hand_events(app: Any, match_id: str, seats: dict[str, int], dealer: int) -> None:
    """The webhook events of the hand above name its players by table seat: ``seats`` are
    0, 2 and 3, the lists of one entry per player follow them, seat 3 won, 0 and 2 resigned."""
    session = app.extensions["gin"]["sessionmaker"]()
    try:
        settled = in_unit(session, settlement.settle_match, match_id, utcnow()).statement["net"]
    finally:
        session.close()
    events = _events(app, match_id)
    assert set(events) == {"match.started", "hand.ended", "match.finished", "settlement.completed"}
    record = events["hand.ended"]["hand"]
    assert record["seats"] == [0, 2, 3] and record["dealer"] == dealer, record
    assert record["winner"] == 3 and record["forfeited"] == [0, 2], record
    assert record["points"][2] > 0 > record["points"][0], record  # in the order of seats
    finished = events["match.finished"]
    assert (finished["winner"], finished["winners"]) == (3, [3]), finished
    assert finished["forfeiters"] == [0, 2] and finished["hands"] == [record], finished
    for kind, data in events.items():
        assert data["seats"] == [0, 2, 3], (kind, data)
        if "players" in data:
            assert [seats[p] for p in data["players"]] == data["seats"], (kind, data)
    completed = events["settlement.completed"]
    assert completed["net"] == settled and completed["net"][2] > 0, completed


def _settlement(app: Any, api: ApiClient, match_id: str) -> dict[str, Any]:
    """The settlement of a match that is over (settled now, as the worker would), as its
    operator reads it, checked for one numbering: its ``seats`` are the table seats of its
    ``players`` (as the match view names them), every player it names is one of them, each line's
    text says what the line's fields say, the operator's list shows the same, and its audit
    passes (the stored statement is the one the audit recomputes)."""
    session = app.extensions["gin"]["sessionmaker"]()
    try:
        in_unit(session, settlement.settle_match, match_id, utcnow())
    finally:
        session.close()
    shown = dict(api.get(f"/v1/matches/{match_id}/settlement").get_json())
    listed = api.get("/v1/settlements?limit=100").get_json()["data"]
    assert [s for s in listed if s["match_id"] == match_id] == [shown]
    match = api.get(f"/v1/matches/{match_id}").get_json()
    seat_of = {s["player_id"]: s["seat"] for s in match["seats"]}
    assert [seat_of[p] for p in shown["players"]] == shown["seats"], (shown, match["seats"])
    statement, seats = shown["statement"], set(shown["seats"])
    named = [shown["winner"], shown["forfeiter"], statement["winner"], statement["forfeiter"]]
    named += statement.get("winners", []) + statement.get("forfeiters", [])
    named += statement.get("receivers", []) + [int(s) for s in statement.get("raw_net", {})]
    named += [int(s) for s in statement.get("fees", {})]
    for line in statement.get("lines", []):
        parties = [line["payer"], line["payee"]]
        named += [p for p in parties if isinstance(p, int)]
        payer, payee = (f"seat {p}" if isinstance(p, int) else f"the {p}" for p in parties)
        verb = "owes" if line["kind"] == "OWES" else "pays"
        text = f"{payer} {verb} {payee} {line['amount']}: {line['reason']} ({line['rule']})"
        assert line["text"] == text, line
    assert {seat for seat in named if seat is not None} <= seats, (named, shown["seats"])
    audit = api.get(f"/v1/audit/settlements/{match_id}").get_json()
    assert audit["ok"] is True, audit["discrepancies"]
    return shown


def _check_per_hand_settlement(app: Any, api: ApiClient, winner: ApiClient, match_id: str) -> None:
    """The settlement of the hand above names its players by table seat, as the winner reads
    it too: ``seats`` are 0, 2 and 3, seat 3 won, 0 and 2 resigned and pay seat 3 (its
    place in the hand is 2), and seat 3 pays the house its fee."""
    shown = _settlement(app, api, match_id)
    assert winner.get(f"/v1/matches/{match_id}/settlement").get_json() == shown
    assert shown["seats"] == [0, 2, 3], shown
    statement = shown["statement"]
    assert (shown["winner"], shown["forfeiter"]) == (3, None), shown
    assert (statement["winner"], statement["winners"]) == (3, [3]), statement
    assert statement["forfeiters"] == [0, 2] and statement["receivers"] == [3], statement
    assert set(statement["raw_net"]) == {"0", "2", "3"} and set(statement["fees"]) == {"3"}
    assert statement["raw_net"]["3"] > 0 > statement["raw_net"]["0"], statement
    assert shown["net"][2]["amount"] == statement["net"][2] > 0, shown  # in the order of seats
    pays = [line for line in statement["lines"] if line["kind"] == "PAYS"]
    assert {(line["payer"], line["payee"]) for line in pays} == {(0, 3), (2, 3)}, pays
    assert all(line["text"].startswith(f"seat {line['payer']} pays seat 3 ") for line in pays)
    (fee,) = (line for line in statement["lines"] if line["kind"] == "FEE")
    assert (fee["payer"], fee["payee"]) == (3, "house") and fee["text"].startswith("seat 3 pays")


@pytest.mark.parametrize(
    ("count", "settings"),
    [
        (3, {"game": "gin_three", "format": "match_play", "stake": 500}),
        (4, {"game": "gin_partnership", "format": "classic", **BUYINS}),
    ],
    ids=["gin_three", "gin_partnership"],
)
def test_a_multi_player_gin_history_names_every_player_by_its_table_seat(
    api: ApiClient,
    app: Any,
    count: int,
    settings: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The last seat plays a few actions and resigns: the history of its hand names every
    player by table seat (its actions' seats are those who acted, the dealer is the hand's),
    where the hand's own places are 0 and 1. Three players: seat 0 sits the first hand out
    (the draw is fixed), so that hand is seats 1 and 2's. The settlement names the last seat
    (its hand's place 1) the forfeiter, its lines and their text by table seat too."""
    monkeypatch.setattr("service.usecases.play.secrets.randbelow", lambda _n: 0)
    table, clients = _seated(api, count, **settings)
    monkeypatch.undo()
    match_id, last = table["match_id"], count - 1
    rng = random.Random(5)
    actors: dict[int, list[int]] = {}
    for _step in range(6):
        views = [c.get(f"/v1/matches/{match_id}").get_json() for c in clients]
        actor = rng.choice(views[0]["play"]["to_act"])
        (part,) = (p for p in _hands(views[actor]["play"]) if p["to_act"] == actor)
        body = action_body(action_text(decide_multi(views[actor]["play"]))) | {
            "expected_version": views[actor]["version"]
        }
        assert clients[actor].post(f"/v1/matches/{match_id}/actions", body).status_code == 200
        actors.setdefault(part["number"], []).append(actor)
    view = clients[last].get(f"/v1/matches/{match_id}").get_json()
    (mine,) = (p for p in _hands(view["play"]) if last in p["seats"])
    assert mine["seats"][1] == last and (count == 4 or mine["seats"] == [1, 2]), mine
    resigned = clients[last].post(
        f"/v1/matches/{match_id}/actions",
        {"action": "RESIGN", "expected_version": view["version"]},
    )
    assert resigned.status_code == 200, resigned.get_json()
    record = api.get(f"/v1/matches/{match_id}/hands/{mine['number']}").get_json()
    actions = _check_history(record, mine["seats"])
    # The resignation is the hand's last action, unless a knock had ended the hand already.
    resigned_in_it = [last] if mine["to_act"] is not None else []
    assert _acted(actions) == [*actors.get(mine["number"], []), *resigned_in_it], actions
    assert record["history"]["dealer"] == mine["dealer"], record["history"]["dealer"]
    shown = _settlement(app, api, match_id)
    assert shown["seats"] == list(range(count)) and shown["forfeiter"] == last, shown
    assert shown["statement"]["forfeiters"] == [last], shown["statement"]
    assert last not in shown["statement"]["winners"], shown["statement"]
