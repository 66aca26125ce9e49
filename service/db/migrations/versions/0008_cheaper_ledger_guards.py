"""PostgreSQL: the ledger's guards of 0001 in constant time and with fewer queries (issue 3).

Two problems with 0001's triggers, found measuring deposits:

- **A look-up that grew with the account's history.** The entry check looked up the
  previous entry, and the account head check the newest one, by ``(account_id,
  account_version)``. PL/pgSQL plans those queries once per connection, typically while the
  table is small and unanalysed; the planner then found ``ix_ledger_entries_account_id
  (account_id, seq)`` as cheap as the unique ``(account_id, account_version)`` index and kept
  the plan that scans every entry of the account and filters on the version. A deposit's
  database CPU rose by about 30 us per thousand transactions of a 50-player ledger (670 us
  to 1,120 us over 14,000 deposits), and would have kept rising with each player's history.
  Both now read "the account's newest entry" (``ORDER BY seq DESC LIMIT 1``), which only
  ``(account_id, seq)`` answers directly: one index probe however long the history, whatever
  the statistics. The newest entry must then be the previous version (so the chain is
  appended in order) and the head must point at it.
- **The same three queries for every entry.** The balance check was a deferred trigger
  fired once per *entry* at commit, each time counting the transaction's entries, reading
  its declared count and summing per currency.

The guarantees, now:

- ``ledger_entries_continue_account`` (BEFORE INSERT, per entry), one query: the account
  exists, in the entry's currency; version 1 starts an account that has no entry yet from
  zero and the genesis hash, a later version follows the account's newest entry (its version
  + 1, its balance, its hash); a player or house account never goes below zero; the entry's
  journal transaction exists and does not already hold its declared number of entries. A
  committed transaction always holds exactly that number (below), so no entry can be added
  to it later.
- ``ledger_transactions_balanced`` (deferred to commit, once per journal transaction): the
  transaction holds its declared number (>= 2) of entries, summing to zero per currency, in
  one query. A transaction row written without its entries cannot commit either.
- ``ledger_accounts_match_head`` (BEFORE UPDATE, per account): identity immutable (the id
  too, now), balance and head hash equal to those of the account's newest entry, whose
  version is the account's entry count.

The messages are those of 0001. Statement-level triggers with transition tables were tried
first and were slower: PL/pgSQL plans a query over a transition table again on every call.
SQLite keeps its row triggers of 0001.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

from alembic import op

from service.db.migrations import earlier

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
END $$
"""

HEAD_CHECK = r"""
CREATE OR REPLACE FUNCTION ledger_account_matches_head() RETURNS trigger
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

def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP TRIGGER ledger_entries_balanced ON ledger_entries")
    op.execute(ENTRY_CHECK)
    op.execute(HEAD_CHECK)
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
    guards = earlier.revision("0001_wallets_and_ledger.py").PG_GUARDS
    op.execute(earlier.function(guards, "ledger_entry_continues_account"))
    op.execute(earlier.function(guards, "ledger_account_matches_head"))
    op.execute(
        "CREATE CONSTRAINT TRIGGER ledger_entries_balanced AFTER INSERT ON ledger_entries"
        " DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION"
        " ledger_transaction_balanced()"
    )
