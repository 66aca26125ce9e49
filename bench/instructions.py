"""Instructions per match request, counted by valgrind's callgrind, for two revisions.

Wall-clock figures on these shared machines drift by 2x within minutes; an instruction count
does not. This plays the same scripted matches as bench/play.py (a player reads the view when
the turn passes to them and posts a legal action, knocking whenever it may), in-process through
Flask's test client on throwaway PostgreSQL databases built by each revision's own
migrations, once with the working tree and once with a baseline revision (checked out in a
temporary git worktree), each under callgrind at two lengths. The difference between the two
lengths is the cost of the extra requests alone (imports, set-up and warm-up cancel out).
Deals are made deterministic (a seeded generator stands in for ``secrets`` in these
processes), so both revisions play the same cards.

Counts the Python process only (Flask, the use cases, SQLAlchemy and psycopg on the client
side of the database, and the test client); PostgreSQL's own work is not in it. Takes about
ten minutes (the two revisions run side by side).

    .venv/bin/python bench/instructions.py [--base HEAD] [--actions 200]

Needs valgrind and PostgreSQL (BENCH_DATABASE_URL, else TEST_DATABASE_URL, else the local
server).
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
WARM_UP = 30  # actions before the counted ones, in every run


def drive(root: str, url: str, actions: int) -> None:
    """(Under callgrind.) Play ``WARM_UP`` + ``actions`` actions with the code at ``root``,
    choosing as bench/play.py's clients do, on matches set up by its ``prepare``."""
    import secrets

    rng = random.Random(7)

    def random_hex(nbytes: int | None = 32) -> str:
        return rng.randbytes(nbytes or 32).hex()

    secrets.token_hex = secrets.token_urlsafe = random_hex
    secrets.randbelow = rng.randrange  # type: ignore[assignment]
    sys.path.insert(0, root)
    from play import action_body, choose, prepare  # imports service only when called

    import service  # the revision under test: later imports of its modules resolve in it

    os.environ["SECRET_KEY"] = "instructions-bench"
    queue = prepare(url, 8)
    app = service.create_app({"DATABASE_URL": url, "SECRET_KEY": os.environ["SECRET_KEY"]})
    client = app.test_client()
    choices = random.Random(1)
    calls = 0

    def call(method: str, path: str, token: str, body: Any = None) -> Any:
        nonlocal calls
        calls += 1
        response = client.open(
            path, method=method, json=body, headers={"Authorization": f"Bearer {token}"}
        )
        assert response.status_code == 200, response.get_json()
        return response.get_json()

    def seats(match_id: str, tokens: list[str]) -> dict[int, str]:
        return {call("GET", f"/v1/matches/{match_id}", t)["you"]: t for t in tokens}

    match_id, tokens = queue.pop(0)
    seat_token, mover, view, done = seats(match_id, tokens), 0, None, 0
    while done < WARM_UP + actions:
        if view is None:
            view = call("GET", f"/v1/matches/{match_id}", seat_token[mover])
        if view["status"] != "playing":
            match_id, tokens = queue.pop(0)
            seat_token, view = seats(match_id, tokens), None
            continue
        if view["hand"]["to_act"] != view["you"]:
            mover, view = view["hand"]["to_act"], None
            continue
        body = action_body(choose(view["hand"]["legal_actions"], choices), view["version"])
        after = call("POST", f"/v1/matches/{match_id}/actions", seat_token[mover], body)
        done += 1
        view = None
        if after["status"] == "playing" and after["hand"]["to_act"] is not None:
            if after["hand"]["to_act"] == mover:
                view = after
            mover = after["hand"]["to_act"]
    app.extensions["gin"]["engine"].dispose()
    print(f"requests={calls}")


def migrated_by(root: Path) -> Callable[[str], None]:
    """A database migrator that runs the migrations of the code at ``root`` (in a process of
    its own: Alembic's migration context is global to a process)."""

    def migrate(url: str) -> None:
        script = "import sys; from service.db.migrate import upgrade; upgrade(sys.argv[1])"
        subprocess.run(
            [sys.executable, "-c", script, url],
            cwd=root,
            check=True,
            env=dict(os.environ, PYTHONPATH=str(root)),
        )

    return migrate


def count(root: Path, url: str, actions: int) -> tuple[int, int]:
    """(instructions, requests) of one run of the code at ``root`` on the database ``url``."""
    done = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            sys.executable,
            __file__,
            "--drive",
            str(root),
            url,
            str(actions),
        ],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONHASHSEED="0"),
        check=False,
    )
    found = re.search(r"Collected : (\d+)", done.stderr)
    requests = re.search(r"requests=(\d+)", done.stdout)
    if done.returncode or not found or not requests:
        raise SystemExit(f"callgrind run failed at {root}:\n{done.stdout}\n{done.stderr[-3000:]}")
    return int(found.group(1)), int(requests.group(1))


def per_request(root: Path, urls: tuple[str, str], actions: int) -> float:
    """Instructions per request beyond the warm-up: the difference of a run with ``actions``
    more actions and one without, each on a fresh database of its own."""
    (short, short_requests), (long, long_requests) = (
        count(root, urls[0], 0),
        count(root, urls[1], actions),
    )
    return (long - short) / (long_requests - short_requests)


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--drive":
        root, url, actions = sys.argv[2], sys.argv[3], int(sys.argv[4])
        drive(root, url, actions)
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", default="HEAD", help="the baseline revision (git)")
    parser.add_argument("--actions", type=int, default=200, help="counted actions per run")
    args = parser.parse_args()
    if not shutil.which("valgrind"):
        raise SystemExit("valgrind is needed (apt-get install valgrind)")
    folder = Path(tempfile.mkdtemp(prefix="gin-base-"))
    base = folder / "tree"
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(base), args.base],
        check=True,
    )
    sys.path.insert(0, str(ROOT))
    from harness import database_base_url

    from tests.conftest import throwaway_postgres

    try:
        with ExitStack() as stack:
            # Each revision plays on databases built by its own migrations.
            urls = [
                stack.enter_context(throwaway_postgres(database_base_url(), migrated_by(r)))
                for r in (ROOT, ROOT, base, base)
            ]
            with ThreadPoolExecutor(2) as pool:
                measured = pool.submit(per_request, ROOT, (urls[0], urls[1]), args.actions)
                baseline = pool.submit(per_request, base, (urls[2], urls[3]), args.actions)
                ours, theirs = measured.result(), baseline.result()
    finally:
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)], check=False
        )
        shutil.rmtree(folder, ignore_errors=True)
    print(f"baseline {args.base:<12} {theirs / 1e6:8.2f} M instructions per match request")
    print(f"working tree          {ours / 1e6:8.2f} M instructions per match request")
    print(
        f"ratio working tree / baseline: {ours / theirs:.3f} "
        f"({args.actions} actions and their reads, callgrind, Python process only)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
