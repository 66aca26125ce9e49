"""Decoded match states kept per process, by database: an adapter the match use cases read
through (:func:`decoded_states`), set up by the app (:func:`keep_decoded_states`)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any
from weakref import WeakKeyDictionary

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from service.games import AnyMatch

#: How many matches' decoded states a process keeps per database, unless the app sets it
#: (``MATCH_STATES_KEPT``); docs/performance.md gives a decoded state's size.
DECODED_STATES = 1024


class DecodedStates:
    """The decoded states of recently used matches: match id -> (version, decoded match).

    A match's state is its row's largest column, and decoding it (JSON, then the engine's
    objects) was a large part of a request's CPU. A read names the version whose state this
    process holds, and while the row is still at that version the database leaves the state
    out of its answer and the decoded one serves. That is safe because every change to a
    match's state gives it a new version (``service.usecases.play``) and only committed states
    are kept: ones read outside a transaction, and ones written by a statement that committed. Kept
    matches are never changed (an action plays on a copy), so threads share them. The least
    recently used go first. Nothing depends on a state being here: any process serves any
    request."""

    def __init__(
        self, size: int = DECODED_STATES, on_read: Callable[[bool], None] | None = None
    ) -> None:
        self._size = size
        self._lock = threading.Lock()
        self._items: OrderedDict[str, tuple[int, AnyMatch]] = OrderedDict()
        #: Told of each read of a started match: ``True`` when its state was kept here,
        #: ``False`` when it was fetched (the API counts them: ``gin_match_state_reads``).
        self.on_read = on_read

    def get(self, match_id: str) -> tuple[int, AnyMatch] | None:
        with self._lock:
            found = self._items.get(match_id)
            if found is not None:
                self._items.move_to_end(match_id)
            return found

    def put(self, match_id: str, version: int, match: AnyMatch) -> None:
        if self._size <= 0:
            return
        with self._lock:
            self._items[match_id] = (version, match)
            self._items.move_to_end(match_id)
            while len(self._items) > self._size:
                self._items.popitem(last=False)


_DECODED: WeakKeyDictionary[Any, DecodedStates] = WeakKeyDictionary()
_DECODED_LOCK = threading.Lock()


def decoded_states(session: Session) -> DecodedStates:
    """The states kept for the database ``session`` is bound to."""
    bind = session.get_bind()
    found = _DECODED.get(bind)
    if found is None:
        with _DECODED_LOCK:
            found = _DECODED.setdefault(bind, DecodedStates())
    return found


def keep_decoded_states(
    engine: Engine, size: int, on_read: Callable[[bool], None] | None = None
) -> None:
    """Keep up to ``size`` decoded states for ``engine``'s database (0: none); ``on_read``
    is told of each read whether the state was kept (see :class:`DecodedStates`)."""
    with _DECODED_LOCK:
        _DECODED[engine] = DecodedStates(size, on_read)
