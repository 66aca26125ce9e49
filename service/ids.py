"""Opaque resource ids: a type prefix plus a ULID (48-bit milliseconds, 80 random bits).

ULIDs sort by creation time, which keeps B-tree inserts local; the prefix says what an id names
(``op_``, ``ply_``, ``txn_``, ...), so a misplaced id is obvious in a log.
"""

from __future__ import annotations

import secrets
import time

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
#: Every pair of digits, by the ten bits it stands for.
_PAIRS = [high + low for high in _CROCKFORD for low in _CROCKFORD]
#: Where the twelve pairs between the first digit and the last one start, the first first.
_PAIR_SHIFTS = tuple(range(115, 0, -10))

PREFIXES = frozenset(
    {
        "op",
        "key",
        "ply",
        "txn",
        "ent",
        "tbl",
        "mch",
        "hnd",
        "stl",
        "whk",
        "evt",
        "wtx",
        "rnd",
        "trn",
    }
)


def ulid() -> str:
    """A 26-character Crockford base32 ULID."""
    return encode((time.time_ns() // 1_000_000) << 80 | secrets.randbits(80))


def encode(value: int) -> str:
    """``value`` (0 <= value < 2**128) as 26 Crockford base32 digits, the most significant
    first: one digit for the top three bits, twelve pairs of digits (ten bits each, looked up
    whole, which is cheaper than base64.b32encode), one digit for the last five bits."""
    if not 0 <= value < 1 << 128:
        raise ValueError("a ULID holds 128 bits")
    pairs = _PAIRS
    return (
        _CROCKFORD[value >> 125]
        + "".join([pairs[value >> shift & 1023] for shift in _PAIR_SHIFTS])
        + _CROCKFORD[value & 31]
    )


def new_id(prefix: str) -> str:
    """A fresh id such as ``ply_01JDX...``; ``prefix`` must be one of :data:`PREFIXES`."""
    if prefix not in PREFIXES:
        raise ValueError(f"unknown id prefix {prefix!r}")
    return f"{prefix}_{ulid()}"
