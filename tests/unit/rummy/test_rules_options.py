"""The ``rummy.*`` options: defaults, plain-data round trip, refusal of bad values."""

from __future__ import annotations

import json

import pytest

from service.games.common.errors import InvalidRuleset
from service.games.rummy.rules import AceMode, Restock, RummyRules, Scoring

DEFAULTS = {
    "max_players": 6,
    "ace_mode": "LOW",
    "ace_points": 1,
    "must_discard_to_go_out": False,
    "restock": "TURN_OVER",
    "max_restocks": 3,
    "max_turns": 300,
    "scoring": "PAY_WINNER",
    "rummy_penalty": 25,
    "match": "PER_HAND",
}


def test_appendix_a_defaults() -> None:
    assert RummyRules().to_dict() == DEFAULTS


def test_options_are_keyword_arguments_and_enums() -> None:
    rules = RummyRules(ace_mode="HIGH_OR_LOW", restock="SHUFFLE", scoring="PENALTY")
    assert rules.ace_mode is AceMode.HIGH_OR_LOW
    assert rules.restock is Restock.SHUFFLE
    assert rules.scoring is Scoring.PENALTY


def test_from_dict_reads_dotted_and_bare_keys() -> None:
    dotted = RummyRules.from_dict({"rummy.max_turns": 50, "rummy.match": "deals(5)"})
    bare = RummyRules.from_dict({"max_turns": 50, "match": "DEALS(5)"})
    assert dotted == bare
    assert dotted.max_turns == 50
    assert dotted.match == "DEALS(5)"
    assert dotted.match_deals == 5 and dotted.match_target is None


def test_match_target() -> None:
    rules = RummyRules(match="TARGET(250)")
    assert rules.match_target == 250 and rules.match_deals is None
    assert RummyRules().match_deals is None and RummyRules().match_target is None


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"max_players": 4, "ace_mode": "HIGH_OR_LOW", "ace_points": 11},
        {"must_discard_to_go_out": True, "restock": "SHUFFLE", "max_restocks": 0},
        {"max_turns": 1, "scoring": "PENALTY", "rummy_penalty": 0, "match": "TARGET(100)"},
    ],
)
def test_to_dict_from_dict_round_trip_through_json(options: dict[str, object]) -> None:
    rules = RummyRules(**options)
    again = RummyRules.from_dict(json.loads(json.dumps(rules.to_dict())))
    assert again == rules
    assert again.to_dict() == rules.to_dict()


def test_rules_are_immutable() -> None:
    rules = RummyRules()
    with pytest.raises(AttributeError):
        rules.max_turns = 5  # type: ignore[misc]


@pytest.mark.parametrize(
    ("options", "name"),
    [
        ({"max_players": 1}, "max_players"),
        ({"max_players": 7}, "max_players"),
        ({"max_players": True}, "max_players"),
        ({"ace_mode": "HIGH"}, "ace_mode"),
        ({"ace_points": -1}, "ace_points"),
        ({"ace_points": 1.5}, "ace_points"),
        ({"must_discard_to_go_out": 1}, "must_discard_to_go_out"),
        ({"restock": "BURN"}, "restock"),
        ({"max_restocks": -1}, "max_restocks"),
        ({"max_turns": 0}, "max_turns"),
        ({"scoring": "GIN"}, "scoring"),
        ({"rummy_penalty": "25"}, "rummy_penalty"),
        ({"match": "DEALS(0)"}, "match"),
        ({"match": "TARGET()"}, "match"),
        ({"match": 5}, "match"),
        ({"rummy.nonsense": 1}, "nonsense"),
        ({"gin.target": 100}, "gin.target"),
    ],
)
def test_bad_values_are_refused_naming_the_option(options: dict[str, object], name: str) -> None:
    with pytest.raises(InvalidRuleset) as err:
        RummyRules.from_dict(options)
    assert name in str(err.value)
    assert err.value.code == "INVALID_RULESET"


def test_a_key_given_twice_is_refused() -> None:
    with pytest.raises(InvalidRuleset, match="twice"):
        RummyRules.from_dict({"max_turns": 10, "rummy.max_turns": 20})
