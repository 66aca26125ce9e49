"""Cursor pagination per API_CONVENTIONS: ``limit``, ``starting_after`` / ``ending_before``
(item ids), newest first, ``has_more`` and ``next_cursor``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from sqlalchemy import Select
from sqlalchemy.orm import InstrumentedAttribute, Session

from service.errors import FieldError, InvalidCursor, ValidationFailed

T = TypeVar("T")


@dataclass(frozen=True)
class Page(Generic[T]):
    data: Sequence[T]
    has_more: bool
    next_cursor: str | None


def page_of(
    session: Session,
    stmt: Select[Any],
    order_column: InstrumentedAttribute[Any],
    model: Any,
    limit: int,
    starting_after: str | None,
    ending_before: str | None,
    *,
    id_column: InstrumentedAttribute[Any] | None = None,
) -> Page[Any]:
    """One page of ``stmt``'s rows, ordered by ``order_column`` descending.

    ``starting_after`` / ``ending_before`` are public ids (``id_column``, by default the model's
    ``id``) of rows of the same list; ``order_column`` gives their position.
    """
    if starting_after and ending_before:
        message = "Send at most one of starting_after and ending_before."
        raise ValidationFailed(
            message,
            errors=[FieldError("starting_after", message), FieldError("ending_before", message)],
        )
    id_column = id_column if id_column is not None else model.id
    cursor = starting_after or ending_before
    if cursor:
        position = session.scalars(
            stmt.with_only_columns(order_column).where(id_column == cursor)
        ).one_or_none()
        if position is None:
            message = f"Cursor {cursor!r} names no item of this list."
            name = "starting_after" if starting_after else "ending_before"
            raise InvalidCursor(message, errors=[FieldError(name, message)])
    if ending_before:
        rows = list(
            session.scalars(
                stmt.where(order_column > position).order_by(order_column.asc()).limit(limit + 1)
            )
        )
        has_more = len(rows) > limit
        rows = rows[:limit][::-1]
        # Paging backwards (towards newer items), the cursor continues with ending_before.
        return Page(rows, has_more, getattr(rows[0], id_column.key) if has_more else None)
    query = stmt
    if starting_after:
        query = query.where(order_column < position)
    rows = list(session.scalars(query.order_by(order_column.desc()).limit(limit + 1)))
    has_more = len(rows) > limit
    rows = rows[:limit]
    return Page(rows, has_more, getattr(rows[-1], id_column.key) if has_more else None)
