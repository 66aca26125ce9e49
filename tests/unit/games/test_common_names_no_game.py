"""What the games share names none of them: no module of ``service/games/common`` imports a
game's package, nor does any module outside ``service/games`` (the use cases, the API, the
tournaments, the worker ask the registry), and the settings find each game's rules through
the registry."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from service.games import registry
from service.games.common.errors import InvalidSettings
from service.games.common.settings import Format, GameKind, MatchSettings

ROOT = Path(__file__).resolve().parents[3]
COMMON = ROOT / "service" / "games" / "common"
GAME_PACKAGES = ("service.games.gin", "service.games.multi_gin", "service.games.rummy")
#: Every module outside service/games: each reaches a game through the registry alone.
OUTSIDE = sorted(
    path
    for folder in ("service", "worker")
    for path in (ROOT / folder).rglob("*.py")
    if not path.is_relative_to(ROOT / "service" / "games")
)


def imported_games(module: Path) -> set[str]:
    """The modules of a game's package that ``module`` imports."""
    imported = set()
    for node in ast.walk(ast.parse(module.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
        elif isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
    return {m for m in imported if m.startswith(GAME_PACKAGES)}


@pytest.mark.parametrize("module", sorted(COMMON.glob("*.py")), ids=lambda p: p.name)
def test_no_common_module_imports_a_game(module: Path) -> None:
    games = imported_games(module)
    assert not games, f"{module.name} imports {sorted(games)}"


def test_no_module_outside_the_games_imports_a_game() -> None:
    assert len(OUTSIDE) >= 50
    found = {m.relative_to(ROOT).as_posix(): imported_games(m) for m in OUTSIDE}
    assert {module: sorted(games) for module, games in found.items() if games} == {}


def test_kinds_and_formats_are_the_registrys_interned() -> None:
    assert list(GameKind) == list(registry.GAMES)
    assert list(Format) == list(dict.fromkeys(f for g in registry.SPECS for f in g.formats))
    assert GameKind("rummy") is GameKind.RUMMY is registry.GAMES[GameKind("rummy")].kind
    assert Format("classic") is Format.CLASSIC
    with pytest.raises(AttributeError):
        _ = GameKind.POKER


def test_the_settings_ask_each_game_for_its_own_rules() -> None:
    rummy = MatchSettings.from_dict(
        {
            "game": "rummy",
            "seats": 3,
            "format": "rummy_deals",
            "target": 5,
            "stake_per_point": 1,
            "min_buyin": 10,
            "max_buyin": 20,
        }
    )
    assert rummy.rummy.match == "DEALS(5)"  # the Rummy spec fits its options
    assert rummy.uses_buyins and not rummy.continuous
    classic = MatchSettings.from_dict(
        {"format": "classic", "target": 150, "stake_per_point": 1, "min_buyin": 1, "max_buyin": 2}
    )
    assert classic.game is registry.DEFAULT.kind and classic.ruleset.target == 150
    with pytest.raises(InvalidSettings) as refused:
        MatchSettings.from_dict({"game": "gin_three", "format": "money_play", "seats": 3})
    assert refused.value.problems == (
        ("format", "gin_three is played match_play, classic, not money_play"),
    )
