"""Data-driven rules vectors (tests/data/rules_vectors.json), checked two ways.

Every vector is checked against the independent reference solver (``reference.py``) AND against
the engine (``service.games.gin``). The engine is imported through a fixture, so the reference
half still runs (and must pass) on its own while the engine is being written.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.unit.rules import reference as ref

VECTORS: dict[str, Any] = json.loads(
    (Path(__file__).resolve().parents[2] / "data" / "rules_vectors.json").read_text()
)


def _params(section: str) -> list[Any]:
    return [pytest.param(v, id=v["id"]) for v in VECTORS[section]]


def _arrangement_sets(listed: list[list[str]]) -> set[frozenset[frozenset[str]]]:
    return {frozenset(frozenset(meld.split()) for meld in arr) for arr in listed}


def _codes(cards: Any) -> list[str]:
    return [str(c) for c in cards]


@pytest.fixture(scope="module")
def rules() -> ModuleType:
    """The engine's surface the vectors use, gathered from the modules that define it."""
    engine = ModuleType("engine")
    for module, names in (
        ("service.games.common.cards", ("Card", "parse_cards")),
        ("service.games.common.errors", ("RulesError", "IllegalKnock")),
        ("service.games.gin.melds", ("arrange", "best_discard")),
        ("service.games.gin.layoff", ("lay_off",)),
        ("service.games.gin.ruleset", ("Ruleset",)),
        ("service.games.gin.scoring", ("score_hand",)),
    ):
        found = importlib.import_module(module)
        for name in names:
            setattr(engine, name, getattr(found, name))
    return engine


# --------------------------------------------------------------------------- sanity of the data


def test_vector_file_has_every_section() -> None:
    assert len(VECTORS["arrange"]) >= 4
    assert len(VECTORS["best_discard"]) >= 2
    assert len(VECTORS["lay_off"]) >= 3
    assert len(VECTORS["score"]) >= 10


@pytest.mark.parametrize("vector", _params("score"))
def test_score_vector_hands_are_consistent(vector: dict[str, Any]) -> None:
    knocker = vector["knocker"].split()
    defender = vector["defender"].split()
    assert len(knocker) in (10, 11)
    assert len(defender) == 10
    everything = knocker + defender + ([vector["upcard"]] if vector["upcard"] else [])
    assert all(c in ref.ALL_CODES for c in everything)
    assert len(set(everything)) == len(everything), "duplicate card across hands/upcard"
    assert ("expect" in vector) != ("error" in vector)


@pytest.mark.parametrize("vector", _params("lay_off"))
def test_lay_off_vector_hands_are_consistent(vector: dict[str, Any]) -> None:
    melds = [m.split() for m in vector["knocker_melds"]]
    defender = vector["defender"].split()
    assert all(ref.is_valid_meld(m) for m in melds)
    everything = [c for m in melds for c in m] + defender
    assert len(set(everything)) == len(everything)
    assert len(defender) == 10


# --------------------------------------------------------------------------- reference


@pytest.mark.parametrize("vector", _params("arrange"))
def test_reference_arrange(vector: dict[str, Any]) -> None:
    assert ref.min_deadwood(vector["cards"]) == vector["deadwood"]
    assert ref.minimal_arrangements(vector["cards"]) == _arrangement_sets(vector["arrangements"])


@pytest.mark.parametrize("vector", _params("best_discard"))
def test_reference_best_discard(vector: dict[str, Any]) -> None:
    cards = vector["cards"].split()
    assert ref.best_discard_deadwood(cards, vector["taken"]) == vector["deadwood"]
    kept = [c for c in cards if c != vector["discard"]]
    assert ref.min_deadwood(kept) == vector["deadwood"]
    # the listed discard is the only optimal one
    allowed = [d for d in cards if d != vector["taken"]]
    optimal = [
        d for d in allowed if ref.min_deadwood([c for c in cards if c != d]) == vector["deadwood"]
    ]
    assert optimal == [vector["discard"]]


@pytest.mark.parametrize("vector", _params("lay_off"))
def test_reference_lay_off(vector: dict[str, Any]) -> None:
    melds = [m.split() for m in vector["knocker_melds"]]
    defender = vector["defender"].split()
    assert ref.layoff_deadwood(melds, defender) == vector["deadwood"]
    if vector["laid_off"] is not None:
        optimal = {
            laid
            for laid in ref.playable_layoff_sets(melds, defender)
            if ref.min_deadwood(set(defender) - laid) == vector["deadwood"]
        }
        assert optimal == {frozenset(vector["laid_off"].split())}


@pytest.mark.parametrize("vector", _params("score"))
def test_reference_score(vector: dict[str, Any]) -> None:
    if "error" in vector:
        with pytest.raises(ref.RefIllegalKnock) as info:
            ref.score(vector["knocker"], vector["defender"], vector["ruleset"], vector["upcard"])
        if vector["error"]["code"] is not None:
            assert info.value.code == vector["error"]["code"]
    else:
        got = ref.score(vector["knocker"], vector["defender"], vector["ruleset"], vector["upcard"])
        assert got.__dict__ == vector["expect"]


# --------------------------------------------------------------------------- engine


@pytest.mark.parametrize("vector", _params("arrange"))
def test_engine_arrange(rules: ModuleType, vector: dict[str, Any]) -> None:
    result = rules.arrange(vector["cards"].split())
    assert result.deadwood == vector["deadwood"]
    shown = frozenset(frozenset(_codes(m)) for m in result.melds)
    assert shown in _arrangement_sets(vector["arrangements"])
    assert sorted(_codes(result.unmatched)) == sorted(
        set(vector["cards"].split()) - {c for m in shown for c in m}
    )
    # Cards objects are accepted too, with the same answer.
    again = rules.arrange(rules.parse_cards(vector["cards"]))
    assert again.deadwood == result.deadwood
    assert frozenset(frozenset(_codes(m)) for m in again.melds) == shown


@pytest.mark.parametrize("vector", _params("best_discard"))
def test_engine_best_discard(rules: ModuleType, vector: dict[str, Any]) -> None:
    cards = rules.parse_cards(vector["cards"])
    taken = rules.Card.parse(vector["taken"]) if vector["taken"] else None
    card, arrangement = rules.best_discard(cards, taken=taken)
    assert str(card) == vector["discard"]
    assert arrangement.deadwood == vector["deadwood"]
    assert str(card) not in _codes(arrangement.unmatched)
    assert str(card) not in {c for m in arrangement.melds for c in _codes(m)}


@pytest.mark.parametrize("vector", _params("lay_off"))
def test_engine_lay_off(rules: ModuleType, vector: dict[str, Any]) -> None:
    melds = tuple(rules.parse_cards(m) for m in vector["knocker_melds"])
    defender = rules.parse_cards(vector["defender"])
    result = rules.lay_off(melds, defender)
    assert result.deadwood == vector["deadwood"]
    if vector["laid_off"] is not None:
        assert sorted(_codes(result.laid_off)) == sorted(vector["laid_off"].split())
    own = [c for m in result.melds for c in _codes(m)]
    parts = own + _codes(result.laid_off) + _codes(result.unmatched)
    assert sorted(parts) == sorted(vector["defender"].split())
    assert sum(ref.points(c) for c in _codes(result.unmatched)) == vector["deadwood"]


@pytest.mark.parametrize("vector", _params("score"))
def test_engine_score(rules: ModuleType, vector: dict[str, Any]) -> None:
    ruleset = rules.Ruleset(**vector["ruleset"])
    upcard = rules.Card.parse(vector["upcard"]) if vector["upcard"] else None
    knocker = rules.parse_cards(vector["knocker"])
    defender = rules.parse_cards(vector["defender"])
    if "error" in vector:
        error_type = getattr(rules, vector["error"]["type"])
        assert issubclass(error_type, rules.RulesError)
        with pytest.raises(error_type) as info:
            rules.score_hand(knocker, defender, ruleset, upcard=upcard)
        if vector["error"]["code"] is not None:
            assert info.value.code == vector["error"]["code"]
        return
    result = rules.score_hand(knocker, defender, ruleset, upcard=upcard)
    got = {key: getattr(result, key) for key in vector["expect"]}
    assert got == vector["expect"]
