"""Live matches: starting them, players' views, actions, timeouts and hand histories.

Every change to a match is one database transaction that bumps ``version``. The pure engine
of the match's game (:mod:`service.games`) decides everything; this module loads it from the row,
applies one change, deals the next hand when the match asks for one (with a fresh provably fair
seed), writes the hand records, the action log and outbox events. A change that writes more than the
match row and its log entry (a hand or the match ends, a deal, a timeout, a resignation) holds
the row's lock for its whole transaction (``SELECT ... FOR UPDATE``; SQLite serialises writers
with ``BEGIN IMMEDIATE``). The common action is computed from the row as read and written by one
compare-and-set statement that applies only while ``version`` is still the one it was decided
on. Either way a request naming a stale ``expected_version`` changes nothing (409), so an action
and a timeout racing for the same turn cannot both apply.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Engine, bindparam, case, func, insert, null, select, type_coerce, update
from sqlalchemy.orm import Session

from service import games
from service.clock import rfc3339, utcnow
from service.db import first_alone, is_postgres
from service.db.driver import insert_row
from service.db.match_models import GameTable, HandRow, MatchAction, MatchRow, OutboxEvent, Seat
from service.db.match_states import DecodedStates, decoded_states
from service.db.models import table_of
from service.errors import Forbidden, IllegalMove, MatchNotLive, NotFound, StaleVersion
from service.games import AnyMatch
from service.games.common import fair
from service.games.common.errors import InvalidState, RulesError
from service.games.common.seats import renamed, seated_history
from service.games.common.settings import MatchSettings
from service.games.protocol import RESIGN, MatchStatus
from service.ids import new_id
from service.live import notices
from service.match_view import match_view, seat_numbers, seated_message, table_seats
from service.usecases import unit_of_work
from service.usecases.auth import Principal, load_players

SYSTEM = "system"


def epoch_ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def from_epoch_ms(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC)


# --- the match row ---------------------------------------------------------------------

_MATCHES = table_of(MatchRow)


@dataclass
class MatchRowData:
    """A ``matches`` row read with a Core statement: the hot paths (a player's view, an
    action) skip the ORM's identity map and unit of work and write it back with one UPDATE."""

    id: str
    table_id: str
    operator_id: str
    status: str
    version: int
    state: dict[str, Any] | None
    format: str
    currency: str
    private: bool
    seats: list[dict[str, Any]] | None
    commitment: str | None
    deadline_at: datetime | None
    started_at: datetime | None
    finished_at: datetime | None
    updated_at: datetime
    settled_at: datetime | None = None  # written by the settlement alone, never by play
    settlement_id: str | None = None  # likewise
    game: str = "gin"
    spectator_delay: dict[str, int] | None = None


AnyMatchRow = MatchRow | MatchRowData  # the ORM row (starting, timeouts) or a Core one

_SELECT_MATCH = select(_MATCHES).where(_MATCHES.c.id == bindparam("match_id"))
_SELECT_MATCH_FOR_UPDATE = _SELECT_MATCH.with_for_update()
_SELECT_VERSION = select(_MATCHES.c.version).where(_MATCHES.c.id == bindparam("match_id"))
_SELECT_PEEK = select(_MATCHES.c.version, _MATCHES.c.spectator_delay).where(
    _MATCHES.c.id == bindparam("match_id")
)
# The row, its state left out (NULL) while the row is at ``known_version``.
_SELECT_MATCH_UNLESS_KNOWN = select(
    *(c for c in _MATCHES.c if c.name != "state"),
    type_coerce(
        case((_MATCHES.c.version == bindparam("known_version"), null()), else_=_MATCHES.c.state),
        _MATCHES.c.state.type,
    ).label("state"),
).where(_MATCHES.c.id == bindparam("match_id"))


def _save_match(*, if_version: bool) -> Any:
    """UPDATE of a match row from ``new_*`` parameters; with ``if_version``, only while its
    version is still ``expected_version`` (compare-and-set)."""
    where = _MATCHES.c.id == bindparam("match_id")
    if if_version:
        where = where & (_MATCHES.c.version == bindparam("expected_version"))
    return (
        update(_MATCHES)
        .where(where)
        .values(
            status=bindparam("new_status"),
            version=bindparam("new_version"),
            state=bindparam("new_state", type_=_MATCHES.c.state.type),
            commitment=bindparam("new_commitment"),
            deadline_at=bindparam("new_deadline_at", type_=_MATCHES.c.deadline_at.type),
            finished_at=bindparam("new_finished_at", type_=_MATCHES.c.finished_at.type),
            updated_at=bindparam("new_updated_at", type_=_MATCHES.c.updated_at.type),
        )
    )


_LOG_ACTION = insert(table_of(MatchAction))
_LOG_COLUMNS = (
    "match_id",
    "version",
    "hand_number",
    "actor",
    "seat",
    "action",
    "at",
    "state",
    "commitment",
)


def _save_and_log(save: Any) -> Any:
    """PostgreSQL: ``save`` and the action's log entry in one statement (one round trip); the
    entry is written only if the row was, and its ``seq`` is returned."""
    saved = save.returning(_MATCHES.c.id).cte("saved")
    values = (bindparam(n, type_=table_of(MatchAction).c[n].type) for n in _LOG_COLUMNS[1:])
    return (
        insert(table_of(MatchAction))
        .from_select(list(_LOG_COLUMNS), select(saved.c.id, *values))
        .add_cte(saved)
        .returning(table_of(MatchAction).c.seq)
    )


_SAVE_MATCH = _save_match(if_version=False)
_SAVE_MATCH_IF_CURRENT = _save_match(if_version=True)
_SAVE_AND_LOG = _save_and_log(_SAVE_MATCH)
_SAVE_AND_LOG_IF_CURRENT = _save_and_log(_SAVE_MATCH_IF_CURRENT)


def _load(session: Session, match_id: str, *, lock: bool) -> MatchRowData | None:
    found = session.execute(
        _SELECT_MATCH_FOR_UPDATE if lock else _SELECT_MATCH, {"match_id": match_id}
    ).first()
    return None if found is None else MatchRowData(**found._mapping)


# --- writing ---------------------------------------------------------------------------


def match_event(row: AnyMatchRow, kind: str, data: dict[str, Any], now: datetime) -> OutboxEvent:
    """The outbox event ``kind`` about match ``row`` (every event of a match is made here):
    ``data`` after the match's and table's ids and ``seats``, the table seats of the match's
    players, in match seat order, which its lists of one entry per player (``players``,
    ``escrow``, ``payouts``, ``net``, a Rummy record's ``counts``...) follow. At a
    ``rummy_per_hand`` table, whose match seats are the players dealt in, 0 up, every player
    ``data`` names is renamed to its table seat: one numbering, the table's
    (docs/webhooks.md)."""
    table = table_seats(row.seats)
    return OutboxEvent(
        id=new_id("evt"),
        operator_id=row.operator_id,
        type=kind,
        subject_id=row.id,
        data={
            "match_id": row.id,
            "table_id": row.table_id,
            "seats": seat_numbers(row.seats),
            **(data if table is None else renamed(data, table)),
        },
        created_at=now,
        published_at=None,
        attempts=0,
    )


def _event(
    session: Session, row: AnyMatchRow, kind: str, data: dict[str, Any], now: datetime
) -> None:
    session.add(match_event(row, kind, data, now))


def _seats(session: Session, table_id: str) -> list[Seat]:
    return list(
        session.scalars(select(Seat).where(Seat.table_id == table_id).order_by(Seat.seat_no))
    )


def _deal(session: Session, row: AnyMatchRow, match: AnyMatch, now: datetime) -> None:
    """Deal every hand the match is waiting for (a partnership deal has two), each from a
    fresh committed seed (docs/engine.md 10, 11.6.4). The row's commitment is the last hand's."""
    assert row.seats is not None
    seeds = [s["client_seed"] for s in row.seats]
    while games.pending_deal(match) is not None:
        server_seed = fair.new_server_seed()
        dealt = games.deal(match, server_seed, seeds, epoch_ms(now))
        chosen = dealt.client_seeds(seeds)
        row.commitment = fair.commitment(server_seed)
        session.add(
            HandRow(
                id=new_id("hnd"),
                match_id=row.id,
                number=dealt.number,
                algorithm=fair.ALGORITHM,
                commitment=row.commitment,
                server_seed=server_seed,
                client_seed_1=chosen[0],
                client_seed_2=chosen[1],
                seats=list(dealt.seats),
                client_seeds=list(chosen),
                nonce=dealt.number,
                dealer=dealt.dealer,
                started_at=now,
            )
        )


def _finish_hand(
    session: Session, row: AnyMatchRow, match: AnyMatch, number: int, now: datetime
) -> None:
    """Hand ``number``, which just ended (a hand cut short by a forfeit too, docs/engine.md 10.4):
    its record and history on its row, which reveals its seed, and ``hand.ended``."""
    ended = games.ended_hand(match, number)
    hand_row = session.scalars(
        select(HandRow).where(HandRow.match_id == row.id, HandRow.number == number)
    ).one()
    hand_row.ended_at = now
    hand_row.outcome = ended.outcome
    hand_row.winner_seat = ended.winner
    hand_row.points = ended.points
    hand_row.history = ended.history
    _event(session, row, "hand.ended", {"hand": ended.record}, now)


def _record(
    session: Session,
    row: AnyMatchRow,
    match: AnyMatch,
    *,
    actor: str,
    seat: int | None,
    action: str,
    before: Before,
    now: datetime,
) -> None:
    """After ``match`` changed: hand records, the next deal, the end, the log, the version.
    ``before``: the match's hands before the change."""
    for number in sorted(before.live - games.live_hands(match)):
        _finish_hand(session, row, match, number, now)
    if match.status is MatchStatus.AWAITING_DEAL:
        _deal(session, row, match, now)
    if match.over:
        row.status = "void" if match.status is MatchStatus.VOID else "finished"
        row.finished_at = now
        _event(
            session,
            row,
            "match.finished",
            {
                "status": row.status,
                **games.result(match),
                "hands": [r.to_dict() for r in match.records],
                "escrow": [s["escrow"] for s in row.seats or []],
                "players": [s["player_id"] for s in row.seats or []],
            },
            now,
        )
        table = session.get(GameTable, row.table_id)
        assert table is not None
        if not MatchSettings.from_dict(table.settings).continuous:  # a per-hand one plays on
            table.status = "finished"
            notices.changed(session, table.operator_id, 0, kind="lobby")
    _advance(row, match, now)
    notices.changed(session, row.id, row.version)  # published when the unit of work commits
    session.flush()  # rows added above (and an ORM match row) go first: foreign keys
    logged = _logged(row, before.hand_number, actor, seat, action, now)
    if not isinstance(row, MatchRowData):  # an ORM row, written by the flush above
        session.execute(_LOG_ACTION, logged)
        return
    if not is_postgres(session):
        session.execute(_SAVE_MATCH, _saved(row))
        session.execute(_LOG_ACTION, logged)
        return
    session.execute(_SAVE_AND_LOG, _saved(row) | logged).one()  # the row is locked: it is there


@dataclass(frozen=True)
class Before:
    """A match's hands before a change: the hands ended, those being played and the hand
    the change is logged under (the actor's own hand, else the next one to deal)."""

    ended: int
    live: set[int]
    hand_number: int

    @classmethod
    def of(cls, match: AnyMatch, seat: int | None = None) -> Before:
        live = games.live_hands(match)
        own = None if seat is None else games.hand_of(match, seat)
        if own is None:
            own = min(live) if live else match.hands_ended + 1
        return cls(match.hands_ended, live, own)


def _advance(row: AnyMatchRow, match: AnyMatch, now: datetime) -> None:
    """The row after ``match`` changed: next version, new state and deadline."""
    deadline = match.deadline_ms()
    row.deadline_at = None if deadline is None else from_epoch_ms(deadline)
    row.version += 1
    row.state = match.to_dict()
    row.updated_at = now


def _saved(row: MatchRowData) -> dict[str, Any]:
    return {
        "match_id": row.id,
        "new_status": row.status,
        "new_version": row.version,
        "new_state": row.state,
        "new_commitment": row.commitment,
        "new_deadline_at": row.deadline_at,
        "new_finished_at": row.finished_at,
        "new_updated_at": row.updated_at,
    }


def _logged(
    row: AnyMatchRow,
    hand_number: int,
    actor: str,
    seat: int | None,
    action: str,
    now: datetime,
) -> dict[str, Any]:
    """The log entry of a change applied in hand ``hand_number`` (a deal: the hand dealt);
    with a spectator delay, the match's state and commitment after it too."""
    delayed = row.spectator_delay is not None
    return {
        "match_id": row.id,
        "version": row.version,
        "hand_number": hand_number,
        "actor": actor,
        "seat": seat,
        "action": action,
        "at": now,
        "state": row.state if delayed else None,
        "commitment": row.commitment if delayed else None,
    }


#: The log entry of a match's settlement (the change that makes it ready, after the end).
SETTLE = "SETTLE"


def settled_entry(row: MatchRow, version: int, match: AnyMatch, now: datetime) -> dict[str, Any]:
    """The log entry (:data:`SETTLE`, by the system, under the last hand) of the settlement
    of ``row`` (its state: ``match``) written at ``version``: like every change of a match
    it bumps the version and is logged, so that a long-poll waiting past the end wakes and
    each stream of the match sends its ``settlement`` event (docs/scale-out.md, "Waiting for
    changes"). The version's notice goes out when the settlement commits."""
    return {
        "match_id": row.id,
        "version": version,
        "hand_number": max(match.hands_ended, 1),
        "actor": SYSTEM,
        "seat": None,
        "action": SETTLE,
        "at": now,
        "state": None,
        "commitment": None,
    }


#: One log entry's INSERT (the database numbers its ``seq``), as
#: :func:`service.db.driver.execute` sends it in a pipeline.
LOG_ENTRY = insert_row(table_of(MatchAction), leave_out=("seq",))


def start_match(
    session: Session,
    table: GameTable,
    row: MatchRow,
    now: datetime,
    *,
    seats: list[Seat] | None = None,
    first_dealer: int | None = None,
    seated: list[Seat] | None = None,
) -> None:
    """Every seat is filled: copy what the match needs onto its row, pick the first dealer
    at random and deal hand 1 (inside the caller's transaction, under its table lock).
    ``seated``: the table's seats in seat order when the caller has them (a tournament's
    table, just seated), else read.

    A hand of a per-hand Rummy table is a match of the ``seats`` dealt in (its match seats
    ``0 .. k-1`` in table order, each keeping its ``table_seat``), dealt by ``first_dealer``
    (a match seat) when the previous hand decided it (5.1.4)."""
    continuous = seats is not None
    if seats is None:
        seats = _seats(session, table.id) if seated is None else seated
    names = {
        p.id: p.display_name for p in load_players(session, [s.player_id for s in seats]).values()
    }
    row.format, row.currency, row.private = table.format, table.currency, table.private
    row.spectator_delay = table.spectator_delay
    row.seats = [
        {
            "seat": i,  # a full table's seat number, or the hand's own seat
            "player_id": s.player_id,
            "display_name": names[s.player_id],
            "escrow": s.escrow,
            "client_seed": s.client_seed,
        }
        | ({"table_seat": s.seat_no} if continuous else {})
        for i, s in enumerate(seats)
    ]
    settings = MatchSettings.from_dict(table.settings)
    draw = secrets.randbelow if first_dealer is None else (lambda _n: first_dealer)
    match = games.new_match(settings, len(seats), draw)
    row.game = table.game
    row.status = "playing"
    row.started_at = now
    _event(session, row, "match.started", {"players": [s.player_id for s in seats]}, now)
    before = Before.of(match)
    _record(session, row, match, actor=SYSTEM, seat=None, action="START", before=before, now=now)


def cancel_match(session: Session, row: MatchRow, now: datetime) -> None:
    """End a match that has not ended without a result (its table or tournament was
    cancelled), in the caller's transaction under the row's lock: ``cancelled``, no turn
    clock, and, as every change to a match, the version bumped and the change logged
    (``CANCEL``), so a client waiting for the next version wakes at once."""
    match = None if row.state is None else games.from_state(row.state)
    hand_number = 1 if match is None else Before.of(match).hand_number
    row.status = "cancelled"
    row.finished_at = row.updated_at = now
    row.deadline_at = None
    row.version += 1
    session.flush()  # the ORM row first: the log entry names its version
    session.execute(_LOG_ACTION, _logged(row, hand_number, SYSTEM, None, "CANCEL", now))


# --- reading ---------------------------------------------------------------------------


@dataclass
class MatchContext:
    row: MatchRowData
    seat: int | None  # the caller's seat, or None for the operator / a spectator
    decoded: AnyMatch | None = None  # the row's state, decoded (shared: never changed)
    states: DecodedStates | None = None  # where a state decoded here is kept

    @property
    def match(self) -> AnyMatch | None:
        """The match as the row was read (``None`` before it started); not to be changed."""
        if self.decoded is None and self.row.state is not None:
            self.decoded = games.from_state(self.row.state)
            if self.states is not None:
                self.states.put(self.row.id, self.row.version, self.decoded)
        return self.decoded


def _context(session: Session, principal: Principal, match_id: str, *, lock: bool) -> MatchContext:
    return _authorised(session, _load(session, match_id, lock=lock), principal, match_id)


def _read_context(session: Session, principal: Principal, match_id: str) -> MatchContext:
    """For reading only: the row in one autocommit round trip on PostgreSQL, without its
    state when this process holds the row's version decoded (:class:`DecodedStates`)."""
    states = decoded_states(session)
    known = states.get(match_id)
    found = first_alone(
        session,
        _SELECT_MATCH_UNLESS_KNOWN,
        {
            "match_id": match_id,
            "known_version": -1 if known is None else known[0],
        },
    )
    row = None if found is None else MatchRowData(**found._mapping)
    ctx = _authorised(session, row, principal, match_id)
    # Inside a unit of work the row may yet be rolled back: nothing read there is kept.
    ctx.states = None if session.in_transaction() else states
    kept = False
    if known is not None and known[0] == ctx.row.version:
        ctx.decoded, kept = known[1], True
    if states.on_read is not None and (kept or ctx.row.state is not None):
        states.on_read(kept)
    return ctx


def _authorised(
    session: Session, row: MatchRowData | None, principal: Principal, match_id: str
) -> MatchContext:
    if row is None or row.operator_id != principal.operator_id:
        raise NotFound(f"No match {match_id!r}.")
    seat = None
    if principal.player_id is not None:
        mine = [s["seat"] for s in row.seats or [] if s["player_id"] == principal.player_id]
        if mine:
            seat = mine[0]
        elif row.private and not _seated_at(session, row.table_id, principal.player_id):
            raise Forbidden("Only the seated players may watch a private table.")
    return MatchContext(row, seat)


def _seated_at(session: Session, table_id: str, player_id: str) -> bool:
    """Whether the player has a seat at the table (at a per-hand table, one sitting a hand
    out watches it as a spectator does)."""
    found = session.scalar(
        select(Seat.seat_no).where(Seat.table_id == table_id, Seat.player_id == player_id)
    )
    return found is not None


def current_version(
    session: Session, principal: Principal, match_id: str, now: datetime | None = None
) -> int:
    """The version the caller sees at ``now`` (a spectator of a delayed match: an earlier
    one, :func:`get_view`)."""
    ctx = _read_context(session, principal, match_id)
    shown = _delayed_version(session, ctx, principal, utcnow() if now is None else now)
    return ctx.row.version if shown is None else shown


@dataclass(frozen=True)
class WakeAfter:
    """What a long-poll caller sees now (``seen``), and when it has something new to see:
    once the match's own version passes ``version``, or at ``at`` (a spectator delay in
    seconds reveals an older change then, with no new change to announce it)."""

    seen: int
    version: int
    at: datetime | None = None


def wake_after(
    session: Session, principal: Principal, match_id: str, wanted: int, now: datetime | None = None
) -> WakeAfter:
    """For a long-poll that has seen ``wanted``, in one read of the match: the version the
    caller sees now (:func:`current_version`), and what it waits for in the match's own
    versions (the notices name those): ``wanted`` itself for a player; for a spectator of a
    delayed match (:func:`_delayed_version`), ``wanted`` plus the delay in moves, or, with a
    delay in seconds, the match's version now and the moment its next change already made
    becomes visible."""
    when = utcnow() if now is None else now
    ctx = _read_context(session, principal, match_id)
    shown = _delayed_version(session, ctx, principal, when)
    delay = ctx.row.spectator_delay
    if shown is None or delay is None:
        return WakeAfter(ctx.row.version, wanted)
    if "moves" in delay:
        return WakeAfter(shown, wanted + int(delay["moves"]))
    following = first_alone(
        session, _SELECT_LOGGED_AT, {"match_id": ctx.row.id, "version": max(wanted, shown) + 1}
    )
    at = None if following is None else following.at + timedelta(seconds=int(delay["seconds"]))
    return WakeAfter(shown, ctx.row.version, at)


def peek_version(
    engine: Engine, match_id: str, principal: Principal | None = None, now: datetime | None = None
) -> int:
    """The match's version on a short-lived connection (long-polling, after authorisation):
    one autocommit round trip per poll on PostgreSQL, like every single-row read. With the
    ``principal`` waiting, the version it sees at ``now`` (:func:`current_version`): at a
    table with a spectator delay a spectator waits for the delayed version, never learning
    of a newer one before it may see it."""
    with Session(engine) as session:
        found = first_alone(session, _SELECT_PEEK, {"match_id": match_id})
        if principal is None or found.spectator_delay is None:
            return int(found.version)
        return current_version(session, principal, match_id, now)


def peek_versions(engine: Engine, match_ids: list[str]) -> dict[str, int]:
    """The versions of ``match_ids`` in one read (a waiting room whose notices stopped)."""
    with Session(engine) as session:
        rows = session.execute(
            select(_MATCHES.c.id, _MATCHES.c.version).where(_MATCHES.c.id.in_(match_ids))
        )
        return {row.id: int(row.version) for row in rows}


def get_view(
    session: Session, principal: Principal, match_id: str, now: datetime | None = None
) -> dict[str, Any]:
    """The caller's view at ``now`` (default: the clock's): a seated player's own hand and
    legal actions, otherwise only public information; at a table with a spectator delay, a
    spectator sees the match as it was that delay ago (:func:`_delayed_version`)."""
    ctx = _read_context(session, principal, match_id)
    shown = _delayed_version(session, ctx, principal, utcnow() if now is None else now)
    return _view(ctx) if shown is None else _view(_as_of(session, ctx, shown))


# --- spectator delay -------------------------------------------------------------------

#: The first version a delayed spectator may be shown: the match started and its first hand
#: dealt (a deal is nobody's move).
FIRST_VERSION = 1
#: The longest spectator delays a table may set (docs/games.md, Spectator delay).
MAX_DELAY_MOVES = 100
MAX_DELAY_SECONDS = 3600

_ACTIONS = table_of(MatchAction)
#: The newest version logged by ``cutoff``.
_SELECT_VERSION_BY = select(func.max(_ACTIONS.c.version).label("version")).where(
    (_ACTIONS.c.match_id == bindparam("match_id"))
    & (_ACTIONS.c.at <= bindparam("cutoff", type_=_ACTIONS.c.at.type))
)
#: When a version was logged.
_SELECT_LOGGED_AT = select(_ACTIONS.c.at).where(
    (_ACTIONS.c.match_id == bindparam("match_id")) & (_ACTIONS.c.version == bindparam("version"))
)
#: The newest state kept at or before a version.
_SELECT_KEPT_STATE = (
    select(_ACTIONS.c.version, _ACTIONS.c.state, _ACTIONS.c.commitment, _ACTIONS.c.at)
    .where(
        (_ACTIONS.c.match_id == bindparam("match_id"))
        & (_ACTIONS.c.version <= bindparam("version"))
    )
    .order_by(_ACTIONS.c.version.desc())
    .limit(1)
)


def _delayed_version(
    session: Session, ctx: MatchContext, principal: Principal, now: datetime
) -> int | None:
    """The version a spectator of a delayed match may see at ``now`` when it is older than
    the row's; ``None``: the caller sees the row as it is.

    A spectator is the operator or a player not seated at the table (a player sitting a
    per-hand table's hand out is seated there). A delay of ``moves`` shows the version that
    many changes back; one of ``seconds``, the last version logged at least that long ago;
    neither goes back before :data:`FIRST_VERSION`. A match no longer being played is shown
    as it is: nothing in it is left to hold back, and a delay in moves would never reach its
    end."""
    row, delay = ctx.row, ctx.row.spectator_delay
    if delay is None or ctx.seat is not None or row.status != "playing":
        return None
    if principal.player_id is not None and _seated_at(session, row.table_id, principal.player_id):
        return None
    if "moves" in delay:
        shown = row.version - int(delay["moves"])
    else:
        cutoff = now - timedelta(seconds=int(delay["seconds"]))
        found = first_alone(session, _SELECT_VERSION_BY, {"match_id": row.id, "cutoff": cutoff})
        shown = FIRST_VERSION if found is None or found.version is None else int(found.version)
    shown = max(shown, FIRST_VERSION)
    return shown if shown < row.version else None


def _as_of(session: Session, ctx: MatchContext, version: int) -> MatchContext:
    """The caller's context with the match as it was at ``version``, from the state its log
    entry kept (a delayed match keeps one with every change)."""
    row = ctx.row
    kept = first_alone(session, _SELECT_KEPT_STATE, {"match_id": row.id, "version": version})
    if kept is None or kept.state is None:
        raise InvalidState(f"match {row.id} kept no state at version {version}")
    match = games.from_state(kept.state)
    deadline = match.deadline_ms()
    earlier = replace(
        row,
        version=kept.version,
        state=kept.state,
        commitment=kept.commitment,
        deadline_at=None if deadline is None else from_epoch_ms(deadline),
        updated_at=kept.at,
    )
    return MatchContext(earlier, ctx.seat, decoded=match)


def _view(ctx: MatchContext, match: AnyMatch | None = None) -> dict[str, Any]:
    """The caller's view (:func:`service.match_view.match_view`); ``match``: the row's state
    already decoded (after a change), else the row's."""
    return match_view(ctx.row, ctx.seat, ctx.match if match is None else match)


# --- acting ----------------------------------------------------------------------------


def _rowcount(result: Any) -> int:
    """How many rows a write's result changed (a ``CursorResult``'s count)."""
    count: int = result.rowcount
    return count


def _check_version(row: AnyMatchRow, expected_version: int) -> None:
    if expected_version != row.version:
        raise StaleVersion(
            f"The match is at version {row.version}, not {expected_version}; read it again."
        )


def _live(row: AnyMatchRow) -> None:
    if row.status != "playing":
        raise MatchNotLive(f"The match is {row.status}.")


def _to_change(ctx: MatchContext) -> AnyMatch:
    """A copy of a live match, to apply a change to (the read one may be shared)."""
    match = ctx.match
    if match is None:
        raise InvalidState(f"match {ctx.row.id} is {ctx.row.status} without a state")
    return match.copy()


def act(
    session: Session,
    principal: Principal,
    match_id: str,
    action: str,
    expected_version: int,
    now: datetime,
) -> dict[str, Any]:
    """Apply the caller's action (its text form, ``"DISCARD TD"``) decided on
    ``expected_version``; the caller's view afterwards.

    Most actions change only the match row and its log: they are applied without a lock, and
    written only if the version is still ``expected_version`` (compare-and-set, one statement
    on PostgreSQL). An action that ends a hand or the match writes more rows and runs under the
    row lock, in a unit of work of its own; so does every action of a request that sent an
    ``Idempotency-Key`` (in that request's unit of work).

    :raises StaleVersion: when the match moved on since ``expected_version``.
    :raises IllegalMove: when the rules refuse the action (nothing changes).
    """
    if session.in_transaction():  # a request's unit of work (it sent an Idempotency-Key)
        return _act_locked(session, principal, match_id, action, expected_version, now)
    view = _act_unlocked(session, principal, match_id, action, expected_version, now)
    if view is not None:
        return view
    return unit_of_work.run(
        session, lambda: _act_locked(session, principal, match_id, action, expected_version, now)
    )


def _act_locked(
    session: Session,
    principal: Principal,
    match_id: str,
    action: str,
    expected_version: int,
    now: datetime,
) -> dict[str, Any]:
    """:func:`act` under the match row's lock, inside the caller's unit of work."""
    ctx = _context(session, principal, match_id, lock=True)
    match, logged, before = _apply(ctx, action, expected_version, now)
    _record(
        session,
        ctx.row,
        match,
        actor=principal.player_id or SYSTEM,
        seat=ctx.seat,
        action=logged,
        before=before,
        now=now,
    )
    return _view(ctx, match)


def _apply(
    ctx: MatchContext, action: str, expected_version: int, now: datetime
) -> tuple[AnyMatch, str, Before]:
    """The seated caller's action applied to the row's match: (match, the action as logged,
    the match's hands before it)."""
    row = ctx.row
    if ctx.seat is None:
        raise Forbidden("Only a seated player may act in this match.")
    _check_version(row, expected_version)
    _live(row)
    match = _to_change(ctx)
    before = Before.of(match, ctx.seat)
    try:
        logged = games.apply(match, ctx.seat, action, at=rfc3339(now), now_ms=epoch_ms(now))
    except RulesError as exc:  # its players by table seat, as the views name them
        raise IllegalMove(seated_message(str(exc), row.seats), rule_code=exc.code) from None
    return match, logged, before


def _act_unlocked(
    session: Session,
    principal: Principal,
    match_id: str,
    action: str,
    expected_version: int,
    now: datetime,
) -> dict[str, Any] | None:
    """:func:`act` for an action that changes only the match row and its log: read without a
    lock, written by compare-and-set. ``None`` when the action ends a hand or the match (the
    locked path applies it again and writes the rest)."""
    ctx = _read_context(session, principal, match_id)
    match, text, before = _apply(ctx, action, expected_version, now)
    if (
        match.hands_ended > before.ended
        or before.live - games.live_hands(match)
        or match.status is MatchStatus.AWAITING_DEAL
        or match.over
    ):
        return None
    row = ctx.row
    _advance(row, match, now)
    logged = _logged(row, before.hand_number, principal.player_id or SYSTEM, ctx.seat, text, now)
    params = _saved(row) | logged | {"expected_version": expected_version}
    if is_postgres(session):
        written = first_alone(session, _SAVE_AND_LOG_IF_CURRENT, params) is not None
    else:

        def save() -> bool:
            if _rowcount(session.execute(_SAVE_MATCH_IF_CURRENT, params)) != 1:
                return False
            session.execute(_LOG_ACTION, logged)
            return True

        written = unit_of_work.run(session, save)
    if not written:  # another action or a timeout got there first
        current = first_alone(session, _SELECT_VERSION, {"match_id": match_id})
        raise StaleVersion(
            f"The match is at version {current.version if current else '?'}, not "
            f"{expected_version}; read it again."
        )
    notices.publish([notices.Notice(row.id, row.version)])  # committed already
    if ctx.states is not None:  # committed: keep it
        ctx.states.put(match_id, row.version, match)
    return _view(ctx, match)


def resign(
    session: Session,
    principal: Principal,
    match_id: str,
    expected_version: int | None,
    now: datetime,
) -> dict[str, Any]:
    """The caller forfeits the match (docs/engine.md 9.3-9.4)."""
    ctx = _context(session, principal, match_id, lock=True)
    row = ctx.row
    if ctx.seat is None:
        raise Forbidden("Only a seated player may resign.")
    if expected_version is not None:
        _check_version(row, expected_version)
    _live(row)
    match = _to_change(ctx)
    before = Before.of(match, ctx.seat)
    games.forfeit(match, ctx.seat, "resign", at=rfc3339(now), now_ms=epoch_ms(now))
    _record(
        session,
        row,
        match,
        actor=principal.player_id or SYSTEM,
        seat=ctx.seat,
        action=RESIGN,
        before=before,
        now=now,
    )
    return _view(ctx, match)


def run_timeouts(session: Session, now: datetime, *, limit: int = 100) -> int:
    """Act for every player whose time ran out by ``now`` (docs/engine.md 9.2); returns how many
    matches changed. Each match is handled in a unit of work of its own under its row lock,
    and re-checked there, so a player's action that got in first wins."""
    due = unit_of_work.run(
        session,
        lambda: list(
            session.scalars(
                select(MatchRow.id)
                .where(MatchRow.status == "playing", MatchRow.deadline_at <= now)
                .order_by(MatchRow.deadline_at)
                .limit(limit)
            )
        ),
    )
    return sum(time_out(session, match_id, now) for match_id in due)


def time_out(session: Session, match_id: str, now: datetime) -> bool:
    """The clock of one match at ``now``, in a unit of work of its own; whether it acted."""
    return unit_of_work.run(session, _time_out, session, match_id, now)


def _time_out(session: Session, match_id: str, now: datetime) -> bool:
    """The automatic action or forfeit of one match whose clock ran out; whether it changed."""
    row = session.get(MatchRow, match_id, with_for_update=True)
    if row is None or row.status != "playing" or row.state is None:
        return False
    match = games.from_state(row.state)
    due = games.due_seat(match, epoch_ms(now))
    before = Before.of(match, due)
    timed_out = games.timeout(match, epoch_ms(now), at=rfc3339(now))
    if timed_out is None:
        return False
    seat, outcome = timed_out
    _record(
        session,
        row,
        match,
        actor=SYSTEM,
        seat=seat,
        action=f"TIMEOUT {outcome}",
        before=before,
        now=now,
    )
    return True


# --- history ---------------------------------------------------------------------------


def hand_history(
    session: Session, principal: Principal, match_id: str, number: int
) -> dict[str, Any]:
    """A finished hand's full record: fairness data with the revealed seed, the deck, every
    action, the showdown and the score (docs/engine.md 10.3-10.4)."""
    ctx = _context(session, principal, match_id, lock=False)
    hand_row = session.scalars(
        select(HandRow).where(HandRow.match_id == ctx.row.id, HandRow.number == number)
    ).one_or_none()
    if hand_row is None:
        raise NotFound(f"No hand {number} in match {match_id!r}.")
    if hand_row.ended_at is None or hand_row.history is None:
        raise NotFound(f"Hand {number} has not ended yet.")
    seats, history = hand_row.seats or [0, 1], hand_row.history
    table = table_seats(ctx.row.seats)
    if table is not None:  # a rummy_per_hand hand: its players by table seat, as in its view
        seats = [table[s] for s in seats]
    if "seats" in history:  # a hand of more than two seats: its places by seat, as in its view
        history = seated_history(history, seats)
    return {
        "id": hand_row.id,
        "object": "hand",
        "match_id": ctx.row.id,
        "number": hand_row.number,
        "started_at": rfc3339(hand_row.started_at),
        "ended_at": rfc3339(hand_row.ended_at),
        "fairness": {
            "algorithm": hand_row.algorithm,
            "commitment": hand_row.commitment,
            "server_seed": hand_row.server_seed,
            "client_seed_1": hand_row.client_seed_1,
            "client_seed_2": hand_row.client_seed_2,
            "client_seeds": hand_row.client_seeds
            or [hand_row.client_seed_1, hand_row.client_seed_2],
            "seats": seats,
            "nonce": hand_row.nonce,
        },
        "history": history,
    }


def hand_history_by_id(session: Session, principal: Principal, hand_id: str) -> dict[str, Any]:
    """:func:`hand_history` of the hand whose ``id`` is ``hand_id``, for whoever may read its
    match: a link to one hand (the verify page's ``/verify?hand=<id>``) needs nothing else."""
    found = session.execute(
        select(HandRow.match_id, HandRow.number).where(HandRow.id == hand_id)
    ).one_or_none()
    if found is not None:
        try:
            return hand_history(session, principal, found.match_id, found.number)
        except NotFound:  # another tenant's hand, or not ended: say no more than its id
            pass
    raise NotFound(f"No ended hand {hand_id!r}.")
