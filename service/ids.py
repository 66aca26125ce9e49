"""Opaque resource ids: a type prefix plus a ULID (48-bit milliseconds, 80 random bits).

ULIDs sort by creation time, which keeps B-tree inserts local; the prefix says what an id names
(``op_``, ``ply_``, ``txn_``, ...), so a misplaced id is obvious in a log.
"""

from __future__ import annotations

import secrets
import time

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

PREFIXES = frozenset({"op", "key", "ply", "txn", "ent", "tbl", "mch", "hnd", "stl", "whk", "evt"})


def ulid() -> str:
    """A 26-character Crockford base32 ULID."""
    value = (time.time_ns() // 1_000_000) << 80 | secrets.randbits(80)
    chars = []
    for _ in range(26):
        chars.append(_CROCKFORD[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def new_id(prefix: str) -> str:
    """A fresh id such as ``ply_01JDX...``; ``prefix`` must be one of :data:`PREFIXES`."""
    if prefix not in PREFIXES:
        raise ValueError(f"unknown id prefix {prefix!r}")
    return f"{prefix}_{ulid()}"
