"""Keep-alive connections end up spread evenly over gunicorn's workers
(service.connection_share)."""

from __future__ import annotations

import http.client
import math
import os
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.integration.workers import wait_until
from tests.ops.servers import gunicorn

CLIENTS = 9
WORKERS = 3


def _workers_of(master: int) -> list[int]:
    children = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == master:
                children.append(int(entry.name))
    return children


def _established_inodes(port: int) -> set[str]:
    """Socket inodes of the server's side of established connections on ``port``."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            local_port = int(fields[1].rsplit(":", 1)[1], 16)
            if local_port == port and fields[3] == "01":  # ESTABLISHED
                inodes.add(fields[9])
    return inodes


def _connections_per_worker(master: int, port: int) -> list[int]:
    server_side = _established_inodes(port)
    counts = []
    for pid in _workers_of(master):
        held = 0
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:[") and target[8:-1] in server_side:
                held += 1
        counts.append(held)
    return counts


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads Linux's /proc")
def test_keep_alive_clients_end_up_spread_evenly_over_the_workers(
    fresh_database_url: str,
) -> None:
    with gunicorn(fresh_database_url, workers=WORKERS) as (process, base):
        port = urlsplit(base).port
        assert port is not None
        # The master forks its workers one after another; the first answers before the last
        # is forked (and each takes its place in the shared table before its fork).
        wait_until(lambda: len(_workers_of(process.pid)) == WORKERS, 30, "all workers")
        clients = [
            http.client.HTTPConnection("127.0.0.1", port, timeout=10) for _ in range(CLIENTS)
        ]
        closes, quiet = 0, 0
        for _ in range(300):
            closed = 0
            for client in clients:  # reconnects by itself after a "Connection: close"
                client.request("GET", "/healthz")
                response = client.getresponse()
                assert response.status == 200
                response.read()
                closed += response.getheader("Connection", "").lower() == "close"
            closes += closed
            # Two rounds in a row without a close: in the first every worker published its
            # count afresh, so the second checked each against exact counts.
            quiet = quiet + 1 if closed == 0 else 0
            if quiet == 2:
                break
        counts = _connections_per_worker(process.pid, port)
        for client in clients:
            client.close()
    assert sum(counts) == CLIENTS, counts
    assert max(counts) <= math.ceil(CLIENTS / WORKERS), counts
    print(f"connections per worker: {sorted(counts)}; closed to rebalance: {closes}")
