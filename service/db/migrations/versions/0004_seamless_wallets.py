"""Seamless wallets: an operator's wallet mode per currency, and the intent of every call we
make to an operator's wallet (written before the call, kept for reconciliation).

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from service.db.models import UTCDateTime

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "operator_wallets",
        sa.Column("operator_id", sa.String(length=40), nullable=False),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("mode", sa.String(length=10), nullable=False),
        sa.Column("url", sa.String(length=2048), nullable=True),
        sa.Column("secret", sa.String(length=100), nullable=True),
        sa.Column("previous_secret", sa.String(length=100), nullable=True),
        sa.Column("previous_secret_expires_at", UTCDateTime(), nullable=True),
        sa.Column("timeout_ms", sa.Integer(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.CheckConstraint(
            "mode IN ('transfer', 'seamless')", name=op.f("ck_operator_wallets_mode")
        ),
        sa.CheckConstraint(
            "timeout_ms BETWEEN 100 AND 30000", name=op.f("ck_operator_wallets_timeout_ms")
        ),
        sa.ForeignKeyConstraint(
            ["operator_id"],
            ["operators.id"],
            name=op.f("fk_operator_wallets_operator_id_operators"),
        ),
        sa.PrimaryKeyConstraint("operator_id", "currency", name=op.f("pk_operator_wallets")),
    )
    op.create_table(
        "wallet_calls",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("operator_id", sa.String(length=40), nullable=False),
        sa.Column("player_id", sa.String(length=40), nullable=False),
        sa.Column("kind", sa.String(length=8), nullable=False),
        sa.Column("reason", sa.String(length=12), nullable=False),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("amount", sa.BigInteger(), nullable=False),
        sa.Column("round_id", sa.String(length=40), nullable=False),
        sa.Column("table_id", sa.String(length=40), nullable=False),
        sa.Column("match_id", sa.String(length=40), nullable=True),
        sa.Column("escrow_ref", sa.String(length=64), nullable=False),
        sa.Column("request_key", sa.String(length=255), nullable=False),
        sa.Column("fingerprint", sa.String(length=64), nullable=False),
        sa.Column("references", sa.JSON(), nullable=False),
        sa.Column("round_closed", sa.Boolean(), nullable=False),
        sa.Column("state", sa.String(length=20), nullable=False),
        sa.Column("rollback_id", sa.String(length=40), nullable=True),
        sa.Column("ledger_transaction_id", sa.String(length=40), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", UTCDateTime(), nullable=True),
        sa.Column("locked_until", UTCDateTime(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("declined", sa.String(length=40), nullable=True),
        sa.Column("escalated_at", UTCDateTime(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.Column("completed_at", UTCDateTime(), nullable=True),
        sa.CheckConstraint("kind IN ('debit', 'credit')", name=op.f("ck_wallet_calls_kind")),
        sa.CheckConstraint(
            "(kind = 'debit' AND amount > 0 AND state IN "
            "('pending', 'applied', 'booked', 'failed', 'rollback_pending', 'rolled_back')) OR "
            "(kind = 'credit' AND amount >= 0 AND state IN ('pending', 'acknowledged'))",
            name=op.f("ck_wallet_calls_kind_state_amount"),
        ),
        sa.CheckConstraint("attempts >= 0", name=op.f("ck_wallet_calls_attempts_non_negative")),
        sa.ForeignKeyConstraint(
            ["operator_id"], ["operators.id"], name=op.f("fk_wallet_calls_operator_id_operators")
        ),
        sa.ForeignKeyConstraint(
            ["player_id"], ["players.id"], name=op.f("fk_wallet_calls_player_id_players")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_wallet_calls")),
        sa.UniqueConstraint("operator_id", "request_key", name=op.f("uq_wallet_calls_operator_id")),
        sa.UniqueConstraint("rollback_id", name=op.f("uq_wallet_calls_rollback_id")),
    )
    op.create_index(
        op.f("ix_wallet_calls_state"), "wallet_calls", ["state", "next_attempt_at"], unique=False
    )
    op.create_index(
        op.f("ix_wallet_calls_player_id"), "wallet_calls", ["player_id", "round_id"], unique=False
    )
    op.create_index(op.f("ix_wallet_calls_match_id"), "wallet_calls", ["match_id"], unique=False)
    op.create_index(
        op.f("ix_wallet_calls_operator_id"),
        "wallet_calls",
        ["operator_id", "created_at"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_table("wallet_calls")
    op.drop_table("operator_wallets")
