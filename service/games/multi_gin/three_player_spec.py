"""Three-player Gin (docs/multiplayer-gin.md): two play while one sits out, the seating
drawn at the start; Match Play or classic money pairs (11.1, 11.4)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from service.games.bots import decide_multi
from service.games.common.errors import InvalidState
from service.games.common.settings import Format, GameKind, MatchSettings
from service.games.common.statement import Statement
from service.games.gin.formats import MATCH_PLAY
from service.games.multi_gin.payout import settle_three_player
from service.games.multi_gin.pots import match_play_forfeit, three_player_match_play
from service.games.multi_gin.spec import MultiGinSpec
from service.games.multi_gin.three_player import Seating, ThreePlayerMatch


class ThreePlayerSpec(MultiGinSpec[ThreePlayerMatch]):
    """Gin at three seats."""

    kind = GameKind("gin_three")
    title = "three-player Gin"
    seat_counts = range(3, 4)
    engine = ThreePlayerMatch
    bot = staticmethod(decide_multi)
    description = "`gin_three` 3 seats, `match_play` or `classic` (`seat_count` may be left out)"

    @property
    def examples(self) -> dict[Format, dict[str, Any]]:
        return self.table_examples({})

    def new_match(
        self, settings: MatchSettings, players: int, randbelow: Callable[[int], int]
    ) -> ThreePlayerMatch:
        return ThreePlayerMatch(settings, Seating.drawn(randbelow))

    def restart(self, state: Mapping[str, Any]) -> ThreePlayerMatch:
        try:
            settings = MatchSettings.from_dict(state["settings"])
            return ThreePlayerMatch(settings, Seating.from_dict(state["first_seating"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidState(f"malformed match state: {exc!r}") from None

    def settle(self, match: ThreePlayerMatch, escrow: dict[int, int]) -> Statement:
        settings = match.settings
        standings = match.standings()
        fee = settings.fee
        if settings.format is MATCH_PLAY:
            if standings.forfeiter is not None:
                return match_play_forfeit(escrow, standings.forfeiter, standings.hand_points, fee)
            assert standings.winner is not None
            return three_player_match_play(escrow, standings.winner, fee)
        return settle_three_player(
            standings,
            settings.stake_per_point,
            escrow,
            fee,
            shutout_mode=settings.ruleset.shutout_mode,
        )


GIN_THREE = ThreePlayerSpec()
