"""The service's exception family. Each class carries its problem ``code``, HTTP ``status`` and
``title``; :mod:`service.api.problems` is the one place that turns them into RFC 9457
``application/problem+json`` responses.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class FieldError:
    """One offending input field, as it appears in a problem's ``errors`` list."""

    field: str
    message: str


class ServiceError(Exception):
    """Base of every error the service reports to a caller on purpose."""

    status = 400
    code = "bad_request"
    title = "Bad request"
    #: Whether this is a use case's decision (``insufficient_funds``, ``table_not_open``): a
    #: request with an ``Idempotency-Key`` that ends in it stores it as the key's answer, which
    #: a retry gets again. ``False`` for a refusal of the request itself, made before any use
    #: case decided (who asks, what the path names, how the request is written): nothing is
    #: stored, and the caller can correct the request and retry it with the same key.
    decision = True

    def __init__(self, detail: str, *, errors: Sequence[FieldError] = ()) -> None:
        super().__init__(detail)
        self.detail = detail
        self.errors = tuple(errors)
        self.extensions: dict[str, str] = {}  # extra problem members, e.g. ``rule_code``


class ValidationFailed(ServiceError):
    """Raised when request input is well-formed but breaks a field rule."""

    status = 422
    code = "validation_failed"
    title = "Validation failed"
    decision = False


class MalformedRequest(ServiceError):
    """Raised when the request cannot be read as HTTP and JSON allow: a body that is not
    JSON (or repeats a key), a body missing where one is required, a header or path that
    breaks its rule."""

    status = 400
    code = "malformed_request"
    title = "Malformed request"
    decision = False


class Unauthenticated(ServiceError):
    """Raised when credentials are missing, forged, revoked or unknown."""

    status = 401
    code = "unauthenticated"
    title = "Authentication required"
    decision = False


class TokenExpired(Unauthenticated):
    """Raised when a player token's expiry has passed."""

    code = "token_expired"
    title = "Token expired"


class Forbidden(ServiceError):
    """Raised when valid credentials may not act on a resource of their own tenant."""

    status = 403
    code = "forbidden"
    title = "Forbidden"
    decision = False


class NotFound(ServiceError):
    """Raised when a resource does not exist or belongs to another tenant."""

    status = 404
    code = "not_found"
    title = "Not found"
    decision = False


class Conflict(ServiceError):
    """Raised when a create would duplicate a unique value (such as an external id)."""

    status = 409
    code = "conflict"
    title = "Conflict"


class ExternalIdTaken(Conflict):
    """Raised when an operator creates a second player with the same external id."""

    code = "external_id_taken"
    title = "External id already used"


class IdempotencyKeyRequired(ServiceError):
    """Raised when a money-moving POST arrives without a usable ``Idempotency-Key``."""

    status = 400
    code = "idempotency_key_required"
    title = "Idempotency-Key header required"
    decision = False


class IdempotencyKeyReused(ServiceError):
    """Raised when a key is sent again with a different request body or endpoint."""

    status = 422
    code = "idempotency_key_reused"
    title = "Idempotency key reused"
    decision = False


class IdempotencyKeyInUse(ServiceError):
    """Raised when a key's first request is still being processed."""

    status = 409
    code = "idempotency_key_in_use"
    title = "Idempotency key in use"
    decision = False


class ServiceUnavailable(ServiceError):
    """Answered when the database connection is lost mid-request: nothing was committed and
    the same request (with the same ``Idempotency-Key``) can be sent again."""

    status = 503
    code = "service_unavailable"
    title = "Service unavailable"
    decision = False


class InvalidCursor(ServiceError):
    """Raised when a list cursor names no item of that list."""

    status = 400
    code = "invalid_cursor"
    title = "Invalid cursor"
    decision = False


class UnsupportedCurrency(ServiceError):
    """Raised when a currency code is not an ISO 4217 currency the service knows."""

    status = 422
    code = "unsupported_currency"
    title = "Unsupported currency"
    decision = False


class InsufficientFunds(ServiceError):
    """Raised when a movement would take an available (or escrow) balance below zero."""

    status = 422
    code = "insufficient_funds"
    title = "Insufficient funds"


class DepositLimitExceeded(ServiceError):
    """Raised when a deposit would exceed the player's daily, weekly or monthly limit."""

    status = 422
    code = "deposit_limit_exceeded"
    title = "Deposit limit exceeded"


class SelfExcluded(ServiceError):
    """Raised when a self-excluded player's deposit (or, later, seat) is requested."""

    status = 422
    code = "self_excluded"
    title = "Player is self-excluded"


class SelfExclusionLocked(ServiceError):
    """Raised when an active self-exclusion would be shortened or lifted early."""

    status = 422
    code = "self_exclusion_locked"
    title = "Self-exclusion cannot be shortened"


class CurrencyMismatch(ServiceError):
    """Raised when amounts in one request name different currencies."""

    status = 422
    code = "currency_mismatch"
    title = "Currency mismatch"
    decision = False


class LedgerInvariantBroken(ServiceError):
    """Raised when a journal transaction would break double entry (a programming error)."""

    status = 500
    code = "ledger_invariant_broken"
    title = "Ledger invariant broken"


class IllegalMove(ServiceError):
    """Raised when the rules refuse a match action; ``rule_code`` is the engine's code
    (``KNOCK_LIMIT_EXCEEDED``, ``NOT_YOUR_TURN``, ...). Nothing changes."""

    status = 422
    code = "illegal_action"
    title = "Illegal action"

    def __init__(self, detail: str, *, rule_code: str) -> None:
        super().__init__(detail)
        self.rule_code = rule_code
        self.extensions = {"rule_code": rule_code}


class StaleVersion(ServiceError):
    """Raised when an action names a match version that is no longer current (a stale or
    repeated action); nothing changes."""

    status = 409
    code = "stale_version"
    title = "Stale match version"


class MatchNotLive(ServiceError):
    """Raised when an action arrives for a match that is not being played."""

    status = 409
    code = "match_not_live"
    title = "Match not live"


class TableNotOpen(ServiceError):
    """Raised when a table takes no seat changes: full, started, finished or cancelled."""

    status = 409
    code = "table_not_open"
    title = "Table not open"


class AlreadySeated(ServiceError):
    """Raised when a player asks for a second seat at the same table."""

    status = 409
    code = "already_seated"
    title = "Already seated"


class TournamentNotOpen(ServiceError):
    """Raised when a tournament takes no registration changes: it has started, finished,
    been cancelled, or its registration deadline has passed."""

    status = 409
    code = "tournament_not_open"
    title = "Tournament not open"


class AlreadyRegistered(ServiceError):
    """Raised when a player registers a second time for the same tournament."""

    status = 409
    code = "already_registered"
    title = "Already registered"


class WalletDeclined(ServiceError):
    """Raised when a seamless operator's wallet refused a debit (a stake, a buy-in, a
    top-up) for a reason other than funds: a limit, a disabled player, another currency.
    Nothing moved; the operator's word is the problem's ``wallet_status``."""

    status = 422
    code = "wallet_declined"
    title = "Wallet declined"


class WalletUnavailable(ServiceError):
    """Raised when a seamless operator's wallet did not answer a debit clearly (no answer in
    time, an error, an unreadable answer). The debit is being rolled back and no seat was
    taken: the same request, with the same ``Idempotency-Key``, may be sent again."""

    status = 503
    code = "wallet_unavailable"
    title = "Wallet unavailable"
    decision = False


class SeamlessWallet(ServiceError):
    """Raised when a deposit or a withdrawal is asked for a currency the operator runs in
    seamless mode: its players' money stays in its own wallet."""

    status = 409
    code = "seamless_wallet"
    title = "Seamless wallet"


class WebhookEndpointDisabled(ServiceError):
    """Raised when a redelivery is asked of an endpoint that is disabled or deleted."""

    status = 409
    code = "webhook_endpoint_disabled"
    title = "Webhook endpoint disabled"


# --- Refusals of the HTTP request itself, before any operation reads it ----------------------


class MethodNotAllowed(ServiceError):
    """Raised when the path exists but does not take the request's method (``Allow`` lists
    the ones it takes)."""

    status = 405
    code = "method_not_allowed"
    title = "Method not allowed"
    decision = False


class ContentTooLarge(ServiceError):
    """Raised when a request body is longer than the service reads (``MAX_CONTENT_LENGTH``),
    by its ``Content-Length`` or as it arrives (chunked)."""

    status = 413
    code = "content_too_large"
    title = "Content too large"
    decision = False


class UriTooLong(ServiceError):
    """Raised when a request's path and query together are longer than the service reads."""

    status = 414
    code = "uri_too_long"
    title = "URI too long"
    decision = False


class ExpectationFailed(ServiceError):
    """Raised by the HTTP server when a request's ``Expect`` header asks for anything but
    ``100-continue``."""

    status = 417
    code = "expectation_failed"
    title = "Expectation failed"
    decision = False


class UnsupportedMediaType(ServiceError):
    """Raised when a request body is not ``application/json`` (UTF-8) where an operation
    reads JSON."""

    status = 415
    code = "unsupported_media_type"
    title = "Unsupported media type"
    decision = False


class RateLimited(ServiceError):
    """Raised when the caller's rate limit is used up (``Retry-After`` says for how long)."""

    status = 429
    code = "rate_limited"
    title = "Too many requests"
    decision = False


class HeaderFieldsTooLarge(ServiceError):
    """Raised when a request has more header fields, or a longer one, than the service
    reads."""

    status = 431
    code = "header_fields_too_large"
    title = "Request header fields too large"
    decision = False


class InternalError(ServiceError):
    """Answered when the service failed to answer (a bug or an unexpected fault); the error
    is logged, and the answer carries no detail of it."""

    status = 500
    code = "internal_error"
    title = "Internal server error"
    decision = False


class NotImplementedCoding(ServiceError):
    """Raised by the HTTP server when a request's ``Transfer-Encoding`` names a coding it does
    not implement (it reads ``chunked`` only)."""

    status = 501
    code = "not_implemented"
    title = "Not implemented"
    decision = False


def problem_classes() -> dict[str, type[ServiceError]]:
    """Every problem the service answers, by ``code``: the classes of this family, and those
    other packages derive from it (imported by then)."""
    found: dict[str, type[ServiceError]] = {}
    pending: list[type[ServiceError]] = [ServiceError]
    while pending:
        cls = pending.pop()
        found.setdefault(cls.code, cls)
        pending.extend(cls.__subclasses__())
    return found
