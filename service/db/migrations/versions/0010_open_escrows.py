"""What a player holds, read from the open match escrows only (issue 3).

A player's held balance is the sum of their match escrow accounts, and every match they ever
sat at leaves one (empty once settled or released). Every wallet read, every money movement's
answer and every fast-path deposit summed all of them through ``(player_id, currency)``: a
player with 2,000 matches behind them made a deposit cost 1,090 us of PostgreSQL CPU instead
of 725 us, and it grew with every match.

- ``ledger_accounts.closed_at``: set when a match escrow's balance comes back to zero, cleared
  when it holds money again (``service.ledger.store.post`` writes it with the account head).
  Only an empty match escrow can be closed: a CHECK on PostgreSQL, a trigger on SQLite (which
  cannot add a CHECK to an existing table without rebuilding it and its triggers). So the
  open escrows hold every cent any escrow holds, and summing them is exact.
- ``ix_ledger_accounts_open_escrows (player_id, currency) WHERE kind = 'player_escrow' AND
  closed_at IS NULL``: the sum reads the escrows of the player's live matches alone. Changing
  ``closed_at`` is the only account update that is not a heap-only (HOT) update, and it
  happens twice per match and player.
- ``cashier_post()`` sums the open escrows too (its text is 0006's with that one condition).
- Existing empty escrows are closed here. On PostgreSQL the index is built ``CONCURRENTLY``.

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from service.db.migrations import earlier
from service.db.migrations.indexes import create_partial_index, drop_partial_index

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

NAME = "ix_ledger_accounts_open_escrows"
PREDICATE = "kind = 'player_escrow' AND closed_at IS NULL"  # service.db.models.OPEN_ESCROW
CHECK = "ck_ledger_accounts_closed_is_empty"
CLOSED_IS_EMPTY = "closed_at IS NULL OR (kind = 'player_escrow' AND balance = 0)"

SQLITE_GUARDS = [  # CLOSED_IS_EMPTY, refused when false
    f"""
    CREATE TRIGGER ledger_accounts_closed_is_empty_{event.lower()} BEFORE {event}
    ON ledger_accounts
    WHEN NEW.closed_at IS NOT NULL AND (NEW.kind <> 'player_escrow' OR NEW.balance <> 0)
    BEGIN SELECT RAISE(ABORT, 'only an empty match escrow can be closed'); END
    """
    for event in ("INSERT", "UPDATE")
]

HELD = """
      FROM (SELECT coalesce(sum(a.balance), 0) AS amount FROM ledger_accounts a
             WHERE a.player_id = p_player_id AND a.currency = p_currency
               AND a.kind = 'player_escrow') AS held"""


def _cashier_post(open_only: bool) -> str:
    """0006's ``cashier_post()``, summing the open escrows only when ``open_only``."""
    text: str = earlier.revision("0006_cashier_function.py").CASHIER_POST
    assert text.count(HELD) == 1, "0006's held sum is not where this revision expects it"
    if open_only:
        text = text.replace(HELD, HELD.replace(
            "a.kind = 'player_escrow') AS held",
            "a.kind = 'player_escrow' AND a.closed_at IS NULL) AS held"))
    return earlier.function(text, "cashier_post")


def upgrade() -> None:
    from datetime import UTC, datetime

    from service.db.models import UTCDateTime

    dialect = op.get_bind().dialect.name
    op.add_column("ledger_accounts", sa.Column("closed_at", sa.DateTime(timezone=True)))
    if dialect == "postgresql":
        op.create_check_constraint(op.f(CHECK), "ledger_accounts", CLOSED_IS_EMPTY)
    else:
        for statement in SQLITE_GUARDS:
            op.execute(statement)
    op.execute(
        sa.text(
            "UPDATE ledger_accounts SET closed_at = :now"
            " WHERE kind = 'player_escrow' AND balance = 0 AND entry_count > 0"
        ).bindparams(sa.bindparam("now", datetime.now(UTC), type_=UTCDateTime()))
    )
    if dialect == "postgresql":
        op.execute(_cashier_post(open_only=True))
    create_partial_index(NAME, "ledger_accounts", ["player_id", "currency"], PREDICATE)


def downgrade() -> None:
    drop_partial_index(NAME, "ledger_accounts")
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_cashier_post(open_only=False))
        op.drop_constraint(op.f(CHECK), "ledger_accounts", type_="check")
    else:
        for event in ("insert", "update"):
            op.execute(f"DROP TRIGGER ledger_accounts_closed_is_empty_{event}")
    op.execute("ALTER TABLE ledger_accounts DROP COLUMN closed_at")  # SQLite 3.35+ too
