"""The registry of games (service.games.registry): every game a table can name has one spec,
the spec states what the settings check, and a match finds its game by its engine; two-player
Gin's stored state names its kind, and one stored without it still reads as Gin."""

from __future__ import annotations

import dataclasses
import random
from typing import Any

import pytest
from marshmallow import fields, validate

from service import games
from service.games import registry
from service.games.common import fair
from service.games.common.errors import InvalidState
from service.games.common.settings import GameKind, MatchSettings
from service.games.gin.match import Match
from service.games.protocol import RESIGN
from service.games.registry import GAME_FORMATS, GAME_SEATS
from service.games.rummy.match import RummyMatch
from service.games.rummy.rules import RummyRules

FIXED = {"format": "match_play", "stake": 100}
TABLES = {
    GameKind.GIN: (MatchSettings.from_dict(FIXED), 2),
    GameKind.GIN_THREE: (MatchSettings.from_dict({**FIXED, "game": "gin_three", "seats": 3}), 3),
    GameKind.GIN_PARTNERSHIP: (
        MatchSettings.from_dict({**FIXED, "game": "gin_partnership", "seats": 4}),
        4,
    ),
    GameKind.RUMMY: (
        MatchSettings.from_dict(
            {
                "game": "rummy",
                "format": "rummy_target",
                "seats": 3,
                "stake_per_point": 1,
                "min_buyin": 100,
                "max_buyin": 500,
                "target": 100,
            }
        ),
        3,
    ),
}


def test_every_game_a_table_can_name_has_one_spec() -> None:
    assert list(registry.GAMES) == list(GameKind)
    assert registry.DEFAULT.kind is GameKind.GIN
    for kind, game in registry.GAMES.items():
        assert game.kind is kind
        assert registry.spec(kind.value) is game
        assert game.formats == GAME_FORMATS[kind]
    kinds = [game.engine.KIND for game in registry.GAMES.values()]
    assert len(set(kinds)) == len(kinds)
    with pytest.raises(ValueError):
        registry.spec("poker")


def test_the_seat_counts_are_those_the_settings_accept() -> None:
    for kind, game in registry.GAMES.items():
        if kind in GAME_SEATS:
            assert list(game.seat_counts) == [GAME_SEATS[kind]]
        else:
            assert list(game.seat_counts) == list(range(2, RummyRules().max_players + 1))


@pytest.mark.parametrize("kind", list(GameKind))
def test_a_match_finds_its_game_and_survives_storage(kind: GameKind) -> None:
    settings, seats = TABLES[kind]
    game = registry.spec(kind)
    match = games.new_match(settings, seats, random.Random(3).randrange)
    assert isinstance(match, game.engine)
    assert registry.spec_of(match) is game
    games.deal(match, fair.new_server_seed(), ["s"] * seats, 0)
    state = match.to_dict()
    assert state["kind"] == game.engine.KIND
    assert registry.kind_of(state) is game
    assert games.from_state(state) == match
    restarted = games.restart(state)
    assert isinstance(restarted, game.engine) and games.pending_deal(restarted) is not None


def test_gin_state_names_its_kind_and_one_without_it_reads_as_gin() -> None:
    settings, _ = TABLES[GameKind.GIN]
    match = games.new_match(settings, 2, random.Random(5).randrange)
    games.deal(match, fair.new_server_seed(), ["a", "b"], 0)
    state = match.to_dict()
    assert state["kind"] == "gin"
    legacy = {k: v for k, v in state.items() if k != "kind"}  # as stored before it had one
    assert registry.kind_of(legacy) is registry.GAMES[GameKind.GIN]
    read = games.from_state(legacy)
    assert isinstance(read, Match) and read == match
    assert read.to_dict() == state  # written back, it names its kind
    assert games.restart(legacy).first_dealer == match.first_dealer


def test_a_state_of_another_or_no_known_kind_is_refused() -> None:
    settings, _ = TABLES[GameKind.GIN]
    state = Match(settings, 0).to_dict()
    with pytest.raises(InvalidState, match="unknown match kind 'poker'"):
        games.from_state({**state, "kind": "poker"})
    with pytest.raises(InvalidState, match="unknown match kind"):
        games.restart({**state, "kind": 7})
    with pytest.raises(InvalidState, match="not a gin match state"):
        Match.from_dict({**state, "kind": RummyMatch.KIND})


def test_the_simulator_and_the_table_schema_list_the_registry_s_games() -> None:
    from service import simulate
    from service.api.play_schemas import TableIn

    assert {
        game.kind.value: tuple(f.value for f in game.formats) for game in registry.GAMES.values()
    } == simulate.GAMES
    branches = TableIn.json_schema["allOf"][1]["oneOf"]
    named = {b["properties"]["game"]["const"]: b["properties"] for b in branches}
    assert list(named) == [g.value for g in registry.GAMES if g is not GameKind.GIN] + ["gin"]
    for kind, properties in named.items():
        game = registry.spec(kind)
        assert properties["format"]["enum"] == [f.value for f in game.formats]
        assert ("seat_count" in properties) == (len(game.seat_counts) == 1)


def test_each_game_states_its_tournaments_its_continuous_tables_and_its_actions() -> None:
    knockout = {g.kind.value: [f.value for f in g.knockout] for g in registry.SPECS if g.knockout}
    assert knockout == {"gin": ["first_to_knock", "match_play"]}
    single = {
        g.kind.value: [f.value for f in g.single_table] for g in registry.SPECS if g.single_table
    }
    assert single == {
        "gin_three": ["match_play"],
        "gin_partnership": ["match_play"],
        "rummy": ["rummy_target", "rummy_deals"],
    }
    assert [g.kind for g in registry.SPECS if g.continuous] == [GameKind.RUMMY]
    assert [f.value for f in registry.CONTINUOUS_FORMATS] == ["rummy_per_hand"]
    assert all(RESIGN in g.actions for g in registry.SPECS)
    assert registry.ACTIONS[-4:] == (RESIGN, "TURN_OVER", "MELD", "LAY_OFF")


def test_a_two_player_match_has_no_single_table_standing() -> None:
    settings, _ = TABLES[GameKind.GIN]
    assert registry.GAMES[GameKind.GIN].standing(Match(settings, 0)) is None


def test_the_table_request_s_option_schemas_come_from_the_specs() -> None:
    """Every option of every options type a table carries has a field in its key's schema,
    under each key its spec gives it and with the spec's range, unless the spec leaves it out
    of the request; the key's field in the table request is described by the spec."""
    from service.api.play_schemas import OPTIONS_IN, TableIn

    assert list(OPTIONS_IN) == list(registry.OPTIONS) == ["ruleset", "rummy"]
    assert [schema.__name__ for schema in OPTIONS_IN.values()] == ["RulesetIn", "RummyIn"]
    table = TableIn()
    for key, game in registry.OPTIONS.items():
        options: Any = game.options
        assert [o.name for o in game.option_fields] == [f.name for f in dataclasses.fields(options)]
        sent = {k: o for o in game.option_fields if o.requested for k in (o.name, *o.other_keys)}
        schema = OPTIONS_IN[key]()
        by_key = {field.data_key or name: field for name, field in schema.fields.items()}
        assert by_key.keys() == sent.keys()
        for sent_as, option in sent.items():
            field = by_key[sent_as]
            if isinstance(field, fields.Integer):
                (bounds,) = [v for v in field.validators if isinstance(v, validate.Range)]
                assert (bounds.min, bounds.max) == (option.low, option.high), sent_as
        nested = table.fields[key]
        assert isinstance(nested, fields.Nested) and nested.nested is OPTIONS_IN[key]
        assert nested.metadata["description"] == game.options_description

    ruleset = {o.name: o for o in registry.OPTIONS["ruleset"].option_fields}
    assert (ruleset["knock_limit"].low, ruleset["knock_limit"].high) == (0, 10)
    assert ruleset["spade_doubles"].other_keys == ("oklahoma.spade_doubles",)
    assert ruleset["gin_bonus"].other_keys == ("gin.gin_bonus",)
    rummy = {o.name: o for o in registry.OPTIONS["rummy"].option_fields}
    assert (rummy["max_players"].low, rummy["max_players"].high) == (2, 6)
    assert not rummy["match"].requested and rummy["max_turns"].other_keys == ()
