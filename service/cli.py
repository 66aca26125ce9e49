"""Command-line entry point.

- ``gin-service run``: migrate the database, serve the API under gunicorn and run a Celery
  worker with beat (embedded defaults: SQLite and a filesystem broker, no servers);
- ``gin-service create-operator NAME``: create an operator and print its first API key (once);
  ``gin-service operators list``: every operator (id, name, created; no secrets);
- ``gin-service db upgrade``: apply migrations; ``gin-service openapi``: print the OpenAPI
  document; ``gin-service purge-idempotency``: drop idempotency keys past retention;
- ``gin-service audit``: replay and check settlements and the ledger (exit 1 on any
  discrepancy);
- ``gin-service api-key create|revoke|list``: an operator's API keys (a new secret is printed
  once); ``gin-service rates set OPERATOR_ID BASE QUOTE RATE``: a display exchange rate;
- ``gin-service simulate ...``: forwards its arguments to ``service.simulate.main``;
- ``gin-service practice``: a practice player's token, a practice table of each game with
  bots in its other seats and practice tournaments with bots in their other entries, for a
  person at ``/play`` (``service.practice``).

Every command but ``run`` (a server: its banner and logs), ``openapi`` (YAML) and ``simulate``
(a readable summary; ``--report PATH`` writes its JSON) prints one JSON document on stdout.
``run``, ``db upgrade`` and ``create-operator`` create and migrate the database as needed; every
other command only uses an existing, migrated one: it never creates a SQLite file, and names
the database it looked for when there is none (:func:`_session`).

On the embedded default (no ``DATABASE_URL``), ``run`` also creates a demo operator once (kept
in ``$GIN_VAR_DIR/demo-operator.json``, reused across restarts) and prints its API key, the
file's path and copy-paste ``curl`` examples.

Exit status: 0 for success; 1 only for a finding (an audit discrepancy); 2, with one line on
stderr, for every input the caller can fix (a usage error, an unknown operator or key, an
empty name, a bad rate, an address in use, a database that is missing, unmigrated or cannot
be reached). ``--help`` shows every option's default.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from service.config import bind_address, database_configured

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    import subprocess

    from sqlalchemy import URL, Engine
    from sqlalchemy.orm import Session

    from service.config import Settings


class HelpWithDefaults(argparse.ArgumentDefaultsHelpFormatter):
    """``--help`` shows each option's default, unless it has none (``None``, a flag's False)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default is None or action.default is False:
            return action.help
        return super()._get_help_string(action)


class Parser(argparse.ArgumentParser):
    """argparse with defaults in ``--help``, and a usage error as one line on stderr with exit
    status 2 (as every other bad input)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpWithDefaults)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


class Refused(Exception):
    """Raised by a command for an input the caller can fix: one line on stderr, exit 2."""


def _bind(text: str) -> str:
    """``HOST:PORT`` (or gunicorn's ``unix:PATH``) for ``run --bind``."""
    if text.startswith("unix:"):
        return text
    _host, colon, port = text.rpartition(":")
    if not colon or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"not HOST:PORT: {text!r}")
    return text


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"not a positive integer: {text!r}")
    return value


def _settings() -> Settings:
    from service.config import DEFAULT_VAR_DIR, Settings

    settings = Settings.from_env()
    if settings.database_url.startswith("sqlite"):
        DEFAULT_VAR_DIR.mkdir(parents=True, exist_ok=True)
    return settings


def _session() -> Session:
    """A session on the configured database, which must already exist and be migrated: a
    command that only uses the database never creates one (:func:`_existing_database`)."""
    from service.config import Settings
    from service.db import make_engine, make_sessionmaker

    engine = make_engine(_existing_database(Settings.from_env().database_url), pool_size=1)
    try:
        _check_schema(engine)
    except BaseException:
        engine.dispose()
        raise
    return make_sessionmaker(engine)()


#: How to point a command at the right database, for the messages below.
WHICH_DATABASE = (
    "point DATABASE_URL (or GIN_VAR_DIR) at the service's database, or run the command from "
    "the checkout where `make run` keeps var/"
)


def _existing_database(url: str) -> str:
    """``url``, refused when it names a SQLite file that does not exist: connecting would
    create an empty one and leave it behind (what ``run`` and ``db upgrade`` are for).

    :raises Refused: no such file, naming its absolute path and where the URL came from.
    """
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    database = parsed.database or ""
    in_memory = database in ("", ":memory:") or "mode=memory" in database
    if parsed.get_backend_name() != "sqlite" or in_memory or parsed.query.get("uri"):
        return url
    path = Path(database).resolve()
    if path.is_file():
        return url
    if database_configured():
        source = "from DATABASE_URL"
    else:
        source = (
            "DATABASE_URL is not set: the default is gin.sqlite in GIN_VAR_DIR, else in var/ "
            "under the current folder"
        )
    raise Refused(
        f"no database at {path} ({source}); {WHICH_DATABASE} (`gin-service db upgrade` creates one)"
    )


def _where(url: URL | str) -> str:
    """A database as the messages name it: a SQLite file's absolute path, else the URL
    without its password."""
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database:
        return str(Path(parsed.database).resolve())
    return parsed.render_as_string(hide_password=True)


def _check_schema(engine: Engine) -> None:
    """Refuse a database that has no schema (never migrated) before a command runs into
    ``no such table``.

    :raises Refused: no migration was ever applied to it.
    """
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as connection:
        revision = MigrationContext.configure(connection).get_current_revision()
    if revision is None:
        raise Refused(
            f"the database {_where(engine.url)} has no schema (never migrated): "
            f"{WHICH_DATABASE}, or migrate this one with `gin-service db upgrade`"
        )


def _close(session: Session) -> None:
    """Close a ``_session()`` and its engine (a command leaves no connection behind)."""
    from sqlalchemy import Engine

    session.close()
    bind = session.get_bind()
    (bind if isinstance(bind, Engine) else bind.engine).dispose()


#: How long ``gin-service run`` gives the API and the worker to stop after a signal (Ctrl-C):
#: in-flight requests (a long-poll included) and tasks get this long, then what is still
#: running is killed with every process it started. The deployed services keep their own,
#: longer grace (deploy/gunicorn.conf.py); a task cut short is redone (docs/performance.md,
#: "The embedded default").
SHUTDOWN_GRACE_SECONDS = 6

#: Celery's warning about a worker running as root (usual in a container), silenced in the
#: worker that ``gin-service run`` starts: it warns because a worker that accepts pickle
#: would run what a message holds, and this one accepts JSON only.
ROOT_WARNING = "ignore:You're running the worker with superuser privileges"


#: How long ``gin-service run`` waits for the API and the worker to be ready before it prints
#: its banner anyway.
BANNER_WAIT_SECONDS = 60


def _stopped_with_parent() -> None:
    """In a child of ``gin-service run``, before it execs: have Linux send it SIGTERM when
    ``gin-service run`` dies, even by SIGKILL, which it cannot pass on (the children lead
    process groups of their own, so nothing else would reach them and they would run on)."""
    import contextlib
    import ctypes
    import signal

    pr_set_pdeathsig = 1
    with contextlib.suppress(OSError, AttributeError):  # not Linux: no such call
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


def _serve(
    bind: str,
    workers: int,
    extra: list[subprocess.Popen[bytes]] | None = None,
    banner: Callable[[], str] | None = None,
) -> int:
    """The API under gunicorn plus one Celery worker with beat embedded (settlement, turn
    clocks, the outbox relay, sweeps), as child processes (and ``extra`` ones already
    started); ``banner()`` printed once the API answers ``/readyz``, every gunicorn worker
    has booted and the Celery worker is ready, so that it ends what they print on starting;
    a signal or any child exiting stops them all within :data:`SHUTDOWN_GRACE_SECONDS`, a
    second signal at once.

    gunicorn and the worker each lead a process group of their own: a signal to this
    process's group (Ctrl-C in a terminal) reaches each of them once, from here (a second
    SIGTERM made Celery's warm shutdown hang), and what is left of one at the end (its pool
    processes, beat, its web workers) is killed with its group."""
    import contextlib
    import os
    import shutil
    import signal
    import subprocess
    import time
    from importlib.metadata import version

    from service.config import (
        DEFAULT_VAR_DIR,
        WEB_READY_DIR_VARIABLE,
        WORKER_READY_FILE_VARIABLE,
        child_environment,
    )

    DEFAULT_VAR_DIR.mkdir(parents=True, exist_ok=True)
    worker_ready = DEFAULT_VAR_DIR.resolve() / "worker.ready"
    worker_ready.unlink(missing_ok=True)
    web_ready = DEFAULT_VAR_DIR.resolve() / "web.ready"  # a file per gunicorn worker booted
    shutil.rmtree(web_ready, ignore_errors=True)
    web_ready.mkdir()
    worker = subprocess.Popen(
        [
            sys.executable,
            "-W",
            ROOT_WARNING,
            "-m",
            "celery",
            "-A",
            "worker.celery_app",
            "worker",
            "--beat",
            "--concurrency",
            "2",
            "--loglevel",
            "INFO",
            "--schedule",
            str(DEFAULT_VAR_DIR.resolve() / "celerybeat-schedule"),
        ],
        env=child_environment(**{WORKER_READY_FILE_VARIABLE: str(worker_ready)}),
        process_group=0,
        preexec_fn=_stopped_with_parent,
    )
    # The production settings (logs, metrics across workers) where the checkout has them; the
    # flags below still choose the address, the process count and the grace on stopping.
    config = Path(__file__).resolve().parents[1] / "deploy" / "gunicorn.conf.py"
    web = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            *(["--config", str(config)] if config.is_file() else []),
            "--bind",
            bind,
            "--workers",
            str(workers),
            "--worker-class",
            "gthread",
            "--threads",
            "4",
            "--graceful-timeout",
            str(SHUTDOWN_GRACE_SECONDS - 1),
            # gunicorn 27's control socket is one a user ($HOME/.gunicorn/gunicorn.ctl), which
            # a second run would take over; nothing here uses it.
            *(["--no-control-socket"] if int(version("gunicorn").split(".")[0]) >= 27 else []),
            "service.wsgi:app",
        ],
        env=child_environment(**{WEB_READY_DIR_VARIABLE: str(web_ready)}),
        process_group=0,
        preexec_fn=_stopped_with_parent,
    )
    groups = [web, worker]
    children = [*groups, *(extra or [])]

    stopping = False

    def kill(child: subprocess.Popen[bytes]) -> None:
        with contextlib.suppress(ProcessLookupError):  # gone meanwhile
            if child in groups:
                os.killpg(child.pid, signal.SIGKILL)
            else:
                child.kill()

    def stop(_signum: int = 0, _frame: object = None) -> None:
        nonlocal stopping
        if stopping:
            if _signum:  # asked twice: no more waiting
                for child in children:
                    kill(child)
            return
        stopping = True
        for child in children:
            if child.poll() is None:
                child.terminate()

    # A terminal that closes sends SIGHUP to this process's group only, which the children
    # are not in any more: they are stopped as for Ctrl-C.
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, stop)
    banner_by = time.monotonic() + BANNER_WAIT_SECONDS
    try:
        while all(child.poll() is None for child in children):
            if banner is not None and (
                (
                    worker_ready.exists()
                    and (not config.is_file() or len(list(web_ready.iterdir())) >= workers)
                    and _answers(bind)
                )
                or time.monotonic() > banner_by
            ):
                print(banner(), flush=True)
                banner = None
            try:
                web.wait(timeout=1 if banner is None else 0.1)
            except subprocess.TimeoutExpired:
                continue
    finally:
        stop()
        deadline = time.monotonic() + SHUTDOWN_GRACE_SECONDS
        for child in children:  # in-flight requests and tasks get the grace to finish
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=max(0.0, deadline - time.monotonic()))
        for child in children:
            kill(child)  # never left running behind us (beat's sweeps redo its work)
            child.wait()
    return web.returncode or 0


def _parser() -> Parser:
    parser = Parser(
        prog="gin-service",
        description="The operators' tool: serve, migrate, operators and keys, "
        "audit, simulate. Prints JSON (run: logs; openapi: YAML; simulate: a summary).",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    run = sub.add_parser("run", help="migrate, then serve the API and run a worker with beat")
    run.add_argument(
        "--bind",
        type=_bind,
        default=bind_address("127.0.0.1:8000"),
        help="HOST:PORT to serve on (or GIN_BIND)",
    )
    run.add_argument("--workers", type=positive_int, default=2, help="gunicorn processes")
    run.add_argument(
        "--demo",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="create (once) and print a demo operator, its API key and curl examples "
        "(default: only on the embedded SQLite default, i.e. without DATABASE_URL)",
    )
    run.add_argument(
        "--seamless-demo",
        action="store_true",
        help="also run the reference operator wallet (python -m refwallet) on "
        f"127.0.0.1:{SEAMLESS_DEMO_PORT} and a demo operator whose EUR is in seamless mode "
        "against it (development only: lets the service call loopback addresses)",
    )
    db = sub.add_parser("db", help="database migrations")
    db.add_argument("action", choices=["upgrade"], help="apply every pending migration")
    create = sub.add_parser("create-operator", help="create an operator and its first API key")
    create.add_argument("name", help="the operator's name, e.g. 'Acme Casino'")
    listed = sub.add_parser("operators", help="list operators")
    listed_sub = listed.add_subparsers(dest="action", required=True, metavar="ACTION")
    listed_sub.add_parser(
        "list", help="every operator, oldest first: id, name, created (no secrets)"
    )
    sub.add_parser("openapi", help="print the OpenAPI document (YAML)")
    sub.add_parser("purge-idempotency", help="delete idempotency keys past their retention")
    _add_audit_parser(sub)
    _add_wallet_parser(sub)
    _add_key_and_rate_parsers(sub)
    practice = sub.add_parser(
        "practice",
        help="a new practice player's token (play money), a practice table of each game and "
        "practice tournaments waiting for it with bots, through the API; prints the /play link",
    )
    practice.add_argument(
        "--url",
        default=None,
        help="the service's address (default: http://GIN_BIND, else http://127.0.0.1:8000)",
    )
    practice.add_argument(
        "--api-key",
        default=None,
        help="the operator's API key (or GIN_API_KEY; default: the demo operator's, "
        f"$GIN_VAR_DIR/{DEMO_FILE})",
    )
    practice.add_argument("--name", default="Guest", help="the player's display name")
    sub.add_parser(
        "simulate",
        add_help=False,
        help="run the simulation (arguments go to service.simulate; try --help)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["simulate"]:  # every later argument belongs to the simulation
        return _simulate(argv[1:])
    args = _parser().parse_args(argv)
    name = " ".join(["gin-service", args.command, *([args.action] if "action" in args else [])])

    from sqlalchemy.exc import ArgumentError, OperationalError

    from service.config import ConfigError
    from service.errors import ServiceError

    try:
        return COMMANDS[args.command](args)
    except Refused as exc:
        message = str(exc)
    except ServiceError as exc:
        message = exc.detail
    except ConfigError as exc:
        message = f"bad configuration: {exc}"
    except (OperationalError, ArgumentError) as exc:  # no server there, a malformed URL...
        first = (str(exc.orig) if isinstance(exc, OperationalError) else str(exc)).strip()
        message = f"cannot use the database (DATABASE_URL): {first.splitlines()[0]}"
    print(f"{name}: {message}", file=sys.stderr)
    return 2


def _run(args: argparse.Namespace) -> int:
    from service.db.migrate import upgrade

    _check_free(args.bind)
    upgrade(_settings().database_url)
    demo = not database_configured() if args.demo is None else args.demo
    base_url = _base_url(args.bind)
    banners: list[Callable[[], str]] = []
    if demo:
        operator = ensure_demo_operator()
        banners.append(lambda: demo_banner(operator, base_url, practice_link(operator, base_url)))
    if not args.seamless_demo:
        return _serve(args.bind, args.workers, banner=_joined(banners))
    from service.config import allow_private_networks

    allow_private_networks()  # the API's and the worker's: the demo wallet is on loopback
    seamless_demo = ensure_seamless_demo()
    wallet = _start_reference_wallet(seamless_demo["wallet_secret"])
    banners.append(lambda: seamless_banner(seamless_demo))
    return _serve(args.bind, args.workers, extra=[wallet], banner=_joined(banners))


def _joined(banners: list[Callable[[], str]]) -> Callable[[], str] | None:
    """The banners, made when the service is ready and printed one after the other."""
    if not banners:
        return None
    return lambda: "\n".join(make() for make in banners)


def practice_link(demo: dict[str, str], base_url: str) -> str | None:
    """A ``/play`` link for a person, with a new practice player's token (play money) and a
    practice table of each game waiting with its bots (:func:`service.practice.open_practice`,
    through the API that has just started), or ``None`` when that fails (the banner then
    names the command that makes one)."""
    import httpx

    from service.client import ApiProblem, GinClient
    from service.practice import open_practice

    try:
        with GinClient(base_url, demo["api_key"]) as operator:
            practice = open_practice(operator)
    except (ApiProblem, httpx.HTTPError) as exc:
        log.warning("no practice link for the banner: %s", exc)
        return None
    return f"{base_url}/play#token={practice.token}"


def _answers(bind: str) -> bool:
    """Whether the API at ``bind`` answers ``GET /readyz`` with 200 (a unix socket: taken
    as yes)."""
    import urllib.request

    if bind.startswith("unix:"):
        return True
    try:
        with urllib.request.urlopen(f"{_base_url(bind)}/readyz", timeout=1) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False


def _check_free(bind: str) -> None:
    """Refuse an address something else already listens on (before migrating or starting
    anything), rather than leave gunicorn to retry and fail."""
    import socket

    if bind.startswith("unix:"):
        return
    host, _, port = bind.rpartition(":")
    host = host.strip("[]") or "0.0.0.0"
    try:
        infos = socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise Refused(f"cannot bind {bind}: {exc.strerror}") from None
    family, kind, proto, _name, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            raise Refused(f"cannot bind {bind}: {exc.strerror}") from None


def _db(args: argparse.Namespace) -> int:
    from service.db.migrate import head_revision, upgrade

    url = _settings().database_url
    upgrade(url)
    print(json.dumps({"database": _where(url), "revision": head_revision()}, indent=2))
    return 0


def _create_operator(args: argparse.Namespace) -> int:
    from service.clock import utcnow
    from service.db.migrate import upgrade
    from service.usecases import unit_of_work
    from service.usecases.operators import create_operator

    if not args.name.strip():  # refused before the database is touched
        raise Refused("an operator needs a name (got an empty one)")
    upgrade(_settings().database_url)
    session = _session()
    try:
        operator, issued = unit_of_work.run(session, create_operator, session, args.name, utcnow())
    finally:
        _close(session)
    print(
        json.dumps(
            {
                "operator_id": operator.id,
                "api_key_id": issued.key.id,
                "api_key": issued.secret,
                "note": "The API key is shown only now; store it safely.",
            },
            indent=2,
        )
    )
    return 0


def _operators(args: argparse.Namespace) -> int:
    from service.usecases import unit_of_work
    from service.usecases.operators import list_operators

    session = _session()
    try:
        listed = [
            {
                "operator_id": operator.id,
                "name": operator.name,
                "created_at": operator.created_at.isoformat(),
            }
            for operator in unit_of_work.run(session, list_operators, session)
        ]
    finally:
        _close(session)
    print(json.dumps(listed, indent=2))
    return 0


def _openapi(args: argparse.Namespace) -> int:
    from service import create_app
    from service.api import spec_yaml

    sys.stdout.write(spec_yaml(create_app({"DATABASE_URL": "sqlite://"})))
    return 0


def _purge_idempotency(args: argparse.Namespace) -> int:
    from service.clock import utcnow
    from service.usecases import unit_of_work
    from service.usecases.idempotency import purge_expired

    session = _session()
    try:
        purged = unit_of_work.run(session, purge_expired, session, utcnow())
    finally:
        _close(session)
    print(json.dumps({"purged": purged}, indent=2))
    return 0


# --- gin-service api-key / rates ----------------------------------------------------------


def _add_key_and_rate_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    keys = sub.add_parser("api-key", help="create, revoke and list an operator's API keys")
    key_sub = keys.add_subparsers(dest="action", required=True, metavar="ACTION")
    create = key_sub.add_parser("create", help="issue a new API key (its secret is shown once)")
    create.add_argument("operator_id", help="op_...")
    create.add_argument("--label", default="cli", help="a name to tell the key apart")
    revoke = key_sub.add_parser("revoke", help="revoke a key at once (revoking twice is a no-op)")
    revoke.add_argument("key_id", help="key_...")
    listing = key_sub.add_parser("list", help="the operator's keys, newest first, no secrets")
    listing.add_argument("operator_id", help="op_...")
    rates = sub.add_parser("rates", help="display exchange rates (display only, never money)")
    rate_sub = rates.add_subparsers(dest="action", required=True, metavar="ACTION")
    set_rate = rate_sub.add_parser("set", help="show one BASE unit as RATE QUOTE units")
    set_rate.add_argument("operator_id", help="op_...")
    set_rate.add_argument("base", help="ISO 4217 code, e.g. EUR")
    set_rate.add_argument("quote", help="ISO 4217 code, e.g. USD")
    set_rate.add_argument("rate", help="a decimal string, e.g. 1.0850")


def _key_json(key) -> dict[str, object]:  # type: ignore[no-untyped-def]
    return {
        "api_key_id": key.id,
        "operator_id": key.operator_id,
        "prefix": key.prefix,
        "label": key.label,
        "created_at": key.created_at.isoformat(),
        "revoked_at": key.revoked_at.isoformat() if key.revoked_at else None,
    }


def _keys_and_rates(args: argparse.Namespace) -> int:
    from service.clock import utcnow
    from service.db.models import ApiKey
    from service.errors import NotFound
    from service.usecases import operators, rates, unit_of_work
    from service.usecases.auth import Principal

    session = _session()
    now = utcnow()

    def answer() -> object:
        if args.command == "api-key" and args.action == "create":
            operators.get_operator(session, args.operator_id)
            issued = operators.create_api_key(session, args.operator_id, args.label, now)
            return {
                **_key_json(issued.key),
                "api_key": issued.secret,
                "note": "The API key is shown only now; store it safely.",
            }
        if args.command == "api-key" and args.action == "revoke":
            found = session.get(ApiKey, args.key_id)
            if found is None:
                raise NotFound(f"No API key {args.key_id!r}.")
            return _key_json(operators.revoke_api_key(session, found.operator_id, args.key_id, now))
        if args.command == "api-key":
            operators.get_operator(session, args.operator_id)
            return [_key_json(key) for key in operators.list_api_keys(session, args.operator_id)]
        operators.get_operator(session, args.operator_id)
        rate = rates.set_rate(
            session, Principal(args.operator_id), args.base, args.quote, args.rate, now
        )
        return {
            "operator_id": args.operator_id,
            "base": rate.base,
            "quote": rate.quote,
            "rate": f"{rate.rate:f}",
            "updated_at": rate.rate_at.isoformat(),
        }

    try:
        out = unit_of_work.run(session, answer)
    finally:
        _close(session)
    print(json.dumps(out, indent=2))
    return 0


# --- gin-service simulate ------------------------------------------------------------------


def _practice(args: argparse.Namespace) -> int:
    import httpx

    from service.client import ApiProblem, GinClient
    from service.config import simulation_api_key
    from service.practice import GAME_NAMES, open_practice

    key = args.api_key or simulation_api_key()
    if key is None:
        try:
            key = str(json.loads(demo_file().read_text(encoding="utf-8"))["api_key"])
        except (OSError, ValueError, KeyError, TypeError):
            raise Refused(
                f"no --api-key, no GIN_API_KEY and no demo operator in {demo_file()} "
                "(make run creates one)"
            ) from None
    url = (args.url or _base_url(bind_address("127.0.0.1:8000"))).rstrip("/")
    try:
        with GinClient(url, key) as operator:
            practice = open_practice(operator, display_name=args.name)
    except ApiProblem as exc:
        raise Refused(f"{url} refused: {exc}") from None
    except httpx.HTTPError as exc:
        raise Refused(f"cannot reach {url} ({exc}): is the service running (make run)?") from None
    print(
        json.dumps(
            {
                "play_url": f"{url}/play#token={practice.token}",
                "player_id": practice.player_id,
                "token": practice.token,
                "expires_at": practice.expires_at,
                "tables": [
                    {"id": t["id"], "game": GAME_NAMES[t["game"]], "match_id": t["match_id"]}
                    for t in practice.tables
                ],
                "tournaments": [
                    {"id": t["id"], "name": t["name"], "kind": t["kind"], "game": t["game"]}
                    for t in practice.tournaments
                ],
                "note": "Open play_url: the page keeps the token in the tab (sessionStorage) "
                "and clears it from the address bar; a fragment never reaches the server.",
            },
            indent=2,
        )
    )
    return 0


def _simulate(argv: list[str]) -> int:
    """Forward to ``service.simulate.main(argv)``, imported only now (it is optional)."""
    import importlib

    try:
        # import_module, not "from service import simulate": it honours sys.modules first
        simulate = importlib.import_module("service.simulate")
    except ImportError as exc:
        if exc.name not in ("service.simulate", None):
            raise  # the simulation exists but one of its own imports is broken
        print(
            "gin-service simulate: the simulation is not available in this installation "
            "(no module service.simulate)",
            file=sys.stderr,
        )
        return 2
    result = simulate.main(argv)
    return int(result or 0)


# --- gin-service run: the demo operator and the first-minutes examples -------------------

DEMO_FILE = "demo-operator.json"


def ensure_demo_operator(file: str = DEMO_FILE, name: str = "Demo Casino") -> dict[str, str]:
    """The demo operator and its API key: created on the first run, then read back from
    ``$GIN_VAR_DIR/<file>`` (``demo-operator.json``) as long as the key still works in this
    database (a deleted database or a revoked key gets a fresh demo operator)."""
    from service.clock import utcnow
    from service.db.models import ApiKey
    from service.usecases import unit_of_work
    from service.usecases.auth import hash_api_key
    from service.usecases.operators import create_operator

    path = demo_file(file)
    session = _session()
    try:
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))
            secret, key_id = str(saved["api_key"]), str(saved["api_key_id"])
        except (OSError, ValueError, KeyError, TypeError):
            saved = None
        if saved is not None:
            with session.begin():
                key = session.get(ApiKey, key_id)
                if (
                    key is not None
                    and key.revoked_at is None
                    and key.key_hash == hash_api_key(secret)
                ):
                    return {name: str(value) for name, value in saved.items()}
        operator, issued = unit_of_work.run(session, create_operator, session, name, utcnow())
        demo = {"operator_id": operator.id, "api_key_id": issued.key.id, "api_key": issued.secret}
    finally:
        _close(session)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(demo, indent=2) + "\n", encoding="utf-8")
    path.chmod(0o600)  # it holds a working API key
    return demo


SEAMLESS_DEMO_PORT = 8070
SEAMLESS_DEMO_FILE = "demo-seamless-operator.json"


def ensure_seamless_demo() -> dict[str, str]:
    """A demo operator (:func:`ensure_demo_operator`, kept in
    ``$GIN_VAR_DIR/demo-seamless-operator.json``) whose EUR is in seamless mode against the
    reference wallet on :data:`SEAMLESS_DEMO_PORT`, with the wallet's signing secret, read
    from the database (this is the operators' own tool)."""
    from service.clock import utcnow
    from service.db.wallet_models import OperatorWallet
    from service.usecases import seamless, unit_of_work
    from service.usecases.auth import Principal

    demo = ensure_demo_operator(SEAMLESS_DEMO_FILE, "Demo Seamless Casino")
    session = _session()
    try:
        unit_of_work.run(
            session,
            seamless.configure,
            session,
            Principal(demo["operator_id"]),
            "EUR",
            mode="seamless",
            url=f"http://127.0.0.1:{SEAMLESS_DEMO_PORT}",
            timeout_ms=seamless.DEFAULT_TIMEOUT_MS,
            now=utcnow(),
            allow_private=True,
        )
        key = (demo["operator_id"], "EUR")
        wallet = unit_of_work.run(session, session.get, OperatorWallet, key)
        assert wallet is not None and wallet.secret is not None
        return demo | {"wallet_secret": wallet.secret}
    finally:
        _close(session)


def _start_reference_wallet(secret: str) -> subprocess.Popen[bytes]:
    """The reference operator wallet as a child process, with its own SQLite file; its
    signing secret goes in its environment (``REFWALLET_SECRET``), which only its user may
    read, not on its command line, which every user sees in ``ps``."""
    import subprocess

    from service.config import DEFAULT_VAR_DIR, child_environment

    _check_free(f"127.0.0.1:{SEAMLESS_DEMO_PORT}")
    database = (DEFAULT_VAR_DIR / "refwallet.sqlite").resolve()
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "refwallet",
            "serve",
            "--port",
            str(SEAMLESS_DEMO_PORT),
            "--db",
            str(database),
        ],
        env=child_environment(REFWALLET_SECRET=secret),
    )


def seamless_banner(demo: dict[str, str]) -> str:
    wallet = f"http://127.0.0.1:{SEAMLESS_DEMO_PORT}"
    rule = "-" * 78
    return "\n".join(
        [
            rule,
            f"Seamless demo operator {demo['operator_id']} (EUR stays in its wallet, {wallet})",
            f"API key: {demo['api_key']}",
            "Give a player money in the operator's wallet (its external_id, as registered):",
            f"  curl -X PUT {wallet}/admin/players/alice-1 -H 'Content-Type: application/json' "
            '-d \'{"currency": "EUR", "balance": 10000}\'',
            f"Its calls: GET /v1/wallet-calls; the wallet's side: {wallet}/admin/transactions",
            rule,
        ]
    )


def _base_url(bind: str) -> str:
    host, _, port = bind.rpartition(":")
    if host in ("", "0.0.0.0", "[::]", "::"):
        host = "127.0.0.1"
    return f"http://{host}:{port}"


#: The walk-through of docs/walkthrough.md (where README.md's first match leads), after its
#: ``GIN=`` and ``KEY=`` lines (which :func:`demo_script` fills in); a test keeps the two the
#: same.
DEMO_SCRIPT = r"""# docs/walkthrough.md's first match; j prints one field of a JSON answer
AUTH="Authorization: Bearer $KEY"; JSON="Content-Type: application/json"
j() { python3 -c 'import json, sys
doc = value = json.load(sys.stdin)
try:
    for name in sys.argv[1].split("."): value = value[int(name) if name.isdigit() else name]
except (KeyError, IndexError, TypeError): sys.exit(f"no {sys.argv[1]} in {json.dumps(doc)}")
print(value if isinstance(value, str) else json.dumps(value))' "$1"; }

# 1. two players, each depositing 15.00 EUR (integer minor units; the key names the deposit)
P1=$(curl -s -X POST $GIN/v1/players -H "$AUTH" -H "$JSON" \
     -d "{\"external_id\": \"alice-$RANDOM\", \"display_name\": \"Alice\"}" | j id)
P2=$(curl -s -X POST $GIN/v1/players -H "$AUTH" -H "$JSON" \
     -d "{\"external_id\": \"bob-$RANDOM\", \"display_name\": \"Bob\"}" | j id)
for P in $P1 $P2; do
  curl -s -X POST $GIN/v1/players/$P/deposits -H "$AUTH" -H "$JSON" \
       -H "Idempotency-Key: deposit-$P" -d '{"amount": {"amount": 1500, "currency": "EUR"}}' \
    | j wallet.available
done

# 2. a Match Play table at 5.00 EUR a seat, 10% fee, an hour's clock (typing is slow)
TABLE=$(curl -s -X POST $GIN/v1/tables -H "$AUTH" -H "$JSON" -d '{"format": "match_play",
  "currency": "EUR", "stake": 500, "fee": {"bps": 1000},
  "clock": {"turn_seconds": 3600, "bank_seconds": 3600, "fill_timeout_seconds": 3600}}')
T=$(echo "$TABLE" | j id); M=$(echo "$TABLE" | j match_id)
echo "table $T, match $M"

# 3. a player token each; both sit down (the stake goes to escrow; the second seat starts the match)
T1=$(curl -s -X POST $GIN/v1/players/$P1/tokens -H "$AUTH" -H "$JSON" \
     -d '{"ttl_seconds": 3600}' | j token)
T2=$(curl -s -X POST $GIN/v1/players/$P2/tokens -H "$AUTH" -H "$JSON" \
     -d '{"ttl_seconds": 3600}' | j token)
for TOKEN in $T1 $T2; do
  curl -s -X POST $GIN/v1/tables/$T/seats -H "Authorization: Bearer $TOKEN" -H "$JSON" \
       -H "Idempotency-Key: seat-$T" -d '{}' | j status
done

# 4. the view of whoever is to act: hand, deadwood, legal actions (ready-to-send bodies)
VIEW=$(curl -s $GIN/v1/matches/$M -H "Authorization: Bearer $T1")
if [ "$(echo "$VIEW" | j hand.to_act)" = "$(echo "$VIEW" | j you)" ]; then ME=$T1; else ME=$T2; fi
VIEW=$(curl -s $GIN/v1/matches/$M -H "Authorization: Bearer $ME")
echo "$VIEW" | j hand.hand; echo "$VIEW" | j hand.deadwood; echo "$VIEW" | j hand.legal_actions

# 5. send the first legal action with the view's version
BODY=$(echo "$VIEW" | python3 -c 'import json, sys
view = json.load(sys.stdin)
print(json.dumps({**view["hand"]["legal_actions"][0], "expected_version": view["version"]}))')
echo "$BODY"
curl -s -X POST $GIN/v1/matches/$M/actions -H "Authorization: Bearer $ME" -H "$JSON" \
     -d "$BODY" | j version

# 6. Alice resigns; a worker settles within seconds: Bob is paid 900, his wallet holds 1900
curl -s -X POST $GIN/v1/matches/$M/actions -H "Authorization: Bearer $T1" -H "$JSON" \
     -d '{"action": "RESIGN"}' | j status
for i in $(seq 30); do
  SETTLEMENT=$(curl -sf $GIN/v1/matches/$M/settlement -H "$AUTH") && break; sleep 1
done
echo "$SETTLEMENT" | j payouts
curl -s $GIN/v1/players/$P2/wallets/EUR -H "$AUTH" | j available

# 7. the audit: the settlement replayed, the operator's books checked (true, true)
curl -s $GIN/v1/audit/settlements/$M -H "$AUTH" | j ok
curl -s $GIN/v1/audit/ledger -H "$AUTH" | j ok
"""


def demo_script(demo: dict[str, str], base_url: str) -> str:
    """The copy-paste walk-through with this service's address and the demo key, for bash
    (it uses ``$RANDOM``)."""
    return f"GIN={base_url}\nKEY={demo['api_key']}\n" + DEMO_SCRIPT


def demo_file(file: str = DEMO_FILE) -> Path:
    """Where a demo operator and its key are kept, as an absolute path."""
    from service.config import DEFAULT_VAR_DIR

    return (DEFAULT_VAR_DIR / file).resolve()


def demo_banner(demo: dict[str, str], base_url: str, play_link: str | None = None) -> str:
    rule = "-" * 78
    practice = (
        f"Practice tables and tournaments for people (the token lasts an hour; make practice "
        f"makes another):\n"
        f"  {play_link}"
        if play_link
        else f"Practice table for people: {base_url}/play  (a player token and tables with "
        "bots: .venv/bin/gin-service practice, or make practice)"
    )
    return "\n".join(
        [
            rule,
            f"Demo operator {demo['operator_id']}",
            f"API key: {demo['api_key']}",
            f"(kept in {demo_file()}: read it again there once the log has scrolled on)",
            f"The API: {base_url}  (docs at {base_url}/docs, health at {base_url}/readyz)",
            practice,
            "Paste this into bash (python3 and curl needed):",
            rule,
            demo_script(demo, base_url).rstrip("\n"),
            rule,
        ]
    )


# --- gin-service audit -------------------------------------------------------------------


def _iso(text: str):  # type: ignore[no-untyped-def]
    from datetime import UTC, datetime

    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO 8601 time: {text!r}") from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _add_audit_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    audit = sub.add_parser(
        "audit",
        help="replay settlements, recompute their statements, check them against the ledger "
        "and check the ledger's invariants; exit status 1 on any discrepancy",
    )
    audit.add_argument("--match", metavar="MATCH_ID", help="audit this match's settlement only")
    audit.add_argument(
        "--since",
        type=_iso,
        metavar="ISO",
        help="settlements created at or after this time (default: the first)",
    )
    audit.add_argument(
        "--until",
        type=_iso,
        metavar="ISO",
        help="settlements created before this time (default: now)",
    )
    audit.add_argument("--operator", metavar="OPERATOR_ID", help="one operator's books only")
    audit.add_argument(
        "--report", metavar="PATH", help="also write the JSON report (the one printed) here"
    )
    audit.add_argument("--no-progress", action="store_true", help="no progress bar")


def _add_wallet_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    wallet = sub.add_parser("wallet", help="seamless wallets: the reconciliation report and diff")
    wallet_sub = wallet.add_subparsers(dest="action", required=True, metavar="ACTION")
    report = wallet_sub.add_parser(
        "report",
        help="the operator's reconciliation report for one UTC day: every transaction id "
        "sent to its wallet (debits, rollbacks, credits), their rounds, amounts and states",
    )
    diff = wallet_sub.add_parser(
        "diff",
        help="compare the day's report with the operator's export (JSON: a list, or an "
        "object with 'transactions', of {transaction_id, kind, round_id, amount, currency, "
        "state}); exit status 1 on any discrepancy",
    )
    for parser in (report, diff):
        parser.add_argument("operator", metavar="OPERATOR_ID")
        parser.add_argument("date", metavar="YYYY-MM-DD")
    diff.add_argument("export", metavar="EXPORT.json", help="the operator's export ('-': stdin)")


def _wallet(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from service.outbound.wallet_protocol import export_lines, reconcile
    from service.usecases import seamless, unit_of_work
    from service.usecases.operators import get_operator

    session = _session()
    try:
        unit_of_work.run(session, get_operator, session, args.operator)
        ours = unit_of_work.run(session, seamless.report, session, args.operator, args.date)
    finally:
        _close(session)
    if args.action == "report":
        listing = {
            "operator_id": args.operator,
            "date": args.date,
            "data": [asdict(x) for x in ours],
        }
        print(json.dumps(listing, indent=2))
        return 0
    try:
        raw = sys.stdin.read() if args.export == "-" else Path(args.export).read_text()
        theirs = export_lines(raw)
    except (OSError, ValueError) as exc:
        raise Refused(f"cannot read the export {args.export}: {exc}") from None
    found = reconcile(ours, theirs)
    summary = {
        "operator_id": args.operator,
        "date": args.date,
        "ours": len(ours),
        "theirs": len(theirs),
        "discrepancies": [asdict(d) for d in found],
    }
    print(json.dumps(summary, indent=2))
    return 1 if found else 0


def _audit(args: argparse.Namespace) -> int:
    from tqdm import tqdm  # type: ignore[import-untyped]

    from service.usecases import unit_of_work
    from service.usecases.audit import run_audit
    from service.usecases.operators import get_operator

    if args.match and (args.since or args.until):
        raise Refused("--match cannot be combined with --since/--until")
    if args.since and args.until and args.since >= args.until:
        raise Refused(
            f"--since {args.since.isoformat()} is not before --until {args.until.isoformat()}"
        )
    if args.report and not Path(args.report).resolve().parent.is_dir():
        raise Refused(f"--report {args.report}: no such folder")

    def progress(ids: list[str]):  # type: ignore[no-untyped-def]
        return tqdm(
            ids,
            desc="settlements",
            unit="stl",
            file=sys.stderr,
            disable=args.no_progress,
            dynamic_ncols=True,
        )

    session = _session()
    try:
        if args.operator:  # an unknown one is a typo, not an operator with clean books
            unit_of_work.run(session, get_operator, session, args.operator)
        report = run_audit(
            session,
            match_id=args.match,
            since=args.since,
            until=args.until,
            operator_id=args.operator,
            progress=progress,
        )
    finally:
        _close(session)
    data = json.dumps(report.to_dict(), indent=2, sort_keys=True) + "\n"
    if args.report:
        try:
            Path(args.report).write_text(data, encoding="utf-8")
        except OSError as exc:
            raise Refused(f"--report {args.report}: {exc.strerror}") from None
    for failed in report.failed:  # for the reader at a terminal; the report has them all
        for problem in failed.discrepancies:
            print(f"{failed.match_id} ({failed.settlement_id}): {problem}", file=sys.stderr)
    if report.ledger is not None:
        for problem in report.ledger.discrepancies:
            print(f"ledger: {problem}", file=sys.stderr)
    sys.stdout.write(data)
    return 0 if report.ok else 1


#: ``gin-service COMMAND`` -> its function (``simulate`` is forwarded before parsing).
COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "run": _run,
    "db": _db,
    "create-operator": _create_operator,
    "operators": _operators,
    "openapi": _openapi,
    "purge-idempotency": _purge_idempotency,
    "audit": _audit,
    "wallet": _wallet,
    "api-key": _keys_and_rates,
    "rates": _keys_and_rates,
    "practice": _practice,
}


if __name__ == "__main__":
    raise SystemExit(main())
