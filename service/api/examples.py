"""Examples for openapi.yaml: one request body per operation that takes one and one success
response per operation, keyed by operationId (:mod:`service.api.contract`). They were taken from
real answers of the service; ``tests/api/test_openapi.py`` validates each against its schema."""

from __future__ import annotations

from typing import Any

from service.games import registry

REQUEST_EXAMPLES: dict[str, Any] = {
    "createApiKey": {"label": "cashier"},
    "createPlayer": {"external_id": "u-1001", "display_name": "Alice", "display_currency": "USD"},
    "updatePlayer": {"display_name": "Alice", "display_currency": "USD"},
    "createPlayerToken": {"ttl_seconds": 900},
    "setSelfExclusion": {"until": "2027-06-01T00:00:00Z"},
    "setDepositLimits": {"daily": {"amount": 50000, "currency": "EUR"}},
    "createDeposit": {
        "amount": {"amount": 1500, "currency": "EUR"},
        "external_reference": "cashier-8812",
    },
    "createWithdrawal": {
        "amount": {"amount": 500, "currency": "EUR"},
        "external_reference": "cashier-8813",
    },
    "setExchangeRate": {"rate": "1.0837"},
    "joinTable": {"client_seed": "21659e7ed0a2ed50db449bfd762de013"},
    "topUpSeat": {"amount": 150},
    "setSeatReady": {"ready": False},
    "seatBot": {"display_name": "Practice bot"},
    "enterTournamentBot": {"display_name": "Practice bot"},
    "createTournament": {
        "name": "Sunday sit-and-go",
        "format": "match_play",
        "target": 100,
        "currency": "EUR",
        "buy_in": 1000,
        "fee": 100,
        "entrants": 4,
        "payout_table": "2-5: 7000/3000",
        "registration_seconds": 3600,
    },
    "playAction": {"action": "TAKE_UPCARD", "expected_version": 1},
    "createWebhookEndpoint": {
        "url": "https://ops.example/gin",
        "event_types": ["match.finished", "settlement.completed"],
        "description": "Back office",
    },
    "updateWebhookEndpoint": {"enabled": False},
    "rotateWebhookSecret": {"grace_period_seconds": 86400},
    "rotateWalletSecret": {"grace_period_seconds": 86400},
    "setWalletSettings": {
        "mode": "seamless",
        "url": "https://wallet.casino.example/gin",
        "timeout_ms": 3000,
    },
}

#: A ``POST /v1/tables`` body for every game and format, named ``game-format``, as each game's
#: spec gives it; each works as it is, and ``docs/games.md`` shows the same bodies
#: (``tests/api/test_table_examples.py``).
TABLE_EXAMPLES: dict[str, dict[str, Any]] = {
    f"{game.kind.value}-{fmt.value}": body
    for game in registry.GAMES.values()
    for fmt, body in game.examples.items()
}
#: Operations with several request examples, each named (``examples`` in openapi.yaml).
REQUEST_EXAMPLE_SETS: dict[str, dict[str, dict[str, Any]]] = {"createTable": TABLE_EXAMPLES}

_WALLET_SETTINGS: dict[str, Any] = {
    "object": "wallet_settings",
    "currency": "EUR",
    "mode": "seamless",
    "url": "https://wallet.casino.example/gin",
    "timeout_ms": 3000,
    "previous_secret_expires_at": None,
    "created_at": "2026-12-04T10:00:00Z",
    "updated_at": "2026-12-04T10:00:00Z",
}

# A seated player's view of a Match Play match at its first decision (a real answer).
_MATCH_VIEW: dict[str, Any] = {
    "id": "mch_01M8QKHDVRPXSVHRM5DFJYRDQB",
    "object": "match",
    "table_id": "tbl_01M8QKHDVR8TZV586GPJ3RC35R",
    "status": "playing",
    "version": 1,
    "format": "match_play",
    "currency": "EUR",
    "you": 0,
    "seats": [
        {
            "seat": 0,
            "player_id": "ply_01M8QKHDTBWNEQN15ZC1SR0E5F",
            "display_name": "Alice",
            "escrow": {"amount": 500, "currency": "EUR"},
        },
        {
            "seat": 1,
            "player_id": "ply_01M8QKHDV01K8Y5B9PVCYVW1X1",
            "display_name": "Alice",
            "escrow": {"amount": 500, "currency": "EUR"},
        },
    ],
    "started_at": "2026-12-01T01:29:35Z",
    "finished_at": None,
    "deadline": "2026-12-01T01:31:05Z",
    "hand_number": 1,
    "commitment": "bd46b28890b978a3c9bfd6a73bda3293394899d7296feef0750428626793802d",
    "hand": {
        "phase": "OFFER_1",
        "dealer": 1,
        "first_player": 0,
        "to_act": 0,
        "upcard": "3H",
        "knock_limit": 10,
        "multiplier": 1,
        "stock_count": 31,
        "discard_pile": ["3H"],
        "card_counts": [10, 10],
        "taken_from_discard": None,
        "log": [],
        "seat": 0,
        "hand": ["AC", "9C", "AD", "4D", "9D", "2H", "4H", "9H", "QH", "8S"],
        "deadwood": 30,
        "legal_actions": [{"action": "TAKE_UPCARD"}, {"action": "PASS"}],
    },
    "scores": {
        "hand_points": [0, 0],
        "boxes": [0, 0],
        "target": 100,
        "hands_played": 0,
        "timeouts": [0, 0],
        "bank_ms": [60000, 60000],
    },
    "result": None,
    "dealer": 1,
}

# The same player's answer to TAKE_UPCARD on that view (the engine's own view afterwards).
_AFTER_TAKE_UPCARD: dict[str, Any] = {
    **_MATCH_VIEW,
    "version": 2,
    "hand": {
        **_MATCH_VIEW["hand"],
        "phase": "DISCARD",
        "discard_pile": [],
        "card_counts": [11, 10],
        "taken_from_discard": "3H",
        "log": [
            {
                "seq": 1,
                "seat": 0,
                "action": "TAKE_UPCARD",
                "at": "2026-12-01T01:29:41Z",
                "card": "3H",
            },
        ],
        "hand": ["AC", "9C", "AD", "4D", "9D", "2H", "3H", "4H", "9H", "QH", "8S"],
        "deadwood": 24,
        "legal_actions": [
            {"action": "DISCARD", "card": card}
            for card in ("AC", "9C", "AD", "4D", "9D", "2H", "4H", "9H", "QH", "8S")
        ],
    },
}


#: The default ruleset, as tables and hand histories show it.
_RULESET: dict[str, Any] = {
    "opening": "PASS_SEQUENCE",
    "knock_limit": 10,
    "gin_bonus": 25,
    "undercut_bonus": 25,
    "big_gin_enabled": False,
    "big_gin_bonus": 31,
    "knocker_arrangement": "AUTO_MIN_DEADWOOD",
    "dead_hand_rule": "AFTER_DISCARD",
    "next_dealer": "WINNER_DEALS",
    "target": 100,
    "box_bonus": 20,
    "game_bonus": 100,
    "shutout_mode": "BONUS",
    "shutout_bonus": 100,
    "oklahoma": False,
    "ace_requires_gin": True,
    "spade_doubles": True,
    "hollywood": False,
    "partnership_target": 125,
}
# One Match Play table as the API shows it: open, then as players sit (real answers).
_TABLE_OPEN: dict[str, Any] = {
    "id": "tbl_01M8QKHDVR8TZV586GPJ3RC35R",
    "object": "table",
    "name": "",
    "game": "gin",
    "seat_count": 2,
    "match_id": "mch_01M8QKHDVRPXSVHRM5DFJYRDQB",
    "format": "match_play",
    "currency": "EUR",
    "practice": False,
    "private": False,
    "invite_code": None,
    "status": "open",
    "stake": {"amount": 500, "currency": "EUR"},
    "stake_per_point": None,
    "min_buyin": None,
    "max_buyin": None,
    "target": 100,
    "seats": [],
    "free_seats": 2,
    "settings": {
        "format": "match_play",
        "stake": 500,
        "stake_per_point": 0,
        "min_buyin": 0,
        "max_buyin": 0,
        "target": 100,
        "fee": {"bps": 1000, "base": "POT", "minimum": 0, "maximum": None},
        "ftk_winner_rule": "FIRST_KNOCKER",
        "ftk_max_dead_hands": 0,
        "line_bonus": 25,
        "cap_mode": "MIN_BOTH",
        "ruleset": _RULESET,
        "clock": {
            "turn_seconds": 30,
            "bank_seconds": 60,
            "on_timeout": "AUTO_PLAY",
            "max_timeouts": 3,
            "fill_timeout_seconds": 300,
        },
    },
    "fill_deadline": "2026-12-01T01:34:35Z",
    "created_at": "2026-12-01T01:29:35Z",
}
_SEAT_0: dict[str, Any] = {
    "seat": 0,
    "player_id": "ply_01M8QKHDTBWNEQN15ZC1SR0E5F",
    "escrow": {"amount": 500, "currency": "EUR"},
    "ready": True,
    "joined_at": "2026-12-01T01:29:35Z",
}
_SEAT_1: dict[str, Any] = {**_SEAT_0, "seat": 1, "player_id": "ply_01M8QKHDV01K8Y5B9PVCYVW1X1"}
# A rummy_per_hand table between two hands: the second seat sits the next hands out.
_RUMMY = registry.spec("rummy")
_PER_HAND_TABLE: dict[str, Any] = {
    **_TABLE_OPEN,
    "id": "tbl_01M90XGQV1AGDEE40TVXBXXX70",
    "match_id": "mch_01M90XGQV1AGDEE40TVXBXXX73",
    "game": "rummy",
    "seat_count": 4,
    "format": "rummy_per_hand",
    "stake": None,
    "stake_per_point": {"amount": 1, "currency": "EUR"},
    "min_buyin": {"amount": 100, "currency": "EUR"},
    "max_buyin": {"amount": 300, "currency": "EUR"},
    "seats": [
        {**_SEAT_0, "escrow": {"amount": 250, "currency": "EUR"}},
        {**_SEAT_1, "escrow": {"amount": 82, "currency": "EUR"}, "ready": False},
    ],
    "free_seats": 2,
    "settings": {
        **_TABLE_OPEN["settings"],
        "format": "rummy_per_hand",
        "stake": 0,
        "stake_per_point": 1,
        "min_buyin": 100,
        "max_buyin": 300,
        "fee": {"bps": 500, "base": "WINNINGS", "minimum": 0, "maximum": None},
        "game": "rummy",
        "seats": 4,
        _RUMMY.options_key: _RUMMY.options().to_dict(),  # the defaults: match PER_HAND
        "min_balance": 60,
    },
}
_TABLE_ONE_SEATED: dict[str, Any] = {**_TABLE_OPEN, "seats": [_SEAT_0], "free_seats": 1}
_TABLE_PLAYING: dict[str, Any] = {
    **_TABLE_OPEN,
    "status": "playing",
    "seats": [_SEAT_0, _SEAT_1],
    "free_seats": 0,
}
_PRACTICE_TABLE_WITH_BOT: dict[str, Any] = {
    **_TABLE_OPEN,
    "currency": "XPM",
    "practice": True,
    "stake": {"amount": 500, "currency": "XPM"},
    "seats": [
        {
            **_SEAT_0,
            "player_id": "ply_01M8QKHB7Y3T5R1P9N7L5J3G1E",
            "escrow": {"amount": 500, "currency": "XPM"},
        }
    ],
    "free_seats": 1,
}


# Objects that several operations answer with (single reads, writes and list items).
_API_KEY: dict[str, Any] = {
    "id": "key_01M8QKHDT0HEWT4783TBVKRVJ4",
    "object": "api_key",
    "label": "cashier",
    "prefix": "sk_k0-F8dS",
    "created_at": "2026-12-01T01:29:35Z",
    "revoked_at": None,
}
_PLAYER: dict[str, Any] = {
    "id": "ply_01M8QKHDPK9434WX4952HXJ2GB",
    "object": "player",
    "external_id": "u-1001",
    "display_name": "Alice",
    "display_currency": "USD",
    "self_excluded_until": None,
    "created_at": "2026-12-01T01:29:35Z",
}

_WALLET: dict[str, Any] = {
    "object": "wallet",
    "player_id": "ply_01M8QKHDPK9434WX4952HXJ2GB",
    "currency": "EUR",
    "available": {"amount": 1500, "currency": "EUR"},
    "held": {"amount": 0, "currency": "EUR"},
    "balance": {"amount": 1500, "currency": "EUR"},
}

#: The deposit that made _WALLET's balance.
_DEPOSIT: dict[str, Any] = {
    "id": "txn_01M8QKHDQXCVASK77469TEMEV9",
    "object": "transaction",
    "kind": "deposit",
    "player_id": "ply_01M8QKHDPK9434WX4952HXJ2GB",
    "match_id": None,
    "amount": {"amount": 1500, "currency": "EUR"},
    "external_reference": "cashier-8812",
    "created_at": "2026-12-01T01:29:35Z",
}
_DEPOSIT_LIMITS: dict[str, Any] = {
    "object": "deposit_limits",
    "player_id": "ply_01M8QKHDPK9434WX4952HXJ2GB",
    "currency": "EUR",
    "daily": {"amount": {"amount": 50000, "currency": "EUR"}, "pending": None},
    "weekly": {"amount": None, "pending": None},
    "monthly": {"amount": None, "pending": None},
}
_EXCHANGE_RATE: dict[str, Any] = {
    "object": "exchange_rate",
    "base": "EUR",
    "quote": "USD",
    "rate": "1.0837",
    "rate_at": "2026-12-01T01:29:35Z",
}

_SETTLEMENT: dict[str, Any] = {
    "id": "stl_01M8QKHEKDTZFNKNVGAEP7PVV2",
    "object": "settlement",
    "match_id": "mch_01M8QKHE0EZM7H9STJDMN65ZBN",
    "currency": "EUR",
    "ledger_transaction_id": "txn_01M8QKHEK8FQGZYSNDF96YJDAX",
    "created_at": "2026-12-01T01:29:36Z",
    "seats": [0, 1],
    "winner": 0,
    "void": False,
    "forfeiter": None,
    "players": ["ply_01M8QKHDYC0ZXCB5E97SWC83R5", "ply_01M8QKHDZG19TYWQTYTDMEBV4Z"],
    "escrow": [{"amount": 500, "currency": "EUR"}, {"amount": 500, "currency": "EUR"}],
    "payouts": [{"amount": 900, "currency": "EUR"}, {"amount": 0, "currency": "EUR"}],
    "net": [{"amount": 400, "currency": "EUR"}, {"amount": -500, "currency": "EUR"}],
    "fee": {"amount": 100, "currency": "EUR"},
    "statement": {
        "format": "first_to_knock",
        "escrow": [500, 500],
        "payouts": [900, 0],
        "net": [400, -500],
        "fee": 100,
        "fee_base_amount": 1000,
        "winner": 0,
        "void": False,
        "forfeiter": None,
        "hands": [
            {"number": 1, "dealer": 1, "kind": "knock", "winner": 0, "points": 15, "knocker": 0}
        ],
        "hand_points": [15, 0],
        "boxes": [1, 0],
        "bonuses": {},
        "final_totals": None,
        "margin": 0,
        "stake_per_point": 0,
        "raw_amount": 0,
        "transfer": 400,
        "cap": None,
        "cap_applied": False,
        "players": ["ply_01M8QKHDYC0ZXCB5E97SWC83R5", "ply_01M8QKHDZG19TYWQTYTDMEBV4Z"],
        "display": [None, None],
    },
}

_WEBHOOK_ENDPOINT: dict[str, Any] = {
    "id": "whk_01M8QKHDY05TVFBGZJV5FR1YDT",
    "object": "webhook_endpoint",
    "url": "https://ops.example/gin",
    "description": "Back office",
    "event_types": ["match.finished", "settlement.completed"],
    "enabled": True,
    "previous_secret_expires_at": None,
    "created_at": "2026-12-01T01:29:35Z",
    "updated_at": "2026-12-01T01:29:35Z",
}


def _with_secret(secret: str, **changes: Any) -> dict[str, Any]:
    """_WEBHOOK_ENDPOINT as the answers that show the new secret have it (right after
    ``enabled``)."""
    out: dict[str, Any] = {}
    for name, value in {**_WEBHOOK_ENDPOINT, **changes}.items():
        out[name] = value
        if name == "enabled":
            out["secret"] = secret
    return out


_WEBHOOK_DELIVERY: dict[str, Any] = {
    "id": "whd_01M8QKHA1VQ7C2N4J6X8Z0B2D4",
    "object": "webhook_delivery",
    "endpoint_id": "whk_01M8QKHDY05TVFBGZJV5FR1YDT",
    "event_id": "evt_01M8QKHA0T5R7P9M1K3H5F7D9B",
    "event_type": "settlement.completed",
    "status": "pending",
    "attempt_count": 1,
    "next_attempt_at": "2026-12-01T01:30:31Z",
    "last_attempt_at": "2026-12-01T01:30:01Z",
    "last_status_code": 503,
    "last_error": "HTTP 503",
    "delivered_at": None,
    "created_at": "2026-12-01T01:30:00Z",
    "attempts": [
        {
            "number": 1,
            "manual": False,
            "attempted_at": "2026-12-01T01:30:01Z",
            "status_code": 503,
            "error": "HTTP 503",
            "duration_ms": 84,
            "next_attempt_at": "2026-12-01T01:30:31Z",
        }
    ],
}

_TOURNAMENT_SETTINGS: dict[str, Any] = {
    "format": "match_play",
    "game": "gin",
    "seats": 2,
    "stake": 1000,
    "target": 100,
    "clock": {"turn_seconds": 30, "bank_seconds": 60, "on_timeout": "AUTO_PLAY"},
}
_TOURNAMENT_ENTRY: dict[str, Any] = {
    "seat": 1,
    "player_id": "ply_01M8QKHDTBWNEQN15ZC1SR0E5F",
    "state": "registered",
    "registered_at": "2026-12-06T04:10:00Z",
    "prize": None,
    "first_place": None,
    "last_place": None,
}
_TOURNAMENT_OPEN: dict[str, Any] = {
    "id": "trn_01M94TTG2XY0T12QHZQ41R6ECT",
    "object": "tournament",
    "name": "Sunday sit-and-go",
    "kind": "knockout",
    "game": "gin",
    "format": "match_play",
    "settings": _TOURNAMENT_SETTINGS,
    "currency": "EUR",
    "practice": False,
    "status": "open",
    "version": 0,
    "buy_in": {"amount": 1000, "currency": "EUR"},
    "fee": {"amount": 100, "currency": "EUR"},
    "prize_pool": {"amount": 4000, "currency": "EUR"},
    "entrants": 4,
    "min_entrants": 4,
    "entries_taken": 0,
    "payout_table": "2-5: 7000/3000",
    "commitment": "9f2c1a7e4b3d5c6a8e0f1b2d3c4a5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d",
    "server_seed": None,
    "draw": None,
    "entries": [],
    "rounds": [],
    "table": None,
    "standings": [],
    "registration_deadline": "2026-12-06T05:00:00Z",
    "starts_at": None,
    "created_at": "2026-12-06T04:00:00Z",
    "started_at": None,
    "finished_at": None,
    "cancelled_at": None,
    "you": None,
}
_TOURNAMENT_RUNNING: dict[str, Any] = {
    **_TOURNAMENT_OPEN,
    "status": "running",
    "version": 4,
    "entries_taken": 4,
    "server_seed": "5d0e8c4b2a19f7e6d5c4b3a2918f7e6d5c4b3a2918f7e6d5c4b3a2918f7e6d5c",
    "draw": [3, 1, 4, 2],
    "entries": [
        {**_TOURNAMENT_ENTRY, "state": "playing"},
        {
            **_TOURNAMENT_ENTRY,
            "seat": 2,
            "player_id": "ply_01M8QKHDPK9434WX4952HXJ2GB",
            "state": "playing",
        },
        {
            **_TOURNAMENT_ENTRY,
            "seat": 3,
            "player_id": "ply_01M8QKHE0A1B2C3D4E5F6G7H8J",
            "state": "knocked_out",
        },
        {
            **_TOURNAMENT_ENTRY,
            "seat": 4,
            "player_id": "ply_01M8QKHE9K8M7N6P5Q4R3S2T1V",
            "state": "knocked_out",
        },
    ],
    "rounds": [
        {
            "round": 1,
            "matches": [
                {
                    "match_no": 1,
                    "match_id": "mch_01M8QKHDVRPXSVHRM5DFJYRDQB",
                    "first_seat": 3,
                    "second_seat": 1,
                    "winner_seat": 1,
                },
                {
                    "match_no": 2,
                    "match_id": "mch_01M8QKHF1A2B3C4D5E6F7G8H9J",
                    "first_seat": 4,
                    "second_seat": 2,
                    "winner_seat": 2,
                },
            ],
        },
        {
            "round": 2,
            "matches": [
                {
                    "match_no": 1,
                    "match_id": "mch_01M8QKHG9J8H7G6F5E4D3C2B1A",
                    "first_seat": 1,
                    "second_seat": 2,
                    "winner_seat": None,
                }
            ],
        },
    ],
    "standings": [
        {"seats": [1, 2], "first_place": 1, "last_place": 2},
        {"seats": [3, 4], "first_place": 3, "last_place": 4},
    ],
    "started_at": "2026-12-06T04:20:00Z",
}
_TOURNAMENT_STATEMENT: dict[str, Any] = {
    "tournament_id": "trn_01M94TTG2XY0T12QHZQ41R6ECT",
    "object": "tournament_statement",
    "status": "running",
    "lines": [
        {
            "transaction_id": "txn_01M8QKHEK8FQGZYSNDF96YJDAX",
            "kind": "entry",
            "player_id": "ply_01M8QKHDTBWNEQN15ZC1SR0E5F",
            "amount": {"amount": 1100, "currency": "EUR"},
            "created_at": "2026-12-06T04:10:00Z",
        },
        {
            "transaction_id": "txn_01M8R2C9Q1A3C5E7G9J1L3N5P7",
            "kind": "fee",
            "player_id": None,
            "amount": {"amount": -400, "currency": "EUR"},
            "created_at": "2026-12-06T04:20:00Z",
        },
    ],
    "held": {"amount": 700, "currency": "EUR"},
}

RESPONSE_EXAMPLES: dict[str, Any] = {
    "getOperator": {
        "id": "op_01M8QKHDNG3GQF6XS3A9H386D5",
        "object": "operator",
        "name": "Acme Casino",
        "created_at": "2026-12-01T01:29:35Z",
    },
    "listApiKeys": {
        "object": "list",
        "has_more": False,
        "next_cursor": None,
        "data": [_API_KEY],
    },
    "createApiKey": {**_API_KEY, "secret": "sk_k0-F8dSYEYSMhxx2eVTqgZGfToL1QV5BRObwrP2855s"},
    "revokeApiKey": {**_API_KEY, "revoked_at": "2026-12-02T09:00:00Z"},
    "listPlayers": {
        "object": "list",
        "has_more": True,
        "next_cursor": "ply_01M8QKHDPK9434WX4952HXJ2GB",
        "data": [
            _PLAYER,
        ],
    },
    "createPlayer": _PLAYER,
    "getPlayer": _PLAYER,
    "createTournament": _TOURNAMENT_OPEN,
    "listTournaments": {
        "object": "list",
        "has_more": False,
        "next_cursor": None,
        "data": [_TOURNAMENT_OPEN],
    },
    "getTournament": _TOURNAMENT_RUNNING,
    "registerForTournament": {
        **_TOURNAMENT_OPEN,
        "entries_taken": 1,
        "entries": [_TOURNAMENT_ENTRY],
        "you": 1,
    },
    "unregisterFromTournament": _TOURNAMENT_OPEN,
    "cancelTournament": {
        **_TOURNAMENT_OPEN,
        "status": "cancelled",
        "cancelled_at": "2026-12-06T04:30:00Z",
    },
    "getTournamentStatement": _TOURNAMENT_STATEMENT,
    "updatePlayer": _PLAYER,
    "createPlayerToken": {
        "object": "player_token",
        "token": "pt_eyJleHAiOjE3OTYwODk0NzUsIm9wIjoib3BfMDFNOFFLSERORzNHUUY2W"
        "FMzQTlIMzg2RDUiLCJwbHkiOiJwbHlfMDFNOFFLSERQSzk0MzRXWDQ5NTJIW"
        "EoyR0IifQ.N_EhiOIt1tSg-S5K2B0qcHYD7vWoQtPYXACiqgSLUOQ",
        "player_id": "ply_01M8QKHDPK9434WX4952HXJ2GB",
        "expires_at": "2026-12-01T01:44:35Z",
    },
    "setSelfExclusion": {
        "id": "ply_01M8QKHDPK9434WX4952HXJ2GB",
        "object": "player",
        "external_id": "u-1001",
        "display_name": "Alice",
        "display_currency": "USD",
        "self_excluded_until": "2027-06-01T00:00:00Z",
        "created_at": "2026-12-01T01:29:35Z",
    },
    "getDepositLimits": _DEPOSIT_LIMITS,
    "setDepositLimits": _DEPOSIT_LIMITS,
    "listWallets": {
        "object": "list",
        "has_more": False,
        "next_cursor": None,
        "data": [
            _WALLET,
        ],
    },
    "getWallet": _WALLET,
    "createDeposit": {**_DEPOSIT, "wallet": _WALLET},
    "createWithdrawal": {
        **_DEPOSIT,
        "id": "txn_01M8QKHDQXCVASK77469TEW7Q2",
        "kind": "withdrawal",
        "amount": {"amount": 500, "currency": "EUR"},
        "external_reference": "cashier-8813",
        "wallet": {
            **_WALLET,
            "available": {"amount": 1000, "currency": "EUR"},
            "balance": {"amount": 1000, "currency": "EUR"},
        },
    },
    "listLedgerEntries": {
        "object": "list",
        "has_more": False,
        "next_cursor": None,
        "data": [
            {
                "id": "ent_01M8QKHDQYJ6GHGEZ151CABT0K",
                "object": "entry",
                "kind": "deposit",
                "account": "available",
                "amount": {"amount": 1500, "currency": "EUR"},
                "balance_after": {"amount": 1500, "currency": "EUR"},
                "transaction_id": "txn_01M8QKHDQXCVASK77469TEMEV9",
                "match_id": None,
                "external_reference": None,
                "created_at": "2026-12-01T01:29:35Z",
            }
        ],
    },
    "getTransaction": _DEPOSIT,
    "listExchangeRates": {
        "object": "list",
        "has_more": False,
        "next_cursor": None,
        "data": [
            _EXCHANGE_RATE,
        ],
    },
    "setExchangeRate": _EXCHANGE_RATE,
    "listTables": {
        "object": "list",
        "has_more": False,
        "next_cursor": None,
        "data": [_TABLE_ONE_SEATED],
    },
    "createTable": _TABLE_OPEN,
    "getTable": _TABLE_PLAYING,
    "joinTable": _TABLE_ONE_SEATED,
    "leaveTable": _TABLE_OPEN,
    "topUpSeat": _PER_HAND_TABLE,
    "setSeatReady": _PER_HAND_TABLE,
    "seatBot": {
        "object": "bot",
        "player_id": "ply_01M8QKHB7Y3T5R1P9N7L5J3G1E",
        "table_id": "tbl_01M8QKHDVR8TZV586GPJ3RC35R",
        "match_id": "mch_01M8QKHDVRPXSVHRM5DFJYRDQB",
        "strategy": "sensible",
        "created_at": "2026-12-01T01:29:40Z",
        "table": _PRACTICE_TABLE_WITH_BOT,
    },
    "enterTournamentBot": {
        "object": "bot",
        "player_id": "ply_01M8QKHB7Y3T5R1P9N7L5J3G1E",
        "tournament_id": "trn_01M94TTG2XY0T12QHZQ41R6ECT",
        "strategy": "sensible",
        "created_at": "2026-12-06T04:10:00Z",
        "tournament": {
            **_TOURNAMENT_OPEN,
            "name": "Practice: Two-player Gin knockout of 4",
            "currency": "XPM",
            "practice": True,
            "buy_in": {"amount": 1000, "currency": "XPM"},
            "fee": {"amount": 100, "currency": "XPM"},
            "prize_pool": {"amount": 4000, "currency": "XPM"},
            "entries_taken": 1,
            "entries": [{**_TOURNAMENT_ENTRY, "player_id": "ply_01M8QKHB7Y3T5R1P9N7L5J3G1E"}],
        },
    },
    "listBots": {
        "object": "list",
        "has_more": False,
        "next_cursor": None,
        "data": [
            {
                "object": "bot",
                "player_id": "ply_01M8QKHB7Y3T5R1P9N7L5J3G1E",
                "table_id": "tbl_01M8QKHDVR8TZV586GPJ3RC35R",
                "match_id": "mch_01M8QKHDVRPXSVHRM5DFJYRDQB",
                "strategy": "sensible",
                "created_at": "2026-12-01T01:29:40Z",
            }
        ],
    },
    "getMatch": _MATCH_VIEW,
    "followLobby": {"event": "lobby", "data": '{"object": "list", "has_more": false, "data": []}'},
    # One event of the stream (its fields as the text/event-stream lines name them): an
    # update carrying the view, as getMatch answers it (shortened here).
    "followMatch": {
        "event": "update",
        "id": str(_MATCH_VIEW["version"]),
        "data": f'{{"id": "{_MATCH_VIEW["id"]}", "version": {_MATCH_VIEW["version"]}}}',
    },
    # An update of a tournament's stream: the tournament as getTournament answers it
    # (shortened here).
    "followTournament": {
        "event": "update",
        "id": str(_TOURNAMENT_RUNNING["version"]),
        "data": (
            f'{{"id": "{_TOURNAMENT_RUNNING["id"]}", "status": "running", '
            f'"version": {_TOURNAMENT_RUNNING["version"]}}}'
        ),
    },
    "playAction": _AFTER_TAKE_UPCARD,
    "getHandHistory": {
        "id": "hnd_01M8QKHE1PVXWPZMV1ZKV26VT3",
        "object": "hand",
        "match_id": "mch_01M8QKHE0EZM7H9STJDMN65ZBN",
        "number": 1,
        "started_at": "2026-12-01T01:29:36Z",
        "ended_at": "2026-12-01T01:29:36Z",
        "verify_url": "/verify?hand=hnd_01M8QKHE1PVXWPZMV1ZKV26VT3",
        "fairness": {
            "algorithm": "hmac-sha256-fisher-yates-v1",
            "commitment": "c0d87dcc87e41be6330f0a56a017704aae10d976f2470a6a5edd44507b702f3a",
            "server_seed": "83911b121191936b26a24bff61ea319cfe5be104b783380f378ea13369587831",
            "client_seed_1": "21659e7ed0a2ed50db449bfd762de013",
            "client_seed_2": "73513883328a7b960e3b4c55be60da0c",
            "nonce": 1,
        },
        "history": {
            "deck": [
                "KS",
                "4C",
                "9D",
                "AS",
                "3C",
                "9S",
                "3D",
                "9C",
                "2D",
                "JH",
                "QS",
                "TC",
                "2C",
                "7C",
                "9H",
                "3S",
                "5D",
                "4D",
                "4S",
                "TH",
                "AH",
                "6D",
                "AD",
                "6C",
                "8D",
                "3H",
                "KC",
                "5H",
                "TS",
                "QH",
                "TD",
                "5C",
                "JS",
                "5S",
                "4H",
                "8S",
                "KH",
                "7D",
                "AC",
                "7H",
                "8H",
                "QC",
                "JC",
                "7S",
                "KD",
                "QD",
                "6H",
                "8C",
                "2H",
                "2S",
                "6S",
                "JD",
            ],
            "dealer": 1,
            "ruleset": _RULESET,
            "upcard": "AH",
            "knock_limit": 10,
            "multiplier": 1,
            "actions": [
                {
                    "seq": 1,
                    "seat": 0,
                    "action": "TAKE_UPCARD",
                    "at": "2026-12-01T01:29:36Z",
                    "card": "AH",
                },
                {
                    "seq": 2,
                    "seat": 0,
                    "action": "DISCARD",
                    "at": "2026-12-01T01:29:36Z",
                    "card": "KS",
                },
                {
                    "seq": 3,
                    "seat": 1,
                    "action": "DRAW_STOCK",
                    "at": "2026-12-01T01:29:36Z",
                    "card": "6D",
                },
                {
                    "seq": 4,
                    "seat": 1,
                    "action": "DISCARD",
                    "at": "2026-12-01T01:29:36Z",
                    "card": "JH",
                },
            ],
            "final_hands": [
                ["2C", "3C", "5C", "AD", "2D", "3D", "5D", "AH", "3H", "5H"],
                ["4C", "6C", "9C", "4D", "6D", "9D", "9H", "AS", "3S", "9S"],
            ],
            "outcome": {
                "kind": "knock",
                "winner": 0,
                "points": 15,
                "knocker": 0,
                "knock_card": "4S",
                "score": {
                    "kind": "knock",
                    "winner": "knocker",
                    "points": 15,
                    "knocker_deadwood": 6,
                    "defender_deadwood": 21,
                    "defender_deadwood_before_layoffs": 24,
                    "knocker": {
                        "melds": [["3C", "3D", "3H"], ["5C", "5D", "5H"]],
                        "unmatched": ["2C", "AD", "2D", "AH"],
                        "deadwood": 6,
                    },
                    "defender": {
                        "melds": [["9C", "9D", "9H", "9S"]],
                        "laid_off": ["3S"],
                        "unmatched": ["4C", "6C", "4D", "6D", "AS"],
                        "deadwood": 21,
                    },
                    "multiplier": 1,
                    "knock_limit": 10,
                },
            },
        },
    },
    "getSettlement": _SETTLEMENT,
    "listSettlements": {
        "object": "list",
        "has_more": False,
        "next_cursor": None,
        "data": [
            _SETTLEMENT,
        ],
    },
    "auditSettlement": {
        "object": "settlement_audit",
        "settlement_id": "stl_01M8QKHEKDTZFNKNVGAEP7PVV2",
        "match_id": "mch_01M8QKHE0EZM7H9STJDMN65ZBN",
        "operator_id": "op_01M8QKHDNG3GQF6XS3A9H386D5",
        "format": "first_to_knock",
        "hands_replayed": 1,
        "ok": True,
        "discrepancies": [],
        "audited_at": "2026-12-01T01:29:36Z",
    },
    "auditLedger": {
        "object": "ledger_audit",
        "operator_id": "op_01M8QKHDNG3GQF6XS3A9H386D5",
        "ok": True,
        "accounts_checked": 11,
        "transactions_checked": 10,
        "entries_checked": 22,
        "settled_matches_checked": 1,
        "discrepancies": [],
        "audited_at": "2026-12-01T01:29:36Z",
    },
    "auditTournament": {
        "object": "tournament_audit",
        "tournament_id": "trn_01M94TTG2XY0T12QHZQ41R6ECT",
        "operator_id": "op_01M8QKHDNG3GQF6XS3A9H386D5",
        "status": "finished",
        "matches_checked": 3,
        "ok": True,
        "discrepancies": [],
        "audited_at": "2026-12-06T05:01:00Z",
    },
    "listWebhookEndpoints": {
        "object": "list",
        "has_more": False,
        "next_cursor": None,
        "data": [
            _WEBHOOK_ENDPOINT,
        ],
    },
    "createWebhookEndpoint": _with_secret("whsec_AyzT7BpNt-DB7sCQ2v2rqYAaTcRN1xy1UPiJzkP4yjY"),
    "getWebhookEndpoint": _WEBHOOK_ENDPOINT,
    "updateWebhookEndpoint": {**_WEBHOOK_ENDPOINT, "enabled": False},
    "deleteWebhookEndpoint": {**_WEBHOOK_ENDPOINT, "deleted": True},
    "rotateWebhookSecret": _with_secret(
        "whsec_Q1n4pYb2tW0vUe6rS8dF3gH5jK7lZ9xC1vB3nM5aS7d",
        previous_secret_expires_at="2026-12-02T01:29:31Z",
        updated_at="2026-12-01T01:29:31Z",
    ),
    "listWebhookDeliveries": {
        "object": "list",
        "has_more": False,
        "next_cursor": None,
        "data": [
            _WEBHOOK_DELIVERY,
        ],
    },
    "getWebhookDelivery": _WEBHOOK_DELIVERY,
    "redeliverWebhook": _WEBHOOK_DELIVERY,
    "sendTestWebhookEvent": {
        **_WEBHOOK_DELIVERY,
        "id": "whd_01M8QKHB7WQ9D3P5K7Y9A1C3E5",
        "event_id": "evt_01M8QKHB7S2T4V6X8Z0B2D4F6H",
        "event_type": "webhook.test",
        "attempt_count": 0,
        "next_attempt_at": "2026-12-01T01:31:00Z",
        "last_attempt_at": None,
        "last_status_code": None,
        "last_error": None,
        "created_at": "2026-12-01T01:31:00Z",
        "attempts": [],
    },
    "listWalletSettings": {
        "object": "list",
        "has_more": False,
        "next_cursor": None,
        "data": [_WALLET_SETTINGS],
    },
    "setWalletSettings": {
        **_WALLET_SETTINGS,
        "secret": "whsec_b3Jd8kQ2mZp5sV9xT1wN6yR4cF7gH0aL2eU8iO3qW5t",
    },
    "rotateWalletSecret": {
        **_WALLET_SETTINGS,
        "secret": "whsec_Z8xC6vB4nM2aS0dF9gH7jK5lQ3wE1rT8yU6iO4pA2s",
        "previous_secret_expires_at": "2026-12-05T10:02:11Z",
        "updated_at": "2026-12-04T10:02:11Z",
    },
    "listWalletCalls": {
        "object": "list",
        "has_more": False,
        "next_cursor": None,
        "data": [
            {
                "id": "wtx_01M8R2C9Q4J7VY3M0X2K5T8B1N",
                "object": "wallet_call",
                "kind": "credit",
                "reason": "payout",
                "player_id": "ply_01M8QKHDTBWNEQN15ZC1SR0E5F",
                "amount": {"amount": 950, "currency": "EUR"},
                "round_id": "rnd_01M8R2B1X0W9V8T7S6R5Q4P3N2",
                "table_id": "tbl_01M8QKHDVR8TZV586GPJ3RC35R",
                "match_id": "mch_01M8QKHDVRPXSVHRM5DFJYRDQB",
                "state": "acknowledged",
                "rollback_id": None,
                "references": ["wtx_01M8R2B1Y7K3F5H9J2M4N6P8Q0"],
                "declined": None,
                "ledger_transaction_id": "txn_01M8R2C9Q1A3C5E7G9J1L3N5P7",
                "attempts": 1,
                "next_attempt_at": None,
                "last_error": None,
                "escalated_at": None,
                "created_at": "2026-12-04T10:05:41Z",
                "completed_at": "2026-12-04T10:05:41Z",
            }
        ],
    },
}
# A hand read by its own id is the same history.
RESPONSE_EXAMPLES["getHand"] = RESPONSE_EXAMPLES["getHandHistory"]
