"""Who is calling: operator API keys and player tokens.

API keys are ``sk_`` plus 32 random bytes, shown once and stored as their SHA-256 (a key has
enough entropy that a plain digest cannot be brute-forced). Player tokens are
``pt_<payload>.<signature>``: a base64url JSON payload ``{"op", "ply", "exp"}`` signed with
HMAC-SHA256 under the service's secret key; they expire after a few minutes.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import json
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session
from sqlalchemy.orm.util import identity_key

from service.db import first_alone
from service.db.models import ApiKey, Operator, Player
from service.errors import Forbidden, NotFound, TokenExpired, Unauthenticated

API_KEY_PREFIX = "sk_"
PLAYER_TOKEN_PREFIX = "pt_"


@dataclass(frozen=True)
class Principal:
    """An authenticated caller: an operator, or one player of an operator."""

    operator_id: str
    player_id: str | None = None

    @property
    def is_operator(self) -> bool:
        return self.player_id is None


def new_api_key_secret() -> str:
    return API_KEY_PREFIX + secrets.token_urlsafe(32)


def hash_api_key(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


_KEY_LOOKUP = select(ApiKey.operator_id).where(
    ApiKey.key_hash == bindparam("key_hash"), ApiKey.revoked_at.is_(None)
)


def authenticate(
    session: Session,
    bearer: str | None,
    secret_key: str,
    now: datetime,
) -> Principal:
    """The principal behind ``Authorization: Bearer <bearer>``.

    :raises Unauthenticated: when the credential is missing, unknown, revoked or forged.
    :raises TokenExpired: when a player token has expired.
    """
    if not bearer:
        raise Unauthenticated("Send Authorization: Bearer <API key or player token>.")
    if bearer.startswith(PLAYER_TOKEN_PREFIX):
        return verify_player_token(bearer, secret_key, now)
    return authenticate_key_hash(session, hash_api_key(bearer))


def authenticate_key_hash(session: Session, key_hash: str) -> Principal:
    """The operator whose active API key has the digest ``key_hash`` (:func:`hash_api_key`):
    how :func:`authenticate` checks a key, and how the console checks the key its session was
    signed in with on every request.

    :raises Unauthenticated: when no active key has that digest (unknown or revoked).
    """
    # Looked up on every request (no cache), so a revoked key stops at once in every process.
    found = first_alone(session, _KEY_LOOKUP, {"key_hash": key_hash})
    if found is None:
        raise Unauthenticated("The API key is unknown or revoked.")
    return Principal(found.operator_id)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _sign(payload: str, secret_key: str) -> str:
    digest = hmac.new(secret_key.encode(), f"player-token.{payload}".encode(), hashlib.sha256)
    return _b64(digest.digest())


def mint_player_token(
    operator_id: str, player_id: str, secret_key: str, expires_at: datetime
) -> str:
    """A signed token that lets one player act as themselves until ``expires_at``."""
    claims = {"op": operator_id, "ply": player_id, "exp": int(expires_at.timestamp())}
    payload = _b64(json.dumps(claims, separators=(",", ":"), sort_keys=True).encode())
    return f"{PLAYER_TOKEN_PREFIX}{payload}.{_sign(payload, secret_key)}"


def verify_player_token(token: str, secret_key: str, now: datetime) -> Principal:
    """The player a token was minted for.

    :raises Unauthenticated: for a malformed or forged token.
    :raises TokenExpired: for a token past its expiry.
    """
    operator_id, player_id, expires = _signed_claims(token, secret_key)
    if now >= datetime.fromtimestamp(expires, UTC):
        raise TokenExpired("The player token has expired; ask the operator for a new one.")
    return Principal(operator_id, player_id)


def player_token_expiry(token: str, secret_key: str) -> datetime | None:
    """When a valid player token expires (None for anything else: an API key)."""
    if not token.startswith(PLAYER_TOKEN_PREFIX):
        return None
    try:
        return datetime.fromtimestamp(_signed_claims(token, secret_key)[2], UTC)
    except Unauthenticated:
        return None


@functools.lru_cache(maxsize=4096)
def _signed_claims(token: str, secret_key: str) -> tuple[str, str, int]:
    """(operator id, player id, expiry in epoch seconds) of a token whose signature checks.
    Remembered for the tokens seen lately (a player's client sends the same token with every
    request, and the rate limiter reads it too); a forged token raises, and is never cached.
    The expiry is checked by the caller on every use."""
    body = token.removeprefix(PLAYER_TOKEN_PREFIX)
    payload, _, signature = body.partition(".")
    if not hmac.compare_digest(signature, _sign(payload, secret_key)):
        raise Unauthenticated("The player token is not valid.")
    try:
        claims = json.loads(_unb64(payload))
        return str(claims["op"]), str(claims["ply"]), int(claims["exp"])
    except (ValueError, KeyError, TypeError):
        raise Unauthenticated("The player token is not valid.") from None


def token_expiry(now: datetime, ttl_seconds: int) -> datetime:
    return (now + timedelta(seconds=ttl_seconds)).replace(microsecond=0)


def require_operator(principal: Principal) -> str:
    """The operator id, for endpoints only an operator may call.

    :raises Forbidden: for a player token.
    """
    if not principal.is_operator:
        raise Forbidden("This operation needs an operator API key.")
    return principal.operator_id


def authorize_player(session: Session, principal: Principal, player_id: str) -> Player:
    """The player ``player_id`` if ``principal`` may act on it.

    :raises NotFound: when the player does not exist or belongs to another operator.
    :raises Forbidden: when a player token names another player of the same operator.
    """
    player = session.get(Player, player_id)
    if player is None or player.operator_id != principal.operator_id:
        raise NotFound(f"No player {player_id!r}.")
    if principal.player_id is not None and principal.player_id != player_id:
        raise Forbidden("A player token may only act on its own player.")
    return player


def load_players(session: Session, player_ids: Iterable[str]) -> dict[str, Player]:
    """The players ``player_ids`` (those that exist), from the session where it holds them
    and the others in one read. The caller keeps the answer while it needs them in the
    session: its identity map keeps only the objects something refers to."""
    found: dict[str, Player] = {}
    missing: list[str] = []
    for player_id in player_ids:
        held = session.identity_map.get(identity_key(Player, player_id))
        if isinstance(held, Player):
            found[player_id] = held
        else:
            missing.append(player_id)
    if missing:
        found.update(
            (p.id, p) for p in session.scalars(select(Player).where(Player.id.in_(missing)))
        )
    return found


def operator_exists(session: Session, operator_id: str) -> bool:
    return session.get(Operator, operator_id) is not None
