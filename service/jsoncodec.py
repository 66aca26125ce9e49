"""JSON encoding for responses and stored documents: orjson where it gives the same document,
the standard library where it would not.

orjson writes the same JSON values as ``json.dumps`` several times faster (a match's stored
state and its view are encoded on every action). Where the two would differ it is not used:
an integer beyond 64 bits, which orjson refuses, is encoded by the standard library exactly as
before. Decoding stays with the standard library: orjson reads such an integer as a float, and
money must never pass through a float.

Differences that remain, none of which changes a value: no spaces after separators, and
non-ASCII characters written as UTF-8 rather than as ``\\u`` escapes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import orjson

# {1: x} -> {"1": x}, as json.dumps does; datetimes and dataclasses go to ``default`` as they
# would with json.dumps (Flask's default, for instance, writes datetimes as HTTP dates).
_OPTIONS = (
    orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
)


def dumps_bytes(obj: Any, default: Callable[[Any], Any] | None = None) -> bytes:
    """``obj`` as UTF-8 JSON; ``default`` converts what JSON has no type for (as in
    ``json.dumps``), and TypeError is raised for what it cannot convert."""
    try:
        return orjson.dumps(obj, default=default, option=_OPTIONS)
    except TypeError:  # orjson's JSONEncodeError: a big integer, or a type nothing converts
        return json.dumps(obj, default=default, separators=(",", ":")).encode()


def dumps(obj: Any) -> str:
    """``obj`` as a JSON string (see :func:`dumps_bytes`)."""
    return dumps_bytes(obj).decode()
