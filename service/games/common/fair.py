"""Provably fair shuffling (docs/engine.md 10.1-10.3).

Before a hand the server draws ``server_seed`` (32 bytes from the OS CSPRNG) and publishes
``commitment = SHA-256(server_seed)`` (hex). The deck order is then fixed by:

* a byte stream: ``HMAC-SHA256(key=server_seed, msg=f"{client_seed_1}:{client_seed_2}:"
  f"{nonce}:{counter}")`` for counter = 0, 1, ..., each block giving 32 bytes, used in order;
  at more than two players the client seeds of everyone dealt in, in ascending seat order,
  joined by ``":"`` (11.6.4; :class:`ByteStream`);
* an unbiased Fisher-Yates shuffle of the deck in display order (1.4): for i = 51 down to 1,
  draw j uniformly from 0..i by rejection sampling on single bytes (a byte b is used only
  when b < 256 - 256 % (i + 1), and then j = b % (i + 1); no modulo bias), and swap
  positions i and j.

The result is the deck in deal order (position 1 first), as :meth:`Hand.deal` takes it.
A later shuffle within the same hand (a Rummy SHUFFLE restock, 11.3.1) continues the same
stream with the next counter values: it starts at the block after the last one the previous
shuffle drew from (the unused bytes of that block are skipped); see :func:`shuffle`.
After the hand the seed is revealed and :func:`verify` recomputes commitment and deck.
The algorithm's name, :data:`ALGORITHM`, is recorded with every hand; a future change of
algorithm gets a new name and old hands stay verifiable under theirs.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Iterator, Sequence
from typing import TypeVar

from service.games.common.cards import DECK, Card, parse_cards
from service.games.common.errors import FairnessError

ALGORITHM = "hmac-sha256-fisher-yates-v1"
SEED_BYTES = 32
T = TypeVar("T")


def new_server_seed() -> str:
    """A fresh secret server seed: 32 bytes from the OS CSPRNG, as 64 hex digits."""
    return secrets.token_hex(SEED_BYTES)


def new_client_seed() -> str:
    """A random client seed for a player who supplies none."""
    return secrets.token_hex(16)


def _seed_bytes(server_seed: str) -> bytes:
    try:
        raw = bytes.fromhex(server_seed)
    except (TypeError, ValueError):
        raise FairnessError(f"server seed must be hex, not {server_seed!r}") from None
    if len(raw) != SEED_BYTES:
        raise FairnessError(f"server seed must be {SEED_BYTES} bytes, not {len(raw)}")
    return raw


def commitment(server_seed: str) -> str:
    """SHA-256 of the seed's bytes, as hex: published before the hand.

    :raises FairnessError: when the seed is not 64 hex digits.
    """
    return hashlib.sha256(_seed_bytes(server_seed)).hexdigest()


def _check_client_seed(seed: str) -> str:
    if not isinstance(seed, str) or ":" in seed or not 1 <= len(seed) <= 256:
        raise FairnessError(f"client seed must be 1-256 characters without ':', not {seed!r}")
    return seed


class ByteStream:
    """The HMAC-SHA256 byte stream of 10.2 for any number of client seeds (11.6.4: those of
    the players dealt in, in ascending seat order, joined by ``":"``), from block ``counter``.

    ``counter`` is always the counter of the next block to be drawn, so a later shuffle of the
    same hand (a Rummy restock, 11.3.1) continues the stream with the next counter values:
    ``ByteStream(..., counter=previous.counter)``. With two seeds this is exactly the stream
    of :func:`byte_stream`.

    :raises FairnessError: on a malformed server seed, no client seed or a malformed one.
    """

    __slots__ = ("_block", "_key", "_pos", "_prefix", "counter")

    def __init__(
        self, server_seed: str, client_seeds: Sequence[str], nonce: int, counter: int = 0
    ) -> None:
        if isinstance(client_seeds, str) or not client_seeds:
            raise FairnessError(f"client seeds must be a list of seeds, not {client_seeds!r}")
        self._key = _seed_bytes(server_seed)
        joined = ":".join(_check_client_seed(seed) for seed in client_seeds)
        self._prefix = f"{joined}:{nonce}:"
        self.counter = counter
        self._block = b""
        self._pos = 0

    def __iter__(self) -> ByteStream:
        return self

    def __next__(self) -> int:
        if self._pos == len(self._block):
            message = f"{self._prefix}{self.counter}".encode()
            self._block = hmac.new(self._key, message, hashlib.sha256).digest()
            self.counter += 1
            self._pos = 0
        byte = self._block[self._pos]
        self._pos += 1
        return byte


def byte_stream(
    server_seed: str, client_seed_1: str, client_seed_2: str, nonce: int
) -> Iterator[int]:
    """The endless HMAC-SHA256 byte stream of 10.2 for two client seeds."""
    return ByteStream(server_seed, (client_seed_1, client_seed_2), nonce)


def fisher_yates(cards: Sequence[T], stream: Iterator[int]) -> tuple[T, ...]:
    """The unbiased Fisher-Yates shuffle of 10.2 of ``cards`` (in the order given), drawing
    single bytes from ``stream`` with rejection sampling."""
    order = list(cards)
    for i in range(len(order) - 1, 0, -1):
        n = i + 1
        limit = 256 - 256 % n
        b = next(stream)
        while b >= limit:
            b = next(stream)
        j = b % n
        order[i], order[j] = order[j], order[i]
    return tuple(order)


def _check_nonce(nonce: int, algorithm: str) -> None:
    if algorithm != ALGORITHM:
        raise FairnessError(f"unknown shuffle algorithm {algorithm!r}")
    if not isinstance(nonce, int) or isinstance(nonce, bool) or nonce < 0:
        raise FairnessError(f"nonce must be a non-negative integer, not {nonce!r}")


def shuffle(
    server_seed: str,
    client_seeds: Sequence[str],
    nonce: int,
    cards: Sequence[Card] = DECK,
    *,
    counter: int = 0,
    algorithm: str = ALGORITHM,
) -> tuple[tuple[Card, ...], int]:
    """``cards`` (the deck in display order by default) shuffled by the stream of
    ``client_seeds`` from block ``counter``; returns the order and the counter the stream
    continues at (the block after the last one drawn).

    :raises FairnessError: on a malformed seed, a negative nonce or an unknown algorithm.
    """
    _check_nonce(nonce, algorithm)
    stream = ByteStream(server_seed, client_seeds, nonce, counter)
    return fisher_yates(cards, stream), stream.counter


def shuffled_deck(
    server_seed: str,
    client_seed_1: str,
    client_seed_2: str,
    nonce: int,
    algorithm: str = ALGORITHM,
) -> tuple[Card, ...]:
    """The deck order (deal order) derived from the seeds and the hand's nonce.

    :raises FairnessError: on a malformed seed, a negative nonce or an unknown algorithm.
    """
    deck, _ = shuffle(server_seed, (client_seed_1, client_seed_2), nonce, algorithm=algorithm)
    return deck


def verify(
    commitment_hex: str,
    server_seed: str,
    client_seed_1: str,
    client_seed_2: str,
    nonce: int,
    deck: Sequence[Card | str] | str,
    algorithm: str = ALGORITHM,
) -> bool:
    """True when the revealed seed matches the commitment and produces exactly ``deck``."""
    try:
        if not hmac.compare_digest(commitment(server_seed), str(commitment_hex).lower()):
            return False
        expected = shuffled_deck(server_seed, client_seed_1, client_seed_2, nonce, algorithm)
        return tuple(parse_cards(deck)) == expected
    except ValueError:  # FairnessError and malformed cards alike
        return False
