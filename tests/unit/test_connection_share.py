"""service.connection_share: each worker's fair share of the keep-alive connections."""

from __future__ import annotations

import os
from types import SimpleNamespace

from service.connection_share import ConnectionTable, assign, before_request, retire


def _workers(table: ConnectionTable, counts: list[int]) -> list[SimpleNamespace]:
    workers = []
    for count in counts:
        worker = SimpleNamespace(nr_conns=count)
        assign(table, worker)
        table.publish(worker.gin_balance[1], count)
        workers.append(worker)
    return workers


def _closes(
    table: ConnectionTable, worker: SimpleNamespace, version: tuple[int, int] = (1, 1)
) -> bool:
    request = SimpleNamespace(must_close=False, version=version)
    before_request(worker, request)
    return request.must_close


def test_a_worker_above_its_fair_share_closes_after_the_answer() -> None:
    table = ConnectionTable(8)
    crowded, even, idle = _workers(table, [5, 3, 1])  # 9 over 3: 3 each
    assert table.fair_share() == 3
    assert _closes(table, crowded)
    assert _closes(table, crowded, version=(1, 0))
    assert not _closes(table, crowded, version=(2, 0))  # HTTP/2: many streams, one connection
    assert not _closes(table, even)
    assert not _closes(table, idle)


def test_the_share_is_rounded_up_so_an_uneven_total_sheds_nothing() -> None:
    table = ConnectionTable(8)
    workers = _workers(table, [4, 3, 3, 3, 3])  # 16 over 5: 3.2, up to 4
    assert table.fair_share() == 4
    assert not any(_closes(table, w) for w in workers)


def test_a_worker_publishes_its_count_when_it_serves_a_request() -> None:
    table = ConnectionTable(8)
    first, second = _workers(table, [2, 2])
    first.nr_conns = 6  # it accepted four more since
    assert _closes(table, first)  # 8 over 2: 4 each, and it holds 6
    first.nr_conns = 3  # having shed three: 5 over 2, up to 3 each
    assert not _closes(table, first)
    assert not _closes(table, second)


def test_an_exited_workers_slot_is_freed_and_reused() -> None:
    table = ConnectionTable(2)
    left, right = _workers(table, [1, 7])
    retire(table, right)
    assert table.fair_share() == 1  # only the live worker counts
    again = SimpleNamespace(nr_conns=0)
    assign(table, again)
    assert again.gin_balance[1] == right.gin_balance[1]
    full = SimpleNamespace(nr_conns=9)
    assign(table, full)
    assert full.gin_balance[1] is None  # no slot left: it never sheds
    assert not _closes(table, full)
    assert not _closes(table, left)


def test_a_table_made_by_a_reload_leaves_the_old_workers_slots_alone() -> None:
    old, new = ConnectionTable(2), ConnectionTable(2)
    (before_reload,) = _workers(old, [3])
    _workers(new, [2])
    retire(new, before_reload)  # it exits under the reloaded configuration
    assert new.fair_share() == 2  # the new worker's slot is still held
    retire(old, before_reload)
    assert old.fair_share() == 0


def test_workers_without_connection_counts_are_left_alone() -> None:
    table = ConnectionTable(4)
    sync_worker = SimpleNamespace()  # a sync worker holds one connection at a time
    assign(table, sync_worker)
    assert not _closes(table, sync_worker)


def test_the_counts_are_shared_with_forked_workers() -> None:
    table = ConnectionTable(4)
    parent, child_worker = _workers(table, [0, 0])
    pid = os.fork()
    if pid == 0:  # the child publishes, as a forked gunicorn worker does
        table.publish(child_worker.gin_balance[1], 6)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert table.fair_share() == 3  # the child's 6 seen by the parent
    parent.nr_conns = 0
    assert not _closes(table, parent)
