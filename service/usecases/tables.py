"""Tables and the lobby: an operator opens a table, players sit down with money in escrow.

A table hosts one match, whose id is allocated with the table: a seat's stake or buy-in is
held in that match's escrow account from the moment the player sits down, in the same
transaction that takes the seat. Leaving before the match starts releases it; a table that
does not fill by its deadline is cancelled and every seat refunded (RULES.md 9.6). When the
second seat fills, the match starts in that same transaction.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.db.match_models import GameTable, MatchRow, Seat
from service.errors import (
    AlreadySeated,
    FieldError,
    Forbidden,
    NotFound,
    SelfExcluded,
    TableNotOpen,
    ValidationFailed,
)
from service.formats import Format, InvalidSettings, MatchSettings
from service.formats.settings import GAME_SEATS, GameKind
from service.ids import new_id
from service.ledger.money import PRACTICE_CURRENCY, exponent
from service.rules import RulesError, fair
from service.rules.rummy import RummyRules
from service.usecases import play, unit_of_work, wallets
from service.usecases.auth import Principal, authorize_player, require_operator
from service.usecases.pages import Page, page_of


@dataclass(frozen=True)
class TableView:
    table: GameTable
    seats: list[Seat]
    match: MatchRow
    show_invite: bool


def _view(session: Session, table: GameTable, show_invite: bool) -> TableView:
    match = session.get(MatchRow, table.match_id)
    assert match is not None
    return TableView(table, play._seats(session, table.id), match, show_invite)


def settings_from(data: dict[str, Any]) -> MatchSettings:
    """Table settings from request data, every engine complaint as a field error.

    :raises ValidationFailed: naming the offending field.
    """
    data = dict(data)
    game = data.get("game", "gin")
    seats = data.pop("seat_count", None)
    if seats is None:
        seats = GAME_SEATS.get(GameKind(game)) if game in {g.value for g in GameKind} else 2
        if seats is None:
            message = "A Rummy table needs its seat_count (2 to rummy.max_players)."
            raise ValidationFailed(message, errors=[FieldError("seat_count", message)])
    data["seats"] = seats
    options = data.get("rummy") or {}
    if "match" in options or "rummy.match" in options:
        message = "rummy.match follows from the format and the target; leave it out."
        raise ValidationFailed(message, errors=[FieldError("rummy", message)])
    try:
        data["rummy"] = RummyRules.from_dict(options)
    except RulesError as exc:
        raise ValidationFailed(str(exc), errors=[FieldError("rummy", str(exc))]) from None
    try:
        return MatchSettings.from_dict(data)
    except InvalidSettings as exc:
        field = "seat_count" if exc.field == "seats" else exc.field  # the API's name
        message = str(exc).replace("seats: ", "seat_count: ", 1) if field != exc.field else str(exc)
        raise ValidationFailed(message, errors=[FieldError(field, message)]) from None
    except (TypeError, ValueError) as exc:  # RulesError (an invalid ruleset) is a ValueError
        raise ValidationFailed(str(exc), errors=[FieldError("ruleset", str(exc))]) from None


def create_table(
    session: Session,
    principal: Principal,
    *,
    name: str,
    currency: str,
    settings: MatchSettings,
    practice: bool,
    private: bool,
    now: datetime,
) -> TableView:
    """Open a table (operator only). Practice tables play for play money only
    (``PRACTICE_CURRENCY``), real tables never do."""
    operator_id = require_operator(principal)
    exponent(currency)
    if settings.continuous:
        message = "rummy_per_hand (continuous) tables are not offered yet."
        raise ValidationFailed(message, errors=[FieldError("format", message)])
    if practice != (currency == PRACTICE_CURRENCY):
        field = "currency"
        message = (
            f"Practice tables play for {PRACTICE_CURRENCY} only."
            if practice
            else f"{PRACTICE_CURRENCY} is play money: only practice tables use it."
        )
        raise ValidationFailed(message, errors=[FieldError(field, message)])
    table = GameTable(
        id=new_id("tbl"),
        operator_id=operator_id,
        match_id=new_id("mch"),
        name=name,
        game=settings.game.value,
        seat_count=settings.seats,
        format=settings.format.value,
        currency=currency,
        practice=practice,
        private=private,
        invite_code=secrets.token_urlsafe(12) if private else None,
        stake=settings.stake,
        stake_per_point=settings.stake_per_point,
        min_buyin=settings.min_buyin if settings.uses_buyins else settings.stake,
        max_buyin=settings.max_buyin if settings.uses_buyins else settings.stake,
        settings=settings.to_dict(),
        status="open",
        seats_taken=0,
        fill_deadline=now + timedelta(seconds=settings.clock.fill_timeout_seconds),
        created_at=now,
    )
    session.add(table)
    session.flush()
    session.add(
        MatchRow(
            id=table.match_id,
            table_id=table.id,
            operator_id=operator_id,
            status="waiting",
            game=table.game,
            version=0,
            state=None,
            format=table.format,
            currency=currency,
            private=private,
            seats=None,
            commitment=None,
            updated_at=now,
        )
    )
    session.flush()
    return _view(session, table, True)


def get_table(session: Session, principal: Principal, table_id: str) -> TableView:
    table = _table(session, principal, table_id, lock=False)
    return _view(session, table, principal.is_operator)


def _table(session: Session, principal: Principal, table_id: str, *, lock: bool) -> GameTable:
    table = session.get(GameTable, table_id, with_for_update=lock)
    if table is None or table.operator_id != principal.operator_id:
        raise NotFound(f"No table {table_id!r}.")
    return table


def list_tables(
    session: Session,
    principal: Principal,
    *,
    game: str | None = None,
    format: str | None,
    currency: str | None,
    min_stake: int | None,
    max_stake: int | None,
    free_seats: int | None,
    include_closed: bool,
    limit: int,
    starting_after: str | None,
    ending_before: str | None,
) -> Page[TableView]:
    """The lobby: the operator's open public tables (newest first), filtered. An operator
    may ask for every table, ``include_closed``."""
    if format is not None:
        try:
            Format(format)
        except ValueError:
            message = f"Unknown format {format!r}."
            raise ValidationFailed(message, errors=[FieldError("format", message)]) from None
    if currency is not None:
        exponent(currency)
    stmt = select(GameTable).where(GameTable.operator_id == principal.operator_id)
    if not (include_closed and principal.is_operator):
        stmt = stmt.where(GameTable.status == "open", GameTable.private.is_(False))
    if game is not None:
        stmt = stmt.where(GameTable.game == game)
    if format is not None:
        stmt = stmt.where(GameTable.format == format)
    if currency is not None:
        stmt = stmt.where(GameTable.currency == currency)
    # A table is in a stake range when its stake (or buy-in range) overlaps it.
    if min_stake is not None:
        stmt = stmt.where(GameTable.max_buyin >= min_stake)
    if max_stake is not None:
        stmt = stmt.where(GameTable.min_buyin <= max_stake)
    if free_seats is not None:
        stmt = stmt.where(GameTable.seats_taken <= GameTable.seat_count - free_seats)
    page = page_of(session, stmt, GameTable.id, GameTable, limit, starting_after, ending_before)
    views = [_view(session, t, principal.is_operator) for t in page.data]
    return Page(views, page.has_more, page.next_cursor)


def join_table(
    session: Session,
    principal: Principal,
    table_id: str,
    *,
    buyin: int | None,
    invite_code: str | None,
    client_seed: str | None,
    now: datetime,
) -> TableView:
    """Take a free seat (player token): hold the stake or buy-in in the match's escrow, in
    the same transaction; start the match when the last seat fills."""
    if principal.player_id is None:
        raise Forbidden("Joining a table needs the player's own token.")
    player_id = principal.player_id
    table = _table(session, principal, table_id, lock=True)
    player = authorize_player(session, principal, player_id)
    seats = play._seats(session, table.id)
    if any(s.player_id == player_id for s in seats):
        raise AlreadySeated(f"Player {player_id} already sits at table {table_id}.")
    if table.status != "open" or len(seats) >= table.seat_count:
        raise TableNotOpen(f"Table {table_id} is {table.status} and takes no more players.")
    if table.private and not (
        invite_code and table.invite_code and secrets.compare_digest(invite_code, table.invite_code)
    ):
        raise Forbidden("A private table needs its invite code.")
    if player.self_excluded_until is not None and player.self_excluded_until > now:
        raise SelfExcluded(
            f"Player {player_id} is self-excluded until {player.self_excluded_until:%Y-%m-%d}."
        )
    settings = MatchSettings.from_dict(table.settings)
    try:
        escrow = settings.escrow_for(buyin)
    except InvalidSettings as exc:
        raise ValidationFailed(str(exc), errors=[FieldError("buyin", str(exc))]) from None
    if client_seed is not None:
        _check_client_seed(client_seed)
    txn = wallets.hold(
        session,
        table.operator_id,
        player.id,
        table.match_id,
        table.currency,
        escrow,
        # Each seat's hold has a ledger key of its own: repeats of the request are
        # answered by the HTTP idempotency layer, and a player who left may sit again.
        f"seat:{table.id}:{player_id}:{secrets.token_hex(8)}",
        now,
    ).transaction
    taken = {s.seat_no for s in seats}
    seat = Seat(
        table_id=table.id,
        seat_no=min(set(range(table.seat_count)) - taken),
        player_id=player_id,
        escrow=escrow,
        hold_transaction_id=txn.id,
        client_seed=client_seed or fair.new_client_seed(),
        joined_at=now,
    )
    session.add(seat)
    table.seats_taken = len(seats) + 1
    session.flush()
    if table.seats_taken == table.seat_count:
        table.status = "playing"
        match = session.get(MatchRow, table.match_id, with_for_update=True)
        assert match is not None
        play.start_match(session, table, match, now)
    session.flush()
    return _view(session, table, False)


def _check_client_seed(seed: str) -> None:
    if not 1 <= len(seed) <= 64 or ":" in seed or not seed.isprintable():
        message = "A client seed is 1-64 printable characters without ':'."
        raise ValidationFailed(message, errors=[FieldError("client_seed", message)])


def leave_table(session: Session, principal: Principal, table_id: str, now: datetime) -> TableView:
    """Give up a seat before the match starts; the escrow goes back to available funds."""
    if principal.player_id is None:
        raise Forbidden("Leaving a table needs the player's own token.")
    table = _table(session, principal, table_id, lock=True)
    seat = session.scalars(
        select(Seat).where(Seat.table_id == table.id, Seat.player_id == principal.player_id)
    ).one_or_none()
    if seat is None:
        raise NotFound(f"Player {principal.player_id} has no seat at table {table_id}.")
    if table.status != "open":
        raise TableNotOpen(f"Table {table_id} is {table.status}: the match has started.")
    _refund(session, table, seat, now)
    session.delete(seat)
    table.seats_taken -= 1
    session.flush()
    return _view(session, table, False)


def _refund(session: Session, table: GameTable, seat: Seat, now: datetime) -> None:
    """Release a seat's escrow. The ledger key names the seat's own hold, so each seat is
    refunded at most once however it ends (leaving, or the table being cancelled), and a
    later seat of the same player at the same table is a different one."""
    key = f"release:{seat.hold_transaction_id}"
    wallets.release(
        session,
        table.operator_id,
        seat.player_id,
        table.match_id,
        table.currency,
        seat.escrow,
        key,
        now,
    )


def cancel_unfilled(session: Session, now: datetime, *, limit: int = 100) -> int:
    """Cancel open tables past their fill deadline and refund every seat (RULES.md 9.6);
    each table in a unit of work of its own. Returns how many were cancelled."""
    due = unit_of_work.run(
        session,
        lambda: list(
            session.scalars(
                select(GameTable.id)
                .where(GameTable.status == "open", GameTable.fill_deadline <= now)
                .limit(limit)
            )
        ),
    )
    return sum(unit_of_work.run(session, _cancel, session, table_id, now) for table_id in due)


def _cancel(session: Session, table_id: str, now: datetime) -> bool:
    """Cancel one table still open past its deadline, under its row lock; whether it was."""
    table = session.get(GameTable, table_id, with_for_update=True)
    if table is None or table.status != "open" or table.fill_deadline > now:
        return False
    for seat in play._seats(session, table.id):
        _refund(session, table, seat, now)
    table.status = "cancelled"
    match = session.get(MatchRow, table.match_id, with_for_update=True)
    assert match is not None
    match.status = "cancelled"
    match.updated_at = now
    match.finished_at = now
    return True
