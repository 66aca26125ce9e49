"""Property tests over random legal play-outs of whole hands, 2 to 6 players, both restocks."""

from __future__ import annotations

import copy
import json
import random
import re
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from service.games.common.cards import DECK, random_deck
from service.games.common.errors import RulesError
from service.games.rummy.actions import RummyAction, RummyActionKind
from service.games.rummy.hand import Phase, RummyHand, Void, automatic_action
from service.games.rummy.playout import choose, play_out, seeded_shuffler
from service.games.rummy.rules import AceMode, Restock, RummyRules, Scoring
from tests.unit.budget import examples

CODE = re.compile(r"\b[A2-9TJQK][CDHS]\b")
ALL = (1 << 52) - 1
seeds = st.integers(0, 2**32 - 1)
meld_rates = st.sampled_from([0.05, 0.3, 0.9])


@st.composite
def tables(draw: st.DrawFn, max_turns: int = 40) -> tuple[int, RummyRules]:
    """A player count and options, with hands kept short enough to check every step."""
    rules = RummyRules(
        ace_mode=draw(st.sampled_from(list(AceMode))),
        must_discard_to_go_out=draw(st.booleans()),
        restock=draw(st.sampled_from(list(Restock))),
        max_restocks=draw(st.integers(0, 3)),
        max_turns=draw(st.integers(5, max_turns)),
        scoring=draw(st.sampled_from(list(Scoring))),
    )
    return draw(st.integers(2, 6)), rules


def walk(
    seed: int, players: int, rules: RummyRules, meld_rate: float, forfeit_rate: float = 0.01
) -> Iterator[RummyHand]:
    """Every state of one random hand, the deal first; now and then a seat forfeits."""
    rng = random.Random(seed)
    hand = RummyHand.deal(
        players, rng.randrange(players), random_deck(rng), rules, seeded_shuffler(rng)
    )
    yield hand
    while hand.to_act is not None:
        active = [s for s in range(players) if not hand.forfeited[s]]
        if rng.random() < forfeit_rate:
            hand = hand.forfeit(rng.choice(active), "test")
        else:
            hand = hand.apply(hand.to_act, choose(rng, hand.legal_actions(), meld_rate))
        yield hand


def places(hand: RummyHand) -> list[int]:
    return [
        *hand.hands,
        sum(c.bit for c in hand.stock),
        sum(c.bit for c in hand.discard),
        *(meld.mask for meld in hand.table_melds),
    ]


def check_outcome(hand: RummyHand) -> None:
    outcome = hand.outcome
    assert outcome is not None
    if outcome.void is None:
        assert outcome.winner is not None and not hand.forfeited[outcome.winner]
        if sum(hand.forfeited) < hand.players - 1:  # not won by forfeits: by going out
            assert hand.hands[outcome.winner] == 0
    else:
        assert outcome.winner is None and not any(outcome.counts)
    if outcome.void is Void.MAX_TURNS:
        assert hand.turns == hand.rules.max_turns
    if outcome.void is Void.MAX_RESTOCKS:
        assert hand.restocks == hand.rules.max_restocks and not hand.stock
    if hand.rules.scoring is Scoring.PAY_WINNER:
        assert outcome.points is not None and sum(outcome.points) == 0
        if outcome.winner is not None:
            factor = 2 if outcome.went_rummy else 1
            for seat, points in enumerate(outcome.points):
                if seat != outcome.winner:
                    assert points == -factor * outcome.counts[seat]
    else:
        assert outcome.penalties is not None and outcome.points is None


@pytest.mark.parametrize("restock", list(Restock))
@pytest.mark.parametrize("players", [2, 3, 4, 5, 6])
@examples(8)
@given(seed=seeds, meld_rate=meld_rates)
def test_random_playouts_always_end(
    players: int, restock: Restock, seed: int, meld_rate: float
) -> None:
    rules = RummyRules(restock=restock)
    hand = None
    for steps, hand in enumerate(walk(seed, players, rules, meld_rate, forfeit_rate=0.0), 1):
        # 5.5.3: without forfeits every turn starts with cards on the discard pile.
        if hand.phase is Phase.DRAW:
            assert hand.discard
        # Each completed turn takes at most a draw, the melds of 11 cards and a discard.
        assert steps <= (rules.max_turns + 1) * 8
    assert hand is not None and hand.outcome is not None
    check_outcome(hand)


@examples(40)
@given(seed=seeds, table=tables(max_turns=300), meld_rate=meld_rates)
def test_every_card_is_in_exactly_one_place_after_every_action(
    seed: int, table: tuple[int, RummyRules], meld_rate: float
) -> None:
    players, rules = table
    on_table = 0
    for hand in walk(seed, players, rules, meld_rate):
        total = 0
        for part in places(hand):
            assert not total & part
            total |= part
        assert total == ALL
        laid = sum(len(m.cards) for m in hand.table_melds)
        assert laid >= on_table  # table melds are never taken back (5.2.2)
        on_table = laid
    check_outcome(hand)


@examples(25)
@given(seed=seeds, table=tables(), meld_rate=meld_rates, data=st.data())
def test_apply_accepts_exactly_the_listed_actions(
    seed: int, table: tuple[int, RummyRules], meld_rate: float, data: st.DataObject
) -> None:
    players, rules = table
    rng = random.Random(seed ^ 0x5EED)
    for hand in walk(seed, players, rules, meld_rate):
        if hand.to_act is None:
            assert all(hand.legal_actions(s) == [] for s in range(players))
            continue
        before = copy.deepcopy(hand.to_dict())
        seat = hand.to_act
        legal = hand.legal_actions(seat)
        assert len(set(legal)) == len(legal)
        assert automatic_action(hand) in legal  # 11.6.1: the server's action is always legal
        for action in legal:
            hand.apply(seat, action)
            hand.apply(seat, str(action))
        held = list(hand.cards_of(seat))
        candidates = [
            RummyAction(kind)
            for kind in (
                RummyActionKind.DRAW_STOCK,
                RummyActionKind.DRAW_DISCARD,
                RummyActionKind.TURN_OVER,
            )
        ]
        candidates += [RummyAction(RummyActionKind.DISCARD, (card,)) for card in DECK]
        for _ in range(12):
            cards = tuple(rng.sample(held, min(len(held), rng.randint(1, 5))))
            candidates.append(RummyAction(RummyActionKind.MELD, cards))
            index = rng.randint(0, len(hand.table_melds))
            candidates.append(RummyAction(RummyActionKind.LAY_OFF, cards[:3], index))
        listed = set(legal)
        for action in candidates:
            try:
                hand.apply(seat, action)
                accepted = True
            except RulesError:
                accepted = False
            assert accepted == (action in listed), action
        for other in range(players):
            if other != seat:
                assert hand.legal_actions(other) == []
                for action in legal[:3]:
                    with pytest.raises(RulesError):
                        hand.apply(other, action)
        assert hand.to_dict() == before, "trying actions changed the state"


@examples(30)
@given(seed=seeds, table=tables(max_turns=120), meld_rate=meld_rates)
def test_json_round_trip_at_every_step(
    seed: int, table: tuple[int, RummyRules], meld_rate: float
) -> None:
    players, rules = table
    for hand in walk(seed, players, rules, meld_rate):
        again = RummyHand.from_dict(json.loads(json.dumps(hand.to_dict())), hand.shuffler)
        assert again == hand
        assert again.to_dict() == hand.to_dict()
        assert again.outcome == hand.outcome
        assert again.legal_actions() == hand.legal_actions()


@examples(30)
@given(seed=seeds, table=tables(max_turns=120), meld_rate=meld_rates)
def test_no_view_shows_another_players_card_or_a_stock_card(
    seed: int, table: tuple[int, RummyRules], meld_rate: float
) -> None:
    players, rules = table
    for hand in walk(seed, players, rules, meld_rate):
        public = {c.code for c in hand.discard}
        public |= {c.code for meld in hand.table_melds for c in meld.cards}
        for seat in [*range(players), None]:
            view = hand.view(seat)
            own = set() if seat is None else {c.code for c in hand.cards_of(seat)}
            shown = set(CODE.findall(json.dumps(view)))
            assert shown <= public | own, (seat, sorted(shown - public - own))
            assert view["card_counts"] == [mask.bit_count() for mask in hand.hands]
            assert ("hand" in view) == (seat is not None)


@examples(60)
@given(seed=seeds, table=tables(max_turns=300), meld_rate=meld_rates)
def test_points_are_zero_sum_under_pay_winner(
    seed: int, table: tuple[int, RummyRules], meld_rate: float
) -> None:
    players, rules = table
    rules = RummyRules.from_dict({**rules.to_dict(), "scoring": "PAY_WINNER"})
    hand = play_out(random.Random(seed), players, rules, meld_rate=meld_rate)
    outcome = hand.outcome
    assert outcome is not None and outcome.points is not None
    assert sum(outcome.points) == 0
    if outcome.winner is not None:
        others = [p for s, p in enumerate(outcome.points) if s != outcome.winner]
        assert outcome.points[outcome.winner] == -sum(others) >= 0
    check_outcome(hand)
