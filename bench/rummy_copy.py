"""The cost of copying a multi-seat match and of a Rummy view, per call, in one CPython process.

Run: ``.venv/bin/python bench/rummy_copy.py [--states 60] [--repeat 30]``. States are taken
from seeded random play (fair-shuffled Rummy hands of 2, 4 and 6 players, three-player and
partnership Gin) and each is timed call by call (``perf_counter_ns`` around the call only):

``copy``  ``match.copy()`` (what a change in service/usecases/play.py starts from) beside
          the serialized round trip ``from_dict(to_dict())`` measured on the same states in
          the same run: the round trip is what ``copy()`` used to do, and stays callable here
          as the baseline only.
``view``  ``RummyMatch.view(seat)`` of the seat to act in the meld/discard phase, on a freshly
          restored state (nothing worked out yet, as for the first view of a new state: the
          view an action's answer carries), and again on the same state (a second read);
          beside them ``legal_actions(seat)`` alone on a freshly restored state, which is
          what a view that works the legal actions out twice pays once more.

Prints the mean and median per call in microseconds and the ratio of the medians, baseline /
new. (Run it on the code before a change too for the view's before/after.)
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from service.games.common.cards import random_deck
from service.games.common.settings import Format, MatchSettings
from service.games.gin.playout import choose as gin_choose
from service.games.gin.ruleset import Ruleset
from service.games.multi_gin.match import MultiMatch
from service.games.multi_gin.partnership import PartnershipMatch
from service.games.multi_gin.three_player import Seating, ThreePlayerMatch
from service.games.protocol import MatchStatus
from service.games.rummy.hand import Phase
from service.games.rummy.match import RummyMatch, RummyMatchSettings
from service.games.rummy.playout import choose as rummy_choose
from service.games.rummy.rules import Restock, RummyRules

T = TypeVar("T")


def rummy_states(rng: random.Random, players: int, count: int) -> list[RummyMatch]:
    """``count`` states of Rummy matches of ``players`` seats (each hand fair-shuffled, as the
    service deals them), taken at random moments of seeded random play."""
    states: list[RummyMatch] = []
    seeds = [f"client-{s}" for s in range(players)]
    while len(states) < count:
        rules = RummyRules(
            match="DEALS(3)", restock=rng.choice([Restock.SHUFFLE, Restock.TURN_OVER])
        )
        match = RummyMatch(RummyMatchSettings(players, rng.randrange(players), rules))
        while not match.over and len(states) < count:
            slot = match.next_hand()
            if slot is not None:
                shuffle = slot.fair_shuffle(rng.randbytes(32).hex(), seeds)
                match.deal(shuffle.deck, shuffle)
                continue
            seat = match.to_act[0]
            match.apply(seat, rummy_choose(rng, match.legal_actions(seat), 0.3))
            if rng.random() < 0.05:
                states.append(rummy_round_trip(match))
    return states


def gin_classic(ruleset: Ruleset) -> MatchSettings:
    return MatchSettings(
        Format.CLASSIC, stake_per_point=1, min_buyin=100, max_buyin=10_000, ruleset=ruleset
    )


def gin_states(rng: random.Random, make: Callable[[], MultiMatch], count: int) -> list[MultiMatch]:
    states: list[MultiMatch] = []
    while len(states) < count:
        match = make()
        while not match.over and len(states) < count:
            if match.status is MatchStatus.AWAITING_DEAL:
                match.deal(random_deck(rng))
                continue
            seat = match.to_act[int(rng.random() * len(match.to_act))]
            match.apply(seat, gin_choose(rng, match.legal_actions(seat), 0.2))
            if rng.random() < 0.1:
                states.append(type(match).from_dict(match.to_dict()))
    return states


def timed(calls: Iterator[Callable[[], object]]) -> list[float]:
    """Microseconds per call, each call timed alone (its setup is not)."""
    out = []
    for call in calls:
        start = time.perf_counter_ns()
        call()
        out.append((time.perf_counter_ns() - start) / 1000)
    return out


def each(items: list[T], repeat: int, make: Callable[[T], Callable[[], object]]) -> Iterator[Any]:
    for _ in range(repeat):
        for item in items:
            yield make(item)


def stats(times: list[float]) -> str:
    return f"mean {statistics.fmean(times):8.1f} us  median {statistics.median(times):8.1f} us"


def line(name: str, new: list[float], old: list[float] | None = None) -> None:
    text = f"  {name:<44} {stats(new)}"
    if old is not None:
        ratio = statistics.median(old) / statistics.median(new)
        text += f"   | baseline {stats(old)}   x{ratio:.1f} (medians)"
    print(text)


def rummy_round_trip(match: RummyMatch) -> RummyMatch:
    """The baseline: what ``RummyMatch.copy()`` used to do (a state of its own, restored from
    the serialized form, the hand's shuffler kept)."""
    shuffler = None if match.hand is None else match.hand.shuffler
    return RummyMatch.from_dict(match.to_dict(), shuffler)


def fresh_view(m: RummyMatch) -> Callable[[], object]:
    restored = rummy_round_trip(m)  # setup, not timed: nothing worked out yet
    return lambda: restored.view(restored.to_act[0])


def fresh_legal(m: RummyMatch) -> Callable[[], object]:
    restored = rummy_round_trip(m)
    return lambda: restored.legal_actions(restored.to_act[0])


def second_view(m: RummyMatch) -> Callable[[], object]:
    m.view(m.to_act[0])  # not timed
    return lambda: m.view(m.to_act[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--states", type=int, default=60, help="per kind of match")
    parser.add_argument("--repeat", type=int, default=30, help="timings per state")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(args.seed)

    print(f"copy, per call ({args.states} states x {args.repeat}); baseline: from_dict(to_dict())")
    for players in (2, 4, 6):
        states = rummy_states(rng, players, args.states)
        new = timed(each(states, args.repeat, lambda m: m.copy))
        old = timed(each(states, args.repeat, lambda m: lambda: rummy_round_trip(m)))
        line(f"RummyMatch {players}p copy()", new, old)
    makers: dict[str, Callable[[], MultiMatch]] = {
        "ThreePlayerMatch": lambda: ThreePlayerMatch(gin_classic(Ruleset()), Seating(2, 1)),
        "PartnershipMatch": lambda: PartnershipMatch(gin_classic(Ruleset()), 0),
    }
    for name, make in makers.items():
        gin = gin_states(rng, make, args.states)
        new = timed(each(gin, args.repeat, lambda m: m.copy))
        old = timed(each(gin, args.repeat, lambda m: lambda: type(m).from_dict(m.to_dict())))
        line(f"{name} copy()", new, old)

    print("\nRummy view of the seat to act in the meld/discard phase, per call")
    for players in (2, 4, 6):
        states = [
            m
            for m in rummy_states(rng, players, args.states * 3)
            if m.hand is not None and m.hand.phase is Phase.PLAY
        ][: args.states]
        first = timed(each(states, args.repeat, fresh_view))
        legal = timed(each(states, args.repeat, fresh_legal))
        second = timed(each(states, args.repeat, second_view))
        line(f"RummyMatch {players}p view(seat to act), new state", first)
        line(f"RummyMatch {players}p view(seat to act), read again", second)
        line(f"RummyMatch {players}p legal_actions(seat) alone", legal)


if __name__ == "__main__":
    main()
