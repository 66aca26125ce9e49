"""Rules-engine speed: hands per second in one CPython process, against a naive baseline.

Run: ``.venv/bin/python bench/rules_speed.py`` (or ``make bench``). Prints, for each workload,
the engine's rate, the rate of a naive exhaustive arrangement (every disjoint combination of
every meld, searched recursively) on the same inputs in the same run, and their ratio.
Targets: >= 150,000 random 10-card arrangements/s, >= 50,000 meld-dense ones,
>= 20,000 best discards, >= 2,000 complete random hands played out.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable, Sequence
from itertools import combinations

from service.games.common.cards import DECK, Card
from service.games.gin.melds import arrange, best_discard
from service.games.gin.playout import play_out


def naive_melds(cards: Sequence[Card]) -> list[frozenset[Card]]:
    """Every set and run (and every sub-run) contained in ``cards``."""
    melds: list[frozenset[Card]] = []
    for size in (3, 4):
        for combo in combinations(cards, size):
            if len({c.rank for c in combo}) == 1:
                melds.append(frozenset(combo))
    by_suit: dict[str, set[int]] = {}
    for c in cards:
        by_suit.setdefault(c.suit, set()).add(c.rank)
    index = {(c.suit, c.rank): c for c in cards}
    for suit, ranks in by_suit.items():
        for lo in ranks:
            hi = lo
            while hi + 1 in ranks:
                hi += 1
                if hi - lo >= 2:
                    melds.append(frozenset(index[(suit, r)] for r in range(lo, hi + 1)))
    return melds


def naive_deadwood(cards: Sequence[Card]) -> int:
    """Minimum deadwood by trying every collection of disjoint melds."""
    melds = naive_melds(cards)
    total = sum(c.points for c in cards)

    def best(start: int, used: frozenset[Card]) -> int:
        top = 0
        for i in range(start, len(melds)):
            meld = melds[i]
            if not meld & used:
                top = max(top, sum(c.points for c in meld) + best(i + 1, used | meld))
        return top

    return total - best(0, frozenset())


def naive_best_discard(cards: Sequence[Card]) -> int:
    return min(naive_deadwood([c for c in cards if c is not d]) for d in cards)


def rate(fn: Callable[[object], object], items: Sequence[object], seconds: float) -> float:
    """Items per second, looping over ``items`` until ``seconds`` have passed."""
    done = 0
    start = time.perf_counter()
    while True:
        for item in items:
            fn(item)
        done += len(items)
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return done / elapsed


def meld_dense(rng: random.Random, n: int) -> list[list[Card]]:
    """Hands drawn from five adjacent ranks: sets and runs everywhere, many overlaps."""
    hands = []
    for _ in range(n):
        lo = rng.randrange(0, 9)
        pool = [c for c in DECK if lo <= c.rank - 1 < lo + 5]
        hands.append(rng.sample(pool, 10))
    return hands


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=2.0, help="time per measurement")
    parser.add_argument("--seed", type=int, default=20261130)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    random10 = [rng.sample(DECK, 10) for _ in range(5000)]
    dense10 = meld_dense(rng, 5000)
    random11 = [rng.sample(DECK, 11) for _ in range(3000)]

    # Both sides must agree before speed means anything.
    for hand in random10[:300] + dense10[:300]:
        assert arrange(hand).deadwood == naive_deadwood(hand), hand

    rows = [
        ("arrange, random 10 cards", arrange, naive_deadwood, random10, 150_000),
        ("arrange, meld-dense 10 cards", arrange, naive_deadwood, dense10, 50_000),
        ("best_discard, random 11 cards", best_discard, naive_best_discard, random11, 20_000),
    ]
    print(f"{'workload':34} {'engine/s':>12} {'naive/s':>10} {'ratio':>8} {'target':>9}")
    failed = False
    for name, fast, slow, items, target in rows:
        fast_rate = rate(fast, items, args.seconds)
        slow_rate = rate(slow, items[:200], args.seconds / 2)
        failed |= fast_rate < target
        print(
            f"{name:34} {fast_rate:12,.0f} {slow_rate:10,.0f} {fast_rate / slow_rate:7.1f}x "
            f"{target:9,}"
        )

    play_rng = random.Random(args.seed)
    hands_rate = rate(lambda _: play_out(play_rng), range(2000), args.seconds)
    naive_rate = rate(naive_deadwood, random10[:200], args.seconds / 2)
    failed |= hands_rate < 2_000
    print(
        f"{'complete random hands played out':34} {hands_rate:12,.0f} {naive_rate:10,.0f} "
        f"{hands_rate / naive_rate:7.1f}x {2_000:9,}"
    )
    print(
        "(naive/s: the naive exhaustive arrangement's rate on the same kind of input; for "
        "play-outs, on random 10-card hands)"
    )
    if failed:
        print("below target on this run (the machine is shared: rerun before concluding)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
