"""The formats Gin is played in for money (docs/engine.md 6, 3.2), declared here: Gin's own
package says what they are and how each is staked; the registry lists them with every other
game's. Gin of three and four seats plays two of them (11.4)."""

from __future__ import annotations

from service.games.common.settings import Format, Stakes

FIRST_TO_KNOCK = Format("first_to_knock")  # one hand decides (6.2)
MATCH_PLAY = Format("match_play")  # to the target, the winner takes the pot (6.3)
MONEY_PLAY = Format("money_play")  # a stake per point, settled on the margin (6.4)
CLASSIC = Format("classic")  # the classic bonuses, settled as Money Play (3.2)

#: How each is staked, as the table contract states it.
FIXED = Stakes("Fixed stake: First To Knock, Match Play", (FIRST_TO_KNOCK, MATCH_PLAY), True)
MONEY = Stakes(
    "Money Play: a stake per point and a buy-in range",
    (MONEY_PLAY,),
    False,
    {"target": {"enum": [50, 100]}},
)
CLASSIC_STAKES = Stakes("Classic: a stake per point and a buy-in range", (CLASSIC,), False)

#: Money Play's targets (6.4).
MONEY_PLAY_TARGETS = (50, 100)
