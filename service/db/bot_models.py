"""Practice bots: which players are bots, and where each one sits.

A bot is an ordinary player of its operator (it has a wallet, sits down and acts through the
same use cases as a person); this table marks it as a bot seated at one practice table and
remembers the last match version it looked at, so the worker's scan only reads matches that
changed since (``seen_version``).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from service.db.models import Base, UTCDateTime


class BotPlayer(Base):
    __tablename__ = "bot_players"

    player_id: Mapped[str] = mapped_column(ForeignKey("players.id"), primary_key=True)
    operator_id: Mapped[str] = mapped_column(ForeignKey("operators.id"))
    table_id: Mapped[str] = mapped_column(ForeignKey("game_tables.id"))
    match_id: Mapped[str] = mapped_column(String(40), index=True)
    strategy: Mapped[str] = mapped_column(String(20))  # "sensible" or "eager"
    seen_version: Mapped[int | None] = mapped_column(BigInteger)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
