"""Command-line entry point.

``gin-service run`` migrates the database and serves the API (embedded defaults: SQLite, no
servers); ``gin-service create-operator NAME`` creates an operator and prints its first API key
(once); ``gin-service db upgrade`` applies migrations; ``gin-service openapi`` prints the
OpenAPI document; ``gin-service purge-idempotency`` drops idempotency keys past retention.
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gin-service")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="migrate, then serve the API with gunicorn")
    run.add_argument("--bind", default=os.environ.get("GIN_BIND", "127.0.0.1:8000"))
    run.add_argument("--workers", type=int, default=2)
    db = sub.add_parser("db", help="database migrations")
    db.add_argument("action", choices=["upgrade"])
    create = sub.add_parser("create-operator", help="create an operator and its first API key")
    create.add_argument("name")
    sub.add_parser("openapi", help="print the OpenAPI document (YAML)")
    sub.add_parser("purge-idempotency", help="delete idempotency keys past their retention")
    args = parser.parse_args(argv)

    if args.command == "run":
        from service.db.migrate import upgrade

        upgrade(_settings().database_url)
        os.execvp(
            sys.executable,
            [
                sys.executable,
                "-m",
                "gunicorn",
                "--bind",
                args.bind,
                "--workers",
                str(args.workers),
                "service.wsgi:app",
            ],
        )
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
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
