"""``python -m service.refwallet serve``: the reference wallet as its own process.

It binds first, then prints one line, ``listening on http://HOST:PORT`` (the real port, so
``--port 0`` works for tests), and serves until SIGTERM or SIGINT, exiting 0. Exit status 2,
with one line on stderr, when it cannot start (a usage error, an address in use, a database
file it cannot open).
"""

from __future__ import annotations

import argparse
import signal
import sqlite3
import sys
import threading
from pathlib import Path
from types import FrameType

from werkzeug.serving import make_server

from service.refwallet.app import create_app

DEFAULT_DB = "var/refwallet.sqlite"
DEFAULT_PORT = 8070


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m service.refwallet",
        description="A reference operator wallet for the seamless-wallet contract.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser(
        "serve",
        help="serve the wallet until SIGTERM/SIGINT",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to bind")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, help="port (0: any free one)")
    serve.add_argument("--db", default=DEFAULT_DB, help="SQLite file (parent folder created)")
    serve.add_argument(
        "--secret",
        action="append",
        required=True,
        help="a signing secret (whsec_...); repeat it while a rotated secret overlaps",
    )
    return parser


def serve(host: str, port: int, db: str, secrets: list[str]) -> int:
    """Bind, announce the address, serve on a background thread until a signal asks to stop.

    The main thread only waits for the signal: ``shutdown()`` must not be called from the
    thread running ``serve_forever()``, and request threads are daemons, so a request still
    sleeping in a fault does not keep the process alive.
    """
    Path(db).parent.mkdir(parents=True, exist_ok=True)
    app = create_app(db, secrets)
    server = make_server(host, port, app, threaded=True)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    thread = threading.Thread(target=server.serve_forever, name="refwallet-http", daemon=True)
    thread.start()
    shown = f"[{host}]" if ":" in host else host
    print(f"listening on http://{shown}:{server.server_port}", flush=True)
    stop.wait()
    server.shutdown()
    server.server_close()
    thread.join()
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return serve(args.host, args.port, args.db, args.secret)
    except (OSError, sqlite3.Error) as exc:
        sys.stderr.write(f"refwallet: cannot start: {exc}\n")
        return 2


if __name__ == "__main__":
    sys.exit(main())
