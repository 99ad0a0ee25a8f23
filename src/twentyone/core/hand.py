"""Hand totals: one definition of hard, soft, bust and blackjack for every layer.

>>> from twentyone.core.cards import parse_cards
>>> hand_value(parse_cards(["AS", "6D"]))
HandValue(total=17, soft=True)
>>> hand_value(parse_cards(["AS", "6D", "TC"]))
HandValue(total=17, soft=False)
>>> format_total(hand_value(parse_cards(["AS", "6D"])))
'7/17'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from twentyone.core.cards import Card


class HandValue(NamedTuple):
    """The best total of a hand and whether an Ace in it counts as 11."""

    total: int
    soft: bool

    @property
    def bust(self) -> bool:
        return self.total > 21


def value_of_points(points: Sequence[int]) -> HandValue:
    """Best total of card point values (Ace = 1).

    >>> value_of_points([1, 1, 9])
    HandValue(total=21, soft=True)
    """
    hard = sum(points)
    if 1 in points and hard + 10 <= 21:
        return HandValue(hard + 10, True)
    return HandValue(hard, False)


def value_of_counts(counts: Sequence[int]) -> HandValue:
    """Best total of a hand given as counts by point value (index 0 Aces, index 9 tens).

    The analysis keeps hands as such counts; this is the same rule as :func:`value_of_points`.

    >>> value_of_counts((1, 0, 0, 0, 0, 1, 0, 0, 0, 0))
    HandValue(total=17, soft=True)
    """
    hard = sum((index + 1) * count for index, count in enumerate(counts))
    if counts[0] and hard + 10 <= 21:
        return HandValue(hard + 10, True)
    return HandValue(hard, False)


def hand_value(cards: Sequence[Card]) -> HandValue:
    """Best total of a hand of cards."""
    return value_of_points([card.value for card in cards])


def is_natural(cards: Sequence[Card]) -> bool:
    """Two cards totalling 21: an Ace and a ten-valued card.

    Whether a natural counts as a blackjack also depends on the hand not coming
    from a split; :class:`~twentyone.core.round.Round` decides that.

    >>> from twentyone.core.cards import parse_cards
    >>> is_natural(parse_cards(["KS", "AH"])), is_natural(parse_cards(["7S", "7H", "7D"]))
    (True, False)
    """
    return len(cards) == 2 and hand_value(cards).total == 21


def format_total(value: HandValue) -> str:
    """Show a soft total the way tables do (``7/17``); a hard total as a number."""
    if value.soft and value.total < 21:
        return f"{value.total - 10}/{value.total}"
    return str(value.total)
