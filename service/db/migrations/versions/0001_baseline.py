"""The baseline schema: every table, index and database guard of the service.

- Operators, their API keys and exchange rates; players, their deposit limits; the idempotency
  keys that make every movement answer once.
- The double-entry ledger: accounts (with their running balance and hash-chain head; a match
  escrow is ``closed_at`` once empty, so a player's held money is the sum of the open ones),
  journal transactions and entries.
- Tables, seats, matches (``settled_at`` marks the settled ones), hands, the append-only action
  log, settlements, events and their webhook endpoints, deliveries and attempts; practice bots.
- Partial indexes for the reads that must not grow with a player's history: deposits in a
  period, a player's open escrows, the matches still to settle.
- Guards (``service/db/sql/0001_postgresql.sql`` and ``0001_sqlite.sql``): append-only journal,
  action log and settlements; each entry continues its account's chain; on PostgreSQL also an
  account's head equals its newest entry and a transaction balances at commit.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from service.db.migrations import sqlfiles

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

TABLES = [
    "operators",
    "api_keys",
    "exchange_rates",
    "idempotency_keys",
    "players",
    "deposit_limits",
    "ledger_accounts",
    "ledger_transactions",
    "ledger_entries",
    "events",
    "game_tables",
    "matches",
    "seats",
    "hands",
    "match_actions",
    "settlements",
    "webhook_endpoints",
    "webhook_deliveries",
    "webhook_attempts",
    "bot_players",
]

# Partial indexes: (name, table, columns, predicate). The predicates are the models' own
# (service.db.models.DEPOSITS_INTO_ACCOUNT, OPEN_ESCROW; service.db.match_models.UNSETTLED).
PARTIAL_INDEXES = [
    (
        "ix_ledger_entries_deposits",
        "ledger_entries",
        ["account_id", "created_at"],
        "kind = 'deposit' AND amount > 0",
    ),
    (
        "ix_ledger_accounts_open_escrows",
        "ledger_accounts",
        ["player_id", "currency"],
        "kind = 'player_escrow' AND closed_at IS NULL",
    ),
    (
        "ix_matches_unsettled",
        "matches",
        ["finished_at"],
        "status IN ('finished', 'void') AND settled_at IS NULL",
    ),
]


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
            BigId,
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
        sa.Column("closed_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint(
            "closed_at IS NULL OR (kind = 'player_escrow' AND balance = 0)",
            name=op.f("ck_ledger_accounts_closed_is_empty"),
        ),
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
            BigId,
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("transaction_id", sa.String(length=40), nullable=False),
        sa.Column("account_id", BigId, nullable=False),
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

    op.create_table(
        "events",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("operator_id", sa.String(length=40), nullable=False),
        sa.Column("type", sa.String(length=40), nullable=False),
        sa.Column("subject_id", sa.String(length=40), nullable=False),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("published_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["operator_id"], ["operators.id"], name=op.f("fk_events_operator_id_operators")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_events")),
    )
    with op.batch_alter_table("events", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_events_operator_id"), ["operator_id"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_events_published_at"), ["published_at", "created_at"], unique=False
        )

    op.create_table(
        "game_tables",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("operator_id", sa.String(length=40), nullable=False),
        sa.Column("match_id", sa.String(length=40), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("format", sa.String(length=20), nullable=False),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("practice", sa.Boolean(), nullable=False),
        sa.Column("private", sa.Boolean(), nullable=False),
        sa.Column("invite_code", sa.String(length=64), nullable=True),
        sa.Column("stake", sa.BigInteger(), nullable=False),
        sa.Column("stake_per_point", sa.BigInteger(), nullable=False),
        sa.Column("min_buyin", sa.BigInteger(), nullable=False),
        sa.Column("max_buyin", sa.BigInteger(), nullable=False),
        sa.Column("settings", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(length=12), nullable=False),
        sa.Column("seats_taken", sa.Integer(), nullable=False),
        sa.Column("fill_deadline", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "status IN ('open', 'playing', 'finished', 'cancelled')",
            name=op.f("ck_game_tables_status"),
        ),
        sa.CheckConstraint("seats_taken BETWEEN 0 AND 2", name=op.f("ck_game_tables_seats_taken")),
        sa.ForeignKeyConstraint(
            ["operator_id"], ["operators.id"], name=op.f("fk_game_tables_operator_id_operators")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_game_tables")),
        sa.UniqueConstraint("match_id", name=op.f("uq_game_tables_match_id")),
    )
    with op.batch_alter_table("game_tables", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_game_tables_operator_id"), ["operator_id", "created_at"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_game_tables_status"), ["status", "format", "currency"], unique=False
        )

    op.create_table(
        "matches",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("table_id", sa.String(length=40), nullable=False),
        sa.Column("operator_id", sa.String(length=40), nullable=False),
        sa.Column("status", sa.String(length=12), nullable=False),
        sa.Column("version", sa.BigInteger(), nullable=False),
        sa.Column("state", sa.JSON(), nullable=True),
        sa.Column("format", sa.String(length=20), nullable=False),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("private", sa.Boolean(), nullable=False),
        sa.Column("seats", sa.JSON(), nullable=True),
        sa.Column("commitment", sa.String(length=64), nullable=True),
        sa.Column("deadline_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("settled_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint(
            "status IN ('waiting', 'playing', 'finished', 'void', 'cancelled')",
            name=op.f("ck_matches_status"),
        ),
        sa.CheckConstraint("version >= 0", name=op.f("ck_matches_version")),
        sa.ForeignKeyConstraint(
            ["operator_id"], ["operators.id"], name=op.f("fk_matches_operator_id_operators")
        ),
        sa.ForeignKeyConstraint(
            ["table_id"], ["game_tables.id"], name=op.f("fk_matches_table_id_game_tables")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_matches")),
        sa.UniqueConstraint("table_id", name=op.f("uq_matches_table_id")),
    )
    with op.batch_alter_table("matches", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_matches_status"), ["status", "deadline_at"], unique=False
        )

    op.create_table(
        "seats",
        sa.Column("table_id", sa.String(length=40), nullable=False),
        sa.Column("seat_no", sa.Integer(), nullable=False),
        sa.Column("player_id", sa.String(length=40), nullable=False),
        sa.Column("escrow", sa.BigInteger(), nullable=False),
        sa.Column("hold_transaction_id", sa.String(length=40), nullable=False),
        sa.Column("client_seed", sa.String(length=256), nullable=False),
        sa.Column("joined_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("escrow > 0", name=op.f("ck_seats_escrow_positive")),
        sa.CheckConstraint("seat_no IN (0, 1)", name=op.f("ck_seats_seat_no")),
        sa.ForeignKeyConstraint(
            ["player_id"], ["players.id"], name=op.f("fk_seats_player_id_players")
        ),
        sa.ForeignKeyConstraint(
            ["table_id"], ["game_tables.id"], name=op.f("fk_seats_table_id_game_tables")
        ),
        sa.PrimaryKeyConstraint("table_id", "seat_no", name=op.f("pk_seats")),
        sa.UniqueConstraint("table_id", "player_id", name=op.f("uq_seats_table_id")),
    )
    op.create_table(
        "hands",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("match_id", sa.String(length=40), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("algorithm", sa.String(length=40), nullable=False),
        sa.Column("commitment", sa.String(length=64), nullable=False),
        sa.Column("server_seed", sa.String(length=64), nullable=False),
        sa.Column("client_seed_1", sa.String(length=256), nullable=False),
        sa.Column("client_seed_2", sa.String(length=256), nullable=False),
        sa.Column("nonce", sa.Integer(), nullable=False),
        sa.Column("dealer", sa.Integer(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("outcome", sa.String(length=12), nullable=True),
        sa.Column("winner_seat", sa.Integer(), nullable=True),
        sa.Column("points", sa.Integer(), nullable=True),
        sa.Column("history", sa.JSON(), nullable=True),
        sa.ForeignKeyConstraint(
            ["match_id"], ["matches.id"], name=op.f("fk_hands_match_id_matches")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_hands")),
        sa.UniqueConstraint("match_id", "number", name=op.f("uq_hands_match_id")),
    )
    op.create_table(
        "match_actions",
        sa.Column(
            "seq",
            BigId,
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("match_id", sa.String(length=40), nullable=False),
        sa.Column("version", sa.BigInteger(), nullable=False),
        sa.Column("hand_number", sa.Integer(), nullable=True),
        sa.Column("actor", sa.String(length=40), nullable=False),
        sa.Column("seat", sa.Integer(), nullable=True),
        sa.Column("action", sa.String(length=200), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["match_id"], ["matches.id"], name=op.f("fk_match_actions_match_id_matches")
        ),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_match_actions")),
        sa.UniqueConstraint("match_id", "version", name=op.f("uq_match_actions_match_id")),
    )

    op.create_table(
        "settlements",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("match_id", sa.String(length=40), nullable=False),
        sa.Column("operator_id", sa.String(length=40), nullable=False),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("fee", sa.BigInteger(), nullable=False),
        sa.Column("statement", sa.JSON(), nullable=False),
        sa.Column("ledger_transaction_id", sa.String(length=40), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("fee >= 0", name=op.f("ck_settlements_fee_non_negative")),
        sa.ForeignKeyConstraint(
            ["ledger_transaction_id"],
            ["ledger_transactions.id"],
            name=op.f("fk_settlements_ledger_transaction_id_ledger_transactions"),
        ),
        sa.ForeignKeyConstraint(
            ["match_id"], ["matches.id"], name=op.f("fk_settlements_match_id_matches")
        ),
        sa.ForeignKeyConstraint(
            ["operator_id"], ["operators.id"], name=op.f("fk_settlements_operator_id_operators")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_settlements")),
        sa.UniqueConstraint("match_id", name=op.f("uq_settlements_match_id")),
    )
    with op.batch_alter_table("settlements", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_settlements_operator_id"), ["operator_id", "created_at"], unique=False
        )

    op.create_table(
        "webhook_endpoints",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("operator_id", sa.String(length=40), nullable=False),
        sa.Column("url", sa.String(length=2048), nullable=False),
        sa.Column("description", sa.String(length=255), nullable=False),
        sa.Column("event_types", sa.JSON(), nullable=True),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("secret", sa.String(length=100), nullable=True),
        sa.Column("previous_secret", sa.String(length=100), nullable=True),
        sa.Column("previous_secret_expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["operator_id"],
            ["operators.id"],
            name=op.f("fk_webhook_endpoints_operator_id_operators"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook_endpoints")),
    )
    with op.batch_alter_table("webhook_endpoints", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_webhook_endpoints_operator_id"), ["operator_id", "id"], unique=False
        )

    op.create_table(
        "webhook_deliveries",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("operator_id", sa.String(length=40), nullable=False),
        sa.Column("endpoint_id", sa.String(length=40), nullable=False),
        sa.Column("event_id", sa.String(length=40), nullable=False),
        sa.Column("event_type", sa.String(length=40), nullable=False),
        sa.Column("status", sa.String(length=12), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("locked_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("queued_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_attempt_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_status_code", sa.Integer(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("delivered_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("redelivery_requested", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "status IN ('pending', 'delivered', 'failed', 'cancelled')",
            name=op.f("ck_webhook_deliveries_status"),
        ),
        sa.CheckConstraint(
            "attempts >= 0", name=op.f("ck_webhook_deliveries_attempts_non_negative")
        ),
        sa.ForeignKeyConstraint(
            ["endpoint_id"],
            ["webhook_endpoints.id"],
            name=op.f("fk_webhook_deliveries_endpoint_id_webhook_endpoints"),
        ),
        sa.ForeignKeyConstraint(
            ["event_id"], ["events.id"], name=op.f("fk_webhook_deliveries_event_id_events")
        ),
        sa.ForeignKeyConstraint(
            ["operator_id"],
            ["operators.id"],
            name=op.f("fk_webhook_deliveries_operator_id_operators"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook_deliveries")),
        sa.UniqueConstraint("event_id", "endpoint_id", name=op.f("uq_webhook_deliveries_event_id")),
    )
    with op.batch_alter_table("webhook_deliveries", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_webhook_deliveries_endpoint_id"), ["endpoint_id", "id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_webhook_deliveries_status"),
            ["status", "next_attempt_at"],
            unique=False,
        )

    op.create_table(
        "webhook_attempts",
        sa.Column("seq", BigId, autoincrement=True, nullable=False),
        sa.Column("delivery_id", sa.String(length=40), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("manual", sa.Boolean(), nullable=False),
        sa.Column("attempted_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("duration_ms", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["delivery_id"],
            ["webhook_deliveries.id"],
            name=op.f("fk_webhook_attempts_delivery_id_webhook_deliveries"),
        ),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_webhook_attempts")),
        sa.UniqueConstraint("delivery_id", "number", name=op.f("uq_webhook_attempts_delivery_id")),
    )

    op.create_table(
        "bot_players",
        sa.Column("player_id", sa.String(length=40), nullable=False),
        sa.Column("operator_id", sa.String(length=40), nullable=False),
        sa.Column("table_id", sa.String(length=40), nullable=False),
        sa.Column("match_id", sa.String(length=40), nullable=False),
        sa.Column("strategy", sa.String(length=20), nullable=False),
        sa.Column("seen_version", sa.BigInteger(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["player_id"], ["players.id"], name=op.f("fk_bot_players_player_id_players")
        ),
        sa.ForeignKeyConstraint(
            ["operator_id"], ["operators.id"], name=op.f("fk_bot_players_operator_id_operators")
        ),
        sa.ForeignKeyConstraint(
            ["table_id"], ["game_tables.id"], name=op.f("fk_bot_players_table_id_game_tables")
        ),
        sa.PrimaryKeyConstraint("player_id", name=op.f("pk_bot_players")),
    )
    op.create_index(op.f("ix_bot_players_match_id"), "bot_players", ["match_id"])

    for name, table, columns, predicate in PARTIAL_INDEXES:
        where = sa.text(predicate)
        op.create_index(name, table, columns, postgresql_where=where, sqlite_where=where)
    sqlfiles.run(revision)


def downgrade() -> None:
    for table in reversed(TABLES):
        op.drop_table(table)  # its indexes and triggers go with it
    dialect = op.get_bind().dialect.name
    if dialect == "postgresql":
        for name in sqlfiles.functions(revision, dialect):
            op.execute(f"DROP FUNCTION IF EXISTS {name}()")
