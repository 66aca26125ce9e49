"""The Ruleset value: every Appendix A gin.* / oklahoma.* option with its default."""

from __future__ import annotations

import dataclasses

import pytest

from service.games.common.errors import InvalidRuleset
from service.games.gin.ruleset import Ruleset

# docs/engine.md section A, gin.* and oklahoma.* keys with their defaults, as written there.
APPENDIX = {
    "gin.opening": "PASS_SEQUENCE",
    "gin.knock_limit": 10,
    "gin.gin_bonus": 25,
    "gin.undercut_bonus": 25,
    "gin.big_gin_enabled": False,
    "gin.big_gin_bonus": 31,
    "gin.knocker_arrangement": "AUTO_MIN_DEADWOOD",
    "gin.dead_hand_rule": "AFTER_DISCARD",
    "gin.next_dealer": "WINNER_DEALS",
    "gin.target": 100,
    "gin.box_bonus": 20,
    "gin.game_bonus": 100,
    "gin.shutout_mode": "BONUS",
    "gin.shutout_bonus": 100,
    "gin.oklahoma": False,
    "oklahoma.ace_requires_gin": True,
    "oklahoma.spade_doubles": True,
    "gin.hollywood": False,
    "gin.partnership_target": 125,
}


def test_fields_are_the_appendix_keys_with_their_defaults() -> None:
    expected = {key.split(".", 1)[1]: value for key, value in APPENDIX.items()}
    assert Ruleset().to_dict() == expected
    assert [f.name for f in dataclasses.fields(Ruleset)] == list(expected)


def test_dotted_and_bare_keys_round_trip() -> None:
    ruleset = Ruleset.from_dict(
        {"gin.gin_bonus": 30, "spade_doubles": False, "gin.dead_hand_rule": "FIFTIETH_CARD"}
    )
    assert ruleset.gin_bonus == 30 and not ruleset.spade_doubles
    assert Ruleset.from_dict(ruleset.to_dict()) == ruleset
    assert Ruleset.from_dict(APPENDIX) == Ruleset()


def test_ruleset_is_immutable() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        Ruleset().gin_bonus = 1  # type: ignore[misc]


@pytest.mark.parametrize(
    "options",
    [
        {"knock_limit": 11},
        {"knock_limit": -1},
        {"gin_bonus": 2.5},
        {"gin_bonus": True},
        {"big_gin_enabled": 1},
        {"opening": "SOMETHING"},
        {"target": 0},
        {"undercut_bonus": -5},
        {"nonsense": 1},
        {"rummy.max_players": 4},
    ],
)
def test_bad_options_are_refused_with_their_name(options: dict[str, object]) -> None:
    with pytest.raises(InvalidRuleset) as err:
        Ruleset.from_dict(options)
    assert next(iter(options)).split(".")[-1] in str(err.value) or "unknown" in str(err.value)
