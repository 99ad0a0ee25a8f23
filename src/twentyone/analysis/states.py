"""The player's hand compositions behind one dealer up card, with everything a decision needs.

A :class:`StateSpace` holds every multiset of player cards (by value) that fits
in a base composition with a hard total of 21 or less, and for each one: the
card probabilities of the next draw, which state each draw leads to, and the
dealer's outcome distribution from the cards left. Values are "unnormalised"
in games where the dealer has peeked: an expected value times the probability
that the dealer has no blackjack. With the hole card not yet seen, that is the
one quantity that adds up correctly across draws (see docs/maths.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache

import numba
import numpy as np
import numpy.typing as npt

from twentyone.analysis.composition import Counts
from twentyone.analysis.dealer import BLACKJACK, BUST, dealer_outcomes

Hand = tuple[int, ...]
FloatArray = npt.NDArray[np.float64]
BUSTED = -1


RADIX = 22  # a hand's key: counts by value in base 22 (no count can exceed 21)
_PLACE = RADIX ** np.arange(10, dtype=np.int64)


@cache
def _all_hands() -> npt.NDArray[np.int64]:
    """Every non-empty multiset of values (as 10 counts) with a hard sum of 21 or less."""
    result: list[list[int]] = []
    counts = [0] * 10

    def extend(index: int, remaining: int) -> None:
        if index == 10:
            if any(counts):
                result.append(list(counts))
            return
        value = index + 1
        for count in range(remaining // value + 1):
            counts[index] = count
            extend(index + 1, remaining - count * value)
        counts[index] = 0

    extend(0, 21)
    return np.array(result, dtype=np.int64)


@dataclass(frozen=True)
class _Structure:
    """Which hands exist and where each draw leads: it depends only on which hands fit, so it is shared."""

    array: npt.NDArray[np.int64]
    child: npt.NDArray[np.int64]
    order: npt.NDArray[np.int64]
    sorted_keys: npt.NDArray[np.int64]


@cache
def _structure(limit: tuple[int, ...], must_contain: int | None) -> _Structure:
    hands = _all_hands()
    keep = (hands <= np.array(limit)[None, :]).all(axis=1)
    if must_contain is not None:
        keep &= hands[:, must_contain - 1] > 0
    array = hands[keep]
    # Each draw's resulting hand, found by its base-22 key; a hand that does not exist is BUSTED.
    keys = array @ _PLACE
    order = np.argsort(keys)
    sorted_keys = keys[order]
    grown = keys[:, None] + _PLACE[None, :]
    position = np.clip(np.searchsorted(sorted_keys, grown), 0, len(keys) - 1)
    child = np.where(sorted_keys[position] == grown, order[position], BUSTED)
    return _Structure(array, child, order, sorted_keys)


def _multisets(limit: Counts, must_contain: int | None) -> _Structure:
    """The hands that fit within ``limit`` (and hold a ``must_contain`` card, when given)."""
    # No hand of 21 or less holds more than 21 // value cards of a value: a higher limit changes nothing.
    effective = tuple(min(int(limit[v]), 21 // (v + 1)) for v in range(10))
    return _structure(effective, must_contain)


@numba.njit(cache=True)
def _hit_stand_kernel(order, child, prob, bust_mass, stand, choice, value, hit):  # type: ignore[no-untyped-def]
    # States in decreasing hard sum: a draw only raises the hard sum, so each child is already valued.
    for i in order:
        total = 0.0
        for v in range(10):
            p = prob[i, v]
            if p == 0.0:
                continue
            c = child[i, v]
            total += p * (value[c] if c >= 0 else -bust_mass[i, v])
        hit[i] = total
        if choice[i] < 0:
            value[i] = max(stand[i], total)
        else:
            value[i] = total if choice[i] == 1 else stand[i]


@dataclass
class StateSpace:
    """Player hands behind up card ``up`` drawn from ``base`` (the shoe less the up card and known cards)."""

    base: Counts
    up: int
    hits_soft_17: bool
    peeked: bool  # the dealer has checked for blackjack: values are unnormalised by P(no blackjack)
    must_contain: int | None = None
    win_pays: float = 1.0  # winnings per unit staked on a won hand (rules.win_payout)
    # A space of the same up card whose base holds one more card of value ``shared[1]``: a hand of this
    # space and that hand plus such a card leave the same cards, so the dealer's outcomes are shared.
    shared: tuple[StateSpace, int] | None = field(default=None, repr=False)
    array: npt.NDArray[np.int64] = field(init=False)

    def __post_init__(self) -> None:
        structure = _multisets(self.base, self.must_contain)
        array = structure.array
        self.array = array
        self.size = len(array)
        self._stand_cache: dict[tuple[float, float], FloatArray] = {}
        self._one_card_cache: dict[tuple[float, float], FloatArray] = {}
        self.cards = array.sum(axis=1)
        hard = array @ np.arange(1, 11)
        # core.hand.value_of_counts, vectorised (a test pins the two together on every hand).
        self.soft = (array[:, 0] > 0) & (hard + 10 <= 21)
        self.total = np.where(self.soft, hard + 10, hard)
        self.hard = hard
        left = self.base[None, :] - array
        self.left = left
        n_left = left.sum(axis=1)
        self.prob = np.where(n_left[:, None] > 0, left / np.maximum(n_left, 1)[:, None], 0.0)
        # A draw leads to a hand of the space only if that card is left (so the grown hand fits the base).
        self._order, self._sorted_keys = structure.order, structure.sorted_keys
        self.keys = array @ _PLACE
        self.child = structure.child
        self.key_id = self.total + 22 * self.soft.astype(np.int64)  # (total, soft) as one index
        self.by_hard_sum = np.argsort(-hard, kind="stable")  # every draw leads to a state earlier in it
        outcomes = self._dealer_outcomes(left)
        self.outcomes = outcomes
        self.blackjack = outcomes[:, BLACKJACK]
        # Probability of each non-blackjack dealer result, and how a standing total fares against it.
        self.no_blackjack = outcomes[:, :BLACKJACK]
        self.mass = 1.0 - self.blackjack if self.peeked else np.ones(self.size)
        # Dealer blackjack probability left after a draw that busts the player (for the bust's mass).
        self.bust_mass = np.ones((self.size, 10))
        if self.peeked:
            completing = 9 if self.up == 1 else 0  # the card that would make the dealer's blackjack
            after = left.copy()
            for v in range(10):
                taken = after.copy()
                taken[:, v] -= 1
                n_after = np.maximum(taken.sum(axis=1), 1)
                self.bust_mass[:, v] = 1.0 - np.clip(taken[:, completing], 0, None) / n_after
        self.stand_base = self._stand_base()

    def _dealer_outcomes(self, left: npt.NDArray[np.int64]) -> FloatArray:
        """The dealer's outcomes from each state's cards left, reusing ``shared``'s where they are the same."""
        if self.shared is None:
            return dealer_outcomes(left, self.up, self.hits_soft_17)
        other, value = self.shared
        found = other.index_of(self.keys + _PLACE[value - 1])
        outcomes = np.empty((self.size, other.outcomes.shape[1]))
        have = found >= 0
        outcomes[have] = other.outcomes[found[have]]
        if not have.all():
            outcomes[~have] = dealer_outcomes(left[~have], self.up, self.hits_soft_17)
        return outcomes

    def _stand_base(self) -> FloatArray:
        """Stake-1 value of standing, over the dealer's non-blackjack results only."""
        dealer_totals = np.array([17, 18, 19, 20, 21])
        player = self.total[:, None]
        difference = player - dealer_totals[None, :]
        versus = np.where(difference > 0, self.win_pays, np.where(difference < 0, -1.0, 0.0))
        made: FloatArray = (self.no_blackjack[:, :BUST] * versus).sum(axis=1)
        return made + self.win_pays * self.no_blackjack[:, BUST]

    def stand(self, stake: float, blackjack_loss: float) -> FloatArray:
        """Value of standing with ``stake`` units; a revealed dealer blackjack costs ``blackjack_loss``."""
        key = (stake, blackjack_loss)
        if key not in self._stand_cache:
            value = stake * self.stand_base
            if not self.peeked:
                value = value - self.blackjack * blackjack_loss
            self._stand_cache[key] = value
        return self._stand_cache[key]

    def find(self, hand: Hand) -> int | None:
        """The index of a hand (counts by value), or None when it is not in this space."""
        key = int(np.dot(hand, _PLACE))
        position = int(np.searchsorted(self._sorted_keys, key))
        if position < self.size and self._sorted_keys[position] == key:
            return int(self._order[position])
        return None

    def index_of(self, keys: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """The index of each hand key (``counts @ RADIX ** arange(10)``) in this space, -1 where absent."""
        position = np.clip(np.searchsorted(self._sorted_keys, keys), 0, self.size - 1)
        return np.where(self._sorted_keys[position] == keys, self._order[position], -1)

    def state(self, hand: Hand) -> int:
        found = self.find(hand)
        if found is None:
            raise KeyError(hand)
        return found

    def one_card(self, stake: float, blackjack_loss: float) -> FloatArray:
        """Value of drawing exactly one card and standing (a double), for every state."""
        key = (stake, blackjack_loss)
        if key not in self._one_card_cache:
            stand = self.stand(stake, blackjack_loss)
            child_value = np.where(self.child >= 0, stand[np.maximum(self.child, 0)], -stake * self.bust_mass)
            self._one_card_cache[key] = (self.prob * child_value).sum(axis=1)
        return self._one_card_cache[key]

    def hit_stand(self, blackjack_loss: float, policy: npt.NDArray[np.int8] | None = None,
                  leave: FloatArray | None = None) -> tuple[FloatArray, FloatArray]:
        """Stake-1 values when only hitting and standing remain: (best or policy value, hit value).

        ``policy`` (one entry per state: 1 hit, 0 stand) replaces the best choice.
        ``leave`` is another way to end the hand at each state, taken where it is worth more than standing (a cash
        out's value; ``-inf`` where none is offered).
        Hands are resolved from the highest hard sum down, so every draw leads
        to a hand already valued.
        """
        stand = self.stand(1.0, blackjack_loss)
        if leave is not None:
            stand = np.maximum(stand, leave)
        value = np.zeros(self.size)
        hit = np.zeros(self.size)
        choice = np.full(self.size, -1, dtype=np.int8) if policy is None else policy.astype(np.int8)
        _hit_stand_kernel(self.by_hard_sum, self.child, self.prob, self.bust_mass, stand, choice, value, hit)
        return value, hit
