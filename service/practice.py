"""Practice for a person: a player with play money, a token, and a practice table of each game
waiting for them with practice bots in every other seat.

An operator's client of the public API, like the simulator (``service.simulate``): it
creates a player and gives it play money (``XPM``) by a deposit, opens the practice tables
(two-player Gin, three-player Gin, partnership Gin, Rummy), seats a practice bot
(``POST /v1/tables/{id}/bots``) in all but one seat of each and mints the player a token.
The person then sits down at ``/play`` with that token (docs/pages.md, "Practice table").
``gin-service practice`` runs it with the demo operator's key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from service.client import GinClient, new_key
from service.ledger.money import PRACTICE_CURRENCY

#: Each game's practice table: (game, format, seats, what the body adds).
GAMES: dict[str, tuple[str, int, dict[str, Any]]] = {
    "gin": ("match_play", 2, {"stake": 100}),
    "gin_three": ("match_play", 3, {"stake": 100}),
    "gin_partnership": ("match_play", 4, {"stake": 100}),
    "rummy": (
        "rummy_target",
        3,
        {"stake_per_point": 1, "min_buyin": 500, "max_buyin": 500, "target": 100},
    ),
}
GAME_NAMES = {
    "gin": "Two-player Gin",
    "gin_three": "Three-player Gin",
    "gin_partnership": "Partnership Gin",
    "rummy": "Rummy",
}
#: A person thinks: ten minutes a turn, and the table waits a day for them to sit down.
CLOCK = {"turn_seconds": 600, "bank_seconds": 600, "fill_timeout_seconds": 86_400}
#: Play money a practice player is topped up to (minor units: 1000.00 XPM).
PLAY_MONEY = 100_000
TOKEN_TTL_SECONDS = 3600  # the longest a player token lives


@dataclass(frozen=True)
class Practice:
    player_id: str
    token: str
    expires_at: str
    tables: list[dict[str, Any]]


def open_table(
    operator: GinClient, game: str, *, bots: int | None = None, **overrides: Any
) -> dict[str, Any]:
    """Open ``game``'s practice table and seat ``bots`` practice bots (default: all but one
    seat); ``overrides`` replace fields of the table's body (``target``, ``clock``...)."""
    fmt, seats, extra = GAMES[game]
    body: dict[str, Any] = {
        "game": game,
        "name": f"Practice: {GAME_NAMES[game]}",
        "practice": True,
        "clock": CLOCK,
        **extra,
        **overrides,
    }
    if game == "rummy":
        body.setdefault("seat_count", seats)
    table = operator.create_table(fmt, PRACTICE_CURRENCY, **body)
    table_id, seat_count = str(table["id"]), int(table["seat_count"])
    for _ in range(seat_count - 1 if bots is None else bots):
        operator.seat_bot(table_id)
    return dict(operator.table(table_id))


def practice_player(
    operator: GinClient, display_name: str, *, ttl_seconds: int
) -> tuple[str, dict[str, Any]]:
    """A new player of the operator with :data:`PLAY_MONEY` of play money, and its token."""
    player = operator.create_player(f"practice-{new_key()[:12]}", display_name)
    operator.deposit(player["id"], PLAY_MONEY, PRACTICE_CURRENCY)
    token = operator.player_token(player["id"], ttl_seconds)
    return str(player["id"]), dict(token)


def open_practice(
    operator: GinClient,
    *,
    display_name: str = "Guest",
    games: tuple[str, ...] = tuple(GAMES),
    ttl_seconds: int = TOKEN_TTL_SECONDS,
) -> Practice:
    """A new practice player's token and, for each of ``games`` without an open practice table
    of the operator's waiting for one more player, a new one with its bots."""
    player_id, token = practice_player(operator, display_name, ttl_seconds=ttl_seconds)
    waiting = {
        t["game"]: t
        for t in operator.lobby(currency=PRACTICE_CURRENCY, limit=100)["data"]
        if t["status"] == "open" and t["free_seats"] == 1 and t["name"].startswith("Practice:")
    }
    tables = [waiting.get(game) or open_table(operator, game) for game in games]
    return Practice(player_id, token["token"], token["expires_at"], tables)
