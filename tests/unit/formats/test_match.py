"""Hands chained into matches by the format's rules, played out at random."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from service.games.common.cards import random_deck
from service.games.common.errors import IllegalAction
from service.games.common.settings import FeeRule, Format, GameKind, MatchSettings
from service.games.gin.match import HandRecord, Match
from service.games.gin.payout import settle_match
from service.games.gin.playout import choose
from service.games.protocol import MatchStatus
from service.games.registry import GAME_FORMATS
from tests.unit.budget import examples

SETTINGS = {
    Format.FIRST_TO_KNOCK: MatchSettings(Format.FIRST_TO_KNOCK, stake=100, fee=FeeRule(500)),
    Format.MATCH_PLAY: MatchSettings(Format.MATCH_PLAY, stake=100, target=100, fee=FeeRule(500)),
    Format.MONEY_PLAY: MatchSettings(
        Format.MONEY_PLAY, stake_per_point=2, min_buyin=100, max_buyin=1000, target=50
    ),
    Format.CLASSIC: MatchSettings(
        Format.CLASSIC, stake_per_point=1, min_buyin=100, max_buyin=1000, target=100
    ),
}


def play(match: Match, rng: random.Random, *, check_restore: bool = False) -> None:
    hands = 0
    while not match.over:
        if match.status is MatchStatus.AWAITING_DEAL:
            dealer = match.dealer
            match.deal(random_deck(rng))
            assert match.hand is not None and match.hand.dealer == dealer
            hands += 1
            assert hands < 200
            continue
        hand = match.hand
        assert hand is not None
        action = choose(rng, hand.legal_actions(), knock_rate=0.9)
        match.apply(hand.to_act, action)
        if check_restore:
            assert Match.from_dict(json.loads(json.dumps(match.to_dict()))) == match


@pytest.mark.parametrize("fmt", GAME_FORMATS[GameKind.GIN])
@given(seed=st.integers(0, 2**32 - 1))
def test_random_matches_end_by_their_format_and_settle(fmt: Format, seed: int) -> None:
    rng = random.Random(seed)
    settings = SETTINGS[fmt]
    match = Match(settings, rng.randrange(2))
    play(match, rng)
    assert match.status is MatchStatus.FINISHED
    decided = [r for r in match.records if r.kind != "dead"]
    if fmt is Format.FIRST_TO_KNOCK:
        assert len(decided) == 1 and match.records[-1] is decided[0]
        assert match.winner == decided[0].knocker
    else:
        h = match.game().hand_points
        reacher = match.game().target_reacher
        assert reacher is not None and h[reacher] >= settings.target
        # Only the last hand reached the target.
        before = [sum(r.points for r in match.records[:-1] if r.winner == s) for s in (0, 1)]
        assert max(before) < settings.target
    escrow = (settings.escrow_for(None if not settings.uses_buyins else 500),) * 2
    statement = settle_match(match, (escrow[0], escrow[1]))
    assert sum(statement.payouts.values()) + statement.fee == sum(escrow)
    assert Match.from_dict(match.to_dict()) == match


def test_dealers_follow_the_hands() -> None:
    rng = random.Random(3)
    match = Match(SETTINGS[Format.CLASSIC], 0)
    play(match, rng, check_restore=True)
    dealer = 0
    for record in match.records:
        assert record.dealer == dealer
        dealer = dealer if record.winner is None else record.winner  # winner deals (default)


def test_first_to_knock_voids_after_too_many_dead_hands() -> None:
    settings = MatchSettings(Format.FIRST_TO_KNOCK, stake=100, ftk_max_dead_hands=1)
    match = Match(settings, 1)
    for _ in range(2):
        match.deal(random_deck(random.Random(5)))
        hand = match.hand
        assert hand is not None
        hand_passes = 0
        while not hand.ended:  # nobody ever knocks: draw and discard the drawn card
            seat = hand.to_act
            legal = [str(a) for a in hand.legal_actions()]
            if "PASS" in legal:
                match.apply(seat, "PASS")
                hand_passes += 1
            elif "DRAW_STOCK" in legal:
                match.apply(seat, "DRAW_STOCK")
            else:
                match.apply(seat, f"DISCARD {hand.log[-1]['card']}")
        assert hand.outcome is not None and hand.outcome.kind == "dead"
    assert match.status is MatchStatus.VOID and match.over
    statement = settle_match(match, (100, 100))
    assert statement.figures["void"] and statement.payouts == {0: 100, 1: 100}


def test_forfeit_ends_the_match_and_blocks_play() -> None:
    match = Match(SETTINGS[Format.MATCH_PLAY], 0)
    match.deal(random_deck(random.Random(1)))
    match.forfeit(1)
    assert match.status is MatchStatus.FINISHED and match.winner == 0
    with pytest.raises(IllegalAction):
        match.apply(1, "PASS")
    with pytest.raises(IllegalAction):
        match.forfeit(0)
    assert settle_match(match, (100, 100)).payouts == {0: 190, 1: 0}


@pytest.mark.parametrize("fmt", GAME_FORMATS[GameKind.GIN])
def test_a_forfeit_in_the_middle_of_a_hand_cuts_it_short(fmt: Format) -> None:
    match = Match(SETTINGS[fmt], 0)
    rng = random.Random(7)
    match.deal(random_deck(rng))
    hand = match.hand
    assert hand is not None
    while not hand.ended:  # hand 1 dies: nobody knocks
        legal = hand.legal_actions()
        simple = [a for a in legal if str(a) in ("PASS", "DRAW_STOCK", "DECLINE")]
        match.apply(hand.to_act, (simple or [a for a in legal if a.kind == "DISCARD"])[0])
    assert match.status is MatchStatus.AWAITING_DEAL and match.hand_number == 2
    match.deal(random_deck(rng))
    match.apply(match.hand.to_act, "PASS")  # type: ignore[union-attr]
    records = list(match.records)
    match.forfeit(1, "resign", at="2026-12-01T00:00:00Z")
    assert match.over and match.winner == 0 and match.records == records
    assert match.hand_number == 2 and match.cut_short and match.hands_ended == 2
    assert match.hand is not None and match.hand.ended and match.deadline_ms() is None
    assert match.hand.legal_actions(0) == match.hand.legal_actions(1) == []
    assert match.ended_hand() == HandRecord(2, match.hand.dealer, "forfeit", 0, 0, None)
    restored = Match.from_dict(json.loads(json.dumps(match.to_dict())))
    assert restored == match and restored.cut_short and restored.hand_number == 2
    # A forfeit between hands cuts nothing short.
    between = Match(SETTINGS[fmt], 0)
    between.forfeit(0, "timeout")
    assert not between.cut_short and between.hand_number == 0 and between.ended_hand() is None


def test_a_state_stored_with_a_hand_in_play_after_a_forfeit_is_read_as_cut_short() -> None:
    match = Match(SETTINGS[Format.MONEY_PLAY], 0)
    match.deal(random_deck(random.Random(3)))
    stored = match.to_dict()  # as the service wrote a forfeit before hands were cut short
    stored.update(status="FINISHED", forfeiter=0, forfeit_reason="resign")
    restored = Match.from_dict(stored)
    assert restored.hand is not None and restored.hand.ended and restored.cut_short
    assert restored.hand.legal_actions() == [] and restored.hand_number == 1
    assert restored.hand.log[-1]["action"] == "FORFEIT"


def test_deal_only_when_awaiting() -> None:
    match = Match(SETTINGS[Format.MATCH_PLAY], 0)
    with pytest.raises(IllegalAction):
        match.apply(1, "PASS")
    match.deal(random_deck(random.Random(1)))
    with pytest.raises(IllegalAction):
        match.deal(random_deck(random.Random(2)))
    assert match.hand_number == 1


@pytest.mark.parametrize("fmt", GAME_FORMATS[GameKind.GIN])
@examples(40)
@given(seed=st.integers(0, 2**32 - 1))
def test_a_copy_is_independent_of_its_original(fmt: Format, seed: int) -> None:
    """Played on from any point, a copy ends where a restored state would, and its original
    stays as it was (service.usecases.play keeps decoded states and plays on copies). The
    first 150 steps of a match: a few hands, their ends and the next deals."""
    rng = random.Random(seed)
    match = Match(SETTINGS[fmt], rng.randrange(2))
    steps = 0
    while not match.over and steps < 150:
        before = json.dumps(match.to_dict())
        copy = match.copy()
        assert json.dumps(copy.to_dict()) == before
        restored = Match.from_dict(json.loads(before))
        moves = random.Random(steps)
        for played in (copy, restored):  # the same moves, from the same point
            moves.seed(steps)
            if played.status is MatchStatus.AWAITING_DEAL:
                played.deal(random_deck(moves))
            else:
                assert played.hand is not None
                if moves.random() < 0.01:
                    played.timeout(10**9, at="t")
                else:
                    played.apply(
                        played.hand.to_act,
                        choose(moves, played.hand.legal_actions(), knock_rate=0.9),
                    )
        assert copy == restored
        assert json.dumps(match.to_dict()) == before  # untouched by the copy's play
        match = copy
        steps += 1
