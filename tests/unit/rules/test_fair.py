"""Provably fair shuffle (docs/engine.md 10.1-10.3)."""

from __future__ import annotations

import hashlib
import hmac
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from service.games.common import fair
from service.games.common.cards import DECK
from service.games.common.errors import FairnessError

SEED = "00" * 31 + "2a"


def reference_deck(server_seed: str, c1: str, c2: str, nonce: int) -> list[str]:
    """docs/engine.md 10.2 written out again, as plainly as possible, independently of fair.py."""
    key = bytes.fromhex(server_seed)
    stream: list[int] = []
    counter = 0

    def next_byte() -> int:
        nonlocal counter
        if not stream:
            msg = f"{c1}:{c2}:{nonce}:{counter}".encode()
            stream.extend(hmac.new(key, msg, hashlib.sha256).digest())
            counter += 1
        return stream.pop(0)

    suits, ranks = "CDHS", "A23456789TJQK"
    deck = [r + s for s in suits for r in ranks]  # display order 1.4
    for i in range(51, 0, -1):
        n = i + 1
        while True:
            b = next_byte()
            if b < 256 - 256 % n:
                break
        j = b % n
        deck[i], deck[j] = deck[j], deck[i]
    return deck


def test_commitment_is_sha256_of_the_seed_bytes() -> None:
    assert fair.commitment(SEED) == hashlib.sha256(bytes.fromhex(SEED)).hexdigest()


def test_new_seed_is_32_random_bytes() -> None:
    a, b = fair.new_server_seed(), fair.new_server_seed()
    assert len(bytes.fromhex(a)) == 32 and a != b


@given(
    seed=st.binary(min_size=32, max_size=32).map(bytes.hex),
    c1=st.text("abcdef0123456789", min_size=1, max_size=20),
    c2=st.text("xyz-_ABC", min_size=1, max_size=20),
    nonce=st.integers(0, 10_000),
)
def test_deck_matches_the_written_algorithm_and_verifies(
    seed: str, c1: str, c2: str, nonce: int
) -> None:
    deck = fair.shuffled_deck(seed, c1, c2, nonce)
    assert [str(c) for c in deck] == reference_deck(seed, c1, c2, nonce)
    assert sorted(deck) == list(DECK)
    assert fair.shuffled_deck(seed, c1, c2, nonce) == deck  # same seeds, same deck
    commitment = fair.commitment(seed)
    assert fair.verify(commitment, seed, c1, c2, nonce, deck)
    assert fair.verify(commitment.upper(), seed, c1, c2, nonce, [str(c) for c in deck])


def test_verify_rejects_anything_else() -> None:
    deck = fair.shuffled_deck(SEED, "alice", "bob", 1)
    commitment = fair.commitment(SEED)
    other_seed = "11" * 32
    assert not fair.verify(commitment, other_seed, "alice", "bob", 1, deck)
    assert not fair.verify(fair.commitment(other_seed), other_seed, "alice", "bob", 1, deck)
    assert not fair.verify(commitment, SEED, "alice", "bob", 2, deck)
    assert not fair.verify(commitment, SEED, "bob", "alice", 1, deck)
    swapped = list(deck)
    swapped[0], swapped[1] = swapped[1], swapped[0]
    assert not fair.verify(commitment, SEED, "alice", "bob", 1, swapped)
    assert not fair.verify(commitment, SEED, "alice", "bob", 1, deck, algorithm="v0")
    assert not fair.verify(commitment, "not hex", "alice", "bob", 1, deck)


@pytest.mark.parametrize("seed", ["", "zz" * 32, "00" * 31, "00" * 33])
def test_malformed_seeds_are_refused(seed: str) -> None:
    with pytest.raises(FairnessError):
        fair.commitment(seed)


@pytest.mark.parametrize(("c1", "nonce"), [("a:b", 1), ("", 1), ("a", -1), ("a", True)])
def test_malformed_inputs_are_refused(c1: str, nonce: int) -> None:
    with pytest.raises(FairnessError):
        fair.shuffled_deck(SEED, c1, "b", nonce)


def chi_square_critical(df: int, z: float = 3.719) -> float:
    """Wilson-Hilferty approximation of the chi-square quantile (z = 3.719: p = 0.9999)."""
    return df * (1 - 2 / (9 * df) + z * math.sqrt(2 / (9 * df))) ** 3


def position_chi_square(decks: list[list[int]]) -> tuple[float, float]:
    """(whole-table statistic, worst single-card statistic) of card-by-position counts."""
    counts = [[0] * 52 for _ in range(52)]
    for deck in decks:
        for position, card in enumerate(deck):
            counts[card][position] += 1
    expected = len(decks) / 52
    per_card = [sum((n - expected) ** 2 / expected for n in row) for row in counts]
    return sum(per_card), max(per_card)


def modulo_biased_deck(nonce: int) -> list[int]:
    """The shuffle with the rejection step left out: biased towards low j."""
    stream = fair.byte_stream(SEED, "chi", "square", nonce)
    deck = list(range(52))
    for i in range(51, 0, -1):
        j = next(stream) % (i + 1)
        deck[i], deck[j] = deck[j], deck[i]
    return deck


SHUFFLES = 10_400


def test_no_position_bias() -> None:
    """Over many shuffles every card lands in every position about equally often."""
    decks = [
        [c.index for c in fair.shuffled_deck(SEED, "chi", "square", nonce)]
        for nonce in range(SHUFFLES)
    ]
    total, worst = position_chi_square(decks)
    # Whole table: (52 - 1)^2 degrees of freedom; each card's row: 51.
    assert total < chi_square_critical(51 * 51)
    assert worst < chi_square_critical(51, z=4.5)


def test_the_bias_check_catches_a_modulo_biased_shuffle() -> None:
    total, _ = position_chi_square([modulo_biased_deck(n) for n in range(SHUFFLES)])
    assert total > chi_square_critical(51 * 51)


def reference_shuffle(prefix: str, cards: list[str], counter: int) -> tuple[list[str], int]:
    """10.2's Fisher-Yates over the stream ``HMAC(SEED, prefix + counter)`` from ``counter``,
    written out plainly; returns the order and the counter after the last block used."""
    key = bytes.fromhex(SEED)
    pending: list[int] = []
    order = list(cards)
    for i in range(len(order) - 1, 0, -1):
        n = i + 1
        while True:
            if not pending:
                block = hmac.new(key, f"{prefix}{counter}".encode(), hashlib.sha256).digest()
                pending.extend(block)
                counter += 1
            b = pending.pop(0)
            if b < 256 - 256 % n:
                break
        j = b % n
        order[i], order[j] = order[j], order[i]
    return order, counter


def test_10_2_two_seeds_give_the_same_stream_and_deck_as_before() -> None:
    stream = fair.ByteStream(SEED, ("chi", "square"), 3)
    old = fair.byte_stream(SEED, "chi", "square", 3)
    assert [next(stream) for _ in range(100)] == [next(old) for _ in range(100)]
    deck, _ = fair.shuffle(SEED, ("alice", "bob"), 1)
    assert deck == fair.shuffled_deck(SEED, "alice", "bob", 1)
    assert [str(c) for c in deck] == reference_deck(SEED, "alice", "bob", 1)


def test_11_6_4_any_number_of_seeds_joined_by_colons() -> None:
    seeds = ("s0", "s2", "s3", "s5")
    deck, counter = fair.shuffle(SEED, seeds, 7)
    expected, used = reference_shuffle("s0:s2:s3:s5:7:", [str(c) for c in DECK], 0)
    assert [str(c) for c in deck] == expected and counter == used
    assert sorted(deck, key=lambda c: c.index) == list(DECK)
    assert fair.shuffle(SEED, ("s0", "s2", "s3"), 7)[0] != deck


def test_11_3_1_a_later_shuffle_continues_the_stream_with_the_next_counter() -> None:
    _, after_deal = fair.shuffle(SEED, ("a", "b", "c"), 2)
    assert after_deal >= 2  # 51 draws and their rejections need more than one block
    pile = list(DECK[:20])
    order, after = fair.shuffle(SEED, ("a", "b", "c"), 2, pile, counter=after_deal)
    expected, used = reference_shuffle("a:b:c:2:", [str(c) for c in pile], after_deal)
    assert [str(c) for c in order] == expected and after == used > after_deal
    assert order != fair.shuffle(SEED, ("a", "b", "c"), 2, pile)[0]  # not restarted at 0


@pytest.mark.parametrize("seeds", [(), "ab", ("a", "b:c")])
def test_11_6_4_bad_seed_lists_are_refused(seeds: tuple[str, ...]) -> None:
    with pytest.raises(FairnessError):
        fair.shuffle(SEED, seeds, 1)
