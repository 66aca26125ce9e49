"""Settling finished matches: the statement and its ledger transaction, exactly once.

``settle_match`` runs in one database transaction under the match's row lock: it computes the
statement with its game's pure payout maths (:func:`service.games.statement`), posts one
balanced ledger transaction that empties the match's escrow into the players' available funds
and the house fee account, writes the immutable settlement row (unique per match) and a
``settlement.completed`` outbox event. Run twice, by a retry, a duplicate delivery or two
workers at once, it finds the settlement already there and returns it: one statement, one
set of postings.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Integer, and_, bindparam, or_, select, update
from sqlalchemy.orm import Session, aliased
from sqlalchemy.orm.attributes import set_committed_value
from sqlalchemy.orm.session import make_transient_to_detached

from service import games
from service.db.driver import execute, insert_row, pipeline
from service.db.match_models import GameTable, MatchRow, OutboxEvent, Settlement
from service.db.models import table_of
from service.db.wallet_models import OperatorWallet
from service.errors import MatchNotLive, NotFound
from service.games.common.settings import MatchSettings
from service.ids import new_id
from service.live import notices
from service.match_view import seat_numbers, table_seats
from service.usecases import play, seamless, tables, tournaments, wallets
from service.usecases.auth import Principal
from service.usecases.pages import Page, page_of
from service.usecases.rates import Rate
from service.usecases.rates import display_rates as display_rates_for

SETTLED_STATUSES = ("finished", "void")


def settle_match(session: Session, match_id: str, now: datetime) -> Settlement:
    """Settle ``match_id`` (idempotent); the settlement row.

    :raises NotFound: when there is no such match.
    :raises MatchNotLive: when the match has not finished.
    """
    return settle_with_credits(session, match_id, now)[0]


def settle_with_credits(session: Session, match_id: str, now: datetime) -> tuple[Settlement, bool]:
    """:func:`settle_match`, and whether the settlement may have left credits to send to a
    seamless operator's wallet (``False``: settled now, and none were written)."""
    # One round trip: lock the match row and see whether it is settled already.
    found = session.execute(
        select(MatchRow, Settlement)
        .outerjoin(Settlement, Settlement.match_id == MatchRow.id)
        .where(MatchRow.id == match_id)
        .with_for_update(of=MatchRow)
    ).one_or_none()
    if found is None:
        raise NotFound(f"No match {match_id!r}.")
    row, existing = found
    if existing is not None:
        return existing, True  # settled before: its credits may still be pending
    if row.status not in SETTLED_STATUSES or row.state is None:
        raise MatchNotLive(f"Match {match_id} is {row.status}; only a finished match is settled.")
    # One more for the match's table and the operator's wallet for its currency (seamless or
    # not), read only now: a row joined to the lock's statement is read as it was when the
    # statement began, before any wait for the lock (a per-hand table's seats changed
    # meanwhile would be missed).
    table, wallet = session.execute(
        select(GameTable, OperatorWallet)
        .outerjoin(
            OperatorWallet,
            and_(
                OperatorWallet.operator_id == row.operator_id,
                OperatorWallet.currency == row.currency,
            ),
        )
        .where(GameTable.id == row.table_id)
    ).one()
    seamless_mode = wallet is not None and wallet.mode == "seamless"
    return _settle(session, row, table, seamless_mode, now)


def conclude(session: Session, match_id: str, now: datetime) -> str | None:
    """A finished match's end, applied exactly once: a tournament's match advances its
    tournament (:func:`tournaments.record_result`: no money moves, the pool pays at the
    end), any other match is settled (:func:`settle_match`). The settlement's id, or
    ``None`` for a tournament's match.

    :raises NotFound: when there is no such match.
    :raises MatchNotLive: when the match has not finished.
    """
    return conclude_with_credits(session, match_id, now)[0]


def conclude_with_credits(
    session: Session, match_id: str, now: datetime
) -> tuple[str | None, bool]:
    """:func:`conclude`, and whether the match may have credits to send to a seamless
    operator's wallet after the commit (``False``: a match settled now that wrote none, as
    every match of a transfer-mode operator: nothing to look for)."""
    # The tournament is looked up first, unlocked: a tournament's match is locked after its
    # tournament (:func:`tournaments.record_result`), never before.
    tournament_id = tournaments.tournament_of_match(session, match_id)
    if tournament_id is not None:
        tournaments.record_result(session, tournament_id, match_id, now)
        return None, True
    settlement, credits = settle_with_credits(session, match_id, now)
    return settlement.id, credits


def capture_amounts(
    players: Sequence[str], escrow: Sequence[int], payouts: Sequence[int], continuous: bool
) -> tuple[dict[str, int], dict[str, int]]:
    """What a settlement's capture takes from each player's escrow and pays to it (pure).

    A match's whole escrow is taken and each payout paid to available funds. A hand of a
    per-hand Rummy table moves only the difference: each loser's loss out of its table
    balance, each winner's gain into it (11.5.1)."""
    taken: dict[str, int] = defaultdict(int)
    paid: dict[str, int] = defaultdict(int)
    for player_id, held, payout in zip(players, escrow, payouts, strict=True):
        if continuous:
            taken[player_id] += max(held - payout, 0)
            paid[player_id] += max(payout - held, 0)
        else:
            taken[player_id] += held
            paid[player_id] += payout
    return dict(taken), dict(paid)


def _existing(session: Session, match_id: str) -> Settlement | None:
    return session.scalars(select(Settlement).where(Settlement.match_id == match_id)).one_or_none()


def _settle(
    session: Session, row: MatchRow, table: GameTable, seamless_mode: bool, now: datetime
) -> tuple[Settlement, bool]:
    """Settle ``row`` (locked, unsettled, finished) of ``table``; ``seamless_mode``: whether
    its operator's wallet for its currency is seamless (its players are paid there). The
    settlement, and whether it wrote credits to send."""
    assert row.seats is not None and row.state is not None
    match = games.from_state(row.state)
    seats = row.seats
    escrow = [s["escrow"] for s in seats]
    settings = MatchSettings.from_dict(table.settings)
    statement = games.statement(match, settings, escrow)
    players = [s["player_id"] for s in seats]
    taken, paid = capture_amounts(players, escrow, statement.payouts, settings.continuous)
    txn = wallets.capture(
        session,
        row.operator_id,
        row.id,
        row.currency,
        taken,
        paid,
        statement.fee,
        f"settle:{row.id}",
        now,
        table_ref=table.id if settings.continuous else None,
    )
    credits: list[str] = []
    # A seamless operator's players are paid in its wallet (a transfer-mode operator's: here).
    if not settings.continuous and seamless_mode:
        credits = seamless.pay_out(
            session,
            operator_id=row.operator_id,
            currency=row.currency,
            escrow_ref=row.id,
            table_id=table.id,
            match_id=row.id,
            amounts={player: paid.get(player, 0) for player in players},
            reason="payout",
            cause=txn.id,
            now=now,
        )
    data = dict(statement.data)
    data["players"] = players
    settlement = Settlement(
        id=new_id("stl"),
        match_id=row.id,
        operator_id=row.operator_id,
        currency=row.currency,
        fee=statement.fee,
        statement=data,
        ledger_transaction_id=txn.id,
        created_at=now,
    )
    event = play.match_event(
        row,
        "settlement.completed",
        {
            "settlement_id": settlement.id,
            "payouts": data["payouts"],
            "net": data["net"],
            "fee": statement.fee,
            "currency": row.currency,
            "players": players,
            "ledger_transaction_id": txn.id,
        },
        now,
    )
    event.attempts, event.published_at, event.last_error = 0, None, None
    # The match marked settled (naming its settlement, its version bumped and the change
    # logged), the settlement and its event: four writes in one round trip on PostgreSQL
    # (the ORM's flush sends each alone), after the ledger's, whose transaction the
    # settlement names. The objects then join the session as the rows they are.
    version = row.version + 1
    marked = {"match_id": row.id, "settled_at": now, "settlement_id": settlement.id}
    with pipeline(session):
        execute(session, _MARK_SETTLED, marked | {"version": version, "updated_at": now})
        execute(session, play.LOG_ENTRY, play.settled_entry(row, version, match, now))
        execute(session, _INSERT_SETTLEMENT, _values(settlement))
        execute(session, _INSERT_EVENT, _values(event))
    for key, value in (("settled_at", now), ("settlement_id", settlement.id)):
        set_committed_value(row, key, value)
    set_committed_value(row, "version", version)
    set_committed_value(row, "updated_at", now)
    # Every viewer's stream says the settlement is ready once it has committed.
    notices.changed(session, row.id, version)
    for written in (settlement, event):
        make_transient_to_detached(written)
        session.add(written)
    session.flush()
    if settings.continuous:  # the table balances move on, the next hand is dealt
        tables.after_hand(session, row, match, statement.net, now)
    return settlement, bool(credits)


def _values(obj: Settlement | OutboxEvent) -> dict[str, Any]:
    return {column.key: getattr(obj, column.key) for column in table_of(type(obj)).c}


_MATCHES = table_of(MatchRow)
_MARK_SETTLED = (
    update(_MATCHES)
    .where(_MATCHES.c.id == bindparam("match_id"))
    .values(
        settled_at=bindparam("settled_at"),
        settlement_id=bindparam("settlement_id"),
        version=bindparam("version"),
        updated_at=bindparam("updated_at"),
    )
)
_INSERT_SETTLEMENT = insert_row(table_of(Settlement))
_INSERT_EVENT = insert_row(table_of(OutboxEvent))


@dataclass(frozen=True, slots=True)
class SettlementView:
    """A settlement as every reader of it is shown it: the row; ``seats``, the table seats of
    the match's players in match seat order (the order of the statement's lists by seat);
    the stored ``statement`` naming every player by those seats (one numbering, the
    table's: a ``rummy_per_hand`` hand's is renamed from match seat, while the row keeps the
    statement the audit recomputes); and each seat's display rate, looked up now."""

    settlement: Settlement
    seats: list[int]
    statement: dict[str, Any]
    rates: list[Rate | None]


def settlement_views(
    session: Session, settlements: Sequence[Settlement], requested: str | None = None
) -> list[SettlementView]:
    """How ``settlements`` (one operator's) are shown, in their order: the one path from a
    stored settlement to what a reader sees (docs/games.md, Settlement and audit)."""
    if not settlements:
        return []
    rates = display_rates(session, settlements, requested)
    ids = sorted({s.match_id for s in settlements})
    found = session.execute(select(MatchRow.id, MatchRow.seats).where(MatchRow.id.in_(ids)))
    seats_of: dict[str, list[dict[str, Any]] | None] = {id_: seats for id_, seats in found}
    views = []
    for stored, seat_rates in zip(settlements, rates, strict=True):
        match_seats = seats_of[stored.match_id]
        table = table_seats(match_seats)
        statement = dict(stored.statement)
        if table is not None:  # a rummy_per_hand hand: its players by table seat
            statement = games.seated_statement(statement, table)
        views.append(SettlementView(stored, seat_numbers(match_seats), statement, seat_rates))
    return views


def display_rates(
    session: Session, settlements: Sequence[Settlement], requested: str | None = None
) -> list[list[Rate | None]]:
    """Each settlement's seats' rates to show their figures at, looked up now (docs/engine.md
    6.5.4): display figures are never stored, so a statement read later shows at that
    moment's rate. One operator's settlements."""
    if not settlements:
        return []
    seats = [(s.currency, list(s.statement.get("players") or [])) for s in settlements]
    wanted = [(currency, player) for currency, players in seats for player in players]
    rates = display_rates_for(session, settlements[0].operator_id, wanted, requested)
    return [[rates[currency, player] for player in players] for currency, players in seats]


def get_settlement(session: Session, principal: Principal, match_id: str) -> Settlement:
    """The settlement of a match the caller may see (operator, or one of its players).

    :raises NotFound: when the match is unknown, foreign, or not settled yet.
    """
    row = session.get(MatchRow, match_id)
    if row is None or row.operator_id != principal.operator_id:
        raise NotFound(f"No match {match_id!r}.")
    if principal.player_id is not None and principal.player_id not in [
        s["player_id"] for s in row.seats or []
    ]:
        raise NotFound(f"No settlement for match {match_id!r}.")
    settlement = _existing(session, match_id)
    if settlement is None:
        raise NotFound(f"Match {match_id} is not settled (yet).")
    return settlement


def list_settlements(
    session: Session,
    principal: Principal,
    limit: int,
    starting_after: str | None,
    ending_before: str | None,
) -> Page[Settlement]:
    from service.usecases.auth import require_operator

    operator_id = require_operator(principal)
    stmt = select(Settlement).where(Settlement.operator_id == operator_id)
    return page_of(
        session,
        stmt,
        Settlement.id,
        Settlement,
        limit,
        starting_after,
        ending_before,
    )


#: Finished or void matches without a settlement, oldest first (ties by id, so that a sweep can
#: take them page after page). ``settled_at`` is written with the settlement, and the
#: conditions are ``ix_matches_unsettled``'s: the sweep reads the matches still to settle, not
#: every match ever played. The anti-join stays as a second check.
_OLDEST_UNSETTLED = (
    select(MatchRow.id)
    .outerjoin(Settlement, Settlement.match_id == MatchRow.id)
    .where(
        MatchRow.status.in_(SETTLED_STATUSES),
        MatchRow.settled_at.is_(None),
        Settlement.id.is_(None),
    )
    .order_by(MatchRow.finished_at, MatchRow.id)
)
UNSETTLED = _OLDEST_UNSETTLED.limit(bindparam("limit", type_=Integer))


def claim_unsettled(
    session: Session,
    finished_before: datetime | None = None,
    passing: Collection[str] = (),
) -> str | None:
    """Inside the caller's unit: the oldest finished or void match without a settlement that
    no other transaction holds, its row now locked by this one (``FOR UPDATE SKIP LOCKED`` on
    PostgreSQL, from ``ix_matches_unsettled``), or ``None`` when none is left. Sweeps running
    side by side, and a settlement task holding its match, each take other matches, never
    waiting on one another. With ``finished_before``, only those that finished by then;
    ``passing``: match ids to leave out (those that failed earlier in the same sweep)."""
    stmt = _OLDEST_UNSETTLED.limit(1).with_for_update(of=MatchRow, skip_locked=True)
    if finished_before is not None:
        stmt = stmt.where(MatchRow.finished_at <= finished_before)
    if passing:
        stmt = stmt.where(MatchRow.id.not_in(list(passing)))
    return session.scalars(stmt).first()


def unsettled_finished_matches(
    session: Session,
    limit: int = 100,
    finished_before: datetime | None = None,
    after: str | None = None,
) -> list[str]:
    """Finished or void matches without a settlement (for the sweeper); with
    ``finished_before``, only those that finished by then (a range of the same index); with
    ``after`` (a match id, the last of the previous page), only those that come after it."""
    stmt = UNSETTLED
    if finished_before is not None:
        stmt = stmt.where(MatchRow.finished_at <= finished_before)
    if after is not None:
        last = aliased(MatchRow)
        last_finished = select(last.finished_at).where(last.id == after).scalar_subquery()
        stmt = stmt.where(
            or_(
                MatchRow.finished_at > last_finished,
                and_(MatchRow.finished_at == last_finished, MatchRow.id > after),
            )
        )
    return list(session.scalars(stmt, {"limit": limit}))
