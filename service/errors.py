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


class MalformedRequest(ServiceError):
    """Raised when the request body is not parseable JSON."""

    status = 400
    code = "malformed_request"
    title = "Malformed request"


class Unauthenticated(ServiceError):
    """Raised when credentials are missing, forged, revoked or unknown."""

    status = 401
    code = "unauthenticated"
    title = "Authentication required"


class TokenExpired(Unauthenticated):
    """Raised when a player token's expiry has passed."""

    code = "token_expired"
    title = "Token expired"


class Forbidden(ServiceError):
    """Raised when valid credentials may not act on a resource of their own tenant."""

    status = 403
    code = "forbidden"
    title = "Forbidden"


class NotFound(ServiceError):
    """Raised when a resource does not exist or belongs to another tenant."""

    status = 404
    code = "not_found"
    title = "Not found"


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


class IdempotencyKeyReused(ServiceError):
    """Raised when a key is sent again with a different request body or endpoint."""

    status = 422
    code = "idempotency_key_reused"
    title = "Idempotency key reused"


class IdempotencyKeyInUse(ServiceError):
    """Raised when a key's first request is still being processed."""

    status = 409
    code = "idempotency_key_in_use"
    title = "Idempotency key in use"


class ServiceUnavailable(ServiceError):
    """Answered when the database connection is lost mid-request: nothing was committed and
    the same request (with the same ``Idempotency-Key``) can be sent again."""

    status = 503
    code = "service_unavailable"
    title = "Service unavailable"


class InvalidCursor(ServiceError):
    """Raised when a list cursor names no item of that list."""

    status = 400
    code = "invalid_cursor"
    title = "Invalid cursor"


class UnsupportedCurrency(ServiceError):
    """Raised when a currency code is not an ISO 4217 currency the service knows."""

    status = 422
    code = "unsupported_currency"
    title = "Unsupported currency"


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


class WebhookEndpointDisabled(ServiceError):
    """Raised when a redelivery is asked of an endpoint that is disabled or deleted."""

    status = 409
    code = "webhook_endpoint_disabled"
    title = "Webhook endpoint disabled"
