"""Practice bots: which players are bots, and where each one sits.

A bot is an ordinary player of its operator (it has a wallet, sits down and acts through the
same use cases as a person); this table marks it as a bot seated at one practice table, or
entered in one practice tournament (then it plays the match of each table the tournament
seats it at), and remembers the last match version it looked at, so the worker's scan only
reads matches that changed since (``seen_version``).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, CheckConstraint, ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from service.db.models import Base, UTCDateTime


class BotPlayer(Base):
    __tablename__ = "bot_players"
    __table_args__ = (
        # At a table or in a tournament, never both.
        CheckConstraint("(table_id IS NULL) <> (tournament_id IS NULL)", name="one_place"),
    )

    player_id: Mapped[str] = mapped_column(ForeignKey("players.id"), primary_key=True)
    operator_id: Mapped[str] = mapped_column(ForeignKey("operators.id"))
    #: The practice table it sits at; ``None`` for a tournament's bot.
    table_id: Mapped[str | None] = mapped_column(ForeignKey("game_tables.id"))
    #: The practice tournament it entered; ``None`` for a table's bot.
    tournament_id: Mapped[str | None] = mapped_column(ForeignKey("tournaments.id"), index=True)
    #: The match it last looked at ("" for a tournament's bot before its first match).
    match_id: Mapped[str] = mapped_column(String(40), index=True)
    strategy: Mapped[str] = mapped_column(String(20))  # "sensible" or "eager"
    seen_version: Mapped[int | None] = mapped_column(BigInteger)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
