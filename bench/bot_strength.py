"""Practice-bot strength: the bot against a random legal player and a greedy player.

Run: ``.venv/bin/python bench/bot_strength.py [--hands 2000]``. Each pairing plays the given
number of complete hands (default rules, dealers alternating, the same decks for both sides
of a pairing) and prints hands won, points won per hand and the bot's share of all points.
The random-vs-random and greedy-vs-random pairings in the same run are the baselines.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable
from typing import Any

from service.games.common.cards import random_deck
from service.games.gin.bot import Bot, greedy_action, random_action
from service.games.gin.hand import Hand
from service.games.gin.ruleset import Ruleset

Policy = Callable[[dict[str, Any]], dict[str, Any]]  # a legal action, as the view lists it


def play_hand(deck: list[Any], dealer: int, players: tuple[Policy, Policy]) -> tuple[int, int]:
    """Points won by seat 0 and seat 1 in one hand (0, 0 for a dead hand)."""
    hand = Hand.deal(deck, dealer, Ruleset())
    while not hand.ended:
        seat = hand.to_act
        hand.apply(seat, players[seat](hand.view(seat)))
    out = hand.outcome
    assert out is not None
    points = [0, 0]
    if out.winner is not None:
        points[out.winner] = out.points
    return points[0], points[1]


def pairing(name: str, bot: Policy, other: Policy, hands: int, seed: int) -> dict[str, float]:
    rng = random.Random(seed)
    won = [0, 0]
    points = [0, 0]
    dead = 0
    start = time.perf_counter()
    for i in range(hands):
        deck = random_deck(rng)
        # The bot sits in seat i % 2, so both seats and both dealer roles are played.
        bot_seat = i % 2
        players = (bot, other) if bot_seat == 0 else (other, bot)
        p = play_hand(deck, (i // 2) % 2, players)
        mine, theirs = p[bot_seat], p[1 - bot_seat]
        if mine:
            won[0] += 1
        elif theirs:
            won[1] += 1
        else:
            dead += 1
        points[0] += mine
        points[1] += theirs
    elapsed = time.perf_counter() - start
    share = points[0] / max(1, points[0] + points[1])
    print(
        f"{name:26} hands won {won[0]:5} vs {won[1]:5} (dead {dead:4})  points/hand "
        f"{points[0] / hands:6.2f} vs {points[1] / hands:6.2f}  share {share:6.1%}  "
        f"({hands / elapsed:,.0f} hands/s)"
    )
    return {"share": share, "margin": (points[0] - points[1]) / hands}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hands", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    bot = Bot().decide

    def rand(view: dict[str, Any]) -> str:
        return random_action(view, rng)

    base = pairing("random vs random", rand, rand, args.hands, args.seed)
    vs_random = pairing("bot vs random", bot, rand, args.hands, args.seed)
    vs_greedy = pairing("bot vs greedy", bot, greedy_action, args.hands, args.seed)
    greedy_random = pairing("greedy vs random", greedy_action, rand, args.hands, args.seed)
    print(
        f"bot margin over random {vs_random['margin']:+.2f} points/hand (greedy over random "
        f"{greedy_random['margin']:+.2f}, random over random {base['margin']:+.2f}); bot margin "
        f"over greedy {vs_greedy['margin']:+.2f} points/hand, bot share of points vs greedy "
        f"{vs_greedy['share']:.1%} (50% = even)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
