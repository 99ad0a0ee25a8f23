"""The operation log: immutable records of everything that happened in a round.

A round is fully described by its rules, its shoe order and the actions taken;
the operation log is what the engine did with them, in order, for display,
history and audit. Replaying the actions reproduces the same log.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from twentyone.core.cards import Card


class Action(StrEnum):
    """Every decision a player can be asked for; the values are the scenario-replay words."""

    HIT = "hit"
    STAND = "stand"
    DOUBLE = "double"
    TRIPLE = "triple"
    QUADRUPLE = "quadruple"
    SPLIT = "split"
    SURRENDER = "surrender"
    CASH_OUT = "cash-out"
    INSURANCE = "insurance"
    NO_INSURANCE = "no-insurance"
    EVEN_MONEY = "even-money"
    NO_EVEN_MONEY = "no-even-money"
    NO_SURRENDER = "no-surrender"


class DecisionKind(StrEnum):
    """What a decision is about: playing a hand, or answering an offer."""

    PLAY = "play"
    INSURANCE = "insurance"
    EVEN_MONEY = "even-money"
    SURRENDER = "surrender"


# The two answers to each offer, accept first: the one table of them every layer reads.
OFFER_ANSWERS: dict[DecisionKind, tuple[Action, Action]] = {
    DecisionKind.SURRENDER: (Action.SURRENDER, Action.NO_SURRENDER),
    DecisionKind.INSURANCE: (Action.INSURANCE, Action.NO_INSURANCE),
    DecisionKind.EVEN_MONEY: (Action.EVEN_MONEY, Action.NO_EVEN_MONEY),
}


class HandStatus(StrEnum):
    """Where a hand stands: still ``playing``, or done in one of these ways."""

    PLAYING = "playing"
    STOOD = "stood"
    DOUBLED = "doubled"
    BUST = "bust"
    BLACKJACK = "blackjack"
    SURRENDERED = "surrendered"
    CASHED_OUT = "cashed-out"
    EVEN_MONEY = "even-money"


class Outcome(StrEnum):
    """How a settled stake ended (hands and insurance); side bets settle on a paytable line instead."""

    BLACKJACK = "blackjack"
    WIN = "win"
    PUSH = "push"
    LOSE = "lose"
    BUST = "bust"
    SURRENDER = "surrender"
    CASH_OUT = "cash-out"
    EVEN_MONEY = "even-money"


class Item(StrEnum):
    """What a settlement pays: a hand, the insurance, or (any other name) a side bet."""

    HAND = "hand"
    INSURANCE = "insurance"


# Bet multiplier of each doubling action.
MULTIPLIER_OF = {Action.DOUBLE: 2, Action.TRIPLE: 3, Action.QUADRUPLE: 4}
ACTION_OF_MULTIPLIER = {value: key for key, value in MULTIPLIER_OF.items()}
# The decisions that add money to the table (``Round.cost_of``): a wallet is asked whether the player can afford them.
COSTLY_ACTIONS = frozenset({*MULTIPLIER_OF, Action.SPLIT, Action.INSURANCE})


@dataclass(frozen=True, slots=True)
class BetsPlaced:
    player: str
    seat: int
    bet: int
    side_bets: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class CardDealt:
    """A card leaving the shoe. ``seat`` 0 means the dealer; ``hand`` 0 a card shared by all hands."""

    card: Card
    seat: int
    hand: int
    face_up: bool = True


@dataclass(frozen=True, slots=True)
class ActionTaken:
    action: Action
    player: str
    seat: int
    hand: int
    amount: int = 0  # money added to the table by the action (double, split, insurance)


@dataclass(frozen=True, slots=True)
class DealerChecked:
    """The dealer peeked at the hole card for blackjack."""

    blackjack: bool


@dataclass(frozen=True, slots=True)
class HoleCardRevealed:
    card: Card


@dataclass(frozen=True, slots=True)
class Settled:
    """One stake paid, pushed or taken. ``item`` is ``hand``, ``insurance`` or a side bet's name."""

    item: str
    player: str
    seat: int
    hand: int
    stake: int
    result: str
    returned: int


Operation = BetsPlaced | CardDealt | ActionTaken | DealerChecked | HoleCardRevealed | Settled
