"""Classic Gin for stakes at three players and in partnership (4.1.5, 4.2.7, 11.1-11.2, 11.6-11.7).

Three players settle pair by pair: in every pair the higher final total receives the
difference from the lower, the two non-winners included; the game's winner also receives the
shutout amount from each opponent who won no hand. The seat nets then go through the net-loss
cap and the fee per winner (:func:`~service.formats.payout_multi.netting.settle_pairs`).

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
from itertools import combinations

from service.formats.payout import SettlementError
from service.formats.payout_multi.netting import (
    PairAmount,
    checked_int,
    checked_seats,
    finish,
    settle_pairs,
    stake_table,
)
from service.formats.payout_multi.statement import (
    LineKind,
    MoneyFormat,
    MultiStatement,
    StatementLine,
)
from service.formats.settings import CapMode, FeeRule
from service.rules.ruleset import ShutoutMode

#: The money pairs of partnership Gin: (team 1's member, team 2's member) (11.2.3).
MONEY_PAIRS: tuple[tuple[int, int], ...] = ((0, 1), (2, 3))
#: The sides of three-player Gin: every player for itself.
THREE_PLAYER_SIDES: tuple[tuple[int, ...], ...] = ((0,), (1,), (2,))
#: The teams of partnership Gin: team 1 is seats 0 and 2, team 2 seats 1 and 3 (11.2.3).
PARTNERSHIP_TEAMS: tuple[tuple[int, ...], ...] = ((0, 2), (1, 3))


def _three_totals(totals: Mapping[int, int]) -> dict[int, int]:
    out = checked_seats("total", totals)
    if len(out) != 3:
        raise SettlementError(f"three-player Gin has three seats, not {sorted(out)!r}")
    return out


def _pair_margin(x: int, y: int, fx: int, fy: int, rule: str, what: str) -> PairAmount | None:
    if fx == fy:
        return None
    hi, lo, fh, fl = (x, y, fx, fy) if fx > fy else (y, x, fy, fx)
    return PairAmount(hi, lo, fh - fl, rule, f"{what} {fh} against {fl}")


def shutout_amount(
    mode: ShutoutMode, *, shutout_bonus: int, game_bonus: int, winner_hand_points: int
) -> int:
    """What the winner receives from each shut-out opponent, by the shutout mode (11.1.2)."""
    if mode is ShutoutMode.BONUS:
        return shutout_bonus
    if mode is ShutoutMode.DOUBLE_GAME_BONUS:
        return game_bonus
    return winner_hand_points


def three_player_margins(
    totals: Mapping[int, int],
    hand_points: Mapping[int, int],
    winner: int,
    *,
    shutout_mode: ShutoutMode = ShutoutMode.BONUS,
    shutout_bonus: int = 100,
    game_bonus: int = 100,
) -> tuple[PairAmount, ...]:
    """The pair amounts of a finished three-player game (4.1.5, 11.1.2, 11.1.3).

    ``totals`` are the final totals with box and game bonuses but without any shutout, which
    is per pair; ``hand_points`` say who was shut out (``h = 0``); ``winner`` reached the
    target.

    :raises SettlementError: on other than three seats or an unseated winner.
    """
    f = _three_totals(totals)
    h = checked_seats("hand points", hand_points)
    if set(h) != set(f) or winner not in f:
        raise SettlementError(f"winner {winner!r} and hand points must name the seats {f!r}")
    out = [
        m
        for x, y in combinations(sorted(f), 2)
        if (m := _pair_margin(x, y, f[x], f[y], "4.1.5", "final totals")) is not None
    ]
    extra = shutout_amount(
        shutout_mode,
        shutout_bonus=checked_int("shutout bonus", shutout_bonus),
        game_bonus=checked_int("game bonus", game_bonus),
        winner_hand_points=h[winner],
    )
    for y in sorted(f):
        if y != winner and h[y] == 0 and extra:
            reason = f"shut out (no hand points), {shutout_mode.value}"
            out.append(PairAmount(winner, y, extra, "11.1.2", reason))
    return tuple(out)


def three_player_forfeit_margins(
    totals: Mapping[int, int], forfeiter: int, *, game_bonus: int = 100
) -> tuple[PairAmount, ...]:
    """The pair amounts when a player forfeits a three-player game (11.6.2, 11.7.2).

    ``totals`` are the totals of the moment without a game bonus. The pair without the
    forfeiter settles its difference as usual; each opponent of the forfeiter receives
    ``max(its total - the forfeiter's, 0) + game_bonus``, and no shutout amount.

    :raises SettlementError: on other than three seats or an unseated forfeiter.
    """
    f = _three_totals(totals)
    bonus = checked_int("game bonus", game_bonus)
    if forfeiter not in f:
        raise SettlementError(f"forfeiter {forfeiter!r} is not seated")
    out: list[PairAmount] = []
    for x, y in combinations(sorted(f), 2):
        if forfeiter not in (x, y):
            m = _pair_margin(x, y, f[x], f[y], "11.6.2", "totals at the forfeit")
            if m is not None:
                out.append(m)
            continue
        opp = y if x == forfeiter else x
        lead = max(f[opp] - f[forfeiter], 0)
        reason = (
            f"seat {forfeiter} forfeited: max({f[opp]} - {f[forfeiter]}, 0) = {lead}"
            f" plus the game bonus {bonus}"
        )
        if lead + bonus:
            out.append(PairAmount(opp, forfeiter, lead + bonus, "11.7.2", reason))
    return tuple(out)


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
) -> MultiStatement:
    """Three-player classic for stakes: pair amounts x ``stake_per_point``, the net-loss cap on
    the buy-ins (11.4.2) and the fee per winner (11.4.3). See :func:`three_player_margins`."""
    margins = three_player_margins(
        totals,
        hand_points,
        winner,
        shutout_mode=shutout_mode,
        shutout_bonus=shutout_bonus,
        game_bonus=game_bonus,
    )
    return settle_pairs(margins, stake_per_point, buyins, fee, format=MoneyFormat.CLASSIC)


def classic_three_player_forfeit(
    totals: Mapping[int, int],
    forfeiter: int,
    stake_per_point: int,
    buyins: Mapping[int, int],
    fee: FeeRule | None = None,
    *,
    game_bonus: int = 100,
) -> MultiStatement:
    """A forfeited three-player classic game for stakes; see
    :func:`three_player_forfeit_margins`. The net-loss cap and the fee apply as usual."""
    margins = three_player_forfeit_margins(totals, forfeiter, game_bonus=game_bonus)
    return settle_pairs(margins, stake_per_point, buyins, fee, format=MoneyFormat.CLASSIC)


def pair_cap(mode: CapMode, winner_buyin: int, loser_buyin: int) -> int:
    """The most one money pair moves: both buy-ins (``MIN_BOTH``) or the loser's alone."""
    return min(winner_buyin, loser_buyin) if mode is CapMode.MIN_BOTH else loser_buyin


def _partnership(
    winning_team: int,
    margin: int,
    rule: str,
    why: str,
    stake_per_point: int,
    buyins: Mapping[int, int],
    fee: FeeRule | None,
    cap_mode: CapMode,
) -> MultiStatement:
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
    return finish(MoneyFormat.CLASSIC, r, escrow, raw, settled, fee, lines, cap_applied=capped)


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
) -> MultiStatement:
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
) -> MultiStatement:
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
    lead = max(totals[winning] - totals[losing], 0)
    why = (
        f"seat {forfeiter} forfeited: max({totals[winning]} - {totals[losing]}, 0) = {lead}"
        f" plus the game bonus {bonus}"
    )
    return _partnership(
        winning, lead + bonus, "11.7.2", why, stake_per_point, buyins, fee, cap_mode
    )
