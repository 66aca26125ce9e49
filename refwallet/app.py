"""The reference wallet's HTTP side: the four signed wallet endpoints, the unsigned admin API,
and injected faults that imitate a misbehaving operator (timeouts, 5xx, garbled answers,
outages, reordering) so a caller's retry and rollback logic can be tested against them.

A wallet request goes: body read (64 KiB at most) → logged → outage? → signature → fault rule
→ JSON and contract validation → :class:`~refwallet.store.WalletStore`. Deliberate
sleeps happen outside the store's lock, so a slow answer never holds other players back.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from functools import partial
from typing import Any

from flask import Flask, Response, current_app, request
from flask.typing import ResponseReturnValue
from werkzeug.exceptions import RequestEntityTooLarge

from refwallet.store import (
    BalanceQuery,
    Decision,
    Player,
    Transaction,
    WalletStore,
)
from service.outbound.signing import SIGNATURE_HEADER, verify_signature

MAX_BODY_BYTES = 64 * 1024
MAX_AMOUNT = 2**53 - 1  # the largest integer every JSON parser reads exactly
MAX_TEXT = 256  # ids and names: longer is a caller's bug, not data
MAX_FAULT_SECONDS = 60.0

ENDPOINTS = ("debit", "credit", "rollback", "balance")
REASONS = {
    "debit": frozenset({"stake", "buyin", "top_up"}),
    "credit": frozenset({"payout", "release", "refund"}),
    "rollback": frozenset({"cancel"}),
}
FAULTS = frozenset(
    {
        "timeout_after_apply",
        "timeout_before_apply",
        "delay_apply",
        "error_5xx",
        "bad_body",
        "unknown_status",
        "down",
    }
)
DEFAULT_FAULT_SECONDS = 1.0


class Invalid(ValueError):
    """A request that breaks the contract's shape: answered 400 ``bad_request``."""


# --- faults ----------------------------------------------------------------------------------


@dataclass
class FaultRule:
    """Applies ``fault`` to the next ``times`` signed requests whose kind is in ``kinds``."""

    kinds: frozenset[str]
    fault: str
    times: int = 1
    seconds: float = DEFAULT_FAULT_SECONDS

    def as_json(self) -> dict[str, Any]:
        return {
            "kinds": sorted(self.kinds),
            "fault": self.fault,
            "times": self.times,
            "seconds": self.seconds,
        }


@dataclass
class FaultBook:
    """The fault rules in force. ``down`` is an outage window starting when the rules are set
    (its ``times`` is ignored); the other faults are used up one request at a time."""

    clock: Callable[[], float] = time.monotonic
    rules: list[FaultRule] = field(default_factory=list)
    outages: list[tuple[frozenset[str], float]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def replace(self, rules: list[FaultRule]) -> None:
        now = self.clock()
        with self.lock:
            self.rules = [rule for rule in rules if rule.fault != "down"]
            self.outages = [(r.kinds, now + r.seconds) for r in rules if r.fault == "down"]

    def clear(self) -> None:
        self.replace([])

    def is_down(self, kind: str) -> bool:
        now = self.clock()
        with self.lock:
            return any(kind in kinds and now < until for kinds, until in self.outages)

    def take(self, kind: str) -> FaultRule | None:
        """The first rule that applies to this request, one of its ``times`` used up."""
        with self.lock:
            for rule in self.rules:
                if kind in rule.kinds and rule.times > 0:
                    rule.times -= 1
                    return FaultRule(rule.kinds, rule.fault, 1, rule.seconds)
            return None

    def as_json(self) -> list[dict[str, Any]]:
        with self.lock:
            return [rule.as_json() for rule in self.rules if rule.times > 0]


def parse_fault_rules(data: Any) -> list[FaultRule]:
    """``{"rules": [{"kinds", "fault", "times", "seconds"}, ...]}`` → rules, or :class:`Invalid`."""
    if not isinstance(data, dict) or not isinstance(data.get("rules"), list):
        raise Invalid('expected {"rules": [...]}')
    return [_fault_rule(item) for item in data["rules"]]


def _fault_rule(item: Any) -> FaultRule:
    if not isinstance(item, dict):
        raise Invalid("a rule is an object")
    if item.get("fault") not in FAULTS:
        raise Invalid(f"fault must be one of {sorted(FAULTS)}")
    kinds = item.get("kinds", list(ENDPOINTS))
    if not isinstance(kinds, list) or not kinds or not set(kinds) <= set(ENDPOINTS):
        raise Invalid(f"kinds must be a non-empty list of {list(ENDPOINTS)}")
    times = item.get("times", 1)
    if not _is_int(times) or times < 1:
        raise Invalid("times must be a positive integer")
    seconds = item.get("seconds", DEFAULT_FAULT_SECONDS)
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        raise Invalid("seconds must be a number")
    if not 0 <= seconds <= MAX_FAULT_SECONDS:
        raise Invalid(f"seconds must be between 0 and {MAX_FAULT_SECONDS:g}")
    return FaultRule(frozenset(kinds), item["fault"], times, float(seconds))


# --- request parsing -------------------------------------------------------------------------


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """JSON objects with a key twice are refused: which value counts would be a guess, and the
    signer and this parser could guess differently."""
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise Invalid(f"duplicate key {key!r}")
        result[key] = value
    return result


def _refuse_constant(name: str) -> Any:
    raise Invalid(f"{name} is not JSON")


def parse_json_object(raw: bytes) -> dict[str, Any]:
    """The body as a JSON object (UTF-8, no duplicate keys, no NaN), or :class:`Invalid`."""
    try:
        data = json.loads(
            raw.decode("utf-8"),
            object_pairs_hook=_no_duplicate_keys,
            parse_constant=_refuse_constant,
        )
    except (UnicodeDecodeError, RecursionError, ValueError) as exc:
        raise Invalid(exc if isinstance(exc, Invalid) else "body is not JSON") from None
    if not isinstance(data, dict):
        raise Invalid("body must be a JSON object")
    return data


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _text(data: dict[str, Any], name: str, *, nullable: bool = False) -> Any:
    value = data.get(name)
    if value is None and nullable:
        return None
    if not isinstance(value, str) or not value or len(value) > MAX_TEXT:
        raise Invalid(f"{name} must be a non-empty string of at most {MAX_TEXT} characters")
    return value


def _currency(data: dict[str, Any]) -> str:
    value = data.get("currency")
    if not isinstance(value, str) or len(value) != 3 or not value.isascii() or not value.isupper():
        raise Invalid("currency must be three capital letters")
    return value


def _amount(kind: str, value: Any) -> int:
    if not _is_int(value) or not 0 <= value <= MAX_AMOUNT:
        raise Invalid(f"amount must be an integer from 0 to {MAX_AMOUNT}")
    if kind != "credit" and value == 0:
        raise Invalid(f"a {kind}'s amount must be positive")
    return int(value)


def _references(kind: str, data: dict[str, Any], transaction_id: str) -> tuple[str, ...]:
    value = data.get("references", [])
    if not isinstance(value, list) or not all(
        isinstance(item, str) and item and len(item) <= MAX_TEXT for item in value
    ):
        raise Invalid("references must be a list of transaction ids")
    if kind == "rollback" and (len(value) != 1 or value[0] == transaction_id):
        raise Invalid("a rollback references exactly one debit: [its transaction_id]")
    return tuple(value)


def _sent_at(data: dict[str, Any]) -> str:
    value = data.get("sent_at")
    try:
        if not isinstance(value, str):
            raise ValueError
        datetime.fromisoformat(value)
    except ValueError:
        raise Invalid("sent_at must be an RFC 3339 timestamp") from None
    return value


def parse_transaction(kind: str, data: dict[str, Any]) -> Transaction:
    """A debit, credit or rollback body → :class:`Transaction`, or :class:`Invalid`. Unknown
    fields are ignored (a caller may send more than this contract names)."""
    if data.get("kind") != kind:
        raise Invalid(f"kind must be {kind!r} on /{kind}")
    transaction_id = _text(data, "transaction_id")
    reason = data.get("reason")
    if reason not in REASONS[kind]:
        raise Invalid(f"reason must be one of {sorted(REASONS[kind])}")
    round_closed = data.get("round_closed", False)
    if not isinstance(round_closed, bool) or (round_closed and kind != "credit"):
        raise Invalid("round_closed is a boolean, true only on a credit")
    return Transaction(
        transaction_id=transaction_id,
        kind=kind,
        player_id=_text(data, "player_id"),
        external_player_id=_text(data, "external_player_id"),
        currency=_currency(data),
        amount=_amount(kind, data.get("amount")),
        round_id=_text(data, "round_id"),
        table_id=_text(data, "table_id"),
        match_id=_text(data, "match_id", nullable=True),
        reason=reason,
        references=_references(kind, data, transaction_id),
        round_closed=round_closed,
        sent_at=_sent_at(data),
    )


def parse_balance(data: dict[str, Any]) -> BalanceQuery:
    return BalanceQuery(
        player_id=_text(data, "player_id"),
        external_player_id=_text(data, "external_player_id"),
        currency=_currency(data),
    )


def parse_player(external_player_id: str, data: dict[str, Any]) -> Player:
    """An admin ``PUT /admin/players/<id>`` body → :class:`Player`, or :class:`Invalid`."""
    balance = data.get("balance", 0)
    if not _is_int(balance) or not 0 <= balance <= MAX_AMOUNT:
        raise Invalid("balance must be a non-negative integer")
    disabled = data.get("disabled", False)
    if not isinstance(disabled, bool):
        raise Invalid("disabled must be a boolean")
    debit_limit = data.get("debit_limit")
    if debit_limit is not None and (not _is_int(debit_limit) or debit_limit < 0):
        raise Invalid("debit_limit must be a non-negative integer or null")
    if len(external_player_id) > MAX_TEXT:
        raise Invalid("external_player_id is too long")
    return Player(external_player_id, _currency(data), balance, disabled, debit_limit)


def _peek_transaction_id(raw: bytes | None) -> str | None:
    """The body's ``transaction_id`` for the request log, whatever else is wrong with it."""
    try:
        data = json.loads(raw or b"")
    except (UnicodeDecodeError, RecursionError, ValueError):
        return None
    value = data.get("transaction_id") if isinstance(data, dict) else None
    return value if isinstance(value, str) else None


# --- answers ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    """What to send, what to log, and how long to wait before sending (a deliberate timeout).

    ``logged_as`` is what the request log says the caller got: the body's status, ``"not
    json"``, or ``"dropped"`` when a timeout fault means the caller is not meant to see it;
    ``outcome`` is what the wallet decided (None when it never looked at the request).
    """

    http_status: int
    body: bytes
    logged_as: str
    outcome: str | None = None
    fault: str | None = None
    applied: bool = False
    linger: float = 0.0

    @classmethod
    def of(cls, outcome: Decision) -> Answer:
        body = _json_bytes(outcome.body())
        return cls(outcome.http_status, body, outcome.status, outcome.status, None, outcome.applied)

    @classmethod
    def status(cls, http_status: int, status: str, **detail: Any) -> Answer:
        return cls(http_status, _json_bytes({"status": status, **detail}), status, status)

    @classmethod
    def unavailable(cls, http_status: int, status: str, fault: str) -> Answer:
        """A fault's answer given without looking at the request (no outcome)."""
        return cls(http_status, _json_bytes({"status": status}), status, None, fault)

    def response(self) -> Response:
        return Response(self.body, status=self.http_status, mimetype="application/json")


def _json_bytes(body: Any) -> bytes:
    return json.dumps(body, separators=(",", ":")).encode()


def _json(body: Any, http_status: int = 200) -> Response:
    return Response(_json_bytes(body), status=http_status, mimetype="application/json")


def _bad_request(detail: str, http_status: int = 400) -> Response:
    return _json({"status": "bad_request", "detail": detail}, http_status)


def _garble(answer: Answer, fault: FaultRule | None) -> Answer:
    """The faults that let the request be processed, then spoil or delay the answer."""
    if fault is None:
        return answer
    if fault.fault == "timeout_after_apply":
        return replace(answer, logged_as="dropped", fault=fault.fault, linger=fault.seconds)
    if fault.fault == "bad_body":
        return replace(
            answer, http_status=200, body=b"not json", logged_as="not json", fault=fault.fault
        )
    if fault.fault == "unknown_status":
        body = _json_bytes({"status": "maybe"})
        return replace(answer, http_status=200, body=body, logged_as="maybe", fault=fault.fault)
    return replace(answer, fault=fault.fault)  # delay_apply: already slept, answered normally


# --- the wallet endpoints --------------------------------------------------------------------


@dataclass
class Wallet:
    """Everything a wallet request needs: the books, the secrets, the fault rules and the
    clocks (injectable, so a test can move the wall clock across a day)."""

    store: WalletStore
    secrets: list[str]
    faults: FaultBook
    clock: Callable[[], float] = time.time
    sleep: Callable[[float], None] = time.sleep

    def serve(self, kind: str) -> Response:
        """One signed request, logged from arrival (before any delay) to its answer."""
        received_at = self.clock()
        try:
            raw: bytes | None = request.get_data(cache=False)
        except RequestEntityTooLarge:
            raw = None
        seq = self.store.open_request(request.path, kind, _peek_transaction_id(raw), received_at)
        try:
            answer = self.answer(kind, raw, received_at)
        except Exception:
            # A bug here must still look like what it is to the caller (a 5xx: ambiguous, so
            # retried) and leave a trace; the store's transaction was rolled back.
            current_app.logger.exception("refwallet: %s failed", request.path)
            answer = Answer.status(500, "error")
        self.store.close_request(
            seq, answer.http_status, answer.logged_as, answer.outcome, answer.fault, answer.applied
        )
        if answer.linger:
            self.sleep(answer.linger)  # outside the store's lock: other requests go on
        return answer.response()

    def answer(self, kind: str, raw: bytes | None, received_at: float) -> Answer:
        if raw is None:
            return Answer.status(413, "bad_request", detail=f"body over {MAX_BODY_BYTES} bytes")
        if self.faults.is_down(kind):
            return Answer.unavailable(503, "unavailable", "down")
        if not self.signed(raw):
            return Answer.status(401, "bad_signature")
        fault = self.faults.take(kind)
        if fault is not None and fault.fault == "error_5xx":
            return Answer.unavailable(500, "error", fault.fault)
        if fault is not None and fault.fault == "timeout_before_apply":
            answer = Answer.unavailable(503, "unavailable", fault.fault)
            return replace(answer, logged_as="dropped", linger=fault.seconds)
        if fault is not None and fault.fault == "delay_apply":
            self.sleep(fault.seconds)
        return _garble(self.process(kind, raw, received_at), fault)

    def signed(self, raw: bytes) -> bool:
        """Whether any configured secret signed the raw body (several during a rotation)."""
        header = request.headers.get(SIGNATURE_HEADER, "")
        now = self.clock()
        return any(verify_signature(secret, header, raw, now) for secret in self.secrets)

    def process(self, kind: str, raw: bytes, received_at: float) -> Answer:
        try:
            data = parse_json_object(raw)
            if kind == "balance":
                return Answer.of(self.store.balance(parse_balance(data)))
            transaction = parse_transaction(kind, data)
        except Invalid as exc:
            return Answer.status(400, "bad_request", detail=str(exc))
        return Answer.of(self.store.apply(transaction, received_at, self.clock()))


# --- the app ---------------------------------------------------------------------------------


def create_app(
    db_path: str,
    secrets: list[str],
    *,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
) -> Flask:
    """The reference wallet as a WSGI app on the SQLite file ``db_path`` (created if missing),
    accepting requests signed by any of ``secrets``."""
    if not secrets:
        raise ValueError("the wallet needs at least one signing secret")
    app = Flask("refwallet")
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY_BYTES
    wallet = Wallet(WalletStore(db_path), list(secrets), FaultBook(), clock, sleep)
    app.extensions["refwallet"] = wallet
    _wallet_routes(app, wallet)
    _admin_routes(app, wallet)
    _error_handlers(app)
    return app


def _wallet_routes(app: Flask, wallet: Wallet) -> None:
    for kind in ENDPOINTS:
        app.add_url_rule(
            f"/{kind}", endpoint=kind, view_func=partial(wallet.serve, kind), methods=["POST"]
        )


def _admin_routes(app: Flask, wallet: Wallet) -> None:
    store, faults = wallet.store, wallet.faults

    @app.get("/admin/health")
    def health() -> ResponseReturnValue:
        return _json({"status": "ok"})

    @app.put("/admin/players/<external_player_id>")
    def put_player(external_player_id: str) -> ResponseReturnValue:
        try:
            player = parse_player(external_player_id, _admin_body())
        except Invalid as exc:
            return _bad_request(str(exc))
        created = store.put_player(player)
        return _json(player.as_json(), 201 if created else 200)

    @app.get("/admin/players/<external_player_id>")
    def get_player(external_player_id: str) -> ResponseReturnValue:
        player = store.get_player(external_player_id)
        if player is None:
            return _json({"status": "unknown_player"}, 404)
        return _json(player.as_json())

    @app.get("/admin/transactions")
    def transactions() -> ResponseReturnValue:
        day = request.args.get("date")
        if day is not None and not _is_day(day):
            return _bad_request("date must be YYYY-MM-DD")
        return _json({"data": store.transactions(day)})

    @app.get("/admin/export")
    def export() -> ResponseReturnValue:
        day = request.args.get("date", "")
        if not _is_day(day):
            return _bad_request("date must be YYYY-MM-DD")
        return _json({"date": day, "transactions": store.export(day)})

    @app.get("/admin/requests")
    def requests_log() -> ResponseReturnValue:
        return _json({"data": store.requests(request.args.get("transaction_id"))})

    @app.post("/admin/faults")
    def set_faults() -> ResponseReturnValue:
        try:
            faults.replace(parse_fault_rules(_admin_body()))
        except Invalid as exc:
            return _bad_request(str(exc))
        return _json({"rules": faults.as_json()})

    @app.delete("/admin/faults")
    def clear_faults() -> ResponseReturnValue:
        faults.clear()
        return _json({"rules": []})


def _admin_body() -> dict[str, Any]:
    return parse_json_object(request.get_data(cache=False))


def _is_day(value: str) -> bool:
    try:
        date.fromisoformat(value)
    except ValueError:
        return False
    return len(value) == 10


def _error_handlers(app: Flask) -> None:
    """JSON everywhere, so a caller never has to parse an HTML error page."""

    @app.errorhandler(RequestEntityTooLarge)
    def too_large(_: RequestEntityTooLarge) -> ResponseReturnValue:
        return _bad_request(f"body over {MAX_BODY_BYTES} bytes", 413)

    @app.errorhandler(Invalid)
    def invalid(exc: Invalid) -> ResponseReturnValue:
        return _bad_request(str(exc))

    @app.errorhandler(404)
    def not_found(_: Exception) -> ResponseReturnValue:
        return _json({"status": "not_found"}, 404)

    @app.errorhandler(405)
    def method_not_allowed(_: Exception) -> ResponseReturnValue:
        return _json({"status": "method_not_allowed"}, 405)
