"""The bots of three-player and partnership Gin and of Rummy play only legal actions, drive
whole matches to their end, and the greedy Rummy bot plays as it says (melds, lay-offs, the
discard it takes, the card it throws)."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from service.games.bots import action_text, decide_multi, random_multi
from service.games.common.cards import random_deck
from service.games.common.settings import Format, MatchSettings
from service.games.gin.hand import Hand
from service.games.gin.ruleset import Ruleset
from service.games.multi_gin.match import MultiMatch
from service.games.multi_gin.partnership import PartnershipMatch
from service.games.multi_gin.three_player import Seating, ThreePlayerMatch
from service.games.protocol import MatchStatus
from service.games.rummy.actions import RummyAction
from service.games.rummy.match import RummyMatch, RummyMatchSettings
from service.games.rummy.rules import AceMode, Restock, RummyRules
from tests.unit.rummy.scenarios import position

Policy = Callable[[dict[str, Any], random.Random], dict[str, Any] | str]


def sensible(view: dict[str, Any], rng: random.Random) -> dict[str, Any] | str:
    return decide_multi(view)


def eager(view: dict[str, Any], rng: random.Random) -> dict[str, Any] | str:
    return decide_multi(view, eager=True)


def chance(view: dict[str, Any], rng: random.Random) -> dict[str, Any] | str:
    return random_multi(view, rng)


# --- multi-seat Gin ----------------------------------------------------------------------


def gin_settings(fmt: Format) -> MatchSettings:
    """A table of ``fmt`` playing the ruleset's targets (100; 125 in partnership)."""
    if fmt is Format.MATCH_PLAY:
        return MatchSettings(Format.MATCH_PLAY, stake=100, ruleset=Ruleset())
    return MatchSettings(
        Format.CLASSIC, stake_per_point=1, min_buyin=100, max_buyin=10_000, ruleset=Ruleset()
    )


def play_gin(match: MultiMatch, policies: Sequence[Policy], seed: int) -> int:
    """Drive ``match`` to its end, seat ``s`` deciding with ``policies[s]`` from its own view;
    every action must be listed as legal (in text form). Returns the actions played."""
    rng = random.Random(seed)
    actions = 0
    for _ in range(20_000):
        if match.over:
            return actions
        if match.status is MatchStatus.AWAITING_DEAL:
            match.deal(random_deck(rng))
            continue
        seat = match.to_act[int(rng.random() * len(match.to_act))]
        view = match.view(seat)
        action = policies[seat](view, rng)
        assert isinstance(action, str)
        assert action in {action_text(a) for a in view["legal_actions"]}
        match.apply(seat, action)
        actions += 1
    raise AssertionError("the match did not end")


@pytest.mark.parametrize("fmt", [Format.MATCH_PLAY, Format.CLASSIC])
@pytest.mark.parametrize(
    ("seed", "policies"), [(1, [sensible, eager, sensible]), (2, [sensible, eager, chance])]
)
def test_three_player_gin_is_played_to_its_end(
    fmt: Format, seed: int, policies: list[Policy]
) -> None:
    match = ThreePlayerMatch(gin_settings(fmt), Seating.drawn(random.Random(seed).randrange))
    assert play_gin(match, policies, seed) > 0
    standings = match.standings()
    assert match.over and standings.over and max(standings.totals) >= match.target
    assert match.forfeiter is None and len(match.records) >= 2


@pytest.mark.parametrize("fmt", [Format.MATCH_PLAY, Format.CLASSIC])
@pytest.mark.parametrize(
    ("seed", "policies"),
    [(3, [sensible, eager, eager, sensible]), (4, [sensible, chance, eager, sensible])],
)
def test_partnership_gin_is_played_to_its_end(
    fmt: Format, seed: int, policies: list[Policy]
) -> None:
    dealing = PartnershipMatch.drawn_dealing_team(random.Random(seed).randrange)
    match = PartnershipMatch(gin_settings(fmt), dealing)
    assert play_gin(match, policies, seed) > 0
    standings = match.standings()
    assert match.over and standings.over and match.forfeiter is None
    assert len(match.records) >= 2  # two tables a deal


def test_a_seat_without_a_turn_gets_no_action() -> None:
    match = ThreePlayerMatch(gin_settings(Format.CLASSIC), Seating(sitting_out=2, dealer=1))
    match.deal(random_deck(random.Random(5)))
    view = match.view(0)
    assert decide_multi(view) in {action_text(a) for a in view["legal_actions"]}
    for seat in (1, 2):  # the dealer waits, the third seat sits out
        with pytest.raises(ValueError):
            decide_multi(match.view(seat))
        with pytest.raises(ValueError):
            random_multi(match.view(seat), random.Random(0))


# --- Rummy --------------------------------------------------------------------------------

SEEDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]


def play_rummy(match: RummyMatch, policies: Sequence[Policy], seed: int) -> int:
    """Drive ``match`` to its end, dealing each hand with its fair shuffle; every action
    must be one of the view's legal actions as listed. Returns the hands played."""
    rng = random.Random(seed)
    server_seed = f"{seed:02x}" * 32
    for _ in range(50_000):
        if match.over:
            return match.hands_ended
        slot = match.next_hand()
        if slot is not None:
            shuffle = slot.fair_shuffle(server_seed, SEEDS[: match.settings.players])
            match.deal(shuffle.deck, shuffle)
            continue
        (seat,) = match.to_act
        view = match.view(seat)
        action = policies[seat](view, rng)
        assert isinstance(action, dict)
        assert action in view["legal_actions"]
        assert RummyAction.parse(action_text(action)) == RummyAction.from_dict(action)
        match.apply(seat, action)
    raise AssertionError("the match did not end")


@pytest.mark.parametrize("players", [2, 4, 6])
@pytest.mark.parametrize("mode", ["PER_HAND", "TARGET(100)", "DEALS(3)"])
def test_rummy_is_played_to_its_end(players: int, mode: str) -> None:
    seed = players * 10 + len(mode)
    settings = RummyMatchSettings(players, seed % players, RummyRules(match=mode))
    match = RummyMatch(settings)
    policies = [sensible if seat % 2 == 0 else chance for seat in range(players)]
    assert play_rummy(match, policies, seed) >= 1
    standings = match.standings()
    assert match.over and standings.over and standings.winners
    if mode == "DEALS(3)":
        assert standings.deals == 3
    if mode == "TARGET(100)":
        assert max(standings.points) >= 100


def test_rummy_by_the_greedy_bot_alone_at_a_shuffle_table_that_goes_out_by_discarding() -> None:
    rules = RummyRules(
        match="DEALS(2)",
        restock=Restock.SHUFFLE,
        must_discard_to_go_out=True,
        ace_mode=AceMode.HIGH_OR_LOW,
    )
    match = RummyMatch(RummyMatchSettings(3, 1, rules))
    assert play_rummy(match, [sensible, sensible, sensible], 7) >= 2
    assert match.over and match.standings().deals == 2


def view_of(hand: Any) -> dict[str, Any]:
    view: dict[str, Any] = hand.view(hand.to_act)
    return view


def test_greedy_rummy_draws_the_discard_only_when_it_completes_a_meld() -> None:
    hand = position(["7S 7H 2C 5D 9H JS QD", "AC 3D 4H 6S 8C TD KH"], to_act=0, discard="7D")
    assert decide_multi(view_of(hand)) == {"action": "DRAW_DISCARD"}
    hand = position(["7S 7H 2C 5D 9H JS QD", "AC 3D 4H 6S 8C TD KH"], to_act=0, discard="KD")
    assert decide_multi(view_of(hand)) == {"action": "DRAW_STOCK"}


def test_greedy_rummy_melds_the_longest_then_lays_off_then_throws_its_highest_loose_card() -> None:
    hand = position(
        ["2C 3C 4C 5C 7S 7H 7D KS 9D", "AH 3D 4H 6S 8C TD KH"],
        to_act=0,
        discard="QD",
        table=[(1, "9S TS JS")],
        phase="PLAY",
    )
    steps = []
    while hand.to_act == 0:
        action = decide_multi(view_of(hand))
        assert action in view_of(hand)["legal_actions"]
        steps.append(action_text(action))
        hand = hand.apply(0, action)
    assert steps == ["MELD 2C 3C 4C 5C", "MELD 7D 7H 7S", "DISCARD KS"]


def test_greedy_rummy_lays_off_and_never_throws_the_card_it_took() -> None:
    hand = position(
        ["QS KD 3H 4C 8D", "AH 3D 4H 6S 8C TD KH"],
        to_act=0,
        discard="2D",
        table=[(1, "9S TS JS")],
        phase="PLAY",
        taken="KD",
    )
    assert decide_multi(view_of(hand)) == {"action": "LAY_OFF", "cards": ["QS"], "meld": 0}
    hand = hand.apply(0, "LAY_OFF 0 QS")
    assert decide_multi(view_of(hand)) == {"action": "DISCARD", "card": "8D"}


def test_the_rummy_bots_read_the_match_view_and_give_the_api_text() -> None:
    match = RummyMatch(RummyMatchSettings(2, 0, RummyRules()))
    slot = match.next_hand()
    assert slot is not None
    shuffle = slot.fair_shuffle("cd" * 32, SEEDS[:2])
    match.deal(shuffle.deck, shuffle)
    (seat,) = match.to_act
    view = match.view(seat)
    assert decide_multi(view) in view["legal_actions"]
    assert random_multi(view, random.Random(1)) in view["legal_actions"]
    with pytest.raises(ValueError):
        decide_multi(match.view(1 - seat))
    assert action_text({"action": "LAY_OFF", "cards": ["9H", "8H"], "meld": 2}) == (
        "LAY_OFF 2 8H 9H"
    )
    assert action_text("MELD 7S 7H 7D") == "MELD 7D 7H 7S"
    assert action_text({"action": "DISCARD", "card": "TD"}) == "DISCARD TD"
    assert action_text({"action": "KNOCK", "card": "7D"}) == "KNOCK 7D"


def test_a_two_player_gin_hand_view_goes_to_the_two_player_bot() -> None:
    rng = random.Random(9)
    hand = Hand.deal(random_deck(rng), 0, Ruleset())
    view = hand.view(hand.to_act)
    assert decide_multi(view) in view["legal_actions"]
    assert random_multi(view, rng) in view["legal_actions"]
