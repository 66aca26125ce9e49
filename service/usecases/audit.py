"""Auditing settlements and the ledger (Audit).

Anyone with the right key can prove afterwards that every settlement is right:

1. **Replay.** One replay for every game, through the game's spec
   (:mod:`service.games`): the match starts again from its stored state's settings and first
   draw, and the append-only ``match_actions`` log is applied again change by change
   (:func:`service.games.replay_log`), every hand dealt from its revealed server seed and the
   seats' client seeds, every timeout exactly the automatic action or forfeit the server
   would have played. As each hand is dealt its row must agree (the seats dealt in, their
   client seeds, the nonce, the dealer, the commitment to the revealed seed, the deck that
   seed shuffles); as each ends, its outcome, winner, points and history must be the
   replay's. The replayed match must then be the stored state, whole.
2. **Statement.** From the replayed match and the seats' escrow the game's spec computes the
   statement again (:func:`service.games.statement`); it must equal the stored one figure by
   figure (payouts, fee, nets, totals, lines).
3. **Ledger.** The settlement's capture transaction moves exactly the stored payouts and fee
   out of the match's escrow, it is the match's only capture, and the match's escrow accounts
   are empty.

Ledger-wide invariants (:func:`audit_ledger`): each transaction balanced, each account's
balance equal to the sum of its entries, the hash chains intact (:func:`store.verify`), every
currency's journal summing to zero and the escrow of every settled match empty.

The comparisons (:func:`replay_match`, :func:`compare_statement`, :func:`compare_capture`)
are pure functions of plain data; the functions below them load that data, one read-only
database transaction per settlement. Each finding is a :class:`Discrepancy` naming the field,
what was expected and what was found.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from service import games
from service.clock import rfc3339, utcnow
from service.db.match_models import GameTable, HandRow, MatchAction, MatchRow, Seat, Settlement
from service.db.models import (
    LedgerAccount,
    LedgerAuditRow,
    LedgerEntry,
    LedgerTransaction,
    Operator,
)
from service.db.wallet_models import OperatorWallet, WalletCall
from service.errors import NotFound
from service.games.common import fair
from service.games.common.errors import RulesError
from service.games.common.settings import MatchSettings
from service.games.protocol import MatchStatus
from service.ledger import store
from service.ledger.postings import AccountRef, TransactionKind
from service.usecases import unit_of_work
from service.usecases.auth import Principal, require_operator
from service.usecases.play import SETTLE, epoch_ms

T = TypeVar("T")

# --- findings -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Discrepancy:
    """One thing that is not as it should be: ``field`` names it, ``expected`` is what the
    replay, the recomputation or the invariant says, ``actual`` what is stored."""

    field: str
    expected: Any
    actual: Any
    detail: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {"field": self.field, "expected": self.expected, "actual": self.actual}
        if self.detail is not None:
            out["detail"] = self.detail
        return out

    def __str__(self) -> str:
        text = f"{self.field}: expected {self.expected!r}, found {self.actual!r}"
        return text if self.detail is None else f"{text} ({self.detail})"


@dataclass
class SettlementAudit:
    """The audit of one settlement."""

    settlement_id: str
    match_id: str
    operator_id: str
    format: str | None = None
    hands_replayed: int = 0
    discrepancies: list[Discrepancy] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.discrepancies

    def to_dict(self) -> dict[str, Any]:
        return {
            "object": "settlement_audit",
            "settlement_id": self.settlement_id,
            "match_id": self.match_id,
            "operator_id": self.operator_id,
            "format": self.format,
            "hands_replayed": self.hands_replayed,
            "ok": self.ok,
            "discrepancies": [d.to_dict() for d in self.discrepancies],
        }


@dataclass
class LedgerAudit:
    """The ledger-wide invariant checks, for one operator's books or all of them."""

    operator_id: str | None
    accounts: int = 0
    transactions: int = 0
    entries: int = 0
    settled_matches: int = 0
    discrepancies: list[Discrepancy] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.discrepancies

    @classmethod
    def of_all(cls, reports: Iterable[LedgerAudit]) -> LedgerAudit:
        """The books of every operator, from each one's audit."""
        whole = cls(None)
        for report in reports:
            whole.accounts += report.accounts
            whole.transactions += report.transactions
            whole.entries += report.entries
            whole.settled_matches += report.settled_matches
            whole.discrepancies.extend(report.discrepancies)
        return whole

    def to_dict(self) -> dict[str, Any]:
        return {
            "object": "ledger_audit",
            "operator_id": self.operator_id,
            "ok": self.ok,
            "accounts_checked": self.accounts,
            "transactions_checked": self.transactions,
            "entries_checked": self.entries,
            "settled_matches_checked": self.settled_matches,
            "discrepancies": [d.to_dict() for d in self.discrepancies],
        }


@dataclass
class AuditReport:
    """Settlements audited plus the ledger invariants: what the command line writes."""

    started_at: datetime
    settlements: list[SettlementAudit]
    ledger: LedgerAudit | None
    scope: dict[str, Any] = field(default_factory=dict)
    #: Each tournament's audit (:mod:`service.usecases.tournament_audit`), as its dict.
    tournaments: list[dict[str, Any]] = field(default_factory=list)

    @property
    def failed(self) -> list[SettlementAudit]:
        return [s for s in self.settlements if not s.ok]

    @property
    def ok(self) -> bool:
        return (
            not self.failed
            and (self.ledger is None or self.ledger.ok)
            and all(t["ok"] for t in self.tournaments)
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "object": "audit_report",
            "started_at": rfc3339(self.started_at),
            "scope": self.scope,
            "ok": self.ok,
            "settlements_checked": len(self.settlements),
            "settlements_failed": len(self.failed),
            "settlements": [s.to_dict() for s in self.settlements],
            "tournaments_checked": len(self.tournaments),
            "tournaments_failed": sum(1 for t in self.tournaments if not t["ok"]),
            "tournaments": self.tournaments,
            "ledger": None if self.ledger is None else self.ledger.to_dict(),
        }


# --- the pure core: replaying a match ------------------------------------------------------


@dataclass(frozen=True)
class HandEvidence:
    """What is stored about one dealt hand of any game: its fairness record and, once it
    has ended, its result and history (10.3, 11.6.4)."""

    number: int
    algorithm: str
    commitment: str
    server_seed: str
    seats: tuple[int, ...] | None  # None on a row from before hands named their seats
    client_seed_1: str
    client_seed_2: str
    client_seeds: tuple[str, ...] | None  # of the seats dealt in, ascending; None: as seats
    nonce: int
    dealer: int
    outcome: str | None
    winner_seat: int | None
    points: int | None
    history: dict[str, Any] | None


@dataclass
class Replay:
    """The engine's own account of a match of any game, rebuilt from its log."""

    match: games.AnyMatch | None  # None when the log does not replay to its end
    discrepancies: list[Discrepancy]
    hands_replayed: int


def _first_difference(field_: str, expected: Any, actual: Any) -> Discrepancy:
    """Point into two unequal lists or dicts at the first place they differ."""
    if isinstance(expected, list) and isinstance(actual, list):
        for i, (e, a) in enumerate(zip(expected, actual, strict=False)):
            if e != a:
                return _first_difference(f"{field_}[{i}]", e, a)
        if len(expected) != len(actual):
            return Discrepancy(f"{field_}.length", len(expected), len(actual))
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in sorted(set(expected) | set(actual), key=str):
            if expected.get(key) != actual.get(key):
                return _first_difference(f"{field_}.{key}", expected.get(key), actual.get(key))
    return Discrepancy(field_, expected, actual)


def _check_deal(hand: HandEvidence, dealt: games.Deal, seeds: Sequence[str]) -> list[Discrepancy]:
    """A hand as the replay deals it against its row: the seats dealt in, their client seeds,
    the nonce, the dealer, the commitment to the revealed seed and the deck it shuffles
    (10.2, 10.3, 11.6.4)."""
    where = f"hands[{hand.number}]"
    found: list[Discrepancy] = []
    if hand.seats is not None and hand.seats != dealt.seats:
        found.append(Discrepancy(f"{where}.seats", list(dealt.seats), list(hand.seats)))
    expected = dealt.client_seeds(seeds)
    recorded = (hand.client_seed_1, hand.client_seed_2, *(hand.client_seeds or ())[2:])
    for i, seed in enumerate(expected[:2]):
        if seed != recorded[i]:
            found.append(
                Discrepancy(
                    f"{where}.client_seed_{i + 1}", seed, recorded[i], "the seat's client seed"
                )
            )
    if hand.client_seeds is not None and hand.client_seeds != expected:
        found.append(Discrepancy(f"{where}.client_seeds", list(expected), list(hand.client_seeds)))
    if hand.nonce != hand.number:
        found.append(Discrepancy(f"{where}.nonce", hand.number, hand.nonce))
    if hand.dealer != dealt.dealer:
        found.append(Discrepancy(f"{where}.dealer", dealt.dealer, hand.dealer))
    try:
        commitment = fair.commitment(hand.server_seed)
        deck, _ = fair.shuffle(hand.server_seed, recorded, hand.nonce, algorithm=hand.algorithm)
    except RulesError as exc:
        return [
            *found,
            Discrepancy(f"{where}.server_seed", "a revealed seed", hand.server_seed, str(exc)),
        ]
    if commitment != hand.commitment:
        found.append(
            Discrepancy(
                f"{where}.commitment",
                commitment,
                hand.commitment,
                "SHA-256 of the revealed server seed",
            )
        )
    recorded_deck = None if hand.history is None else hand.history.get("deck")
    if recorded_deck is not None and [str(c) for c in deck] != recorded_deck:
        found.append(
            Discrepancy(
                f"{where}.history.deck",
                [str(c) for c in deck],
                recorded_deck,
                "the deck the revealed seed produces",
            )
        )
    return found


def _check_end(hand: HandEvidence, ended: games.EndedHand) -> list[Discrepancy]:
    """A hand the replay ended against its row: its outcome, winner, points and history."""
    where = f"hands[{hand.number}]"
    if hand.history is None:
        return [
            Discrepancy(
                f"{where}.history",
                "the history of an ended hand",
                None,
                "the replayed hand ended",
            )
        ]
    found = [
        _first_difference(f"{where}.history.{key}", ended.history.get(key), hand.history.get(key))
        for key in sorted(set(ended.history) | set(hand.history))
        if ended.history.get(key) != hand.history.get(key)
    ]
    for name, expected, actual in (
        ("outcome", ended.outcome, hand.outcome),
        ("winner_seat", ended.winner, hand.winner_seat),
        ("points", ended.points, hand.points),
    ):
        if expected != actual:
            found.append(Discrepancy(f"{where}.{name}", expected, actual))
    return found


def replay_match(
    start: games.AnyMatch,
    hands: Sequence[HandEvidence],
    seeds_by_seat: Sequence[str],
    log: Sequence[games.Logged],
) -> Replay:
    """Play the match of any game again from its log (pure): ``start`` is where its log
    starts (:func:`service.games.restart` of its stored state), ``hands`` the rows of the
    hands dealt, ``seeds_by_seat`` the seats' client seeds, ``log`` the ``match_actions`` in
    version order. Every hand is dealt from its revealed seed through the game's spec, and
    checked against its row as it is dealt and as it ends."""
    found: list[Discrepancy] = []
    rows = {hand.number: hand for hand in hands}
    dealt: set[int] = set()
    ended: set[int] = set()

    def seen(event: games.Deal | games.EndedHand) -> None:
        hand = rows.get(event.number)
        if hand is None:
            found.append(Discrepancy(f"hands[{event.number}]", "its row", None))
        elif isinstance(event, games.Deal):
            dealt.add(event.number)
            found.extend(_check_deal(hand, event, seeds_by_seat))
        else:
            ended.add(event.number)
            found.extend(_check_end(hand, event))

    seeds = {hand.number: hand.server_seed for hand in hands}
    try:
        match = games.replay_log(start.copy(), seeds, seeds_by_seat, log, seen)
    except games.LogRefused as refused:
        entry = refused.entry
        found.append(
            Discrepancy(
                f"match_actions[{refused.index}]",
                "a change the rules accept",
                [entry.seat, entry.action],
                refused.reason,
            )
        )
        return Replay(None, found, len(dealt))
    for number in sorted(set(rows) - dealt):
        found.append(Discrepancy(f"hands[{number}].number", None, number, "a hand never dealt"))
    for number in sorted(dealt - ended):
        if rows[number].history is not None:
            found.append(
                Discrepancy(
                    f"hands[{number}].history", None, "a history", "the replay did not end it"
                )
            )
    if not match.over:
        found.append(
            Discrepancy(
                "match.status",
                "finished or void",
                match.status.value,
                "the replayed match has not ended",
            )
        )
    return Replay(match, found, len(dealt))


def compare_statement(
    recomputed: dict[str, Any], stored: dict[str, Any], *, fee_column: int | None = None
) -> list[Discrepancy]:
    """The recomputed statement (the game's :func:`service.games.statement` data plus
    ``players``) against the stored one, figure by figure (pure)."""
    found = [
        Discrepancy(f"statement.{key}", value, stored.get(key))
        for key, value in recomputed.items()
        if stored.get(key) != value
    ]
    if fee_column is not None and fee_column != recomputed.get("fee"):
        found.append(Discrepancy("settlement.fee", recomputed.get("fee"), fee_column))
    return found


def expected_capture(
    operator_id: str,
    match_id: str,
    currency: str,
    players: Sequence[str],
    escrow: Sequence[int],
    payouts: Sequence[int],
    fee: int,
    table_ref: str | None = None,
) -> dict[str, int]:
    """What the settlement's capture should post, ``{account key: amount}`` (pure): each
    seat's escrow out of its escrow account, its payout into its available funds, the fee to
    the house. A hand of a per-hand table (``table_ref``) moves each seat's difference
    within its table balance, the escrow held for the table."""
    moves: dict[str, int] = defaultdict(int)
    for player, taken, paid in zip(players, escrow, payouts, strict=True):
        if table_ref is not None:
            key = AccountRef.player_escrow(operator_id, player, table_ref, currency)
            moves[str(key)] += paid - taken
            continue
        moves[str(AccountRef.player_escrow(operator_id, player, match_id, currency))] -= taken
        moves[str(AccountRef.player_available(operator_id, player, currency))] += paid
    moves[str(AccountRef.house_fee(operator_id, currency))] += fee
    return {key: amount for key, amount in moves.items() if amount}


def compare_capture(expected: dict[str, int], actual: dict[str, int]) -> list[Discrepancy]:
    """The capture transaction's entries against what the statement says it moves (pure)."""
    return [
        Discrepancy(f"ledger.capture[{key}]", expected.get(key, 0), actual.get(key, 0))
        for key in sorted(set(expected) | set(actual))
        if expected.get(key, 0) != actual.get(key, 0)
    ]


# --- loading the evidence -------------------------------------------------------------------


def _hand_evidence(row: HandRow) -> HandEvidence:
    return HandEvidence(
        row.number,
        row.algorithm,
        row.commitment,
        row.server_seed,
        None if row.seats is None else tuple(row.seats),
        row.client_seed_1,
        row.client_seed_2,
        None if row.client_seeds is None else tuple(row.client_seeds),
        row.nonce,
        row.dealer,
        row.outcome,
        row.winner_seat,
        row.points,
        row.history,
    )


def _always(draw: int) -> Callable[[int], int]:
    """A first draw that picks ``draw`` (modulo what is drawn from)."""
    return lambda below: draw % below


def _audit(session: Session, settlement: Settlement) -> SettlementAudit:
    """Audit one settlement of any game: the seats, the hands and the log replayed through
    the game's spec, the stored state, the statement recomputed, and the capture."""
    report = SettlementAudit(settlement.id, settlement.match_id, settlement.operator_id)
    found = report.discrepancies
    row = session.get(MatchRow, settlement.match_id)
    if row is None or row.state is None or row.seats is None:
        found.append(Discrepancy("match", "a finished match", None, "no match state"))
        return report
    report.format = row.format
    if settlement.operator_id != row.operator_id:
        found.append(Discrepancy("settlement.operator_id", row.operator_id, settlement.operator_id))
    if settlement.currency != row.currency:
        found.append(Discrepancy("settlement.currency", row.currency, settlement.currency))
    table = session.get(GameTable, row.table_id)
    settings = MatchSettings.from_dict(
        table.settings if table is not None else row.state["settings"]
    )
    start = games.restart(row.state)
    # The stored settings are the table's, as some first draw (a dealer, a seating) makes
    # them: the replay starts from the stored ones.
    drawn = [
        games.new_match(settings, len(row.seats), _always(r)).to_dict().get("settings")
        for r in range(max(len(row.seats), 1))
    ]
    if row.state.get("settings") not in drawn:
        found.append(_first_difference("match.state.settings", drawn[0], row.state.get("settings")))
    copies = row.seats
    seats = (
        []
        if settings.continuous
        else list(
            session.scalars(
                select(Seat).where(Seat.table_id == row.table_id).order_by(Seat.seat_no)
            )
        )
    )
    for seat in seats:
        copy = copies[seat.seat_no] if seat.seat_no < len(copies) else {}
        for name in ("player_id", "escrow", "client_seed"):
            if copy.get(name) != getattr(seat, name):
                found.append(
                    Discrepancy(
                        f"match.seats[{seat.seat_no}].{name}", getattr(seat, name), copy.get(name)
                    )
                )
    # A per-hand table's seats change between hands: its match keeps its own copy of them
    # (each table balance is checked against the ledger below).
    held = (
        [{n: getattr(s, n) for n in ("player_id", "escrow", "client_seed")} for s in seats]
        if len(seats) == len(copies)
        else copies
    )
    players = [s["player_id"] for s in held]
    escrow = [s["escrow"] for s in held]
    seeds = [s["client_seed"] for s in held]

    hands = [
        _hand_evidence(h)
        for h in session.scalars(
            select(HandRow).where(HandRow.match_id == row.id).order_by(HandRow.number)
        )
    ]
    actions = list(
        session.scalars(
            select(MatchAction).where(MatchAction.match_id == row.id).order_by(MatchAction.version)
        )
    )
    versions = [a.version for a in actions]
    if versions != list(range(1, row.version + 1)):
        found.append(
            Discrepancy(
                "match_actions.versions",
                f"1..{row.version}",
                versions[-5:],
                "one log row per applied change",
            )
        )
    log = [
        games.Logged(a.seat, a.action, epoch_ms(a.at), rfc3339(a.at))
        for a in actions
        if a.action != SETTLE  # the game's own changes; its settlement is logged after them
    ]
    replay = replay_match(start, hands, seeds, log)
    report.hands_replayed = replay.hands_replayed
    found += replay.discrepancies
    replayed = replay.match
    stored = settlement.statement or {}
    if replayed is not None:
        expected_status = "void" if replayed.status is MatchStatus.VOID else "finished"
        if replayed.over and row.status != expected_status:
            found.append(Discrepancy("match.status", expected_status, row.status))
        if replayed.to_dict() != row.state:
            found.append(_first_difference("match.state", replayed.to_dict(), row.state))
        if replayed.over:
            try:
                recomputed = dict(games.statement(replayed, settings, escrow).data)
            except RulesError as exc:
                found.append(Discrepancy("statement", "a statement", None, f"cannot settle: {exc}"))
            else:
                recomputed["players"] = players
                # figure by figure: a display figure a row holds from before they were
                # computed on reading is not one of them (docs/engine.md 6.5)
                found += compare_statement(recomputed, stored, fee_column=settlement.fee)
    table_ref = table.id if settings.continuous and table is not None else None
    found += _audit_capture(session, settlement, row, players, escrow, stored, table_ref)
    return report


def _audit_capture(
    session: Session,
    settlement: Settlement,
    row: MatchRow,
    players: Sequence[str],
    escrow: Sequence[int],
    stored: dict[str, Any],
    table_ref: str | None = None,
) -> list[Discrepancy]:
    found: list[Discrepancy] = []
    txn = session.get(LedgerTransaction, settlement.ledger_transaction_id)
    if txn is None:
        return [
            Discrepancy(
                "ledger.capture",
                settlement.ledger_transaction_id,
                None,
                "the settlement's ledger transaction is missing",
            )
        ]
    for name, wanted in (
        ("kind", "capture"),
        ("match_ref", row.id),
        ("operator_id", row.operator_id),
        ("currency", row.currency),
    ):
        if getattr(txn, name) != wanted:
            found.append(Discrepancy(f"ledger.capture.{name}", wanted, getattr(txn, name)))
    captures = list(
        session.scalars(
            select(LedgerTransaction.id).where(
                LedgerTransaction.match_ref == row.id, LedgerTransaction.kind == "capture"
            )
        )
    )
    if captures != [txn.id]:
        found.append(
            Discrepancy("ledger.captures", [txn.id], captures, "exactly one capture per match")
        )
    actual: dict[str, int] = defaultdict(int)
    for key, amount in session.execute(
        select(LedgerAccount.key, LedgerEntry.amount)
        .join(LedgerAccount, LedgerAccount.id == LedgerEntry.account_id)
        .where(LedgerEntry.transaction_id == txn.id)
    ):
        actual[key] += amount
    payouts, fee = stored.get("payouts"), stored.get("fee")
    if isinstance(payouts, list) and len(payouts) == len(escrow) and isinstance(fee, int):
        expected = expected_capture(
            row.operator_id, row.id, row.currency, players, escrow, payouts, fee, table_ref
        )
        found += compare_capture(expected, dict(actual))
    else:
        found.append(
            Discrepancy("statement.payouts", "a payout per seat and a fee", [payouts, fee])
        )
    if table_ref is not None:
        return found + _audit_table_balances(session, txn.id, row, players, escrow, table_ref)
    for key, balance, total in session.execute(
        select(LedgerAccount.key, LedgerAccount.balance, func.sum(LedgerEntry.amount))
        .outerjoin(LedgerEntry, LedgerEntry.account_id == LedgerAccount.id)
        .where(LedgerAccount.kind == "player_escrow", LedgerAccount.match_ref == row.id)
        .group_by(LedgerAccount.id, LedgerAccount.key, LedgerAccount.balance)
    ):
        if balance != 0 or (total or 0) != 0:
            found.append(
                Discrepancy(
                    f"ledger.escrow[{key}]", 0, int(total or 0), f"account balance {balance}"
                )
            )
    return found


def _audit_table_balances(
    session: Session,
    txn_id: str,
    row: MatchRow,
    players: Sequence[str],
    escrow: Sequence[int],
    table_ref: str,
) -> list[Discrepancy]:
    """A per-hand table's hand: each table balance the hand was settled on is what the
    ledger held for the player at the table just before the hand's capture (its entries
    written before the capture's first; a seat dealt in changes only after its hand is
    settled)."""
    found: list[Discrepancy] = []
    first = session.scalar(
        select(func.min(LedgerEntry.seq)).where(LedgerEntry.transaction_id == txn_id)
    )
    for i, (player, held) in enumerate(zip(players, escrow, strict=True)):
        key = str(AccountRef.player_escrow(row.operator_id, player, table_ref, row.currency))
        before = session.scalar(
            select(func.coalesce(func.sum(LedgerEntry.amount), 0))
            .join(LedgerAccount, LedgerAccount.id == LedgerEntry.account_id)
            .where(LedgerAccount.key == key, LedgerEntry.seq < (first or 0))
        )
        if before != held:
            found.append(
                Discrepancy(f"ledger.table_balance[{i}]", held, before, f"{key} before the hand")
            )
    return found


def audit_settlement(session: Session, settlement_id: str) -> SettlementAudit:
    """Audit one settlement by its id (no tenant check: for the command line and tasks).

    :raises NotFound: when there is no such settlement.
    """
    found = session.get(Settlement, settlement_id)
    if found is None:
        raise NotFound(f"No settlement {settlement_id!r}.")
    return _safely(session, found)


def _safely(session: Session, settlement: Settlement) -> SettlementAudit:
    """:func:`_audit`, turning malformed stored data into a finding instead of a crash."""
    try:
        return _audit(session, settlement)
    except (RulesError, KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        report = SettlementAudit(settlement.id, settlement.match_id, settlement.operator_id)
        report.discrepancies.append(
            Discrepancy("audit", "readable records", None, f"{type(exc).__name__}: {exc}")
        )
        return report


def audit_match(session: Session, principal: Principal | None, match_id: str) -> SettlementAudit:
    """Audit the settlement of ``match_id``; with a principal, only an operator's own.

    :raises Forbidden: for a player token.
    :raises NotFound: when the match is unknown, another operator's, or not settled.
    """
    operator_id = None if principal is None else require_operator(principal)
    row = session.get(MatchRow, match_id)
    if row is None or (operator_id is not None and row.operator_id != operator_id):
        raise NotFound(f"No match {match_id!r}.")
    found = session.scalars(select(Settlement).where(Settlement.match_id == match_id)).one_or_none()
    if found is None:
        raise NotFound(f"Match {match_id} is not settled (yet).")
    return _safely(session, found)


def settlement_ids(
    session: Session,
    *,
    operator_id: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> list[str]:
    """Settlements created in ``[since, until)``, oldest first."""
    stmt = select(Settlement.id).order_by(Settlement.created_at, Settlement.id)
    if operator_id is not None:
        stmt = stmt.where(Settlement.operator_id == operator_id)
    if since is not None:
        stmt = stmt.where(Settlement.created_at >= since)
    if until is not None:
        stmt = stmt.where(Settlement.created_at < until)
    return list(session.scalars(stmt))


# --- ledger-wide invariants -----------------------------------------------------------------


def audit_ledger(session: Session, operator_id: str | None = None) -> LedgerAudit:
    """Every transaction balanced, every balance the sum of its entries, the hash chains intact,
    each currency's journal summing to zero, and the escrow of every settled match empty; for
    one operator's books, or all."""
    report = LedgerAudit(operator_id)
    found = report.discrepancies
    for problem in store.verify(session, operator_id):
        found.append(
            Discrepancy(f"ledger.chain[{problem.where}]", "intact", "broken", problem.problem)
        )

    accounts = select(LedgerAccount)
    txns = select(LedgerTransaction.id)
    if operator_id is not None:
        accounts = accounts.where(LedgerAccount.operator_id == operator_id)
        txns = txns.where(LedgerTransaction.operator_id == operator_id)
    account_ids = select(accounts.subquery().c.id)

    sums = dict(
        session.execute(
            select(LedgerEntry.account_id, func.sum(LedgerEntry.amount))
            .where(LedgerEntry.account_id.in_(account_ids))
            .group_by(LedgerEntry.account_id)
        ).all()
    )
    report.entries = int(
        session.scalar(
            select(func.count())
            .select_from(LedgerEntry)
            .where(LedgerEntry.account_id.in_(account_ids))
        )
        or 0
    )
    for account in session.scalars(accounts.order_by(LedgerAccount.id)):
        report.accounts += 1
        total = int(sums.get(account.id) or 0)
        if account.balance != total:
            found.append(
                Discrepancy(
                    f"ledger.account[{account.key}].balance",
                    total,
                    account.balance,
                    "the sum of its entries",
                )
            )

    transaction_ids = list(session.scalars(txns))
    report.transactions = len(transaction_ids)
    for txn_id, currency, total in session.execute(
        select(LedgerEntry.transaction_id, LedgerEntry.currency, func.sum(LedgerEntry.amount))
        .where(LedgerEntry.transaction_id.in_(txns))
        .group_by(LedgerEntry.transaction_id, LedgerEntry.currency)
        .having(func.sum(LedgerEntry.amount) != 0)
    ):
        found.append(
            Discrepancy(
                f"ledger.transaction[{txn_id}].sum.{currency}",
                0,
                int(total),
                "a balanced transaction",
            )
        )

    for currency, total in sorted(store.journal_totals(session, operator_id).items()):
        if total:
            found.append(
                Discrepancy(
                    f"ledger.journal.{currency}",
                    0,
                    total,
                    "all entries of a currency sum to zero",
                )
            )

    settled = select(Settlement.match_id)
    if operator_id is not None:
        settled = settled.where(Settlement.operator_id == operator_id)
    report.settled_matches = int(
        session.scalar(select(func.count()).select_from(settled.subquery())) or 0
    )
    for key, balance, total in session.execute(
        select(LedgerAccount.key, LedgerAccount.balance, func.sum(LedgerEntry.amount))
        .outerjoin(LedgerEntry, LedgerEntry.account_id == LedgerAccount.id)
        .where(LedgerAccount.kind == "player_escrow", LedgerAccount.match_ref.in_(settled))
        .group_by(LedgerAccount.id, LedgerAccount.key, LedgerAccount.balance)
    ):
        if balance != 0 or (total or 0) != 0:
            found.append(
                Discrepancy(
                    f"ledger.escrow[{key}]",
                    0,
                    int(total or 0),
                    f"a settled match's escrow; account balance {balance}",
                )
            )
    found += _audit_wallet_calls(session, operator_id)
    return report


#: The ledger transactions seamless wallet calls post, and the call kind each belongs to.
_WALLET_KINDS = {
    TransactionKind.WALLET_DEBIT.value: "debit",
    TransactionKind.WALLET_CREDIT.value: "credit",
}


def _audit_wallet_calls(session: Session, operator_id: str | None) -> list[Discrepancy]:
    """Seamless wallets: every debit booked and every credit of money has exactly its ledger
    transaction (same kind, amount and currency, naming the call), no other call has one,
    and no wallet transaction lacks its call; a seamless player's available funds are
    empty between requests (a debit is held in the transaction that books it, a credit
    leaves in the one that pays it)."""
    found: list[Discrepancy] = []
    calls = select(WalletCall)
    txns = select(LedgerTransaction).where(LedgerTransaction.kind.in_(_WALLET_KINDS))
    if operator_id is not None:
        calls = calls.where(WalletCall.operator_id == operator_id)
        txns = txns.where(LedgerTransaction.operator_id == operator_id)
    by_call = {t.external_reference: t for t in session.scalars(txns)}
    for call in session.scalars(calls.order_by(WalletCall.created_at)):
        txn = by_call.pop(call.id, None)
        moved = (call.kind == "debit" and call.state == "booked") or (
            call.kind == "credit" and call.amount > 0
        )
        where = f"wallet_call[{call.id}]"
        if not moved:
            if txn is not None:
                found.append(Discrepancy(f"{where}.ledger", None, txn.id, f"a {call.state} call"))
            continue
        if txn is None:
            found.append(Discrepancy(f"{where}.ledger", "a transaction", None, call.state))
            continue
        expected = (call.kind, call.amount, call.currency, call.ledger_transaction_id)
        actual = (_WALLET_KINDS[txn.kind], txn.amount, txn.currency, txn.id)
        if expected != actual:
            found.append(Discrepancy(f"{where}.ledger", list(expected), list(actual)))
    for reference, txn in by_call.items():
        found.append(
            Discrepancy(f"ledger.transaction[{txn.id}]", "a wallet call", reference, txn.kind)
        )
    seamless = select(OperatorWallet.operator_id, OperatorWallet.currency).where(
        OperatorWallet.mode == "seamless"
    )
    if operator_id is not None:
        seamless = seamless.where(OperatorWallet.operator_id == operator_id)
    for owner, currency in session.execute(seamless).all():
        for key, balance in session.execute(
            select(LedgerAccount.key, LedgerAccount.balance).where(
                LedgerAccount.operator_id == owner,
                LedgerAccount.currency == currency,
                LedgerAccount.kind == "player_available",
                LedgerAccount.balance != 0,
            )
        ):
            found.append(
                Discrepancy(
                    f"ledger.account[{key}].balance", 0, balance, "a seamless player's funds"
                )
            )
    return found


def ledger_report(session: Session, principal: Principal) -> LedgerAudit:
    """The invariant checks of the calling operator's books.

    :raises Forbidden: for a player token.
    """
    return audit_ledger(session, require_operator(principal))


def record_ledger_audit(session: Session, operator_id: str, now: datetime) -> LedgerAudit:
    """Audit ``operator_id``'s books and keep the report as the operator's last audit
    (replacing the one before; two audits at once both succeed, the later commit stays)."""
    report = audit_ledger(session, operator_id)
    values = {"ran_at": now, "ok": report.ok, "report": report.to_dict()}
    dialect = postgresql if session.get_bind().dialect.name == "postgresql" else sqlite
    session.execute(
        dialect.insert(LedgerAuditRow)
        .values(operator_id=operator_id, **values)
        .on_conflict_do_update(index_elements=["operator_id"], set_=values)
    )
    return report


def last_ledger_audit(session: Session, principal: Principal) -> LedgerAuditRow | None:
    """The calling operator's last stored ledger audit, if one has run.

    :raises Forbidden: for a player token.
    """
    return session.get(LedgerAuditRow, require_operator(principal))


def operator_ids(session: Session) -> list[str]:
    """Every operator, in id order (the periodic reconciliation audits each one's books)."""
    return list(session.scalars(select(Operator.id).order_by(Operator.id)))


# --- a whole run ----------------------------------------------------------------------------


def run_audit(
    session: Session,
    *,
    match_id: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    operator_id: str | None = None,
    ledger: bool = True,
    progress: Callable[[list[str]], Iterable[str]] = lambda ids: ids,
) -> AuditReport:
    """Audit one match's settlement, or every settlement in ``[since, until)`` (all when
    neither is given), then the ledger invariants and, unless one match is asked for, every
    tournament; ``progress`` wraps the settlement ids
    (a progress bar). Each settlement is audited in a unit of work of its own.

    :raises NotFound: when ``match_id`` is unknown or not settled.
    """
    started = utcnow()
    scope: dict[str, Any] = {
        "match_id": match_id,
        "since": None if since is None else rfc3339(since),
        "until": None if until is None else rfc3339(until),
        "operator_id": operator_id,
    }
    audits: list[SettlementAudit] = []

    def unit(work: Callable[[], T]) -> T:
        return unit_of_work.run(session, work)

    if match_id is not None:
        audits.append(unit(lambda: audit_match(session, None, match_id)))
    else:
        ids = unit(
            lambda: settlement_ids(session, operator_id=operator_id, since=since, until=until)
        )
        for settlement_id in progress(ids):
            audits.append(unit_of_work.run(session, audit_settlement, session, settlement_id))
            session.expunge_all()  # a long range stays within bounded memory
    books = unit(lambda: audit_ledger(session, operator_id)) if ledger else None
    # Imported here: the tournaments' audit builds on this module's findings.
    from service.usecases import tournament_audit

    checked: list[dict[str, Any]] = []
    if match_id is None:
        for tournament_id in unit(lambda: tournament_audit.tournament_ids(session, operator_id)):
            found = unit_of_work.run(session, tournament_audit.audit_id, session, tournament_id)
            checked.append(found.to_dict())
            session.expunge_all()
    return AuditReport(started, audits, books, scope, checked)
