"""Command-line entry point.

- ``gin-service run``: migrate the database, serve the API under gunicorn and run a Celery
  worker with beat (embedded defaults: SQLite and a filesystem broker, no servers);
- ``gin-service create-operator NAME``: create an operator and print its first API key (once);
- ``gin-service db upgrade``: apply migrations; ``gin-service openapi``: print the OpenAPI
  document; ``gin-service purge-idempotency``: drop idempotency keys past retention;
- ``gin-service audit``: replay and check settlements and the ledger (exit 1 on any
  discrepancy).
"""

from __future__ import annotations

import argparse
import json
import os
import sys


def _settings():  # type: ignore[no-untyped-def]
    from service.config import DEFAULT_VAR_DIR, Settings

    settings = Settings.from_env()
    if settings.database_url.startswith("sqlite"):
        DEFAULT_VAR_DIR.mkdir(parents=True, exist_ok=True)
    return settings


def _session():  # type: ignore[no-untyped-def]
    from service.db import make_engine, make_sessionmaker

    return make_sessionmaker(make_engine(_settings().database_url))()


def _serve(bind: str, workers: int) -> int:
    """The API under gunicorn plus one Celery worker with beat embedded (settlement, turn
    clocks, the outbox relay, sweeps), as child processes; a signal or either child exiting
    stops both."""
    import signal
    import subprocess

    from service.config import DEFAULT_VAR_DIR

    DEFAULT_VAR_DIR.mkdir(parents=True, exist_ok=True)
    worker = subprocess.Popen([
        sys.executable, "-m", "celery", "-A", "worker.celery_app", "worker", "--beat",
        "--concurrency", "2", "--loglevel", "INFO",
        "--schedule", str(DEFAULT_VAR_DIR.resolve() / "celerybeat-schedule"),
    ])
    web = subprocess.Popen([
        sys.executable, "-m", "gunicorn", "--bind", bind, "--workers", str(workers),
        "--worker-class", "gthread", "--threads", "4", "service.wsgi:app",
    ])
    children = [web, worker]

    def stop(_signum: int = 0, _frame: object = None) -> None:
        for child in children:
            if child.poll() is None:
                child.terminate()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        while all(child.poll() is None for child in children):
            try:
                web.wait(timeout=1)
            except subprocess.TimeoutExpired:
                continue
    finally:
        stop()
        for child in children:
            child.wait(timeout=60)
    return web.returncode or 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gin-service")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="migrate, then serve the API and run a worker with beat")
    run.add_argument("--bind", default=os.environ.get("GIN_BIND", "127.0.0.1:8000"))
    run.add_argument("--workers", type=int, default=2)
    db = sub.add_parser("db", help="database migrations")
    db.add_argument("action", choices=["upgrade"])
    create = sub.add_parser("create-operator", help="create an operator and its first API key")
    create.add_argument("name")
    sub.add_parser("openapi", help="print the OpenAPI document (YAML)")
    sub.add_parser("purge-idempotency", help="delete idempotency keys past their retention")
    _add_audit_parser(sub)
    args = parser.parse_args(argv)

    if args.command == "run":
        from service.db.migrate import upgrade

        upgrade(_settings().database_url)
        return _serve(args.bind, args.workers)
    if args.command == "db":
        from service.db.migrate import upgrade

        upgrade(_settings().database_url)
        print("database is at the newest revision")
    elif args.command == "create-operator":
        from service.clock import utcnow
        from service.db.migrate import upgrade
        from service.usecases.operators import create_operator

        upgrade(_settings().database_url)
        operator, issued = create_operator(_session(), args.name, utcnow())
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
    elif args.command == "openapi":
        from service import create_app
        from service.api import spec_yaml

        sys.stdout.write(spec_yaml(create_app({"DATABASE_URL": "sqlite://"})))
    elif args.command == "purge-idempotency":
        from service.clock import utcnow
        from service.usecases.idempotency import purge_expired

        print(f"purged {purge_expired(_session(), utcnow())} expired idempotency keys")
    elif args.command == "audit":
        return _audit(args)
    return 0


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
    audit.add_argument("--since", type=_iso, metavar="ISO",
                       help="settlements created at or after this time (default: the first)")
    audit.add_argument("--until", type=_iso, metavar="ISO",
                       help="settlements created before this time (default: now)")
    audit.add_argument("--operator", metavar="OPERATOR_ID", help="one operator's books only")
    audit.add_argument("--report", metavar="PATH", help="write the JSON report here")
    audit.add_argument("--no-progress", action="store_true", help="no progress bar")


def _audit(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from service.db import make_engine, make_sessionmaker
    from service.errors import NotFound
    from service.usecases.audit import run_audit

    if args.match and (args.since or args.until):
        print("gin-service audit: --match cannot be combined with --since/--until",
              file=sys.stderr)
        return 2

    def progress(ids: list[str]):  # type: ignore[no-untyped-def]
        return tqdm(ids, desc="settlements", unit="stl", file=sys.stderr,
                    disable=args.no_progress, dynamic_ncols=True)

    engine = make_engine(_settings().database_url, pool_size=1)
    session = make_sessionmaker(engine)()
    try:
        report = run_audit(session, match_id=args.match, since=args.since, until=args.until,
                           operator_id=args.operator, progress=progress)
    except NotFound as exc:
        print(f"gin-service audit: {exc.detail}", file=sys.stderr)
        return 2
    finally:
        session.close()
        engine.dispose()
    data = report.to_dict()
    if args.report:
        with open(args.report, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=2, sort_keys=True)
            out.write("\n")
    for failed in report.failed:
        for problem in failed.discrepancies:
            print(f"{failed.match_id} ({failed.settlement_id}): {problem}", file=sys.stderr)
    if report.ledger is not None:
        for problem in report.ledger.discrepancies:
            print(f"ledger: {problem}", file=sys.stderr)
    ledger_problems = 0 if report.ledger is None else len(report.ledger.discrepancies)
    print(
        f"audit {'OK' if report.ok else 'FAILED'}: {len(report.settlements)} settlements, "
        f"{len(report.failed)} with discrepancies; ledger: {ledger_problems} problems"
        + (f"; report written to {args.report}" if args.report else "")
    )
    return 0 if report.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
