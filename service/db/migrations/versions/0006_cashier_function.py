"""PostgreSQL: a deposit or withdrawal in one database call (issue 3, speed).

``cashier_post()`` does, in one statement and so one transaction, what the HTTP path does in
about twelve round trips for the common case: authenticate the API key, take the idempotency
key's lock and look it up, check the player, lock both accounts in id order, append the
journal transaction and its two hash-chained entries, move the account heads, read the wallet
and store the answer under the idempotency key. Every uncommon case (no such key or player, a
stored answer that is not a plain replay, a self-excluded player, a deposit limit, a display
currency, accounts not created yet, too little money, a ledger key already used) returns
``fallback`` having written nothing, and the caller answers through the ordinary path, which
owns every refusal. The triggers of 0001 check the entries and heads it writes like any
others, and ``service.ledger.store.verify`` checks their hashes.

``gin_idempotency_lock_id()`` is ``service.usecases.idempotency.lock_id`` in SQL, so both
paths take the same advisory lock for a key.

SQLite has neither; there the ordinary path serves every request.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

LOCK_ID = r"""
CREATE FUNCTION gin_idempotency_lock_id(p_operator_id text, p_key text) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT ('x' || encode(substring(sha256(
        convert_to('idempotency', 'UTF8') || '\x00'::bytea || convert_to(p_operator_id, 'UTF8')
        || '\x00'::bytea || convert_to(p_key, 'UTF8')) FROM 1 FOR 8), 'hex'))::bit(64)::bigint
$$
"""

CASHIER_POST = r"""
CREATE FUNCTION cashier_post(
    p_kind text,                 -- 'deposit' (into available) or 'withdrawal' (out of it)
    p_key_hash text,             -- sha256 hex of the operator's API key
    p_idempotency_key text,
    p_request_hash text,         -- idempotency.request_hash of the HTTP request
    p_player_id text,
    p_currency text,
    p_amount bigint,             -- > 0, minor units
    p_external_reference text,
    p_fingerprint text,          -- ledger.store.fingerprint of the movement
    p_now timestamptz,
    p_retention_seconds bigint,  -- how long the idempotency key is kept
    p_transaction_id text,
    p_entry_ids text[],          -- two fresh entry ids, in account id order
    p_created_at text            -- p_now as the API shows it (RFC 3339, whole seconds)
) RETURNS TABLE (outcome text, status integer, body text)
LANGUAGE plpgsql AS $$
DECLARE
    v_sign bigint := CASE p_kind WHEN 'deposit' THEN 1 WHEN 'withdrawal' THEN -1 END;
    v_stamp text := to_char(p_now AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"');
    v_operator_id text;
    v_locked boolean;
    v_plain boolean;
    v_stored record;
    v_available_key text;
    v_clearing_key text;
    v_account ledger_accounts%ROWTYPE;
    v_accounts ledger_accounts[] := '{}';  -- both, in id order
    v_amounts bigint[] := '{}';
    v_balances bigint[] := '{}';
    v_hashes text[] := '{}';
    v_after bigint;
    v_body text;
BEGIN
    IF v_sign IS NULL OR p_amount <= 0 THEN
        RAISE EXCEPTION 'cashier_post: bad kind % or amount %', p_kind, p_amount;
    END IF;
    -- The key, and its idempotency lock tried without waiting (a twin is running: fall back).
    SELECT k.operator_id,
           pg_try_advisory_xact_lock(gin_idempotency_lock_id(k.operator_id, p_idempotency_key))
      INTO v_operator_id, v_locked
      FROM api_keys k WHERE k.key_hash = p_key_hash AND k.revoked_at IS NULL;
    IF NOT FOUND OR NOT v_locked THEN
        RETURN QUERY SELECT 'fallback'::text, NULL::integer, NULL::text; RETURN;
    END IF;
    -- A stored answer, read after the lock (a twin that held it has committed by now).
    SELECT r.request_hash, r.response_status, r.response_body, r.expires_at INTO v_stored
      FROM idempotency_keys r
     WHERE r.operator_id = v_operator_id AND r.key = p_idempotency_key;
    IF FOUND THEN
        IF v_stored.expires_at > p_now AND v_stored.request_hash = p_request_hash THEN
            RETURN QUERY SELECT 'replay'::text, v_stored.response_status, v_stored.response_body;
        ELSE
            RETURN QUERY SELECT 'fallback'::text, NULL::integer, NULL::text;
        END IF;
        RETURN;
    END IF;
    -- The operator's player, with nothing the ordinary path must check or show.
    SELECT p.display_currency IS NULL AND (p_kind <> 'deposit' OR (
               (p.self_excluded_until IS NULL OR p.self_excluded_until <= p_now)
               AND NOT EXISTS (SELECT 1 FROM deposit_limits d
                                WHERE d.player_id = p.id AND d.currency = p_currency)))
      INTO v_plain
      FROM players p WHERE p.id = p_player_id AND p.operator_id = v_operator_id;
    IF NOT FOUND OR NOT v_plain THEN
        RETURN QUERY SELECT 'fallback'::text, NULL::integer, NULL::text; RETURN;
    END IF;

    -- Both accounts, locked in id order as every writer does.
    v_available_key := 'player_available:' || v_operator_id || ':' || p_player_id || ':-:'
        || p_currency;
    v_clearing_key := 'operator_clearing:' || v_operator_id || ':' || p_player_id || ':-:'
        || p_currency;
    FOR v_account IN SELECT * FROM ledger_accounts a
                      WHERE a.key IN (v_available_key, v_clearing_key) ORDER BY a.id FOR UPDATE
    LOOP
        v_accounts := v_accounts || v_account;
        v_amounts := v_amounts || CASE WHEN v_account.key = v_available_key
                                       THEN v_sign * p_amount ELSE -v_sign * p_amount END;
        v_balances := v_balances || (v_account.balance + v_amounts[cardinality(v_amounts)]);
        IF v_account.key = v_available_key THEN
            v_after := v_balances[cardinality(v_balances)];
        END IF;
    END LOOP;
    IF cardinality(v_accounts) < 2 OR v_after < 0 OR EXISTS (
           SELECT 1 FROM ledger_transactions t
            WHERE t.operator_id = v_operator_id AND t.idempotency_key = p_idempotency_key)
    THEN
        RETURN QUERY SELECT 'fallback'::text, NULL::integer, NULL::text; RETURN;
    END IF;

    INSERT INTO ledger_transactions (id, operator_id, kind, idempotency_key, fingerprint,
        player_id, match_ref, external_reference, currency, amount, entry_count, created_at)
    VALUES (p_transaction_id, v_operator_id, p_kind, p_idempotency_key, p_fingerprint,
        p_player_id, NULL, p_external_reference, p_currency, p_amount, 2, p_now);
    FOR i IN 1..2 LOOP  -- service.ledger.chain.entry_hash
        v_hashes := v_hashes || encode(sha256(convert_to(concat_ws('|',
            v_accounts[i].last_hash, p_entry_ids[i], p_transaction_id, v_accounts[i].key,
            v_accounts[i].entry_count + 1, p_currency, v_amounts[i], v_balances[i], p_kind,
            v_stamp), 'UTF8')), 'hex');
    END LOOP;
    INSERT INTO ledger_entries (id, transaction_id, account_id, account_version, currency,
        amount, balance_after, kind, created_at, prev_hash, hash)
    VALUES
        (p_entry_ids[1], p_transaction_id, v_accounts[1].id, v_accounts[1].entry_count + 1,
         p_currency, v_amounts[1], v_balances[1], p_kind, p_now, v_accounts[1].last_hash,
         v_hashes[1]),
        (p_entry_ids[2], p_transaction_id, v_accounts[2].id, v_accounts[2].entry_count + 1,
         p_currency, v_amounts[2], v_balances[2], p_kind, p_now, v_accounts[2].last_hash,
         v_hashes[2]);
    UPDATE ledger_accounts a
       SET balance = v.balance, entry_count = a.entry_count + 1, last_hash = v.hash
      FROM (VALUES (v_accounts[1].id, v_balances[1], v_hashes[1]),
                   (v_accounts[2].id, v_balances[2], v_hashes[2])) AS v (id, balance, hash)
     WHERE a.id = v.id;

    -- The answer: service.api.render.transaction with its wallet, as TransactionOut
    -- serialises it, stored under the key in the same transaction.
    INSERT INTO idempotency_keys (operator_id, key, request_hash, state, locked_at,
        response_status, response_body, created_at, expires_at)
    SELECT v_operator_id, p_idempotency_key, p_request_hash, 'complete', p_now, 201,
        json_build_object(
            'id', p_transaction_id, 'object', 'transaction', 'kind', p_kind,
            'player_id', p_player_id, 'match_id', NULL,
            'amount', json_build_object('amount', p_amount, 'currency', p_currency),
            'external_reference', p_external_reference, 'created_at', p_created_at,
            'wallet', json_build_object(
                'object', 'wallet', 'player_id', p_player_id, 'currency', p_currency,
                'available', json_build_object('amount', v_after, 'currency', p_currency),
                'held', json_build_object('amount', held.amount, 'currency', p_currency),
                'balance', json_build_object('amount', v_after + held.amount,
                                             'currency', p_currency)
            ))::text,
        p_now, p_now + p_retention_seconds * interval '1 second'
      FROM (SELECT coalesce(sum(a.balance), 0) AS amount FROM ledger_accounts a
             WHERE a.player_id = p_player_id AND a.currency = p_currency
               AND a.kind = 'player_escrow') AS held
    RETURNING response_body INTO v_body;
    RETURN QUERY SELECT 'posted'::text, 201, v_body;
END $$
"""


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(LOCK_ID)
    op.execute(CASHIER_POST)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(
        "DROP FUNCTION IF EXISTS cashier_post(text, text, text, text, text, text, bigint, text,"
        " text, timestamptz, bigint, text, text[], text)"
    )
    op.execute("DROP FUNCTION IF EXISTS gin_idempotency_lock_id(text, text)")
