"""Seamless wallets: the operator keeps its players' money and we call its wallet, exactly once.

An operator picks, per currency, ``transfer`` (money is deposited into our ledger first) or
``seamless``. In seamless mode a seat's stake, a buy-in or a top-up is a **debit** of the
operator's wallet, and a payout, a release or a refund is a **credit** to it
(:mod:`service.outbound.wallet_protocol` states the contract). Our ledger still records every
movement, the operator's side being the player's clearing sub-account: a debit enters the
player's available funds and is held at once; a credit leaves them. So the audit, the
settlement statements and the hash chain work as in transfer mode.

The rules, each kept here:

1. The intent (:class:`WalletCall`) is committed before the call is sent; every retry sends
   the same transaction id; another payload under a request's key is refused, never replayed.
2. A debit whose answer is ambiguous is rolled back, never assumed failed: no seat is taken
   on it. A debit the operator applied whose seat then did not start is rolled back too, and
   so is one whose request died: at once when a retry with its key finds the key's hold
   free (:func:`debit`), else by the sweep. A rollback is retried until the operator
   answers it definitely.
3. A credit is retried with the same id, with backoff, until acknowledged; it is never rolled
   back. Past :data:`~service.outbound.wallet_protocol.ESCALATE_AFTER` tries it is raised to
   operations (metric, log, the API's list) and still retried.
4. A credit is sent only when every debit of its round is settled (booked, failed or rolled
   back), so no rollback ever follows a credit on its round. A refund is a new credit.
5. :func:`sweep` (beat, every two seconds) drives whatever is due: stale debits, rollbacks,
   credits; every round reaches a terminal state.

A debit happens before the seat's unit of work, outside any database transaction (the HTTP
call must not hold a lock or a connection, and SQLite takes its write lock with the
transaction): :func:`debit` works out the stake under the seat's checks and writes the
intent in one unit, sends the call, and records the answer in another; the seat's unit then
:func:`book`\\ s the applied debit into the ledger together with the seat. What the operator
applied but no seat booked, :func:`cancel_unbooked` rolls back.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from service.clock import rfc3339, utcnow
from service.db.models import LedgerAccount, Player
from service.db.wallet_models import OperatorWallet, WalletCall
from service.errors import (
    Conflict,
    FieldError,
    IdempotencyKeyInUse,
    IdempotencyKeyReused,
    InsufficientFunds,
    NotFound,
    ValidationFailed,
    WalletDeclined,
    WalletUnavailable,
)
from service.ids import new_id
from service.ledger import postings as ledger
from service.ledger import store
from service.ledger.money import PRACTICE_CURRENCY, exponent
from service.ledger.postings import AccountKind
from service.observability.metrics import WALLET_CALLS, WALLET_ESCALATIONS
from service.outbound.signing import SIGNATURE_HEADER, new_secret, signature_header
from service.outbound.transport import Post
from service.outbound.wallet_protocol import (
    ESCALATE_AFTER,
    CallOutcome,
    Line,
    Verdict,
    backoff_seconds,
    classify,
    request_body,
)
from service.usecases import idempotency, unit_of_work, wallets
from service.usecases.auth import Principal, require_operator
from service.usecases.pages import Page, page_of
from service.usecases.webhooks import check_url

log = logging.getLogger(__name__)

MODES = ("transfer", "seamless")
DEFAULT_TIMEOUT_MS = 3000
#: How long a rotated secret keeps signing beside the new one.
SECRET_OVERLAP = timedelta(hours=24)
#: A debit still ``pending`` or ``applied`` this long after its last change has lost its
#: request (a crash, a lost connection): it is rolled back (rule 2).
STALE_AFTER = timedelta(seconds=60)
#: Debit states whose outcome is still open: a credit of their round waits (rule 4).
OPEN_DEBIT_STATES = ("pending", "applied", "rollback_pending")


# --- configuration -----------------------------------------------------------------------------


def has_seamless(session: Session, operator_id: str) -> bool:
    """Whether any currency of the operator is in seamless mode (one indexed read: a seat
    request of a transfer-mode operator goes straight to its unit of work)."""
    return (
        session.scalar(
            select(OperatorWallet.currency)
            .where(OperatorWallet.operator_id == operator_id, OperatorWallet.mode == "seamless")
            .limit(1)
        )
        is not None
    )


def list_settings(session: Session, principal: Principal) -> list[OperatorWallet]:
    operator_id = require_operator(principal)
    return list(
        session.scalars(
            select(OperatorWallet)
            .where(OperatorWallet.operator_id == operator_id)
            .order_by(OperatorWallet.currency)
        )
    )


def configure(
    session: Session,
    principal: Principal,
    currency: str,
    *,
    mode: str,
    url: str | None,
    timeout_ms: int,
    now: datetime,
    allow_private: bool,
) -> tuple[OperatorWallet, str | None]:
    """Set the operator's wallet mode for ``currency``: the settings, and the signing secret
    when one was made for them (shown once). A change of mode waits until nothing of the
    currency is held here and no wallet call is unfinished.

    :raises ValidationFailed: on a bad URL, a seamless mode without one, play money.
    :raises Conflict: when the mode would change while money is held or calls are open.
    """
    operator_id = require_operator(principal)
    exponent(currency)
    if currency == PRACTICE_CURRENCY:
        message = f"{PRACTICE_CURRENCY} is play money: it stays in transfer mode."
        raise ValidationFailed(message, errors=[FieldError("currency", message)])
    if mode == "seamless":
        if not url:
            message = "A seamless wallet needs the operator wallet's URL."
            raise ValidationFailed(message, errors=[FieldError("url", message)])
        url = check_url(url, allow_private=allow_private)
    elif url is not None:
        url = check_url(url, allow_private=allow_private)
    wallet = session.get(OperatorWallet, (operator_id, currency), with_for_update=True)
    current = "transfer" if wallet is None else wallet.mode
    if current != mode:
        _check_switch(session, operator_id, currency, mode)
    shown = None
    if wallet is None:
        wallet = OperatorWallet(operator_id=operator_id, currency=currency, created_at=now)
        session.add(wallet)
    if mode == "seamless" and wallet.secret is None:
        wallet.secret = shown = new_secret()
    wallet.mode, wallet.url, wallet.timeout_ms, wallet.updated_at = mode, url, timeout_ms, now
    session.flush()
    return wallet, shown


def _check_switch(session: Session, operator_id: str, currency: str, mode: str) -> None:
    held = session.scalar(
        select(func.count())
        .select_from(LedgerAccount)
        .where(
            LedgerAccount.operator_id == operator_id,
            LedgerAccount.currency == currency,
            LedgerAccount.kind.in_(
                (AccountKind.PLAYER_AVAILABLE.value, AccountKind.PLAYER_ESCROW.value)
            ),
            LedgerAccount.balance != 0,
        )
    )
    open_calls = session.scalar(
        select(func.count())
        .select_from(WalletCall)
        .where(
            WalletCall.operator_id == operator_id,
            WalletCall.currency == currency,
            WalletCall.completed_at.is_(None),
        )
    )
    if held or open_calls:
        raise Conflict(
            f"{currency} cannot switch to {mode} mode while players hold {currency} here "
            f"({held} accounts) or wallet calls are unfinished ({open_calls}): withdraw, "
            "finish the tables and wait for the calls first."
        )


def rotate_secret(
    session: Session,
    principal: Principal,
    currency: str,
    now: datetime,
    grace: timedelta = SECRET_OVERLAP,
) -> tuple[OperatorWallet, str]:
    """A new signing secret; the previous one keeps signing beside it for ``grace`` (none:
    retired at once)."""
    operator_id = require_operator(principal)
    wallet = session.get(OperatorWallet, (operator_id, currency), with_for_update=True)
    if wallet is None or wallet.mode != "seamless":
        raise NotFound(f"No seamless wallet for {currency}.")
    wallet.previous_secret = wallet.secret if grace else None
    wallet.previous_secret_expires_at = now + grace if grace else None
    wallet.secret = new_secret()
    wallet.updated_at = now
    session.flush()
    return wallet, wallet.secret


def signing_secrets(wallet: OperatorWallet, now: datetime) -> list[str]:
    """The secrets a call is signed with: the current one, then a rotated one still valid."""
    out = [wallet.secret] if wallet.secret else []
    if (
        wallet.previous_secret
        and wallet.previous_secret_expires_at is not None
        and wallet.previous_secret_expires_at > now
    ):
        out.append(wallet.previous_secret)
    return out


# --- debits ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Stake:
    """The debit a seat request (or a tournament entry) needs: who pays how much into which
    escrow, for which round (``None``: the request opens a new round). A tournament's round
    names the tournament as its ``table_id`` and no match."""

    operator_id: str
    player_id: str
    currency: str
    amount: int
    reason: str  # stake, buyin (a tournament entry too), top_up
    table_id: str
    match_id: str | None
    escrow_ref: str
    round_id: str | None


def debit(
    session: Session,
    operator_id: str,
    stake_of: Callable[[], Stake | None],
    key: str,
    post: Post,
    hold: idempotency.KeyHold | None = None,
) -> str | None:
    """Take the stake ``stake_of()`` names (worked out in the intent's own unit, under the
    seat's checks) from the operator's wallet for the request with ``key``: the id of the
    debit, applied and ready for :func:`book`; or ``None`` when there is nothing to debit
    (an operator without a seamless currency, whose stake is not even worked out; no stake:
    transfer mode, or a refusal the request's view will answer) or the request already
    booked it (its answer is stored: the view replays it).

    :raises WalletUnavailable: when the answer was ambiguous (the debit is rolled back).
    :raises InsufficientFunds: when the operator refused for funds.
    :raises WalletDeclined: when it refused for another reason.
    :raises IdempotencyKeyInUse: while a twin request with the key is still debiting.
    :raises IdempotencyKeyReused: when the key was used for another stake.

    ``hold`` is the request's :class:`~service.usecases.idempotency.KeyHold`, taken here
    and released by the caller when the request is over: a twin that finds it held answers
    409 at once, and a retry that takes it finds any debit of the key still open abandoned
    by a request that died; it rolls that one back at once and debits anew (rule 2).
    Where no hold can be taken (an in-memory SQLite database; SQLite off Linux), a debit
    open for :data:`STALE_AFTER` counts as abandoned.
    """
    intended = unit_of_work.run(
        session, _intend_debit, session, operator_id, stake_of, key, utcnow(), hold
    )
    if intended is None:
        return None
    call_id, request, abandoned = intended
    if abandoned is not None:
        drive(session, abandoned, post)  # its rollback, once now; the sweep retries it
    outcome = _send(call_id, "debit", request, post)
    state, declined = unit_of_work.run(
        session, _debit_answered, session, call_id, outcome, utcnow()
    )
    if state == "applied":
        return call_id
    if state == "failed":
        raise _declined(declined or "declined")
    drive(session, call_id, post)  # the rollback, once now; the sweep retries it
    raise WalletUnavailable(
        "The operator's wallet did not answer the debit clearly; it is being rolled back and "
        "no seat was taken. Send the same request again."
    )


def _request_scope(stake: Stake, key: str) -> str:
    digest = hashlib.sha256(key.encode()).hexdigest()
    return f"debit:{stake.player_id}:{digest}"


def _intend_debit(
    session: Session,
    operator_id: str,
    stake_of: Callable[[], Stake | None],
    key: str,
    now: datetime,
    hold: idempotency.KeyHold | None = None,
) -> tuple[str, Request, str | None] | None:
    """The debit intent for the request ``key`` (its latest attempt), written now if there
    is none to go on with, the call to send, and the debit of a dead request with the key
    whose rollback this one started (or ``None``); ``None`` when nothing is to be sent."""
    if not has_seamless(session, operator_id):
        return None
    stake = stake_of()
    if stake is None:
        return None
    held = None if hold is None else hold.take(operator_id, key, player_id=stake.player_id)
    if held is False:
        raise _debiting(key)
    wallet = wallets.seamless_wallet(session, stake.operator_id, stake.currency)
    assert wallet is not None
    scope = _request_scope(stake, key)
    fingerprint = store.fingerprint(
        stake.player_id, stake.currency, stake.amount, stake.reason, stake.table_id
    )
    attempts = list(
        session.scalars(
            select(WalletCall)
            .where(
                WalletCall.operator_id == stake.operator_id,
                WalletCall.player_id == stake.player_id,
                WalletCall.request_key.startswith(scope + ":", autoescape=True),
            )
            .order_by(WalletCall.created_at.desc(), WalletCall.id.desc())
            .with_for_update()
        )
    )
    latest = attempts[0] if attempts else None
    abandoned = None
    if latest is not None:
        if latest.fingerprint != fingerprint:
            raise IdempotencyKeyReused(
                f"Idempotency key {key!r} was already used for a different stake."
            )
        if latest.state == "booked":
            return None
        if latest.state == "failed":
            raise _declined(latest.declined or "declined")
        if latest.state in ("pending", "applied"):
            # Its request is gone when the key's hold was free (its process died), or,
            # where no hold can be taken, when it has not moved for STALE_AFTER.
            if not held and latest.updated_at > now - STALE_AFTER:
                raise _debiting(key)
            _start_rollback(latest, now)  # rule 2
            abandoned = latest.id
    call = WalletCall(
        id=new_id("wtx"),
        operator_id=stake.operator_id,
        player_id=stake.player_id,
        kind="debit",
        reason=stake.reason,
        currency=stake.currency,
        amount=stake.amount,
        round_id=stake.round_id or new_id("rnd"),
        table_id=stake.table_id,
        match_id=stake.match_id,
        escrow_ref=stake.escrow_ref,
        request_key=f"{scope}:{len(attempts) + 1}",
        fingerprint=fingerprint,
        references=[],
        round_closed=False,
        state="pending",
        attempts=0,
        created_at=now,
        updated_at=now,
    )
    session.add(call)
    session.flush()
    return call.id, _prepare(session, call, "debit", wallet, now), abandoned


def _debiting(key: str) -> IdempotencyKeyInUse:
    return IdempotencyKeyInUse(
        f"A request with idempotency key {key!r} is still debiting the wallet."
    )


def _debit_answered(
    session: Session, call_id: str, outcome: CallOutcome, now: datetime
) -> tuple[str, str | None]:
    """Record a debit's answer: its state after (and the operator's refusal, if any)."""
    call = _locked(session, call_id)
    _tried(call, outcome, now)
    if call.state != "pending":  # swept meanwhile into a rollback: no seat on it
        return call.state, call.declined
    if outcome.verdict is Verdict.OK:
        call.state = "applied"
    elif outcome.verdict is Verdict.DECLINED:
        call.state, call.declined, call.completed_at = "failed", outcome.status, now
    else:
        _start_rollback(call, now)
    return call.state, call.declined


def _declined(status: str) -> InsufficientFunds | WalletDeclined:
    if status == "insufficient_funds":
        return InsufficientFunds("The operator's wallet holds less than the stake.")
    error = WalletDeclined(f"The operator's wallet declined the debit: {status}.")
    error.extensions["wallet_status"] = status
    return error


def book(
    session: Session,
    operator_id: str,
    player_id: str,
    currency: str,
    amount: int,
    call_id: str | None,
    now: datetime,
) -> None:
    """Inside a seat's unit of work: the applied debit ``call_id`` enters the player's
    available funds (the caller holds it next). Nothing in transfer mode.

    :raises WalletUnavailable: when a seamless seat comes without an applied debit of that
        stake (cancelled meanwhile: no seat on it).
    """
    if wallets.seamless_wallet(session, operator_id, currency) is None:
        return
    call = None if call_id is None else _locked(session, call_id)
    if (
        call is None
        or call.state != "applied"
        or (call.operator_id, call.player_id, call.currency, call.amount)
        != (operator_id, player_id, currency, amount)
    ):
        raise WalletUnavailable(f"No applied wallet debit {call_id!r} for this stake.")
    txn, _ = wallets.move(
        session,
        operator_id=operator_id,
        player=session.get(Player, player_id),
        journal=ledger.wallet_debit(operator_id, player_id, currency, amount),
        idempotency_key=f"debit:{call.id}",
        fingerprint=store.fingerprint("wallet_debit", call.id, amount),
        currency=currency,
        amount=amount,
        now=now,
        external_reference=call.id,
    )
    call.state, call.ledger_transaction_id = "booked", txn.id
    call.completed_at = call.updated_at = now
    session.flush()


def cancel_unbooked(session: Session, call_id: str, post: Post) -> None:
    """After a seat request: a debit the operator applied that no seat booked (the request
    was refused, or failed) is rolled back now (rule 2), once; the sweep retries it."""

    def cancel() -> bool:
        call = _locked(session, call_id)
        if call.state != "applied":
            return False
        _start_rollback(call, utcnow())
        return True

    if unit_of_work.run(session, cancel):
        drive(session, call_id, post)


def round_of(session: Session, operator_id: str, player_id: str, escrow_ref: str) -> str | None:
    """The player's open round for ``escrow_ref``: the round of its latest booked debit."""
    booked = _booked(session, operator_id, player_id, escrow_ref)
    return booked[0][0] if booked else None


def _booked(
    session: Session, operator_id: str, player_id: str, escrow_ref: str
) -> list[tuple[str, str]]:
    """The player's booked debits for ``escrow_ref``, newest first: (round, debit id)."""
    return [
        (round_id, call_id)
        for round_id, call_id in session.execute(
            select(WalletCall.round_id, WalletCall.id)
            .where(
                WalletCall.operator_id == operator_id,
                WalletCall.player_id == player_id,
                WalletCall.escrow_ref == escrow_ref,
                WalletCall.kind == "debit",
                WalletCall.state == "booked",
            )
            .order_by(WalletCall.created_at.desc(), WalletCall.id.desc())
        )
    ]


def _start_rollback(call: WalletCall, now: datetime) -> None:
    call.state = "rollback_pending"
    call.rollback_id = call.rollback_id or new_id("wtx")
    call.next_attempt_at, call.locked_until, call.attempts = now, None, 0
    call.updated_at = now


# --- credits -----------------------------------------------------------------------------------


def pay_out(
    session: Session,
    *,
    operator_id: str,
    currency: str,
    escrow_ref: str,
    table_id: str,
    match_id: str | None,
    amounts: Mapping[str, int],
    reason: str,
    cause: str,
    now: datetime,
) -> list[str]:
    """Inside the caller's unit (a settlement, a release): for a seamless operator, each
    player's ``amounts`` (already in its available funds) leaves for the operator's wallet,
    and a credit closing the player's round is written (a zero credit when it won nothing),
    to be sent after the commit. ``cause`` (the ledger transaction or release key) makes it
    once per player. The credit ids; none in transfer mode."""
    if wallets.seamless_wallet(session, operator_id, currency) is None:
        return []
    ids = []
    for player_id, amount in sorted(amounts.items()):
        request_key = f"credit:{cause}:{player_id}"
        existing = session.scalar(
            select(WalletCall.id).where(
                WalletCall.operator_id == operator_id, WalletCall.request_key == request_key
            )
        )
        if existing is not None:
            ids.append(existing)
            continue
        booked = _booked(session, operator_id, player_id, escrow_ref)
        round_id = booked[0][0] if booked else None
        debits = [debit for of, debit in reversed(booked) if of == round_id]  # oldest first
        if round_id is None:  # money held before the switch to seamless: never (configure)
            log.error("wallet credit for %s at %s has no round", player_id, escrow_ref)
            round_id = new_id("rnd")
        call_id, txn_id = new_id("wtx"), None
        if amount:
            txn, _ = wallets.move(
                session,
                operator_id=operator_id,
                player=session.get(Player, player_id),
                journal=ledger.wallet_credit(operator_id, player_id, currency, amount),
                idempotency_key=request_key,
                fingerprint=store.fingerprint("wallet_credit", request_key, amount),
                currency=currency,
                amount=amount,
                now=now,
                external_reference=call_id,
            )
            txn_id = txn.id
        call = WalletCall(
            id=call_id,
            operator_id=operator_id,
            player_id=player_id,
            kind="credit",
            reason=reason,
            currency=currency,
            amount=amount,
            round_id=round_id,
            table_id=table_id,
            match_id=match_id,
            escrow_ref=escrow_ref,
            request_key=request_key,
            fingerprint=store.fingerprint(request_key, amount),
            references=debits,
            round_closed=True,
            state="pending",
            ledger_transaction_id=txn_id,
            attempts=0,
            next_attempt_at=now,
            created_at=now,
            updated_at=now,
        )
        session.add(call)
        ids.append(call.id)
    session.flush()
    return ids


# --- sending -----------------------------------------------------------------------------------


def _locked(session: Session, call_id: str) -> WalletCall:
    call = session.get(WalletCall, call_id, with_for_update=True, populate_existing=True)
    assert call is not None
    return call


def _fields(session: Session, call: WalletCall, what: str, now: datetime) -> dict[str, Any]:
    player = session.get(Player, call.player_id)
    assert player is not None
    rollback = what == "rollback"
    fields: dict[str, Any] = {
        "transaction_id": call.rollback_id if rollback else call.id,
        "kind": what,
        "player_id": call.player_id,
        "external_player_id": player.external_id,
        "currency": call.currency,
        "amount": call.amount,
        "round_id": call.round_id,
        "table_id": call.table_id,
        "match_id": call.match_id,
        "reason": "cancel" if rollback else call.reason,
        "references": [call.id] if rollback else list(call.references),
        "sent_at": rfc3339(now),
    }
    if what == "credit":
        fields["round_closed"] = call.round_closed
    return fields


#: One call ready to send: URL, body, signed headers, time budget (seconds).
Request = tuple[str, bytes, dict[str, str], float]


def _prepare(
    session: Session, call: WalletCall, what: str, wallet: OperatorWallet, now: datetime
) -> Request:
    """``call`` as ``what`` (debit, credit or rollback), built and signed now."""
    return _signed(wallet, what, request_body(_fields(session, call, what, now)), now)


def _send(call_id: str, what: str, request: Request, post: Post) -> CallOutcome:
    """Send one prepared call, outside any transaction; its verdict."""
    outcome = classify(post(*request))
    WALLET_CALLS.labels(what, outcome.verdict.value).inc()
    if outcome.verdict is not Verdict.OK:
        log.warning("wallet %s %s: %s", what, call_id, outcome.error)
    return outcome


def _tried(call: WalletCall, outcome: CallOutcome, now: datetime) -> None:
    call.attempts += 1
    call.updated_at = now
    call.last_error = outcome.error


def drive(session: Session, call_id: str, post: Post) -> str | None:
    """Send a rollback or a credit once, if it is due and no one else is sending it (a
    lease while the HTTP call is in flight), and record its answer: its state after, or
    ``None`` when nothing was sent."""
    taken = unit_of_work.run(session, _take, session, call_id, utcnow())
    if taken is None:
        return None
    what, request = taken
    outcome = _send(call_id, what, request, post)
    return unit_of_work.run(session, _record, session, call_id, what, outcome, utcnow())


def _take(session: Session, call_id: str, now: datetime) -> tuple[str, Request] | None:
    """Lease ``call_id`` for one send: what to send and the call, or ``None`` when there is
    nothing to send now (done, leased by another, or a credit whose round has open debits)."""
    call = _locked(session, call_id)
    if call.locked_until is not None and call.locked_until > now:
        return None
    if call.kind == "debit":
        if call.state != "rollback_pending":
            return None
        if _credit_sent(session, call):  # never by rule 4's order; a guard, not a path
            if call.escalated_at is None:
                call.escalated_at = now
                WALLET_ESCALATIONS.labels("rollback").inc()
                log.error("rollback of %s held: its round saw a credit", call.id)
            return None
        what = "rollback"
    else:
        if call.state != "pending" or _round_open(session, call):
            return None
        what = "credit"
    wallet = session.get(OperatorWallet, (call.operator_id, call.currency))
    assert wallet is not None  # a currency with calls keeps its settings (_check_switch)
    call.locked_until = now + timedelta(seconds=wallet.timeout_ms / 1000 + 2)
    return what, _prepare(session, call, what, wallet, now)


def _credit_sent(session: Session, call: WalletCall) -> bool:
    """Whether a credit of the debit's round was ever sent (no rollback may follow it)."""
    return _in_round(session, call, "credit", WalletCall.attempts > 0)


def _round_open(session: Session, call: WalletCall) -> bool:
    """Whether a debit of the credit's round is still unsettled (rule 4: the credit waits)."""
    return _in_round(session, call, "debit", WalletCall.state.in_(OPEN_DEBIT_STATES))


def _in_round(session: Session, call: WalletCall, kind: str, condition: Any) -> bool:
    """Whether the player's round of ``call`` has a call of ``kind`` meeting ``condition``."""
    found = session.scalar(
        select(WalletCall.id)
        .where(
            WalletCall.player_id == call.player_id,
            WalletCall.round_id == call.round_id,
            WalletCall.kind == kind,
            condition,
        )
        .limit(1)
    )
    return found is not None


def _record(session: Session, call_id: str, what: str, outcome: CallOutcome, now: datetime) -> str:
    call = _locked(session, call_id)
    _tried(call, outcome, now)
    call.locked_until = None
    if outcome.verdict is Verdict.OK:
        call.state = "rolled_back" if what == "rollback" else "acknowledged"
        call.completed_at, call.next_attempt_at = now, None
        return call.state
    # Ambiguous, or refused (a credit and a rollback cannot be refused by a sound wallet):
    # the same id again later; past the ceiling, operations are told (and it goes on).
    call.next_attempt_at = now + timedelta(seconds=backoff_seconds(call.attempts))
    if (
        outcome.verdict is Verdict.DECLINED or call.attempts >= ESCALATE_AFTER
    ) and call.escalated_at is None:
        call.escalated_at = now
        WALLET_ESCALATIONS.labels(what).inc()
        log.error(
            "wallet %s %s (%s %s for %s) raised to operations after %d tries: %s",
            what,
            call.id,
            call.amount,
            call.currency,
            call.player_id,
            call.attempts,
            outcome.error,
        )
    return call.state


def sweep(session: Session, post: Post, now: datetime | None = None, limit: int = 200) -> int:
    """Drive every call that is due (rule 5): debits whose request is gone are rolled back,
    rollbacks and credits are sent. How many calls were sent."""
    now = now or utcnow()

    def due() -> list[str]:
        stale = list(
            session.scalars(
                select(WalletCall)
                .where(
                    WalletCall.kind == "debit",
                    WalletCall.state.in_(("pending", "applied")),
                    WalletCall.updated_at <= now - STALE_AFTER,
                )
                .limit(limit)
                .with_for_update(skip_locked=True)
            )
        )
        for call in stale:
            _start_rollback(call, now)
        session.flush()
        return list(
            session.scalars(
                select(WalletCall.id)
                .where(
                    WalletCall.state.in_(("rollback_pending", "pending")),
                    WalletCall.next_attempt_at <= now,
                )
                .order_by(WalletCall.next_attempt_at)
                .limit(limit)
            )
        )

    return sum(
        drive(session, call_id, post) is not None for call_id in unit_of_work.run(session, due)
    )


def send_credits(session: Session, match_id: str, post: Post) -> int:
    """Send a settled match's credits now (the settlement task, right after its commit);
    the sweep sends whatever this leaves. How many are acknowledged."""
    return _send_pending(session, WalletCall.match_id == match_id, post)


def send_credits_for(session: Session, operator_id: str, escrow_ref: str, post: Post) -> int:
    """Send the pending credits of what ``escrow_ref`` holds money for (a tournament: its
    refunds and prizes) now, right after the commit that wrote them; the sweep sends
    whatever this leaves. Nothing to read for an operator without a seamless currency.
    How many are acknowledged."""
    if not unit_of_work.run(session, has_seamless, session, operator_id):
        return 0
    return _send_pending(
        session,
        (WalletCall.operator_id == operator_id) & (WalletCall.escrow_ref == escrow_ref),
        post,
    )


def _send_pending(session: Session, condition: Any, post: Post) -> int:
    ids = unit_of_work.run(
        session,
        lambda: list(
            session.scalars(
                select(WalletCall.id).where(
                    condition, WalletCall.kind == "credit", WalletCall.state == "pending"
                )
            )
        ),
    )
    return sum(drive(session, call_id, post) == "acknowledged" for call_id in ids)


def balance_request(
    session: Session, operator_id: str, player_id: str, currency: str, now: datetime
) -> Request | None:
    """Inside the caller's unit: the signed call that asks the seamless operator's wallet
    what the player holds in ``currency`` (display only); ``None`` in transfer mode."""
    wallet = wallets.seamless_wallet(session, operator_id, currency)
    player = session.get(Player, player_id)
    if wallet is None or player is None:
        return None
    fields = {
        "player_id": player_id,
        "external_player_id": player.external_id,
        "currency": currency,
        "sent_at": rfc3339(now),
    }
    return _signed(wallet, "balance", request_body(fields), now)


def ask_balance(request: Request, post: Post) -> int | None:
    """Send :func:`balance_request`'s call, outside any transaction: the balance the
    operator's wallet reports, or ``None`` without a clear answer."""
    outcome = classify(post(*request))
    WALLET_CALLS.labels("balance", outcome.verdict.value).inc()
    return outcome.balance if outcome.verdict is Verdict.OK else None


def _signed(
    wallet: OperatorWallet, what: str, body: bytes, now: datetime
) -> tuple[str, bytes, dict[str, str], float]:
    """A call to the operator's wallet: its URL, body, signed headers and time budget."""
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "gin-service-wallet/1",
        SIGNATURE_HEADER: signature_header(
            signing_secrets(wallet, now), int(now.timestamp()), body
        ),
    }
    assert wallet.url is not None
    return wallet.url.rstrip("/") + "/" + what, body, headers, wallet.timeout_ms / 1000


# --- reports -----------------------------------------------------------------------------------


def list_calls(
    session: Session,
    principal: Principal,
    *,
    day: str | None,
    state: str | None,
    escalated: bool | None,
    player_id: str | None,
    limit: int,
    starting_after: str | None,
    ending_before: str | None,
) -> Page[WalletCall]:
    """The operator's wallet calls (its reconciliation report for ``day``, UTC; the calls
    raised to operations with ``escalated``), newest first."""
    operator_id = require_operator(principal)
    stmt = select(WalletCall).where(WalletCall.operator_id == operator_id)
    if day is not None:
        start = _day_start(day)
        stmt = stmt.where(
            WalletCall.created_at >= start, WalletCall.created_at < start + timedelta(days=1)
        )
    if state is not None:
        stmt = stmt.where(WalletCall.state == state)
    if escalated is not None:
        stmt = stmt.where(
            WalletCall.escalated_at.is_not(None) if escalated else WalletCall.escalated_at.is_(None)
        )
    if player_id is not None:
        stmt = stmt.where(WalletCall.player_id == player_id)
    return page_of(session, stmt, WalletCall.id, WalletCall, limit, starting_after, ending_before)


def _day_start(day: str) -> datetime:
    try:
        return datetime.fromisoformat(day + "T00:00:00+00:00")
    except ValueError:
        message = "A day is written YYYY-MM-DD."
        raise ValidationFailed(message, errors=[FieldError("date", message)]) from None


def report(session: Session, operator_id: str, day: str) -> list[Line]:
    """The operator's reconciliation report for ``day`` (UTC): every transaction id we
    sent its wallet that day (a debit, its rollback, a credit), oldest first."""
    start = _day_start(day)
    return [
        line
        for call in session.scalars(
            select(WalletCall)
            .where(
                WalletCall.operator_id == operator_id,
                WalletCall.created_at >= start,
                WalletCall.created_at < start + timedelta(days=1),
            )
            .order_by(WalletCall.created_at, WalletCall.id)
        )
        for line in lines_of(call)
    ]


def lines_of(call: WalletCall) -> list[Line]:
    """A call's lines in a reconciliation report: its own, and its rollback's."""
    own = Line(call.id, call.kind, call.round_id, call.amount, call.currency, call.state)
    if call.rollback_id is None:
        return [own]
    done = "acknowledged" if call.state == "rolled_back" else "pending"
    return [
        own,
        Line(call.rollback_id, "rollback", call.round_id, call.amount, call.currency, done),
    ]
