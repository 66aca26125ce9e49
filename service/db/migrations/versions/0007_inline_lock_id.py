"""PostgreSQL: ``gin_idempotency_lock_id()`` declared STABLE, so that it is inlined.

Migration 0006 declared it IMMUTABLE, but ``convert_to()`` in its body is STABLE, and
PostgreSQL inlines a SQL function only when the body is no more volatile than the function
says: every ``cashier_post()`` call then ran it as a separate SQL function, parsed and planned
afresh (about 70 us of the call's 0.55 ms). Declared STABLE (what it is), it is inlined into
the plan that PL/pgSQL caches. Same arguments, same result.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

_BODY = r"""
CREATE OR REPLACE FUNCTION gin_idempotency_lock_id(p_operator_id text, p_key text)
RETURNS bigint
LANGUAGE sql {volatility} STRICT PARALLEL SAFE AS $$
    SELECT ('x' || encode(substring(sha256(
        convert_to('idempotency', 'UTF8') || '\x00'::bytea || convert_to(p_operator_id, 'UTF8')
        || '\x00'::bytea || convert_to(p_key, 'UTF8')) FROM 1 FOR 8), 'hex'))::bit(64)::bigint
$$
"""


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(_BODY.format(volatility="STABLE"))


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(_BODY.format(volatility="IMMUTABLE"))
