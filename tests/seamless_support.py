"""The reference operator wallet (``refwallet``) as a real process, for the seamless
wallet tests: started on a port chosen beforehand (the operator's wallet settings name its
URL before the signing secret exists), driven through its admin API over HTTP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.conftest import free_port


class RefWallet:
    """A running reference wallet: its URL and its admin API."""

    def __init__(self, url: str, process: subprocess.Popen[str]) -> None:
        self.url = url
        self.process = process

    def admin(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.url + "/admin" + path,
            data=data,
            method=method,
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                raw = answer.read()
        except urllib.error.HTTPError as error:
            raw = error.read()
            if error.code != 404:
                raise AssertionError(f"{method} {path}: {error.code} {raw!r}") from None
            return None
        return json.loads(raw) if raw else None

    def player(self, external_id: str, balance: int, currency: str = "EUR", **extra: Any) -> None:
        body = {"currency": currency, "balance": balance, "disabled": False, **extra}
        self.admin("PUT", f"/players/{external_id}", body)

    def balance(self, external_id: str) -> int:
        return int(self.admin("GET", f"/players/{external_id}")["balance"])

    def faults(self, *rules: dict[str, Any]) -> None:
        self.admin("POST", "/faults", {"rules": list(rules)})

    def transactions(self) -> list[dict[str, Any]]:
        return list(self.admin("GET", "/transactions")["data"])

    def requests(self) -> list[dict[str, Any]]:
        found = self.admin("GET", "/requests")
        return list(found["data"] if isinstance(found, dict) else found)


def clearing_balance(sessions: Any, operator_id: str, player_id: str, currency: str = "EUR") -> int:
    """Our ledger's view of what the operator's wallet gained from the player: the player's
    clearing sub-account (credits in, debits out); ``sessions`` makes a session."""
    from sqlalchemy import select

    from service.db.models import LedgerAccount
    from service.ledger.postings import AccountRef
    from service.usecases import unit_of_work

    key = str(AccountRef.cashier_clearing(operator_id, player_id, currency))
    db = sessions()
    try:
        found = unit_of_work.run(
            db, lambda: db.scalar(select(LedgerAccount.balance).where(LedgerAccount.key == key))
        )
    finally:
        db.close()
    return int(found or 0)


def wallet_port() -> int:
    return free_port()


@contextmanager
def reference_wallet(folder: Path, port: int, *secrets: str) -> Iterator[RefWallet]:
    """``python -m refwallet serve`` on ``port`` with its own database in ``folder``,
    accepting calls signed with any of ``secrets``; stopped (SIGTERM) afterwards."""
    command = [sys.executable, "-m", "refwallet", "serve", "--port", str(port)]
    command += ["--db", str(folder / f"refwallet-{port}.sqlite")]
    env = {**os.environ, "REFWALLET_SECRET": ",".join(secrets)}  # never on a command line
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline().strip()
        assert line.startswith("listening on http://"), line
        yield RefWallet(line.removeprefix("listening on "), process)
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()
