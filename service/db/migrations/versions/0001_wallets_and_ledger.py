"""Wallets and ledger: operators, API keys, players, limits, rates, the journal, idempotency.

Beside the tables this revision installs the ledger's database guards: append-only triggers
(PostgreSQL and SQLite), a running-balance check on every entry, and on PostgreSQL a deferred
constraint trigger that refuses to commit an unbalanced transaction.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "operators",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_operators")),
    )
    op.create_table(
        "api_keys",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("operator_id", sa.String(length=40), nullable=False),
        sa.Column("key_hash", sa.String(length=64), nullable=False),
        sa.Column("prefix", sa.String(length=16), nullable=False),
        sa.Column("label", sa.String(length=255), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["operator_id"], ["operators.id"], name=op.f("fk_api_keys_operator_id_operators")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_keys")),
        sa.UniqueConstraint("key_hash", name=op.f("uq_api_keys_key_hash")),
    )
    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_api_keys_operator_id"), ["operator_id"], unique=False)

    op.create_table(
        "exchange_rates",
        sa.Column("operator_id", sa.String(length=40), nullable=False),
        sa.Column("base", sa.String(length=3), nullable=False),
        sa.Column("quote", sa.String(length=3), nullable=False),
        sa.Column("rate", sa.String(length=40), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["operator_id"], ["operators.id"], name=op.f("fk_exchange_rates_operator_id_operators")
        ),
        sa.PrimaryKeyConstraint("operator_id", "base", "quote", name=op.f("pk_exchange_rates")),
    )
    op.create_table(
        "idempotency_keys",
        sa.Column("operator_id", sa.String(length=40), nullable=False),
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("request_hash", sa.String(length=64), nullable=False),
        sa.Column("state", sa.String(length=12), nullable=False),
        sa.Column("locked_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("response_status", sa.Integer(), nullable=True),
        sa.Column("response_body", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "state IN ('in_flight', 'complete')", name=op.f("ck_idempotency_keys_state")
        ),
        sa.ForeignKeyConstraint(
            ["operator_id"],
            ["operators.id"],
            name=op.f("fk_idempotency_keys_operator_id_operators"),
        ),
        sa.PrimaryKeyConstraint("operator_id", "key", name=op.f("pk_idempotency_keys")),
    )
    with op.batch_alter_table("idempotency_keys", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_idempotency_keys_expires_at"), ["expires_at"], unique=False
        )

    op.create_table(
        "players",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("operator_id", sa.String(length=40), nullable=False),
        sa.Column("external_id", sa.String(length=255), nullable=False),
        sa.Column("display_name", sa.String(length=255), nullable=False),
        sa.Column("display_currency", sa.String(length=3), nullable=True),
        sa.Column("self_excluded_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["operator_id"], ["operators.id"], name=op.f("fk_players_operator_id_operators")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_players")),
        sa.UniqueConstraint("operator_id", "external_id", name=op.f("uq_players_operator_id")),
    )
    op.create_table(
        "deposit_limits",
        sa.Column("player_id", sa.String(length=40), nullable=False),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("period", sa.String(length=8), nullable=False),
        sa.Column("amount", sa.BigInteger(), nullable=True),
        sa.Column("pending", sa.Boolean(), nullable=False),
        sa.Column("pending_amount", sa.BigInteger(), nullable=True),
        sa.Column("pending_effective_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "period IN ('daily', 'weekly', 'monthly')", name=op.f("ck_deposit_limits_period")
        ),
        sa.CheckConstraint(
            "amount IS NULL OR amount >= 0", name=op.f("ck_deposit_limits_amount_non_negative")
        ),
        sa.CheckConstraint(
            "pending_amount IS NULL OR pending_amount >= 0",
            name=op.f("ck_deposit_limits_pending_non_negative"),
        ),
        sa.ForeignKeyConstraint(
            ["player_id"], ["players.id"], name=op.f("fk_deposit_limits_player_id_players")
        ),
        sa.PrimaryKeyConstraint("player_id", "currency", "period", name=op.f("pk_deposit_limits")),
    )
    op.create_table(
        "ledger_accounts",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("key", sa.String(length=200), nullable=False),
        sa.Column("operator_id", sa.String(length=40), nullable=False),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("player_id", sa.String(length=40), nullable=True),
        sa.Column("match_ref", sa.String(length=64), nullable=True),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("balance", sa.BigInteger(), nullable=False),
        sa.Column("entry_count", sa.BigInteger(), nullable=False),
        sa.Column("last_hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "kind = 'operator_clearing' OR balance >= 0",
            name=op.f("ck_ledger_accounts_balance_non_negative"),
        ),
        sa.CheckConstraint(
            "kind IN ('player_available', 'player_escrow', 'house_fee', 'operator_clearing')",
            name=op.f("ck_ledger_accounts_kind"),
        ),
        sa.CheckConstraint(
            "entry_count >= 0", name=op.f("ck_ledger_accounts_entry_count_non_negative")
        ),
        sa.ForeignKeyConstraint(
            ["operator_id"], ["operators.id"], name=op.f("fk_ledger_accounts_operator_id_operators")
        ),
        sa.ForeignKeyConstraint(
            ["player_id"], ["players.id"], name=op.f("fk_ledger_accounts_player_id_players")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ledger_accounts")),
        sa.UniqueConstraint("key", name=op.f("uq_ledger_accounts_key")),
    )
    with op.batch_alter_table("ledger_accounts", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_ledger_accounts_player_id"), ["player_id", "currency"], unique=False
        )

    op.create_table(
        "ledger_transactions",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("operator_id", sa.String(length=40), nullable=False),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("idempotency_key", sa.String(length=255), nullable=True),
        sa.Column("fingerprint", sa.String(length=64), nullable=False),
        sa.Column("player_id", sa.String(length=40), nullable=True),
        sa.Column("match_ref", sa.String(length=64), nullable=True),
        sa.Column("external_reference", sa.String(length=255), nullable=True),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("amount", sa.BigInteger(), nullable=False),
        sa.Column("entry_count", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("amount > 0", name=op.f("ck_ledger_transactions_amount_positive")),
        sa.CheckConstraint(
            "entry_count >= 2", name=op.f("ck_ledger_transactions_two_or_more_entries")
        ),
        sa.ForeignKeyConstraint(
            ["operator_id"],
            ["operators.id"],
            name=op.f("fk_ledger_transactions_operator_id_operators"),
        ),
        sa.ForeignKeyConstraint(
            ["player_id"], ["players.id"], name=op.f("fk_ledger_transactions_player_id_players")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ledger_transactions")),
        sa.UniqueConstraint(
            "operator_id", "idempotency_key", name=op.f("uq_ledger_transactions_operator_id")
        ),
    )
    with op.batch_alter_table("ledger_transactions", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_ledger_transactions_match_ref"), ["match_ref"], unique=False
        )

    op.create_table(
        "ledger_entries",
        sa.Column(
            "seq",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("transaction_id", sa.String(length=40), nullable=False),
        sa.Column(
            "account_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False
        ),
        sa.Column("account_version", sa.BigInteger(), nullable=False),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("amount", sa.BigInteger(), nullable=False),
        sa.Column("balance_after", sa.BigInteger(), nullable=False),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("prev_hash", sa.String(length=64), nullable=False),
        sa.Column("hash", sa.String(length=64), nullable=False),
        sa.CheckConstraint(
            "account_version >= 1", name=op.f("ck_ledger_entries_account_version_positive")
        ),
        sa.CheckConstraint("amount <> 0", name=op.f("ck_ledger_entries_amount_non_zero")),
        sa.ForeignKeyConstraint(
            ["account_id"],
            ["ledger_accounts.id"],
            name=op.f("fk_ledger_entries_account_id_ledger_accounts"),
        ),
        sa.ForeignKeyConstraint(
            ["transaction_id"],
            ["ledger_transactions.id"],
            name=op.f("fk_ledger_entries_transaction_id_ledger_transactions"),
        ),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_ledger_entries")),
        sa.UniqueConstraint(
            "account_id", "account_version", name=op.f("uq_ledger_entries_account_id")
        ),
        sa.UniqueConstraint("id", name=op.f("uq_ledger_entries_id")),
    )
    with op.batch_alter_table("ledger_entries", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_ledger_entries_account_id"), ["account_id", "seq"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_ledger_entries_transaction_id"), ["transaction_id"], unique=False
        )

    _install_guards()


def downgrade() -> None:
    _drop_guards()
    with op.batch_alter_table("ledger_entries", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_ledger_entries_transaction_id"))
        batch_op.drop_index(batch_op.f("ix_ledger_entries_account_id"))

    op.drop_table("ledger_entries")
    with op.batch_alter_table("ledger_transactions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_ledger_transactions_match_ref"))

    op.drop_table("ledger_transactions")
    with op.batch_alter_table("ledger_accounts", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_ledger_accounts_player_id"))

    op.drop_table("ledger_accounts")
    op.drop_table("deposit_limits")
    op.drop_table("players")
    with op.batch_alter_table("idempotency_keys", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_idempotency_keys_expires_at"))

    op.drop_table("idempotency_keys")
    op.drop_table("exchange_rates")
    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_api_keys_operator_id"))

    op.drop_table("api_keys")
    op.drop_table("operators")


PG_GUARDS = [
    """
    CREATE FUNCTION ledger_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        RAISE EXCEPTION 'ledger rows are append-only: % on %', TG_OP, TG_TABLE_NAME
            USING ERRCODE = 'restrict_violation';
    END $$
    """,
    """
    CREATE TRIGGER ledger_entries_append_only BEFORE UPDATE OR DELETE ON ledger_entries
    FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change()
    """,
    """
    CREATE TRIGGER ledger_transactions_append_only BEFORE UPDATE OR DELETE ON ledger_transactions
    FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change()
    """,
    """
    CREATE TRIGGER ledger_accounts_no_delete BEFORE DELETE ON ledger_accounts
    FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change()
    """,
    # Each entry continues its account's chain: next version, running balance, previous hash,
    # and never a negative balance on a player or house account.
    """
    CREATE FUNCTION ledger_entry_continues_account() RETURNS trigger LANGUAGE plpgsql AS $$
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
    """,
    """
    CREATE TRIGGER ledger_entries_continue_account BEFORE INSERT ON ledger_entries
    FOR EACH ROW EXECUTE FUNCTION ledger_entry_continues_account()
    """,
    # An account's balance and head hash always equal those of its newest entry.
    """
    CREATE FUNCTION ledger_account_matches_head() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
        head ledger_entries%ROWTYPE;
    BEGIN
        IF NEW.key <> OLD.key OR NEW.kind <> OLD.kind OR NEW.currency <> OLD.currency
           OR NEW.operator_id <> OLD.operator_id THEN
            RAISE EXCEPTION 'account % identity is immutable', OLD.key
                USING ERRCODE = 'restrict_violation';
        END IF;
        SELECT * INTO head FROM ledger_entries
         WHERE account_id = NEW.id AND account_version = NEW.entry_count;
        IF NOT FOUND OR head.balance_after <> NEW.balance OR head.hash <> NEW.last_hash THEN
            RAISE EXCEPTION 'account % balance does not match its newest entry', NEW.key
                USING ERRCODE = 'check_violation';
        END IF;
        RETURN NEW;
    END $$
    """,
    """
    CREATE TRIGGER ledger_accounts_match_head BEFORE UPDATE ON ledger_accounts
    FOR EACH ROW EXECUTE FUNCTION ledger_account_matches_head()
    """,
    # At commit: every transaction has its declared number (>= 2) of entries, summing to zero
    # per currency.
    """
    CREATE FUNCTION ledger_transaction_balanced() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
        found_count integer;
        expected integer;
        bad record;
    BEGIN
        SELECT count(*) INTO found_count FROM ledger_entries
         WHERE transaction_id = NEW.transaction_id;
        SELECT entry_count INTO expected FROM ledger_transactions WHERE id = NEW.transaction_id;
        IF found_count < 2 OR found_count <> expected THEN
            RAISE EXCEPTION 'transaction % has % entries, declared %', NEW.transaction_id,
                found_count, expected USING ERRCODE = 'check_violation';
        END IF;
        SELECT currency, sum(amount) AS total INTO bad FROM ledger_entries
         WHERE transaction_id = NEW.transaction_id GROUP BY currency HAVING sum(amount) <> 0
         LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION 'transaction % is unbalanced in %: %', NEW.transaction_id,
                bad.currency, bad.total USING ERRCODE = 'check_violation';
        END IF;
        RETURN NULL;
    END $$
    """,
    """
    CREATE CONSTRAINT TRIGGER ledger_entries_balanced AFTER INSERT ON ledger_entries
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ledger_transaction_balanced()
    """,
]

PG_DROP = [
    "DROP TRIGGER IF EXISTS ledger_entries_balanced ON ledger_entries",
    "DROP FUNCTION IF EXISTS ledger_transaction_balanced()",
    "DROP TRIGGER IF EXISTS ledger_accounts_match_head ON ledger_accounts",
    "DROP FUNCTION IF EXISTS ledger_account_matches_head()",
    "DROP TRIGGER IF EXISTS ledger_entries_continue_account ON ledger_entries",
    "DROP FUNCTION IF EXISTS ledger_entry_continues_account()",
    "DROP TRIGGER IF EXISTS ledger_accounts_no_delete ON ledger_accounts",
    "DROP TRIGGER IF EXISTS ledger_transactions_append_only ON ledger_transactions",
    "DROP TRIGGER IF EXISTS ledger_entries_append_only ON ledger_entries",
    "DROP FUNCTION IF EXISTS ledger_refuse_change()",
]

SQLITE_GUARDS = [
    *(
        f"""
        CREATE TRIGGER {table}_no_{op_name.lower()} BEFORE {op_name} ON {table}
        BEGIN SELECT RAISE(ABORT, 'ledger rows are append-only'); END
        """
        for table in ("ledger_entries", "ledger_transactions")
        for op_name in ("UPDATE", "DELETE")
    ),
    """
    CREATE TRIGGER ledger_accounts_no_delete BEFORE DELETE ON ledger_accounts
    BEGIN SELECT RAISE(ABORT, 'ledger rows are append-only'); END
    """,
    """
    CREATE TRIGGER ledger_entries_continue_account BEFORE INSERT ON ledger_entries
    WHEN NEW.balance_after <> NEW.amount + COALESCE((
        SELECT balance_after FROM ledger_entries
         WHERE account_id = NEW.account_id AND account_version = NEW.account_version - 1), 0)
      OR (NEW.account_version > 1 AND NOT EXISTS (
        SELECT 1 FROM ledger_entries
         WHERE account_id = NEW.account_id AND account_version = NEW.account_version - 1))
    BEGIN SELECT RAISE(ABORT, 'entry does not continue its account'); END
    """,
]

SQLITE_DROP = [
    "DROP TRIGGER IF EXISTS ledger_entries_continue_account",
    "DROP TRIGGER IF EXISTS ledger_accounts_no_delete",
    *(
        f"DROP TRIGGER IF EXISTS {table}_no_{op_name}"
        for table in ("ledger_entries", "ledger_transactions")
        for op_name in ("update", "delete")
    ),
]


def _install_guards() -> None:
    dialect = op.get_bind().dialect.name
    for statement in PG_GUARDS if dialect == "postgresql" else SQLITE_GUARDS:
        op.execute(statement)


def _drop_guards() -> None:
    dialect = op.get_bind().dialect.name
    for statement in PG_DROP if dialect == "postgresql" else SQLITE_DROP:
        op.execute(statement)
