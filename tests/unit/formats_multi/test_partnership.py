"""Partnership Gin (4.2, 11.2): teams, two tables per deal, alternating pairings, dealing
teams, deal results, team target and bonuses, money pairs, forfeits, hand numbers; worked
example 7.14."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path

import pytest

from service.games.common.cards import random_deck
from service.games.common.errors import IllegalAction
from service.games.common.fair import shuffled_deck
from service.games.common.settings import Format, MatchSettings
from service.games.gin.game import Game
from service.games.gin.ruleset import Ruleset
from service.games.multi_gin.match import HandSlot, TableRecord
from service.games.multi_gin.partnership import (
    DealRecord,
    PartnershipMatch,
    deal_result,
    deal_slots,
    next_dealing_team,
    pairing,
    partnership_standings,
    team_of,
)
from service.games.protocol import MatchStatus
from tests.unit.formats_multi import decks
from tests.unit.formats_multi.decks import (
    GIN_60,
    KNOCK_16,
    knock_at_once,
    knock_deck,
    play_dead,
)

EXAMPLES = json.loads((Path(__file__).parent / "worked_examples.json").read_text())


def classic(**ruleset: object) -> MatchSettings:
    return MatchSettings(
        Format.CLASSIC,
        stake_per_point=1,
        min_buyin=100,
        max_buyin=10_000,
        ruleset=Ruleset(**ruleset),  # type: ignore[arg-type]
    )


def team_game(deals: Sequence[tuple[int | None, int]], **ruleset: object) -> Game:
    rules = Ruleset(**ruleset)  # type: ignore[arg-type]
    game = Game(rules, rules.partnership_target)
    for team, points in deals:
        game.record(team, points)
    return game


def deal_two(match: PartnershipMatch, first: list[object], second: list[object]) -> None:
    """Deal both tables of the coming deal from the two decks given."""
    match.deal(first)  # type: ignore[arg-type]
    assert match.status is MatchStatus.AWAITING_DEAL
    match.deal(second)  # type: ignore[arg-type]
    assert match.status is MatchStatus.PLAYING


def dead_deal(match: PartnershipMatch, seed: int = 1) -> None:
    rng = random.Random(seed)
    deal_two(match, random_deck(rng), random_deck(rng))  # type: ignore[arg-type]
    for table in list(match.tables):
        play_dead(match, table)


def test_4_2_1_teams_go_by_seat_parity() -> None:
    assert [team_of(s) for s in range(4)] == [0, 1, 0, 1]
    match = PartnershipMatch(classic(), 0)
    assert match.standings().sides == ((0, 2), (1, 3))
    assert match.view(None)["teams"] == [[0, 2], [1, 3]]


def test_4_2_2_two_tables_each_with_its_own_deck_and_alternating_opponents() -> None:
    assert [pairing(d) for d in (1, 2, 3, 4)] == [
        ((0, 1), (2, 3)),
        ((0, 3), (1, 2)),
        ((0, 1), (2, 3)),
        ((0, 3), (1, 2)),
    ]
    match = PartnershipMatch(classic(), 0)
    rng = random.Random(2)
    one, two = random_deck(rng), random_deck(rng)
    deal_two(match, one, two)  # type: ignore[arg-type]
    tables = match.tables
    assert [t.slot.seats for t in tables] == [(0, 1), (2, 3)]
    assert list(tables[0].hand.deck) == one and list(tables[1].hand.deck) == two
    # Both first players act at once, each on its own table only.
    assert match.to_act == (1, 3)
    match.apply(3, "PASS")
    match.apply(1, "PASS")
    assert match.to_act == (0, 2)
    assert tables[0].hand.log[-1]["seat"] == tables[0].slot.hand_seat(1)
    # A team-mate's hand is hidden like an opponent's: seat 0 sees table 2 as a spectator.
    seen = match.view(0)["tables"]
    assert seen[1] == match.view(None)["tables"][1] and "hand" not in seen[1]["hand"]
    assert len(seen[0]["hand"]["hand"]) == 10


def test_4_2_2_play_waits_until_both_tables_are_dealt() -> None:
    match = PartnershipMatch(classic(), 1)
    match.deal(random_deck(random.Random(1)))
    with pytest.raises(IllegalAction) as refused:
        match.apply(0, "PASS")
    assert refused.value.code == "NO_HAND_IN_PLAY"
    slot = match.next_hand()
    assert slot is not None and slot.seats == (2, 3) and slot.number == 2


@pytest.mark.parametrize("team", [0, 1])
def test_4_2_3_both_members_of_the_dealing_team_deal(team: int) -> None:
    for deal in (1, 2, 3):
        slots = deal_slots(deal, team)
        assert sorted(s.dealer for s in slots) == sorted(s for s in range(4) if team_of(s) == team)
        assert all(team_of(s.first_player) != team for s in slots)
    assert next_dealing_team(team, 16) == 0 and next_dealing_team(team, -16) == 1
    assert next_dealing_team(team, 0) == team
    assert PartnershipMatch.drawn_dealing_team(lambda n: n - 1) == 1


def test_4_2_3_the_team_that_won_the_deal_deals_the_next() -> None:
    match = PartnershipMatch(classic(), 1)
    deal_two(match, knock_deck(GIN_60), random_deck(random.Random(3)))  # type: ignore[arg-type]
    knock_at_once(match, match.tables[0], GIN_60)  # seat 0 (team 1) wins 60
    play_dead(match, match.tables[1])
    assert match.deals[-1].scorer == 0 and match.dealing_team == 0
    slots = [match.next_hand()]
    assert slots[0] is not None and slots[0].dealer in (0, 2)


def worked_table_deck(table: dict[str, object], seed: int) -> list[object]:
    name = table["hand"]
    if name is None:
        return random_deck(random.Random(seed))  # type: ignore[return-value]
    return knock_deck(getattr(decks, str(name)), table["knocker"] == "dealer")  # type: ignore[return-value]


def test_4_2_4_worked_example_7_14_through_the_match() -> None:
    example = EXAMPLES["7.14"]
    match = PartnershipMatch(classic(), example["dealing_team"])
    for number, deal in enumerate(example["deals"], 1):
        assert match.deal_number == number
        slots = [match.next_hand()]
        decks_ = [worked_table_deck(t, number) for t in deal["tables"]]
        match.deal(decks_[0])  # type: ignore[arg-type]
        slots.append(match.next_hand())
        match.deal(decks_[1])  # type: ignore[arg-type]
        assert [list(s.seats) for s in slots if s] == deal["pairing"]
        assert [s.dealer for s in slots if s] == deal["dealers"]
        for table, data in zip(match.tables, deal["tables"], strict=True):
            if data["hand"] is None:
                play_dead(match, table)
            else:
                knock_at_once(match, table, getattr(decks, data["hand"]))
        ended = match.records[-2:]
        assert [(r.kind, r.winner, r.points) for r in ended] == [
            (t["kind"], t["winner"], t["points"]) for t in deal["tables"]
        ]
        record = match.deals[-1]
        assert (record.result, record.scorer, record.points) == (
            deal["result"],
            deal["scorer"],
            deal["points"],
        )
        assert match.dealing_team == deal["next_dealing_team"]
    game = match.game()
    assert list(game.hand_points) == example["hand_points"]
    assert list(game.boxes) == example["boxes"]


def test_4_2_4_worked_example_7_14_deal_results() -> None:
    for number, deal in enumerate(EXAMPLES["7.14"]["deals"], 1):
        records = [
            TableRecord(
                HandSlot(2 * number - 1 + i, (seats[0], seats[1]), dealer, number),
                t["kind"],
                t["winner"],
                t["points"],
                None,
            )
            for i, (seats, dealer, t) in enumerate(
                zip(deal["pairing"], deal["dealers"], deal["tables"], strict=True)
            )
        ]
        assert deal_result(records) == deal["result"]


def test_4_2_5_a_dead_table_is_not_replayed_and_the_other_stands() -> None:
    match = PartnershipMatch(classic(), 1)
    deal_two(match, knock_deck(KNOCK_16), random_deck(random.Random(3)))  # type: ignore[arg-type]
    play_dead(match, match.tables[1])
    assert match.status is MatchStatus.PLAYING and match.next_hand() is None
    knock_at_once(match, match.tables[0], KNOCK_16)
    assert match.deals == [DealRecord(1, 1, 16)]
    slot = match.next_hand()
    assert slot is not None and slot.deal == 2 and slot.number == 3  # not replayed


def test_4_2_5_both_tables_dead_score_nothing() -> None:
    match = PartnershipMatch(classic(), 0)
    dead_deal(match)
    assert match.deals == [DealRecord(1, 0, 0)]
    assert match.game().hand_points == (0, 0) and match.game().boxes == (0, 0)


def test_4_2_6_the_team_target_is_125_with_team_bonuses() -> None:
    match = PartnershipMatch(classic(), 0)
    assert match.target == 125 == Ruleset().partnership_target
    live = partnership_standings(team_game([(0, 120), (1, 40)]))
    assert not live.over and live.totals == (140, 60)
    s = partnership_standings(team_game([(0, 120), (1, 40), (0, 10)]))
    assert s.over and s.winner == 0 and s.target == 125
    assert s.totals == (130 + 40 + 100, 40 + 20) and s.game_bonus == (100, 0)
    assert s.pot_seats == (0, 2)


def test_4_2_7_each_losing_member_pays_one_winning_member_the_team_margin() -> None:
    s = partnership_standings(team_game([(0, 30), (1, 130)]))
    margin = (30 + 20) - (130 + 20 + 100)
    assert [(p.seats, p.margin) for p in s.pairs] == [((0, 1), margin), ((2, 3), margin)]
    assert s.nets == (margin, -margin, margin, -margin)


def test_11_2_1_a_scoreless_deal_advances_the_pairings_and_keeps_the_dealers() -> None:
    match = PartnershipMatch(classic(), 1)
    dead_deal(match)  # wholly dead
    slots = [match.next_hand()]
    assert slots[0] is not None and slots[0].seats == (0, 3) and match.dealing_team == 1
    # Deal 2 nets to 0: seat 0 wins 16 against seat 3; seat 1 (team 2) wins 16 against seat 2.
    match.deal(knock_deck(KNOCK_16))
    match.deal(knock_deck(KNOCK_16, knocker_is_dealer=True))
    assert [t.slot.dealer for t in match.tables] == [3, 1]
    for table in list(match.tables):
        knock_at_once(match, table, KNOCK_16)
    assert [r.winner for r in match.records[-2:]] == [0, 1]
    assert match.deals[-1] == DealRecord(2, 1, 0) and match.dealing_team == 1
    slot = match.next_hand()
    assert slot is not None and slot.seats == (0, 1) and slot.dealer == 1 and slot.deal == 3


def test_11_2_2_a_team_can_be_shut_out_though_its_players_won_hands() -> None:
    match = PartnershipMatch(classic(partnership_target=40), 1)
    match.deal(knock_deck(GIN_60))  # seat 0 wins 60 against seat 1
    match.deal(knock_deck(KNOCK_16, knocker_is_dealer=True))  # seat 3 wins 16 against seat 2
    for table, hand in zip(list(match.tables), (GIN_60, KNOCK_16), strict=True):
        knock_at_once(match, table, hand)
    assert [r.winner for r in match.records] == [0, 3]
    assert match.over and match.winning_team == 0
    s = match.standings()
    assert s.hand_points == (44, 0) and s.boxes == (1, 0)
    assert s.totals == (44 + 20 + 100 + 100, 0)
    assert all(p.shutout == 100 and p.margin == 264 for p in s.pairs)


def test_11_2_2_the_team_with_the_higher_final_total_receives_a_negative_margin() -> None:
    s = partnership_standings(team_game([(1, 10)] * 10 + [(0, 130)]))
    assert s.winner == 0 and s.totals == (130 + 20 + 100, 100 + 200)
    assert [p.margin for p in s.pairs] == [-50, -50] and [p.receiver for p in s.pairs] == [1, 3]


def test_11_2_3_the_money_pairs_are_seat_0_with_1_and_2_with_3() -> None:
    s = partnership_standings(team_game([(0, 125)]))
    assert [p.seats for p in s.pairs] == [(0, 1), (2, 3)]
    assert [p.receiver for p in s.pairs] == [0, 2]
    assert PartnershipMatch(classic(), 0).view(None)["money_pairs"] == [[0, 1], [2, 3]]


def test_11_6_2_a_forfeit_ends_both_tables_and_counts_complete_deals_only() -> None:
    match = PartnershipMatch(classic(), 1)
    deal_two(match, knock_deck(KNOCK_16), random_deck(random.Random(3)))  # type: ignore[arg-type]
    knock_at_once(match, match.tables[0], KNOCK_16)
    play_dead(match, match.tables[1])  # deal 1: team 1 scores 16
    rng = random.Random(4)
    deal_two(match, random_deck(rng), random_deck(rng))  # type: ignore[arg-type]
    match.apply(3, "PASS")  # deal 2: seats 3 and 1 deal, seats 0 and 2 play first
    match.forfeit(2, "resign")
    assert match.over and match.to_act == () and match.winning_team is None
    own, other = match.tables[1], match.tables[0]
    assert own.slot.seats == (1, 2) and other.slot.seats == (0, 3)
    assert own.hand.log[-1]["seat"] == own.slot.hand_seat(2)
    assert own.hand.log[-1]["reason"] == "resign"
    # The team-mate's table is cut short in nobody's name: no seat, no winner.
    assert other.hand.log[-1]["seat"] is None
    assert other.hand.outcome is not None and other.hand.outcome.winner is None
    assert other.hand.log[-1]["reason"] == "match_ended"
    assert len(match.cut_short) == 2 and match.hands_ended == 4
    s = match.standings()
    assert s.forfeiter == 2 and s.hand_points == (16, 0) and s.totals == (36, 0)
    assert s.pot_sides == (1,) and s.pot_seats == (1, 3)
    with pytest.raises(IllegalAction):
        match.apply(0, "PASS")


def test_11_7_2_a_partnership_forfeit_pays_at_team_level_through_both_pairs() -> None:
    game = team_game([(0, 60), (1, 20)])
    s = partnership_standings(game, forfeiter=1)  # team 2 forfeits, 40 behind
    assert s.totals == (80, 40)
    assert [p.margin for p in s.pairs] == [40 + 100] * 2
    assert [p.forfeit_bonus for p in s.pairs] == [100, 100]
    ahead = partnership_standings(game, forfeiter=2)  # team 1 forfeits, 40 ahead
    assert [p.margin for p in ahead.pairs] == [-100, -100]
    assert ahead.nets == (-100, 100, -100, 100)


def test_11_7_4_partnership_match_play_plays_to_the_partnership_target() -> None:
    settings = MatchSettings(
        Format.MATCH_PLAY, stake=100, target=200, ruleset=Ruleset(partnership_target=50)
    )
    match = PartnershipMatch(settings, 1)
    assert match.target == 50
    deal_two(match, knock_deck(GIN_60), random_deck(random.Random(1)))  # type: ignore[arg-type]
    knock_at_once(match, match.tables[0], GIN_60)
    play_dead(match, match.tables[1])
    assert match.over and match.winning_team == 0 and match.standings().pot_seats == (0, 2)


def test_11_6_4_a_deal_has_hands_2d_minus_1_at_seat_0s_table_and_2d() -> None:
    seeds = ["s0", "s1", "s2", "s3"]
    for deal in (1, 2, 3, 4):
        first, second = deal_slots(deal, deal % 2)
        assert 0 in first.seats and (first.number, second.number) == (2 * deal - 1, 2 * deal)
    even = deal_slots(2, 0)
    assert [s.joined_client_seeds(seeds) for s in even] == ["s0:s3", "s1:s2"]
    match = PartnershipMatch(classic(), 0)
    server_seed = "cd" * 32
    while match.status is MatchStatus.AWAITING_DEAL:
        slot = match.next_hand()
        assert slot is not None
        match.deal(shuffled_deck(server_seed, *slot.client_seeds(seeds), slot.number))
    assert [t.slot.number for t in match.tables] == [1, 2]
    assert match.tables[0].hand.deck == shuffled_deck(server_seed, "s0", "s1", 1)
    assert match.tables[1].hand.deck == shuffled_deck(server_seed, "s2", "s3", 2)


def test_11_6_1_each_table_has_its_own_turn_clock() -> None:
    match = PartnershipMatch(classic(), 0)
    rng = random.Random(5)
    match.deal(random_deck(rng), now_ms=0)
    match.deal(random_deck(rng), now_ms=1_000)
    turn, bank = 30_000, 60_000  # the default clock
    assert match.deadline_ms() == turn + bank  # table 1's first player, dealt first
    match.apply(1, "PASS", now_ms=40_000)  # 10 s over the turn: drawn from seat 1's bank
    assert match.banks_ms == [bank, bank - 10_000, bank, bank]
    assert match.deadline_ms() == 1_000 + turn + bank  # now table 2's first player is first
    assert match.timeout(1_000 + turn + bank - 1) is None
    assert match.timeout(1_000 + turn + bank) == "auto:PASS"
    assert match.timeouts == [0, 0, 0, 1] and match.banks_ms[3] == 0
    assert match.tables[1].hand.log[-1] == {
        "seq": 1,
        "seat": 1,
        "action": "PASS",
        "automatic": True,
    }


def test_11_6_1_timeouts_forfeit_the_match_for_all() -> None:
    settings = MatchSettings(
        Format.MATCH_PLAY,
        stake=100,
        clock={"max_timeouts": 1},  # type: ignore[arg-type]
    )
    match = PartnershipMatch(MatchSettings.from_dict(settings.to_dict()), 0)
    rng = random.Random(6)
    match.deal(random_deck(rng), now_ms=0)
    match.deal(random_deck(rng), now_ms=0)
    assert match.timeout(10**9) == "forfeit"
    assert match.over and match.forfeiter == 1 and match.forfeit_reason == "timeout"
    assert match.standings().pot_sides == (0,)
