"""The integrator's first hour against what ``make run`` starts (``gin-service run`` on the
embedded default, from a folder of its own): README.md's first match and the walk-through it
leads to (docs/walkthrough.md) run as they are, the banner's walk-through the same commands,
and a log that keeps the demo key in view (the worker's routine ticks at DEBUG, the key's file
named)."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from service.cli import DEMO_SCRIPT
from tests.integration.workers import Served, wait_until
from tests.integration.workers import make_run as start_make_run
from tests.ops.servers import HttpClient

ROOT = Path(__file__).resolve().parents[2]
WALK_THROUGH = ROOT / "docs" / "walkthrough.md"
FIRST_MATCH = "## A first match"

#: A line of the text log: "2026-12-03 06:44:26,741 INFO celery.beat message".
LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ (?P<level>[A-Z]+) (?P<logger>\S+) ")


def sh_blocks(text: str) -> list[str]:
    """The fenced ``sh`` blocks of ``text``, in order."""
    blocks = re.findall(r"^```sh\n(.*?)^```", text, re.S | re.M)
    assert blocks, "no sh blocks"
    return blocks


def readme_blocks() -> list[str]:
    """The walk-through's fenced ``sh`` blocks (docs/walkthrough.md), in order."""
    return sh_blocks(WALK_THROUGH.read_text(encoding="utf-8"))


def first_match_blocks() -> list[str]:
    """The fenced ``sh`` blocks of README.md's first match."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert FIRST_MATCH in text, f"README.md has no section {FIRST_MATCH!r}"
    return sh_blocks(text.split(FIRST_MATCH, 1)[1].split("\n## ", 1)[0])


def commands(script: str) -> list[str]:
    """The lines that run (no comments, no blank lines), but the address and the key."""
    return [
        line
        for line in script.splitlines()
        if line.strip()
        and not line.lstrip().startswith("#")
        and not line.startswith(("GIN=", "KEY="))
    ]


def test_the_banner_prints_the_readme_walk_through() -> None:
    """One walk-through: what ``make run`` prints is docs/walkthrough.md's, address and key
    filled in."""
    assert commands(DEMO_SCRIPT) == commands("\n".join(readme_blocks()))


@pytest.fixture(scope="module")
def make_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """``gin-service run`` as ``make run`` starts it (:func:`workers.make_run`)."""
    with start_make_run(tmp_path_factory.mktemp("make-run")) as served:
        yield served


def test_the_readme_walk_through_plays_a_match_to_its_audited_settlement(
    make_run: Served,
) -> None:
    """The walk-through's blocks pasted into bash in the folder `make run` runs in (only the
    address changed): two players, deposits, a table, seats, an action from the view's legal
    actions, a resignation, the settlement and the audit."""
    script = "\n".join(readme_blocks())
    script, replaced = re.subn(r"^GIN=.*$", f"GIN={make_run.base}", script, count=1, flags=re.M)
    assert replaced == 1, "the walk-through sets no GIN address"
    done = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", script],
        cwd=make_run.folder,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert [json.loads(line) for line in lines[:2]] == [{"amount": 1500, "currency": "EUR"}] * 2
    found = re.search(r"match (mch_\w+)", done.stdout)
    assert found, done.stdout
    assert lines[3:5] == ["open", "playing"], done.stdout  # the second seat starts the match
    assert "finished" in lines, done.stdout
    payouts, wallet, *audits = lines[-4:]
    assert [p["amount"] for p in json.loads(payouts)] == [0, 900]  # 2 x 500 less the 10% fee
    assert json.loads(wallet)["amount"] == 1500 - 500 + 900
    assert audits == ["true", "true"]

    key = json.loads((make_run.folder / "var" / "demo-operator.json").read_text())["api_key"]
    auth = {"Authorization": f"Bearer {key}"}
    client = HttpClient(make_run.base)
    settlement = client.open(f"/v1/matches/{found.group(1)}/settlement", headers=auth)
    assert settlement.status_code == 200
    assert (settlement.get_json()["winner"], settlement.get_json()["forfeiter"]) == (1, 0)


def test_the_readmes_first_match_starts_as_it_says(make_run: Served) -> None:
    """README.md's first commands, pasted into bash where `make run` runs: a player is made
    with the demo operator's key."""
    script = "\n".join(first_match_blocks())
    script, replaced = re.subn(r"^GIN=.*$", f"GIN={make_run.base}", script, count=1, flags=re.M)
    assert replaced == 1, "the first match sets no GIN address"
    done = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", script],
        cwd=make_run.folder,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    player = json.loads(done.stdout)
    assert player["id"].startswith("ply_") and player["display_name"] == "Alice", player


def _timed_out_match(base: str, key: str) -> str:
    """A match whose first player's clock runs out at once (1 s, no bank, a timeout forfeits):
    the clock sweep, a routine tick until then, finds something to do."""
    client = HttpClient(base)
    auth = {"Authorization": f"Bearer {key}"}

    def call(method: str, path: str, body: Any, **headers: str) -> Any:
        answer = client.open(path, method=method, json=body, headers={**auth, **headers})
        assert answer.status_code in (200, 201), answer.get_data(as_text=True)
        return answer.get_json()

    table = call(
        "POST",
        "/v1/tables",
        {
            "format": "match_play",
            "currency": "EUR",
            "stake": 100,
            "clock": {"turn_seconds": 1, "bank_seconds": 0, "on_timeout": "FORFEIT"},
        },
    )
    for seat in range(2):
        player = call(
            "POST", "/v1/players", {"external_id": f"slow-{seat}", "display_name": f"Slow {seat}"}
        )
        call(
            "POST",
            f"/v1/players/{player['id']}/deposits",
            {"amount": {"amount": 100, "currency": "EUR"}},
            **{"Idempotency-Key": f"slow-{seat}"},
        )
        token = call("POST", f"/v1/players/{player['id']}/tokens", {})["token"]
        call(
            "POST",
            f"/v1/tables/{table['id']}/seats",
            {},
            **{"Authorization": f"Bearer {token}", "Idempotency-Key": "sit"},
        )
    return str(table["match_id"])


def test_make_run_keeps_the_demo_key_in_view(make_run: Served) -> None:
    """The banner names the file that keeps the key (its real path), and the INFO log has no
    routine tick lines: beat sending, the worker receiving and Celery's "succeeded" line per
    task, and our own line for a tick that found nothing, are DEBUG."""
    printed = "\n".join(make_run.lines())
    key = re.search(r"^API key: (sk_\S+)$", printed, re.M)
    kept = re.search(r"kept in (\S+demo-operator\.json)", printed)
    assert key and kept, printed[:3000]
    path = Path(kept.group(1))
    assert path.is_absolute() and path == (make_run.folder / "var" / "demo-operator.json")
    assert json.loads(path.read_text())["api_key"] == key.group(1)

    _timed_out_match(make_run.base, key.group(1))
    tick_done = re.compile(r" INFO gin\.tasks .*task matches\.enforce_clocks SUCCESS")
    wait_until(
        lambda: any(tick_done.search(line) for line in make_run.lines()),
        60,
        "the clock sweep to forfeit the match",
    )

    info = [
        line
        for line in make_run.lines()
        if (parsed := LOG_LINE.match(line)) and parsed["level"] == "INFO"
    ]
    chatty = [
        line
        for line in info
        if LOG_LINE.match(line)["logger"]  # type: ignore[index]
        in ("celery.beat", "celery.worker.strategy", "celery.app.trace")
    ]
    assert chatty == [], "\n".join(chatty[:10])
    ticks = [
        line
        for line in info
        if re.search(
            r"matches\.enforce_clocks|bots\.play_turns|tables\.cancel_unfilled|webhooks\.sweep",
            line,
        )
    ]
    # the sweep ran every second since the start; it found something once (the forfeit)
    assert len(ticks) == 1 and tick_done.search(ticks[0]), "\n".join(ticks[:10])
