"""``python -m refwallet serve``: the reference wallet as its own process.

It binds first, then prints one line, ``listening on http://HOST:PORT`` (the real port, so
``--port 0`` works for tests), and serves until SIGTERM or SIGINT, exiting 0. Exit status 2,
with one line on stderr, when it cannot start (a usage error, no signing secret, an address in
use, a database file it cannot open).

The signing secrets come from the environment (``REFWALLET_SECRET``) or a file
(``--secret-file``), never from the command line, which every user of the machine can read
(``ps``, ``/proc/<pid>/cmdline``).
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

from refwallet.app import create_app
from service.config import refwallet_secrets

DEFAULT_DB = "var/refwallet.sqlite"
DEFAULT_PORT = 8070
#: The environment variable holding the signing secrets, comma-separated (read by
#: :func:`service.config.refwallet_secrets`).
SECRET_ENV = "REFWALLET_SECRET"


class HelpWithDefaults(argparse.ArgumentDefaultsHelpFormatter):
    """``--help`` shows each option's default, unless it has none."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        return action.help if action.default is None else super()._get_help_string(action)


class NoSecret(ValueError):
    """Raised when neither ``--secret-file`` nor ``REFWALLET_SECRET`` gives a signing secret."""


class SecretOnCommandLine(argparse.Action):
    """``--secret`` is refused without echoing its value: a secret on the command line is
    visible to every user of the machine."""

    def __call__(self, parser: argparse.ArgumentParser, *_args: object) -> None:
        parser.error(
            f"--secret is not accepted (every user could read it in ps): set {SECRET_ENV} "
            "or pass --secret-file PATH"
        )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m refwallet",
        description="A reference operator wallet for the seamless-wallet contract.",
        formatter_class=HelpWithDefaults,
    )
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser(
        "serve",
        help="serve the wallet until SIGTERM/SIGINT",
        formatter_class=HelpWithDefaults,
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to bind")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, help="port (0: any free one)")
    serve.add_argument("--db", default=DEFAULT_DB, help="SQLite file (parent folder created)")
    serve.add_argument(
        "--secret-file",
        metavar="PATH",
        help="a file holding the signing secrets (whsec_...), one a line: several while a "
        f"rotated secret overlaps (default: ${SECRET_ENV}, comma-separated)",
    )
    serve.add_argument("--secret", nargs="?", action=SecretOnCommandLine, help=argparse.SUPPRESS)
    return parser


def signing_secrets(secret_file: str | None) -> list[str]:
    """The secrets in ``secret_file`` (one a line, blank lines skipped), or else in
    ``$REFWALLET_SECRET`` (comma-separated).

    :raises NoSecret: neither gives one.
    :raises OSError: the file cannot be read.
    """
    if secret_file is not None:
        lines = Path(secret_file).read_text(encoding="utf-8").splitlines()
        secrets, source = [line.strip() for line in lines if line.strip()], secret_file
    else:
        secrets, source = refwallet_secrets(), f"${SECRET_ENV}"
    if not secrets:
        raise NoSecret(
            f"no signing secret in {source}: set {SECRET_ENV} (comma-separated) or pass "
            "--secret-file PATH (one a line)"
        )
    return secrets


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
        secrets = signing_secrets(args.secret_file)
    except NoSecret as exc:
        sys.stderr.write(f"refwallet: cannot start: {exc}\n")
        return 2
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        sys.stderr.write(f"refwallet: cannot start: --secret-file {args.secret_file}: {reason}\n")
        return 2
    try:
        return serve(args.host, args.port, args.db, secrets)
    except (OSError, sqlite3.Error) as exc:
        sys.stderr.write(f"refwallet: cannot start: {exc}\n")
        return 2


if __name__ == "__main__":
    sys.exit(main())
