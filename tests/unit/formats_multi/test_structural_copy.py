"""``copy()`` of the multi-seat matches (Rummy, three-player and partnership Gin) and the Rummy
views.

``copy()`` copies the match's mutable parts and shares its immutable ones. It must give what
the serialized round trip ``from_dict(to_dict())`` gives: a match equal to the original, with
the same state, that goes on exactly as the round trip would, and that is independent of the
original (whatever is done to one leaves the other's state as it was). A view must be what
it is on a freshly restored state, however often the state was viewed or copied before.
Matches are driven by seeded random play: the practice bots of service/games/bots.py on the
views of the seat to act, with deals, timeouts and forfeits in between.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest
from hypothesis import given
from hypothesis import strategies as st

from service.games.bots import decide_multi, random_multi
from service.games.common.cards import random_deck
from service.games.common.clock import ClockSettings, OnTimeout
from service.games.common.settings import Format, MatchSettings
from service.games.gin.ruleset import Ruleset
from service.games.multi_gin.match import MultiMatch
from service.games.multi_gin.partnership import PartnershipMatch
from service.games.multi_gin.three_player import Seating, ThreePlayerMatch
from service.games.protocol import MatchStatus
from service.games.rummy.hand import RummyHand
from service.games.rummy.match import RummyMatch, RummyMatchSettings
from service.games.rummy.rules import Restock, RummyRules, Scoring
from tests.unit.budget import examples

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


PLAYERS = range(2, 7)
TABLE_OPTIONS = [
    (restock, scoring)
    for restock in (Restock.SHUFFLE, Restock.TURN_OVER)
    for scoring in (Scoring.PAY_WINNER, Scoring.PENALTY)
]
RUMMY_CASES = [(players, *options) for players in PLAYERS for options in TABLE_OPTIONS]


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


# A whole match an example, copied at a twentieth of its moments. Under ci each number of
# players plays every table option with two seeds (hypothesis draws each choice once before
# it repeats one); the lighter profiles play a share of them.
@pytest.mark.parametrize("players", PLAYERS)
@examples(2 * len(TABLE_OPTIONS))
@given(options=st.sampled_from(TABLE_OPTIONS), game=st.integers(0, 1))
def test_a_rummy_copy_equals_the_original_and_is_independent(
    players: int, options: tuple[Restock, Scoring], game: int
) -> None:
    make = rummy_maker(players, *options)
    for match, rng, clock in moments(make, game * 100 + players, 0.05):
        check_copy(match, rng, clock)


@pytest.mark.parametrize("kind", sorted(GIN_MAKERS))
@examples(4)
@given(seed=st.integers(0, 2**32 - 1))
def test_a_gin_copy_equals_the_original_and_is_independent(kind: str, seed: int) -> None:
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


# A whole match an example, viewed at a fifth of its moments: every table option under ci (as
# above), a share of them under the lighter profiles.
@pytest.mark.parametrize("players", PLAYERS)
@examples(len(TABLE_OPTIONS))
@given(options=st.sampled_from(TABLE_OPTIONS))
def test_b_rummy_views_are_those_of_a_restored_state(
    players: int, options: tuple[Restock, Scoring]
) -> None:
    make = rummy_maker(players, *options)
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
# games, serialized as JSON in order, one digest a game. Regenerate only for an intended
# change of the rules or of the state's or the views' form (last: a hand's view names its
# players by match seat).
RECORDED = {
    "rummy": [
        "c93bca3f932880321f0120a86bd872d0ac1f82a161e69daf0e464f2260b5d240",
        "44f150ad0a5013ba08efba4ed34ded2eb4fc0a639e5c0cd84d08fe48bc40c2e6",
        "c5b564e08309dc0e5057ddfb3a29e2053c61fdce5d5030c532f5423b25b4a0f7",
        "5ffec90baa60d5e0815b519783989101f21433328b8a03c8097797a93da6ba4e",
        "b355fd7c81e9ca25a11dc5181850b0c956af007b750ef75e38dbe6970549910c",
        "64c43742f3a43ead8e77538ff5597a4df2bd264181b27562d38dc0199732a187",
        "c5f1e94132c4a1b00a5da9f49071d27ffaf58b8c507c82deb49a29d0dd67ec18",
        "ee7453812adf21a701eeff96e4c985dd724b683cb04ad6d51e480d6e67ce484c",
        "af8b5e8e2117d068403f2767920f0e221392bfb24dd9638fb30f109264990580",
        "6abbc6f5836778dbf8d66bc938bbdb696a5b09df22f32376144da97e4ffed5e0",
        "042fe940f5575af1199c16b20f543d23e17dfac6ad6283ebcecba7ca32a4d633",
        "20a06f9992899d9a22d476f8ffbf6fbf18107ae071740dc6d8c8bcd976378a68",
        "e4635e3de221b302137db853aa0e360bb004600f33a47af6f85a65c19a4fb954",
        "41ad8372f81ec4b1165f917e07aec9a34000bfbfae5eb74b12311ea303ee63f3",
        "0e33dc8c7253359f5f3d7eb6fddcacf4c72c3eed317b674d9bd569a93f158b93",
        "10f8992623dcb44e71dbcbe04ddbb25147761217384be256aced9c220be81120",
        "f5dad6211ab4866672a07238112d3f6e31833b913a287d51d41a1c12b5be0d20",
        "1758c8ace1ea4de5b3ca460d8c3122a19a04056b2e0be8263e3bad6d2416cce8",
        "8b01c0888948fac0413d4cfb11a3d80f756f3122b78850f19b3403c6c5985656",
        "5c1bfe76b11318bc5d5aa716dbd165bbb83e45931f3b7965d76dcebc8ca10433",
    ],
    "three_player": [
        "18c8662ecbb9925dc96eeaf954b119fd518e000061681c723ac0de9df206492b",
        "3acf1426844f583eae5ab288d1ca56dfd1de9dda115a655784f45771d743a306",
        "b425d90f8edc108af607867dacaec16449a4d98382359eca3a362a61e74874cd",
    ],
    "partnership": [
        "8c3db6fe080d5e3d3638d7e8ca5ac18ce1d26abfc0f28fb251749655a05eb5ce",
        "3d09afe5ef579544adc9643410fb764e5d50e986caeb49d99cb9a06cd962b8d2",
        "66322fa975a455e6472365229036ed5e373976719808d678f8ba338fac342314",
    ],
}


def recorded_digest(kind: str, number: int) -> str:
    """The digest of game ``number`` of ``kind``: Rummy plays one game a table of RUMMY_CASES,
    the multi-seat Gin matches three games; game ``n`` is dealt from seed ``n``."""
    digest = hashlib.sha256()
    make: Callable[[random.Random], Any]
    make = rummy_maker(*RUMMY_CASES[number]) if kind == "rummy" else GIN_MAKERS[kind]
    rng = random.Random(number)
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


# One recorded game an example: every game of a kind under ci (hypothesis draws each number
# once before it repeats one), a share of them under the lighter profiles.
@pytest.mark.parametrize("kind", sorted(RECORDED))
@examples(len(RUMMY_CASES))
@given(data=st.data())
def test_b_states_and_views_are_as_recorded(kind: str, data: st.DataObject) -> None:
    number = data.draw(st.integers(0, len(RECORDED[kind]) - 1), label="game")
    assert recorded_digest(kind, number) == RECORDED[kind][number]
