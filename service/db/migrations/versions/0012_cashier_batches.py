"""PostgreSQL: the cashier's deposits and withdrawals posted in batches (issue 3, speed).

``cashier_post_batch()`` runs ``cashier_post()`` (0006, 0010) for each of several requests in
one transaction, and returns their answers in order. Each request is decided exactly as
alone: a request that falls back has written nothing, and the others go on. A batch shares one
call, one commit (one WAL flush) and one connection: a gunicorn worker sends the deposits
that arrive while its previous batch is running as the next one
(``service.api.cashier.Batches``).

Before any request runs, the batch locks every account any of them may move, in id order, as
every writer does: each request then finds its accounts locked already, so two batches, or a
batch and an ordinary transaction, never wait for each other in a cycle. The idempotency locks
are only tried (a twin running elsewhere makes its request fall back), never waited for. Two
requests in one batch with the same idempotency key take the same lock (a transaction holds
its own advisory locks again): the second finds the first's answer and replays it, or falls
back when its body differs.

A database error in any request rolls the whole batch back, and every request in it is then
answered by the ordinary path.

Revision ID: 0012
Revises: 0011
"""

from __future__ import annotations

from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

CASHIER_POST_BATCH = r"""
CREATE FUNCTION cashier_post_batch(
    p_kinds text[],                -- each request's cashier_post() arguments, in order
    p_key_hashes text[],
    p_idempotency_keys text[],
    p_request_hashes text[],
    p_player_ids text[],
    p_currencies text[],
    p_amounts bigint[],
    p_external_references text[],
    p_fingerprints text[],
    p_now timestamptz[],
    p_retention_seconds bigint,
    p_transaction_ids text[],
    p_entry_ids text[],            -- two per request, flattened
    p_created_at text[]
) RETURNS TABLE (outcome text, status integer, body text)
LANGUAGE plpgsql AS $$
BEGIN
    -- Every account a request may move (its player's available and clearing accounts, under
    -- its key's operator), locked in id order before any request runs.
    PERFORM 1
       FROM ledger_accounts a
       JOIN (SELECT DISTINCT k.operator_id, r.player_id, r.currency
               FROM unnest(p_key_hashes, p_player_ids, p_currencies)
                    AS r (key_hash, player_id, currency)
               JOIN api_keys k ON k.key_hash = r.key_hash AND k.revoked_at IS NULL) AS m
         ON a.key IN (
             'player_available:' || m.operator_id || ':' || m.player_id || ':-:' || m.currency,
             'operator_clearing:' || m.operator_id || ':' || m.player_id || ':-:' || m.currency)
      ORDER BY a.id
        FOR UPDATE OF a;
    FOR i IN 1..cardinality(p_kinds) LOOP
        RETURN QUERY SELECT c.outcome, c.status, c.body FROM cashier_post(
            p_kinds[i], p_key_hashes[i], p_idempotency_keys[i], p_request_hashes[i],
            p_player_ids[i], p_currencies[i], p_amounts[i], p_external_references[i],
            p_fingerprints[i], p_now[i], p_retention_seconds, p_transaction_ids[i],
            p_entry_ids[2 * i - 1:2 * i], p_created_at[i]) AS c;
    END LOOP;
END $$
"""


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(CASHIER_POST_BATCH)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(
        "DROP FUNCTION IF EXISTS cashier_post_batch(text[], text[], text[], text[], text[],"
        " text[], bigint[], text[], text[], timestamptz[], bigint, text[], text[], text[])"
    )
