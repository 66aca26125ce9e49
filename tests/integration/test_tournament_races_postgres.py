"""The last registrations of a sit-and-go at once, and two sweeps starting a scheduled
tournament at once, on PostgreSQL.

Two entrants are registered; three more players ask for the last two seats at the same moment,
queued behind the tournament's row lock (held meanwhile by a fourth transaction). Whatever the
order, exactly two are registered and one is refused (`tournament_not_open`, nothing held),
the tournament starts exactly once (one fee capture, one `tournament.started`, one round 1),
and the books balance. Then two workers record one finished match at once: the bracket
advances once.

Runs only with TEST_DATABASE_URL, on a database of its own that it drops after.
"""

from __future__ import annotations

import os
import secrets
import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import func, select

from service.clock import utcnow
from service.db.match_models import GameTable, OutboxEvent
from service.db.models import LedgerTransaction
from service.db.tournament_models import Tournament, TournamentEntry
from service.errors import TournamentNotOpen
from service.games.common.settings import Format, MatchSettings
from service.usecases import play, players, settlement, tournaments, wallets
from service.usecases.audit import audit_ledger
from service.usecases.auth import Principal
from tests.conftest import in_unit
from tests.integration.conftest import Funded, until_waiting

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(not os.environ.get("TEST_DATABASE_URL"), reason="needs PostgreSQL"),
]

BUY_IN, FEE, DEPOSIT = 1_000, 100, 5_000


def _queued(
    funded: Funded,
    lock: Callable[[Any], Any],
    works: list[Callable[[Any], Any]],
    *,
    unit: bool = True,
) -> list[Any]:
    """Run each of ``works`` (given a session) in a unit of work of its own thread (without
    ``unit``: a process that runs its own units, as a sweep does), all queued behind
    ``lock`` held by another transaction, then released; what each returned or raised."""
    results: list[Any] = [None] * len(works)

    def body(i: int) -> None:
        db = funded.session()
        try:
            results[i] = in_unit(db, works[i]) if unit else works[i](db)
        except BaseException as exc:
            results[i] = exc
        finally:
            db.close()

    holder = funded.session()
    threads = []
    try:
        with holder.begin():
            lock(holder)
            for i in range(len(works)):
                threads.append(threading.Thread(target=body, args=(i,)))
                threads[-1].start()
                until_waiting(funded, i + 1)
    finally:
        holder.close()
    for thread in threads:
        thread.join()
    return results


def _more_players(session: Any, operator: Principal, count: int, now: Any) -> list[str]:
    """``count`` new players of the operator, each with a deposit of :data:`DEPOSIT`."""
    made = []
    for _ in range(count):
        tag = secrets.token_hex(4)
        player = in_unit(
            session, players.create_player, operator, f"ext-{tag}", f"P {tag}", None, now
        )
        in_unit(session, wallets.deposit, operator, player.id, "EUR", DEPOSIT, f"d-{tag}", now)
        made.append(player.id)
    return made


def _four_entrants(session: Any, operator: Principal, settings: MatchSettings, now: Any) -> str:
    """A sit-and-go knockout of 4 entrants in ``settings``; its id."""
    view = in_unit(
        session,
        tournaments.create_tournament,
        operator,
        name="race",
        currency="EUR",
        practice=False,
        settings=settings,
        buy_in=BUY_IN,
        fee=FEE,
        entrants=4,
        payout_table=None,
        registration_seconds=None,
        now=now,
    )
    return str(view.tournament.id)


def test_the_last_registrations_at_once_start_the_tournament_once(funded: Funded) -> None:
    operator = Principal(funded.operator_id)
    now = utcnow()
    session = funded.session()
    try:
        ids = [funded.player_id, funded.other_player_id, *_more_players(session, operator, 3, now)]
        tid = _four_entrants(
            session, operator, MatchSettings(Format.MATCH_PLAY, stake=BUY_IN, target=50), now
        )
        for player_id in ids[:2]:
            in_unit(
                session, tournaments.register, Principal(funded.operator_id, player_id), tid, now
            )

        def registering(player_id: str) -> Callable[[Any], Any]:
            principal = Principal(funded.operator_id, player_id)
            return lambda db: tournaments.register(db, principal, tid, utcnow())

        results = _queued(
            funded,
            lambda db: db.get(Tournament, tid, with_for_update=True),
            [registering(p) for p in ids[2:]],
        )
        refused = [r for r in results if isinstance(r, BaseException)]
        assert len(refused) == 1 and isinstance(refused[0], TournamentNotOpen), results
        loser = ids[2 + results.index(refused[0])]

        session.expire_all()  # what the racers committed
        tournament = session.get(Tournament, tid)
        assert tournament is not None
        assert tournament.status == "running" and tournament.entries_taken == 4
        entries = session.scalars(
            select(TournamentEntry.player_id).where(TournamentEntry.tournament_id == tid)
        ).all()
        assert len(entries) == 4 and loser not in entries
        assert tournament.bracket is not None and len(tournament.bracket) == 1
        fees = session.scalar(
            select(func.count())
            .select_from(LedgerTransaction)
            .where(LedgerTransaction.match_ref == tid, LedgerTransaction.kind == "capture")
        )
        started = session.scalar(
            select(func.count())
            .select_from(OutboxEvent)
            .where(OutboxEvent.subject_id == tid, OutboxEvent.type == "tournament.started")
        )
        assert (fees, started) == (1, 1)
        refused_wallet = wallets.get_wallet(session, operator, loser, "EUR")
        assert (refused_wallet.available, refused_wallet.held) == (DEPOSIT, 0)
        session.rollback()

        # Two workers record the same finished match at once: the bracket advances once.
        first = tournament.bracket[0][0]
        entry_player = dict(
            session.execute(
                select(TournamentEntry.seat, TournamentEntry.player_id).where(
                    TournamentEntry.tournament_id == tid
                )
            ).all()
        )
        session.rollback()
        resigner = Principal(funded.operator_id, entry_player[first["first"]])
        in_unit(session, play.resign, resigner, first["match_id"], None, utcnow())
        concluded = _queued(
            funded,
            lambda db: db.get(Tournament, tid, with_for_update=True),
            [lambda db: settlement.conclude(db, first["match_id"], utcnow())] * 2,
        )
        assert concluded == [None, None]
        session.expire_all()
        after = session.get(Tournament, tid)
        assert after is not None and after.bracket is not None
        assert after.bracket[0][0]["winner"] == first["second"]
        assert len(after.bracket) == 1  # the other match is still being played
        session.rollback()
        assert in_unit(session, audit_ledger, funded.operator_id).ok
    finally:
        session.close()


@pytest.mark.parametrize("first", ["unregister", "register"])
def test_an_unregistration_racing_the_last_registration(funded: Funded, first: str) -> None:
    """Queued in either order behind the tournament's lock: the unregistration first frees a
    seat and the registration then does not fill the field; the registration first starts
    the tournament and the unregistration is then refused. Never a start with an entry
    released, never an entry released twice."""
    operator = Principal(funded.operator_id)
    now = utcnow()
    session = funded.session()
    try:
        ids = [funded.player_id, funded.other_player_id, *_more_players(session, operator, 2, now)]
        tid = _four_entrants(
            session, operator, MatchSettings(Format.FIRST_TO_KNOCK, stake=BUY_IN), now
        )
        for player_id in ids[:3]:
            in_unit(
                session, tournaments.register, Principal(funded.operator_id, player_id), tid, now
            )
        leaving, joining = (
            Principal(funded.operator_id, ids[0]),
            Principal(funded.operator_id, ids[3]),
        )
        steps = {
            "unregister": lambda db: tournaments.unregister(db, leaving, tid, utcnow()),
            "register": lambda db: tournaments.register(db, joining, tid, utcnow()),
        }
        order = [first, *(name for name in steps if name != first)]
        results = dict(
            zip(
                order,
                _queued(
                    funded,
                    lambda db: db.get(Tournament, tid, with_for_update=True),
                    [steps[name] for name in order],
                ),
                strict=True,
            )
        )
        session.expire_all()
        tournament = session.get(Tournament, tid)
        assert tournament is not None
        leaver = wallets.get_wallet(session, operator, ids[0], "EUR")
        if first == "unregister":
            assert not isinstance(results["unregister"], BaseException)
            assert not isinstance(results["register"], BaseException)
            assert tournament.status == "open" and tournament.entries_taken == 3
            assert (leaver.available, leaver.held) == (10_000, 0)  # released once
        else:
            assert isinstance(results["unregister"], TournamentNotOpen)
            assert tournament.status == "running" and tournament.entries_taken == 4
            assert (leaver.available, leaver.held) == (10_000 - BUY_IN - FEE, BUY_IN)
        session.rollback()
        assert in_unit(session, audit_ledger, funded.operator_id).ok
    finally:
        session.close()


def test_two_sweeps_at_once_start_a_scheduled_tournament_once(funded: Funded) -> None:
    """Both sweeps find the scheduled tournament due and queue behind its row lock: the
    first starts it (one fee capture, one `tournament.started`, round 1's two tables), the
    second finds it running and does nothing."""
    operator = Principal(funded.operator_id)
    now = utcnow()
    session = funded.session()
    try:
        ids = [funded.player_id, funded.other_player_id]
        for n in range(2):
            player = in_unit(
                session, players.create_player, operator, f"ext-sch-{n}", f"S{n}", None, now
            )
            in_unit(session, wallets.deposit, operator, player.id, "EUR", DEPOSIT, f"s-{n}", now)
            ids.append(player.id)
        starts_at = now + timedelta(seconds=60)
        tid = in_unit(
            session,
            tournaments.create_tournament,
            operator,
            name="scheduled race",
            currency="EUR",
            practice=False,
            settings=MatchSettings(Format.MATCH_PLAY, stake=BUY_IN, target=50),
            buy_in=BUY_IN,
            fee=FEE,
            entrants=8,
            payout_table="2-9: 10000",
            registration_seconds=None,
            now=now,
            starts_at=starts_at,
            min_entrants=4,
        ).tournament.id
        for player_id in ids:
            in_unit(
                session, tournaments.register, Principal(funded.operator_id, player_id), tid, now
            )
        swept = _queued(
            funded,
            lambda db: db.get(Tournament, tid, with_for_update=True),
            [lambda db: tournaments.start_or_cancel_due(db, starts_at)] * 2,
            unit=False,
        )
        assert sorted(swept) == [0, 1], swept
        session.expire_all()
        tournament = session.get(Tournament, tid)
        assert tournament is not None and tournament.status == "running"
        assert tournament.bracket is not None and len(tournament.bracket[0]) == 2
        fees = session.scalar(
            select(func.count())
            .select_from(LedgerTransaction)
            .where(LedgerTransaction.match_ref == tid, LedgerTransaction.kind == "capture")
        )
        started = session.scalar(
            select(func.count())
            .select_from(OutboxEvent)
            .where(OutboxEvent.subject_id == tid, OutboxEvent.type == "tournament.started")
        )
        opened = session.scalar(
            select(func.count()).select_from(GameTable).where(GameTable.tournament_id == tid)
        )
        assert (fees, started, opened) == (1, 1, 2)
        session.rollback()
        assert in_unit(session, audit_ledger, funded.operator_id).ok
    finally:
        session.close()
