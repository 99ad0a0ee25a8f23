"""The dealer's final hand, exactly, for any shoe composition.

The dealer's drawing rule depends only on the multiset of cards drawn so far,
never on their order, so the dealer's possible final hands are a fixed list of
multisets for each up card (a few hundred to two thousand). The probability of
ending on multiset M from a composition c of N cards is

    ways(M) * prod_v fall(c_v, m_v) / fall(N, |M|)

where ``fall`` is the falling factorial and ``ways(M)`` counts the orders of M
whose every proper prefix leaves the dealer drawing. ``ways`` is computed once
per up card; each composition then costs one pass over the list (a compiled
loop), which is what makes exact composition-dependent analysis fast.

>>> import numpy as np
>>> from twentyone.analysis.composition import value_counts
>>> from twentyone.variants import builtin_rules
>>> counts = value_counts(builtin_rules("single-deck"))
>>> counts[5] -= 1                       # the dealer's 6 up
>>> table = dealer_outcomes(np.array([counts]), up=6, hits_soft_17=False)
>>> round(float(table[0, OUTCOMES.index("bust")]), 4), round(float(table[0].sum()), 12)
(0.4208, 1.0)
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numba
import numpy as np
import numpy.typing as npt

from twentyone.core.hand import value_of_counts
from twentyone.core.rules import DealerRules

# Final dealer results, in the column order of every outcome table.
OUTCOMES = ("17", "18", "19", "20", "21", "bust", "blackjack")
BUST = OUTCOMES.index("bust")
BLACKJACK = OUTCOMES.index("blackjack")
# Bust It lines by the dealer's card count (both initial cards included): 3..7, 8 or more.
BUST_CARDS = (3, 4, 5, 6, 7, 8)




@dataclass(frozen=True)
class DealerFinals:
    """Every final multiset of dealer draws for one up card, in compiled-loop form."""

    ways: npt.NDArray[np.float64]
    size: npt.NDArray[np.int64]
    outcome: npt.NDArray[np.int64]
    start: npt.NDArray[np.int64]  # sparse counts of each multiset: start[k]..start[k+1]
    value_index: npt.NDArray[np.int64]
    multiplicity: npt.NDArray[np.int64]
    max_multiplicity: int
    max_size: int


@cache
def dealer_finals(up: int, hits_soft_17: bool) -> DealerFinals:
    """Final multisets of the dealer's drawn cards (hole card first) behind up card ``up``."""
    rule = DealerRules(hits_soft_17=hits_soft_17)
    up_hand = tuple(1 if index == up - 1 else 0 for index in range(10))
    empty = (0,) * 10
    level: dict[tuple[int, ...], int] = {empty: 1}
    finals: dict[tuple[int, ...], int] = {}
    while level:
        following: dict[tuple[int, ...], int] = {}
        for drawn, ways in level.items():
            for index in range(10):
                new = tuple(d + (1 if i == index else 0) for i, d in enumerate(drawn))
                hand = tuple(d + u for d, u in zip(new, up_hand, strict=True))
                total, soft = value_of_counts(hand)
                blackjack = sum(new) == 1 and total == 21
                if blackjack or total > 21 or not rule.draws(total, soft):
                    finals[new] = finals.get(new, 0) + ways
                else:
                    following[new] = following.get(new, 0) + ways
        level = following
    keys = list(finals)
    ways_array = np.array([finals[key] for key in keys], dtype=np.float64)
    size = np.array([sum(key) for key in keys], dtype=np.int64)
    outcome = np.empty(len(keys), dtype=np.int64)
    starts = [0]
    value_index: list[int] = []
    multiplicity: list[int] = []
    for k, key in enumerate(keys):
        hand = tuple(d + u for d, u in zip(key, up_hand, strict=True))
        total, _ = value_of_counts(hand)
        if sum(key) == 1 and total == 21:
            outcome[k] = BLACKJACK
        elif total > 21:
            outcome[k] = BUST
        else:
            outcome[k] = total - 17
        for index, count in enumerate(key):
            if count:
                value_index.append(index)
                multiplicity.append(count)
        starts.append(len(value_index))
    return DealerFinals(ways_array, size, outcome, np.array(starts, dtype=np.int64),
                        np.array(value_index, dtype=np.int64), np.array(multiplicity, dtype=np.int64),
                        max(multiplicity), int(size.max()))


@numba.njit(cache=True)
def _outcomes_kernel(compositions, ways, size, outcome, start, value_index, multiplicity,  # type: ignore[no-untyped-def]
                     max_multiplicity, max_size, table, bust_cards):
    # Loop over final hands outside and compositions inside: the inner loops run over
    # contiguous arrays of the batch, which the compiler vectorises.
    batch = compositions.shape[0]
    finals = ways.shape[0]
    falling = np.empty((10, max_multiplicity + 1, batch))
    inverse_total = np.empty((max_size + 1, batch))
    for b in range(batch):
        total = 0
        for v in range(10):
            count = compositions[b, v]
            total += count
            falling[v, 0, b] = 1.0
            for m in range(1, max_multiplicity + 1):
                falling[v, m, b] = falling[v, m - 1, b] * max(count - m + 1, 0)
        running = 1.0
        inverse_total[0, b] = 1.0
        for m in range(1, max_size + 1):
            running *= max(total - m + 1, 0)
            inverse_total[m, b] = 1.0 / running if running > 0 else 0.0
    p = np.empty(batch)
    for k in range(finals):
        w = ways[k]
        row = inverse_total[size[k]]
        for b in range(batch):
            p[b] = w * row[b]
        for j in range(start[k], start[k + 1]):
            factor = falling[value_index[j], multiplicity[j]]
            for b in range(batch):
                p[b] *= factor[b]
        target = table[outcome[k]]
        for b in range(batch):
            target[b] += p[b]
        if outcome[k] == 5:
            busts = bust_cards[min(size[k] + 1, 8) - 3]
            for b in range(batch):
                busts[b] += p[b]


def dealer_outcomes(compositions: npt.NDArray[np.int64], up: int, hits_soft_17: bool,
                    with_bust_cards: bool = False) -> npt.NDArray[np.float64]:
    """Probability of each of :data:`OUTCOMES` for each row of ``compositions``.

    Parameters
    ----------
    compositions : ndarray of int, shape (n, 10)
        Cards left by value (index 0 Aces, 9 tens) once the up card and any known cards are
        out; the hole card and every draw come from it.
    up : int
        The up card's value, 1 to 10.
    hits_soft_17 : bool
        Whether the dealer draws to a soft 17.
    with_bust_cards : bool, optional
        Add six columns: bust probability with 3, 4, 5, 6, 7, 8+ cards (:data:`BUST_CARDS`).

    Returns
    -------
    ndarray of float, shape (n, 7) or (n, 13)
        Each row sums to 1 over the seven outcomes.

    Examples
    --------
    >>> import numpy as np
    >>> table = dealer_outcomes(np.array([[4, 4, 4, 4, 4, 3, 4, 4, 4, 16]]), up=6, hits_soft_17=False)
    >>> table.shape, round(float(table[0].sum()), 12)
    ((1, 7), 1.0)
    """
    finals = dealer_finals(up, hits_soft_17)
    compositions = np.ascontiguousarray(compositions, dtype=np.int64)
    table = np.zeros((len(OUTCOMES), compositions.shape[0]))
    bust_cards = np.zeros((len(BUST_CARDS), compositions.shape[0]))
    _outcomes_kernel(compositions, finals.ways, finals.size, finals.outcome, finals.start, finals.value_index,
                     finals.multiplicity, finals.max_multiplicity, finals.max_size, table, bust_cards)
    if with_bust_cards:
        return np.vstack([table, bust_cards]).T.copy()
    return table.T.copy()
