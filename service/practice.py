"""Practice for a person: a player with play money, a token, a practice table of each game
waiting for them with practice bots in every other seat, and practice tournaments waiting
for them with bots in every other entry.

An operator's client of the public API, like the simulator (``service.simulate``): it
creates a player and gives it play money (``XPM``) by a deposit, opens the practice tables
(two-player Gin, three-player Gin, partnership Gin, Rummy), seats a practice bot
(``POST /v1/tables/{id}/bots``) in all but one seat of each, opens the practice tournaments
(a knockout of two-player Gin, a single table of Rummy) and enters a practice bot
(``POST /v1/tournaments/{id}/bots``) in all but one entry of each, and mints the player a
token. The person then sits down, or enters, at ``/play`` with that token (docs/pages.md,
"Practice table"). ``gin-service practice`` runs it with the demo operator's key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from service.client import GinClient, new_key
from service.games import registry
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

#: Each practice tournament: (kind, game, what the body adds). Small fields, so that a person
#: plays through one in a sitting; the second place is paid too.
TOURNAMENTS: dict[str, dict[str, Any]] = {
    "knockout": {
        "kind": "knockout",
        "game": "gin",
        "format": "match_play",
        "target": 100,
        "entrants": 4,
    },
    "rummy_table": {
        "kind": "single_table",
        "game": "rummy",
        "format": "rummy_target",
        "seat_count": 3,
        "target": 100,
    },
}
TOURNAMENT_NAMES = {
    "knockout": "Two-player Gin knockout of 4",
    "rummy_table": "Rummy single table of 3",
}
#: A practice tournament's entry (minor units of play money: 10.00 XPM plus 1.00 XPM).
TOURNAMENT_BUY_IN, TOURNAMENT_FEE = 1_000, 100
TOURNAMENT_PAYOUTS = "2-5: 7000/3000"
#: A practice tournament waits a day for its last entrant, as a practice table for its player.
TOURNAMENT_REGISTRATION_SECONDS = 86_400


@dataclass(frozen=True)
class Practice:
    player_id: str
    token: str
    expires_at: str
    tables: list[dict[str, Any]]
    tournaments: list[dict[str, Any]]


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
    if len(registry.spec(game).seat_counts) > 1:  # a game of more than one seat count
        body.setdefault("seat_count", seats)
    table = operator.create_table(fmt, PRACTICE_CURRENCY, **body)
    table_id, seat_count = str(table["id"]), int(table["seat_count"])
    for _ in range(seat_count - 1 if bots is None else bots):
        operator.seat_bot(table_id)
    return dict(operator.table(table_id))


def open_tournament(
    operator: GinClient, which: str, *, bots: int | None = None, **overrides: Any
) -> dict[str, Any]:
    """Open a practice tournament (``which``: a key of :data:`TOURNAMENTS`) and enter ``bots``
    practice bots (default: all but one entry); ``overrides`` replace fields of its body
    (``format``, ``target``, ``clock``...; ``None`` leaves one out)."""
    body: dict[str, Any] = {
        **TOURNAMENTS[which],
        "name": f"Practice: {TOURNAMENT_NAMES[which]}",
        "practice": True,
        "fee": TOURNAMENT_FEE,
        "payout_table": TOURNAMENT_PAYOUTS,
        "registration_seconds": TOURNAMENT_REGISTRATION_SECONDS,
        "clock": {key: CLOCK[key] for key in ("turn_seconds", "bank_seconds")},
        **overrides,
    }
    body = {key: value for key, value in body.items() if value is not None}
    fmt = body.pop("format")
    tournament = operator.create_tournament(
        fmt, PRACTICE_CURRENCY, TOURNAMENT_BUY_IN, body.pop("entrants", None), **body
    )
    tournament_id = str(tournament["id"])
    for _ in range(tournament["entrants"] - 1 if bots is None else bots):
        tournament = operator.enter_bot(tournament_id)["tournament"]
    return dict(tournament)


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
    tournaments: tuple[str, ...] = tuple(TOURNAMENTS),
    ttl_seconds: int = TOKEN_TTL_SECONDS,
) -> Practice:
    """A new practice player's token and, for each of ``games`` without an open practice table
    of the operator's waiting for one more player, a new one with its bots; the same for
    each practice tournament of ``tournaments``."""
    player_id, token = practice_player(operator, display_name, ttl_seconds=ttl_seconds)
    waiting = {
        t["game"]: t
        for t in operator.lobby(currency=PRACTICE_CURRENCY, limit=100)["data"]
        if t["status"] == "open" and t["free_seats"] == 1 and t["name"].startswith("Practice:")
    }
    tables = [waiting.get(game) or open_table(operator, game) for game in games]
    names = {f"Practice: {TOURNAMENT_NAMES[which]}": which for which in tournaments}
    open_ones = operator.tournaments(currency=PRACTICE_CURRENCY, status="open", limit=100)["data"]
    entering = {
        names[t["name"]]: dict(t)
        for t in open_ones
        if t["name"] in names and t["entries_taken"] == t["entrants"] - 1
    }
    opened = [entering.get(which) or open_tournament(operator, which) for which in tournaments]
    return Practice(player_id, token["token"], token["expires_at"], tables, opened)
