"""Actions as text and fields, immutability, serialisation and the history."""

from __future__ import annotations

import copy
import json

import pytest

from service.games.common.cards import DECK
from service.games.common.errors import IllegalAction, InvalidState, RulesError
from service.games.rummy.actions import RummyAction, RummyActionKind
from service.games.rummy.errors import RummyRefusal
from service.games.rummy.hand import RummyHand
from tests.unit.rummy.scenarios import play, position


@pytest.mark.parametrize(
    "text",
    ["DRAW_STOCK", "DRAW_DISCARD", "TURN_OVER", "MELD 7D 7H 7S", "LAY_OFF 2 8H 9H", "DISCARD 5C"],
)
def test_actions_print_back_to_their_text_and_fields(text: str) -> None:
    action = RummyAction.parse(text)
    assert str(action) == text
    assert RummyAction.from_dict(action.to_dict()) == action
    assert RummyAction.from_dict(json.loads(json.dumps(action.to_dict()))) == action


def test_action_fields() -> None:
    assert RummyAction.parse("LAY_OFF 2 9H 8H").to_dict() == {
        "action": "LAY_OFF",
        "cards": ["8H", "9H"],
        "meld": 2,
    }
    assert RummyAction.parse("discard 5c").to_dict() == {"action": "DISCARD", "card": "5C"}
    assert RummyAction.of("MELD", "7S 7H 7D").kind is RummyActionKind.MELD


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("", "UNKNOWN_ACTION"),
        ("KNOCK 5C", "UNKNOWN_ACTION"),
        ("DISCARD", "MALFORMED_ACTION"),
        ("DISCARD 5C 6C", "MALFORMED_ACTION"),
        ("MELD", "MALFORMED_ACTION"),
        ("LAY_OFF 8H 9H", "MALFORMED_ACTION"),
        ("LAY_OFF 0", "MALFORMED_ACTION"),
        ("DRAW_STOCK 5C", "MALFORMED_ACTION"),
        ("MELD 7C 1X 7D", "INVALID_CARD"),
        ("MELD 7C 7C 7D", "INVALID_CARDS"),
    ],
)
def test_malformed_actions_are_refused_with_a_code(text: str, code: str) -> None:
    with pytest.raises(RulesError) as err:
        RummyAction.parse(text)
    assert err.value.code == code
    hand = position(["2C 5D", "KS 6H"], to_act=0, discard="4S")
    before = hand.to_dict()
    with pytest.raises(RulesError) as err2:
        hand.apply(0, text)
    assert err2.value.code == code and hand.to_dict() == before


def test_refusals_are_illegal_actions_with_the_rule() -> None:
    hand = position(["2C 5D", "KS 6H"], to_act=0, discard="4S")
    with pytest.raises(RummyRefusal) as err:
        hand.apply(1, "DRAW_STOCK")
    assert isinstance(err.value, IllegalAction) and isinstance(err.value, RulesError)
    assert (err.value.code, err.value.rule) == ("NOT_YOUR_TURN", "5.2")
    with pytest.raises(RummyRefusal) as bad:
        hand.apply(5, "DRAW_STOCK")
    assert bad.value.code == "NO_SUCH_SEAT"


def test_apply_takes_values_text_and_fields_alike() -> None:
    hand = position(["2C 5D", "KS 6H"], to_act=0, discard="4S", stock_top="9H")
    drawn = [
        hand.apply(0, RummyAction(RummyActionKind.DRAW_STOCK)),
        hand.apply(0, "DRAW_STOCK"),
        hand.apply(0, {"action": "DRAW_STOCK"}),
    ]
    assert drawn[0] == drawn[1] == drawn[2]
    assert drawn[0].apply(0, {"action": "DISCARD", "card": "9H"}) == drawn[0].apply(0, "DISCARD 9H")


def test_apply_leaves_the_old_state_untouched() -> None:
    hand = RummyHand.deal(4, 1, [c.code for c in DECK])
    before = copy.deepcopy(hand.to_dict())
    after = hand.apply(2, "DRAW_DISCARD")
    assert hand.to_dict() == before and after.to_dict() != before
    with pytest.raises(AttributeError):
        hand.turns = 5  # type: ignore[misc]


def test_to_dict_from_dict_round_trip_in_play_and_ended() -> None:
    hand = position(
        ["7C 7D 2S", "3S 6H 9C", "KC QC"],
        to_act=0,
        discard="4C",
        stock_top="7H 8D",
        table=[(1, "TS JS QS")],
    )
    states = [hand, hand.apply(0, "DRAW_STOCK")]
    states.append(
        play(
            states[-1],
            "MELD 7C 7D 7H",
            "DISCARD 2S",
        )
    )
    states.append(states[1].forfeit(2, "timeout", at="2026-01-01T00:00:00Z"))
    for state in states:
        again = RummyHand.from_dict(json.loads(json.dumps(state.to_dict())))
        assert again == state
        assert again.to_dict() == state.to_dict()
        assert again.outcome == state.outcome


def test_from_dict_refuses_inconsistent_states() -> None:
    good = position(["2C 5D", "KS 6H"], to_act=0, discard="4S").to_dict()
    cases = []
    two_places = copy.deepcopy(good)
    two_places["hands"][0].append("KS")
    cases.append(two_places)
    missing = copy.deepcopy(good)
    missing["stock"].pop()
    cases.append(missing)
    schema = copy.deepcopy(good)
    schema["schema"] = 99
    cases.append(schema)
    forfeited = copy.deepcopy(good)
    forfeited["forfeited"][0] = True
    cases.append(forfeited)
    bad_meld = copy.deepcopy(good)
    bad_meld["stock"] = [c for c in bad_meld["stock"] if c not in ("AC", "3D", "8H")]
    bad_meld["table"] = [{"melded_by": 1, "melded": ["AC", "3D", "8H"], "layoffs": []}]
    cases.append(bad_meld)
    taken = copy.deepcopy(good)
    taken["taken"] = "KS"
    cases.append(taken)
    truncated = copy.deepcopy(good)
    del truncated["turns"]
    cases.append(truncated)
    ended = position(["7C 7D", "KS 6H"], to_act=0, discard="4S", stock_top="7H")
    ended_data = play(ended, "DRAW_STOCK", "MELD 7C 7D 7H").to_dict()
    for outcome in (
        {"winner": 5, "went_rummy": False, "void": None},
        {"winner": None, "went_rummy": False, "void": None},
        {"winner": 0, "went_rummy": False, "void": "MAX_TURNS"},
    ):
        cases.append({**ended_data, "outcome": outcome})
    for data in cases:
        with pytest.raises(InvalidState):
            RummyHand.from_dict(data)


def test_history_only_once_the_hand_has_ended() -> None:
    deck = [c.code for c in DECK]
    hand = RummyHand.deal(2, 0, deck)
    with pytest.raises(RulesError):
        hand.history()
    ended = hand.forfeit(1, "left", at="t1")
    history = ended.history()
    assert history["deck"] == deck and history["players"] == 2 and history["dealer"] == 0
    assert history["actions"] == [
        {"seq": 1, "seat": 1, "action": "FORFEIT", "reason": "left", "at": "t1"}
    ]
    assert history["final_hands"][1] == [c.code for c in ended.cards_of(1)]
    assert history["outcome"]["winner"] == 0
