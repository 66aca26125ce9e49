"""Opaque resource ids: a type prefix plus a ULID (48-bit milliseconds, 80 random bits).

ULIDs sort by creation time, which keeps B-tree inserts local; the prefix says what an id names
(``op_``, ``ply_``, ``txn_``, ...), so a misplaced id is obvious in a log.
"""

from __future__ import annotations

import base64
import secrets
import time

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
#: RFC 4648 base32 digits to the Crockford digits of the same value.
_FROM_BASE32 = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", _CROCKFORD.encode())

PREFIXES = frozenset({"op", "key", "ply", "txn", "ent", "tbl", "mch", "hnd", "stl", "whk", "evt"})


def ulid() -> str:
    """A 26-character Crockford base32 ULID."""
    return encode((time.time_ns() // 1_000_000) << 80 | secrets.randbits(80))


def encode(value: int) -> str:
    """``value`` (0 <= value < 2**128) as 26 Crockford base32 digits, the most significant
    first: the last 26 of the 32 base32 digits of its 20 big-endian bytes (130 bits)."""
    return base64.b32encode(value.to_bytes(20, "big")).translate(_FROM_BASE32)[6:].decode()


def new_id(prefix: str) -> str:
    """A fresh id such as ``ply_01JDX...``; ``prefix`` must be one of :data:`PREFIXES`."""
    if prefix not in PREFIXES:
        raise ValueError(f"unknown id prefix {prefix!r}")
    return f"{prefix}_{ulid()}"
