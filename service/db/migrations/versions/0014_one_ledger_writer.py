"""PostgreSQL: the cashier's database functions go; every movement is written by the ledger.

``cashier_post()`` (0006, 0010), ``cashier_post_batch()`` (0012, 0013) and
``gin_idempotency_lock_id()`` (0006, 0007) restated in SQL what ``service.ledger`` and the use
cases state in Python: account keys, the hash chain, the idempotency lock and record, deposit
eligibility, the wallet's held sum. Deposits and withdrawals now go through the Flask
application and ``service.usecases.wallets`` alone, so nothing calls them. The triggers and
constraints that guard the ledger's rows stay.

The downgrade puts the functions back from the earlier revisions' own text.

Revision ID: 0014
Revises: 0013
"""

from __future__ import annotations

from alembic import op

from service.db.migrations import earlier

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

DROPS = (
    "DROP FUNCTION IF EXISTS cashier_post_batch(text[], text[], text[], text[], text[],"
    " text[], bigint[], text[], text[], timestamptz[], bigint, text[], text[], text[])",
    "DROP FUNCTION IF EXISTS cashier_post(text, text, text, text, text, text, bigint, text,"
    " text, timestamptz, bigint, text, text[], text)",
    "DROP FUNCTION IF EXISTS gin_idempotency_lock_id(text, text)",
)


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for statement in DROPS:
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    earlier.revision("0006_cashier_function.py").upgrade()
    earlier.revision("0007_inline_lock_id.py").upgrade()
    op.execute(earlier.revision("0010_open_escrows.py")._cashier_post(open_only=True))
    earlier.revision("0012_cashier_batches.py").upgrade()
    earlier.revision("0013_batch_locks_only_its_prelock.py").upgrade()
