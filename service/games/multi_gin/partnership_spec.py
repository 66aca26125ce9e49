"""Partnership Gin (docs/multiplayer-gin.md): four players in two teams, two tables per deal,
the dealing team drawn at the start; Match Play or classic between the teams (11.2, 11.4)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from service.games.bots import decide_multi
from service.games.common.errors import InvalidState
from service.games.common.settings import Format, GameKind, MatchSettings
from service.games.common.statement import Statement
from service.games.gin.formats import MATCH_PLAY
from service.games.multi_gin.partnership import PartnershipMatch
from service.games.multi_gin.payout import (
    PARTNERSHIP_TEAMS,
    partnership_classic,
    partnership_classic_forfeit,
)
from service.games.multi_gin.pots import match_play_forfeit, partnership_match_play
from service.games.multi_gin.spec import MultiGinSpec


class PartnershipSpec(MultiGinSpec[PartnershipMatch]):
    """Gin at four seats, in two teams."""

    kind = GameKind("gin_partnership")
    title = "partnership Gin"
    seat_counts = range(4, 5)
    engine = PartnershipMatch
    bot = staticmethod(decide_multi)
    description = (
        "`gin_partnership` 4 seats, `match_play` or `classic` (`seat_count` may be left out)"
    )

    @property
    def examples(self) -> dict[Format, dict[str, Any]]:
        return self.table_examples({"cap_mode": "MIN_BOTH"})

    def new_match(
        self, settings: MatchSettings, players: int, randbelow: Callable[[int], int]
    ) -> PartnershipMatch:
        return PartnershipMatch(settings, PartnershipMatch.drawn_dealing_team(randbelow))

    def restart(self, state: Mapping[str, Any]) -> PartnershipMatch:
        try:
            settings = MatchSettings.from_dict(state["settings"])
            return PartnershipMatch(settings, int(state["first_dealing_team"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidState(f"malformed match state: {exc!r}") from None

    def settle(self, match: PartnershipMatch, escrow: dict[int, int]) -> Statement:
        settings = match.settings
        standings = match.standings()
        fee, r = settings.fee, settings.stake_per_point
        if settings.format is MATCH_PLAY:
            if standings.forfeiter is not None:
                return match_play_forfeit(
                    escrow, standings.forfeiter, standings.hand_points, fee, sides=PARTNERSHIP_TEAMS
                )
            assert standings.winner is not None
            return partnership_match_play(escrow, standings.winner, fee)
        if standings.forfeiter is not None:
            return partnership_classic_forfeit(
                standings.totals,
                standings.forfeiter,
                r,
                escrow,
                fee,
                game_bonus=settings.ruleset.game_bonus,
                cap_mode=settings.cap_mode,
            )
        return partnership_classic(standings.totals, r, escrow, fee, cap_mode=settings.cap_mode)


GIN_PARTNERSHIP = PartnershipSpec()
