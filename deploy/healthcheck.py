"""Container health check for the image's HEALTHCHECK, by the role the entrypoint recorded.

- api: ``GET /healthz`` on the bound port answers 200;
- worker: this container's Celery worker answers a ping through the broker;
- beat, migrate and one-off commands: the container runs (exit 0).

Exit status 0 when healthy, 1 otherwise (what Docker expects). ``GIN_ROLE_FILE`` (default
``/tmp/gin-role``) is where the entrypoint records the role.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

from service.config import ServerSettings


def role() -> str:
    try:
        return Path(ServerSettings.from_env().role_file).read_text().strip()
    except OSError:
        return "api"


def api_healthy() -> bool:
    port = (ServerSettings.from_env().bind or "0.0.0.0:8000").rsplit(":", 1)[-1]
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def worker_healthy() -> bool:
    node = f"celery@{socket.gethostname()}"
    result = subprocess.run(
        [
            "celery",
            "-A",
            "worker.celery_app",
            "inspect",
            "ping",
            "--timeout",
            "5",
            "--destination",
            node,
        ],
        capture_output=True,
        timeout=20,
        check=False,
    )
    return result.returncode == 0


def main() -> int:
    current = role()
    if current == "api":
        return 0 if api_healthy() else 1
    if current == "worker":
        return 0 if worker_healthy() else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
