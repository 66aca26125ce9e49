"""Players of an operator: created with the operator's external id, read, updated, listed;
tokens minted for them; self-exclusion recorded.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.clock import rfc3339
from service.db.models import Player
from service.errors import ExternalIdTaken, FieldError, SelfExclusionLocked, ValidationFailed
from service.ids import new_id
from service.ledger.money import exponent
from service.usecases import tables, tournaments
from service.usecases.auth import (
    Principal,
    authorize_player,
    mint_player_token,
    require_operator,
    token_expiry,
)
from service.usecases.pages import Page, page_of


def create_player(
    session: Session,
    principal: Principal,
    external_id: str,
    display_name: str,
    display_currency: str | None,
    now: datetime,
) -> Player:
    """:raises ExternalIdTaken: when the operator already has a player with ``external_id``."""
    operator_id = require_operator(principal)
    if display_currency is not None:
        exponent(display_currency)
    taken = session.scalar(
        select(Player.id).where(
            Player.operator_id == operator_id, Player.external_id == external_id
        )
    )
    if taken is not None:  # a twin that commits first is seen when the unit is run again
        raise ExternalIdTaken(
            f"The operator already has a player with external_id {external_id!r}."
        )
    player = Player(
        id=new_id("ply"),
        operator_id=operator_id,
        external_id=external_id,
        display_name=display_name,
        display_currency=display_currency,
        self_excluded_until=None,
        created_at=now,
    )
    session.add(player)
    session.flush()
    return player


def get_player(session: Session, principal: Principal, player_id: str) -> Player:
    return authorize_player(session, principal, player_id)


def update_player(
    session: Session,
    principal: Principal,
    player_id: str,
    changes: dict[str, str | None],
) -> Player:
    """Change ``display_name`` and/or ``display_currency`` (``None`` clears the latter)."""
    require_operator(principal)
    if changes.get("display_currency") is not None:
        exponent(str(changes["display_currency"]))
    player = authorize_player(session, principal, player_id)
    if "display_name" in changes:
        if not changes["display_name"]:
            raise ValidationFailed("display_name may not be empty.")
        player.display_name = str(changes["display_name"])
    if "display_currency" in changes:
        player.display_currency = changes["display_currency"]
    return player


def list_players(
    session: Session,
    principal: Principal,
    limit: int,
    starting_after: str | None,
    ending_before: str | None,
) -> Page[Player]:
    """The operator's players, newest first (ids are time-ordered ULIDs)."""
    operator_id = require_operator(principal)
    stmt = select(Player).where(Player.operator_id == operator_id)
    return page_of(session, stmt, Player.id, Player, limit, starting_after, ending_before)


@dataclass(frozen=True)
class PlayerToken:
    token: str
    player_id: str
    expires_at: datetime


def mint_token(
    session: Session,
    principal: Principal,
    player_id: str,
    secret_key: str,
    ttl_seconds: int,
    now: datetime,
) -> PlayerToken:
    """A short-lived token for one of the operator's players."""
    require_operator(principal)
    player = authorize_player(session, principal, player_id)
    expires_at = token_expiry(now, ttl_seconds)
    token = mint_player_token(player.operator_id, player.id, secret_key, expires_at)
    return PlayerToken(token, player.id, expires_at)


def set_self_exclusion(
    session: Session, principal: Principal, player_id: str, until: datetime, now: datetime
) -> Player:
    """Exclude the player until ``until``, at once wherever it sits
    (:func:`~service.usecases.tables.exclude_from_tables`) and from the tournaments it
    registered for that have not started
    (:func:`~service.usecases.tournaments.exclude_from_tournaments`). An active exclusion can be
    extended, never shortened.

    :raises SelfExclusionLocked: when ``until`` is earlier than an active exclusion's end.
    :raises ValidationFailed: when ``until`` is not in the future.
    """
    require_operator(principal)
    # Kept to the whole second, as every timestamp is shown: the value shown is the value
    # stored, and sending it back is never a shortening.
    until = until.replace(microsecond=0)
    if until <= now:
        message = f"Self-exclusion must end in the future, got {rfc3339(until)}."
        raise ValidationFailed(message, errors=[FieldError("until", message)])
    player = authorize_player(session, principal, player_id)
    current = player.self_excluded_until
    # an end stored with a fraction of a second (before ends were kept whole) is the end shown
    if current is not None and current > now and until < current.replace(microsecond=0):
        raise SelfExclusionLocked(
            f"The player is excluded until {current.isoformat()}; it cannot be shortened."
        )
    player.self_excluded_until = until
    tables.exclude_from_tables(session, player, now)
    tournaments.exclude_from_tournaments(session, player, now)
    return player
