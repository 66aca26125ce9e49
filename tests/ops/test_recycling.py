"""gunicorn's workers are forks of a master that imported the application once (preload):
recycled after a few requests each, they keep answering database requests without a failure,
each with connections of its own."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import make_test_app, new_operator
from tests.ops.servers import CONFIG, ROOT, HttpClient, gunicorn


def _worker_pids(directory: Path) -> set[str]:
    return {
        match.group(1)
        for path in directory.glob("*/histogram_*.db")
        if (match := re.search(r"histogram_(\d+)\.db$", path.name))
    }


def _players_pages(base: str, key: str, count: int, failures: list[str]) -> None:
    client = HttpClient(base)
    for _ in range(count):
        answer = client.open("/v1/players?limit=1", headers={"Authorization": f"Bearer {key}"})
        if answer.status_code != 200:
            failures.append(f"{answer.status_code} {answer.get_data(as_text=True)[:200]}")


@pytest.mark.slow
@pytest.mark.parametrize("preload", ["1", "0"])
def test_recycled_workers_keep_serving(
    fresh_database_url: str, tmp_path: Path, preload: str
) -> None:
    app = make_test_app(fresh_database_url)
    _operator_id, key = new_operator(app)
    app.extensions["gin"]["engine"].dispose()
    metrics = tmp_path / "metrics"
    env = {
        "GUNICORN_PRELOAD": preload,
        "GUNICORN_MAX_REQUESTS": "15",
        "GUNICORN_MAX_REQUESTS_JITTER": "5",
        "PROMETHEUS_MULTIPROC_DIR": str(metrics),
    }
    with gunicorn(fresh_database_url, workers=2, env=env) as (_process, base):
        failures: list[str] = []
        started = time.monotonic()
        threads = [
            threading.Thread(target=_players_pages, args=(base, key, 40, failures))
            for _ in range(4)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.monotonic() - started
        assert failures == []
        # 160 requests at most 20 per worker: recycled several times over, each new worker
        # answering (its own metrics file) with connections of its own.
        assert len(_worker_pids(metrics)) >= 4
    print(f"preload={preload}: 160 requests with recycling in {elapsed:.1f} s")


@pytest.mark.parametrize(
    ("setting", "preloaded"), [(None, True), ("0", False), ("off", False), ("1", True)]
)
def test_preloading_is_on_by_default_and_the_master_freezes_before_forking(
    tmp_path: Path, setting: str | None, preloaded: bool
) -> None:
    script = (
        "import gc, sys, types; from gunicorn.app.wsgiapp import WSGIApplication\n"
        "sys.argv = ['gunicorn', '-c', sys.argv[1], 'service.wsgi:app']\n"
        "app = WSGIApplication()\n"
        "before = gc.get_freeze_count(); app.cfg.pre_fork(None, types.SimpleNamespace())\n"
        "print(app.cfg.preload_app, before, gc.get_freeze_count())\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "GUNICORN_PRELOAD"}
    env["PROMETHEUS_MULTIPROC_DIR"] = str(tmp_path / "metrics")
    if setting is not None:
        env["GUNICORN_PRELOAD"] = setting
    result = subprocess.run(
        [sys.executable, "-c", script, str(CONFIG)],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    preload, before, after = result.stdout.split()
    assert preload == str(preloaded)
    assert int(before) == 0 and int(after) > 1000  # everything the master holds, frozen
