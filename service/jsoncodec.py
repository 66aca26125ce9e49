"""JSON encoding for responses and stored documents: orjson where it gives the same document,
the standard library where it would not.

orjson writes the same JSON values as ``json.dumps`` several times faster (a match's stored
state and its view are encoded on every action). Where the two would differ it is not used:
an integer beyond 64 bits, which orjson refuses, is encoded by the standard library exactly as
before. Decoding (:func:`loads`, for the documents we stored) is orjson's too, except for a
document with a run of 19 or more digits anywhere: orjson would read an integer beyond 64 bits
as a float, and money must never pass through a float, so such a document is read by the
standard library. Request bodies are always read by the standard library.

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


# Every ASCII digit to "0", every other byte to " ": a run of 19 digits is then a plain
# substring search. (A regular expression scanning for it took five times as long as orjson
# takes to parse the whole document.)
_DIGITS_AS_ZEROS = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
_LONG_RUN = b"0" * 19


def has_long_digit_run(data: bytes | str) -> bool:
    """Whether ``data`` has 19 or more ASCII digits in a row (a number orjson might read as a
    float; a string of digits gives a false alarm, which costs only speed)."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    return _LONG_RUN in data.translate(_DIGITS_AS_ZEROS)


def loads(data: bytes | str) -> Any:
    """The value of a JSON document (see the module docstring for which parser reads it)."""
    if not has_long_digit_run(data):
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:  # NaN, Infinity or a lone surrogate: what the
            pass  # standard library accepts (and wrote, before this module), it reads
    return json.loads(data)
