"""Practice bots over the API: seated by the operator at practice tables only, funded through
the ledger, playing a whole match against a scripted human with the bots' task run inline."""

from __future__ import annotations

from typing import Any

import pytest

from service.client import ApiProblem, GinClient, new_key
from service.clock import utcnow
from service.games.gin.bot import decide
from service.usecases import bots, play
from service.usecases.auth import Principal


@pytest.fixture
def inline_worker(monkeypatch: pytest.MonkeyPatch, database_url: str) -> None:
    """The worker's tasks, called as plain functions, use the test database."""
    monkeypatch.setenv("DATABASE_URL", database_url)


def human(operator: GinClient, chips: int = 100) -> tuple[GinClient, str]:
    player = operator.create_player(f"human-{new_key()[:8]}", "Alice")
    operator.deposit(player["id"], chips, "XPM")
    return operator.as_(operator.player_token(player["id"])["token"]), player["id"]


def practice_table(operator: GinClient, **settings: Any) -> dict[str, Any]:
    body = {"format": "match_play", "stake": 10, "target": 50, "practice": True, **settings}
    return dict(operator.create_table(currency="XPM", **body))


def test_a_bot_plays_a_whole_practice_match_against_a_person(
    operator: GinClient, app: Any, inline_worker: None
) -> None:
    from worker.bot_tasks import play_bot_turns
    from worker.tasks import settle_match

    table = practice_table(operator)
    person, _ = human(operator)
    person.join(table["id"])
    seated = operator.seat_bot(table["id"], display_name="Robo")
    bot_id, match_id = seated["player_id"], table["match_id"]
    assert seated["match_id"] == match_id and seated["strategy"] == "sensible"
    assert seated["table"]["status"] == "playing"  # the bot's seat started the match
    assert [b["player_id"] for b in operator.bots(table["id"])] == [bot_id]
    # Funded with exactly its stake, in play money, by a deposit from the operator's
    # clearing account; the stake is now held in the match's escrow.
    wallet = operator.wallet(bot_id, "XPM")
    assert (wallet["available"]["amount"], wallet["held"]["amount"]) == (0, 10)
    kinds = [e["kind"] for e in operator.entries(bot_id, currency="XPM")["data"]]
    assert kinds.count("deposit") == 1 and set(kinds) == {"deposit", "hold"}, kinds

    bot_actions = 0
    for _ in range(3000):
        view = person.match(match_id)
        if view["status"] != "playing":
            break
        hand = view["hand"]
        assert hand is not None
        if hand.get("legal_actions"):
            person.act(match_id, decide(hand), view["version"])
        else:  # the bot's turn: the beat task, run inline, plays it
            applied = play_bot_turns()
            assert applied >= 1, view
            bot_actions += applied
    else:
        raise AssertionError("the match did not end")
    # How many actions the bot gets depends on the deal (a hand can end on the person's
    # first knock), so the log is checked instead of a count.
    assert view["status"] == "finished" and bot_actions >= 1
    assert play_bot_turns() == 0  # nothing left to do once the match is over

    # The bot's actions are in the hands' histories under its seat, like a person's.
    bot_seat = [s["player_id"] for s in view["seats"]].index(bot_id)
    hands = view["scores"]["hands_played"]
    logged = [
        entry
        for number in range(1, hands + 1)
        for entry in operator.hand_history(match_id, number)["history"]["actions"]
        if entry["seat"] == bot_seat
    ]
    assert 1 <= len(logged) <= bot_actions

    settle_match(match_id)
    settled = operator.settlement(match_id)
    assert settled["players"] == [
        s["player_id"]
        for s in sorted(operator.table(table["id"])["seats"], key=lambda s: s["seat"])
    ]
    assert sum(p["amount"] for p in settled["payouts"]) + settled["fee"]["amount"] == 20
    bot_seat = settled["players"].index(bot_id)
    after = operator.wallet(bot_id, "XPM")
    assert after["held"]["amount"] == 0
    assert after["balance"]["amount"] == 10 + settled["net"][bot_seat]["amount"]
    audit = operator.audit_ledger()
    assert audit["ok"], audit["discrepancies"]
    assert operator.audit_settlement(match_id)["ok"]


def test_bots_sit_at_practice_tables_only(operator: GinClient) -> None:
    real = operator.create_table(format="match_play", currency="EUR", stake=500)
    with pytest.raises(ApiProblem) as refused:
        operator.seat_bot(real["id"])
    problem = refused.value
    assert (problem.status, problem.code) == (422, "practice_table_required")
    assert problem.type == "/problems/practice_table_required"
    assert [f.field for f in problem.fields] == ["table_id"]
    assert operator.table(real["id"])["seats"] == []


def test_seating_a_bot_needs_the_operator_key_and_is_idempotent(operator: GinClient) -> None:
    table = practice_table(operator)
    person, _ = human(operator)
    with pytest.raises(ApiProblem) as refused:
        person.seat_bot(table["id"])
    assert refused.value.status == 403
    key = new_key()
    first = operator.seat_bot(table["id"], idempotency_key=key)
    again = operator.seat_bot(table["id"], idempotency_key=key)
    assert again["player_id"] == first["player_id"]  # replayed, not a second bot
    assert len(operator.bots(table["id"])) == 1
    assert operator.wallet(first["player_id"], "XPM")["balance"]["amount"] == 10
    # A second bot fills the table (bot against bot); a third finds no seat.
    operator.seat_bot(table["id"])
    with pytest.raises(ApiProblem) as full:
        operator.seat_bot(table["id"])
    assert (full.value.status, full.value.code) == (409, "table_not_open")


def test_money_play_bot_buys_in_within_the_range(operator: GinClient) -> None:
    table = practice_table(
        operator, format="money_play", stake=0, stake_per_point=1, min_buyin=50, max_buyin=200
    )
    with pytest.raises(ApiProblem) as refused:
        operator.seat_bot(table["id"], buyin=10)
    assert [f.field for f in refused.value.fields] == ["buyin"]
    seated = operator.seat_bot(table["id"])
    assert operator.wallet(seated["player_id"], "XPM")["held"]["amount"] == 200


def test_a_twin_run_with_a_stale_view_changes_nothing(
    operator: GinClient, app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two scans racing for the same turn: the slower one's action is a stale version, and
    it is ignored (no error, nothing applied twice)."""
    table = practice_table(operator, format="first_to_knock")
    bot_a = operator.seat_bot(table["id"])
    bot_b = operator.seat_bot(table["id"])
    assert bot_a["strategy"] == "eager"
    session = app.extensions["gin"]["sessionmaker"]()
    try:
        match_id = table["match_id"]
        principals = [Principal(operator.operator()["id"], b["player_id"]) for b in (bot_a, bot_b)]
        views = [play.get_view(session, p, match_id) for p in principals]
        mover = next(i for i, v in enumerate(views) if v["hand"]["legal_actions"])
        stale = views[mover]
        assert bots.play_turns(session, utcnow()).applied >= 1
        version = play.current_version(session, principals[0], match_id)
        monkeypatch.setattr(play, "get_view", lambda *_: stale)
        _view, applied = bots._play(session, principals[mover], match_id, False, utcnow())
        assert applied == 0
        monkeypatch.undo()
        assert play.current_version(session, principals[0], match_id) == version
    finally:
        session.close()


@pytest.mark.parametrize(
    "settings",
    [
        {"game": "gin_three", "ruleset": {"target": 25}},
        {"game": "gin_partnership", "ruleset": {"partnership_target": 25}},
        {
            "game": "rummy",
            "seat_count": 5,
            "format": "rummy_deals",
            "target": 2,
            "stake_per_point": 1,
            "min_buyin": 50,
            "max_buyin": 80,
        },
    ],
    ids=["gin_three", "gin_partnership", "rummy"],
)
def test_bots_fill_and_play_every_game_to_a_settled_audited_end(
    operator: GinClient, inline_worker: None, settings: dict[str, Any]
) -> None:
    from worker.bot_tasks import play_bot_turns
    from worker.tasks import settle_match

    table = practice_table(operator, **settings)
    for i in range(table["seat_count"]):
        seated = operator.seat_bot(table["id"], display_name=f"Robo {i}")
    assert seated["table"]["status"] == "playing"
    match_id = table["match_id"]
    for _ in range(3000):
        if operator.match(match_id)["status"] != "playing":
            break
        assert play_bot_turns() >= 1
    else:
        raise AssertionError("the bots did not finish the match")
    settle_match(match_id)
    settled = operator.settlement(match_id)
    escrow = [s["escrow"]["amount"] for s in operator.table(table["id"])["seats"]]
    assert sum(p["amount"] for p in settled["payouts"]) + settled["fee"]["amount"] == sum(escrow)
    assert operator.audit_settlement(match_id)["ok"]
    assert operator.audit_ledger()["ok"]


def test_bots_play_hand_after_hand_at_a_per_hand_rummy_table(
    operator: GinClient, inline_worker: None
) -> None:
    """At a continuous table each hand is a new match: the bots follow the table to it, the
    worker settles each hand and deals the next, and the chips only move between the bots'
    table balances and the house."""
    from worker.bot_tasks import play_bot_turns
    from worker.tasks import settle_match

    table = practice_table(
        operator,
        game="rummy",
        seat_count=3,
        format="rummy_per_hand",
        stake=0,
        target=100,
        stake_per_point=1,
        min_buyin=40,
        max_buyin=80,
        min_balance=10,
    )
    for i in range(3):
        seated = operator.seat_bot(table["id"], display_name=f"Robo {i}")
    assert seated["table"]["status"] == "open"
    settled: list[str] = []
    match_id = operator.table(table["id"])["match_id"]
    for _ in range(6000):
        if len(settled) == 3:
            break
        status = operator.match(match_id)["status"]
        if status == "playing":
            assert play_bot_turns() >= 1
            continue
        settle_match(match_id)
        settled.append(match_id)
        following = operator.table(table["id"])["match_id"]
        assert following != match_id, "the settlement dealt the next hand"
        match_id = following
    else:
        raise AssertionError("the bots did not play three hands")
    for hand in settled:
        assert operator.audit_settlement(hand)["ok"]
    balances = [s["escrow"]["amount"] for s in operator.table(table["id"])["seats"]]
    fees = sum(operator.settlement(hand)["fee"]["amount"] for hand in settled)
    assert sum(balances) + fees == 3 * 80
    assert operator.audit_ledger()["ok"]


def test_a_persons_action_at_a_practice_table_asks_for_the_bots_turn_at_once(
    operator: GinClient, app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bots do not wait for beat's next tick: a person's action at a practice table
    kicks their task once it committed (an action at a real-money table does not), and the
    task kicks itself again while bots keep acting (a bot may follow a bot)."""
    from worker import bot_tasks
    from worker.celery_app import app as celery_app

    def bots_act() -> None:
        session = app.extensions["gin"]["sessionmaker"]()
        try:
            assert bots.play_turns(session, utcnow()).applied >= 1
        finally:
            session.close()

    kicked: list[str] = []
    monkeypatch.setattr(celery_app, "send_task", lambda name, **_: kicked.append(name))
    table = practice_table(operator)
    person, _ = human(operator)
    person.join(table["id"])
    operator.seat_bot(table["id"], display_name="Robo")
    view = person.match(table["match_id"])
    if not view["hand"]["legal_actions"]:  # the bot is first to act
        bots_act()
        view = person.match(table["match_id"])
    kicked.clear()
    person.act(table["match_id"], decide(view["hand"]), view["version"])
    assert kicked == ["bots.play_turns"]

    real = dict(operator.create_table(format="match_play", currency="EUR", stake=10))
    people = []
    for name in ("Ann", "Bob"):
        player = operator.create_player(f"real-{new_key()[:8]}", name)
        operator.deposit(player["id"], 100, "EUR")
        people.append(operator.as_(operator.player_token(player["id"])["token"]))
        people[-1].join(real["id"])
    views = [p.match(real["match_id"]) for p in people]
    mover = next(i for i, v in enumerate(views) if v["hand"]["legal_actions"])
    kicked.clear()
    people[mover].act(real["match_id"], decide(views[mover]["hand"]), views[mover]["version"])
    assert kicked == []

    again: list[int] = []
    monkeypatch.setattr(
        bots, "play_turns", lambda *_a, **_k: bots.Turns(applied=int(len(again) < 2), finished=0)
    )
    monkeypatch.setattr(
        bot_tasks.play_bot_turns,
        "apply_async",
        lambda countdown: again.append(1) if countdown == bot_tasks.BOT_PAUSE_SECONDS else None,
    )
    assert bot_tasks.play_bot_turns() == 1 and again == [1]
    assert bot_tasks.play_bot_turns() == 1 and again == [1, 1]
    assert bot_tasks.play_bot_turns() == 0 and again == [1, 1]  # no bot acted: no kick
