"""The command line: operators and API keys, rates, migrations, the simulation's door, and
``gin-service run`` end to end (a demo key and curl examples that work against it)."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import types
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from service.cli import main
from tests.conftest import free_port, make_test_app, wait_until

GIN_SERVICE = Path(sys.executable).with_name("gin-service")  # the console script


def test_create_operator_prints_a_working_key_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'cli.sqlite'}"
    monkeypatch.setenv("DATABASE_URL", url)
    assert main(["db", "upgrade"]) == 0
    capsys.readouterr()
    assert main(["create-operator", "Acme"]) == 0
    printed: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert printed["operator_id"].startswith("op_") and printed["api_key"].startswith("sk_")
    app = make_test_app(url)
    client = app.test_client()
    response = client.get("/v1/operator", headers={"Authorization": f"Bearer {printed['api_key']}"})
    assert response.status_code == 200 and response.get_json()["name"] == "Acme"
    keys = client.get("/v1/api-keys", headers={"Authorization": f"Bearer {printed['api_key']}"})
    assert printed["api_key"] not in keys.get_data(as_text=True)  # never shown again
    app.extensions["gin"]["engine"].dispose()


# --- api-key and rates -------------------------------------------------------------------


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    """Run ``gin-service argv``: exit status, the JSON it printed (or None), its stderr."""
    status = main(list(argv))
    captured = capsys.readouterr()
    out = captured.out.strip()
    return status, json.loads(out) if out else None, captured.err


@pytest.fixture
def operator(
    fresh_database_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Iterator[tuple[Any, dict[str, Any]]]:
    """A migrated database of the test's own with one operator made by the CLI."""
    monkeypatch.setenv("DATABASE_URL", fresh_database_url)
    assert main(["create-operator", "Acme"]) == 0
    printed = capsys.readouterr().out
    created = json.loads(printed[printed.index("{") :])
    app = make_test_app(fresh_database_url)
    yield app, created
    app.extensions["gin"]["engine"].dispose()


def as_key(app: Any, key: str, path: str) -> Any:
    return app.test_client().get(path, headers={"Authorization": f"Bearer {key}"})


def test_api_keys_are_created_listed_and_revoked(
    operator: tuple[Any, dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    app, first = operator
    status, issued, _ = cli(capsys, "api-key", "create", first["operator_id"], "--label", "ops")
    assert status == 0 and issued["api_key"].startswith("sk_") and issued["label"] == "ops"
    assert issued["operator_id"] == first["operator_id"] and issued["revoked_at"] is None
    assert as_key(app, issued["api_key"], "/v1/operator").status_code == 200

    status, listed, _ = cli(capsys, "api-key", "list", first["operator_id"])
    assert status == 0
    assert {k["api_key_id"] for k in listed} == {first["api_key_id"], issued["api_key_id"]}
    assert "api_key" not in json.dumps(listed).replace('"api_key_id"', "")  # no secret shown
    assert issued["api_key"][:10] in {k["prefix"] for k in listed}

    status, revoked, _ = cli(capsys, "api-key", "revoke", issued["api_key_id"])
    assert status == 0 and revoked["revoked_at"] is not None
    assert as_key(app, issued["api_key"], "/v1/operator").status_code == 401
    assert as_key(app, first["api_key"], "/v1/operator").status_code == 200  # the other key lives
    status, again, _ = cli(capsys, "api-key", "revoke", issued["api_key_id"])
    assert status == 0 and again["revoked_at"] == revoked["revoked_at"]  # a no-op
    status, listed, _ = cli(capsys, "api-key", "list", first["operator_id"])
    assert {k["api_key_id"]: k["revoked_at"] for k in listed}[issued["api_key_id"]] is not None


@pytest.mark.parametrize(
    "argv, message",
    [
        (("api-key", "create", "op_missing"), "op_missing"),
        (("api-key", "list", "op_missing"), "op_missing"),
        (("api-key", "revoke", "key_missing"), "key_missing"),
        (("rates", "set", "op_missing", "EUR", "USD", "1.1"), "op_missing"),
    ],
)
def test_unknown_operators_and_keys_are_named_with_status_2(
    operator: tuple[Any, dict[str, Any]],
    capsys: pytest.CaptureFixture[str],
    argv: tuple[str, ...],
    message: str,
) -> None:
    status, out, err = cli(capsys, *argv)
    assert (status, out) == (2, None)
    assert message in err and "Traceback" not in err


def test_rates_are_set_and_shown_by_the_api(
    operator: tuple[Any, dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    app, first = operator
    status, rate, _ = cli(capsys, "rates", "set", first["operator_id"], "EUR", "USD", "1.0850")
    assert status == 0 and (rate["base"], rate["quote"], rate["rate"]) == ("EUR", "USD", "1.0850")
    listed = as_key(app, first["api_key"], "/v1/exchange-rates").get_json()
    rates = [(r["base"], r["quote"], r["rate"]) for r in listed["data"]]
    assert rates == [("EUR", "USD", "1.0850")]
    status, _, _ = cli(capsys, "rates", "set", first["operator_id"], "EUR", "USD", "1.2")
    listed = as_key(app, first["api_key"], "/v1/exchange-rates").get_json()
    assert [r["rate"] for r in listed["data"]] == ["1.2"]  # replaced, not added


@pytest.mark.parametrize(
    "base, quote, rate, named",
    [
        ("EUR", "USD", "abc", "abc"),
        ("EUR", "EUR", "1.5", "EUR/EUR"),
        ("EUR", "XYZ", "1", "XYZ"),
        ("EUR", "USD", "-2", "-2"),
    ],
)
def test_a_bad_rate_is_refused_with_status_2(
    operator: tuple[Any, dict[str, Any]],
    capsys: pytest.CaptureFixture[str],
    base: str,
    quote: str,
    rate: str,
    named: str,
) -> None:
    app, first = operator
    status, out, err = cli(capsys, "rates", "set", first["operator_id"], base, quote, rate)
    assert (status, out) == (2, None) and named in err
    assert as_key(app, first["api_key"], "/v1/exchange-rates").get_json()["data"] == []


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``gin-service argv`` as a shell runs it: exit status (argparse's exits included),
    stdout, stderr."""
    try:
        status = main(list(argv))
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else 2
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.mark.parametrize(
    "argv, named",
    [
        (("audit", "--operator", "op_NOPE", "--no-progress"), "op_NOPE"),
        (("audit", "--report", "/no/such/folder/report.json", "--no-progress"), "/no/such/folder"),
        (
            ("audit", "--since", "2026-12-02T00:00:00Z", "--until", "2026-12-01T00:00:00Z"),
            "--since",
        ),
        (("audit", "--since", "yesterday"), "yesterday"),
        (("create-operator", ""), "name"),
        (("create-operator", "   "), "name"),
        (("create-operator", "x" * 300), "255"),
        (("run", "--bind", "localhost"), "localhost"),
        (("run", "--workers", "0"), "--workers"),
        (("operators", "show"), "show"),
        (("no-such-command",), "no-such-command"),
        ((), "COMMAND"),
    ],
)
def test_every_bad_input_is_one_line_on_stderr_and_status_2(
    operator: tuple[Any, dict[str, Any]],
    capsys: pytest.CaptureFixture[str],
    argv: tuple[str, ...],
    named: str,
) -> None:
    status, out, err = run_cli(capsys, *argv)
    assert (status, out) == (2, "")
    assert len(err.strip().splitlines()) == 1 and named in err, err


def test_an_unreachable_database_is_status_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for url in (f"postgresql+psycopg://nobody@127.0.0.1:{free_port()}/none", "nosuch://x"):
        monkeypatch.setenv("DATABASE_URL", url)
        status, out, err = run_cli(capsys, "operators", "list")
        assert (status, out) == (2, "") and "DATABASE_URL" in err
        assert len(err.strip().splitlines()) == 1, err


def test_run_refuses_an_address_in_use(
    fresh_database_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DATABASE_URL", fresh_database_url)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        status, out, err = run_cli(capsys, "run", "--bind", f"127.0.0.1:{port}", "--no-demo")
    assert (status, out) == (2, "") and f"127.0.0.1:{port}" in err


def test_operators_are_listed_without_secrets(
    operator: tuple[Any, dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    _, first = operator
    assert main(["create-operator", "Beta Bets"]) == 0
    second = json.loads(capsys.readouterr().out)
    status, listed, _ = cli(capsys, "operators", "list")
    assert status == 0
    assert [(o["operator_id"], o["name"]) for o in listed] == [
        (first["operator_id"], "Acme"),
        (second["operator_id"], "Beta Bets"),
    ]
    assert all(set(o) == {"operator_id", "name", "created_at"} for o in listed)
    assert first["api_key"] not in json.dumps(listed)
    status, report, err = cli(
        capsys, "audit", "--operator", listed[1]["operator_id"], "--no-progress"
    )  # a known operator: audited, clean books
    assert status == 0 and report["ok"] is True, err
    assert report["ledger"]["operator_id"] == listed[1]["operator_id"]


# --- the database a command uses: found, never created ------------------------------------

#: Every command that uses the database without creating or migrating it (``run``,
#: ``db upgrade`` and ``create-operator`` do, and so create a missing SQLite file).
USES_THE_DATABASE = [
    ("operators", "list"),
    ("api-key", "create", "op_x"),
    ("api-key", "list", "op_x"),
    ("api-key", "revoke", "key_x"),
    ("rates", "set", "op_x", "EUR", "USD", "1.1"),
    ("purge-idempotency",),
    ("audit", "--no-progress"),
    ("audit", "--match", "mch_x", "--no-progress"),
    ("wallet", "report", "op_x", "2026-12-04"),
    ("wallet", "diff", "op_x", "2026-12-04", "-"),
]


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty folder that is not the checkout, as the current one, with neither
    DATABASE_URL nor GIN_VAR_DIR set: the embedded default is var/gin.sqlite under it."""
    import service.config

    folder = tmp_path / "elsewhere"
    folder.mkdir()
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.delenv("GIN_VAR_DIR", raising=False)
    monkeypatch.setattr(service.config, "DEFAULT_VAR_DIR", Path("var"))
    monkeypatch.chdir(folder)
    return folder


@pytest.mark.parametrize("argv", USES_THE_DATABASE, ids=" ".join)
def test_a_command_run_elsewhere_names_the_database_it_looked_for_and_creates_none(
    elsewhere: Path, capsys: pytest.CaptureFixture[str], argv: tuple[str, ...]
) -> None:
    status, out, err = run_cli(capsys, *argv)
    assert (status, out) == (2, "")
    assert len(err.strip().splitlines()) == 1, err
    assert f"no database at {elsewhere.resolve() / 'var' / 'gin.sqlite'} " in err, err
    assert "DATABASE_URL" in err and "no such table" not in err
    assert list(elsewhere.iterdir()) == []  # no empty var/gin.sqlite left behind


def test_the_console_script_run_elsewhere_leaves_nothing_behind(tmp_path: Path) -> None:
    """As a newcomer types it, from another folder: ``gin-service audit --match ID``."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "GIN_VAR_DIR")}
    done = subprocess.run(
        [str(GIN_SERVICE), "audit", "--match", "mch_x", "--no-progress"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert f"no database at {tmp_path.resolve() / 'var' / 'gin.sqlite'} " in done.stderr
    assert "DATABASE_URL" in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_missing_file_named_by_database_url_is_not_created(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "typo.sqlite"
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{missing}")
    status, out, err = run_cli(capsys, "operators", "list")
    assert (status, out) == (2, "")
    assert f"no database at {missing} (from DATABASE_URL)" in err, err
    assert not missing.exists()


@pytest.fixture(scope="module")
def unmigrated_database_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A database that exists but was never migrated (an empty SQLite file, or an empty
    PostgreSQL database when TEST_DATABASE_URL is set)."""
    from tests.conftest import throwaway_postgres

    base = os.environ.get("TEST_DATABASE_URL")
    if base:
        with throwaway_postgres(base, migrate=lambda url: None) as url:
            yield url
    else:
        path = tmp_path_factory.mktemp("unmigrated") / "empty.sqlite"
        path.touch()
        yield f"sqlite:///{path}"


@pytest.mark.parametrize("argv", USES_THE_DATABASE, ids=" ".join)
def test_a_database_without_a_schema_is_named_rather_than_no_such_table(
    unmigrated_database_url: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: tuple[str, ...],
) -> None:
    from sqlalchemy.engine import make_url

    monkeypatch.setenv("DATABASE_URL", unmigrated_database_url)
    status, out, err = run_cli(capsys, *argv)
    assert (status, out) == (2, "")
    assert len(err.strip().splitlines()) == 1, err
    assert "has no schema" in err and "gin-service db upgrade" in err, err
    assert str(make_url(unmigrated_database_url).database) in err
    assert "no such table" not in err and "does not exist" not in err


# --- every command prints JSON (but run, openapi and simulate) ------------------------------


def test_db_upgrade_and_purge_print_json(
    fresh_database_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from sqlalchemy.engine import make_url

    from service.db.migrate import head_revision

    monkeypatch.setenv("DATABASE_URL", fresh_database_url)
    status, upgraded, _ = cli(capsys, "db", "upgrade")
    url = make_url(fresh_database_url)
    named = url.database if url.get_backend_name() == "sqlite" else url.render_as_string()
    assert (status, upgraded) == (0, {"database": named, "revision": head_revision()})
    status, purged, _ = cli(capsys, "purge-idempotency")
    assert (status, purged) == (0, {"purged": 0})


@pytest.mark.parametrize(
    "argv, shown",
    [
        (("run", "--help"), ["127.0.0.1:8000", "(default: 2)"]),
        (("api-key", "create", "--help"), ["(default: cli)"]),
        (
            ("simulate", "--help"),
            [
                "(default: 10)",
                "(default: match_play)",
                "(default: 4)",
                "(default: 500)",
                "(default: EUR)",
            ],
        ),
    ],
)
def test_help_shows_the_defaults(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: tuple[str, ...],
    shown: list[str],
) -> None:
    monkeypatch.setenv("GIN_API_KEY", "sk_secret_from_the_environment")
    monkeypatch.setenv("COLUMNS", "200")  # one option a line: defaults not wrapped apart
    status, out, _ = run_cli(capsys, *argv)
    assert status == 0
    for text in shown:
        assert text in out, out
    assert "sk_secret_from_the_environment" not in out  # --help never prints a key


# --- simulate ------------------------------------------------------------------------------


def test_simulate_forwards_every_argument(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: list[list[str]] = []

    def fake_main(argv: list[str]) -> int:
        seen.append(argv)
        return 3

    fake = types.ModuleType("service.simulate")
    fake.main = fake_main  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "service.simulate", fake)
    assert main(["simulate", "--matches", "5", "--help"]) == 3
    assert seen == [["--matches", "5", "--help"]]


def test_simulate_without_the_module_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "service.simulate", None)  # import fails as if absent
    assert main(["simulate", "--matches", "5"]) == 2
    assert "service.simulate" in capsys.readouterr().err


# --- practice --------------------------------------------------------------------------------


def test_practice_without_a_key_or_a_service_says_what_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No key anywhere (no demo operator yet), then a key but nothing at the address: one
    line each, exit 2 (the command talks to the API; ``tests/browser/test_play.py`` runs it
    against a service)."""
    import service.config

    monkeypatch.setattr(service.config, "DEFAULT_VAR_DIR", tmp_path / "var")
    monkeypatch.delenv("GIN_API_KEY", raising=False)
    status, _, err = cli(capsys, "practice", "--url", f"http://127.0.0.1:{free_port()}")
    assert status == 2 and "no --api-key" in err and "make run" in err
    url = f"http://127.0.0.1:{free_port()}"
    status, _, err = cli(capsys, "practice", "--url", url, "--api-key", "sk_x")
    assert status == 2 and f"cannot reach {url}" in err and len(err.splitlines()) == 1


# --- gin-service run: the demo operator and the printed examples -----------------------------


def test_the_seamless_demo_operator_is_made_once_with_its_wallet_secret(
    fresh_database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``run --seamless-demo``: a demo operator of its own (the plain demo's file is left
    alone), EUR seamless against the reference wallet's port, the signing secret to start
    that wallet with; a restart reuses all three."""
    import service.config
    from service.cli import SEAMLESS_DEMO_PORT, ensure_seamless_demo

    monkeypatch.setenv("DATABASE_URL", fresh_database_url)
    monkeypatch.setattr(service.config, "DEFAULT_VAR_DIR", tmp_path / "var")
    first = ensure_seamless_demo()
    assert first["wallet_secret"].startswith("whsec_")
    assert not (tmp_path / "var" / "demo-operator.json").exists()
    assert ensure_seamless_demo() == first
    app = make_test_app(fresh_database_url)
    try:
        [settings] = as_key(app, first["api_key"], "/v1/wallet-settings").get_json()["data"]
    finally:
        app.extensions["gin"]["engine"].dispose()
    assert (settings["currency"], settings["mode"], settings["url"]) == (
        "EUR",
        "seamless",
        f"http://127.0.0.1:{SEAMLESS_DEMO_PORT}",
    )


def test_the_seamless_demo_wallet_gets_its_secret_out_of_sight_and_verifies_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``run --seamless-demo`` starts the reference wallet with the signing secret in its
    environment: not in its command line (``ps``, ``/proc/<pid>/cmdline``, readable by every
    user), and the wallet still accepts what that secret signs and refuses anything else."""
    import service.cli
    import service.config
    from service.outbound.signing import SIGNATURE_HEADER, signature_header

    port = free_port()
    monkeypatch.setattr(service.cli, "SEAMLESS_DEMO_PORT", port)
    monkeypatch.setattr(service.config, "DEFAULT_VAR_DIR", tmp_path / "var")
    secret = "whsec_" + os.urandom(16).hex()
    wallet = service.cli._start_reference_wallet(secret)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:  # its "listening on" line goes to our stdout: ask it instead
            assert wallet.poll() is None, "the wallet exited"
            try:
                with urllib.request.urlopen(f"{base}/admin/health", timeout=2):
                    break
            except OSError:
                assert time.monotonic() < deadline, "the wallet never answered"
                time.sleep(0.05)
        # read once it serves: right after exec the kernel may not have set it up yet
        command_line = Path(f"/proc/{wallet.pid}/cmdline").read_bytes()
        assert b"refwallet" in command_line and secret.encode() not in command_line

        def balance(signed_with: str) -> int:
            query = {"player_id": "ply_x", "external_player_id": "ghost", "currency": "EUR"}
            raw = json.dumps(query).encode()
            headers = {
                "Content-Type": "application/json",
                SIGNATURE_HEADER: signature_header([signed_with], int(time.time()), raw),
            }
            request = urllib.request.Request(f"{base}/balance", raw, headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=10) as response:
                    return int(response.status)
            except urllib.error.HTTPError as exc:
                exc.close()
                return exc.code

        assert balance(secret) == 404  # verified, then answered: unknown_player
        assert balance("whsec_someone_else") == 401
    finally:
        wallet.terminate()
        wallet.wait(timeout=10)


def test_the_demo_operator_is_made_once_and_replaced_when_it_stops_working(
    fresh_database_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import service.config
    from service.cli import ensure_demo_operator

    monkeypatch.setenv("DATABASE_URL", fresh_database_url)
    monkeypatch.setattr(service.config, "DEFAULT_VAR_DIR", tmp_path / "var")
    first = ensure_demo_operator()
    saved = tmp_path / "var" / "demo-operator.json"
    assert json.loads(saved.read_text()) == first
    assert saved.stat().st_mode & 0o077 == 0  # holds a key: owner only
    assert ensure_demo_operator() == first  # a restart reuses it
    assert main(["api-key", "revoke", first["api_key_id"]]) == 0
    capsys.readouterr()
    second = ensure_demo_operator()  # its key was revoked: a fresh demo operator
    assert second["operator_id"] != first["operator_id"]
    saved.write_text("{not json")
    third = ensure_demo_operator()
    assert third["api_key"] not in (first["api_key"], second["api_key"])
    app = make_test_app(fresh_database_url)
    try:
        assert as_key(app, third["api_key"], "/v1/operator").status_code == 200
    finally:
        app.extensions["gin"]["engine"].dispose()


def http(
    method: str, url: str, key: str, body: Any = None, headers: dict[str, str] | None = None
) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        url,
        data=data,
        method=method,
        headers={
            "Authorization": f"Bearer {key}",
            "Content-Type": "application/json",
            **(headers or {}),
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def wait_ready(base: str, server: subprocess.Popen[bytes], seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert server.poll() is None, "gin-service run exited early"
        try:
            with urllib.request.urlopen(f"{base}/readyz", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)  # polling: the server gives no other signal that it is up
    raise AssertionError(f"{base}/readyz not ready after {seconds} s")


def test_run_serves_prints_working_examples_and_stops_cleanly(
    tmp_path: Path, fresh_database_url: str
) -> None:
    """`gin-service run` on a fresh var folder: migrated, a demo key and examples printed, the
    examples work against it (API under gunicorn, the worker settles), SIGTERM stops it."""
    port = free_port()
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DATABASE_URL", "CELERY_BROKER_URL")
    }
    env["GIN_VAR_DIR"] = str(tmp_path / "var")
    argv = [str(GIN_SERVICE), "run", "--bind", f"127.0.0.1:{port}", "--workers", "2"]
    if os.environ.get("TEST_DATABASE_URL"):
        env["DATABASE_URL"] = fresh_database_url  # PostgreSQL: the demo is asked for
        argv.append("--demo")
    out, err = tmp_path / "run.out", tmp_path / "run.err"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        server = subprocess.Popen(argv, env=env, stdout=stdout, stderr=stderr, cwd=tmp_path)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(base, server)
        # the banner comes once the worker is ready too
        wait_until(lambda: out.read_text().count("-" * 78) >= 3, 60, "the banner")
        printed = out.read_text()
        key = re.search(r"API key: (sk_\S+)", printed)
        assert key, printed
        key_text = key.group(1)
        assert f"GIN={base}" in printed and f"KEY={key_text}" in printed

        # the essential calls, made directly
        status, player = http(
            "POST",
            f"{base}/v1/players",
            key_text,
            {"external_id": "essential-1", "display_name": "Carol"},
        )
        assert status == 201, player
        status, deposit = http(
            "POST",
            f"{base}/v1/players/{player['id']}/deposits",
            key_text,
            {"amount": {"amount": 1500, "currency": "EUR"}},
            {"Idempotency-Key": "essential-deposit"},
        )
        assert status == 201 and deposit["wallet"]["available"]["amount"] == 1500, deposit

        # the whole printed walk-through, as a newcomer pastes it into bash
        script = printed.split("-" * 78)[2]
        result = subprocess.run(
            ["bash", "-e", "-o", "pipefail", "-c", script],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert result.returncode == 0, result.stdout + result.stderr
        lines = result.stdout.splitlines()
        assert "playing" in lines and "finished" in lines, result.stdout
        payouts, wallet, *audits = lines[-4:]
        assert [p["amount"] for p in json.loads(payouts)] == [0, 900]  # 2 x 500, 10% fee
        assert json.loads(wallet)["amount"] == 1500 - 500 + 900
        assert audits == ["true", "true"]
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            code = server.wait(timeout=90)
        except subprocess.TimeoutExpired:
            server.kill()
            raise
    assert code == 0, err.read_text()[-3000:]
    with socket.socket() as sock:  # the API is gone with it
        assert sock.connect_ex(("127.0.0.1", port)) != 0
