"""Property tests: the engine (service.games.gin) against the brute-force reference solver.

Hypothesis example counts come from the profiles registered in tests/conftest.py; the slowest
reference comparisons cap them (never raise them) via ``_capped``.
"""

from __future__ import annotations

from typing import Any

from hypothesis import event, given, settings
from hypothesis import strategies as st

from service.games.common.cards import Card, parse_cards
from service.games.common.errors import IllegalKnock, RulesError
from service.games.gin.layoff import lay_off
from service.games.gin.melds import arrange, best_discard
from service.games.gin.ruleset import Ruleset
from service.games.gin.scoring import score_hand
from tests.unit.rules import reference as ref
from tests.unit.rules.strategies import (
    all_melded_eleven,
    any_hand,
    defender_hand,
    knocker_hand,
    meld_dense_hand,
    ruleset_options,
    runs_with_extensions,
)


def _capped(limit: int) -> settings:
    """The active profile, with max_examples lowered to ``limit`` if it is higher."""
    return settings(max_examples=min(settings.default.max_examples, limit))


def _codes(cards: Any) -> list[str]:
    return [str(c) for c in cards]


def _meld_sets(melds: Any) -> list[frozenset[str]]:
    return [frozenset(_codes(m)) for m in melds]


def _assert_partition(parts: list[list[str]], hand: list[str]) -> None:
    flat = [c for part in parts for c in part]
    assert len(flat) == len(set(flat)), f"a card is used twice: {flat}"
    assert set(flat) == set(hand)


# --------------------------------------------------------------------------- arrange


def _check_arrangement(result: Any, hand: list[str]) -> None:
    melds = [_codes(m) for m in result.melds]
    unmatched = _codes(result.unmatched)
    _assert_partition([*melds, unmatched], hand)
    for meld in melds:
        assert ref.is_valid_meld(meld), f"invalid meld {meld}"
    assert result.deadwood == ref.total_points(unmatched)


@given(any_hand())
def test_arrange_is_an_optimal_partition(hand: list[str]) -> None:
    result = arrange(hand)
    _check_arrangement(result, hand)
    assert result.deadwood == ref.min_deadwood(hand)
    assert frozenset(_meld_sets(result.melds)) in ref.minimal_arrangements(hand)


@given(meld_dense_hand(), st.randoms(use_true_random=False))
def test_arrange_is_deterministic_whatever_the_input_order(hand: list[str], rnd: Any) -> None:
    # docs/engine.md 1.9: ties are broken deterministically (1.4 order), so input order
    # cannot matter.
    shuffled = list(hand)
    rnd.shuffle(shuffled)
    first = arrange(hand)
    second = arrange(parse_cards(shuffled))
    assert set(_meld_sets(first.melds)) == set(_meld_sets(second.melds))
    assert sorted(_codes(first.unmatched)) == sorted(_codes(second.unmatched))


# --------------------------------------------------------------------------- best_discard


@st.composite
def eleven_with_taken(draw: Any) -> tuple[list[str], str | None]:
    hand = draw(any_hand(11, 11))
    taken = draw(st.one_of(st.none(), st.sampled_from(hand)))
    return hand, taken


@_capped(150)
@given(eleven_with_taken())
def test_best_discard_is_optimal_and_honours_taken(case: tuple[list[str], str | None]) -> None:
    hand, taken = case
    card, result = best_discard(parse_cards(hand), taken=Card.parse(taken) if taken else None)
    assert str(card) in hand
    assert str(card) != taken
    kept = [c for c in hand if c != str(card)]
    _check_arrangement(result, kept)
    assert result.deadwood == ref.best_discard_deadwood(hand, taken)
    assert result.deadwood == ref.min_deadwood(kept)


# --------------------------------------------------------------------------- lay_off


@st.composite
def layoff_case(draw: Any) -> tuple[list[list[str]], list[str]]:
    if draw(st.booleans()):
        return draw(runs_with_extensions())
    knocker = draw(knocker_hand())
    arrangements = [a for a in ref.all_arrangements(knocker) if a]
    melds: list[list[str]] = []
    if arrangements:
        chosen = draw(st.sampled_from(arrangements))
        melds = [sorted(m, key=ref.display_index) for m in chosen]
    defender = draw(defender_hand(knocker))
    return melds, defender


@_capped(150)
@given(layoff_case())
def test_lay_off_matches_reference(case: tuple[list[list[str]], list[str]]) -> None:
    melds, defender = case
    result = lay_off(tuple(parse_cards(m) for m in melds), parse_cards(defender))
    own = [_codes(m) for m in result.melds]
    laid = _codes(result.laid_off)
    unmatched = _codes(result.unmatched)
    _assert_partition([*own, laid, unmatched], defender)
    for meld in own:
        assert ref.is_valid_meld(meld), f"invalid defender meld {meld}"
    assert frozenset(laid) in ref.playable_layoff_sets(melds, defender), f"unplayable {laid}"
    assert result.deadwood == ref.total_points(unmatched)
    assert result.deadwood <= arrange(defender).deadwood
    assert result.deadwood == ref.layoff_deadwood(melds, defender)
    if not melds:
        assert laid == []
        assert result.deadwood == ref.min_deadwood(defender)


# --------------------------------------------------------------------------- score_hand


@st.composite
def knock_case(draw: Any) -> tuple[list[str], list[str], dict[str, Any], str | None]:
    knocker = draw(knocker_hand())
    defender = draw(defender_hand(knocker))
    options, upcard = draw(ruleset_options(knocker, defender))
    return knocker, defender, options, upcard


def _expected_from_table(
    k: int, d: int, options: dict[str, Any], upcard: str | None, kind: str
) -> tuple[str, int]:
    """(winner, points) that docs/engine.md 2.9 gives for deadwoods K and D (D0 or D1)."""
    opts = {**ref.DEFAULT_OPTIONS, **options}
    _, m = ref.knock_limit_and_multiplier(opts, upcard)
    if kind == "gin":
        return "knocker", m * (opts["gin_bonus"] + d)
    if kind == "big_gin":
        return "knocker", m * (opts["big_gin_bonus"] + d)
    if k < d:
        return "knocker", m * (d - k)
    return "defender", m * ((k - d) + opts["undercut_bonus"])


@_capped(150)
@given(knock_case())
def test_score_hand_matches_reference(
    case: tuple[list[str], list[str], dict[str, Any], str | None],
) -> None:
    knocker, defender, options, upcard = case
    ruleset = Ruleset(**options)
    up = Card.parse(upcard) if upcard else None
    try:
        expected = ref.score(knocker, defender, options, upcard)
    except ref.RefIllegalKnock as refused:
        event("illegal knock")
        try:
            score_hand(parse_cards(knocker), parse_cards(defender), ruleset, upcard=up)
        except IllegalKnock as error:
            assert isinstance(error, RulesError)
            if refused.code is not None:
                assert error.code == refused.code
        else:
            raise AssertionError(f"engine accepted an illegal knock ({refused})")
        return
    event(expected.kind)
    if expected.kind == "knock" and len(ref.minimal_arrangements(knocker)) > 1:
        event("knock with several minimal knocker arrangements")
    result = score_hand(parse_cards(knocker), parse_cards(defender), ruleset, upcard=up)
    got = {key: getattr(result, key) for key in expected.__dict__}
    assert got == expected.__dict__


@given(knock_case())
def test_score_hand_follows_the_table(
    case: tuple[list[str], list[str], dict[str, Any], str | None],
) -> None:
    knocker, defender, options, upcard = case
    limit, _ = ref.knock_limit_and_multiplier(options, upcard)
    k = arrange(knocker).deadwood
    try:
        up = Card.parse(upcard) if upcard else None
        result = score_hand(knocker, defender, Ruleset(**options), upcard=up)
    except IllegalKnock as error:
        assert k > limit
        assert error.code == "KNOCK_LIMIT_EXCEEDED"
        return
    assert result.knocker_deadwood == k
    assert k == 0 or k <= limit
    if k == 0:
        assert result.kind == "gin"
        assert result.defender_deadwood == arrange(defender).deadwood
    else:
        assert result.kind == ("knock" if k < result.defender_deadwood else "undercut")
        assert result.defender_deadwood <= arrange(defender).deadwood
    winner, points = _expected_from_table(k, result.defender_deadwood, options, upcard, result.kind)
    assert (result.winner, result.points) == (winner, points)


@st.composite
def big_gin_case(draw: Any) -> tuple[list[str], list[str], bool]:
    knocker = draw(st.one_of(knocker_hand(11), all_melded_eleven()))
    event("all 11 meld" if ref.min_deadwood(knocker) == 0 else "11 cards with deadwood")
    defender = draw(defender_hand(knocker))
    return knocker, defender, draw(st.booleans())


@_capped(100)
@given(big_gin_case())
def test_eleven_card_declarations_match_reference(case: tuple[list[str], list[str], bool]) -> None:
    knocker, defender, enabled = case
    options = {"big_gin_enabled": enabled}
    try:
        expected = ref.score(knocker, defender, options)
    except ref.RefIllegalKnock:
        try:
            score_hand(knocker, defender, Ruleset(**options))
        except IllegalKnock:
            return
        raise AssertionError("engine accepted an illegal 11-card declaration") from None
    result = score_hand(knocker, defender, Ruleset(**options))
    assert {key: getattr(result, key) for key in expected.__dict__} == expected.__dict__
