"""Tables, seats, matches, hands, the match action log and the event outbox (issue 4).

``match_actions`` is append-only: triggers refuse UPDATE and DELETE on PostgreSQL and SQLite.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
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
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
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
    _guards(install=True)


PG_GUARDS = [
    """
    CREATE FUNCTION match_actions_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        RAISE EXCEPTION 'match actions are append-only: % on %', TG_OP, TG_TABLE_NAME
            USING ERRCODE = 'restrict_violation';
    END $$
    """,
    """
    CREATE TRIGGER match_actions_append_only BEFORE UPDATE OR DELETE ON match_actions
    FOR EACH ROW EXECUTE FUNCTION match_actions_refuse_change()
    """,
]
PG_DROP = [
    "DROP TRIGGER IF EXISTS match_actions_append_only ON match_actions",
    "DROP FUNCTION IF EXISTS match_actions_refuse_change()",
]
SQLITE_GUARDS = [
    f"""
    CREATE TRIGGER match_actions_no_{op_name.lower()} BEFORE {op_name} ON match_actions
    BEGIN SELECT RAISE(ABORT, 'match actions are append-only'); END
    """
    for op_name in ("UPDATE", "DELETE")
]
SQLITE_DROP = [f"DROP TRIGGER IF EXISTS match_actions_no_{o}" for o in ("update", "delete")]


def _guards(install: bool) -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    if install:
        statements = PG_GUARDS if postgres else SQLITE_GUARDS
    else:
        statements = PG_DROP if postgres else SQLITE_DROP
    for statement in statements:
        op.execute(statement)


def downgrade() -> None:
    _guards(install=False)
    op.drop_table("match_actions")
    op.drop_table("hands")
    op.drop_table("seats")
    with op.batch_alter_table("matches", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_matches_status"))

    op.drop_table("matches")
    with op.batch_alter_table("game_tables", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_game_tables_status"))
        batch_op.drop_index(batch_op.f("ix_game_tables_operator_id"))

    op.drop_table("game_tables")
    with op.batch_alter_table("events", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_events_published_at"))
        batch_op.drop_index(batch_op.f("ix_events_operator_id"))

    op.drop_table("events")
