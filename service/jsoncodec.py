"""JSON encoding for responses and stored documents: orjson where it gives the same document,
the standard library where it would not.

orjson writes the same JSON values as ``json.dumps`` several times faster (a match's stored
state and its view are encoded on every action). Where the two would differ it is not used:
an integer beyond 64 bits, which orjson refuses, is encoded by the standard library exactly as
before. Decoding (:func:`loads`, for the documents we stored) is orjson's too, except for a
document with a run of 19 or more digits anywhere: orjson would read an integer beyond 64 bits
as a float, and money must never pass through a float, so such a document is read by the
standard library. Request bodies are always read by the standard library, strictly
(:func:`loads_request`).

Differences that remain, none of which changes a value: no spaces after separators, and
non-ASCII characters written as UTF-8 rather than as ``\\u`` escapes.
"""

from __future__ import annotations

import json
import math
import re
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


# --- Request bodies ------------------------------------------------------------------------


class RequestJSONError(ValueError):
    """Raised when a request body is not JSON the service reads; ``path`` names the place
    (keys and list indices joined by dots, ``(body)`` for the whole body)."""

    def __init__(self, message: str, path: str = "(body)") -> None:
        super().__init__(message)
        self.message = message
        self.path = path


class NotJSON(RequestJSONError):
    """Raised when a body is not UTF-8 JSON text (RFC 8259): bad syntax or encoding, a
    ``NaN``, ``Infinity`` or a number beyond a float's range, or nesting deeper than the
    parser goes."""


class DuplicateKey(RequestJSONError):
    """Raised when an object in a body names the same key twice (which one would count is
    anybody's guess, so neither does)."""


class NotText(RequestJSONError):
    """Raised when a string in a body (a value or a key) holds a NUL character or a lone
    UTF-16 surrogate (``"\\ud800"``): no text at all, which PostgreSQL cannot store."""


class _Repeated(dict[str, Any]):
    """An object of a body that named ``key`` more than once (found by :func:`_check`)."""

    def __init__(self, pairs: list[tuple[str, Any]]) -> None:
        super().__init__(pairs)
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                self.key = key
                break
            seen.add(key)


def _no_constant(name: str) -> Any:
    raise NotJSON(f"{name} is not a JSON number.")


def _finite(text: str) -> float:
    number = float(text)
    if math.isinf(number):
        raise NotJSON(
            f"The number {text if len(text) <= 20 else text[:20] + '...'} is beyond "
            "the range of a float."
        )
    return number


#: What only an escape can put in a decoded string: strict UTF-8 decoding refuses encoded
#: surrogates, and JSON refuses raw control characters. (A false alarm, an escaped backslash
#: before such text, costs one walk over the value.)
_SUSPECT_ESCAPE = re.compile(r"\\u(?:0000|[dD][89a-fA-F])")
_NOT_TEXT = re.compile("[\x00\ud800-\udfff]")


def loads_request(data: bytes | str) -> Any:
    """The value of a request body, read strictly: UTF-8 JSON text (RFC 8259), no key
    repeated within an object, and every string (values and keys) text without NUL
    characters or lone surrogates.

    :raises NotJSON: when ``data`` is not such a JSON document.
    :raises DuplicateKey: when an object names a key twice; ``path`` is its place.
    :raises NotText: when a string is not text; ``path`` is its place.
    """
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise NotJSON(f"The body is not UTF-8 text (byte {exc.start}).") from None
    else:
        text = data
    repeated = False

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal repeated
        found = dict(items)
        if len(found) == len(items):
            return found
        repeated = True
        return _Repeated(items)

    try:
        value = json.loads(
            text, object_pairs_hook=pairs, parse_constant=_no_constant, parse_float=_finite
        )
    except json.JSONDecodeError as exc:
        raise NotJSON(
            f"The body is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})."
        ) from None
    except RecursionError:
        raise NotJSON("The body is nested too deeply.") from None
    except RequestJSONError:
        raise
    except ValueError as exc:  # an integer longer than Python converts, for one
        raise NotJSON(f"The body is not valid JSON: {exc}.") from None
    suspect_text = "\\" in text and _SUSPECT_ESCAPE.search(text) is not None
    if repeated or suspect_text:
        _check(value, suspect_text=suspect_text)
    return value


def _shown(key: str) -> str:
    return _NOT_TEXT.sub("\ufffd", key)


def _check(value: Any, *, suspect_text: bool) -> None:
    """Walk ``value`` (without recursion: it may be nested as deep as the parser went) for
    repeated keys and, when ``suspect_text``, strings that are not text."""
    pending: list[tuple[Any, str]] = [(value, "")]
    while pending:
        item, path = pending.pop()
        if isinstance(item, dict):
            if isinstance(item, _Repeated):
                raise DuplicateKey(
                    f"The key {_shown(item.key)!r} appears more than once.",
                    _join(path, _shown(item.key)),
                )
            for key, inner in item.items():
                place = _join(path, _shown(key))
                if suspect_text and _NOT_TEXT.search(key):
                    raise NotText("A key holds a NUL character or a lone surrogate.", place)
                pending.append((inner, place))
        elif isinstance(item, list):
            pending.extend((inner, _join(path, str(i))) for i, inner in enumerate(item))
        elif suspect_text and isinstance(item, str) and _NOT_TEXT.search(item):
            raise NotText(
                "Text may not hold NUL characters or lone UTF-16 surrogates.", path or "(body)"
            )


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name
