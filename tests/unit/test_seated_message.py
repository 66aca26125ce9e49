"""A rules error's message names players as the match's views do (service.match_view)."""

from __future__ import annotations

from service.match_view import seated_message

#: A ``rummy_per_hand`` hand of table seats 0, 2 and 3 (seat 1 sat out): its match seats.
PER_HAND = [{"seat": i, "table_seat": t} for i, t in enumerate((0, 2, 3))]


def test_a_per_hand_hand_names_its_players_by_table_seat() -> None:
    said = seated_message("it is seat 1's turn, not seat 2's", PER_HAND)
    assert said == "it is seat 2's turn, not seat 3's"
    assert seated_message("seat 0 does not hold 7S", PER_HAND) == "seat 0 does not hold 7S"


def test_no_seat_of_the_match_and_fixed_seats_are_left_as_they_are() -> None:
    left = "no seat 5 in a hand of 3 players"
    assert seated_message(left, PER_HAND) == left
    fixed = [{"seat": i} for i in range(3)]
    assert seated_message("it is seat 1's turn, not seat 2's", fixed) == (
        "it is seat 1's turn, not seat 2's"
    )
