"""Card values: parsing/printing, invalid codes, display order (docs/engine.md 1.4) and points
(1.3)."""

from __future__ import annotations

import dataclasses
import random

import pytest

from service.games.common.cards import Card, format_cards, parse_cards
from service.games.common.errors import InvalidCard, RulesError

RANKS = "A23456789TJQK"
SUITS = "CDHS"
DISPLAY_ORDER = [r + s for s in SUITS for r in RANKS]


@pytest.mark.parametrize("code", DISPLAY_ORDER)
def test_parse_print_round_trip_and_attributes(code: str) -> None:
    card = Card.parse(code)
    assert str(card) == code
    assert card.rank == RANKS.index(code[0]) + 1
    assert card.suit == code[1]
    assert card.index == DISPLAY_ORDER.index(code)
    assert card.points == min(card.rank, 10)
    assert Card.parse(code) == card
    assert hash(Card.parse(code)) == hash(card)


def test_specific_values() -> None:
    assert (Card.parse("AC").index, Card.parse("KC").index) == (0, 12)
    assert (Card.parse("AD").index, Card.parse("KS").index) == (13, 51)
    assert [Card.parse(c).points for c in ("AS", "2H", "9D", "TC", "JS", "QH", "KD")] == [
        1,
        2,
        9,
        10,
        10,
        10,
        10,
    ]
    assert [Card.parse(c).rank for c in ("AS", "TC", "JS", "QH", "KD")] == [1, 10, 11, 12, 13]


def test_all_52_cards_are_distinct_and_hashable() -> None:
    cards = {Card.parse(c) for c in DISPLAY_ORDER}
    assert len(cards) == 52
    assert Card.parse("TD") in cards
    assert Card.parse("TD") != Card.parse("TH")


def test_cards_sort_in_display_order() -> None:
    shuffled = list(DISPLAY_ORDER)
    random.Random(7).shuffle(shuffled)
    assert [str(c) for c in sorted(Card.parse(c) for c in shuffled)] == DISPLAY_ORDER
    assert Card.parse("KC") < Card.parse("AD")  # suit first
    assert Card.parse("2S") < Card.parse("3S")
    assert not Card.parse("AS") < Card.parse("KH")


def test_card_is_frozen() -> None:
    card = Card.parse("5H")
    with pytest.raises((AttributeError, TypeError, dataclasses.FrozenInstanceError)):
        card.rank = 6  # type: ignore[misc]
    assert str(card) == "5H"


@pytest.mark.parametrize("text", ["", "1S", "10D", "TX", "T", "TDS", "XS", "0C", "AZ", "S A"])
def test_invalid_codes_raise_invalid_card(text: str) -> None:
    with pytest.raises(InvalidCard):
        Card.parse(text)


def test_invalid_card_is_a_rules_error() -> None:
    assert issubclass(InvalidCard, RulesError)


def test_parse_cards_and_format_cards() -> None:
    cards = parse_cards("AS 2S 3S")
    assert isinstance(cards, tuple)
    assert [str(c) for c in cards] == ["AS", "2S", "3S"]
    assert all(isinstance(c, Card) for c in cards)
    assert parse_cards(["AS", "2S", "3S"]) == cards
    assert parse_cards(cards) == cards
    assert parse_cards([Card.parse("KD"), "QD"]) == (Card.parse("KD"), Card.parse("QD"))
    assert format_cards(cards) == "AS 2S 3S"
    assert format_cards(parse_cards("TD 9C KH")) == "TD 9C KH"
    with pytest.raises(InvalidCard):
        parse_cards("AS 1S 3S")
