"""PostgreSQL: a cashier batch locks no account after its first statement (issue 3).

``cashier_post_batch()`` (0012) locks every account its requests may move in id order, then
runs ``cashier_post()`` for each request, which locks its player's two accounts again. An
account committed between those statements (a first movement creates accounts in a
transaction of its own, ``service.ledger.store.lock_accounts``) was invisible to the first
and is locked by the second, after accounts with higher ids: out of id order, so the batch
could close a deadlock cycle with an ordinary movement. Now the first statement also names
the requests whose two accounts it locked, and only those run ``cashier_post()``; any other
answers ``fallback`` (written nothing) and goes to the ordinary path, as a request whose
accounts do not exist already did.

Revision ID: 0013
Revises: 0012
"""

from __future__ import annotations

from alembic import op

from service.db.migrations import earlier

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

CASHIER_POST_BATCH = r"""
CREATE OR REPLACE FUNCTION cashier_post_batch(
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
DECLARE
    v_ready text[];  -- 'key hash|player|currency' of the requests whose two accounts are locked
BEGIN
    -- Every account a request may move (its player's available and clearing accounts, under
    -- its key's operator), locked in id order before any request runs; no request locks
    -- another afterwards.
    SELECT coalesce(array_agg(r.request), '{}') INTO v_ready
      FROM (SELECT l.key_hash || '|' || l.player_id || '|' || l.currency AS request
              FROM (SELECT m.key_hash, m.player_id, m.currency
                      FROM ledger_accounts a
                      JOIN (SELECT DISTINCT r.key_hash, k.operator_id, r.player_id, r.currency
                              FROM unnest(p_key_hashes, p_player_ids, p_currencies)
                                   AS r (key_hash, player_id, currency)
                              JOIN api_keys k
                                ON k.key_hash = r.key_hash AND k.revoked_at IS NULL) AS m
                        ON a.key IN (
                           'player_available:' || m.operator_id || ':' || m.player_id || ':-:'
                               || m.currency,
                           'operator_clearing:' || m.operator_id || ':' || m.player_id || ':-:'
                               || m.currency)
                     ORDER BY a.id
                       FOR UPDATE OF a) AS l
             GROUP BY l.key_hash, l.player_id, l.currency
            HAVING count(*) = 2) AS r;
    FOR i IN 1..cardinality(p_kinds) LOOP
        IF p_key_hashes[i] || '|' || p_player_ids[i] || '|' || p_currencies[i] = ANY (v_ready)
        THEN
            RETURN QUERY SELECT c.outcome, c.status, c.body FROM cashier_post(
                p_kinds[i], p_key_hashes[i], p_idempotency_keys[i], p_request_hashes[i],
                p_player_ids[i], p_currencies[i], p_amounts[i], p_external_references[i],
                p_fingerprints[i], p_now[i], p_retention_seconds, p_transaction_ids[i],
                p_entry_ids[2 * i - 1:2 * i], p_created_at[i]) AS c;
        ELSE
            RETURN QUERY SELECT 'fallback'::text, NULL::integer, NULL::text;
        END IF;
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
    op.execute(earlier.function(
        earlier.revision("0012_cashier_batches.py").CASHIER_POST_BATCH, "cashier_post_batch"))
