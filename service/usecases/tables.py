"""Tables and the lobby: an operator opens a table, players sit down with money in escrow.

A table hosts one match, whose id is allocated with the table: a seat's stake or buy-in is
held in that match's escrow account from the moment the player sits down, in the same
transaction that takes the seat. Leaving before the match starts releases it; a table that
does not fill by its deadline is cancelled and every seat refunded (docs/engine.md 9.6). When the
second seat fills, the match starts in that same transaction.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from service import games
from service.db.match_models import GameTable, MatchRow, Seat
from service.db.models import Player
from service.errors import (
    AlreadySeated,
    FieldError,
    Forbidden,
    NotFound,
    SelfExcluded,
    TableNotOpen,
    ValidationFailed,
)
from service.games import AnyMatch, registry
from service.games.common import fair
from service.games.common.errors import InvalidSettings
from service.games.common.settings import MatchSettings
from service.games.protocol import ContinuousTables
from service.ids import new_id
from service.ledger.money import PRACTICE_CURRENCY, exponent
from service.live import notices
from service.usecases import play, seamless, unit_of_work, wallets
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


def settings_problems(
    data: dict[str, Any], *, practice: bool = False, currency: str | None = None
) -> tuple[MatchSettings | None, list[FieldError]]:
    """Table settings from request data, or every problem with them, each naming its field
    as the request spells it (``seat_count``, ``fee.base``, ``rummy.match``); with
    ``currency``, whether a practice table plays for play money and only it does."""
    data = dict(data)
    problems: list[FieldError] = []
    if currency is not None:
        problems += practice_problems(practice, currency)
    # An unknown game is refused with the settings: its seats are the default game's here.
    game = registry.GAMES.get(data.get("game", registry.DEFAULT.kind)) or registry.DEFAULT
    seats = data.pop("seat_count", None)
    if seats is None:
        counts = game.seat_counts
        seats = counts[0]
        if len(counts) > 1:
            message = f"required at a {game.title} table: {game.seats_text}"
            problems.append(FieldError("seat_count", message))
    data["seats"] = seats
    for owner in dict.fromkeys(registry.OPTIONS.values()):  # each game's options, read
        problems += [FieldError(field, message) for field, message in owner.request_problems(data)]
    try:
        settings = MatchSettings.from_dict(data)
    except InvalidSettings as exc:
        problems += [
            FieldError("seat_count" if field == "seats" else field, message)  # the API's name
            for field, message in exc.problems
        ]
        return None, problems
    except (TypeError, ValueError) as exc:  # RulesError (an invalid ruleset) is a ValueError
        return None, [*problems, FieldError("ruleset", str(exc))]
    return (None if problems else settings), problems


def settings_from(
    data: dict[str, Any], *, practice: bool = False, currency: str | None = None
) -> MatchSettings:
    """Table settings from request data (:func:`settings_problems`).

    :raises ValidationFailed: listing every field at fault.
    """
    settings, problems = settings_problems(data, practice=practice, currency=currency)
    if settings is None:
        detail = "; ".join(f"{p.field}: {p.message}" for p in problems)
        raise ValidationFailed(detail, errors=problems)
    return settings


def spectator_delay_problems(delay: Mapping[str, Any] | None, *, private: bool) -> list[FieldError]:
    """Every problem with a table's spectator delay (docs/games.md, Spectator delay): either
    ``moves`` or ``seconds``, within their bounds, and only at a public table (a private one
    is watched by its own players alone). ``None``: no delay, always fine."""
    if delay is None:
        return []
    problems: list[FieldError] = []
    if private:
        message = "a private table has no spectators to delay: leave it out, or open a public one"
        problems.append(FieldError("spectator_delay", message))
    bounds = {"moves": play.MAX_DELAY_MOVES, "seconds": play.MAX_DELAY_SECONDS}
    given = [key for key in delay if key in bounds]
    if len(given) != 1:
        message = "give one of moves or seconds" + (", not both" if given else "")
        problems.append(FieldError("spectator_delay", message))
    for key, value in delay.items():
        if key not in bounds:
            problems.append(FieldError(f"spectator_delay.{key}", "Unknown field."))
        elif type(value) is not int or not 1 <= value <= bounds[key]:
            message = f"must be a whole number from 1 to {bounds[key]}, not {value!r}"
            problems.append(FieldError(f"spectator_delay.{key}", message))
    return problems


def practice_problems(practice: bool, currency: str) -> list[FieldError]:
    """Practice tables play for play money (``PRACTICE_CURRENCY``) only, real tables never."""
    if practice == (currency == PRACTICE_CURRENCY):
        return []
    message = (
        f"Practice tables play for {PRACTICE_CURRENCY} only."
        if practice
        else f"{PRACTICE_CURRENCY} is play money: only practice tables use it."
    )
    return [FieldError("currency", message)]


def lobby_changed(session: Session, table: GameTable) -> None:
    """The operator's lobby changed with ``table`` (opened, seated, left, filled, closed):
    its lobby streams are told once the unit of work commits."""
    notices.changed(session, table.operator_id, 0, kind="lobby")


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
    spectator_delay: Mapping[str, int] | None = None,
) -> TableView:
    """Open a table (operator only). Practice tables play for play money only
    (``PRACTICE_CURRENCY``), real tables never do; a public one may show spectators its
    match late (``spectator_delay``: ``{"moves": N}`` or ``{"seconds": S}``)."""
    operator_id = require_operator(principal)
    exponent(currency)
    problems = practice_problems(practice, currency)
    problems += spectator_delay_problems(spectator_delay, private=private)
    if problems:
        raise ValidationFailed(problems[0].message, errors=problems)
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
        spectator_delay=None if spectator_delay is None else dict(spectator_delay),
        status="open",
        seats_taken=0,
        fill_deadline=now + timedelta(seconds=settings.clock.fill_timeout_seconds),
        created_at=now,
    )
    session.add(table)
    session.flush()
    session.add(waiting_match(table, table.match_id, now))
    session.flush()
    lobby_changed(session, table)
    return _view(session, table, True)


def waiting_match(table: GameTable, match_id: str, now: datetime) -> MatchRow:
    """The match row a table's next match starts in (a per-hand table's next hand)."""
    return MatchRow(
        id=match_id,
        table_id=table.id,
        operator_id=table.operator_id,
        status="waiting",
        game=table.game,
        version=0,
        state=None,
        format=table.format,
        currency=table.currency,
        private=table.private,
        spectator_delay=table.spectator_delay,
        seats=None,
        commitment=None,
        updated_at=now,
    )


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
    if format is not None and format not in registry.FORMATS:
        message = f"Unknown format {format!r}."
        raise ValidationFailed(message, errors=[FieldError("format", message)])
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


def _seat_request(
    session: Session,
    principal: Principal,
    table_id: str,
    *,
    buyin: int | None,
    invite_code: str | None,
    client_seed: str | None,
    now: datetime,
) -> tuple[GameTable, Player, list[Seat], MatchSettings, int]:
    """Whether the caller may take a seat at ``table_id`` (under the table's lock): the
    table, the player, the seats taken, the settings and the escrow the seat holds.

    :raises Forbidden: without a player token, or a private table's invite code.
    :raises AlreadySeated: when the player sits there already.
    :raises TableNotOpen: when the table takes no more players.
    :raises SelfExcluded: while the player's self-exclusion runs.
    :raises ValidationFailed: on a buy-in or client seed that breaks its rule.
    """
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
    not_self_excluded(player, now)
    settings = MatchSettings.from_dict(table.settings)
    problems = _buyin_problems(settings, buyin)
    problems += [] if client_seed is None else _client_seed_problems(client_seed)
    if problems:
        detail = "; ".join(f"{p.field}: {p.message}" for p in problems)
        raise ValidationFailed(detail, errors=problems)
    return table, player, seats, settings, settings.escrow_for(buyin)


def _buyin_problems(settings: MatchSettings, buyin: int | None) -> list[FieldError]:
    """What the table's buy-in rule (:meth:`MatchSettings.escrow_for`) says of ``buyin``."""
    try:
        settings.escrow_for(buyin)
    except InvalidSettings as exc:
        return [FieldError("buyin", exc.message)]
    return []


def seat_buyin_problems(
    session: Session, principal: Principal, table_id: str, buyin: int | None
) -> list[FieldError]:
    """What ``table_id``'s buy-in rule says of a seat request refused for its other fields,
    to be named in the same answer; nothing for a table the caller cannot see (its refusal
    stays the body's, as for any table)."""
    try:
        table = _table(session, principal, table_id, lock=False)
    except NotFound:
        return []
    return _buyin_problems(MatchSettings.from_dict(table.settings), buyin)


def join_stake(
    session: Session,
    principal: Principal,
    table_id: str,
    *,
    buyin: int | None,
    invite_code: str | None,
    client_seed: str | None,
    now: datetime,
) -> seamless.Stake | None:
    """What taking a seat at ``table_id`` debits from a seamless operator's wallet (the
    seat's checks made first, so a seat that would be refused debits nothing); ``None``
    in transfer mode."""
    table, player, _, settings, escrow = _seat_request(
        session,
        principal,
        table_id,
        buyin=buyin,
        invite_code=invite_code,
        client_seed=client_seed,
        now=now,
    )
    if wallets.seamless_wallet(session, table.operator_id, table.currency) is None:
        return None
    return seamless.Stake(
        operator_id=table.operator_id,
        player_id=player.id,
        currency=table.currency,
        amount=escrow,
        reason="buyin" if settings.uses_buyins else "stake",
        table_id=table.id,
        match_id=None if settings.continuous else table.match_id,
        escrow_ref=_escrow_ref(table, settings),
        round_id=None,
    )


def join_table(
    session: Session,
    principal: Principal,
    table_id: str,
    *,
    buyin: int | None,
    invite_code: str | None,
    client_seed: str | None,
    now: datetime,
    debit: str | None = None,
) -> TableView:
    """Take a free seat (player token): hold the stake or buy-in in the match's escrow, in
    the same transaction (a seamless operator's applied ``debit`` booked first); start the
    match when the last seat fills."""
    table, player, seats, settings, escrow = _seat_request(
        session,
        principal,
        table_id,
        buyin=buyin,
        invite_code=invite_code,
        client_seed=client_seed,
        now=now,
    )
    seamless.book(session, table.operator_id, player.id, table.currency, escrow, debit, now)
    txn = wallets.hold(
        session,
        table.operator_id,
        player.id,
        _escrow_ref(table, settings),
        table.currency,
        escrow,
        # Each seat's hold has a ledger key of its own: repeats of the request are
        # answered by the HTTP idempotency layer, and a player who left may sit again.
        f"seat:{table.id}:{player.id}:{secrets.token_hex(8)}",
        now,
    ).transaction
    taken = {s.seat_no for s in seats}
    seat = Seat(
        table_id=table.id,
        seat_no=min(set(range(table.seat_count)) - taken),
        player_id=player.id,
        escrow=escrow,
        hold_transaction_id=txn.id,
        client_seed=client_seed or fair.new_client_seed(),
        joined_at=now,
    )
    session.add(seat)
    table.seats_taken = len(seats) + 1
    lobby_changed(session, table)
    session.flush()
    if settings.continuous:
        _deal_next_hand(session, table, settings, now)
    elif table.seats_taken == table.seat_count:
        table.status = "playing"
        match = session.get(MatchRow, table.match_id, with_for_update=True)
        assert match is not None
        play.start_match(session, table, match, now)
    session.flush()
    return _view(session, table, False)


def exclude_from_tables(session: Session, player: Player, now: datetime) -> None:
    """A self-exclusion that runs at ``now`` takes effect at every table the player sits at,
    in the caller's transaction (the one recording the exclusion): at a table whose match
    has not started the seat is given up and its escrow released to the player's wallet
    (:func:`_vacate`, as when leaving); a per-hand Rummy seat is sat out (``ready`` false,
    the hand it is dealt into played to its end and settled as usual); a match already
    being played is played to its end (docs/games.md, "Self-exclusion"). Running it again
    changes nothing. The tables are locked in id order before any money moves, so it waits
    for (and sees) a seat taken or a match started meanwhile."""
    if not self_excluded(player, now):
        return
    table_ids = sorted(
        set(session.scalars(select(Seat.table_id).where(Seat.player_id == player.id)))
    )
    locked = [session.get(GameTable, t, with_for_update=True) for t in table_ids]
    for table in locked:
        assert table is not None
        seat = session.scalars(
            select(Seat).where(Seat.table_id == table.id, Seat.player_id == player.id)
        ).one_or_none()
        if seat is None:  # it left meanwhile
            continue
        settings = MatchSettings.from_dict(table.settings)
        if settings.continuous:
            seat.ready = False
        elif table.status == "open":
            _vacate(session, table, seat, now)
    session.flush()


def self_excluded(player: Player, now: datetime) -> bool:
    """Whether the player's self-exclusion runs at ``now``: it takes no new stake."""
    return player.self_excluded_until is not None and player.self_excluded_until > now


def not_self_excluded(player: Player, now: datetime) -> None:
    """:raises SelfExcluded: while the player's self-exclusion runs (no new stake)."""
    if self_excluded(player, now):
        raise SelfExcluded(
            f"Player {player.id} is self-excluded until {player.self_excluded_until:%Y-%m-%d}."
        )


def _client_seed_problems(seed: str) -> list[FieldError]:
    if not 1 <= len(seed) <= 64 or ":" in seed or not seed.isprintable():
        return [
            FieldError("client_seed", "A client seed is 1-64 printable characters without ':'.")
        ]
    return []


def _own_seat(
    session: Session, principal: Principal, table_id: str
) -> tuple[GameTable, Seat, MatchSettings]:
    """The caller's own seat at ``table_id``, under the table's lock, with its settings.

    :raises Forbidden: without a player token.
    :raises NotFound: without a seat there.
    """
    if principal.player_id is None:
        raise Forbidden("Changing a seat needs the player's own token.")
    table = _table(session, principal, table_id, lock=True)
    seat = session.scalars(
        select(Seat).where(Seat.table_id == table.id, Seat.player_id == principal.player_id)
    ).one_or_none()
    if seat is None:
        raise NotFound(f"Player {principal.player_id} has no seat at table {table_id}.")
    return table, seat, MatchSettings.from_dict(table.settings)


def leave_table(session: Session, principal: Principal, table_id: str, now: datetime) -> TableView:
    """Give up a seat before the match starts (at a per-hand table, between the player's
    hands); the escrow (the table balance) goes back to available funds."""
    table, seat, settings = _own_seat(session, principal, table_id)
    if settings.continuous:
        _between_hands(session, table, seat, "leave")
    elif table.status != "open":
        raise TableNotOpen(f"Table {table_id} is {table.status}: the match has started.")
    _vacate(session, table, seat, now)
    session.flush()
    return _view(session, table, False)


def _vacate(session: Session, table: GameTable, seat: Seat, now: datetime) -> None:
    """The seat is given up (under the caller's table lock): its escrow, a per-hand seat's
    whole table balance, is released (:func:`_refund`, a seamless operator's player credited)
    and the seat is free again. The one way a player leaves a table: by leaving, after
    forfeiting a per-hand table's hand (11.6.3), or on excluding itself."""
    _refund(session, table, seat, now)
    session.delete(seat)
    table.seats_taken -= 1
    lobby_changed(session, table)


def _refund(session: Session, table: GameTable, seat: Seat, now: datetime) -> None:
    """Release a seat's escrow (a per-hand seat's whole table balance). The ledger key names
        the seat's own first hold, so each seat is refunded at most once however it ends
        (leaving, or the table being cancelled), and a later seat of the same player at the
        same table is a different one. A per-hand seat that lost everything has nothing left (a
    seamless operator's round is still closed, by a zero credit)."""
    settings = MatchSettings.from_dict(table.settings)
    key = f"release:{seat.hold_transaction_id}"
    if seat.escrow:
        wallets.release(
            session,
            table.operator_id,
            seat.player_id,
            _escrow_ref(table, settings),
            table.currency,
            seat.escrow,
            key,
            now,
        )
    seamless.pay_out(  # a seamless operator's player gets it back in its wallet
        session,
        operator_id=table.operator_id,
        currency=table.currency,
        escrow_ref=_escrow_ref(table, settings),
        table_id=table.id,
        match_id=None if settings.continuous else table.match_id,
        amounts={seat.player_id: seat.escrow},
        reason="release",
        cause=key,
        now=now,
    )


# --- per-hand Rummy tables (11.5.1) -----------------------------------------------------------


def _escrow_ref(table: GameTable, settings: MatchSettings) -> str:
    """What a seat's money is held for: the match, or on a per-hand table, where hands come
    and go, the table itself (the player's table balance)."""
    return table.id if settings.continuous else table.match_id


def _hand_unsettled(hand: MatchRow) -> bool:
    """Whether a per-hand table's latest hand is being played or waits for its settlement."""
    return hand.status == "playing" or (
        hand.status in ("finished", "void") and hand.settled_at is None
    )


def _between_hands(session: Session, table: GameTable, seat: Seat, what: str) -> None:
    """A per-hand seat changes only between its hands: not while it is dealt into the hand
    being played or waiting for its settlement.

    :raises TableNotOpen: while it is.
    """
    hand = session.get(MatchRow, table.match_id)
    assert hand is not None
    if _hand_unsettled(hand) and any(s["player_id"] == seat.player_id for s in hand.seats or []):
        raise TableNotOpen(
            f"Player {seat.player_id} is dealt into hand {hand.id} at table {table.id}: "
            f"{what} after it is settled."
        )


def _continuous_table(
    session: Session, principal: Principal, table_id: str
) -> tuple[GameTable, Seat, MatchSettings]:
    """The caller's own seat at a per-hand table, under the table's lock (:func:`_own_seat`).

    :raises TableNotOpen: when the table is not a per-hand one.
    """
    table, seat, settings = _own_seat(session, principal, table_id)
    if not settings.continuous:
        raise TableNotOpen(
            f"Table {table_id} is {table.format}: only a "
            f"{' or '.join(registry.CONTINUOUS_FORMATS)} table takes top-ups and sits players out."
        )
    return table, seat, settings


def _top_up_request(
    session: Session, principal: Principal, table_id: str, amount: int, now: datetime
) -> tuple[GameTable, Seat, MatchSettings]:
    """Whether the caller may top up ``amount`` at ``table_id`` now (under the table's lock).

    :raises ValidationFailed: when the balance would pass the maximum buy-in.
    :raises TableNotOpen: while the player's hand is unsettled, or at another table.
    :raises SelfExcluded: while the player's self-exclusion runs.
    """
    table, seat, settings = _continuous_table(session, principal, table_id)
    _between_hands(session, table, seat, "top up")
    not_self_excluded(authorize_player(session, principal, seat.player_id), now)
    if seat.escrow + amount > settings.max_buyin:
        message = (
            f"A top-up of {amount} would bring the table balance {seat.escrow} past the "
            f"maximum buy-in {settings.max_buyin}."
        )
        raise ValidationFailed(message, errors=[FieldError("amount", message)])
    return table, seat, settings


def top_up_stake(
    session: Session, principal: Principal, table_id: str, amount: int, now: datetime
) -> seamless.Stake | None:
    """What a top-up debits from a seamless operator's wallet, on the seat's round (the
    top-up's checks made first); ``None`` in transfer mode."""
    table, seat, _ = _top_up_request(session, principal, table_id, amount, now)
    if wallets.seamless_wallet(session, table.operator_id, table.currency) is None:
        return None
    return seamless.Stake(
        operator_id=table.operator_id,
        player_id=seat.player_id,
        currency=table.currency,
        amount=amount,
        reason="top_up",
        table_id=table.id,
        match_id=None,
        escrow_ref=table.id,
        round_id=seamless.round_of(session, table.operator_id, seat.player_id, table.id),
    )


def top_up(
    session: Session,
    principal: Principal,
    table_id: str,
    amount: int,
    now: datetime,
    debit: str | None = None,
) -> TableView:
    """Add ``amount`` from the player's wallet to its table balance, between its hands, up
    to the table's maximum buy-in (11.5.1; a seamless operator's applied ``debit`` booked
    first); the next hand is dealt if it can be.

    :raises ValidationFailed: when the balance would pass the maximum buy-in.
    :raises TableNotOpen: while the player's hand is unsettled, or at another table.
    :raises InsufficientFunds: when the wallet holds less.
    """
    table, seat, settings = _top_up_request(session, principal, table_id, amount, now)
    seamless.book(session, table.operator_id, seat.player_id, table.currency, amount, debit, now)
    wallets.hold(
        session,
        table.operator_id,
        seat.player_id,
        table.id,
        table.currency,
        amount,
        f"top-up:{table.id}:{seat.player_id}:{secrets.token_hex(8)}",
        now,
    )
    seat.escrow += amount
    session.flush()
    _deal_next_hand(session, table, settings, now)
    return _view(session, table, False)


def set_ready(
    session: Session, principal: Principal, table_id: str, ready: bool, now: datetime
) -> TableView:
    """Sit in (``ready``) or out of the next hands of a per-hand table (11.5.1).

    :raises SelfExcluded: when a self-excluded player asks to be dealt in.
    """
    table, seat, settings = _continuous_table(session, principal, table_id)
    if ready:
        not_self_excluded(authorize_player(session, principal, seat.player_id), now)
    seat.ready = ready
    session.flush()
    _deal_next_hand(session, table, settings, now)
    return _view(session, table, False)


def _continuous(settings: MatchSettings) -> ContinuousTables[Any]:
    """How a continuous table's game goes on from hand to hand."""
    continuous = registry.spec(settings.game).continuous
    assert continuous is not None
    return continuous


def after_hand(
    session: Session, hand: MatchRow, match: AnyMatch, net: Sequence[int], now: datetime
) -> None:
    """A per-hand table's hand (``match``, decoded) was just settled with ``net`` by seat (in
    the settlement's transaction): each seat dealt in keeps its new table balance, a
    forfeiter leaves the table with what is left of its balance (11.6.3: released to its
    wallet, as if it had left), and the next hand is dealt among the others if it can be
    (those sitting out hold nobody up, 11.5.1)."""
    table = session.get(GameTable, hand.table_id, with_for_update=True)
    assert table is not None and hand.seats is not None
    settings = MatchSettings.from_dict(table.settings)
    leaving = _continuous(settings).leaving(match)
    seats = play._seats(session, table.id)
    by_player = {s.player_id: s for s in seats}
    for i, copy in enumerate(hand.seats):
        seat = by_player[copy["player_id"]]  # a seat dealt in cannot leave before this
        seat.escrow += net[i]
        if i in leaving:
            _vacate(session, table, seat, now)
            seats.remove(seat)
    session.flush()
    _deal_next_hand(session, table, settings, now, seats=seats, last=(hand, match))


def _deal_next_hand(
    session: Session,
    table: GameTable,
    settings: MatchSettings,
    now: datetime,
    *,
    seats: list[Seat] | None = None,
    last: tuple[MatchRow, AnyMatch] | None = None,
) -> bool:
    """Deal a per-hand table's next hand when its last one is settled and at least two
    seated players are ready with at least the minimum balance; the others sit it out
    (11.5.1), and so does a player who has excluded itself meanwhile. Whether a hand was
    dealt (under the caller's table lock). ``seats`` and ``last`` (the last hand's row and
    its match) are passed by a caller that has them already."""
    if last is None:
        row = session.get(MatchRow, table.match_id)
        assert row is not None
        decoded = None if row.state is None else games.from_state(row.state)
    else:
        row, decoded = last
    if _hand_unsettled(row):
        return False
    seats = play._seats(session, table.id) if seats is None else seats
    continuous = _continuous(settings)
    short = set(continuous.short({s.seat_no: s.escrow for s in seats}, settings))
    excluded = {
        p.id
        for p in session.scalars(select(Player).where(Player.id.in_([s.player_id for s in seats])))
        if self_excluded(p, now)
    }
    dealt = [s for s in seats if s.ready and s.seat_no not in short and s.player_id not in excluded]
    if len(dealt) < 2:
        return False
    dealer = _next_dealer(continuous, row, decoded, [s.seat_no for s in dealt], table.seat_count)
    if row.status == "waiting":
        hand = session.get(MatchRow, row.id, with_for_update=True)
        assert hand is not None
    else:
        hand = waiting_match(table, new_id("mch"), now)
        session.add(hand)
        table.match_id = hand.id
        session.flush()
    play.start_match(session, table, hand, now, seats=dealt, first_dealer=dealer)
    return True


def _next_dealer(
    continuous: ContinuousTables[Any],
    last: MatchRow,
    match: AnyMatch | None,
    dealt: Sequence[int],
    seat_count: int,
) -> int | None:
    """The next hand's dealer, as an index into ``dealt`` (table seats, ascending): drawn at
    random (None) for a table's first hand, else passed on from the last hand by its game's
    rule (:meth:`~service.games.protocol.ContinuousTables.next_dealer`)."""
    if match is None or not last.seats:
        return None
    table_seats = [s["table_seat"] for s in last.seats]
    return continuous.next_dealer(match, table_seats, dealt, seat_count)


def cancel_unfilled(session: Session, now: datetime, *, limit: int = 100) -> int:
    """Cancel open tables past their fill deadline and refund every seat (docs/engine.md 9.6);
    each table in a unit of work of its own. Returns how many were cancelled."""
    due = unit_of_work.run(
        session,
        lambda: list(
            session.scalars(
                select(GameTable.id)
                .where(
                    GameTable.status == "open",
                    GameTable.fill_deadline <= now,
                    # A continuous table has no fill: its players leave when they like.
                    GameTable.format.not_in([f.value for f in registry.CONTINUOUS_FORMATS]),
                )
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
    lobby_changed(session, table)
    match = session.get(MatchRow, table.match_id, with_for_update=True)
    assert match is not None
    play.cancel_match(session, match, now)
    return True
