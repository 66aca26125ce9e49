"""Tournaments: an operator opens one, players register with their entry held, and it runs
itself (docs/tournaments.md, "Lifecycle").

Two kinds share everything but how they are played: a **knockout** for two-player Gin (a
bracket of matches, :class:`~service.tournaments.bracket.Knockout`) and a **single table**
for a multi-player game (one match for the whole field,
:class:`~service.tournaments.single_table.SingleTable`). Registering holds the entry (buy-in
plus fee) from the player's available funds in its escrow for the tournament, as a seat
holds a stake for a match; unregistering before the start releases it. A sit-and-go starts
when the registration that fills the field commits; a scheduled one at its ``starts_at``
(:func:`start_or_cancel_due`, the beat task's). Either way the start happens under the
tournament's row lock (so exactly one start happens however the last registrations or the
sweeps race): the fees go to the house, the seed draws the bracket (or the seating) and the
first matches are dealt, each at a table the system opens with its entrants seated and
nothing held (``GameTable.tournament_id``). A match's end reaches :func:`record_result`
through the settlement task (:mod:`service.usecases.settlement` sends a tournament's match
here instead of settling it): under the tournament's row lock, the result is recorded once
(the match's ``settled_at`` is the guard), and a completed round opens the next one. The
last match's end pays the prizes from the pool by the payout table. An operator may cancel:
refunds by the rule of docs/tournaments.md, "Cancellation".

Every money movement is a ledger posting with its own idempotency key, named after the
tournament or the entry's hold, so a retry moves nothing twice. The pure rules (payout
table, prizes, ties, the draw, rounds and places) are :mod:`service.tournaments`'s; none is
restated here.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from service import games
from service.db.match_models import GameTable, MatchAction, MatchRow, OutboxEvent, Seat
from service.db.models import LedgerAccount, LedgerEntry, LedgerTransaction, Player
from service.db.tournament_models import Tournament, TournamentEntry
from service.errors import (
    AlreadyRegistered,
    FieldError,
    Forbidden,
    MatchNotLive,
    NotFound,
    TournamentNotOpen,
    ValidationFailed,
)
from service.games import registry
from service.games.common import fair
from service.games.common.settings import MatchSettings
from service.games.protocol import RESIGN
from service.ids import new_id
from service.ledger.money import exponent
from service.ledger.postings import AccountKind, TransactionKind
from service.live import notices
from service.outbound.transport import Post
from service.tournaments.bracket import SIZES, Knockout, draw, shuffle
from service.tournaments.errors import PayoutTableError
from service.tournaments.payouts import DEFAULT_TABLE, PayoutTable, Prize, award
from service.tournaments.single_table import SingleTable, match_result
from service.usecases import play, seamless, tables, unit_of_work, wallets
from service.usecases.auth import Principal, authorize_player, load_players, require_operator
from service.usecases.pages import Page, page_of

#: The formats a knockout's matches are played in: each has a winner.
KNOCKOUT_FORMATS = tuple(dict.fromkeys(f.value for g in registry.SPECS for f in g.knockout))
#: The games a single table is played at, and the formats of its match: to a target or a
#: number of deals (docs/games.md).
SINGLE_TABLE_FORMATS = {
    g.kind.value: tuple(f.value for f in g.single_table) for g in registry.SPECS if g.single_table
}
#: A tournament's kind -> the games it is offered for.
KIND_GAMES = {
    "knockout": tuple(g.kind.value for g in registry.SPECS if g.knockout),
    "single_table": tuple(SINGLE_TABLE_FORMATS),
}
#: The statuses of a tournament that is over.
OVER = ("finished", "cancelled")
#: How far ahead a scheduled tournament may start.
LONGEST_SCHEDULE = timedelta(days=7)
#: How long a sit-and-go takes registrations unless its operator says otherwise.
DEFAULT_REGISTRATION = timedelta(hours=1)


@dataclass(frozen=True)
class TournamentView:
    tournament: Tournament
    entries: list[TournamentEntry]


def _view(session: Session, tournament: Tournament) -> TournamentView:
    return TournamentView(tournament, entries_of(session, tournament.id))


def entries_of(session: Session, tournament_id: str) -> list[TournamentEntry]:
    """A tournament's entries, by seat."""
    return list(
        session.scalars(
            select(TournamentEntry)
            .where(TournamentEntry.tournament_id == tournament_id)
            .order_by(TournamentEntry.seat)
        )
    )


def _refuse(field: str, message: str) -> ValidationFailed:
    return ValidationFailed(f"{field}: {message}", errors=[FieldError(field, message)])


def _changed(session: Session, tournament: Tournament) -> None:
    """``tournament`` changed (under its row lock): its version grows, and its event streams
    hear of it when the transaction commits (:mod:`service.live.notices`)."""
    tournament.version += 1
    notices.changed(session, tournament.id, tournament.version, kind="tournament")


def payout_table_of(text: str | None, entrants: int) -> PayoutTable:
    """The payout table of ``text`` (the default table when ``None``), checked to pay a field
    of ``entrants``.

    :raises ValidationFailed: naming ``payout_table``.
    """
    try:
        table = DEFAULT_TABLE if text is None else PayoutTable.parse(text)
        table.band_for(entrants)
    except PayoutTableError as exc:
        raise _refuse("payout_table", str(exc)) from None
    return table


def create_tournament(
    session: Session,
    principal: Principal,
    *,
    name: str,
    currency: str,
    practice: bool,
    settings: MatchSettings,
    buy_in: int,
    fee: int,
    entrants: int | None,
    payout_table: str | None,
    registration_seconds: int | None,
    now: datetime,
    kind: str = "knockout",
    starts_at: datetime | None = None,
    min_entrants: int | None = None,
) -> TournamentView:
    """Open a tournament (operator only): its server seed is drawn and its commitment
    published now. A sit-and-go (no ``starts_at``) starts when the last of ``entrants``
    registers; a scheduled one at ``starts_at`` with at least ``min_entrants``
    (:func:`start_or_cancel_due`). A knockout's field is 4, 8, 16 or 32; a single table's
    is its game's seat count (Rummy: up to it).

    :raises ValidationFailed: naming each field at fault: a field the kind cannot play, a
        payout table that cannot pay every field it may start with, a game or format the
        kind does not play, a start not ahead, or play money at a real tournament.
    """
    operator_id = require_operator(principal)
    exponent(currency)
    problems = tables.practice_problems(practice, currency)
    field, fewest = _field_problems(
        kind, settings, entrants, min_entrants, starts_at, now, problems
    )
    if problems:
        detail = "; ".join(f"{p.field}: {p.message}" for p in problems)
        raise ValidationFailed(detail, errors=problems)
    table = payout_table_of(payout_table, field)
    for size in start_sizes(fewest, field):
        payout_table_of(str(table), size)
    seed = fair.new_server_seed()
    tournament = Tournament(
        id=new_id("trn"),
        operator_id=operator_id,
        name=name,
        kind=kind,
        game=settings.game.value,
        settings=settings.to_dict(),
        format=settings.format.value,
        currency=currency,
        practice=practice,
        buy_in=buy_in,
        fee=fee,
        entrants=field,
        min_entrants=fewest,
        entries_taken=0,
        payout_table=str(table),
        status="open",
        version=0,
        server_seed=seed,
        commitment=fair.commitment(seed),
        draw=None,
        bracket=None,
        registration_deadline=starts_at
        or now
        + (
            DEFAULT_REGISTRATION
            if registration_seconds is None
            else timedelta(seconds=registration_seconds)
        ),
        starts_at=starts_at,
        created_at=now,
    )
    session.add(tournament)
    session.flush()
    return TournamentView(tournament, [])


def _field_problems(
    kind: str,
    settings: MatchSettings,
    entrants: int | None,
    min_entrants: int | None,
    starts_at: datetime | None,
    now: datetime,
    problems: list[FieldError],
) -> tuple[int, int]:
    """The field (most entrants) and the fewest it may start with, the problems with them
    (and with the game and format for the kind) added to ``problems``."""
    game, fmt = settings.game.value, settings.format.value
    if game not in KIND_GAMES[kind]:
        problems.append(FieldError("game", f"a {kind} plays {', '.join(KIND_GAMES[kind])}"))
    if kind == "knockout":
        if fmt not in KNOCKOUT_FORMATS:
            message = f"a knockout plays {' or '.join(KNOCKOUT_FORMATS)}"
            problems.append(FieldError("format", message))
        field = 4 if entrants is None else entrants
        if entrants not in SIZES:
            problems.append(FieldError("entrants", f"must be 4, 8, 16 or 32, not {entrants}"))
    else:
        formats = SINGLE_TABLE_FORMATS.get(game, ())
        if game in SINGLE_TABLE_FORMATS and fmt not in formats:
            problems.append(FieldError("format", f"a {game} table plays {', '.join(formats)}"))
        field = settings.seats if entrants is None else entrants
        if field != settings.seats:
            message = f"a single table's field is its seat_count, {settings.seats}, not {field}"
            problems.append(FieldError("entrants", message))
    if starts_at is None:
        fewest = field if min_entrants is None else min_entrants
        if fewest != field:
            message = "a sit-and-go starts when its field is full: leave it out"
            problems.append(FieldError("min_entrants", message))
        return field, field
    if not now < starts_at <= now + LONGEST_SCHEDULE:
        problems.append(FieldError("starts_at", "must be ahead, within 7 days"))
    # A game played at more than one seat count starts a single table short of its seats.
    seat_counts = registry.spec(settings.game).seat_counts
    short_handed = len(seat_counts) > 1
    default = SIZES[0] if kind == "knockout" else (seat_counts[0] if short_handed else field)
    fewest = default if min_entrants is None else min_entrants
    if not 2 <= fewest <= field:
        problems.append(FieldError("min_entrants", f"must be from 2 to {field}, not {fewest}"))
    elif kind == "single_table" and not short_handed and fewest != field:
        message = f"a {game} table starts with all its {field} seats taken"
        problems.append(FieldError("min_entrants", message))
    return field, max(2, min(fewest, field))


def start_sizes(fewest: int, field: int) -> list[int]:
    """The numbers of entrants a tournament may start with: any from ``fewest`` to
    ``field`` (a knockout short of its field draws byes, docs/tournaments.md, "Byes")."""
    return list(range(fewest, field + 1))


def match_settings(
    data: dict[str, Any], *, buy_in: int
) -> tuple[MatchSettings | None, list[FieldError]]:
    """The settings of a tournament's matches from request data (a table's,
    :func:`tables.settings_problems`: ``game``, ``seat_count``, ``format``, ``target``,
    ``rummy``, ``clock``), or every problem with them. A tournament's tables hold nothing:
    their stake (or buy-in) is the tournament's buy-in, for the record only."""
    if data.get("format") in KNOCKOUT_FORMATS:
        stakes = {"stake": max(buy_in, 1)}
    else:
        stakes = {"stake_per_point": 1, "min_buyin": buy_in, "max_buyin": buy_in}
    return tables.settings_problems({**data, **stakes})


def _tournament(
    session: Session, principal: Principal, tournament_id: str, *, lock: bool
) -> Tournament:
    tournament = session.get(Tournament, tournament_id, with_for_update=lock)
    if tournament is None or tournament.operator_id != principal.operator_id:
        raise NotFound(f"No tournament {tournament_id!r}.")
    return tournament


def get_tournament(session: Session, principal: Principal, tournament_id: str) -> TournamentView:
    return _view(session, _tournament(session, principal, tournament_id, lock=False))


def list_tournaments(
    session: Session,
    principal: Principal,
    *,
    status: str | None,
    game: str | None,
    currency: str | None,
    limit: int,
    kind: str | None = None,
    starting_after: str | None,
    ending_before: str | None,
) -> Page[TournamentView]:
    """The lobby: the operator's tournaments, newest first, filtered."""
    if currency is not None:
        exponent(currency)
    stmt = select(Tournament).where(Tournament.operator_id == principal.operator_id)
    if status is not None:
        stmt = stmt.where(Tournament.status == status)
    if kind is not None:
        stmt = stmt.where(Tournament.kind == kind)
    if game is not None:
        stmt = stmt.where(Tournament.game == game)
    if currency is not None:
        stmt = stmt.where(Tournament.currency == currency)
    page = page_of(session, stmt, Tournament.id, Tournament, limit, starting_after, ending_before)
    return Page([_view(session, t) for t in page.data], page.has_more, page.next_cursor)


# --- registration -------------------------------------------------------------------------


def _entry_request(
    session: Session, principal: Principal, tournament_id: str, now: datetime
) -> tuple[Tournament, Player, list[TournamentEntry]]:
    """A registration's checks, under the tournament's row lock: the tournament, the
    player and the entries so far."""
    if principal.player_id is None:
        raise Forbidden("Registering needs the player's own token.")
    tournament = _tournament(session, principal, tournament_id, lock=True)
    player = authorize_player(session, principal, principal.player_id)
    entries = entries_of(session, tournament.id)
    if any(e.player_id == player.id for e in entries):
        raise AlreadyRegistered(f"Player {player.id} is registered for {tournament.id} already.")
    if tournament.status != "open" or len(entries) >= tournament.entrants:
        raise TournamentNotOpen(
            f"Tournament {tournament.id} is {tournament.status}: registration is closed."
        )
    if now >= tournament.registration_deadline:
        raise TournamentNotOpen(
            f"Tournament {tournament.id}'s registration closed at "
            f"{tournament.registration_deadline:%Y-%m-%dT%H:%M:%SZ}."
        )
    tables.not_self_excluded(player, now)
    return tournament, player, entries


def entry_stake(
    session: Session, principal: Principal, tournament_id: str, now: datetime
) -> seamless.Stake | None:
    """What registering for ``tournament_id`` debits from a seamless operator's wallet: the
    entry, buy-in plus fee, opening the player's round for this stay in the tournament (the
    registration's checks made first, so a refused one debits nothing); ``None`` in
    transfer mode. The round's ``table_id`` is the tournament's id."""
    tournament, player, _ = _entry_request(session, principal, tournament_id, now)
    if wallets.seamless_wallet(session, tournament.operator_id, tournament.currency) is None:
        return None
    return seamless.Stake(
        operator_id=tournament.operator_id,
        player_id=player.id,
        currency=tournament.currency,
        amount=tournament.buy_in + tournament.fee,
        reason="buyin",
        table_id=tournament.id,
        match_id=None,
        escrow_ref=tournament.id,
        round_id=None,
    )


def register(
    session: Session,
    principal: Principal,
    tournament_id: str,
    now: datetime,
    debit: str | None = None,
) -> TournamentView:
    """Register the caller (player token): the entry, buy-in plus fee, is held from its
    available funds for the tournament in the same transaction (at a seamless operator
    ``debit``, the wallet debit :func:`entry_stake` named, is booked into them first); the
    entry that fills the field starts the tournament (:func:`_start`).

    :raises Forbidden: without a player token.
    :raises AlreadyRegistered: when the player is registered already.
    :raises TournamentNotOpen: once the tournament started, ended or its deadline passed.
    :raises SelfExcluded: while the player's self-exclusion runs.
    :raises InsufficientFunds: when the player's available funds are short of the entry.
    :raises WalletUnavailable: at a seamless operator, without an applied debit of the entry.
    """
    tournament, player, entries = _entry_request(session, principal, tournament_id, now)
    entry_amount = tournament.buy_in + tournament.fee
    seamless.book(
        session, tournament.operator_id, player.id, tournament.currency, entry_amount, debit, now
    )
    hold = wallets.hold(
        session,
        tournament.operator_id,
        player.id,
        tournament.id,
        tournament.currency,
        entry_amount,
        # Each entry's hold has a key of its own: a request's repeats are answered by the
        # HTTP idempotency layer, and a player who unregistered may register again.
        f"tournament-entry:{tournament.id}:{player.id}:{secrets.token_hex(8)}",
        now,
    )
    taken = {e.seat for e in entries}
    entry = TournamentEntry(
        tournament_id=tournament.id,
        seat=min(set(range(1, tournament.entrants + 1)) - taken),
        player_id=player.id,
        registered_at=now,
        hold_transaction_id=hold.transaction.id,
        state="registered",
    )
    session.add(entry)
    tournament.entries_taken = len(entries) + 1
    _changed(session, tournament)
    entries = sorted([*entries, entry], key=lambda e: e.seat)
    if tournament.entries_taken == tournament.entrants and tournament.starts_at is None:
        _start(session, tournament, now, entries)
    session.flush()
    return TournamentView(tournament, entries)


def unregister(
    session: Session, principal: Principal, tournament_id: str, now: datetime
) -> TournamentView:
    """Withdraw the caller's entry before the start: buy-in and fee released in full.

    :raises Forbidden: without a player token.
    :raises NotFound: when the caller is not registered.
    :raises TournamentNotOpen: once the tournament has started or ended.
    """
    if principal.player_id is None:
        raise Forbidden("Unregistering needs the player's own token.")
    tournament = _tournament(session, principal, tournament_id, lock=True)
    entry = session.scalars(
        select(TournamentEntry).where(
            TournamentEntry.tournament_id == tournament.id,
            TournamentEntry.player_id == principal.player_id,
        )
    ).one_or_none()
    if entry is None:
        raise NotFound(f"Player {principal.player_id} is not registered for {tournament.id}.")
    if tournament.status != "open":
        raise TournamentNotOpen(f"Tournament {tournament.id} is {tournament.status}.")
    _withdraw(session, tournament, entry, now)
    session.flush()
    return _view(session, tournament)


def exclude_from_tournaments(session: Session, player: Player, now: datetime) -> None:
    """A self-exclusion that runs at ``now`` withdraws the player from every tournament it is
    registered for that has not started (its entry released, as when unregistering), in the
    caller's transaction; a tournament already running is played to its end, as a match is.
    The tournaments are locked in id order before any money moves."""
    if not tables.self_excluded(player, now):
        return
    ids = sorted(
        set(
            session.scalars(
                select(TournamentEntry.tournament_id).where(
                    TournamentEntry.player_id == player.id,
                    TournamentEntry.state == "registered",
                )
            )
        )
    )
    for tournament_id in ids:
        tournament = session.get(Tournament, tournament_id, with_for_update=True)
        assert tournament is not None
        entry = session.scalars(
            select(TournamentEntry).where(
                TournamentEntry.tournament_id == tournament_id,
                TournamentEntry.player_id == player.id,
            )
        ).one_or_none()
        if entry is None or tournament.status != "open":  # left, or started, meanwhile
            continue
        _withdraw(session, tournament, entry, now)
    session.flush()


def _withdraw(
    session: Session, tournament: Tournament, entry: TournamentEntry, now: datetime
) -> None:
    """An entry withdrawn before the start: released in full (at a seamless operator
    credited back to its wallet, closing the player's round) and its seat freed."""
    _release(session, tournament, entry, tournament.buy_in + tournament.fee, now)
    _credit(
        session,
        tournament,
        {entry.player_id: tournament.buy_in + tournament.fee},
        "refund",
        f"tournament-release:{entry.hold_transaction_id}",
        now,
    )
    session.delete(entry)
    tournament.entries_taken -= 1
    _changed(session, tournament)


def _credit(
    session: Session,
    tournament: Tournament,
    amounts: dict[str, int],
    reason: str,
    cause: str,
    now: datetime,
) -> None:
    """At a seamless operator, ``amounts`` (already in the players' available funds) leave
    for its wallet, each credit closing its player's round in the tournament (a zero credit
    when there is nothing to pay back), sent after the commit; nothing in transfer mode.
    ``cause`` (the ledger key of what paid them) makes each player's credit once."""
    seamless.pay_out(
        session,
        operator_id=tournament.operator_id,
        currency=tournament.currency,
        escrow_ref=tournament.id,
        table_id=tournament.id,
        match_id=None,
        amounts=amounts,
        reason=reason,
        cause=cause,
        now=now,
    )


def _release(
    session: Session, tournament: Tournament, entry: TournamentEntry, amount: int, now: datetime
) -> None:
    """Return ``amount`` of an entry's escrow to the player's available funds, once: the key
    names the entry's own hold."""
    wallets.release(
        session,
        tournament.operator_id,
        entry.player_id,
        tournament.id,
        tournament.currency,
        amount,
        f"tournament-release:{entry.hold_transaction_id}",
        now,
    )


# --- the start and the rounds -----------------------------------------------------------


def _start(
    session: Session,
    tournament: Tournament,
    now: datetime,
    entries: Sequence[TournamentEntry] | None = None,
) -> None:
    """The field is full (under the tournament's lock): the seed draws the bracket, round 1
    is dealt, the fees go to the house. ``entries``: the entries by seat, when the caller
    has them (the last registration), else read. The fees last: every start locks the
    house's fee account, so it is held only for the end of the transaction, not while the
    matches are dealt (starts at once would queue behind one another's deals)."""
    entries = entries_of(session, tournament.id) if entries is None else entries
    players = [e.player_id for e in entries]
    # Every entrant's row in one read, held while their matches are dealt and the fees
    # taken (both find them in the session).
    loaded = load_players(session, players)
    tournament.status = "running"
    tournament.started_at = now
    for entry in entries:
        entry.state = "playing"
    if tournament.kind == "knockout":
        order = draw(tournament.server_seed, players)
        tournament.draw = list(order)
        knockout = Knockout.start(order)
        tournament.bracket, opened = _with_matches(session, tournament, knockout, entries, now)
        matches = [p["match_id"] for p in tournament.bracket[0] if p["match_id"] is not None]
    else:
        order = shuffle(tournament.server_seed, players)
        tournament.draw = list(order)
        by_seat = {e.seat: e for e in entries}
        seated = [by_seat[seat] for seat in order]
        opened = [_open_table(session, tournament, f"{tournament.name} table", seated, now)]
        tournament.bracket = SingleTable(order).to_dict(opened[0][1].id)
        matches = [opened[0][1].id]
    _event(
        session,
        tournament,
        "tournament.started",
        {
            "server_seed": tournament.server_seed,
            "draw": tournament.draw,
            "players": [e.player_id for e in entries],
            "matches": matches,
        },
        now,
    )
    _changed(session, tournament)
    _deal(session, opened, now)
    if tournament.fee:
        wallets.capture(
            session,
            tournament.operator_id,
            tournament.id,
            tournament.currency,
            {e.player_id: tournament.fee for e in entries},
            {},
            tournament.fee * len(entries),
            f"tournament-fees:{tournament.id}",
            now,
        )
    session.flush()
    del loaded


def _with_matches(
    session: Session,
    tournament: Tournament,
    knockout: Knockout,
    entries: Sequence[TournamentEntry],
    now: datetime,
    *,
    deal: bool = True,
) -> tuple[list[list[dict[str, Any]]], list[tuple[GameTable, MatchRow, list[Seat]]]]:
    """The bracket to store: ``knockout``'s pairings with the match ids the stored bracket
    gives them; with ``deal``, a table and match opened for each pairing that has none yet
    (added to the session, for :func:`_deal`): (the bracket, the tables opened)."""
    known = tournament.bracket or []
    by_seat = {e.seat: e for e in entries}
    out: list[list[dict[str, Any]]] = []
    opened: list[tuple[GameTable, MatchRow, list[Seat]]] = []
    for r, pairings in enumerate(knockout.to_dict()):
        row: list[dict[str, Any]] = []
        for m, pairing in enumerate(pairings):
            stored = {**pairing, "match_id": known[r][m]["match_id"] if r < len(known) else None}
            first, second = pairing["first"], pairing["second"]
            if stored["match_id"] is None and deal and first is not None and second is not None:
                name = f"{tournament.name} round {r + 1} match {m + 1}"
                seated = (by_seat[first], by_seat[second])
                opened.append(_open_table(session, tournament, name, seated, now))
                stored["match_id"] = opened[-1][1].id
            row.append(stored)
        out.append(row)
    return out, opened


def _deal(
    session: Session, opened: Sequence[tuple[GameTable, MatchRow, list[Seat]]], now: datetime
) -> None:
    """Deal the matches of the tables :func:`_open_table` added: the tables, their seats and
    their waiting matches are written in one flush (a round's in one statement per table,
    not per match), then each match is dealt as every match is (:func:`play.start_match`).
    """
    session.flush()
    for table, match, seats in opened:
        play.start_match(session, table, match, now, seated=seats)


def _open_table(
    session: Session,
    tournament: Tournament,
    name: str,
    entries: Sequence[TournamentEntry],
    now: datetime,
) -> tuple[GameTable, MatchRow, list[Seat]]:
    """A table the system opens for a knockout's pairing or a single table, every entrant
    seated (``entries`` in seat order, 0 up) and nothing held, and its waiting match, added
    to the session (:func:`_deal` deals it): (the table, its match, its seats). A Rummy
    table that started short of its field seats the entrants there are."""
    stored = {**tournament.settings, "seats": len(entries)}
    settings = MatchSettings.from_dict(stored)
    table = GameTable(
        id=new_id("tbl"),
        operator_id=tournament.operator_id,
        match_id=new_id("mch"),
        name=name[-100:],
        game=tournament.game,
        seat_count=len(entries),
        format=tournament.format,
        currency=tournament.currency,
        practice=tournament.practice,
        private=True,  # never in the lobby, joined by nobody else
        invite_code=None,
        stake=settings.stake,
        stake_per_point=settings.stake_per_point,
        min_buyin=settings.min_buyin or settings.stake,
        max_buyin=settings.max_buyin or settings.stake,
        settings=settings.to_dict(),
        status="playing",
        seats_taken=len(entries),
        fill_deadline=now,
        created_at=now,
        tournament_id=tournament.id,
    )
    seats = [
        Seat(
            table_id=table.id,
            seat_no=seat_no,
            player_id=entry.player_id,
            escrow=0,  # the money is in the tournament's pool
            hold_transaction_id=entry.hold_transaction_id,
            client_seed=fair.new_client_seed(),
            joined_at=now,
        )
        for seat_no, entry in enumerate(entries)
    ]
    match = tables.waiting_match(table, table.match_id, now)
    session.add_all([table, *seats, match])
    return table, match, seats


def tournament_of_match(session: Session, match_id: str) -> str | None:
    """The tournament ``match_id`` is played for, if any."""
    return session.scalar(
        select(GameTable.tournament_id)
        .join(MatchRow, MatchRow.table_id == GameTable.id)
        .where(MatchRow.id == match_id)
    )


def send_credits(session: Session, match_id: str, post: Post) -> int:
    """After a tournament's match was recorded (the settlement task, right after its
    commit): a seamless operator's credits of the tournament (the prizes, once its last
    match has paid them) sent now; the wallet sweep sends whatever this leaves. How many
    are acknowledged."""

    def owner() -> tuple[str, str] | None:
        found = session.execute(
            select(Tournament.operator_id, Tournament.id)
            .join(GameTable, GameTable.tournament_id == Tournament.id)
            .join(MatchRow, MatchRow.table_id == GameTable.id)
            .where(MatchRow.id == match_id)
        ).first()
        return None if found is None else (found[0], found[1])

    found = unit_of_work.run(session, owner)
    if found is None:
        return 0
    return seamless.send_credits_for(session, found[0], found[1], post)


def record_result(session: Session, tournament_id: str, match_id: str, now: datetime) -> bool:
    """A tournament match has ended: its winner advances (under the tournament's row lock,
    then the match's), a completed round deals the next, the final pays the prizes. Once
    per match: the match's ``settled_at`` is written with the result, and a second call
    finds it. Whether the result was recorded now.

    :raises NotFound: when there is no such match in that tournament.
    :raises MatchNotLive: when the match has not ended.
    """
    tournament = session.get(Tournament, tournament_id, with_for_update=True)
    row = session.get(MatchRow, match_id, with_for_update=True)
    if tournament is None or row is None:
        raise NotFound(f"No match {match_id!r} in tournament {tournament_id!r}.")
    if row.settled_at is not None:
        return False
    if row.status not in ("finished", "void") or row.state is None:
        raise MatchNotLive(f"Match {match_id} is {row.status}; it has not ended.")
    row.settled_at = now
    if tournament.status != "running" or tournament.bracket is None:
        return False  # cancelled meanwhile: the cancellation placed everyone
    entries = entries_of(session, tournament.id)
    played = _recorded(session, tournament, played_so_far(tournament), entries, row, now)
    if played.finished:
        _pay(session, tournament, entries, played, now)
        tournament.status = "finished"
        tournament.finished_at = now
        _event(session, tournament, "tournament.finished", _prizes_data(entries), now)
    _changed(session, tournament)
    session.flush()
    return True


Played = Knockout | SingleTable


def played_so_far(tournament: Tournament) -> Played:
    """A started tournament's bracket or table as its record stands."""
    assert tournament.bracket is not None
    if tournament.kind == "knockout":
        return Knockout.from_dict(tournament.bracket)
    return SingleTable.from_dict(tournament.bracket)


def _recorded(
    session: Session,
    tournament: Tournament,
    played: Played,
    entries: Sequence[TournamentEntry],
    row: MatchRow,
    now: datetime,
    *,
    deal: bool = True,
) -> Played:
    """``played`` with ``row``'s ended match recorded (its ``settled_at`` written), stored
    on the tournament; with ``deal``, a completed knockout round's next matches dealt."""
    row.settled_at = now
    if isinstance(played, Knockout):
        knockout = _record(tournament, played, entries, row)
        tournament.bracket, opened = _with_matches(
            session, tournament, knockout, entries, now, deal=deal
        )
        _deal(session, opened, now)
        return knockout
    assert row.state is not None
    table = played.finish(match_result(games.from_state(row.state)), forfeit_order(session, row.id))
    tournament.bracket = table.to_dict(row.id)
    return table


def forfeit_order(session: Session, match_id: str) -> list[int]:
    """The match's forfeiters (its seats), earliest first, from its log: a resignation or a
    forfeit on the turn clock."""
    logged = session.execute(
        select(MatchAction.seat, MatchAction.action)
        .where(MatchAction.match_id == match_id, MatchAction.seat.is_not(None))
        .order_by(MatchAction.version)
    ).all()
    order: list[int] = []
    for seat, action in logged:
        forfeit = action == RESIGN or action.startswith("TIMEOUT forfeit")
        if forfeit and seat is not None and seat not in order:
            order.append(seat)
    return order


def _record(
    tournament: Tournament,
    knockout: Knockout,
    entries: Sequence[TournamentEntry],
    row: MatchRow,
) -> Knockout:
    """``knockout`` with ``row``'s ended match won by its winner, its loser knocked out."""
    assert row.state is not None and row.seats is not None and tournament.bracket is not None
    [(round_no, match_no)] = [
        (r, m)
        for r, pairings in enumerate(tournament.bracket, 1)
        for m, pairing in enumerate(pairings, 1)
        if pairing["match_id"] == row.id
    ]
    won: int | None = games.result(games.from_state(row.state))["winner"]
    # A knockout's formats always name a winner: First To Knock's dead-hand limit, the one
    # way to a void match, is refused when the tournament is created.
    winner_index = won if won is not None else 0
    by_player = {e.player_id: e for e in entries}
    winner = by_player[row.seats[winner_index]["player_id"]]
    by_player[row.seats[1 - winner_index]["player_id"]].state = "knocked_out"
    return knockout.record(round_no, match_no, winner.seat)


def _pay(
    session: Session,
    tournament: Tournament,
    entries: Sequence[TournamentEntry],
    played: Played,
    now: datetime,
) -> list[Prize]:
    """Pay the pool (the buy-ins of the entrants it started with) by the standings
    (:func:`award`): every buy-in out of escrow, each prize to its player's available
    funds, in one capture; each entry placed."""
    band = PayoutTable.parse(tournament.payout_table).band_for(len(entries))
    prizes = award(tournament.buy_in * len(entries), band.shares, played.standings())
    by_seat = {e.seat: e for e in entries}
    wallets.capture(
        session,
        tournament.operator_id,
        tournament.id,
        tournament.currency,
        {e.player_id: tournament.buy_in for e in entries},
        {by_seat[p.seat].player_id: p.amount for p in prizes},
        0,
        f"tournament-prizes:{tournament.id}",
        now,
    )
    paid = {p.seat: p.amount for p in prizes}
    _credit(
        session,
        tournament,
        {e.player_id: paid.get(e.seat, 0) for e in entries},
        "payout",
        f"tournament-prizes:{tournament.id}",
        now,
    )
    for prize in prizes:
        entry = by_seat[prize.seat]
        entry.prize = prize.amount
        entry.first_place, entry.last_place = prize.first_place, prize.last_place
        if prize.seat in played.champions:
            entry.state = "champion"
        elif isinstance(played, SingleTable):
            entry.state = "placed"
        elif entry.state == "playing":  # still in when it was cancelled
            entry.state = "knocked_out"
    return prizes


def _prizes_data(entries: Sequence[TournamentEntry]) -> dict[str, Any]:
    return {
        "prizes": [
            {
                "seat": e.seat,
                "player_id": e.player_id,
                "amount": e.prize,
                "first_place": e.first_place,
                "last_place": e.last_place,
            }
            for e in entries
        ]
    }


# --- cancellation -------------------------------------------------------------------------


def cancel(
    session: Session, principal: Principal, tournament_id: str, now: datetime
) -> TournamentView:
    """Cancel a tournament (operator only) and refund it by docs/tournaments.md,
    "Cancellation": before any match has finished every entry in full (a fee taken at the
    start given back by the house); after, the pool paid by the current standings. Its
    matches still being played end, unsettled.

    :raises TournamentNotOpen: when it has finished or was cancelled already.
    """
    require_operator(principal)
    tournament = _tournament(session, principal, tournament_id, lock=True)
    _cancel(session, tournament, now, reason="operator")
    return _view(session, tournament)


def _cancel(session: Session, tournament: Tournament, now: datetime, *, reason: str) -> None:
    if tournament.status not in ("open", "running"):
        raise TournamentNotOpen(f"Tournament {tournament.id} is {tournament.status}.")
    entries = entries_of(session, tournament.id)
    played = _stop_matches(session, tournament, entries, now)
    if played is not None and played.decided:
        _pay(session, tournament, entries, played, now)
        data = _prizes_data(entries)
    else:
        for entry in entries:
            held = tournament.buy_in + (0 if played is not None else tournament.fee)
            _release(session, tournament, entry, held, now)
            entry.state = "refunded"
        if played is not None and tournament.fee:  # the house gives the fees back
            wallets.refund_fees(
                session,
                tournament.operator_id,
                tournament.id,
                tournament.currency,
                {e.player_id: tournament.fee for e in entries},
                f"tournament-fee-refund:{tournament.id}",
                now,
            )
        refund = tournament.buy_in + tournament.fee
        _credit(
            session,
            tournament,
            {e.player_id: refund for e in entries},
            "refund",
            f"tournament-refunds:{tournament.id}",
            now,
        )
        data = {"refunds": [{"player_id": e.player_id, "amount": refund} for e in entries]}
    tournament.status = "cancelled"
    tournament.cancelled_at = now
    _event(session, tournament, "tournament.cancelled", {"reason": reason, **data}, now)
    _changed(session, tournament)
    session.flush()


def _stop_matches(
    session: Session, tournament: Tournament, entries: Sequence[TournamentEntry], now: datetime
) -> Played | None:
    """A running tournament's bracket or table as it stands (``None`` before the start): a
    match being played that has ended is recorded, one still being played ends, cancelled
    (its table too), and its players stay in, tied."""
    if tournament.bracket is None:
        return None
    played = played_so_far(tournament)
    for pairing in tournament.bracket[-1]:
        if pairing.get("winner") is not None or pairing.get("places") is not None:
            continue
        if pairing["match_id"] is None:
            continue
        row = session.get(MatchRow, pairing["match_id"], with_for_update=True)
        assert row is not None
        if row.status in ("finished", "void") and row.settled_at is None:
            played = _recorded(session, tournament, played, entries, row, now, deal=False)
        elif row.status in ("waiting", "playing"):
            play.cancel_match(session, row, now)
            table = session.get(GameTable, row.table_id, with_for_update=True)
            assert table is not None
            table.status = "cancelled"
    return played


def start_or_cancel_due(session: Session, now: datetime, *, limit: int = 100) -> int:
    """Open tournaments whose registration has closed (a sit-and-go's deadline, a scheduled
    one's ``starts_at``): a scheduled one whose field is one it may start with
    (:func:`start_sizes`) starts, any other is cancelled and every entry refunded; each in
    a unit of work of its own, under the tournament's row lock (so two sweeps at once act
    once). How many were started or cancelled."""
    due = unit_of_work.run(
        session,
        lambda: list(
            session.scalars(
                select(Tournament.id)
                .where(Tournament.status == "open", Tournament.registration_deadline <= now)
                .order_by(Tournament.registration_deadline, Tournament.id)
                .limit(limit)
            )
        ),
    )
    return sum(unit_of_work.run(session, _start_or_cancel_due, session, t, now) for t in due)


def _start_or_cancel_due(session: Session, tournament_id: str, now: datetime) -> bool:
    tournament = session.get(Tournament, tournament_id, with_for_update=True)
    if tournament is None or tournament.status != "open" or tournament.registration_deadline > now:
        return False  # started, cancelled or moved meanwhile
    sizes = start_sizes(tournament.min_entrants, tournament.entrants)
    if tournament.starts_at is not None and tournament.entries_taken in sizes:
        _start(session, tournament, now)
    else:
        _cancel(session, tournament, now, reason="unfilled")
    return True


# --- the statement --------------------------------------------------------------------------


@dataclass(frozen=True)
class PoolLine:
    """One movement of the tournament's money, signed as the pool sees it: an entry in
    (positive), a fee, prize or refund out (negative), a fee the house gives back in."""

    transaction_id: str
    kind: str
    player_id: str | None
    amount: int
    created_at: datetime


#: (transaction kind, account kind, sign of the entry) -> the statement's line kind.
_LINES = {
    (TransactionKind.HOLD.value, AccountKind.PLAYER_ESCROW.value, 1): "entry",
    (TransactionKind.RELEASE.value, AccountKind.PLAYER_ESCROW.value, -1): "refund",
    (TransactionKind.CAPTURE.value, AccountKind.HOUSE_FEE.value, 1): "fee",
    (TransactionKind.CAPTURE.value, AccountKind.PLAYER_AVAILABLE.value, 1): "prize",
    (TransactionKind.FEE_REFUND.value, AccountKind.HOUSE_FEE.value, -1): "fee_returned",
    (TransactionKind.FEE_REFUND.value, AccountKind.PLAYER_AVAILABLE.value, 1): "fee_refund",
}


def statement(
    session: Session, principal: Principal, tournament_id: str
) -> tuple[Tournament, list[PoolLine]]:
    """Every movement of the tournament's money, from its ledger transactions, oldest first:
    the lines sum to what it still holds, zero once it has finished or been cancelled."""
    require_operator(principal)
    tournament = _tournament(session, principal, tournament_id, lock=False)
    rows = session.execute(
        select(LedgerTransaction, LedgerEntry, LedgerAccount)
        .join(LedgerEntry, LedgerEntry.transaction_id == LedgerTransaction.id)
        .join(LedgerAccount, LedgerAccount.id == LedgerEntry.account_id)
        .where(
            LedgerTransaction.operator_id == tournament.operator_id,
            LedgerTransaction.match_ref == tournament.id,
        )
        .order_by(LedgerEntry.seq)
    ).all()
    lines = []
    for txn, entry, account in rows:
        kind = _LINES.get((txn.kind, account.kind, 1 if entry.amount > 0 else -1))
        if kind is None:  # the other side of a line already listed
            continue
        into_pool = (
            entry.amount if account.kind == AccountKind.PLAYER_ESCROW.value else -entry.amount
        )
        lines.append(PoolLine(txn.id, kind, account.player_id, into_pool, txn.created_at))
    return tournament, lines


# --- the outbox ---------------------------------------------------------------------------


def _event(
    session: Session, tournament: Tournament, kind: str, data: dict[str, Any], now: datetime
) -> None:
    session.add(
        OutboxEvent(
            id=new_id("evt"),
            operator_id=tournament.operator_id,
            type=kind,
            subject_id=tournament.id,
            data={
                "tournament_id": tournament.id,
                "currency": tournament.currency,
                **data,
            },
            created_at=now,
            published_at=None,
            attempts=0,
        )
    )


# --- following --------------------------------------------------------------------------


def peek_versions(engine: Engine, tournament_ids: list[str]) -> dict[str, int]:
    """The versions of ``tournament_ids`` in one read (a waiting room whose notices
    stopped)."""
    if not tournament_ids:
        return {}
    with Session(engine) as session:
        rows = session.execute(
            select(Tournament.id, Tournament.version).where(Tournament.id.in_(tournament_ids))
        )
        return {row.id: int(row.version) for row in rows}
