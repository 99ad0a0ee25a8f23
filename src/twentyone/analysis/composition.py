"""Shoe compositions by point value: the only thing the main game's maths depends on.

Index 0 holds the Aces, index 9 every ten-valued card (T, J, Q, K); 2..9 sit in
between. Suits and ranks matter only to side bets, which work on whole cards.

>>> from twentyone.variants import builtin_rules
>>> counts = value_counts(builtin_rules("power"))
>>> counts.tolist()
[32, 32, 32, 32, 32, 32, 32, 32, 0, 96]
>>> remove(counts, [1, 10]).tolist()
[31, 32, 32, 32, 32, 32, 32, 32, 0, 95]
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

from twentyone.core.cards import Card
from twentyone.core.rules import Rules

Counts = npt.NDArray[np.int64]
VALUES = tuple(range(1, 11))


def value_counts(rules: Rules) -> Counts:
    """Cards of each point value in a fresh shoe of ``rules``."""
    counts = np.zeros(10, dtype=np.int64)
    for card in rules.shoe.composition.cards():
        counts[card.value - 1] += 1
    return counts


def remove(counts: Counts, values: Iterable[int]) -> Counts:
    """A copy of ``counts`` with one card of each value (1..10) taken out.

    Raises ValueError when the shoe does not hold such a card.
    """
    result = counts.copy()
    for value in values:
        result[value - 1] -= 1
        if result[value - 1] < 0:
            raise ValueError(f"The shoe holds no more cards of value {value}.")
    return result


def values_of(cards: Iterable[Card]) -> list[int]:
    return [card.value for card in cards]


def hand_total(hand: tuple[int, ...]) -> tuple[int, bool]:
    """Best total and softness of a hand given as counts by value (index 0 = Aces).

    >>> hand_total((1, 0, 0, 0, 0, 1, 0, 0, 0, 0))
    (17, True)
    """
    hard = sum((index + 1) * count for index, count in enumerate(hand))
    if hand[0] and hard + 10 <= 21:
        return hard + 10, True
    return hard, False
