"""An action's two forms, one grammar for every game (docs/engine.md, Games and the registry).

The service logs and applies an action as text; a request carries it as fields. Both forms of
every game's action, the text as the engines print it (``str(action)``) and the fields as
their ``to_dict`` and the views' ``legal_actions`` list them:

* ``PASS``, ``DRAW_STOCK``: ``{"action": "PASS"}``
* ``DISCARD TD``: ``{"action": "DISCARD", "card": "TD"}``
* ``KNOCK 7D | 4C 4D 4H``: ``{"action": "KNOCK", "card": "7D", "melds": [["4C", "4D", "4H"]]}``
* Rummy's ``MELD 7D 7H 7S``: ``{"action": "MELD", "cards": ["7D", "7H", "7S"]}``
* Rummy's ``LAY_OFF 2 8H 9H``: ``{"action": "LAY_OFF", "meld": 2, "cards": ["8H", "9H"]}``

:func:`action_text` reads the fields (the API's action request, a listed legal action) and
:func:`action_fields` the text (the typed client's, the bots'); each undoes the other. Neither
judges the action: the game's engine does when it is applied.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: The Rummy actions whose text names a meld's index and cards rather than one card.
LAY_OFF = "LAY_OFF"
MELD = "MELD"


def action_text(fields: Mapping[str, Any]) -> str:
    """The text form of an action's fields (``action``, ``meld``, ``cards``, ``card``,
    ``melds``)."""
    words = [str(fields["action"])]
    if fields.get("meld") is not None:
        words.append(str(fields["meld"]))
    words.extend(map(str, fields.get("cards") or ()))
    if fields.get("card") is not None:
        words.append(str(fields["card"]))
    text = " ".join(words)
    for meld in fields.get("melds") or ():
        text += " | " + " ".join(meld)
    return text


def action_fields(text: str) -> dict[str, Any]:
    """The fields of an action's text form (``"KNOCK TD | AC 2C 3C"``, ``"PASS"``, Rummy's
    ``"MELD 7S 7H 7D"`` and ``"LAY_OFF 2 8H 9H"``): ``action``, ``card``, ``melds``,
    ``cards`` and ``meld``.

    :raises ValueError: when the text has no action, or a lay-off's meld is not a number.
    """
    head, *melds = text.split("|")
    words = head.split()
    if not words:
        raise ValueError(f"empty action {text!r}")
    fields: dict[str, Any] = {"action": words[0]}
    if words[0] == LAY_OFF and len(words) > 2:
        fields |= {"meld": int(words[1]), "cards": words[2:]}
    elif words[0] == MELD:
        fields["cards"] = words[1:]
    elif len(words) > 1:
        fields["card"] = words[1]
    if melds:
        fields["melds"] = [m.split() for m in melds]
    return fields
