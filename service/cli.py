"""Command-line entry point: ``gin-service run`` serves the API on the embedded defaults."""

from __future__ import annotations

import argparse
import os
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gin-service")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="serve the API with gunicorn on the embedded defaults")
    run.add_argument("--bind", default=os.environ.get("GIN_BIND", "127.0.0.1:8000"))
    run.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)

    if args.command == "run":
        from service.config import DEFAULT_VAR_DIR

        DEFAULT_VAR_DIR.mkdir(parents=True, exist_ok=True)
        os.execvp(
            sys.executable,
            [
                sys.executable, "-m", "gunicorn",
                "--bind", args.bind,
                "--workers", str(args.workers),
                "service.wsgi:app",
            ],
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
