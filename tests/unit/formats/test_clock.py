"""The turn clock (docs/engine.md 9.1-9.2): deadlines, banks, automatic actions, forfeits."""

from __future__ import annotations

import random

import pytest

from service.games.common.cards import random_deck
from service.games.common.clock import ClockSettings, OnTimeout
from service.games.common.errors import InvalidSettings
from service.games.common.settings import Format, MatchSettings
from service.games.gin.clock import automatic_action
from service.games.gin.match import Match
from service.games.gin.melds import best_discard
from service.games.protocol import MatchStatus
from tests.unit.rules.scenarios import deal


def match_with(clock: ClockSettings) -> Match:
    settings = MatchSettings(Format.MATCH_PLAY, stake=100, clock=clock)
    match = Match(settings, 1)
    match.deal(random_deck(random.Random(2)), now_ms=1_000_000)
    return match


def test_deadline_is_turn_allowance_plus_bank() -> None:
    match = match_with(ClockSettings(turn_seconds=30, bank_seconds=60))
    assert match.deadline_ms() == 1_000_000 + 30_000 + 60_000
    # Acting 40 s after the turn began uses 10 s of the bank.
    match.apply(0, "PASS", now_ms=1_040_000)
    assert match.banks_ms == [50_000, 60_000]
    assert match.deadline_ms() == 1_040_000 + 30_000 + 60_000  # seat 1's turn, full bank
    match.apply(1, "PASS", now_ms=1_041_000)
    assert match.banks_ms == [50_000, 60_000]
    assert match.deadline_ms() == 1_041_000 + 30_000 + 50_000


def test_no_timeout_before_the_deadline() -> None:
    match = match_with(ClockSettings(turn_seconds=10, bank_seconds=5))
    before = match.to_dict()
    assert match.timeout(1_014_999) is None
    assert match.to_dict() == before


def test_timeouts_play_automatically_then_forfeit() -> None:
    match = match_with(ClockSettings(turn_seconds=10, bank_seconds=5, max_timeouts=3))
    now = 1_015_000
    assert match.timeout(now) == "auto:PASS"  # seat 0's offer
    assert match.timeouts == [1, 0] and match.banks_ms[0] == 0
    assert match.hand is not None and match.hand.log[-1]["automatic"] is True
    match.apply(1, "PASS", now_ms=now + 1000)
    now += 1000 + 10_000
    assert match.timeout(now) == "auto:DRAW_STOCK"  # seat 0 must draw: bank already spent
    now += 10_000
    # The third timeout still plays the automatic discard, then forfeits.
    assert match.timeout(now, at="2026-12-01T00:00:31Z") == "forfeit"
    assert match.hand is not None and match.hand.log[-2]["action"] == "DISCARD"
    assert match.hand.log[-2]["automatic"] is True
    # The forfeit cut the hand short, and is logged in it as the server's automatic act.
    assert match.hand.log[-1] == {
        "seq": len(match.hand.log),
        "seat": 0,
        "action": "FORFEIT",
        "reason": "timeout",
        "at": "2026-12-01T00:00:31Z",
        "automatic": True,
    }
    assert match.hand.ended and match.cut_short and match.hand_number == 1
    assert match.timeouts == [3, 0]
    assert match.status is MatchStatus.FINISHED and match.forfeiter == 0
    assert match.forfeit_reason == "timeout" and match.winner == 1
    assert match.timeout(now + 10**9) is None  # over: nothing more happens


def test_forfeit_on_first_timeout_option() -> None:
    match = match_with(ClockSettings(turn_seconds=5, bank_seconds=0, on_timeout=OnTimeout.FORFEIT))
    assert match.timeout(1_005_000, at="2026-12-01T00:00:05Z") == "forfeit"
    assert match.forfeiter == 0 and match.over
    # The timeout is in the hand's log, as the automatic actions are, and ends the hand.
    assert match.hand is not None and match.hand.ended
    assert match.hand.log == [
        {
            "seq": 1,
            "seat": 0,
            "action": "FORFEIT",
            "reason": "timeout",
            "at": "2026-12-01T00:00:05Z",
            "automatic": True,
        }
    ]
    assert match.hand.legal_actions() == [] and match.hand.view(0)["to_act"] is None


def test_clock_state_survives_serialisation() -> None:
    match = match_with(ClockSettings(turn_seconds=10, bank_seconds=5))
    match.timeout(1_020_000)
    restored = Match.from_dict(match.to_dict())
    assert restored == match and restored.deadline_ms() == match.deadline_ms()


def test_automatic_actions_by_phase() -> None:
    hand = deal("AC 2C 3C 4D 5D 6D 7H 8H 2S KS", "AD 3D 5H 7C 9S JC KD QH 3S 8D", "9H", "QD")
    assert str(automatic_action(hand)) == "PASS"
    hand.apply(0, "PASS")
    hand.apply(1, "PASS")
    assert str(automatic_action(hand)) == "DRAW_STOCK"
    hand.apply(0, "DRAW_STOCK")
    expected, _ = best_discard(hand.cards_of(0))
    assert str(automatic_action(hand)) == f"DISCARD {expected}"
    # The card just taken from the discard pile is never the automatic discard.
    hand2 = deal("AC 2C 3C 4D 5D 6D 7H 8H 2S KS", "AD 3D 5H 7C 9S JC KD QH 3S 8D", "KH")
    hand2.apply(0, "TAKE_UPCARD")
    assert str(automatic_action(hand2)) != "DISCARD KH"


@pytest.mark.parametrize(
    "clock", [{"turn_seconds": 0}, {"on_timeout": "SLEEP"}, {"max_timeouts": 0}, {"foo": 1}]
)
def test_bad_clock_settings(clock: dict[str, object]) -> None:
    with pytest.raises(InvalidSettings):
        MatchSettings.from_dict({"format": "match_play", "stake": 10, "clock": clock})
