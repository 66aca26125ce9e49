"""At a seamless operator a seat given up other than by ``DELETE .../seats/me`` is credited
back the same way (docs/games.md, "Self-exclusion" and "Forfeits"): a self-excluded player's
unstarted seat, and a per-hand table's forfeiter once its hand is settled."""

from __future__ import annotations

import secrets
from datetime import timedelta

from service.clock import utcnow
from tests.api import test_seamless
from tests.api.play_clients import open_table
from tests.api.test_seamless import STAKE, Operator, _books_agree, _join

# The seamless tests' fixtures: an app serving them and an operator with its own wallet.
seamless_app = test_seamless.seamless_app
operator = test_seamless.operator


def test_self_exclusion_credits_an_unstarted_seat_back(operator: Operator) -> None:
    table = open_table(operator.api, stake=STAKE)
    player = operator.player()
    assert _join(player, table["id"]).status_code == 201
    until = (utcnow() + timedelta(days=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
    excluded = operator.api.put(
        f"/v1/players/{player.player_id}/self-exclusion",  # type: ignore[attr-defined]
        {"until": until},
    )
    assert excluded.status_code == 200, excluded.get_json()
    assert operator.api.get(f"/v1/tables/{table['id']}").get_json()["seats"] == []
    operator.sweep()
    credits = operator.calls(kind="credit")
    assert [(c.reason, c.amount, c.state) for c in credits] == [("release", STAKE, "acknowledged")]
    _books_agree(operator, player)
    operator.audit_ok()


def test_a_per_hand_forfeiter_is_credited_its_balance_after_the_hand(operator: Operator) -> None:
    table = open_table(
        operator.api,
        game="rummy",
        seat_count=4,
        format="rummy_per_hand",
        stake_per_point=1,
        min_buyin=100,
        max_buyin=300,
    )
    players = [operator.player() for _ in range(2)]
    for player in players:
        joined = player.post(
            f"/v1/tables/{table['id']}/seats", {"buyin": 200}, key=secrets.token_hex(8)
        )
        assert joined.status_code == 201, joined.get_json()
    match_id = operator.api.get(f"/v1/tables/{table['id']}").get_json()["match_id"]
    view = players[1].get(f"/v1/matches/{match_id}").get_json()
    resigned = players[1].post(
        f"/v1/matches/{match_id}/actions",
        {"action": "RESIGN", "expected_version": view["version"]},
    )
    assert resigned.status_code == 200, resigned.get_json()
    operator.settle(match_id)
    operator.sweep()
    settled = operator.api.get(f"/v1/matches/{match_id}/settlement").get_json()
    lost = settled["net"][view["you"]]["amount"]
    assert lost < 0
    credits = operator.calls(kind="credit", player_id=players[1].player_id)  # type: ignore[attr-defined]
    assert [(c.reason, c.amount, c.state) for c in credits] == [
        ("release", 200 + lost, "acknowledged")
    ]
    seated = operator.api.get(f"/v1/tables/{table['id']}").get_json()["seats"]
    assert [s["player_id"] for s in seated] == [players[0].player_id]  # type: ignore[attr-defined]
    assert operator.calls(kind="credit", player_id=players[0].player_id) == []  # type: ignore[attr-defined]
    operator.audit_ok()
