"""Practice bots: an operator seats a bot at a practice table; the worker plays its turns.

A bot is an ordinary player of the operator, marked in ``bot_players``. Seating one creates
the player, funds it with exactly its stake or buy-in in play money by a deposit from the
operator's clearing account (a double-entry ledger movement like any deposit), and sits it
down through :func:`service.usecases.tables.join_table`, the use case a person's seat goes
through, all in the caller's one unit of work: a bot whose seat is refused (the table filled
meanwhile) leaves nothing behind, neither the player nor its play money. Entering one in a
practice tournament (:func:`enter_bot`) is the same path with the tournament's registration,
:func:`service.usecases.tournaments.register`, in place of the seat: funded with exactly the
entry (buy-in plus fee), it then plays each match the tournament deals it.

:func:`play_turns` is what the worker runs when a person's action at a practice table
commits, after a bot's action, and every second from beat: one cheap query finds the bots'
matches that changed since the bot last looked, and for each the bot reads its own view and
acts through :func:`service.usecases.play.act` with its own principal and the version it
decided on, so it gets exactly the validation a person's action gets. Two runs at once are
harmless: the loser's action is a stale version (409) and is ignored.
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session

from service.db.bot_models import BotPlayer
from service.db.match_models import GameTable, MatchRow, Seat
from service.errors import (
    FieldError,
    IllegalMove,
    MatchNotLive,
    NotFound,
    ServiceError,
    StaleVersion,
    TableNotOpen,
    ValidationFailed,
)
from service.games import registry
from service.games.bots import action_text, decide_multi
from service.games.common.errors import InvalidSettings
from service.games.common.settings import MatchSettings
from service.ledger.money import PRACTICE_CURRENCY
from service.usecases import play, players, tables, tournaments, unit_of_work, wallets
from service.usecases.auth import Principal, require_operator

log = logging.getLogger(__name__)

#: Most actions one bot plays in a row in one scan (a new hand can make it act again).
MAX_ACTIONS_IN_A_ROW = 8


class PracticeTableRequired(ServiceError):
    """Raised when a bot is asked to sit at a real-money table."""

    status = 422
    code = "practice_table_required"
    title = "Practice table required"


class PracticeTournamentRequired(ServiceError):
    """Raised when a bot is asked to enter a real-money tournament."""

    status = 422
    code = "practice_tournament_required"
    title = "Practice tournament required"


@dataclass(frozen=True)
class SeatedBot:
    bot: BotPlayer
    table: tables.TableView


@dataclass(frozen=True)
class EnteredBot:
    bot: BotPlayer
    tournament: tournaments.TournamentView


def seat_bot(
    session: Session,
    principal: Principal,
    table_id: str,
    *,
    buyin: int | None,
    display_name: str,
    now: datetime,
) -> SeatedBot:
    """Seat a new bot player at the operator's practice table ``table_id``.

    :raises NotFound: when the operator has no such table.
    :raises PracticeTableRequired: for a real-money table.
    :raises TableNotOpen: when the table takes no more players.
    """
    operator_id = require_operator(principal)
    view = tables.get_table(session, principal, table_id)
    table = view.table
    if not table.practice or table.currency != PRACTICE_CURRENCY:
        message = f"Bots only play at practice tables ({PRACTICE_CURRENCY}); {table_id} is not one."
        raise PracticeTableRequired(message, errors=[FieldError("table_id", message)])
    if table.status != "open" or len(view.seats) >= table.seat_count:
        raise TableNotOpen(f"Table {table_id} is {table.status} and takes no more players.")
    settings = MatchSettings.from_dict(table.settings)
    if buyin is None and settings.uses_buyins:
        buyin = settings.max_buyin
    try:
        escrow = settings.escrow_for(buyin)
    except InvalidSettings as exc:
        raise ValidationFailed(str(exc), errors=[FieldError("buyin", exc.message)]) from None
    player = players.create_player(
        session, principal, f"bot:{table.id}:{secrets.token_hex(6)}", display_name, None, now
    )
    strategy = "eager" if table.format in registry.SINGLE_HAND_FORMATS else "sensible"
    bot = BotPlayer(
        player_id=player.id,
        operator_id=operator_id,
        table_id=table.id,
        match_id=table.match_id,
        strategy=strategy,
        seen_version=None,
        created_at=now,
    )
    session.add(bot)
    funding = f"bot-funding:{player.id}"
    wallets.deposit(session, principal, player.id, PRACTICE_CURRENCY, escrow, funding, now)
    seated = tables.join_table(
        session,
        Principal(operator_id, player.id),
        table.id,
        buyin=buyin,
        invite_code=table.invite_code,
        client_seed=None,
        now=now,
    )
    return SeatedBot(bot, seated)


def enter_bot(
    session: Session,
    principal: Principal,
    tournament_id: str,
    *,
    display_name: str,
    now: datetime,
) -> EnteredBot:
    """Enter a new bot player in the operator's practice tournament ``tournament_id``: as
    :func:`seat_bot`, funded with exactly the entry by a deposit, then registered like a
    person (the entry that fills a sit-and-go's field starts it).

    :raises NotFound: when the operator has no such tournament.
    :raises PracticeTournamentRequired: for a real-money tournament.
    :raises TournamentNotOpen: when the tournament takes no more entries.
    """
    operator_id = require_operator(principal)
    tournament = tournaments.get_tournament(session, principal, tournament_id).tournament
    if not tournament.practice or tournament.currency != PRACTICE_CURRENCY:
        message = (
            f"Bots only enter practice tournaments ({PRACTICE_CURRENCY}); "
            f"{tournament_id} is not one."
        )
        raise PracticeTournamentRequired(message, errors=[FieldError("tournament_id", message)])
    player = players.create_player(
        session, principal, f"bot:{tournament.id}:{secrets.token_hex(6)}", display_name, None, now
    )
    bot = BotPlayer(
        player_id=player.id,
        operator_id=operator_id,
        table_id=None,
        tournament_id=tournament.id,
        match_id="",  # none dealt yet: its first match is new to it
        strategy="eager" if tournament.format in registry.SINGLE_HAND_FORMATS else "sensible",
        seen_version=None,
        created_at=now,
    )
    session.add(bot)
    entry = tournament.buy_in + tournament.fee
    funding = f"bot-funding:{player.id}"
    wallets.deposit(session, principal, player.id, PRACTICE_CURRENCY, entry, funding, now)
    entered = tournaments.register(
        session, Principal(operator_id, player.id), tournament.id, now, debit=None
    )
    return EnteredBot(bot, entered)


def due_turns(session: Session, *, limit: int = 100) -> list[tuple[str, str, str, str]]:
    """(operator id, bot player id, match id, strategy) of every live match with a bot that
    changed since that bot last looked: indexed queries, no match state decoded. A table's
    bot plays its table's current match (a per-hand Rummy table deals each hand as a new
    one); a tournament's bot the match of each of the tournament's tables it is seated at."""
    changed = (
        MatchRow.status == "playing",
        or_(
            BotPlayer.match_id != MatchRow.id,
            BotPlayer.seen_version.is_(None),
            MatchRow.version > BotPlayer.seen_version,
        ),
    )
    columns = (
        BotPlayer.operator_id,
        BotPlayer.player_id,
        MatchRow.id,
        BotPlayer.strategy,
        MatchRow.updated_at,
    )
    at_tables = (
        select(*columns)
        .join(GameTable, GameTable.id == BotPlayer.table_id)
        .join(MatchRow, MatchRow.id == GameTable.match_id)
        .where(*changed)
    )
    in_tournaments = (  # the tournament's tables (indexed), the bot's seat by its key
        select(*columns)
        .join(GameTable, GameTable.tournament_id == BotPlayer.tournament_id)
        .join(MatchRow, MatchRow.id == GameTable.match_id)
        .join(Seat, (Seat.table_id == GameTable.id) & (Seat.player_id == BotPlayer.player_id))
        .where(BotPlayer.tournament_id.is_not(None), *changed)
    )
    both = at_tables.union_all(in_tournaments).subquery()
    rows = session.execute(select(both).order_by(both.c.updated_at).limit(limit)).all()
    return [(r[0], r[1], r[2], r[3]) for r in rows]


@dataclass(frozen=True)
class Turns:
    applied: int  # actions the bots played
    finished: int  # matches that ended on a bot's action


def play_turns(session: Session, now: datetime, *, limit: int = 100) -> Turns:
    """Play every bot whose turn it is (see the module docstring)."""
    applied = finished = 0
    due = unit_of_work.run(session, lambda: due_turns(session, limit=limit))
    for operator_id, player_id, match_id, strategy in due:
        view, count = _play(
            session,
            Principal(operator_id, player_id),
            match_id,
            strategy == "eager",
            now,
        )
        applied += count
        finished += 1 if count and view["status"] in ("finished", "void") else 0
    return Turns(applied, finished)


def _play(
    session: Session, principal: Principal, match_id: str, eager: bool, now: datetime
) -> tuple[dict[str, Any], int]:
    view = play.get_view(session, principal, match_id)
    applied = 0
    for _ in range(MAX_ACTIONS_IN_A_ROW):
        action = _choice(view, eager)
        if action is None:
            break
        try:
            view = play.act(session, principal, match_id, action, view["version"], now)
        except (StaleVersion, MatchNotLive):
            return view, applied  # someone else (a twin run, the clock) got there first
        except IllegalMove as exc:  # never expected: the bot picks from legal_actions
            log.error(
                "bot %s in %s: %s refused: %s", principal.player_id, match_id, action, exc.detail
            )
            return view, applied
        applied += 1
    unit_of_work.run(
        session, lambda: _seen(session, principal.player_id, match_id, view["version"])
    )
    return view, applied


def _choice(view: dict[str, Any], eager: bool) -> str | None:
    """The bot's action's text in ``view`` (a listed legal action), or None: not its turn.
    ``eager`` (Gin): it knocks as soon as any knock is legal."""
    if view["status"] != "playing":
        return None
    game = view.get("play")
    if game is not None:  # three-player or partnership Gin, Rummy
        if view["you"] not in game.get("to_act", ()) or not game.get("legal_actions"):
            return None
        return action_text(decide_multi(game, eager=eager))
    hand = view.get("hand")
    if not hand or not hand.get("legal_actions"):
        return None
    return action_text(decide_multi(hand, eager=eager))


def _seen(session: Session, player_id: str | None, match_id: str, version: int) -> None:
    """Remember the match and version the bot has dealt with (never moving a match's
    version backwards)."""
    session.execute(
        update(BotPlayer)
        .where(
            BotPlayer.player_id == player_id,
            or_(
                BotPlayer.match_id != match_id,
                BotPlayer.seen_version.is_(None),
                BotPlayer.seen_version < version,
            ),
        )
        .values(match_id=match_id, seen_version=version)
    )


def bots_of_table(session: Session, principal: Principal, table_id: str) -> list[BotPlayer]:
    """The bots seated at one of the operator's tables."""
    require_operator(principal)
    table = session.get(GameTable, table_id)
    if table is None or table.operator_id != principal.operator_id:
        raise NotFound(f"No table {table_id!r}.")
    return list(
        session.scalars(
            select(BotPlayer).where(BotPlayer.table_id == table_id).order_by(BotPlayer.created_at)
        )
    )
