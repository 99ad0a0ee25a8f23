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

from collections.abc import Iterable, Iterator

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


def initial_deals(counts: Counts) -> Iterator[tuple[int, tuple[int, int], float]]:
    """Every (up card, player's two card values, probability) of one hand dealt from ``counts``.

    >>> from twentyone.variants import builtin_rules
    >>> round(sum(p for _, _, p in initial_deals(value_counts(builtin_rules("single-deck")))), 12)
    1.0
    """
    n = int(counts.sum())
    for up in VALUES:
        if counts[up - 1] == 0:
            continue
        left = remove(counts, [up])
        p_up = counts[up - 1] / n
        for a in range(1, 11):
            for b in range(a, 11):
                ways = left[a - 1] * (left[b - 1] - 1) if a == b else 2 * left[a - 1] * left[b - 1]
                if ways > 0:
                    yield up, (a, b), float(p_up * ways / ((n - 1) * (n - 2)))


def values_of(cards: Iterable[Card]) -> list[int]:
    return [card.value for card in cards]
