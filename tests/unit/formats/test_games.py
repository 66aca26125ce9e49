"""Every game behind one interface (service.games): whole matches of every game and
format dealt from fair seeds, played with random legal actions through the interface alone,
stored and restored after every change, and settled zero-sum within the escrow."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from service import games
from service.games.common import fair
from service.games.common.settings import MatchSettings
from service.games.gin.match import Match
from service.games.protocol import MatchStatus
from service.games.rummy.fair import FairShuffle
from service.games.rummy.match import RummyMatch
from service.games.rummy.rules import RummyRules
from tests.unit.budget import examples

SHORT = {"ruleset": {"target": 25, "partnership_target": 25}}

CASES: list[tuple[str, dict[str, Any], int]] = [
    ("gin", {"format": "match_play", "stake": 100, "target": 25, **SHORT}, 2),
    (
        "gin",
        {
            "format": "money_play",
            "stake_per_point": 1,
            "min_buyin": 100,
            "max_buyin": 500,
            "target": 50,
        },
        2,
    ),
    ("gin_three", {"format": "match_play", "stake": 100, "target": 25, **SHORT}, 3),
    (
        "gin_three",
        {
            "format": "classic",
            "stake_per_point": 1,
            "min_buyin": 100,
            "max_buyin": 500,
            "target": 25,
            **SHORT,
        },
        3,
    ),
    ("gin_partnership", {"format": "match_play", "stake": 100, "target": 25, **SHORT}, 4),
    (
        "gin_partnership",
        {
            "format": "classic",
            "stake_per_point": 1,
            "min_buyin": 100,
            "max_buyin": 500,
            "target": 25,
            **SHORT,
        },
        4,
    ),
    (
        "rummy",
        {"format": "rummy_per_hand", "stake_per_point": 1, "min_buyin": 100, "max_buyin": 500},
        4,
    ),
    (
        "rummy",
        {
            "format": "rummy_target",
            "stake_per_point": 1,
            "min_buyin": 100,
            "max_buyin": 500,
            "target": 60,
        },
        3,
    ),
    (
        "rummy",
        {
            "format": "rummy_deals",
            "stake_per_point": 1,
            "min_buyin": 200,
            "max_buyin": 500,
            "target": 2,
        },
        6,
    ),
    (
        "rummy",
        {
            "format": "rummy_deals",
            "stake_per_point": 1,
            "min_buyin": 200,
            "max_buyin": 500,
            "target": 2,
            "rummy": {"scoring": "PENALTY"},
        },
        2,
    ),
]


def _legal(match: games.AnyMatch, seat: int) -> list[str]:
    if isinstance(match, Match):
        assert match.hand is not None
        return [str(a) for a in match.hand.legal_actions(seat)]
    return [str(a) for a in match.legal_actions(seat)]


def _play(game: str, data: dict[str, Any], seats: int, rng: random.Random) -> games.AnyMatch:
    settings = MatchSettings.from_dict({"game": game, "seats": seats, **data})
    match = games.new_match(settings, seats, rng.randrange)
    seeds = [f"client{s}" for s in range(seats)]
    server_seeds: dict[int, str] = {}
    log = [games.Logged(None, "START", 0, "t0")]
    start = games.restart(match.to_dict())
    now = 0
    for _ in range(20_000):
        while games.pending_deal(match) is not None:
            server_seed = rng.randbytes(fair.SEED_BYTES).hex()  # as new_server_seed(), replayable
            hand = games.deal(match, server_seed, seeds, now)
            assert hand.number not in server_seeds and len(hand.seats) >= 2
            server_seeds[hand.number] = server_seed
        if match.over:
            # The log replays to the very match played (11.6.4, 10.3).
            assert games.replay_log(start, server_seeds, seeds, log) == match
            return match
        live = games.live_hands(match)
        seat = rng.choice(games.acting(match))
        legal = _legal(match, seat)
        # End hands sooner than random play would: go out whenever the rules allow it.
        ending = [
            a for a in legal if a.split()[0] in ("GIN", "BIG_GIN", "KNOCK", "MELD", "LAY_OFF")
        ]
        action = rng.choice(ending or legal)
        text = games.apply(match, seat, action, at=f"t{now}", now_ms=now)
        log.append(games.Logged(seat, text, now, f"t{now}"))
        for number in live - games.live_hands(match):
            ended = games.ended_hand(match, number)
            assert ended.number == number and ended.history
        match = games.from_state(match.to_dict())  # every change survives storage
        now += 1000
    raise AssertionError("the match did not end")


# A whole match per example, each change stored and restored: three matches a game under ci.
@pytest.mark.parametrize(("game", "data", "seats"), CASES)
@examples(3)
@given(seed=st.integers(0, 2**32 - 1))
def test_whole_matches_settle_zero_sum(
    game: str, data: dict[str, Any], seats: int, seed: int
) -> None:
    table = MatchSettings.from_dict({"game": game, "seats": seats, **data})
    match = _play(game, data, seats, random.Random(seed))
    assert match.status in (MatchStatus.FINISHED, MatchStatus.VOID)
    escrow = [table.escrow_for(None if not table.uses_buyins else table.max_buyin)] * seats
    settled = games.statement(match, table, escrow)
    assert sum(settled.payouts) + settled.fee == sum(escrow)
    assert all(p >= 0 for p in settled.payouts)
    assert list(settled.data["payouts"]) == list(settled.payouts)
    outcome = games.result(match)
    assert outcome["winner"] in (None, *range(seats))
    assert set(outcome.get("winners", [])) <= set(range(seats))


def test_a_forfeit_ends_every_game_and_settles() -> None:
    for game, data, seats in CASES:
        settings = MatchSettings.from_dict({"game": game, "seats": seats, **data})
        match = games.new_match(settings, seats, random.Random(1).randrange)
        while games.pending_deal(match) is not None:
            games.deal(match, fair.new_server_seed(), ["a"] * seats, 0)
        for seat in range(seats - 1):
            if not match.over:
                games.forfeit(match, seat, "resign", at="2026-12-03T00:00:00Z", now_ms=0)
        assert match.over, game
        escrow = [settings.max_buyin or settings.stake] * seats
        settled = games.statement(match, settings, escrow)
        assert sum(settled.payouts) + settled.fee == sum(escrow)
        assert settled.payouts[0] <= escrow[0]  # the first forfeiter never gains


BUYIN = {"stake_per_point": 1, "min_buyin": 1, "max_buyin": 1}


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        ({"format": "money_play", "game": "gin_three", "seats": 3, **BUYIN}, "format"),
        ({"format": "match_play", "game": "gin_partnership", "seats": 3, "stake": 10}, "seats"),
        ({"format": "rummy_target", "game": "gin", "seats": 2, **BUYIN}, "format"),
        (
            {
                "format": "rummy_per_hand",
                "game": "rummy",
                "seats": 5,
                **BUYIN,
                "rummy": RummyRules(max_players=4),
            },
            "seats",
        ),
    ],
    ids=["format", "seats", "gin_rummy_format", "rummy_max_players"],
)
def test_settings_refuse_a_format_or_seat_count_the_game_lacks(
    settings: dict[str, Any], field: str
) -> None:
    from service.games.common.errors import InvalidSettings

    with pytest.raises(InvalidSettings) as refused:
        MatchSettings(**settings)
    assert refused.value.field == field


def test_a_stored_rummy_match_keeps_its_fair_shuffle_for_later_restocks() -> None:
    settings = MatchSettings.from_dict(
        {
            "game": "rummy",
            "seats": 3,
            "format": "rummy_target",
            "stake_per_point": 1,
            "min_buyin": 100,
            "max_buyin": 100,
            "rummy": {"restock": "SHUFFLE"},
        }
    )
    match = games.new_match(settings, 3, random.Random(2).randrange)
    server_seed = fair.new_server_seed()
    games.deal(match, server_seed, ["x", "y", "z"], 0)
    restored = games.from_state(match.to_dict())
    assert isinstance(restored, RummyMatch) and restored.hand is not None
    shuffle = restored.hand.shuffler
    assert isinstance(shuffle, FairShuffle)
    assert (shuffle.server_seed, shuffle.client_seeds, shuffle.nonce) == (
        server_seed,
        ("x", "y", "z"),
        1,
    )
    assert restored == match
