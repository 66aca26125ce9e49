-- Guards that refuse a bad row on PostgreSQL; they check, they compute nothing.
-- Read by revision 0001 (service/db/migrations/versions/0001_baseline.py).

-- The journal is append-only, and an account is never deleted.

CREATE FUNCTION ledger_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'ledger rows are append-only: % on %', TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'restrict_violation';
END $$;

CREATE TRIGGER ledger_entries_append_only BEFORE UPDATE OR DELETE ON ledger_entries
FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();

CREATE TRIGGER ledger_transactions_append_only BEFORE UPDATE OR DELETE ON ledger_transactions
FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();

CREATE TRIGGER ledger_accounts_no_delete BEFORE DELETE ON ledger_accounts
FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();

-- Each entry continues its account's chain: next version, running balance, previous hash,
-- never a negative balance on a player or house account, and no more entries than its
-- transaction declares.

CREATE FUNCTION ledger_entry_continues_account() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    seen record;
BEGIN
    SELECT a.key, a.kind, a.currency, p.account_version AS previous_version,
           p.balance_after AS previous_balance, p.hash AS previous_hash,
           t.entry_count AS declared,
           (SELECT count(*) FROM ledger_entries e
             WHERE e.transaction_id = NEW.transaction_id) AS written
      INTO seen
      FROM ledger_accounts a
      LEFT JOIN LATERAL (  -- the account's newest entry
            SELECT e.account_version, e.balance_after, e.hash FROM ledger_entries e
             WHERE e.account_id = a.id ORDER BY e.seq DESC LIMIT 1) p ON true
      LEFT JOIN ledger_transactions t ON t.id = NEW.transaction_id
     WHERE a.id = NEW.account_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'entry % names no account', NEW.id
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    IF NEW.currency <> seen.currency THEN
        RAISE EXCEPTION 'entry % currency % on a % account', NEW.id, NEW.currency,
            seen.currency USING ERRCODE = 'check_violation';
    END IF;
    IF NEW.account_version = 1 THEN
        IF NEW.balance_after <> NEW.amount OR NEW.prev_hash <> repeat('0', 64)
           OR seen.previous_version IS NOT NULL THEN
            RAISE EXCEPTION 'entry % does not start account %', NEW.id, seen.key
                USING ERRCODE = 'check_violation';
        END IF;
    ELSIF seen.previous_version IS DISTINCT FROM NEW.account_version - 1
          OR NEW.balance_after <> seen.previous_balance + NEW.amount
          OR NEW.prev_hash <> seen.previous_hash THEN
        RAISE EXCEPTION 'entry % does not continue account %', NEW.id, seen.key
            USING ERRCODE = 'check_violation';
    END IF;
    IF seen.kind <> 'operator_clearing' AND NEW.balance_after < 0 THEN
        RAISE EXCEPTION 'entry % takes account % below zero', NEW.id, seen.key
            USING ERRCODE = 'check_violation';
    END IF;
    IF seen.declared IS NULL THEN
        RAISE EXCEPTION 'entry % names no journal transaction %', NEW.id, NEW.transaction_id
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    IF seen.written >= seen.declared THEN
        RAISE EXCEPTION 'transaction % has % entries, declared %: entry % is one too many',
            NEW.transaction_id, seen.written, seen.declared, NEW.id
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER ledger_entries_continue_account BEFORE INSERT ON ledger_entries
FOR EACH ROW EXECUTE FUNCTION ledger_entry_continues_account();

-- An account's identity never changes, and its balance and head hash are its newest entry's.

CREATE FUNCTION ledger_account_matches_head() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    head record;
BEGIN
    IF NEW.id <> OLD.id OR NEW.key <> OLD.key OR NEW.kind <> OLD.kind
       OR NEW.currency <> OLD.currency OR NEW.operator_id <> OLD.operator_id THEN
        RAISE EXCEPTION 'account % identity is immutable', OLD.key
            USING ERRCODE = 'restrict_violation';
    END IF;
    SELECT e.account_version, e.balance_after, e.hash INTO head FROM ledger_entries e
     WHERE e.account_id = NEW.id ORDER BY e.seq DESC LIMIT 1;  -- the newest entry
    IF NOT FOUND OR head.account_version <> NEW.entry_count
       OR head.balance_after <> NEW.balance OR head.hash <> NEW.last_hash THEN
        RAISE EXCEPTION 'account % balance does not match its newest entry', NEW.key
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER ledger_accounts_match_head BEFORE UPDATE ON ledger_accounts
FOR EACH ROW EXECUTE FUNCTION ledger_account_matches_head();

-- At commit: every transaction has its declared number (>= 2) of entries, summing to zero
-- per currency.

CREATE FUNCTION ledger_transaction_complete() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    seen record;
BEGIN
    SELECT coalesce(sum(g.entries), 0) AS entries,
           (array_agg(g.currency) FILTER (WHERE g.total <> 0))[1] AS currency,
           (array_agg(g.total) FILTER (WHERE g.total <> 0))[1] AS total
      INTO seen
      FROM (SELECT e.currency, count(*) AS entries, sum(e.amount) AS total
              FROM ledger_entries e WHERE e.transaction_id = NEW.id
             GROUP BY e.currency) g;
    IF seen.entries < 2 OR seen.entries <> NEW.entry_count THEN
        RAISE EXCEPTION 'transaction % has % entries, declared %', NEW.id, seen.entries,
            NEW.entry_count USING ERRCODE = 'check_violation';
    END IF;
    IF seen.currency IS NOT NULL THEN
        RAISE EXCEPTION 'transaction % is unbalanced in %: %', NEW.id, seen.currency,
            seen.total USING ERRCODE = 'check_violation';
    END IF;
    RETURN NULL;
END $$;

CREATE CONSTRAINT TRIGGER ledger_transactions_balanced AFTER INSERT ON ledger_transactions
DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ledger_transaction_complete();

-- A match's action log and the settlements are append-only.

CREATE FUNCTION match_actions_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'match actions are append-only: % on %', TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'restrict_violation';
END $$;

CREATE TRIGGER match_actions_append_only BEFORE UPDATE OR DELETE ON match_actions
FOR EACH ROW EXECUTE FUNCTION match_actions_refuse_change();

CREATE FUNCTION settlements_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'settlements are append-only: % on %', TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'restrict_violation';
END $$;

CREATE TRIGGER settlements_append_only BEFORE UPDATE OR DELETE ON settlements
FOR EACH ROW EXECUTE FUNCTION settlements_refuse_change();
