"""A player's deposits in a period read by range (deposit limits, issue 3).

A deposit to a player with deposit limits sums the player's deposits of the last day, week
and month (``service.usecases.limits``). The only index on the entries' account,
``(account_id, seq)``, made each sum read every entry of the account and filter on kind and
time: a deposit got slower with every movement in the player's history. The partial index
``(account_id, created_at) WHERE kind = 'deposit' AND amount > 0`` holds one entry per deposit
(the available account's; the clearing account's entry is negative) and answers each sum with
a range scan of that period's deposits alone.

On PostgreSQL the index is built ``CONCURRENTLY``, so a live ledger keeps taking writes.

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

from service.db.migrations.indexes import create_partial_index, drop_partial_index

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

NAME = "ix_ledger_entries_deposits"
PREDICATE = "kind = 'deposit' AND amount > 0"  # service.db.models.DEPOSITS_INTO_ACCOUNT


def upgrade() -> None:
    create_partial_index(NAME, "ledger_entries", ["account_id", "created_at"], PREDICATE)


def downgrade() -> None:
    drop_partial_index(NAME, "ledger_entries")
