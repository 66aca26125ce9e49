-- Guards that refuse a bad row on SQLite (the PostgreSQL guards as far as SQLite can
-- express them; docs/engine.md lists the differences). Read by revision 0001.

-- The journal is append-only, and an account is never deleted.

CREATE TRIGGER ledger_entries_no_update BEFORE UPDATE ON ledger_entries
BEGIN SELECT RAISE(ABORT, 'ledger rows are append-only'); END;

CREATE TRIGGER ledger_entries_no_delete BEFORE DELETE ON ledger_entries
BEGIN SELECT RAISE(ABORT, 'ledger rows are append-only'); END;

CREATE TRIGGER ledger_transactions_no_update BEFORE UPDATE ON ledger_transactions
BEGIN SELECT RAISE(ABORT, 'ledger rows are append-only'); END;

CREATE TRIGGER ledger_transactions_no_delete BEFORE DELETE ON ledger_transactions
BEGIN SELECT RAISE(ABORT, 'ledger rows are append-only'); END;

CREATE TRIGGER ledger_accounts_no_delete BEFORE DELETE ON ledger_accounts
BEGIN SELECT RAISE(ABORT, 'ledger rows are append-only'); END;

-- Each entry continues its account's running balance.

CREATE TRIGGER ledger_entries_continue_account BEFORE INSERT ON ledger_entries
WHEN NEW.balance_after <> NEW.amount + COALESCE((
    SELECT balance_after FROM ledger_entries
     WHERE account_id = NEW.account_id AND account_version = NEW.account_version - 1), 0)
  OR (NEW.account_version > 1 AND NOT EXISTS (
    SELECT 1 FROM ledger_entries
     WHERE account_id = NEW.account_id AND account_version = NEW.account_version - 1))
BEGIN SELECT RAISE(ABORT, 'entry does not continue its account'); END;

-- A match's action log and the settlements are append-only.

CREATE TRIGGER match_actions_no_update BEFORE UPDATE ON match_actions
BEGIN SELECT RAISE(ABORT, 'match actions are append-only'); END;

CREATE TRIGGER match_actions_no_delete BEFORE DELETE ON match_actions
BEGIN SELECT RAISE(ABORT, 'match actions are append-only'); END;

CREATE TRIGGER settlements_no_update BEFORE UPDATE ON settlements
BEGIN SELECT RAISE(ABORT, 'settlements are append-only'); END;

CREATE TRIGGER settlements_no_delete BEFORE DELETE ON settlements
BEGIN SELECT RAISE(ABORT, 'settlements are append-only'); END;
