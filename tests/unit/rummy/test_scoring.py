"""Going out, going rummy and the scores (5.4, 5.6, 5.7, 11.3.4; worked example 7.12)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from service.games.rummy.hand import RummyHand
from service.games.rummy.rules import RummyRules
from tests.unit.rummy.scenarios import play, position

EXAMPLES = json.loads((Path(__file__).parent / "worked_examples.json").read_text())


def by_seat(example: dict[str, Any], values: dict[str, int]) -> list[int]:
    seats = example["seats"]
    return [values[name] for name in sorted(seats, key=seats.get)]


def example_7_12(case: dict[str, Any]) -> RummyHand:
    example = EXAMPLES["7.12"]
    seats = example["seats"]
    hand = position(
        by_seat(example, example["hands"]),  # type: ignore[arg-type]
        to_act=seats["A"],
        dealer=example["dealer"],
        discard=example["discard"],
        stock_top=example["stock_top"],
        table=[(seats[name], cards) for name, cards in example["table"]],
        laid_before=[seats["B"], seats["C"], seats["D"]]
        + ([seats["A"]] if case["a_laid_down_before"] else []),
        rules=RummyRules(scoring=case["scoring"]),
    )
    return play(hand, *example["actions"])


@pytest.mark.parametrize(
    "case", EXAMPLES["7.12"]["cases"], ids=lambda c: f"{c['scoring']}-rummy={c['went_rummy']}"
)
def test_7_12_four_player_points_with_the_rummy_double(case: dict[str, Any]) -> None:
    example = EXAMPLES["7.12"]
    outcome = example_7_12(case).outcome
    assert outcome is not None
    assert outcome.winner == example["seats"]["A"]
    assert outcome.went_rummy is case["went_rummy"]
    assert list(outcome.counts) == by_seat(example, example["counts"])
    if case["scoring"] == "PAY_WINNER":
        assert outcome.points is not None and outcome.penalties is None
        assert list(outcome.points) == by_seat(example, case["points"])
    else:
        assert outcome.penalties is not None and outcome.points is None
        assert list(outcome.penalties) == by_seat(example, case["penalties"])


def test_5_4_1_the_first_to_have_no_cards_wins_and_play_stops_at_once() -> None:
    hand = position(["7C 7D", "2S 3S 4S 5S", "KD"], to_act=0, discard="9C", stock_top="7H")
    ended = play(hand, "DRAW_STOCK", "MELD 7C 7D 7H")
    assert ended.outcome is not None and ended.outcome.winner == 0 and ended.outcome.void is None
    assert ended.to_act is None
    for seat in range(3):
        assert ended.legal_actions(seat) == []
        with pytest.raises(Exception) as err:
            ended.apply(seat, "DRAW_STOCK")
        assert getattr(err.value, "code", None) == "HAND_OVER"


def test_5_4_2_going_rummy_in_one_turn_with_lay_offs_onto_others_melds() -> None:
    hand = position(
        ["7C 7D 2S 3S 4S TH 9D", "KD QC 2C"],
        to_act=0,
        discard="9C",
        stock_top="7H",
        table=[(1, "JH QH KH")],
        laid_before=[1],
    )
    ended = play(hand, "DRAW_STOCK", "MELD 7C 7D 7H", "LAY_OFF 0 TH", "MELD 2S 3S 4S", "DISCARD 9D")
    assert ended.outcome is not None and ended.outcome.winner == 0
    assert ended.outcome.went_rummy
    assert ended.outcome.points == (2 * 22, -2 * 22)


def two_turns(first_turn: tuple[str, ...], last_turn: tuple[str, ...], **kwargs: Any) -> Any:
    """Seat 0 plays ``first_turn``, seat 1 draws and discards 4C, seat 0 plays ``last_turn``."""
    hand = position(
        kwargs.pop("cards", ["7C 7D 7H 7S 8S", "KD QC 2C"]),
        to_act=0,
        discard="9C",
        stock_top="5D 4C 9S",
        **kwargs,
    )
    before_last = play(hand, "DRAW_STOCK", *first_turn, "DRAW_STOCK", "DISCARD 4C")
    return before_last, play(before_last, "DRAW_STOCK", *last_turn)


def test_5_4_2_rummy_when_the_whole_hand_goes_down_in_one_turn() -> None:
    before, ended = two_turns(("DISCARD 5D",), ("MELD 7C 7D 7H", "MELD 7S 8S 9S"))
    assert before.laid_before == (False, False)
    assert ended.outcome.winner == 0 and ended.outcome.went_rummy


def test_5_4_2_not_rummy_after_melding_in_an_earlier_turn() -> None:
    before, ended = two_turns(("MELD 7C 7D 7H", "DISCARD 5D"), ("MELD 7S 8S 9S",))
    assert before.laid_before == (True, False)
    assert ended.outcome.winner == 0 and not ended.outcome.went_rummy
    assert ended.outcome.points == (22, -22)


def test_11_3_4_rummy_is_a_per_player_flag_not_meld_ownership() -> None:
    # Seat 0 owns no meld, but laid off onto seat 1's in an earlier turn: no rummy.
    before, ended = two_turns(
        ("LAY_OFF 0 TH", "DISCARD 5D"),
        ("MELD 7S 8S 9S",),
        cards=["TH 7S 8S", "KD QC 2C"],
        table=[(1, "JH QH KH")],
    )
    assert before.laid_before == (True, False)
    assert [m.melded_by for m in before.table_melds] == [1]
    assert ended.outcome.winner == 0 and not ended.outcome.went_rummy


def test_5_6_1_counts_every_card_left_whether_or_not_it_melds_and_not_the_table() -> None:
    hand = position(
        ["7C 7D", "2S 3S 4S KD", "AH"],
        to_act=0,
        discard="9C",
        stock_top="7H",
        table=[(1, "JH QH KH"), (2, "TC TD TS")],
        laid_before=[0, 1, 2],
    )
    outcome = play(hand, "DRAW_STOCK", "MELD 7C 7D 7H").outcome
    assert outcome is not None
    assert outcome.counts == (0, 2 + 3 + 4 + 10, 1)


def test_5_6_2_each_loser_pays_its_count_doubled_when_the_winner_went_rummy() -> None:
    def outcome(laid: list[int]) -> tuple[int, ...]:
        hand = position(
            ["7C 7D", "QS 4D", "AH"], to_act=0, discard="9C", stock_top="7H", laid_before=laid
        )
        result = play(hand, "DRAW_STOCK", "MELD 7C 7D 7H").outcome
        assert result is not None and result.points is not None
        return result.points

    assert outcome([0]) == (15, -14, -1)
    assert outcome([]) == (30, -28, -2)


def test_5_6_3_the_winner_gets_the_sum_and_points_are_zero_sum() -> None:
    hand = position(
        ["7C 7D", "QS 4D", "AH", "KC KD", "5S"],
        to_act=0,
        discard="9C",
        stock_top="7H",
        laid_before=[0],
    )
    outcome = play(hand, "DRAW_STOCK", "MELD 7C 7D 7H").outcome
    assert outcome is not None and outcome.points is not None
    assert outcome.points == (14 + 1 + 20 + 5, -14, -1, -20, -5)
    assert sum(outcome.points) == 0


def test_5_7_1_penalty_scoring_charges_losers_and_the_rummy_penalty() -> None:
    def penalties(laid: list[int], **options: Any) -> tuple[int, ...]:
        rules = RummyRules(scoring="PENALTY", **options)
        hand = position(
            ["7C 7D", "QS 4D", "AH"],
            to_act=0,
            discard="9C",
            stock_top="7H",
            laid_before=laid,
            rules=rules,
        )
        result = play(hand, "DRAW_STOCK", "MELD 7C 7D 7H").outcome
        assert result is not None and result.penalties is not None and result.points is None
        return result.penalties

    assert penalties([0]) == (0, 14, 1)
    assert penalties([]) == (0, 39, 26)
    assert penalties([], rummy_penalty=10) == (0, 24, 11)


def test_1_3_ace_points_count_an_ace_however_it_was_used() -> None:
    rules = RummyRules(ace_points=11, ace_mode="HIGH_OR_LOW")
    hand = position(
        ["7C 7D", "AS 4D", "AH AD"],
        to_act=0,
        discard="9C",
        stock_top="7H",
        laid_before=[0],
        rules=rules,
    )
    outcome = play(hand, "DRAW_STOCK", "MELD 7C 7D 7H").outcome
    assert outcome is not None and outcome.counts == (0, 15, 22)
