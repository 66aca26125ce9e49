"""Two-player Gin Rummy (docs/engine.md sections 0-3, 6, 7, 9 and 10): pure, no Flask,
SQLAlchemy or Celery. One module per part, imported by name (this file imports nothing):

* rules: :mod:`.ruleset` (:class:`Ruleset`, the ``gin.*`` / ``oklahoma.*`` options),
  :mod:`.melds` (arrangement and deadwood), :mod:`.layoff`, :mod:`.scoring`, :mod:`.actions`,
  :mod:`.hand` (the hand state machine), :mod:`.game` (game scoring), :mod:`.playout`;
* the match: :mod:`.match` (First To Knock, Match Play, Money Play, classic) and
  :mod:`.clock` (the automatic action and the timeout of a Gin hand);
* money: :mod:`.payout` (the two-player statement);
* the practice bot: :mod:`.bot`; the game's spec for the registry: :mod:`.spec`.

Cards, the fair shuffle and the error family are :mod:`service.games.common`'s.
"""
