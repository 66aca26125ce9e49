"""PostgreSQL: the ledger's guards of 0001 with fewer queries (issue 3, speed).

Revision 0001 checked each entry with a BEFORE INSERT row trigger of two look-ups (its account,
then its account's previous entry), and each journal transaction with a deferred trigger
fired once per *entry* at commit, running the same three queries (count, declared count,
sums per currency) for every entry of the transaction. A deposit (two entries) thus ran ten
trigger queries; the triggers took about a quarter of its database CPU.

The same guarantees, now:

- ``ledger_entries_continue_account`` (BEFORE INSERT, per entry) reads everything it checks
  in one query: the account (it exists, in the entry's currency; a player or house account
  never goes below zero), the previous entry (version 1 starts from zero and the genesis
  hash, a later version continues the previous entry's balance and hash), and the entry's
  journal transaction, which must exist and may not already hold its declared number of
  entries. A committed transaction always holds exactly that number (below), so no entry can
  be added to it later.
- ``ledger_transactions_balanced`` (deferred to commit, once per journal transaction rather
  than once per entry): the transaction holds its declared number (>= 2) of entries, summing
  to zero per currency, in one query. A transaction row written without its entries cannot
  commit either.
- The account head check (``ledger_accounts_match_head``) is unchanged.

The messages are those of 0001. Statement-level triggers with transition tables were tried
first and were slower: PL/pgSQL plans a query over a transition table again on every call.
SQLite keeps its row triggers of 0001.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

ENTRY_CHECK = r"""
CREATE OR REPLACE FUNCTION ledger_entry_continues_account() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    seen record;
BEGIN
    SELECT a.key, a.kind, a.currency, p.seq IS NOT NULL AS has_previous,
           p.balance_after AS previous_balance, p.hash AS previous_hash,
           t.entry_count AS declared,
           (SELECT count(*) FROM ledger_entries e
             WHERE e.transaction_id = NEW.transaction_id) AS written
      INTO seen
      FROM ledger_accounts a
      LEFT JOIN ledger_entries p
             ON p.account_id = a.id AND p.account_version = NEW.account_version - 1
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
        IF NEW.balance_after <> NEW.amount OR NEW.prev_hash <> repeat('0', 64) THEN
            RAISE EXCEPTION 'entry % does not start account %', NEW.id, seen.key
                USING ERRCODE = 'check_violation';
        END IF;
    ELSIF NOT seen.has_previous OR NEW.balance_after <> seen.previous_balance + NEW.amount
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
END $$
"""

TRANSACTION_CHECK = r"""
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
END $$
"""

# 0001's entry check, put back by the downgrade.
ENTRY_CHECK_0001 = r"""
CREATE OR REPLACE FUNCTION ledger_entry_continues_account() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    acct ledger_accounts%ROWTYPE;
    prev ledger_entries%ROWTYPE;
BEGIN
    SELECT * INTO acct FROM ledger_accounts WHERE id = NEW.account_id;
    IF NEW.currency <> acct.currency THEN
        RAISE EXCEPTION 'entry % currency % on a % account', NEW.id, NEW.currency,
            acct.currency USING ERRCODE = 'check_violation';
    END IF;
    IF NEW.account_version = 1 THEN
        IF NEW.balance_after <> NEW.amount OR NEW.prev_hash <> repeat('0', 64) THEN
            RAISE EXCEPTION 'entry % does not start account %', NEW.id, acct.key
                USING ERRCODE = 'check_violation';
        END IF;
    ELSE
        SELECT * INTO prev FROM ledger_entries
         WHERE account_id = NEW.account_id AND account_version = NEW.account_version - 1;
        IF NOT FOUND OR NEW.balance_after <> prev.balance_after + NEW.amount
           OR NEW.prev_hash <> prev.hash THEN
            RAISE EXCEPTION 'entry % does not continue account %', NEW.id, acct.key
                USING ERRCODE = 'check_violation';
        END IF;
    END IF;
    IF acct.kind <> 'operator_clearing' AND NEW.balance_after < 0 THEN
        RAISE EXCEPTION 'entry % takes account % below zero', NEW.id, acct.key
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END $$
"""


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP TRIGGER ledger_entries_balanced ON ledger_entries")
    op.execute(ENTRY_CHECK)
    op.execute(TRANSACTION_CHECK)
    op.execute(
        "CREATE CONSTRAINT TRIGGER ledger_transactions_balanced"
        " AFTER INSERT ON ledger_transactions DEFERRABLE INITIALLY DEFERRED"
        " FOR EACH ROW EXECUTE FUNCTION ledger_transaction_complete()"
    )


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP TRIGGER ledger_transactions_balanced ON ledger_transactions")
    op.execute("DROP FUNCTION ledger_transaction_complete()")
    op.execute(ENTRY_CHECK_0001)
    op.execute(
        "CREATE CONSTRAINT TRIGGER ledger_entries_balanced AFTER INSERT ON ledger_entries"
        " DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION"
        " ledger_transaction_balanced()"
    )
