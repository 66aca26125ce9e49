"""One grammar for an action's text and fields (service.games.common.action_text), for every game:
each form undoes the other, on every legal action the engines list, and the text is what
the engine prints."""

from __future__ import annotations

import random

import pytest

from service import games
from service.games.common import fair
from service.games.common.action_text import action_fields, action_text
from service.games.common.settings import MatchSettings
from service.games.gin.actions import Action
from service.games.gin.match import Match
from service.games.rummy.actions import RummyAction

TABLES = [
    ({"format": "match_play", "stake": 100}, 2),
    ({"format": "match_play", "stake": 100, "game": "gin_three", "seats": 3}, 3),
    ({"format": "match_play", "stake": 100, "game": "gin_partnership", "seats": 4}, 4),
    (
        {
            "game": "rummy",
            "format": "rummy_target",
            "seats": 3,
            "stake_per_point": 1,
            "min_buyin": 100,
            "max_buyin": 500,
            "target": 100,
        },
        3,
    ),
]


@pytest.mark.parametrize(("table", "seats"), TABLES)
def test_every_legal_action_round_trips_through_both_forms(
    table: dict[str, object], seats: int
) -> None:
    rng = random.Random(11)
    match = games.new_match(MatchSettings.from_dict(table), seats, rng.randrange)
    checked = 0
    for step in range(200):
        while games.pending_deal(match) is not None:
            games.deal(match, fair.new_server_seed(), [f"c{s}" for s in range(seats)], step)
        if match.over:
            break
        seat = rng.choice(games.acting(match))
        if isinstance(match, Match):
            assert match.hand is not None
            legal: list[Action] | list[RummyAction] = match.hand.legal_actions(seat)
        else:
            legal = match.legal_actions(seat)
        for action in legal:
            fields = action.to_dict()
            text = action_text(fields)
            assert text == str(action)
            assert action_fields(text) == fields
            parse = RummyAction.parse if isinstance(action, RummyAction) else Action.parse
            assert parse(text) == action
            checked += 1
        choice = rng.choice(legal)
        games.apply(match, seat, str(choice), at=f"t{step}", now_ms=step)
    assert checked > 50


def test_a_text_with_no_action_or_a_bad_meld_index_is_refused() -> None:
    with pytest.raises(ValueError, match="empty action"):
        action_fields("  | AC 2C 3C")
    with pytest.raises(ValueError):
        action_fields("LAY_OFF two 8H 9H")
