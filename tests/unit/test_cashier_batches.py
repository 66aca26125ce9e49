"""service.api.cashier.Batches: requests that arrive while a call runs go in the next one.

The calls here are plain functions that record what they were given; the first one is held
until the other requests are seen waiting, so every batch below is formed on purpose, not by
chance. The database side (``cashier_post_batch()``) is tested in
tests/integration/test_cashier_fast_path.py.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from service.api.cashier import Batches, Params, Row
from tests.conftest import wait_until

TIMEOUT = 10.0


def answer(params: Params) -> Row:
    return ("posted", 201, f"answer to {params[0]}")


class Recorder:
    """``run_one``/``run_many`` for :class:`Batches` that record every call; the first call
    waits for ``release`` (so that others queue behind it)."""

    def __init__(self, fail_many: Exception | None = None,
                 rows: Callable[[Sequence[Params]], list[Row]] | None = None) -> None:
        self.calls: list[list[Any]] = []
        self.release = threading.Event()
        self.started = threading.Event()
        self.fail_many = fail_many
        self.rows = rows or (lambda batch: [answer(p) for p in batch])
        self.lock = threading.Lock()

    def one(self, params: Params) -> Row:
        self._hold([params[0]])
        return answer(params)

    def many(self, batch: Sequence[Params]) -> list[Row]:
        self._hold([p[0] for p in batch])
        if self.fail_many is not None:
            raise self.fail_many
        return self.rows(batch)

    def _hold(self, names: list[Any]) -> None:
        with self.lock:
            first = not self.calls
            self.calls.append(names)
        if first:
            self.started.set()
            assert self.release.wait(TIMEOUT)


def start(batches: Batches, name: str, results: dict[str, Any]) -> threading.Thread:
    """A thread calling ``batches.run((name,))``, its row (or error) put in ``results``."""

    def call() -> None:
        try:
            results[name] = batches.run((name,))
        except Exception as error:
            results[name] = error

    thread = threading.Thread(target=call)
    thread.start()
    return thread


def queue_behind_first(batches: Batches, recorder: Recorder, others: Sequence[str]
                       ) -> dict[str, Any]:
    """``first`` runs alone and is held; ``others`` are started one by one, each seen waiting
    before the next starts (so they queue in this order); then ``first`` is released. Every
    request's row (or error), by name."""
    results: dict[str, Any] = {}
    threads = [start(batches, "first", results)]
    assert recorder.started.wait(TIMEOUT)
    for n, name in enumerate(others, 1):
        threads.append(start(batches, name, results))
        wait_until(lambda n=n: batches.waiting == n, TIMEOUT, f"{n} requests waiting")
    recorder.release.set()
    for thread in threads:
        thread.join(TIMEOUT)
        assert not thread.is_alive()
    return results


def test_a_lone_request_is_run_on_its_own() -> None:
    recorder = Recorder()
    recorder.release.set()
    batches = Batches(recorder.one, recorder.many, limit=16)
    assert batches.run(("a",)) == answer(("a",))
    assert batches.run(("b",)) == answer(("b",))
    assert recorder.calls == [["a"], ["b"]]
    assert batches.waiting == 0


def test_requests_arriving_during_a_call_go_together_in_the_next_in_arrival_order() -> None:
    recorder = Recorder()
    batches = Batches(recorder.one, recorder.many, limit=16)
    results = queue_behind_first(batches, recorder, ["b", "c", "d"])
    assert recorder.calls == [["first"], ["b", "c", "d"]]
    assert {name: results[name] for name in "bcd"} == {name: answer((name,)) for name in "bcd"}
    assert results["first"] == answer(("first",))
    assert batches.waiting == 0


def test_a_batch_never_exceeds_the_limit_and_the_rest_follow() -> None:
    recorder = Recorder()
    batches = Batches(recorder.one, recorder.many, limit=2)
    results = queue_behind_first(batches, recorder, ["b", "c", "d", "e", "f"])
    assert recorder.calls[0] == ["first"]
    later = recorder.calls[1:]
    assert all(1 <= len(call) <= 2 for call in later), later
    assert sorted(name for call in later for name in call) == ["b", "c", "d", "e", "f"]
    assert all(results[name] == answer((name,)) for name in "bcdef")


def test_a_failed_batch_fails_each_of_its_requests_and_the_next_call_runs() -> None:
    recorder = Recorder(fail_many=RuntimeError("connection lost"))
    batches = Batches(recorder.one, recorder.many, limit=16)
    results = queue_behind_first(batches, recorder, ["b", "c"])
    assert results["first"] == answer(("first",))
    assert all(isinstance(results[name], RuntimeError) for name in "bc"), results
    assert batches.run(("after",)) == answer(("after",))  # nothing left running or waiting


def test_a_batch_answered_with_the_wrong_number_of_rows_fails_whole() -> None:
    recorder = Recorder(rows=lambda batch: [answer(p) for p in batch][:-1])
    batches = Batches(recorder.one, recorder.many, limit=16)
    results = queue_behind_first(batches, recorder, ["b", "c"])
    assert all(isinstance(results[name], RuntimeError) for name in "bc"), results
    assert "2 requests" in str(results["b"])


@pytest.mark.parametrize("limit", [1, 3])
def test_many_threads_each_get_their_own_answer(limit: int) -> None:
    seen: list[int] = []
    lock = threading.Lock()

    def one(params: Params) -> Row:
        with lock:
            seen.append(1)
        return answer(params)

    def many(batch: Sequence[Params]) -> list[Row]:
        with lock:
            seen.append(len(batch))
        time.sleep(0.001)  # long enough for others to queue
        return [answer(p) for p in batch]

    batches = Batches(one, many, limit=limit)
    names = [f"r{n}" for n in range(200)]
    results: dict[str, Any] = {}
    threads = [start(batches, name, results) for name in names]
    for thread in threads:
        thread.join(TIMEOUT)
    assert results == {name: answer((name,)) for name in names}
    assert sum(seen) == len(names) and max(seen) <= limit
