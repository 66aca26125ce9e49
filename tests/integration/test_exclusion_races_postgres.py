"""A self-exclusion racing an opponent's last seat at the same open table, on PostgreSQL.

Both wait for the table's row lock (held meanwhile by a third transaction), queued in a
chosen order; PostgreSQL grants a row lock to its waiters in turn. Whichever goes first, the
outcome is one of the two consistent ones (docs/games.md, "Self-exclusion"): the exclusion
first releases the seat, and the opponent then waits alone; the opponent first starts the
match, and the exclusion then leaves it to be played, the stake in it. Never a match started
with a seat the exclusion released, never a stake released twice; the books balance.

Runs only with TEST_DATABASE_URL, on a database of its own that it drops after.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select

from service.clock import utcnow
from service.db.match_models import GameTable, Seat
from service.db.models import Player
from service.games.common.settings import Format, MatchSettings
from service.usecases import players, tables, wallets
from service.usecases.audit import run_audit
from service.usecases.auth import Principal
from tests.conftest import in_unit
from tests.integration.conftest import Funded, until_waiting

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(not os.environ.get("TEST_DATABASE_URL"), reason="needs PostgreSQL"),
]

STAKE = 100


def _state(session: Any, table_id: str, player_id: str) -> tuple[str, set[str], int]:
    """The table's status, who sits there and the player's available funds, as committed."""
    status = session.scalar(select(GameTable.status).where(GameTable.id == table_id))
    seated = set(session.scalars(select(Seat.player_id).where(Seat.table_id == table_id)))
    player = session.get(Player, player_id)
    available = wallets.get_wallet(session, Principal(player.operator_id), player_id, "EUR")
    return str(status), seated, int(available.available)


@pytest.mark.parametrize("first", ["exclusion", "seat"])
def test_an_exclusion_and_the_last_seat_queue_for_the_table(funded: Funded, first: str) -> None:
    operator = Principal(funded.operator_id)
    now = utcnow()
    session = funded.session()
    try:
        table = in_unit(
            session,
            tables.create_table,
            operator,
            name="race",
            currency="EUR",
            settings=MatchSettings(Format.MATCH_PLAY, stake=STAKE),
            practice=False,
            private=False,
            now=now,
        ).table
        join = {"buyin": None, "invite_code": None, "client_seed": None, "now": now}
        seated = Principal(funded.operator_id, funded.player_id)
        in_unit(session, tables.join_table, seated, table.id, **join)
        _, _, before = in_unit(session, _state, table.id, funded.player_id)

        errors: list[BaseException] = []

        def run(work: Callable[..., Any], *args: Any, **kwargs: Any) -> threading.Thread:
            def body() -> None:
                db = funded.session()
                try:
                    in_unit(db, work, *args, **kwargs)
                except BaseException as exc:
                    errors.append(exc)
                finally:
                    db.close()

            thread = threading.Thread(target=body)
            thread.start()
            return thread

        until = utcnow() + timedelta(days=1)
        steps = {
            "exclusion": (players.set_self_exclusion, (operator, funded.player_id, until, now), {}),
            "seat": (
                tables.join_table,
                (Principal(funded.operator_id, funded.other_player_id), table.id),
                join,
            ),
        }
        order = [first, *(name for name in steps if name != first)]
        holder = funded.session()
        threads = []
        try:
            with holder.begin():
                holder.get(GameTable, table.id, with_for_update=True)
                for queued, name in enumerate(order, start=1):
                    work, args, kwargs = steps[name]
                    threads.append(run(work, *args, **kwargs))
                    until_waiting(funded, queued)
        finally:
            holder.close()
        for thread in threads:
            thread.join()
        assert not errors, errors

        status, sitting, after = in_unit(session, _state, table.id, funded.player_id)
        if first == "exclusion":
            assert status == "open" and sitting == {funded.other_player_id}
            assert after == before + STAKE, "its stake released, once"
        else:
            assert status == "playing"
            assert sitting == {funded.player_id, funded.other_player_id}
            assert after == before, "the stake stays in the match being played"
        report = run_audit(session, operator_id=funded.operator_id)
        assert report.ok, report
    finally:
        session.close()
