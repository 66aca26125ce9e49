"""Opening a table and taking a seat: a refused request is answered once, with every field at
fault named as the request spells it (``seat_count``, ``fee.base``), and each message says
what the game and format asked for need, not what another format would."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from service.api import spec_yaml
from service.games.common.settings import Format
from service.games.registry import FIXED_STAKE_FORMATS, GAME_FORMATS
from tests.api.play_clients import join, open_table, player_client
from tests.api.test_openapi import _valid
from tests.conftest import ApiClient, assert_problem

BUYIN_FIELDS = {"stake_per_point", "min_buyin", "max_buyin"}
#: Every game and format a table can be opened in, with the fields it cannot do without.
COMBINATIONS = [
    (game, fmt, ({"stake"} if fmt in FIXED_STAKE_FORMATS else BUYIN_FIELDS))
    for game, formats in GAME_FORMATS.items()
    for fmt in formats
]
#: Words that name a format in a message; a message may only name the table's own.
FORMAT_WORDS = {
    Format.FIRST_TO_KNOCK: ("first_to_knock", "First To Knock"),
    Format.MATCH_PLAY: ("match_play", "Match Play"),
    Format.MONEY_PLAY: ("money_play", "Money Play"),
    Format.CLASSIC: ("classic", "Classic"),
    Format.RUMMY_PER_HAND: ("rummy_per_hand",),
    Format.RUMMY_TARGET: ("rummy_target",),
    Format.RUMMY_DEALS: ("rummy_deals",),
}


def _errors(response: Any) -> dict[str, list[str]]:
    body = assert_problem(response, 422, "validation_failed")
    out: dict[str, list[str]] = {}
    for error in body["errors"]:
        out.setdefault(error["field"], []).append(error["message"])
    return out


def _only_its_format(fmt: Format, messages: list[str]) -> None:
    for other, words in FORMAT_WORDS.items():
        if other is not fmt:
            for word in words:
                assert not any(word in m for m in messages), (fmt, word, messages)


@pytest.mark.parametrize(
    ("game", "fmt", "needed"),
    COMBINATIONS,
    ids=[f"{g.value}-{f.value}" for g, f, _ in COMBINATIONS],
)
def test_a_bare_table_request_names_every_missing_field_at_once(
    api: ApiClient, game: Any, fmt: Format, needed: set[str]
) -> None:
    expected = needed | ({"seat_count"} if game.value == "rummy" else set())
    errors = _errors(
        api.post("/v1/tables", {"game": game.value, "format": fmt.value, "currency": "EUR"})
    )
    assert set(errors) == expected, errors
    messages = [m for ms in errors.values() for m in ms]
    _only_its_format(fmt, messages)
    for field in needed:
        assert any(fmt.value in m and "required" in m for m in errors[field]), errors[field]


def test_the_four_player_rummy_table_is_refused_once_with_every_fault(api: ApiClient) -> None:
    """The newcomer's first try: no stake fields, and a fee on the pot."""
    body = {
        "game": "rummy",
        "seat_count": 4,
        "format": "rummy_per_hand",
        "currency": "EUR",
        "fee": {"bps": 500, "base": "POT"},
    }
    errors = _errors(api.post("/v1/tables", body))
    assert set(errors) == {"stake_per_point", "min_buyin", "max_buyin", "fee.base"}, errors
    _only_its_format(Format.RUMMY_PER_HAND, [m for ms in errors.values() for m in ms])
    assert "WINNINGS" in errors["fee.base"][0]


def test_a_fee_without_its_base_is_taken_where_the_format_takes_it(api: ApiClient) -> None:
    body = {"stake_per_point": 5, "min_buyin": 100, "max_buyin": 1000, "fee": {"bps": 500}}
    rummy = open_table(api, game="rummy", seat_count=4, format="rummy_per_hand", **body)
    assert rummy["settings"]["fee"]["base"] == "WINNINGS"
    classic = open_table(api, format="classic", **body)
    assert classic["settings"]["fee"]["base"] == "WINNINGS"
    match_play = open_table(api, format="match_play", stake=500, fee={"bps": 500})
    assert match_play["settings"]["fee"]["base"] == "POT"


def test_field_errors_and_rules_between_fields_come_in_one_answer(api: ApiClient) -> None:
    body = {
        "game": "rummy",
        "format": "rummy_target",
        "currency": "XPM",
        "fee": {"bps": "ten"},
        "rummy": {"match": "PER_HAND"},
    }
    errors = _errors(api.post("/v1/tables", body))
    assert set(errors) == {
        "fee.bps",
        "seat_count",
        "stake_per_point",
        "min_buyin",
        "max_buyin",
        "currency",
        "rummy.match",
    }, errors


def test_nested_settings_are_named_by_their_dotted_path(api: ApiClient) -> None:
    body = {"format": "match_play", "currency": "EUR", "stake": 5}
    errors = _errors(api.post("/v1/tables", {**body, "fee": {"minimum": 9, "maximum": 3}}))
    assert set(errors) == {"fee.maximum"}, errors
    assert "fee.minimum" in errors["fee.maximum"][0]


def test_a_seat_at_a_per_hand_table_names_its_missing_buyin_with_every_other_fault(
    api: ApiClient,
) -> None:
    table = open_table(
        api,
        game="rummy",
        seat_count=4,
        format="rummy_per_hand",
        stake_per_point=5,
        min_buyin=100,
        max_buyin=1000,
    )
    player = player_client(api)
    errors = _errors(join(player, table["id"]))
    assert set(errors) == {"buyin"}, errors
    assert "required" in errors["buyin"][0] and "100" in errors["buyin"][0], errors
    assert not errors["buyin"][0].startswith("buyin:"), "the field is named once, in field"
    errors = _errors(join(player, table["id"], client_seed="a:b"))
    assert set(errors) == {"buyin", "client_seed"}, errors
    assert join(player, table["id"], buyin=500).status_code == 201


@pytest.mark.parametrize(
    ("body", "refused"),
    [({"client_seed": "s" * 65}, "client_seed"), ({"invite_code": 7}, "invite_code")],
)
def test_a_seat_refused_for_a_field_names_the_missing_buyin_in_the_same_answer(
    api: ApiClient, body: dict[str, Any], refused: str
) -> None:
    """Before: the field's refusal came alone, and the missing buy-in only in a second answer,
    to the corrected request. Nothing is kept under the key: the corrected request may use it."""
    table = open_table(
        api,
        game="rummy",
        seat_count=4,
        format="rummy_per_hand",
        stake_per_point=5,
        min_buyin=100,
        max_buyin=1000,
    )
    player = player_client(api)
    seats = f"/v1/tables/{table['id']}/seats"
    errors = _errors(player.post(seats, body, key="seat"))
    assert set(errors) == {"buyin", refused}, errors
    assert "required" in errors["buyin"][0] and "100" in errors["buyin"][0], errors
    assert player.post(seats, {"buyin": 500}, key="seat").status_code == 201


def test_a_seat_refused_for_a_field_adds_no_rule_of_an_unknown_table_or_to_a_non_object(
    api: ApiClient,
) -> None:
    """An unknown table (as another operator's) adds no rule of its own to the body's errors,
    nor does a table to a body that is no object."""
    player = player_client(api)
    errors = _errors(join(player, "tbl_unknown", client_seed="s" * 65))
    assert set(errors) == {"client_seed"}, errors
    table = open_table(
        api,
        game="rummy",
        seat_count=4,
        format="rummy_per_hand",
        stake_per_point=5,
        min_buyin=100,
        max_buyin=1000,
    )
    errors = _errors(player.post(f"/v1/tables/{table['id']}/seats", [], key="seat"))
    assert set(errors) == {"(body)"}, errors


RUMMY = {"game": "rummy", "format": "rummy_deals", "currency": "EUR", "stake_per_point": 1}
BOUNDED = [
    ({**RUMMY, "seat_count": 3, "rummy": {"max_players": 2}}, False),
    ({**RUMMY, "seat_count": 2, "rummy": {"max_players": 2}}, True),
    ({**RUMMY, "seat_count": 6}, True),
    (
        {
            "game": "gin_partnership",
            "format": "match_play",
            "currency": "EUR",
            "stake": 5,
            "rummy": {"max_players": 2},
        },
        True,
    ),
]


@pytest.fixture(scope="module")
def contract(app: Any) -> dict[str, Any]:
    return dict(yaml.safe_load(spec_yaml(app)))


@pytest.mark.parametrize(("body", "valid"), BOUNDED)
def test_the_contract_bounds_a_rummy_seat_count_by_its_max_players_as_the_service_does(
    api: ApiClient, contract: dict[str, Any], body: dict[str, Any], valid: bool
) -> None:
    body = {**body, "min_buyin": 100, "max_buyin": 100} if "stake" not in body else body
    assert _valid(contract, "TableIn", body) is valid
    response = api.post("/v1/tables", body)
    assert (response.status_code == 201) is valid, response.get_json()
    if not valid:
        assert set(_errors(response)) == {"seat_count"}
