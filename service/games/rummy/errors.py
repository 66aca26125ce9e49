"""Why a Rummy action, deal or state is refused.

Every refusal of a player's action is an :class:`~service.games.common.errors.IllegalAction` (so a
:class:`~service.games.common.errors.RulesError`) with a stable ``code`` and the number of the rule
it enforces in ``rule`` (the numbering of docs/rummy.md). A refused action changes nothing:
the hand is immutable and :meth:`RummyHand.apply` returns a new one only on success.
"""

from __future__ import annotations

from service.games.common.errors import IllegalAction, InvalidState, RulesError


class RummyRefusal(IllegalAction):
    """Base class: an action that the rules do not allow now; the state is unchanged."""

    code = "ILLEGAL_ACTION"
    rule = "0.6"


class UnknownAction(RummyRefusal):
    """Raised when text or fields are not one of the six Rummy actions."""

    code = "UNKNOWN_ACTION"


class MalformedAction(RummyRefusal):
    """Raised when an action names too few or too many cards, or no meld where it needs one."""

    code = "MALFORMED_ACTION"


class HandOver(RummyRefusal):
    """Raised for any action once the hand has ended (5.4.1)."""

    code = "HAND_OVER"
    rule = "5.4.1"


class NoSuchSeat(RummyRefusal):
    """Raised when the seat is not one of the hand's seats (5.1.1)."""

    code = "NO_SUCH_SEAT"
    rule = "5.1.1"


class NotYourTurn(RummyRefusal):
    """Raised when a seat other than the one to act tries to act (5.2)."""

    code = "NOT_YOUR_TURN"
    rule = "5.2"


class MustDrawFirst(RummyRefusal):
    """Raised for a meld, lay-off or discard before the turn's draw (5.2.1)."""

    code = "MUST_DRAW_FIRST"
    rule = "5.2.1"


class AlreadyDrew(RummyRefusal):
    """Raised for a second draw in one turn (5.2.1)."""

    code = "ALREADY_DREW"
    rule = "5.2.1"


class DiscardPileEmpty(RummyRefusal):
    """Raised when taking from a discard pile that holds no card (5.2.1, 5.5.1)."""

    code = "DISCARD_PILE_EMPTY"
    rule = "5.2.1"


class StockEmpty(RummyRefusal):
    """Raised for DRAW_STOCK on an empty stock when the table turns the pile over (11.3.2)."""

    code = "STOCK_EMPTY"
    rule = "11.3.2"


class TurnOverNotAllowed(RummyRefusal):
    """Raised for TURN_OVER while the stock holds cards, or at a SHUFFLE table (11.3.2)."""

    code = "TURN_OVER_NOT_ALLOWED"
    rule = "11.3.2"


class MustRestock(RummyRefusal):
    """Raised for DRAW_DISCARD on an empty stock at a SHUFFLE table: the pile is shuffled
    into a new stock instead (11.3.1)."""

    code = "MUST_RESTOCK"
    rule = "11.3.1"


class CardNotInHand(RummyRefusal):
    """Raised when an action names a card the player does not hold (5.2.2, 5.2.3)."""

    code = "CARD_NOT_IN_HAND"
    rule = "5.2.2"


class NotAMeld(RummyRefusal):
    """Raised when the cards of a MELD are neither a set nor a run (1.5-1.7, 11.3.6)."""

    code = "INVALID_MELD"
    rule = "5.2.2"


class NoSuchMeld(RummyRefusal):
    """Raised when a LAY_OFF names a table meld that does not exist (5.2.2)."""

    code = "NO_SUCH_MELD"
    rule = "5.2.2"


class InvalidLayOff(RummyRefusal):
    """Raised when the cards laid off and the table meld together are not a valid meld
    (5.2.2, 11.3.5)."""

    code = "INVALID_LAY_OFF"
    rule = "11.3.5"


class DiscardPileCardBarred(RummyRefusal):
    """Raised when discarding the card taken from the discard pile this turn (5.2.3)."""

    code = "DISCARD_PILE_CARD_BARRED"
    rule = "5.2.3"


class NoLegalDiscardLeft(RummyRefusal):
    """Raised for a meld or lay-off that would leave only the card taken from the discard
    pile this turn, which could not be discarded (5.2.4)."""

    code = "NO_LEGAL_DISCARD_LEFT"
    rule = "5.2.4"


class MustDiscardToGoOut(RummyRefusal):
    """Raised for a meld or lay-off that would empty the hand at a table where going out
    needs a final discard (5.2.5)."""

    code = "MUST_DISCARD_TO_GO_OUT"
    rule = "5.2.5"


class AlreadyForfeited(RummyRefusal):
    """Raised when a seat that has already forfeited the hand forfeits again (11.6.3)."""

    code = "ALREADY_FORFEITED"
    rule = "11.6.3"


class InvalidDeal(InvalidState):
    """Raised when a deal is asked with a bad deck, player count or dealer (5.1)."""

    code = "INVALID_DEAL"


class InvalidShuffle(RulesError):
    """Raised when the injected shuffler does not return the discard pile's cards (11.3.1)."""

    code = "INVALID_SHUFFLE"
