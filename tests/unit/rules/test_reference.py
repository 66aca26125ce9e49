"""Self-checks of the reference solver (no engine needed): the tests' own oracle must be right."""

from __future__ import annotations

import pytest

from tests.unit.rules import reference as ref


@pytest.mark.parametrize(
    ("cards", "valid"),
    [
        ("AS 2S 3S", True),
        ("QS KS AS", False),
        ("KH AH 2H", False),
        ("7C 7D 7H", True),
        ("7C 7D 7H 7S", True),
        ("7C 7D", False),
        ("5H 6H 7H 8H 9H TH JH QH KH", True),
        ("5H 6H 8H", False),
        ("5H 6H 7D", False),
        ("JD QD KD", True),
    ],
)
def test_meld_validity(cards: str, valid: bool) -> None:
    assert ref.is_valid_meld(cards.split()) is valid


def test_all_melds_finds_every_sub_run_and_subset() -> None:
    melds = ref.all_melds("7C 7D 7H 7S 8S 9S TS")
    sets = [m for m in melds if len({c[0] for c in m}) == 1]
    runs = [m for m in melds if m not in sets]
    assert len(sets) == 4 + 1  # four 3-subsets of the sevens, one set of four
    assert len(runs) == 3  # 7-8-9, 8-9-T, 7-8-9-T of spades


def test_arrangements_are_disjoint_and_include_empty() -> None:
    arrangements = ref.all_arrangements("7C 7D 7H 7S 8S 9S")
    assert frozenset() in arrangements
    for arrangement in arrangements:
        cards = [c for meld in arrangement for c in meld]
        assert len(cards) == len(set(cards))
    assert len(arrangements) == len(set(arrangements))


def test_chaining_and_its_limits() -> None:
    sets = ref.playable_layoff_sets([["7S", "8S", "9S"]], "TS JS 5S 6S 4S KS")
    assert frozenset({"TS", "JS"}) in sets
    assert frozenset({"6S", "5S", "4S"}) in sets
    assert frozenset({"5S"}) not in sets  # needs 6S laid off first
    assert not any("KS" in s for s in sets)  # QS is missing
    assert ref.playable_layoff_sets([["JS", "QS", "KS"]], "AS 2S 3S") == {frozenset()}
    assert ref.playable_layoff_sets([["2D", "3D", "4D"]], "AD") == {frozenset(), frozenset({"AD"})}
    assert ref.playable_layoff_sets([], "AD 2D") == {frozenset()}
    # a set of three takes the fourth card; a set of four takes nothing
    assert ref.playable_layoff_sets([["9C", "9D", "9S"]], "9H") == {frozenset(), frozenset({"9H"})}


def test_tie_break_examples_really_depend_on_the_knocker_choice() -> None:
    knocker = "7C 8C 9C 7D 8D 9D 7H 8H 9H AC"
    for defender, shown in (
        ("7S 9S 6C KS QD JH 4C 3D 2H 5S", 60),
        ("6C TC 6D TD 7S KS QH 2S 3H 4D", 61),
    ):
        values = {ref.layoff_deadwood(a, defender) for a in ref.minimal_arrangements(knocker)}
        assert len(values) == 2
        assert max(values) == shown


def test_gin_ignores_layoffs_7_3_trap() -> None:
    knocker = "AS 2S 3S 4S 7C 7D 7H JH QH KH"
    defender = "8C 8D 8H 5S 7S 2C 3D KC KD TC"
    arrangement = next(iter(ref.minimal_arrangements(knocker)))
    assert ref.layoff_deadwood(arrangement, defender) == 35  # what a wrong engine would use
    assert ref.score(knocker, defender).points == 72


def test_oklahoma_limits() -> None:
    assert ref.knock_limit_and_multiplier({"oklahoma": True}, "4S") == (4, 2)
    assert ref.knock_limit_and_multiplier({"oklahoma": True}, "AH") == (0, 1)
    assert ref.knock_limit_and_multiplier({"oklahoma": True, "ace_requires_gin": False}, "AS") == (
        1,
        2,
    )
    assert ref.knock_limit_and_multiplier({"oklahoma": True}, "QD") == (10, 1)
    no_doubling = {"oklahoma": True, "spade_doubles": False}
    assert ref.knock_limit_and_multiplier(no_doubling, "9S") == (9, 1)
    assert ref.knock_limit_and_multiplier({}, "4S") == (10, 1)
