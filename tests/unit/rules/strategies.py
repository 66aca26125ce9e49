"""Hypothesis strategies for Gin Rummy hands (plain card codes, see ``reference.py``)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from tests.unit.rules.reference import ALL_CODES, RANKS, SUITS, rank, suit

LOW_CARDS = tuple(c for c in ALL_CODES if rank(c) <= 5)


def random_hand(min_size: int = 2, max_size: int = 11) -> st.SearchStrategy[list[str]]:
    """Distinct cards drawn uniformly from the whole deck."""
    return st.lists(st.sampled_from(ALL_CODES), min_size=min_size, max_size=max_size, unique=True)


@st.composite
def meld_dense_hand(draw: Any, min_size: int = 2, max_size: int = 11) -> list[str]:
    """Distinct cards drawn mostly from a few (often adjacent) ranks and suits, so melds abound."""
    if draw(st.booleans()):
        low = draw(st.integers(1, 11))
        ranks = set(range(low, min(low + draw(st.integers(3, 5)), 14)))
    else:
        ranks = draw(st.sets(st.integers(1, 13), min_size=2, max_size=4))
    suits = draw(st.sets(st.sampled_from(SUITS), min_size=2, max_size=4))
    pool = [c for c in ALL_CODES if rank(c) in ranks and suit(c) in suits]
    size = draw(st.integers(min_size, max_size))
    core = draw(
        st.lists(
            st.sampled_from(pool),
            min_size=min(size, len(pool)) // 2,
            max_size=min(size, len(pool)),
            unique=True,
        )
    )
    rest = [c for c in ALL_CODES if c not in core]
    extra = draw(
        st.lists(
            st.sampled_from(rest), min_size=size - len(core), max_size=size - len(core), unique=True
        )
    )
    return core + extra


def any_hand(min_size: int = 2, max_size: int = 11) -> st.SearchStrategy[list[str]]:
    return st.one_of(random_hand(min_size, max_size), meld_dense_hand(min_size, max_size))


def _set_meld(r: int, suits: list[str]) -> set[str]:
    return {RANKS[r - 1] + s for s in suits}


def _run_meld(s: str, low: int, length: int) -> set[str]:
    return {RANKS[r - 1] + s for r in range(low, low + length)}


@st.composite
def built_hand(
    draw: Any, size: int = 10, exclude: tuple[str, ...] = (), max_melds: int = 3
) -> list[str]:
    """``size`` cards built from melds plus mostly-low filler, avoiding ``exclude``.

    Includes 3x3 grids (three runs == three sets), where the 2.8.3 tie-break matters.
    """
    hand: set[str] = set()
    banned = set(exclude)
    if draw(st.integers(0, 3)) == 0:
        low = draw(st.integers(1, 11))
        suits = draw(st.permutations(SUITS))[:3]
        hand = {RANKS[r - 1] + s for r in range(low, low + 3) for s in suits} - banned
    else:
        for _ in range(draw(st.integers(1, max_melds))):
            if draw(st.booleans()):
                meld = _set_meld(
                    draw(st.integers(1, 13)),
                    sorted(draw(st.sets(st.sampled_from(SUITS), min_size=3, max_size=4))),
                )
            else:
                low = draw(st.integers(1, 11))
                length = draw(st.integers(3, min(5, 14 - low)))
                meld = _run_meld(draw(st.sampled_from(SUITS)), low, length)
            if not (meld & (hand | banned)) and len(hand | meld) <= size:
                hand |= meld
    missing = size - len(hand)
    low_pool = [c for c in LOW_CARDS if c not in hand | banned]
    n_low = draw(st.integers(0, min(missing, len(low_pool))))
    hand |= set(
        draw(st.lists(st.sampled_from(low_pool), min_size=n_low, max_size=n_low, unique=True))
    )
    rest = [c for c in ALL_CODES if c not in hand | banned]
    missing = size - len(hand)
    hand |= set(
        draw(st.lists(st.sampled_from(rest), min_size=missing, max_size=missing, unique=True))
    )
    return sorted(hand, key=ALL_CODES.index)


def knocker_hand(size: int = 10) -> st.SearchStrategy[list[str]]:
    return built_hand(size)


def neighbours(cards: list[str], same_rank: bool = True, reach: int = 2) -> list[str]:
    """Cards not in ``cards`` sharing a rank with one (if ``same_rank``), or within ``reach``
    ranks of one in its suit."""
    near = set()
    for c in cards:
        if same_rank:
            near |= {RANKS[rank(c) - 1] + s for s in SUITS}
        for d in range(-reach, reach + 1):
            if 1 <= rank(c) + d <= 13:
                near.add(RANKS[rank(c) + d - 1] + suit(c))
    return sorted(near - set(cards), key=ALL_CODES.index)


@st.composite
def defender_hand(draw: Any, knocker: list[str], size: int = 10) -> list[str]:
    """``size`` cards disjoint from ``knocker``: either built from its own melds, or many of
    them able to lay off on (or meld near) the knocker's cards, or to chain along its runs."""
    mode = draw(st.sampled_from(["built", "near", "chain"]))
    if mode == "built":
        return draw(built_hand(size, tuple(knocker), max_melds=5))
    chain = mode == "chain"
    near = neighbours(knocker, same_rank=not chain, reach=3 if chain else 2)
    core = draw(st.lists(st.sampled_from(near), max_size=min(size, len(near)), unique=True))
    rest = [c for c in ALL_CODES if c not in core and c not in knocker]
    extra = draw(
        st.lists(
            st.sampled_from(rest), min_size=size - len(core), max_size=size - len(core), unique=True
        )
    )
    return core + extra


@st.composite
def ruleset_options(
    draw: Any, knocker: list[str], defender: list[str]
) -> tuple[dict[str, Any], Any]:
    """Random Appendix A overrides and (for Oklahoma) an upcard not in either hand."""
    options: dict[str, Any] = {}
    if draw(st.booleans()):
        options["gin_bonus"] = draw(st.sampled_from([25, 20, 0]))
    if draw(st.booleans()):
        options["undercut_bonus"] = draw(st.sampled_from([25, 20, 10]))
    if draw(st.integers(0, 3)) == 0:
        options["knock_limit"] = draw(st.integers(0, 10))
    upcard = None
    if draw(st.booleans()):
        options["oklahoma"] = True
        options["ace_requires_gin"] = draw(st.booleans())
        options["spade_doubles"] = draw(st.booleans())
        upcard = draw(st.sampled_from([c for c in ALL_CODES if c not in knocker + defender]))
    return options, upcard


@st.composite
def runs_with_extensions(draw: Any) -> tuple[list[list[str]], list[str]]:
    """Knocker melds (mostly runs) and 10 defender cards that often extend them in chains."""
    melds: list[list[str]] = []
    used: set[str] = set()
    for _ in range(draw(st.integers(1, 3))):
        if draw(st.integers(0, 3)) == 0:
            meld = _set_meld(
                draw(st.integers(1, 13)), draw(st.permutations(SUITS))[: draw(st.integers(3, 4))]
            )
        else:
            low = draw(st.integers(1, 11))
            meld = _run_meld(draw(st.sampled_from(SUITS)), low, draw(st.integers(3, 14 - low)))
        if not meld & used:
            melds.append(sorted(meld, key=ALL_CODES.index))
            used |= meld
    chains: set[str] = set()
    for meld in melds:
        if len({rank(c) for c in meld}) == 1:
            continue
        ranks = sorted(rank(c) for c in meld)
        s = suit(meld[0])
        down = draw(st.integers(0, 3))
        up = draw(st.integers(0, 3))
        chains |= {RANKS[r - 1] + s for r in range(ranks[0] - down, ranks[0]) if r >= 1}
        chains |= {RANKS[r - 1] + s for r in range(ranks[-1] + 1, ranks[-1] + 1 + up) if r <= 13}
    chains -= used
    core = sorted(chains, key=ALL_CODES.index)[:10]
    # sometimes drop one link so a later card can only connect through a missing one
    if core and draw(st.booleans()):
        core.remove(draw(st.sampled_from(core)))
    rest = [c for c in ALL_CODES if c not in used and c not in core]
    missing = 10 - len(core)
    extra = draw(st.lists(st.sampled_from(rest), min_size=missing, max_size=missing, unique=True))
    return melds, core + extra


@st.composite
def all_melded_eleven(draw: Any) -> list[str]:
    """Eleven cards that split exactly into melds (a big-gin candidate)."""
    sizes = draw(st.sampled_from([(3, 4, 4), (3, 3, 5), (4, 7), (5, 6), (3, 8), (11,)]))
    hand: set[str] = set()
    free_suits = list(draw(st.permutations(SUITS)))
    for size in sizes:
        if size <= 4 and draw(st.booleans()):
            candidates = [
                r for r in range(1, 14) if len({RANKS[r - 1] + s for s in SUITS} - hand) >= size
            ]
            r = draw(st.sampled_from(candidates))
            pool = sorted({RANKS[r - 1] + s for s in SUITS} - hand)
            hand |= set(draw(st.permutations(pool))[:size])
        else:
            s = free_suits.pop() if free_suits else draw(st.sampled_from(SUITS))
            low = draw(st.integers(1, 14 - size))
            meld = _run_meld(s, low, size)
            if meld & hand:
                return draw(built_hand(11))
            hand |= meld
    return sorted(hand, key=ALL_CODES.index)
