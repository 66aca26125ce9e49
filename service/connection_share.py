"""Keep-alive connections spread evenly over gunicorn's threaded workers.

A keep-alive connection stays with the worker that accepted it, and the CPU is shared per
worker process (a worker's threads take turns on one interpreter lock), so a client whose
connection landed on a crowded worker waits longer than one alone on its worker:
``bench/play.py`` with 16 clients on 5 workers saw the clients' latencies split by worker
(docs/performance.md).

Each worker publishes how many connections it holds in a table shared by all of them (shared
memory the master maps before it forks, one slot per live worker, handed out and taken back
by the master). A worker holding more than its fair share, the total over the live workers
rounded up, answers its next request with ``Connection: close``; the client reconnects, and
the connection goes to whichever worker accepts it first (a crowded one is the least likely
to). Counts are published as requests arrive, so a worker's figure may be a little old; an old
figure can only be too high, which makes the others shed less, never more.

Used by ``deploy/gunicorn.conf.py`` (``GUNICORN_BALANCE``, on by default). Only threaded
(gthread) workers hold several connections; other worker classes are left alone.
"""

from __future__ import annotations

import ctypes
import math
import multiprocessing
from typing import Any

FREE = -1  # a slot no live worker holds


class ConnectionTable:
    """Connection counts of the live workers, in memory shared across ``fork``."""

    def __init__(self, slots: int = 256) -> None:
        self._counts = multiprocessing.RawArray(ctypes.c_long, [FREE] * slots)
        self._high = multiprocessing.RawValue(ctypes.c_long, 0)  # slots ever handed out

    def claim(self) -> int | None:
        """(Master.) The lowest free slot, now counting no connections; ``None`` when all
        are taken (that worker then never sheds, nor counts in the others' shares)."""
        counts = self._counts
        for slot in range(len(counts)):
            if counts[slot] == FREE:
                counts[slot] = 0
                self._high.value = max(self._high.value, slot + 1)
                return slot
        return None

    def release(self, slot: int | None) -> None:
        """(Master.) A worker exited: its slot and its connections no longer count."""
        if slot is not None:
            self._counts[slot] = FREE

    def publish(self, slot: int, connections: int) -> None:
        """(Worker.) How many connections this worker holds now."""
        self._counts[slot] = connections

    def fair_share(self) -> int:
        """The connections per live worker, rounded up (0 with no live worker)."""
        live = [c for c in self._counts[: self._high.value] if c != FREE]
        return math.ceil(sum(live) / len(live)) if live else 0

    def over_share(self, slot: int, connections: int) -> bool:
        """(Worker.) Publishes ``connections`` and says whether they exceed the fair share."""
        self.publish(slot, connections)
        return connections > self.fair_share()


SEAT = "gin_balance"  # the attribute holding a worker's (table, slot)


def assign(table: ConnectionTable, worker: Any) -> None:
    """(Master, gunicorn's ``pre_fork``.) Gives the worker about to be forked its slot."""
    setattr(worker, SEAT, (table, table.claim()))


def retire(table: ConnectionTable, worker: Any) -> None:
    """(Master, gunicorn's ``child_exit``.) Frees an exited worker's slot. A worker forked
    before a configuration reload (SIGHUP makes a new table) has its slot in the old table,
    which is left alone."""
    seat = getattr(worker, SEAT, None)
    if seat is not None and seat[0] is table:
        table.release(seat[1])


def before_request(worker: Any, request: Any) -> None:
    """(Worker, gunicorn's ``pre_request``.) Asks for ``Connection: close`` on the answer to
    ``request`` when this worker holds more than its fair share of connections."""
    table, slot = getattr(worker, SEAT, (None, None))
    connections = getattr(worker, "nr_conns", None)  # gthread workers only
    if table is None or slot is None or connections is None:
        return
    if tuple(getattr(request, "version", (1, 1))) >= (2, 0):
        return  # an HTTP/2 connection carries many streams at once: not one to close
    if table.over_share(slot, connections):
        request.must_close = True
