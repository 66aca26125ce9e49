"""Tournaments, the pure part: who plays whom, who finishes where, and who is paid what.

* :mod:`~service.tournaments.payouts`: the payout table (shares of the prize pool per place,
  by the number of entrants), prizes to the minor unit, ties sharing, and the refunds of a
  cancelled tournament;
* :mod:`~service.tournaments.bracket`: a knockout's draw from the tournament's fairness seed,
  its rounds, who advances, and the places it gives;
* :mod:`~service.tournaments.single_table`: a single table's seating from the same seed and
  the places its match's final standing gives.

Nothing here imports a framework or touches a database; the money rules are written once here
and used by the use cases, the audit and the statement alike (``docs/tournaments.md``).
"""
