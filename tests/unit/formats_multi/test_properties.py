"""Random legal three-player and partnership games: they end, every state round-trips
through JSON, no view shows a card its viewer may not see, and the points add up."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from service.games.common.settings import Format, MatchSettings
from service.games.gin.game import Game
from service.games.gin.ruleset import Ruleset, ShutoutMode
from service.games.multi_gin.match import MultiMatch, Standings
from service.games.multi_gin.partnership import PartnershipMatch, deal_result, pairing, team_of
from service.games.multi_gin.three_player import Seating, ThreePlayerMatch
from service.games.protocol import MatchStatus
from tests.unit.budget import examples
from tests.unit.formats_multi.decks import leaks, random_steps

KINDS = ("three_player", "partnership")


def new_match(kind: str, rng: random.Random) -> MultiMatch:
    rules = Ruleset(shutout_mode=rng.choice(list(ShutoutMode)), oklahoma=rng.random() < 0.2)
    if rng.random() < 0.5:
        table = MatchSettings(Format.MATCH_PLAY, stake=100, ruleset=rules)
    else:
        table = MatchSettings(
            Format.CLASSIC, stake_per_point=1, min_buyin=1, max_buyin=10, ruleset=rules
        )
    if kind == "three_player":
        return ThreePlayerMatch(table, Seating.drawn(rng.randrange))
    return PartnershipMatch(table, PartnershipMatch.drawn_dealing_team(rng.randrange))


def check_points(match: MultiMatch, s: Standings) -> None:
    """Pair margins are antisymmetric and sum to nothing; they follow the totals."""
    assert sum(s.nets) == 0
    for pair in s.pairs:
        x, y = pair.seats
        assert pair.margin_for(x) == -pair.margin_for(y) == pair.margin
        assert pair.receiver in (None, x, y)
    if isinstance(match, PartnershipMatch):
        assert s.pairs[0].margin == s.pairs[1].margin
        assert all(s.net(seat) == s.net(seat + 2) for seat in (0, 1))
        assert sum(d.points for d in match.deals if d.scorer is not None) == sum(s.hand_points)
    else:
        assert sum(r.points for r in match.records) == sum(s.hand_points)
        assert sum(1 for r in match.records if r.winner is not None) == sum(s.boxes)
    game_bonus = match.settings.ruleset.game_bonus
    if s.forfeiter is not None:
        against = [p for p in s.pairs if s.forfeiter in p.seats]
        assert all(p.margin_for(s.forfeiter) <= -game_bonus for p in against)
    elif not s.over:
        for pair in s.pairs:
            x, y = pair.seats
            assert pair.margin == s.totals[s.side_of(x)] - s.totals[s.side_of(y)]


@pytest.mark.parametrize("kind", KINDS)
@given(seed=st.integers(0, 2**32 - 1))
def test_random_games_end_at_the_target_and_the_points_add_up(kind: str, seed: int) -> None:
    rng = random.Random(seed)
    match = new_match(kind, rng)
    for _ in random_steps(match, rng):
        pass
    assert match.status is MatchStatus.FINISHED and match.forfeiter is None
    s = match.standings()
    assert s.over and s.winner is not None and s.hand_points[s.winner] >= s.target
    assert s.pot_sides == (s.winner,)
    check_points(match, s)
    if isinstance(match, ThreePlayerMatch):
        seating = match.first_seating
        for record in match.records:  # the rotation, hand after hand
            assert record.slot.seats == seating.players and record.slot.dealer == seating.dealer
            seating = seating.after(record.winner)
        before = [0, 0, 0]
        for record in match.records[:-1]:
            if record.winner is not None:
                before[record.winner] += record.points
        assert max(before) < s.target  # only the last hand reached the target
    else:
        assert isinstance(match, PartnershipMatch)
        team = match.first_dealing_team
        for deal in match.deals:  # pairings, dealers and results, deal after deal
            hands = sorted(
                (r for r in match.records if r.slot.deal == deal.number), key=lambda r: r.number
            )
            assert [h.slot.seats for h in hands] == list(pairing(deal.number))
            assert deal.dealing_team == team
            assert all(team_of(h.slot.dealer) == team for h in hands)
            assert deal.result == deal_result(hands)
            team = team if deal.result == 0 else deal.scorer  # type: ignore[assignment]
        shorter = Game(match.settings.ruleset, match.target)
        for deal in match.deals[:-1]:
            shorter.record(deal.scorer, deal.points)
        assert not shorter.over


@pytest.mark.parametrize("kind", KINDS)
@examples(15)
@given(seed=st.integers(0, 2**32 - 1))
def test_every_state_round_trips_and_no_view_shows_a_hidden_card(kind: str, seed: int) -> None:
    """Checked at every deal and hand end, and at a random twentieth of the other steps."""
    rng = random.Random(seed)
    match = new_match(kind, rng)
    for step in random_steps(match, rng):
        if step == "act" and rng.random() > 0.05:
            continue
        restored = type(match).from_dict(json.loads(json.dumps(match.to_dict())))
        assert restored == match
        assert restored.standings() == match.standings()
        viewer = rng.choice([*match.seats, None])
        assert restored.view(viewer) == match.view(viewer)
        for seat in (*match.seats, None):
            assert leaks(match, seat) == set(), seat


@pytest.mark.parametrize("kind", KINDS)
@examples(20)
@given(seed=st.integers(0, 2**32 - 1))
def test_each_of_the_first_300_steps_round_trips(kind: str, seed: int) -> None:
    """Literally every step, over the first hands of a match (several deals and hand ends)."""
    rng = random.Random(seed)
    match = new_match(kind, rng)
    for count, _ in enumerate(random_steps(match, rng)):
        if count == 300:
            break
        restored = type(match).from_dict(json.loads(json.dumps(match.to_dict())))
        assert restored == match and restored.to_act == match.to_act
        assert restored.next_hand() == match.next_hand()


@pytest.mark.parametrize("kind", KINDS)
@examples(50)
@given(seed=st.integers(0, 2**32 - 1), steps=st.integers(0, 400), who=st.integers(0, 3))
def test_a_forfeit_at_any_moment_ends_the_match_for_all(
    kind: str, seed: int, steps: int, who: int
) -> None:
    rng = random.Random(seed)
    match = new_match(kind, rng)
    for count, _ in enumerate(random_steps(match, rng)):
        if count >= steps:
            break
    if match.over:
        return
    seat = who % match.SEATS
    copy = match.copy()
    match.forfeit(seat, "resign")
    assert copy.status is not MatchStatus.FINISHED  # the copy is independent
    assert match.over and match.to_act == () and match.deadline_ms() is None
    recorded = {r.number for r in match.records}
    assert all(t.cut_short for t in match.tables if t.slot.number not in recorded)
    assert all(not t.live for t in match.tables)
    s = match.standings()
    assert s.over and s.forfeiter == seat and s.winner is None
    assert s.side_of(seat) not in s.pot_sides and s.pot_sides
    check_points(match, s)
    restored = type(match).from_dict(json.loads(json.dumps(match.to_dict())))
    assert restored == match and restored.standings() == s
    for viewer in (*match.seats, None):
        assert leaks(match, viewer) == set()
