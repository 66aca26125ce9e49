"""What ``make run`` starts (``gin-service run`` on the embedded default: SQLite, the filesystem
broker, a real Celery worker with beat, gunicorn), each test from a folder of its own: a
match's settlement is readable within a second or two of its end, nothing is logged after
the banner while it idles, and Ctrl-C (SIGTERM to its process group) stops every process it
started within 10 s (docs/performance.md, "The embedded default")."""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from service.client import ApiProblem, GinClient
from tests.integration.workers import Served, make_run, wait_until

#: The longest a resigned match may wait for its settlement here. kombu's filesystem broker
#: polled once a second, behind beat's ticks, made it 5 to 10 s; it takes about 0.2 s now,
#: the rest is margin for a loaded machine.
SETTLED_WITHIN_SECONDS = 2.5
#: How long Ctrl-C may take to stop everything (it took 41 s when every process got the
#: signal from the terminal and then again from ``gin-service run``).
STOPPED_WITHIN_SECONDS = 10.0


#: How long the idle run is watched after its banner.
IDLE_SECONDS = 5.0

pytestmark = pytest.mark.timing  # under pytest-xdist, with no other test beside it


@pytest.fixture(scope="module")
def idle_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One run for the tests that leave it running: watched for :data:`IDLE_SECONDS` after
    its banner first (``idle``), before any test makes a request."""
    with make_run(tmp_path_factory.mktemp("make-run")) as served:
        time.sleep(IDLE_SECONDS)  # idle: nothing to wait for, only the absence of lines
        served.idle = served.after_banner()
        yield served


def test_a_resigned_match_is_settled_within_a_few_seconds(idle_run: Served) -> None:
    """End of a match (a resignation's answer) to its settlement readable, three times."""
    operator = GinClient(idle_run.base, idle_run.api_key())
    waited = []
    for n in range(3):
        table = operator.create_table("match_play", "EUR", stake=100)
        seated = []
        for seat in range(2):
            player = operator.create_player(f"quick-{n}-{seat}", f"Quick {n}.{seat}")
            operator.deposit(player["id"], 100, "EUR")
            client = operator.as_(operator.player_token(player["id"])["token"])
            client.join(table["id"])
            seated.append(client)
        match_id = table["match_id"]
        seated[0].act(match_id, "RESIGN", seated[0].match(match_id)["version"])
        ended = time.monotonic()

        def settled(match_id: str = match_id) -> bool:
            try:
                operator.settlement(match_id)
            except ApiProblem as problem:
                assert problem.status == 404, problem
                return False
            return True

        wait_until(settled, 30, f"{match_id}'s settlement")
        waited.append(time.monotonic() - ended)
    operator.close()
    assert max(waited) < SETTLED_WITHIN_SECONDS, waited


def test_an_idle_run_logs_nothing_after_its_banner(idle_run: Served) -> None:
    """The banner (the demo key and the walk-through) is printed once the API and the worker
    are ready, after everything they print on starting, and stays the last thing on screen
    while nothing happens: beat's ticks every second find nothing to do and log at DEBUG."""
    assert idle_run.idle == []
    printed = "\n".join(idle_run.lines())
    assert "alembic" not in printed  # its plugin lines, its lines per readiness check
    assert "SecurityWarning" not in printed  # Celery's about running as root


def _descendants(pid: int) -> set[int]:
    """Every process started by ``pid``, however deep (Linux /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:  # gone meanwhile
                continue
            children.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def _running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie waiting to be reaped is not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads the process tree in /proc")
def test_ctrl_c_stops_every_process_it_started_within_ten_seconds(tmp_path: Path) -> None:
    """SIGTERM to the process group, as a terminal's Ctrl-C (SIGINT) or ``kill -- -PGID``:
    gunicorn and its workers, the Celery worker, its pool and its beat all gone."""
    with make_run(tmp_path) as served:
        started = _descendants(served.process.pid)
        assert len(started) >= 6, started  # gunicorn + 2 workers, Celery + 2 in its pool + beat
        stopping = time.monotonic()
        os.killpg(served.process.pid, signal.SIGTERM)
        code = served.process.wait(timeout=30)
        took = time.monotonic() - stopping
        wait_until(lambda: not any(_running(pid) for pid in started), 5, "no process left")
    assert took < STOPPED_WITHIN_SECONDS, took
    assert code == 0, served.lines()[-20:]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's parent-death signal")
def test_killing_the_run_alone_leaves_no_process_behind(tmp_path: Path) -> None:
    """``kill -9`` of ``gin-service run`` alone, which can pass nothing on: gunicorn and the
    Celery worker lead process groups of their own, and still stop with everything they
    started, within the same 10 s."""
    with make_run(tmp_path) as served:
        started = _descendants(served.process.pid)
        assert len(started) >= 6, started
        stopping = time.monotonic()
        served.process.kill()
        served.process.wait(timeout=30)
        wait_until(
            lambda: not any(_running(pid) for pid in started),
            STOPPED_WITHIN_SECONDS + 5,
            "no process left",
        )
        took = time.monotonic() - stopping
    assert took < STOPPED_WITHIN_SECONDS, took
