"""Basic Rummy for 2-6 players (the rules are stated in docs/rummy.md): pure, no Flask,
SQLAlchemy or Celery. One module per part, imported by name (this file imports nothing):

* rules: :mod:`.rules` (:class:`RummyRules`, the ``rummy.*`` keys), :mod:`.melds`,
  :mod:`.actions`, :mod:`.hand` (the immutable hand state machine, its automatic action),
  :mod:`.fair` (a hand's deal and SHUFFLE restocks from one fair stream), :mod:`.errors`
  (the refusals, each with a stable ``code`` and its ``rule``), :mod:`.playout`;
* the match: :mod:`.match` (per-hand tables, target and deals matches);
* money: :mod:`.payout`; the practice bot: :mod:`.bot`; the game's spec: :mod:`.spec`.
"""
