"""Splitting a pair, resplits included: the exact value under CDZ-, CDP1 or CDP post-split play.

A split is played as the engine plays it: both new hands get their second card
at once, then the first hand is played, then the second; a hand that receives
another pair card is split again (always, while the spot holds fewer than
``split.max_hands`` hands and, for aces, ``split.resplit_aces`` allows it).

The three standard post-split strategies differ only in what each split hand's
play is optimised for (docs/maths.md):

* ``cdz-``: the shoe before the split (the hand's own cards and the up card
  removed, as if it had been dealt unsplit);
* ``cdp1``: the shoe after the first split (the other pair card removed too),
  for every split hand, resplits included;
* ``cdp``: the shoe as the hand sees it when it is played: every pair card that
  heads a hand of the spot at that moment removed.

Each is a strategy of the hand's own cards (and, for CDP, of how many hands the
spot holds), so the value is exact. The cards of the other split hands are not
independent of a hand's own, but every condition on them is only "this second
card was a pair card" or "it was not", and ``1{not a pair card} = 1 - 1{pair
card}``: expanding the products turns every term into "k more pair cards
removed, the rest of the cards unseen". A hand played with a fixed strategy is
worth the same on average whether or not unseen cards are burnt before it, so
each term is a one-hand value from the shoe less ``k`` pair cards. The
coefficients of those terms depend only on ``max_hands`` (:func:`split_terms`).

Without resplits a split is worth two hands, each played from the shoe after the split:

>>> split_terms(2)
((1, False, 0, 2), (1, True, 0, 2))
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from math import comb
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from twentyone.analysis.states import FloatArray, StateSpace
from twentyone.core.hand import value_of_counts
from twentyone.core.operations import ACTION_OF_MULTIPLIER

if TYPE_CHECKING:
    from twentyone.analysis.game import GameAnalysis, UpVariant

SPLIT_STRATEGIES = ("cdz-", "cdp1", "cdp")
# (pair cards other than the hand's own its strategy assumes gone, second card is a pair card, t, coefficient)
Term = tuple[int, bool, int, int]


@cache
def split_terms(max_hands: int) -> tuple[Term, ...]:
    """The coefficients of a split's value in one-hand values, for a spot of up to ``max_hands`` hands.

    The split's value is ``sum coefficient x P(t more pair cards) x W(strategy, second, t)`` over the
    terms, where ``W`` is one hand's value (with the chance that its second card is, or is not, a
    pair card) from the shoe less the pair, the up card and ``t`` more pair cards.

    Examples
    --------
    >>> len(split_terms(3)), len(split_terms(4)), max(others for others, *_ in split_terms(4))
    (6, 11, 3)
    """
    coefficients: dict[tuple[int, bool, int], int] = {}

    def record(hands: tuple[tuple[bool, int], ...], pair_draws: int, other_draws: int) -> None:
        for second_is_pair, others in hands:
            known = pair_draws - second_is_pair  # pair cards drawn besides this hand's second card
            unknown = other_draws - (not second_is_pair)  # draws known only not to be pair cards
            for i in range(unknown + 1):
                key = (others, second_is_pair, known + i)
                coefficients[key] = coefficients.get(key, 0) + (-1) ** i * comb(unknown, i)

    def play(hands: tuple[tuple[bool, int | None], ...], pair_draws: int, other_draws: int) -> None:
        for index, (second_is_pair, decided) in enumerate(hands):
            if decided is not None:
                continue
            if second_is_pair and len(hands) < max_hands:
                for first in (True, False):
                    for second in (True, False):
                        split = ((first, None), (second, None))
                        play(hands[:index] + split + hands[index + 1:],
                             pair_draws + first + second, other_draws + 2 - first - second)
            else:
                play((*hands[:index], (second_is_pair, len(hands) - 1), *hands[index + 1:]), pair_draws, other_draws)
            return
        record(hands, pair_draws, other_draws)  # type: ignore[arg-type]

    for first in (True, False):
        for second in (True, False):
            play(((first, None), (second, None)), first + second, 2 - first - second)
    return tuple(sorted((others, is_pair, t, c) for (others, is_pair, t), c in coefficients.items() if c))


def falling(n: int, k: int) -> int:
    result = 1
    for i in range(k):
        result *= n - i
    return result


@dataclass(frozen=True)
class Plan:
    """How a split hand is played: the first action by its second card, then hit (1) or stand (0)."""

    first: dict[int, str]
    hits: Callable[[StateSpace], npt.NDArray[np.int8]]
    space: StateSpace | None = None  # where an optimal plan was chosen, and its hit (1) or stand (0) there
    policy: npt.NDArray[np.int8] | None = None


class PairSplit:
    """The value of splitting one pair against one up card (one peek variant)."""

    def __init__(self, analysis: GameAnalysis, variant: UpVariant, pair: int) -> None:
        self.analysis = analysis
        self.rules = analysis.rules
        self.variant = variant
        self.pair = pair
        self.base = variant.space.base
        self.loss = analysis.blackjack_loss(1.0, split=True)
        self._plans: dict[object, Plan] = {}
        self._values: dict[tuple[object, int], tuple[float, float]] = {}

    def space(self, removed: int) -> StateSpace:
        """Hands holding a pair card, from the shoe less the up card and ``removed`` other pair cards."""
        key = (self.pair, removed)
        if key not in self.variant.split_spaces:
            base = self.base.copy()
            base[self.pair - 1] -= removed
            self.variant.split_spaces[key] = self.analysis.space(base, self.variant, must_contain=self.pair)
        return self.variant.split_spaces[key]

    def open_actions(self, total: int, soft: bool) -> list[str]:
        """The actions the rules open on a split hand's first two cards (no surrender, no resplit here)."""
        rules = self.rules
        if rules.split.one_card_only(self.pair == 1) or total == 21:
            return ["stand"]
        doubles = [str(ACTION_OF_MULTIPLIER[m]) for m in rules.double.multipliers
                   if rules.double.allowed(m, 2, total, soft, from_split=True)]
        return ["stand", "hit", *doubles]

    def action_values(self, space: StateSpace, state: int, hit: FloatArray) -> dict[str, float]:
        """Unnormalised values (stake 1) of each open action on a split hand's two cards."""
        values: dict[str, float] = {}
        for action in self.open_actions(int(space.total[state]), bool(space.soft[state])):
            if action == "stand":
                values[action] = float(space.stand(1.0, self.loss)[state])
            elif action == "hit":
                values[action] = float(hit[state])
            else:
                multiplier = float(_MULTIPLIER[action])
                loss = self.analysis.blackjack_loss(multiplier, split=True)
                values[action] = float(space.one_card(multiplier, loss)[state])
        return values

    def plan(self, key: object, chart: tuple[dict[tuple[int, bool], int], dict[tuple[int, bool], str]] | None
             ) -> Plan:
        """The optimal plan for the shoe less ``key`` other pair cards, or the chart's plan."""
        if key not in self._plans:
            if chart is not None:
                self._plans[key] = self._chart_plan(*chart)
            else:
                assert isinstance(key, int)
                self._plans[key] = self._optimal_plan(key)
        return self._plans[key]

    def _optimal_plan(self, removed: int) -> Plan:
        space = self.space(removed)
        _, hit = space.hit_stand(self.loss)
        policy = (hit > space.stand(1.0, self.loss)).astype(np.int8)
        one = space.state(_hand(self.pair))
        first: dict[int, str] = {}
        for card in range(1, 11):
            child = int(space.child[one, card - 1])
            if child >= 0 and space.left[one, card - 1] > 0:
                values = self.action_values(space, child, hit)
                first[card] = max(values, key=lambda action: values[action])

        def hits(target: StateSpace) -> npt.NDArray[np.int8]:
            found = space.index_of(target.keys)
            return np.where(found >= 0, policy[np.maximum(found, 0)], 0).astype(np.int8)

        return Plan(first, hits, space, policy)

    def _chart_plan(self, policy: dict[tuple[int, bool], int], two_card: dict[tuple[int, bool], str]) -> Plan:
        from twentyone.analysis.game import code_action, policy_array

        array = policy_array(policy)
        first: dict[int, str] = {}
        for card in range(1, 11):
            total, soft = value_of_counts(_hand(self.pair, card))
            actions = {action: 0.0 for action in self.open_actions(total, soft)}
            first[card] = next(iter(actions)) if len(actions) == 1 else code_action(
                two_card.get((total, soft), "S"), actions)
        return Plan(first, lambda target: array[target.key_id])

    def decide(self, strategy: str, hands: int, values: tuple[int, ...]) -> str:
        """The action ``strategy`` takes on a split hand of card ``values`` (pair card first) in a spot of ``hands``.

        Splitting again, where the rules allow, is always taken before this is asked.
        """
        plan = self.plan({"cdz-": 0, "cdp1": 1, "cdp": hands - 1}[strategy], None)
        if len(values) == 2:
            return plan.first[values[1]]
        assert plan.space is not None and plan.policy is not None
        return "hit" if plan.policy[plan.space.state(_hand(*values))] else "stand"

    def hand_values(self, key: object, removed: int, plan: Plan) -> tuple[float, float]:
        """One split hand's value from the shoe less ``removed`` other pair cards: (non-pair second, pair second).

        Each is weighted by the chance of such a second card.
        """
        cache_key = (key, removed)
        if cache_key not in self._values:
            space = self.space(removed)
            _, hit = space.hit_stand(self.loss, plan.hits(space))
            one = space.state(_hand(self.pair))
            other = same = 0.0
            for card in range(1, 11):
                p = float(space.prob[one, card - 1])
                if p == 0.0:
                    continue
                child = int(space.child[one, card - 1])
                action = plan.first[card]
                if action == "stand":
                    value = float(space.stand(1.0, self.loss)[child])
                elif action == "hit":
                    value = float(hit[child])
                else:
                    multiplier = float(_MULTIPLIER[action])
                    value = float(space.one_card(multiplier, self.analysis.blackjack_loss(multiplier, True))[child])
                if card == self.pair:
                    same += p * value
                else:
                    other += p * value
            self._values[cache_key] = (other, same)
        return self._values[cache_key]

    def value(self, strategy: str = "cdp",
              chart: tuple[dict[tuple[int, bool], int], dict[tuple[int, bool], str]] | None = None) -> float:
        """Unnormalised value of splitting (every hand's stake added up), by ``strategy`` or by ``chart``."""
        rules = self.rules
        may_resplit = self.pair != 1 or rules.split.resplit_aces
        terms = split_terms(rules.split.max_hands if may_resplit else 2)
        pairs_left = int(self.base[self.pair - 1]) - 2
        cards_left = int(self.base.sum()) - 2
        total = 0.0
        for others, second_is_pair, t, coefficient in terms:
            if t > pairs_left:
                continue
            if chart is not None:
                key: object = ("chart", id(chart[0]), id(chart[1]))
            else:
                key = {"cdz-": 0, "cdp1": 1, "cdp": others}[strategy]
            plan = self.plan(key, chart)
            other, same = self.hand_values(key, 1 + t, plan)
            chance = falling(pairs_left, t) / falling(cards_left, t)
            total += coefficient * chance * (same if second_is_pair else other)
        return total


_MULTIPLIER = {"double": 2, "triple": 3, "quadruple": 4}


def _hand(*values: int) -> tuple[int, ...]:
    counts = [0] * 10
    for value in values:
        counts[value - 1] += 1
    return tuple(counts)
