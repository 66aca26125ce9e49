"""Payout maths at more than two seats: three-player and partnership Gin, Basic Rummy.

Pure integer arithmetic in minor units over plain data (seats as integers, totals, counts,
penalties, stakes, buy-ins or table balances, a :class:`~service.formats.settings.FeeRule`,
a :class:`~service.formats.settings.CapMode`); no engine object comes in, so the engines that
produce these figures and this settlement are independent of each other.

Every function returns a :class:`MultiStatement`: an amount per seat, the fee, and lines a
person can read (who pays whom how much, why, and under which rule). ``sum(net) + fee == 0``,
no seat loses more than it has at the table, and the lines add up to the nets.

* Match Play pots (11.4, 11.6.2, 11.7.4): :func:`three_player_match_play`,
  :func:`partnership_match_play`, :func:`match_play_forfeit` (all on :func:`match_play_pot`).
* Three-player classic (4.1.5, 11.1.2, 11.1.3, 11.6.2, 11.7.2): :func:`settle_three_player`
  from a match's standings, :func:`classic_three_player` and
  :func:`classic_three_player_forfeit` from plain totals. The pair margins themselves are
  the standings' (:func:`service.formats.three_player.three_player_pairs`); this package
  multiplies them by the stake and applies the caps and the fee.
* Partnership classic (4.2.7, 11.2.3, 11.7.2): :func:`partnership_classic`,
  :func:`partnership_classic_forfeit`, each money pair capped by the table's cap mode.
* Rummy (5.8, 11.5, 11.6.3): :func:`rummy_per_hand`, :func:`rummy_match`,
  :func:`rummy_penalty`, :func:`needs_top_up`.
* The shared steps (11.4.2, 11.4.3): :func:`settle_pairs`, :func:`settle_nets`,
  :func:`net_loss_cap`.
"""

from service.formats.payout_multi.gin import (
    MONEY_PAIRS,
    PARTNERSHIP_TEAMS,
    THREE_PLAYER_SIDES,
    classic_three_player,
    classic_three_player_forfeit,
    partnership_classic,
    partnership_classic_forfeit,
    settle_three_player,
)
from service.formats.payout_multi.netting import (
    CapResult,
    PairAmount,
    net_loss_cap,
    settle_nets,
    settle_pairs,
    split_equally,
)
from service.formats.payout_multi.pots import (
    match_play_forfeit,
    match_play_pot,
    partnership_match_play,
    three_player_match_play,
)
from service.formats.payout_multi.rummy import (
    needs_top_up,
    penalty_margins,
    rummy_match,
    rummy_penalty,
    rummy_per_hand,
)
from service.formats.payout_multi.statement import (
    HOUSE,
    TABLE,
    LineKind,
    MoneyFormat,
    MultiStatement,
    Party,
    StatementLine,
)

__all__ = [
    "HOUSE",
    "MONEY_PAIRS",
    "PARTNERSHIP_TEAMS",
    "TABLE",
    "THREE_PLAYER_SIDES",
    "CapResult",
    "LineKind",
    "MoneyFormat",
    "MultiStatement",
    "PairAmount",
    "Party",
    "StatementLine",
    "classic_three_player",
    "classic_three_player_forfeit",
    "match_play_forfeit",
    "match_play_pot",
    "needs_top_up",
    "net_loss_cap",
    "partnership_classic",
    "partnership_classic_forfeit",
    "partnership_match_play",
    "penalty_margins",
    "rummy_match",
    "rummy_penalty",
    "rummy_per_hand",
    "settle_nets",
    "settle_pairs",
    "settle_three_player",
    "split_equally",
    "three_player_match_play",
]
