"""The audit's pure core without a database: a match played by the engine replays clean from
its evidence, and each kind of tampering with the evidence is named."""

from __future__ import annotations

import copy
import random
from typing import Any

from service import games
from service.games.common import fair
from service.games.common.settings import MatchSettings
from service.games.gin.actions import Action
from service.games.gin.bot import decide
from service.games.gin.match import Match
from service.usecases.audit import (
    HandEvidence,
    compare_capture,
    compare_statement,
    expected_capture,
    replay_match,
)

SEEDS = ("alice-seed", "bob-seed")
SETTINGS = MatchSettings.from_dict({"format": "match_play", "stake": 500, "target": 60})


def played(
    resign_at: tuple[int, int] | None = None,
) -> tuple[Match, games.AnyMatch, list[HandEvidence], list[games.Logged]]:
    """A whole match played by the bot, where its log starts, and the evidence the service
    would store; with ``resign_at`` = (hand number, actions into it), seat 1 resigns there."""
    match = Match(SETTINGS, 0)
    start = games.restart(match.to_dict())
    log = [games.Logged(None, "START", 0, "t0")]
    rows: dict[int, dict[str, Any]] = {}
    now = 0
    rng = random.Random(4)  # the same seeds every run, as fair.new_server_seed() makes them

    def deal() -> None:
        while games.pending_deal(match) is not None:
            seed = rng.randbytes(fair.SEED_BYTES).hex()
            dealt = games.deal(match, seed, SEEDS, now)
            rows[dealt.number] = {
                "number": dealt.number,
                "algorithm": fair.ALGORITHM,
                "commitment": fair.commitment(seed),
                "server_seed": seed,
                "seats": dealt.seats,
                "client_seed_1": SEEDS[0],
                "client_seed_2": SEEDS[1],
                "client_seeds": SEEDS,
                "nonce": dealt.number,
                "dealer": dealt.dealer,
                "outcome": None,
                "winner_seat": None,
                "points": None,
                "history": None,
            }

    deal()
    while not match.over:
        now += 1000
        hand = match.hand
        assert hand is not None
        live = games.live_hands(match)
        if resign_at == (match.hand_number, len(hand.log)):
            games.forfeit(match, 1, "resign", at=f"t{now}", now_ms=now)
            log.append(games.Logged(1, "RESIGN", now, f"t{now}"))
        else:
            seat = hand.to_act
            assert seat is not None
            action = str(Action.from_dict(decide(hand.view(seat))))
            text = games.apply(match, seat, action, at=f"t{now}", now_ms=now)
            log.append(games.Logged(seat, text, now, f"t{now}"))
        for number in live - games.live_hands(match):
            ended = games.ended_hand(match, number)
            rows[number].update(
                outcome=ended.outcome,
                winner_seat=ended.winner,
                points=ended.points,
                history=ended.history,
            )
        deal()
    return match, start, [HandEvidence(**rows[n]) for n in sorted(rows)], log


def fields(replay: Any) -> list[str]:
    return [d.field for d in replay.discrepancies]


def test_an_honest_match_replays_clean() -> None:
    match, start, hands, log = played()
    replay = replay_match(start, hands, SEEDS, log)
    assert replay.discrepancies == [] and replay.match is not None
    assert replay.match.to_dict() == match.to_dict() and replay.hands_replayed == len(hands)
    statement = dict(games.statement(replay.match, SETTINGS, (500, 500)).data)
    assert compare_statement(statement, copy.deepcopy(statement)) == []


def test_a_hand_cut_short_by_a_forfeit_replays_from_its_history() -> None:
    match, start, hands, log = played(resign_at=(1, 3))
    assert match.forfeiter == 1 and match.records == [] and len(hands) == 1
    history = hands[0].history
    assert history is not None and history["outcome"]["kind"] == "forfeit"
    assert history["actions"][-1]["action"] == "FORFEIT" and len(history["actions"]) == 4
    assert fair.verify(hands[0].commitment, hands[0].server_seed, *SEEDS, 1, history["deck"])
    replay = replay_match(start, hands, SEEDS, log)
    assert replay.discrepancies == [] and replay.hands_replayed == 1
    assert isinstance(replay.match, Match) and replay.match.forfeiter == 1
    assert replay.match.cut_short and replay.match.hand_number == 1
    # The log naming another seat's resignation disagrees with the hand's history.
    other = [*log[:-1], games.Logged(0, "RESIGN", log[-1].at_ms, log[-1].at)]
    assert "hands[1].history.actions[3].seat" in fields(replay_match(start, hands, SEEDS, other))
    # A forfeit moved into the middle of the hand's actions is not what was played.
    actions = history["actions"]
    moved = {**history, "actions": [actions[-1], *actions[:-1]]}
    tampered = HandEvidence(**{**hands[0].__dict__, "history": moved})
    assert fields(replay_match(start, [tampered], SEEDS, log))[0].startswith(
        "hands[1].history.actions[0]"
    )


def test_tampered_evidence_is_named() -> None:
    _match, start, hands, log = played()
    # Another seed: the commitment and the deck no longer match.
    other = HandEvidence(**{**hands[0].__dict__, "server_seed": fair.new_server_seed()})
    found = fields(replay_match(start, [other, *hands[1:]], SEEDS, log))
    assert found[:2] == ["hands[1].commitment", "hands[1].history.deck"], found
    # Points rewritten on the hand's row.
    points = (hands[0].points or 0) + 1
    found = fields(
        replay_match(
            start,
            [HandEvidence(**{**hands[0].__dict__, "points": points}), *hands[1:]],
            SEEDS,
            log,
        )
    )
    assert found == ["hands[1].points"]
    # Another first dealer than the match had: the dealer chain breaks.
    other_start = games.restart({**start.to_dict(), "first_dealer": 1})
    assert "hands[1].dealer" in fields(replay_match(other_start, hands, SEEDS, log))
    # The action log says something else happened.
    altered = [
        *log[:2],
        games.Logged(
            log[2].seat,
            "PASS" if log[2].action != "PASS" else "TAKE_UPCARD",
            log[2].at_ms,
            log[2].at,
        ),
        *log[3:],
    ]
    assert fields(replay_match(start, hands, SEEDS, altered)) == ["match_actions[2]"]
    # A client seed that is not the seat's.
    assert "hands[1].client_seed_2" in fields(
        replay_match(start, hands, (SEEDS[0], "mallory"), log)
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
