"""Classic Gin for stakes at three players and in partnership (4.1.5, 4.2.7, 11.1-11.2, 11.6-11.7).

Three players settle pair by pair: in every pair the higher final total receives the
difference from the lower, the two non-winners included; the game's winner also receives the
shutout amount from each opponent who won no hand. The seat nets then go through the net-loss
cap and the fee per winner (:func:`~service.games.common.netting.settle_pairs`).

Partnership settles team against team: each member of the losing team pays the team margin
times the stake per point to its money partner in the winning team (seat 0 with seat 1, seat
2 with seat 3), each pair capped on its own two buy-ins by the table's ``cap_mode``, the same
two modes as two-player Money Play.

After a forfeit, totals are those of the moment with no game bonus; each opponent of the
forfeiter receives ``max(its total - the forfeiter's, 0)`` plus the game bonus, and no pair
margin goes the forfeiter's way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from service.games.common.errors import RulesError, SettlementError
from service.games.common.netting import (
    PairAmount,
    checked_int,
    checked_seats,
    finish,
    settle_pairs,
    stake_table,
)
from service.games.common.settings import CapMode, FeeRule
from service.games.common.statement import LineKind, Statement, StatementLine
from service.games.gin.formats import CLASSIC
from service.games.gin.payout import pair_cap
from service.games.gin.ruleset import Ruleset, ShutoutMode
from service.games.multi_gin.match import PairMargin, Standings, forfeit_margin
from service.games.multi_gin.three_player import three_player_pairs

#: The money pairs of partnership Gin: (team 1's member, team 2's member) (11.2.3).
MONEY_PAIRS: tuple[tuple[int, int], ...] = ((0, 1), (2, 3))
#: The sides of three-player Gin: every player for itself.
THREE_PLAYER_SIDES: tuple[tuple[int, ...], ...] = ((0,), (1,), (2,))
#: The teams of partnership Gin: team 1 is seats 0 and 2, team 2 seats 1 and 3 (11.2.3).
PARTNERSHIP_TEAMS: tuple[tuple[int, ...], ...] = ((0, 2), (1, 3))


def _three(name: str, values: Mapping[int, int], minimum: int = 0) -> tuple[int, int, int]:
    out = checked_seats(name, values, minimum)
    if sorted(out) != [0, 1, 2]:
        raise SettlementError(f"three-player Gin seats 0 to 2, not {sorted(out)!r}")
    return out[0], out[1], out[2]


def _pair_amounts(
    pairs: Sequence[PairMargin],
    totals: Sequence[int],
    forfeiter: int | None,
    shutout_mode: ShutoutMode,
) -> list[PairAmount]:
    """The standings' signed pair margins as amounts owed, with their rule and reason: the
    difference in totals, then (after every difference) each shutout; after a forfeit, the
    forfeit margins."""
    owed: list[PairAmount] = []
    shutouts: list[PairAmount] = []
    for pair in pairs:
        x, y = pair.seats
        if forfeiter is not None and forfeiter in pair.seats:
            if pair.margin:
                opp = x if forfeiter == y else y
                bonus = abs(pair.forfeit_bonus)
                reason = (
                    f"seat {forfeiter} forfeited: max({totals[opp]} - {totals[forfeiter]}, 0)"
                    f" = {abs(pair.margin) - bonus} plus the game bonus {bonus}"
                )
                owed.append(PairAmount.signed(pair.seats, pair.margin, "11.7.2", reason))
            continue
        difference = pair.margin - pair.shutout
        if difference:
            rule, what = ("4.1.5", "final totals")
            if forfeiter is not None:
                rule, what = ("11.6.2", "totals at the forfeit")
            hi, lo = sorted((totals[x], totals[y]), reverse=True)
            reason = f"{what} {hi} against {lo}"
            owed.append(PairAmount.signed(pair.seats, difference, rule, reason))
        if pair.shutout:
            reason = f"shut out (no hand points), {shutout_mode.value}"
            shutouts.append(PairAmount.signed(pair.seats, pair.shutout, "11.1.2", reason))
    return owed + shutouts


def settle_three_player(
    standings: Standings,
    stake_per_point: int,
    buyins: Mapping[int, int],
    fee: FeeRule | None = None,
    *,
    shutout_mode: ShutoutMode = ShutoutMode.BONUS,
) -> Statement:
    """A finished (or forfeited) three-player classic game for stakes, from its standings:
    each pair margin x ``stake_per_point``, the net-loss cap on the buy-ins (11.4.2) and the
    fee per winner (11.4.3). ``shutout_mode`` only names the shutout in its line.

    :raises SettlementError: on standings that are not three players' or bad money figures.
    """
    if standings.sides != THREE_PLAYER_SIDES:
        raise SettlementError(f"not three players' standings: sides {standings.sides!r}")
    margins = _pair_amounts(
        standings.pairs, standings.totals, standings.forfeiter, ShutoutMode(shutout_mode)
    )
    return settle_pairs(margins, stake_per_point, buyins, fee, format=CLASSIC)


def _settle_totals(
    totals: Mapping[int, int],
    hand_points: Mapping[int, int],
    winner: int | None,
    ruleset: Ruleset,
    forfeiter: int | None,
    stake_per_point: int,
    buyins: Mapping[int, int],
    fee: FeeRule | None,
) -> Statement:
    f = _three("total", totals)
    h = _three("hand points", hand_points)
    for name, seat in (("winner", winner), ("forfeiter", forfeiter)):
        if seat is not None and seat not in (0, 1, 2):
            raise SettlementError(f"{name} {seat!r} is not seated")
    try:
        pairs = three_player_pairs(f, h, winner, ruleset, forfeiter=forfeiter)
    except RulesError as exc:
        raise SettlementError(str(exc)) from None
    margins = _pair_amounts(pairs, f, forfeiter, ruleset.shutout_mode)
    return settle_pairs(margins, stake_per_point, buyins, fee, format=CLASSIC)


def classic_three_player(
    totals: Mapping[int, int],
    hand_points: Mapping[int, int],
    winner: int,
    stake_per_point: int,
    buyins: Mapping[int, int],
    fee: FeeRule | None = None,
    *,
    shutout_mode: ShutoutMode = ShutoutMode.BONUS,
    shutout_bonus: int = 100,
    game_bonus: int = 100,
) -> Statement:
    """Three-player classic for stakes from plain figures: the pair margins of
    :func:`~service.games.multi_gin.three_player.three_player_pairs` x ``stake_per_point``, the
    net-loss cap on the buy-ins (11.4.2) and the fee per winner (11.4.3).

    ``totals`` are the final totals with box and game bonuses but without any shutout, which
    is per pair; ``hand_points`` say who was shut out (``h = 0``); ``winner`` reached the
    target.

    :raises SettlementError: on other than seats 0 to 2, an unseated winner, bad figures.
    """
    ruleset = Ruleset(
        shutout_mode=ShutoutMode(shutout_mode),
        shutout_bonus=checked_int("shutout bonus", shutout_bonus),
        game_bonus=checked_int("game bonus", game_bonus),
    )
    return _settle_totals(totals, hand_points, winner, ruleset, None, stake_per_point, buyins, fee)


def classic_three_player_forfeit(
    totals: Mapping[int, int],
    forfeiter: int,
    stake_per_point: int,
    buyins: Mapping[int, int],
    fee: FeeRule | None = None,
    *,
    game_bonus: int = 100,
) -> Statement:
    """A forfeited three-player classic game for stakes (11.6.2, 11.7.2): ``totals`` are
    those of the moment, without a game bonus; the pair margins are
    :func:`~service.games.multi_gin.three_player.three_player_pairs`'. The net-loss cap and the fee
    apply as usual."""
    checked_int("forfeiter", forfeiter)
    ruleset = Ruleset(game_bonus=checked_int("game bonus", game_bonus))
    hand_points = dict.fromkeys(totals, 0)
    return _settle_totals(
        totals, hand_points, None, ruleset, forfeiter, stake_per_point, buyins, fee
    )


def _partnership(
    winning_team: int,
    margin: int,
    rule: str,
    why: str,
    stake_per_point: int,
    buyins: Mapping[int, int],
    fee: FeeRule | None,
    cap_mode: CapMode,
) -> Statement:
    r, escrow, fee = stake_table(stake_per_point, buyins, fee)
    if sorted(escrow) != [0, 1, 2, 3]:
        raise SettlementError(f"partnership Gin seats 0 to 3, not {sorted(escrow)!r}")
    mode = CapMode(cap_mode)
    raw = dict.fromkeys(escrow, 0)
    settled = dict.fromkeys(escrow, 0)
    lines: list[StatementLine] = []
    capped = False
    for pair in MONEY_PAIRS:
        if not margin:
            break
        w, lo = pair if winning_team == 0 else pair[::-1]
        amount = margin * r
        cap = pair_cap(mode, escrow[w], escrow[lo])
        moved = min(amount, cap)
        raw[w], raw[lo] = amount, -amount
        settled[w], settled[lo] = moved, -moved
        reason = f"{why}: {margin} points x {r}"
        if moved < amount:
            capped = True
            reason += f" = {amount}, capped at {cap} ({mode.value})"
        lines.append(StatementLine(LineKind.PAYS, lo, w, moved, rule, reason))
    return finish(CLASSIC, r, escrow, raw, settled, fee, lines, cap_applied=capped)


def _team_totals(team_totals: Sequence[int]) -> tuple[int, int]:
    if len(team_totals) != 2:
        raise SettlementError(f"two team totals, not {team_totals!r}")
    return checked_int("team total", team_totals[0]), checked_int("team total", team_totals[1])


def partnership_classic(
    team_totals: Sequence[int],
    stake_per_point: int,
    buyins: Mapping[int, int],
    fee: FeeRule | None = None,
    *,
    cap_mode: CapMode = CapMode.MIN_BOTH,
) -> Statement:
    """Partnership classic for stakes (4.2.7, 11.2.3): ``team_totals`` are the final totals
    of team 1 (seats 0, 2) and team 2 (seats 1, 3); the higher total receives the margin
    from each money pair, capped per pair by ``cap_mode``; equal totals move nothing."""
    t1, t2 = _team_totals(team_totals)
    winning = 0 if t1 >= t2 else 1
    why = f"team totals {max(t1, t2)} against {min(t1, t2)}"
    return _partnership(
        winning, abs(t1 - t2), "11.2.3", why, stake_per_point, buyins, fee, cap_mode
    )


def partnership_classic_forfeit(
    team_totals: Sequence[int],
    forfeiter: int,
    stake_per_point: int,
    buyins: Mapping[int, int],
    fee: FeeRule | None = None,
    *,
    game_bonus: int = 100,
    cap_mode: CapMode = CapMode.MIN_BOTH,
) -> Statement:
    """A forfeited partnership classic game (11.6.2, 11.7.2): at team level the other team
    receives ``max(its total - the forfeiting team's, 0) + game_bonus`` from both money
    pairs, each capped by ``cap_mode``. ``team_totals`` carry no game bonus."""
    totals = _team_totals(team_totals)
    checked_int("forfeiter", forfeiter)
    if forfeiter not in (0, 1, 2, 3):
        raise SettlementError(f"forfeiter {forfeiter!r} is not seated")
    bonus = checked_int("game bonus", game_bonus)
    losing = 0 if forfeiter in PARTNERSHIP_TEAMS[0] else 1
    winning = 1 - losing
    margin = abs(forfeit_margin(totals[0], totals[1], losing == 0, bonus))
    why = (
        f"seat {forfeiter} forfeited: max({totals[winning]} - {totals[losing]}, 0)"
        f" = {margin - bonus} plus the game bonus {bonus}"
    )
    return _partnership(winning, margin, "11.7.2", why, stake_per_point, buyins, fee, cap_mode)
