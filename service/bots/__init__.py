"""Practice bots (pure): decide an action from a player's view of a hand.

:func:`decide` takes the view a player sees (``Hand.view(seat)``; the API's hand view has the
same fields) and returns one of its ``legal_actions`` as listed, the action's fields
(``{"action": "DISCARD", "card": "8C"}``): the request body to send, but for
``expected_version``. :class:`Bot` is the sensible player;
:func:`greedy_action` and :func:`random_action` are the baselines it is measured against.
"""

from service.bots.strategy import Bot, decide, greedy_action, random_action

__all__ = ["Bot", "decide", "greedy_action", "random_action"]
