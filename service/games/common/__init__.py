"""What the games share (pure, no Flask, SQLAlchemy or Celery), imported by module (this file
imports nothing):

* :mod:`.cards` (cards, masks, the set/run test), :mod:`.fair` (the fair shuffle),
  :mod:`.errors` (the one exception family, each with a stable ``code``),
  :mod:`.action_text` (the text grammar of every game's actions);
* :mod:`.settings` (a table's game, format, stake, fee, caps and clock), :mod:`.clock`
  (the turn clock's settings);
* :mod:`.seats` (one numbering of players in views at more than two seats; the view and
  statement shape of such games), :mod:`.statement` and :mod:`.netting` (the statement and
  fee maths at more than two seats).

:mod:`.settings` names no game: each game's spec declares its kind, formats and options, and
the settings ask :mod:`service.games.registry` for them when they are checked.
"""
