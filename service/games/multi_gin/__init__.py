"""Gin at three and four seats (docs/multiplayer-gin.md, docs/multiplayer-money.md): pure, no
Flask, SQLAlchemy or Celery. Every hand is a two-player hand of :mod:`service.games.gin`
played at a table of the match. One module per part, imported by name (this file imports
nothing):

* matches: :mod:`.match` (the state machine both games share, their standings),
  :mod:`.three_player`, :mod:`.partnership`;
* money: :mod:`.payout` (per-pair and classic maths), :mod:`.pots` (Match Play pots);
* specs for the registry: :mod:`.spec` (what both share), :mod:`.three_player_spec`,
  :mod:`.partnership_spec`. Their bot is two-player Gin's, dispatched by
  :mod:`service.games.bots`.
"""
