"""The fair shuffle of a Rummy hand (10.2, 11.3.1, 11.6.4): its deal and its SHUFFLE restocks.

One HMAC-SHA256 byte stream per hand (:class:`service.games.common.fair.ByteStream`), keyed with the
hand's server seed over the client seeds of the players dealt in (ascending seat order,
joined by ``":"``), the hand's number in the match as nonce. The deal is the Fisher-Yates
shuffle of the deck in display order from counter 0; each SHUFFLE restock shuffles the
discard pile's cards, put in display order first (so the result does not depend on how the
pile is listed), continuing the same stream: from the block after the last one the deal or
the previous restock drew from.

Which counter a restock starts at depends only on the sizes of the piles restocked before
it, which the hand's log records. :class:`FairShuffle` is therefore stateless: the hand asks
it for the shuffler after its earlier restocks (:meth:`FairShuffle.at`) each time it
restocks, so a hand restored from its stored state, or an action applied twice to the same
immutable hand, shuffles exactly as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from service.games.common import fair
from service.games.common.cards import DECK, Card


@dataclass(frozen=True, slots=True)
class FairShuffle:
    """A Rummy hand's fair shuffle; ``earlier`` are the sizes of the piles already restocked.

    Called with a discard pile, it returns the new stock (top card first) of the next
    restock; :attr:`deck` is the deal's deck.
    """

    server_seed: str
    client_seeds: tuple[str, ...]
    nonce: int
    earlier: tuple[int, ...] = ()

    def _shuffle(self, cards: Sequence[Card], counter: int) -> tuple[tuple[Card, ...], int]:
        return fair.shuffle(self.server_seed, self.client_seeds, self.nonce, cards, counter=counter)

    @property
    def deck(self) -> tuple[Card, ...]:
        """The deal: the deck in deal order (the first card dealt first)."""
        deck, _ = self._shuffle(DECK, 0)
        return deck

    @property
    def counter(self) -> int:
        """The stream's counter the next restock starts at."""
        _, counter = self._shuffle(DECK, 0)
        for size in self.earlier:
            _, counter = self._shuffle(DECK[:size], counter)  # consumption depends on size only
        return counter

    def at(self, earlier: Sequence[int]) -> FairShuffle:
        """The shuffle for the restock after restocks of piles of these sizes."""
        return FairShuffle(self.server_seed, self.client_seeds, self.nonce, tuple(earlier))

    def __call__(self, cards: list[Card]) -> tuple[Card, ...]:
        pile = sorted(cards, key=lambda card: card.index)
        order, _ = self._shuffle(pile, self.counter)
        return order


def fair_shuffle(server_seed: str, client_seeds: Sequence[str], nonce: int) -> FairShuffle:
    """The fair shuffle of one Rummy hand: ``client_seeds`` of the players dealt in, in
    ascending seat order; ``nonce`` the hand's number in the match. Deal ``shuffle.deck`` and
    pass the shuffle as the hand's ``shuffler`` (:meth:`RummyHand.deal`,
    :meth:`RummyHand.from_dict`).

    :raises FairnessError: on a malformed seed or nonce.
    """
    shuffle = FairShuffle(server_seed, tuple(client_seeds), nonce)
    shuffle.deck  # noqa: B018 - refuse bad seeds now rather than at the first restock
    return shuffle
