"""The formats Rummy is played in for money (docs/rummy.md), declared here: Rummy's own package
says what they are; the registry lists them with every other game's (11.5)."""

from __future__ import annotations

from service.games.common.settings import Format

RUMMY_PER_HAND = Format("rummy_per_hand")  # a continuous table, each hand settled (11.5.1)
RUMMY_TARGET = Format("rummy_target")  # fixed seats, TARGET(t) (11.5.2)
RUMMY_DEALS = Format("rummy_deals")  # fixed seats, DEALS(n) (11.5.2)
