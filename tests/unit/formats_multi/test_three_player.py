"""Three-player Gin (4.1, 11.1): seating and rotation, individual scores, pairwise margins,
forfeits, hand numbers; worked example 7.15."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import pytest

from service.games.common.cards import random_deck
from service.games.common.errors import IllegalAction, InvalidSettings, InvalidState
from service.games.common.fair import shuffled_deck
from service.games.common.settings import Format, MatchSettings
from service.games.gin.ruleset import NextDealer, Ruleset, ShutoutMode
from service.games.multi_gin.match import PairMargin
from service.games.multi_gin.three_player import (
    Seating,
    ThreePlayerMatch,
    three_player_pairs,
    three_player_standings,
)
from service.games.protocol import MatchStatus
from tests.unit.formats_multi.decks import KNOCK_16, knock_at_once, knock_deck, play_dead

EXAMPLES = json.loads((Path(__file__).parent / "worked_examples.json").read_text())


def classic(**ruleset: object) -> MatchSettings:
    rules = Ruleset(**ruleset)  # type: ignore[arg-type]
    return MatchSettings(
        Format.CLASSIC,
        stake_per_point=1,
        min_buyin=100,
        max_buyin=10_000,
        target=rules.target,
        ruleset=rules,
    )


def current(match: ThreePlayerMatch):  # type: ignore[no-untyped-def]
    table = match.tables[-1]
    assert table.live
    return table


def win_16(match: ThreePlayerMatch, *, by_dealer: bool = False) -> None:
    """Deal the next hand so that its first player (or its dealer) knocks at once for 16."""
    match.deal(knock_deck(KNOCK_16, knocker_is_dealer=by_dealer))
    knock_at_once(match, current(match), KNOCK_16)


def dead_hand(match: ThreePlayerMatch, seed: int = 1) -> None:
    match.deal(random_deck(random.Random(seed)))
    play_dead(match, current(match))


def test_4_1_1_two_seats_play_each_hand_and_the_third_sits_out_as_a_spectator() -> None:
    match = ThreePlayerMatch(classic(), Seating(sitting_out=2, dealer=1))
    slot = match.next_hand()
    assert slot is not None and slot.seats == (0, 1) and slot.dealer == 1
    match.deal(random_deck(random.Random(4)))
    assert match.status is MatchStatus.PLAYING and match.sitting_out == 2
    assert match.to_act == (0,)  # the first player, offered the upcard
    assert match.legal_actions(2) == []
    with pytest.raises(IllegalAction) as refused:
        match.apply(2, "PASS")
    assert refused.value.code == "NOT_DEALT_IN"
    out = match.view(2)
    assert out["tables"] == match.view(None)["tables"]
    assert "hand" not in out["tables"][0]["hand"] and out["legal_actions"] == []
    player = match.view(0)["tables"][0]["hand"]
    assert len(player["hand"]) == 10 and player["legal_actions"]


def test_a_refusal_out_of_turn_names_the_match_seats_not_the_hands_places() -> None:
    match = ThreePlayerMatch(classic(), Seating(sitting_out=0, dealer=1))
    slot = match.next_hand()
    assert slot is not None and slot.seats == (1, 2)  # places 0 and 1 of the hand
    match.deal(random_deck(random.Random(4)))
    assert match.to_act == (2,)
    with pytest.raises(IllegalAction) as refused:
        match.apply(1, "PASS")
    assert refused.value.code == "NOT_YOUR_TURN"
    assert str(refused.value) == "it is seat 2's turn, not seat 1's"


def test_4_1_2_the_first_seating_is_drawn_at_random() -> None:
    drawn = set()
    for out, dealer in itertools.product(range(3), range(2)):
        draws = iter([out, dealer])
        seating = Seating.drawn(lambda n, draws=draws: next(draws))
        assert seating.sitting_out == out and seating.dealer in seating.players
        assert {seating.sitting_out, seating.dealer, seating.first_player} == {0, 1, 2}
        drawn.add((seating.sitting_out, seating.dealer))
    assert len(drawn) == 6  # every seat can sit out, either player can deal
    rng = random.Random(0)
    assert {Seating.drawn(rng.randrange) for _ in range(200)} == {
        Seating(o, d) for o in range(3) for d in range(3) if o != d
    }


@pytest.mark.parametrize("out,dealer", [(o, d) for o in range(3) for d in range(3) if o != d])
@pytest.mark.parametrize("winner_is_dealer", [False, True])
def test_4_1_3_the_loser_sits_out_and_the_one_who_sat_out_deals_to_the_winner(
    out: int, dealer: int, winner_is_dealer: bool
) -> None:
    match = ThreePlayerMatch(classic(), Seating(out, dealer))
    first = 3 - out - dealer
    winner, loser = (dealer, first) if winner_is_dealer else (first, dealer)
    win_16(match, by_dealer=winner_is_dealer)
    assert match.records[-1].winner == winner and match.records[-1].points == 16
    slot = match.next_hand()
    assert slot is not None
    assert match.sitting_out == loser
    assert slot.dealer == out and slot.first_player == winner
    assert slot.seats == tuple(sorted((winner, out)))


def test_4_1_3_after_a_dead_hand_the_same_two_replay_with_the_same_dealer() -> None:
    match = ThreePlayerMatch(classic(), Seating(0, 2))
    dead_hand(match)
    assert match.records[-1].kind == "dead"
    slot = match.next_hand()
    assert slot is not None and slot.number == 2
    assert slot.seats == (1, 2) and slot.dealer == 2 and match.sitting_out == 0


def test_4_1_4_each_seat_scores_alone_and_the_game_ends_at_the_target_with_bonuses() -> None:
    match = ThreePlayerMatch(classic(target=30), Seating(2, 1))
    win_16(match)  # P (0) beats Q (1); R (2) deals to P next
    win_16(match, by_dealer=True)  # R beats P; Q deals to R next
    assert match.hand_points == (16, 0, 16) and match.boxes == (1, 0, 1)
    assert match.status is MatchStatus.AWAITING_DEAL and not match.standings().over
    win_16(match)  # R, first player against Q, reaches 32
    assert match.status is MatchStatus.FINISHED and match.winner == 2
    s = match.standings()
    assert s.hand_points == (16, 0, 32) and s.boxes == (1, 0, 2)
    assert s.box_bonus == (20, 0, 40) and s.game_bonus == (0, 0, 100)
    assert s.totals == (36, 0, 172)
    margins = {p.seats: p.margin for p in s.pairs}
    # Q won no hand: R is also owed the shutout bonus (100) by Q, and by Q only.
    assert margins == {(0, 1): 36, (0, 2): 36 - 172, (1, 2): -(172 + 100)}
    assert s.nets == (36 - 136, -36 - 272, 136 + 272)
    with pytest.raises(IllegalAction):
        match.deal(random_deck(random.Random(1)))


def test_4_1_5_worked_example_7_15_rotation() -> None:
    example = EXAMPLES["7.15"]
    match = ThreePlayerMatch(classic(), Seating(**example["start"]))
    for hand in example["hands"]:
        slot = match.next_hand()
        assert slot is not None
        assert list(slot.seats) == hand["players"] and slot.dealer == hand["dealer"]
        assert slot.first_player == hand["first"] and match.sitting_out == hand["sitting_out"]
        if "winner" in hand:
            win_16(match, by_dealer=hand["knocker"] == "dealer")
            assert match.records[-1].winner == hand["winner"]


def test_4_1_5_worked_example_7_15_settlement_is_pairwise() -> None:
    end = EXAMPLES["7.15"]["end"]
    s = three_player_standings(
        end["hand_points"], end["boxes"], Ruleset(**end["ruleset"]), end["target"]
    )
    assert s.over and s.winner == end["winner"]
    assert list(s.totals) == end["totals"]
    paid = sorted(
        [p.seats[1] if p.margin > 0 else p.seats[0], p.receiver, abs(p.margin)] for p in s.pairs
    )
    assert paid == sorted(end["pays"])
    assert list(s.nets) == end["net"] and sum(s.nets) == 0


@pytest.mark.parametrize("rule", [NextDealer.LOSER_DEALS, NextDealer.ALTERNATE])
def test_11_1_1_the_rotation_replaces_next_dealer_and_a_dead_hand_moves_nothing(
    rule: NextDealer,
) -> None:
    match = ThreePlayerMatch(classic(next_dealer=rule), Seating(2, 1))
    win_16(match)  # winner 0: under the two-player rule the loser (or the other) would deal
    before = (match.hand_points, match.boxes, match.next_hand())
    dead_hand(match)
    slot = match.next_hand()
    assert slot is not None and before[2] is not None
    assert (slot.seats, slot.dealer) == (before[2].seats, before[2].dealer) == ((0, 2), 2)
    assert slot.number == before[2].number + 1
    assert (match.hand_points, match.boxes) == before[:2]


@pytest.mark.parametrize(
    "mode,amount",
    [
        (ShutoutMode.BONUS, 70),
        (ShutoutMode.DOUBLE_GAME_BONUS, 100),
        (ShutoutMode.DOUBLE_HAND_POINTS, 120),
    ],
)
def test_11_1_2_the_shutout_is_owed_per_pair(mode: ShutoutMode, amount: int) -> None:
    rules = Ruleset(shutout_mode=mode, shutout_bonus=70, game_bonus=100, box_bonus=20)
    # Seat 0 won with 120 in 3 boxes; seat 1 won no hand, seat 2 one hand for 30.
    s = three_player_standings((120, 0, 30), (3, 0, 1), rules, 100)
    winner_total, q, r = 120 + 60 + 100, 0, 30 + 20
    assert s.totals == (winner_total, q, r)
    pairs = {p.seats: p for p in s.pairs}
    assert pairs[0, 1].margin == winner_total - q + amount and pairs[0, 1].shutout == amount
    assert pairs[0, 2].margin == winner_total - r and pairs[0, 2].shutout == 0
    assert pairs[1, 2].margin == q - r
    both = three_player_standings((120, 0, 0), (3, 0, 0), rules, 100)
    assert [p.shutout for p in both.pairs] == [amount, amount, 0]


def test_11_1_3_the_two_non_winners_settle_with_each_other_too() -> None:
    s = three_player_standings((105, 40, 10), (2, 2, 1), Ruleset(), 100)
    pairs = {p.seats: p for p in s.pairs}
    assert pairs[1, 2].margin == (40 + 40) - (10 + 20) == 50
    assert pairs[1, 2].receiver == 1 and s.net(2) == -(pairs[0, 2].margin + 50)


def test_11_6_2_a_forfeit_ends_the_match_for_all_three() -> None:
    match = ThreePlayerMatch(classic(), Seating(2, 1))
    win_16(match)  # seat 0: 16 in one box; next hand 0 against 2, seat 1 sits out
    match.deal(random_deck(random.Random(8)))
    match.apply(0, "PASS")
    records = list(match.records)
    match.forfeit(1, "resign", at="2026-12-01T00:00:00Z")  # the seat sitting out
    assert match.over and match.status is MatchStatus.FINISHED and match.records == records
    table = match.tables[-1]
    assert table.cut_short and not table.live and match.hands_ended == 2
    assert table.hand.log[-1]["action"] == "FORFEIT"
    assert table.hand.log[-1]["reason"] == "match_ended"
    assert table.hand.log[-1]["seat"] is None and table.hand.outcome is not None
    assert table.hand.outcome.winner is None  # cut short in nobody's name
    assert match.to_act == () and all(match.legal_actions(s) == [] for s in range(3))
    with pytest.raises(IllegalAction):
        match.apply(2, "PASS")
    with pytest.raises(IllegalAction):
        match.forfeit(0)
    s = match.standings()
    assert s.over and s.forfeiter == 1 and s.winner is None and match.winner is None
    assert s.totals == (16 + 20, 0, 0) and s.game_bonus == (0, 0, 0)
    restored = ThreePlayerMatch.from_dict(json.loads(json.dumps(match.to_dict())))
    assert restored == match and restored.standings() == s


def test_11_6_2_a_forfeit_at_the_table_is_logged_in_the_forfeiters_name() -> None:
    match = ThreePlayerMatch(classic(), Seating(2, 1))
    match.deal(random_deck(random.Random(8)))
    match.forfeit(1, "timeout")
    entry = match.tables[0].hand.log[-1]
    assert entry["seat"] == 1 and entry["reason"] == "timeout" and entry["automatic"]


def test_11_6_2_the_match_play_pot_goes_to_the_most_hand_points_but_the_forfeiters() -> None:
    tie = three_player_standings((40, 40, 10), (1, 1, 1), Ruleset(), 100, forfeiter=2)
    assert tie.pot_sides == (0, 1) and tie.pot_seats == (0, 1)
    ahead = three_player_standings((10, 40, 90), (1, 1, 2), Ruleset(), 100, forfeiter=2)
    assert ahead.pot_sides == (1,)


def test_11_7_2_forfeit_margins_of_three_players() -> None:
    rules = Ruleset(game_bonus=100, box_bonus=20)
    s = three_player_standings((50, 30, 10), (2, 1, 1), rules, 100, forfeiter=1)
    assert s.totals == (90, 50, 30)
    pairs = {p.seats: p for p in s.pairs}
    assert pairs[0, 1].margin == (90 - 50) + 100 and pairs[0, 1].forfeit_bonus == 100
    assert pairs[0, 2].margin == 90 - 30 and pairs[0, 2].forfeit_bonus == 0
    assert pairs[1, 2].margin == -(0 + 100)  # seat 2 trails the forfeiter: clamped to 0
    assert pairs[1, 2].forfeit_bonus == -100
    assert s.pot_sides == (0,)
    # A forfeiter ahead on points still pays every opponent the game bonus.
    lead = three_player_standings((80, 0, 0), (4, 0, 0), rules, 100, forfeiter=0)
    assert [p.margin for p in lead.pairs] == [-100, -100, 0] and lead.net(0) == -200


def margins(pairs: tuple[PairMargin, ...]) -> list[tuple[tuple[int, int], int, int]]:
    return [(p.seats, p.margin, p.shutout) for p in pairs]


def test_4_1_5_every_pair_settles_its_difference() -> None:
    pairs = three_player_pairs((50, 120, 80), (10, 90, 40), 1, Ruleset())
    # seat 0 pays seat 1 70 and seat 2 30; seat 2 pays seat 1 40
    assert margins(pairs) == [((0, 1), -70, 0), ((0, 2), -30, 0), ((1, 2), 40, 0)]


def test_4_1_5_equal_totals_owe_nothing() -> None:
    pairs = three_player_pairs((150, 60, 60), (110, 30, 30), 0, Ruleset())
    assert margins(pairs) == [((0, 1), 90, 0), ((0, 2), 90, 0), ((1, 2), 0, 0)]
    assert pairs[2].receiver is None


def test_11_1_2_every_shut_out_opponent_pays_the_winner() -> None:
    pairs = three_player_pairs((240, 0, 0), (100, 0, 0), 0, Ruleset(shutout_bonus=100))
    assert [p.shutout for p in pairs] == [100, 100, 0]  # seats 1 and 2 each owe seat 0 100
    # The two shut-out seats have equal totals: nothing between them.
    assert pairs[2].margin == 0


def test_11_1_2_a_non_winner_is_never_paid_a_shutout() -> None:
    # Seat 2 has no hand points but seat 1, not the winner, receives no shutout from it.
    pairs = three_player_pairs((200, 60, 0), (100, 40, 0), 0, Ruleset())
    assert [p.shutout for p in pairs] == [0, 100, 0]


def test_11_6_2_classic_forfeit_pairs() -> None:
    # Totals at the forfeit, no game bonus in them; seat 0 leads and forfeits.
    pairs = three_player_pairs((90, 40, 70), (0, 0, 0), None, Ruleset(game_bonus=100), forfeiter=0)
    assert [(p.seats, p.margin, p.forfeit_bonus) for p in pairs] == [
        ((0, 1), -100, -100),  # max(40 - 90, 0) + 100: the lead does not count for seat 0
        ((0, 2), -100, -100),
        ((1, 2), -30, 0),  # the pair without the forfeiter: its plain difference
    ]


def test_11_7_2_forfeit_with_no_game_bonus_and_a_forfeiter_ahead() -> None:
    pairs = three_player_pairs((90, 40, 70), (0, 0, 0), None, Ruleset(game_bonus=0), forfeiter=0)
    assert [p.margin for p in pairs] == [0, 0, -30]


def test_three_player_pairs_refuse_other_than_three_seats() -> None:
    with pytest.raises(InvalidState):
        three_player_pairs((1, 2), (1, 2), 0, Ruleset())
    with pytest.raises(InvalidState):
        three_player_pairs((1, 2, 3), (1, 2, 3), 5, Ruleset())
    with pytest.raises(InvalidState):
        three_player_pairs((1, 2, 3), (1, 2, 3), None, Ruleset(), forfeiter=3)


def test_11_7_4_match_play_plays_to_the_ruleset_target() -> None:
    settings = MatchSettings(Format.MATCH_PLAY, stake=100, target=50, ruleset=Ruleset(target=30))
    match = ThreePlayerMatch(settings, Seating(2, 1))
    assert match.target == 30
    win_16(match)
    win_16(match)  # the winner is first player again (against the seat that sat out)
    assert match.hand_points == (32, 0, 0) and match.over and match.winner == 0
    assert match.standings().pot_seats == (0,)


def test_three_players_are_not_offered_the_two_player_only_formats() -> None:
    for fmt, extra in (
        (Format.FIRST_TO_KNOCK, {"stake": 100}),
        (Format.MONEY_PLAY, {"stake_per_point": 1, "min_buyin": 1, "max_buyin": 9}),
    ):
        with pytest.raises(InvalidSettings):
            ThreePlayerMatch(MatchSettings(fmt, **extra), Seating(0, 1))  # type: ignore[arg-type]


def test_11_6_4_hands_are_numbered_and_dealt_from_the_dealt_in_seats_seeds() -> None:
    seeds = ["seed-p", "seed-q", "seed-r"]
    server_seed = "ab" * 32
    match = ThreePlayerMatch(classic(), Seating(0, 2))
    slot = match.next_hand()
    assert slot is not None and slot.number == 1 and slot.seats == (1, 2)
    assert slot.joined_client_seeds(seeds) == "seed-q:seed-r"
    deck = shuffled_deck(server_seed, *slot.client_seeds(seeds), slot.number)
    match.deal(deck)
    assert match.tables[0].hand.deck == deck
    play_dead(match, match.tables[0])
    win_16(match)
    numbers = [r.number for r in match.records]
    assert numbers == [1, 2]
    after = match.next_hand()
    assert after is not None and after.number == 3
    assert list(after.seats) == sorted(after.seats)
    assert after.joined_client_seeds(seeds) == ":".join(seeds[s] for s in after.seats)
