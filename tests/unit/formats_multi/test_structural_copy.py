"""``copy()`` of the multi-seat matches (Rummy, three-player and partnership Gin) and the Rummy
views.

``copy()`` copies the match's mutable parts and shares its immutable ones. It must give what
the serialized round trip ``from_dict(to_dict())`` gives: a match equal to the original, with
the same state, that goes on exactly as the round trip would, and that is independent of the
original (whatever is done to one leaves the other's state as it was). A view must be what
it is on a freshly restored state, however often the state was viewed or copied before.
Matches are driven by seeded random play: the practice bots of service/bots/multi.py on the
views of the seat to act, with deals, timeouts and forfeits in between.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest

from service.bots.multi import decide_multi, random_multi
from service.formats.clock import ClockSettings, OnTimeout
from service.formats.match import MatchStatus
from service.formats.multi_common import MultiMatch
from service.formats.partnership import PartnershipMatch
from service.formats.rummy_match import RummyMatch, RummyMatchSettings
from service.formats.settings import Format, MatchSettings
from service.formats.three_player import Seating, ThreePlayerMatch
from service.rules import Ruleset
from service.rules.playout import random_deck
from service.rules.rummy import Restock, RummyRules, Scoring
from service.rules.rummy.hand import RummyHand

AnyMatch = TypeVar("AnyMatch", RummyMatch, MultiMatch)
STEP_MS = 7_000


# --- driving a match at random ------------------------------------------------------------


def round_trip(match: AnyMatch) -> AnyMatch:
    """The serialized round trip (what ``copy()`` gives, the slow way)."""
    if isinstance(match, RummyMatch):
        shuffler = None if match.hand is None else match.hand.shuffler
        return RummyMatch.from_dict(match.to_dict(), shuffler)  # type: ignore[return-value]
    return type(match).from_dict(match.to_dict())  # type: ignore[return-value]


def step(match: RummyMatch | MultiMatch, rng: random.Random, clock: list[int]) -> str:
    """One random move of ``match``: a deal, an action by a seat to act (the greedy or the
    random bot on its view), now and then a timeout or a forfeit. Returns what it was."""
    clock[0] += STEP_MS
    now = clock[0]
    if match.status is MatchStatus.AWAITING_DEAL:
        if isinstance(match, RummyMatch):
            slot = match.next_hand()
            assert slot is not None
            seeds = [f"seed-{seat}" for seat in match.seats]
            shuffle = slot.fair_shuffle(rng.randbytes(32).hex(), seeds)
            match.deal(shuffle.deck, shuffle, now_ms=now)
        else:
            match.deal(random_deck(rng), now)
        return "deal"
    roll = rng.random()
    if roll < 0.004:
        seat = rng.choice(
            [s for s in match.seats if not (isinstance(match, RummyMatch) and match.forfeited[s])]
        )
        match.forfeit(seat, "resign", at=f"t{now}")
        return "forfeit"
    if roll < 0.02:
        late = (match.deadline_ms() or now) + 1
        clock[0] = max(now, late)
        result = match.timeout(clock[0], at=f"t{clock[0]}")
        return f"timeout {result}"
    seat = match.to_act[int(rng.random() * len(match.to_act))]
    view = match.view(seat)
    action = decide_multi(view) if rng.random() < 0.3 else random_multi(view, rng)
    match.apply(seat, action, at=f"t{now}", now_ms=now)  # type: ignore[arg-type]
    return "act"


def rummy_match(rng: random.Random, players: int, restock: Restock, scoring: Scoring) -> RummyMatch:
    rules = RummyRules(
        match=rng.choice(["PER_HAND", "DEALS(3)", "TARGET(60)"]),
        restock=restock,
        scoring=scoring,
        max_restocks=rng.choice([1, 3]),
        max_turns=rng.choice([40, 300]),
    )
    clock = ClockSettings(
        turn_seconds=5,
        bank_seconds=20,
        on_timeout=rng.choice([OnTimeout.AUTO_PLAY, OnTimeout.FORFEIT]),
        max_timeouts=rng.choice([2, 5]),
    )
    return RummyMatch(RummyMatchSettings(players, rng.randrange(players), rules, clock))


def gin_settings(**ruleset: object) -> MatchSettings:
    rules = Ruleset(**ruleset)  # type: ignore[arg-type]
    return MatchSettings(
        Format.CLASSIC,
        stake_per_point=1,
        min_buyin=100,
        max_buyin=10_000,
        ruleset=rules,
    )


def three_player(rng: random.Random) -> ThreePlayerMatch:
    out = rng.randrange(3)
    dealer = rng.choice([s for s in range(3) if s != out])
    return ThreePlayerMatch(gin_settings(target=rng.choice([30, 100])), Seating(out, dealer))


def partnership(rng: random.Random) -> PartnershipMatch:
    return PartnershipMatch(gin_settings(), rng.randrange(2))


def moments(
    make: Callable[[random.Random], AnyMatch], seed: int, rate: float
) -> Iterator[tuple[AnyMatch, random.Random, list[int]]]:
    """A match played to its end from ``seed``, yielded at a random ``rate`` of its moments
    (with the generator and clock that drive it)."""
    rng = random.Random(seed)
    match = make(rng)
    clock = [1_000_000]
    for _ in range(5_000):
        if rng.random() < rate:
            yield match, rng, clock
        if match.over:
            return
        step(match, rng, clock)
    raise AssertionError("the match did not end")


RUMMY_CASES = [
    (players, restock, scoring)
    for players in range(2, 7)
    for restock in (Restock.SHUFFLE, Restock.TURN_OVER)
    for scoring in (Scoring.PAY_WINNER, Scoring.PENALTY)
]


def rummy_maker(players: int, restock: Restock, scoring: Scoring) -> Callable[..., RummyMatch]:
    return lambda rng: rummy_match(rng, players, restock, scoring)


GIN_MAKERS: dict[str, Callable[[random.Random], MultiMatch]] = {
    "three_player": three_player,
    "partnership": partnership,
}


def all_views(match: RummyMatch | MultiMatch) -> list[dict[str, Any]]:
    return [match.view(seat) for seat in (None, *match.seats)]


# --- (a) a copy equals the original and is independent of it -------------------------------


def check_copy(match: AnyMatch, rng: random.Random, clock: list[int]) -> None:
    before = match.to_dict()
    views_before = json.dumps(all_views(match))
    copied = match.copy()
    assert type(copied) is type(match)
    assert copied == match and copied.to_dict() == before
    assert copied.to_dict() == round_trip(match).to_dict()
    assert json.dumps(all_views(copied)) == views_before

    # The copy goes on exactly as the round trip does (the same moves from the same seed),
    # and the original stays as it was.
    twin = round_trip(match)
    seed = rng.random()
    copy_rng, twin_rng = random.Random(seed), random.Random(seed)
    copy_clock, twin_clock = list(clock), list(clock)
    for _ in range(25):
        if copied.over:
            break
        done = step(copied, copy_rng, copy_clock)
        assert step(twin, twin_rng, twin_clock) == done
        assert copied.to_dict() == twin.to_dict()
        assert match.to_dict() == before
    assert json.dumps(all_views(match)) == views_before

    # Nor does the original's play change a copy.
    other = match.copy()
    kept = other.to_dict()
    play_rng, play_clock = random.Random(seed + 1), list(clock)
    for _ in range(10):
        if match.over:
            break
        step(match, play_rng, play_clock)
    assert other.to_dict() == kept


@pytest.mark.parametrize(("players", "restock", "scoring"), RUMMY_CASES)
def test_a_rummy_copy_equals_the_original_and_is_independent(
    players: int, restock: Restock, scoring: Scoring
) -> None:
    for seed in range(2):
        make = rummy_maker(players, restock, scoring)
        for match, rng, clock in moments(make, seed * 100 + players, 0.05):
            check_copy(match, rng, clock)


@pytest.mark.parametrize("kind", sorted(GIN_MAKERS))
def test_a_gin_copy_equals_the_original_and_is_independent(kind: str) -> None:
    for seed in range(4):
        for match, rng, clock in moments(GIN_MAKERS[kind], seed, 0.05):
            check_copy(match, rng, clock)


def test_the_copy_of_a_fresh_match_and_of_a_finished_one() -> None:
    rng = random.Random(11)
    for make in (rummy_maker(4, Restock.SHUFFLE, Scoring.PENALTY), *GIN_MAKERS.values()):
        match = make(rng)
        assert match.copy() == match and match.copy().to_dict() == match.to_dict()
        clock = [0]
        while not match.over:
            step(match, rng, clock)
        copied = match.copy()
        assert copied == match and copied.to_dict() == round_trip(match).to_dict()
        assert json.dumps(all_views(copied)) == json.dumps(all_views(round_trip(match)))


def into_second_hand(match: AnyMatch, rng: random.Random, hands: int) -> AnyMatch | None:
    """``match`` played on until ``hands`` hands have ended and another is being played;
    None when it ends before."""
    clock = [0]
    while len(match.records) < hands or match.status is not MatchStatus.PLAYING:
        if match.over:
            return None
        step(match, rng, clock)
    return match


def test_a_rummy_copy_shares_only_what_never_changes() -> None:
    rng = random.Random(5)
    match = None
    while match is None:
        match = into_second_hand(rummy_match(rng, 5, Restock.SHUFFLE, Scoring.PAY_WINNER), rng, 1)
    copied = match.copy()
    for name in ("records", "forfeited", "forfeit_reasons", "banks_ms", "timeouts"):
        assert getattr(copied, name) == getattr(match, name)
        assert getattr(copied, name) is not getattr(match, name), name
    assert copied.settings is match.settings
    # The hand is immutable: the copy's apply replaces it rather than changing it.
    assert copied.hand is match.hand


def test_a_gin_copy_shares_only_what_never_changes() -> None:
    rng = random.Random(6)
    match = None
    while match is None:
        match = into_second_hand(partnership(rng), rng, 2)
    copied = match.copy()
    assert copied.deals == match.deals and copied.deals is not match.deals
    for name in ("tables", "records", "banks_ms", "timeouts"):
        assert getattr(copied, name) is not getattr(match, name), name
    for mine, theirs in zip(copied.tables, match.tables, strict=True):
        assert mine is not theirs and mine.hand is not theirs.hand
        assert mine.hand.hands is not theirs.hand.hands
        assert mine.hand.stock is not theirs.hand.stock
        assert mine.hand.discard is not theirs.hand.discard
        assert mine.hand.log is not theirs.hand.log


# --- (b) the views are those of a freshly restored state ------------------------------------


@pytest.mark.parametrize(("players", "restock", "scoring"), RUMMY_CASES)
def test_b_rummy_views_are_those_of_a_restored_state(
    players: int, restock: Restock, scoring: Scoring
) -> None:
    make = rummy_maker(players, restock, scoring)
    for match, _, _ in moments(make, 7_000 + players, 0.2):
        expected = [json.dumps(v) for v in all_views(round_trip(match))]
        assert [json.dumps(v) for v in all_views(match)] == expected
        assert [json.dumps(v) for v in all_views(match)] == expected  # viewed again
        assert [json.dumps(v) for v in all_views(match.copy())] == expected
        fresh = round_trip(match)
        for view in map(json.loads, expected):
            seat = view["you"]
            if seat is None:
                assert "legal_actions" not in view
            else:
                assert view["legal_actions"] == [a.to_dict() for a in fresh.legal_actions(seat)]
            own = view["hand"]["hand"] if view["hand"] is not None else None
            if own is not None and "seat" in own:
                # The hand's part lists the same actions as the match's.
                assert own["legal_actions"] == view["legal_actions"]


def test_b_a_hand_view_works_its_legal_actions_out_afresh() -> None:
    rng = random.Random(3)
    match = rummy_match(rng, 4, Restock.TURN_OVER, Scoring.PAY_WINNER)
    clock = [0]
    checked = 0
    while not match.over:
        hand = match.hand
        if hand is not None and hand.to_act is not None:
            fresh = RummyHand.from_dict(hand.to_dict(), hand.shuffler)
            for seat in (None, *range(hand.players)):
                assert hand.view(seat) == fresh.view(seat)
                assert hand.legal_actions(seat) == fresh.legal_actions(seat)
                checked += 1
        step(match, rng, clock)
    assert checked > 50


def test_the_legal_actions_listed_may_be_changed_by_their_reader() -> None:
    rng = random.Random(8)
    match = rummy_match(rng, 3, Restock.TURN_OVER, Scoring.PAY_WINNER)
    clock = [0]
    while match.status is not MatchStatus.PLAYING:
        step(match, rng, clock)
    seat = match.to_act[0]
    expected = match.legal_actions(seat)
    match.legal_actions(seat).clear()
    match.view(seat)["legal_actions"].clear()
    match.view(seat)["hand"]["hand"]["legal_actions"].clear()
    assert match.legal_actions(seat) == expected and expected
    assert match.view(seat)["legal_actions"] == [a.to_dict() for a in expected]


# Recorded before copy() became structural and before a view worked the legal actions out
# once (commit d13f207): every state and every view (each seat and a spectator) of seeded
# games, serialized as JSON in order. Regenerate only for an intended change of the rules or
# of the state's or the views' form (last: a hand's view names its players by match seat).
RECORDED = {
    "rummy": "4900722b798a18a5fde83ab9165a5bb2d987db540b1d4226b2a3aa1580d9f571",
    "three_player": "ad8567cb7f4e87a6c1a2571139c622c0f21cc1ce51c9d4a32c02f5080c9852cb",
    "partnership": "239589248fd2258adbf598cc6a477da4f08c97a119810696cc7fc18993b11f4e",
}


def recorded_digest(kind: str) -> str:
    digest = hashlib.sha256()
    cases: list[Callable[[random.Random], Any]]
    if kind == "rummy":
        cases = [rummy_maker(*case) for case in RUMMY_CASES]
    else:
        cases = [GIN_MAKERS[kind]] * 3
    for seed, make in enumerate(cases):
        rng = random.Random(seed)
        match = make(rng)
        clock = [0]
        for _ in range(800):
            digest.update(json.dumps(match.to_dict()).encode())
            digest.update(json.dumps(all_views(match)).encode())
            if match.over:
                break
            match = match.copy()  # as the service changes a match: on a copy
            step(match, rng, clock)
    return digest.hexdigest()


@pytest.mark.parametrize("kind", sorted(RECORDED))
def test_b_states_and_views_are_as_recorded(kind: str) -> None:
    assert recorded_digest(kind) == RECORDED[kind]
