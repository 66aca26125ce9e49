"""The audit's pure core without a database: a match played by the engine replays clean from
its evidence, and each kind of tampering with the evidence is named."""

from __future__ import annotations

import copy
from typing import Any

from service.games.common import fair
from service.games.common.settings import MatchSettings
from service.games.gin.actions import Action
from service.games.gin.bot import decide
from service.games.gin.match import Match
from service.games.gin.payout import settle
from service.usecases.audit import (
    HandEvidence,
    LoggedAction,
    compare_capture,
    compare_statement,
    expected_capture,
    replay_match,
)

SEEDS = ("alice-seed", "bob-seed")
SETTINGS = MatchSettings.from_dict({"format": "match_play", "stake": 500, "target": 60})


def played(
    resign_at: tuple[int, int] | None = None,
) -> tuple[Match, list[HandEvidence], list[LoggedAction]]:
    """A whole match played by the bot, with the evidence the service would store; with
    ``resign_at`` = (hand number, actions into it), seat 1 resigns there."""
    match = Match(SETTINGS, 0)
    hands: list[HandEvidence] = []
    log = [LoggedAction(1, None, "START")]
    seed_of: dict[int, str] = {}
    while not match.over:
        number = match.hand_number
        seed_of[number] = fair.new_server_seed()
        hand = match.deal(fair.shuffled_deck(seed_of[number], *SEEDS, number))
        while not hand.ended:
            if resign_at == (number, len(hand.log)):
                match.forfeit(1, "resign", at="2026-12-01T00:00:00Z")
                log.append(LoggedAction(len(log) + 1, 1, "RESIGN"))
                break
            seat = hand.to_act
            action = str(Action.from_dict(decide(hand.view(seat))))
            match.apply(seat, action)
            log.append(LoggedAction(len(log) + 1, seat, action))
        record = match.ended_hand()
        assert record is not None
        hands.append(
            HandEvidence(
                number,
                fair.ALGORITHM,
                fair.commitment(seed_of[number]),
                seed_of[number],
                *SEEDS,
                number,
                hand.dealer,
                record.kind,
                record.winner,
                record.points,
                hand.history(),
            )
        )
    return match, hands, log


def test_an_honest_match_replays_clean() -> None:
    match, hands, log = played()
    replay = replay_match(SETTINGS, 0, SEEDS, hands, log)
    assert replay.discrepancies == [] and replay.complete
    assert replay.records == tuple(match.records) and replay.hands_replayed == len(hands)
    statement = settle(SETTINGS, replay.records, (500, 500)).to_dict()
    assert compare_statement(statement, copy.deepcopy(statement)) == []


def test_a_hand_cut_short_by_a_forfeit_replays_from_its_history() -> None:
    match, hands, log = played(resign_at=(1, 3))
    assert match.forfeiter == 1 and match.records == [] and len(hands) == 1
    history = hands[0].history
    assert history is not None and history["outcome"]["kind"] == "forfeit"
    assert history["actions"][-1]["action"] == "FORFEIT" and len(history["actions"]) == 4
    assert fair.verify(hands[0].commitment, hands[0].server_seed, *SEEDS, 1, history["deck"])
    replay = replay_match(SETTINGS, 0, SEEDS, hands, log)
    assert replay.discrepancies == [] and replay.complete and replay.hands_replayed == 1
    assert replay.match is not None and replay.match.forfeiter == 1
    assert replay.match.cut_short and replay.match.hand_number == 1
    # The log naming another seat's resignation disagrees with the hand's history.
    other = [*log[:-1], LoggedAction(log[-1].version, 0, "RESIGN")]
    assert fields(replay_match(SETTINGS, 0, SEEDS, hands, other)) == ["match_actions.forfeit"]
    # A forfeit moved into the middle of the hand's actions is refused.
    actions = history["actions"]
    moved = {**history, "actions": [actions[-1], *actions[:-1]]}
    tampered = HandEvidence(**{**hands[0].__dict__, "history": moved})
    assert "hands[1].history.actions[0]" in fields(
        replay_match(SETTINGS, 0, SEEDS, [tampered], log)
    )


def fields(replay: Any) -> list[str]:
    return [d.field for d in replay.discrepancies]


def test_tampered_evidence_is_named() -> None:
    _match, hands, log = played()
    # Another seed: the commitment and the deck no longer match.
    other = HandEvidence(**{**hands[0].__dict__, "server_seed": fair.new_server_seed()})
    found = fields(replay_match(SETTINGS, 0, SEEDS, [other, *hands[1:]], log))
    assert "hands[1].commitment" in found and "hands[1].history.deck" in found
    # Points rewritten on the hand's row.
    points = (hands[0].points or 0) + 1
    found = fields(
        replay_match(
            SETTINGS,
            0,
            SEEDS,
            [HandEvidence(**{**hands[0].__dict__, "points": points}), *hands[1:]],
            log,
        )
    )
    assert found == ["hands[1].points"]
    # Another first dealer than the match had: the dealer chain breaks.
    assert "hands[1].dealer" in fields(replay_match(SETTINGS, 1, SEEDS, hands, log))
    # The action log says something else happened.
    altered = [
        *log[:2],
        LoggedAction(3, log[2].seat, "PASS" if log[2].action != "PASS" else "TAKE_UPCARD"),
        *log[3:],
    ]
    assert "match_actions[1]" in fields(replay_match(SETTINGS, 0, SEEDS, hands, altered))
    # A client seed that is not the seat's.
    assert "hands[1].client_seed_2" in fields(
        replay_match(SETTINGS, 0, (SEEDS[0], "mallory"), hands, log)
    )


def test_capture_comparison_names_each_account() -> None:
    expected = expected_capture(
        "op_1", "mch_1", "EUR", ["ply_a", "ply_b"], [500, 500], [900, 0], 100
    )
    assert expected == {
        "player_escrow:op_1:ply_a:mch_1:EUR": -500,
        "player_escrow:op_1:ply_b:mch_1:EUR": -500,
        "player_available:op_1:ply_a:-:EUR": 900,
        "house_fee:op_1:-:-:EUR": 100,
    }
    assert compare_capture(expected, dict(expected)) == []
    skimmed = {**expected, "house_fee:op_1:-:-:EUR": 101, "player_available:op_1:ply_a:-:EUR": 899}
    assert [d.field for d in compare_capture(expected, skimmed)] == [
        "ledger.capture[house_fee:op_1:-:-:EUR]",
        "ledger.capture[player_available:op_1:ply_a:-:EUR]",
    ]
