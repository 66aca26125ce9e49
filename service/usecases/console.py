"""What the operator console (``/console``) reads that no API operation answers: the
dashboard's counts and totals, player search, a player's matches, an operator's matches and
hands, and the settlements of a date range (docs/pages.md, "Operator console").

Everything else the console shows comes from the use cases the API calls. Each function here
takes the caller's principal and answers only that operator's rows (operator credentials
only: a player token is refused with :class:`~service.errors.Forbidden`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session

from service.db.match_models import GameTable, HandRow, MatchRow, Settlement
from service.db.models import LedgerAccount, LedgerAuditRow, Player
from service.db.wallet_models import WalletCall
from service.db.webhook_models import WebhookDelivery, WebhookEndpoint
from service.errors import FieldError, NotFound, ValidationFailed
from service.usecases import seamless
from service.usecases.audit import last_ledger_audit
from service.usecases.auth import Principal, authorize_player, require_operator

#: How many days of settlement totals the dashboard shows, today included.
DASHBOARD_DAYS = 7
#: The most settlements one export holds (a longer range is refused: export it in parts).
EXPORT_MAX = 10_000


@dataclass(frozen=True)
class DayTotal:
    """One day's settlements in one currency, and the house fees they took."""

    day: date
    currency: str
    settlements: int
    fees: int


@dataclass(frozen=True)
class FailingEndpoint:
    """A webhook endpoint with deliveries that failed, or are retrying after a failure."""

    endpoint: WebhookEndpoint
    failing: int
    last_status_code: int | None
    last_error: str | None


@dataclass(frozen=True)
class Dashboard:
    today: date
    tables_open: int
    tables_playing: int
    matches_today: int
    hands_today: int
    totals: list[DayTotal]
    escalated_calls: Sequence[WalletCall]
    failing_endpoints: list[FailingEndpoint]
    ledger: LedgerAuditRow | None  # the last audit of the books, none until one has run


def day_start(day: date) -> datetime:
    return datetime.combine(day, time(0), UTC)


def dashboard(session: Session, principal: Principal, now: datetime) -> Dashboard:
    """The operator's day at a glance: tables open and playing, matches and hands started
    today (UTC), settlements and house fees by day and currency over :data:`DASHBOARD_DAYS`,
    the wallet calls raised to operations, the webhook endpoints failing, and the last
    audit of the operator's books (the worker's periodic one, or one asked for: auditing
    the whole ledger on every load would cost in proportion to the ledger)."""
    operator_id = require_operator(principal)
    today = now.astimezone(UTC).date()
    since = day_start(today)
    tables = dict(
        session.execute(
            select(GameTable.status, func.count())
            .where(GameTable.operator_id == operator_id, GameTable.status.in_(("open", "playing")))
            .group_by(GameTable.status)
        ).all()
    )
    started_today = (MatchRow.operator_id == operator_id, MatchRow.started_at >= since)
    matches_today = session.scalar(select(func.count()).where(*started_today)) or 0
    hands_today = (
        session.scalar(
            select(func.count())
            .select_from(HandRow)
            .join(MatchRow, MatchRow.id == HandRow.match_id)
            .where(MatchRow.operator_id == operator_id, HandRow.started_at >= since)
        )
        or 0
    )
    totals: list[DayTotal] = []
    for back in range(DASHBOARD_DAYS):
        day = today - timedelta(days=back)
        start = day_start(day)
        for currency, count, fees in session.execute(
            select(Settlement.currency, func.count(), func.sum(Settlement.fee))
            .where(
                Settlement.operator_id == operator_id,
                Settlement.created_at >= start,
                Settlement.created_at < start + timedelta(days=1),
            )
            .group_by(Settlement.currency)
            .order_by(Settlement.currency)
        ):
            totals.append(DayTotal(day, currency, int(count), int(fees or 0)))
    escalated = seamless.list_calls(
        session,
        principal,
        day=None,
        state=None,
        escalated=True,
        player_id=None,
        limit=20,
        starting_after=None,
        ending_before=None,
    ).data
    return Dashboard(
        today,
        int(tables.get("open", 0)),
        int(tables.get("playing", 0)),
        int(matches_today),
        int(hands_today),
        totals,
        escalated,
        failing_endpoints(session, principal),
        last_ledger_audit(session, principal),
    )


def failing_endpoints(session: Session, principal: Principal) -> list[FailingEndpoint]:
    """The operator's endpoints (not deleted) with deliveries that failed for good or are
    retrying after a failed attempt, most failing first."""
    operator_id = require_operator(principal)
    failing = or_(
        WebhookDelivery.status == "failed",
        (WebhookDelivery.status == "pending") & (WebhookDelivery.attempts > 0),
    )
    counts = session.execute(
        select(WebhookDelivery.endpoint_id, func.count(), func.max(WebhookDelivery.id))
        .where(WebhookDelivery.operator_id == operator_id, failing)
        .group_by(WebhookDelivery.endpoint_id)
    ).all()
    found = []
    for endpoint_id, count, last_id in counts:
        endpoint = session.get(WebhookEndpoint, endpoint_id)
        last = session.get(WebhookDelivery, last_id)
        if endpoint is None or endpoint.deleted_at is not None or last is None:
            continue
        found.append(FailingEndpoint(endpoint, int(count), last.last_status_code, last.last_error))
    return sorted(found, key=lambda f: (-f.failing, f.endpoint.id))


def find_players(
    session: Session, principal: Principal, text: str, limit: int = 20
) -> Sequence[Player]:
    """The operator's players whose id is ``text``, or whose external id is or begins with
    it, newest first."""
    operator_id = require_operator(principal)
    text = text.strip()
    if not text:
        return []
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return session.scalars(
        select(Player)
        .where(
            Player.operator_id == operator_id,
            or_(Player.id == text, Player.external_id.like(escaped + "%", escape="\\")),
        )
        .order_by(Player.id.desc())
        .limit(limit)
    ).all()


def player_matches(
    session: Session, principal: Principal, player_id: str, limit: int = 50
) -> Sequence[MatchRow]:
    """The matches ``player_id`` put money on (its escrow accounts name them, or the
    per-hand table whose matches they are), newest first.

    :raises NotFound: when the player is unknown or another operator's.
    """
    require_operator(principal)
    authorize_player(session, principal, player_id)
    refs = select(LedgerAccount.match_ref).where(
        LedgerAccount.player_id == player_id,
        LedgerAccount.kind == "player_escrow",
        LedgerAccount.match_ref.is_not(None),
    )
    return session.scalars(
        select(MatchRow)
        .where(
            MatchRow.operator_id == principal.operator_id,
            or_(MatchRow.id.in_(refs), MatchRow.table_id.in_(refs)),
        )
        .order_by(MatchRow.id.desc())
        .limit(limit)
    ).all()


def list_matches(
    session: Session, principal: Principal, status: str | None, limit: int = 50
) -> Sequence[MatchRow]:
    """The operator's matches (those in ``status`` only, when given), newest first."""
    operator_id = require_operator(principal)
    stmt = select(MatchRow).where(MatchRow.operator_id == operator_id)
    if status is not None:
        stmt = stmt.where(MatchRow.status == status)
    return session.scalars(stmt.order_by(MatchRow.id.desc()).limit(limit)).all()


def get_match(session: Session, principal: Principal, match_id: str) -> MatchRow:
    """:raises NotFound: when the match is unknown or another operator's."""
    operator_id = require_operator(principal)
    row = session.get(MatchRow, match_id)
    if row is None or row.operator_id != operator_id:
        raise NotFound(f"No match {match_id!r}.")
    return row


def match_hands(session: Session, principal: Principal, match_id: str) -> Sequence[HandRow]:
    """The hands of a match, in order (only the ended ones have a history to verify).

    :raises NotFound: when the match is unknown or another operator's.
    """
    row = get_match(session, principal, match_id)
    return session.scalars(
        select(HandRow).where(HandRow.match_id == row.id).order_by(HandRow.number)
    ).all()


def settlements_between(
    session: Session, principal: Principal, since: date, until: date
) -> Sequence[Settlement]:
    """The operator's settlements created from the start of ``since`` to the end of
    ``until`` (UTC days, both included), oldest first.

    :raises ValidationFailed: when ``until`` is before ``since``, or the range holds more
        than :data:`EXPORT_MAX` settlements.
    """
    operator_id = require_operator(principal)
    if until < since:
        message = f"The range ends ({until}) before it starts ({since})."
        raise ValidationFailed(message, errors=[FieldError("until", message)])
    found = session.scalars(
        select(Settlement)
        .where(
            Settlement.operator_id == operator_id,
            Settlement.created_at >= day_start(since),
            Settlement.created_at < day_start(until + timedelta(days=1)),
        )
        .order_by(Settlement.created_at, Settlement.id)
        .limit(EXPORT_MAX + 1)
    ).all()
    if len(found) > EXPORT_MAX:
        message = f"The range holds more than {EXPORT_MAX} settlements; export it in parts."
        raise ValidationFailed(message, errors=[FieldError("since", message)])
    return found
