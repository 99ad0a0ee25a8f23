"""The analyser against independent brute force: ordered-draw recursions on small shoes.

The brute force here shares no code with twentyone.analysis: it plays the dealer
card by card with removal, and values the player's decisions by conditioning on
the hole card explicitly (a Bayesian posterior over the hole card given the
cards seen), where the analyser uses unnormalised values and a multiset formula.
"""

from __future__ import annotations

from fractions import Fraction
from functools import cache

import numpy as np
import pytest

from twentyone.analysis.composition import value_counts
from twentyone.analysis.dealer import OUTCOMES, dealer_outcomes
from twentyone.analysis.game import GameAnalysis
from twentyone.core.rules import Rules, rules_from_toml

SMALL = 'id = "small"\nname = "Small"\n[shoe]\ndecks = 1\nremoved_ranks = ["2", "3", "4", "5"]\n'


def small_rules(extra: str = "") -> Rules:
    return rules_from_toml(SMALL + extra)


def best(cards: tuple[int, ...]) -> tuple[int, bool]:
    hard = sum(cards)
    if 1 in cards and hard + 10 <= 21:
        return hard + 10, True
    return hard, False


@cache
def dealer_brute(counts: tuple[int, ...], cards: tuple[int, ...], h17: bool) -> dict[str, Fraction]:
    """Final dealer result from ``cards`` drawing from ``counts`` (values 1..10), card by card."""
    total, soft = best(cards)
    if len(cards) == 2 and total == 21:
        return {"blackjack": Fraction(1)}
    if total > 21:
        return {"bust": Fraction(1)}
    if total > 17 or (total == 17 and not (soft and h17)):
        return {str(total): Fraction(1)}
    n = sum(counts)
    result: dict[str, Fraction] = {}
    for index, count in enumerate(counts):
        if count:
            left = (*counts[:index], count - 1, *counts[index + 1:])
            for outcome, p in dealer_brute(left, (*cards, index + 1), h17).items():
                result[outcome] = result.get(outcome, Fraction(0)) + Fraction(count, n) * p
    return result


@pytest.mark.parametrize("h17", [False, True])
@pytest.mark.parametrize("up", [1, 6, 7, 10])
def test_dealer_outcomes_match_card_by_card_recursion(up: int, h17: bool) -> None:
    counts = value_counts(small_rules())
    counts[up - 1] -= 1
    counts[7] -= 1  # a player's 8 already out
    brute = dealer_brute(tuple(int(c) for c in counts), (up,), h17)
    table = dealer_outcomes(np.array([counts]), up, h17)[0]
    for column, outcome in enumerate(OUTCOMES):
        assert table[column] == pytest.approx(float(brute.get(outcome, 0)), abs=1e-12), outcome


def test_dealer_outcomes_eight_decks_up_six_busts_as_published_tables_say() -> None:
    from twentyone.variants import builtin_rules

    counts = value_counts(builtin_rules("first-person"))
    counts[5] -= 1
    bust = dealer_outcomes(np.array([counts]), 6, False)[0][OUTCOMES.index("bust")]
    brute_infinite = 0.4228  # the well-known infinite-deck figure, close to 8 decks
    assert abs(bust - brute_infinite) < 0.002


class BruteForce:
    """Optimal hit/stand/double values with the hole card handled by explicit conditioning."""

    def __init__(self, rules: Rules, up: int, extra_removed: tuple[int, ...] = ()) -> None:
        self.rules = rules
        self.up = up
        counts = value_counts(rules)
        counts[up - 1] -= 1
        for value in extra_removed:
            counts[value - 1] -= 1
        self.shoe = tuple(int(c) for c in counts)
        rank = "A" if up == 1 else ("K" if up == 10 else str(up))
        self.peeked = rules.deal.hole_card and rules.dealer.peeks_under(rank)
        self.completing = {1: 10, 10: 1}.get(up)
        self.h17 = rules.dealer.hits_soft_17

    def left(self, player: tuple[int, ...]) -> tuple[int, ...]:
        counts = list(self.shoe)
        for value in player:
            counts[value - 1] -= 1
        return tuple(counts)

    def hole_posterior(self, player: tuple[int, ...]) -> dict[int, Fraction]:
        """P(hole card | the player's cards, the peek) by Bayes over the order of the deal."""
        left = self.left(player)
        n = sum(left)
        weights = {value: Fraction(left[value - 1], n) for value in range(1, 11) if left[value - 1]}
        if self.peeked and self.completing is not None:
            weights.pop(self.completing, None)
        total = sum(weights.values())
        return {value: w / total for value, w in weights.items()}

    def payoff(self, player_total: int, outcome: str, stake: int) -> Fraction:
        if outcome == "blackjack":
            take = stake if self.rules.dealer.no_peek_blackjack_takes == "all" else 1
            return Fraction(-take)
        if outcome == "bust":
            return Fraction(stake)
        dealer_total = int(outcome)
        return Fraction(stake * ((player_total > dealer_total) - (player_total < dealer_total)))

    def stand(self, player: tuple[int, ...], stake: int = 1) -> Fraction:
        total, _ = best(player)
        if total > 21:
            return Fraction(-stake)
        value = Fraction(0)
        for hole, p in self.hole_posterior(player).items():
            left = list(self.left(player))
            left[hole - 1] -= 1
            for outcome, q in dealer_brute(tuple(left), (self.up, hole), self.h17).items():
                value += p * q * self.payoff(total, outcome, stake)
        return value

    def next_card(self, player: tuple[int, ...]) -> dict[int, Fraction]:
        left = self.left(player)
        n = sum(left)
        result: dict[int, Fraction] = {}
        for hole, p in self.hole_posterior(player).items():
            for value in range(1, 11):
                count = left[value - 1] - (1 if value == hole else 0)
                if count > 0:
                    result[value] = result.get(value, Fraction(0)) + p * Fraction(count, n - 1)
        return result

    @cache  # noqa: B019 - small test objects, kept for the test's life
    def best_value(self, player: tuple[int, ...]) -> Fraction:
        if best(player)[0] > 21:
            return Fraction(-1)
        return max(self.stand(player), self.hit(player))

    def hit(self, player: tuple[int, ...]) -> Fraction:
        return sum((p * self.best_value(tuple(sorted((*player, c)))) for c, p in self.next_card(player).items()),
                   Fraction(0))

    def double(self, player: tuple[int, ...]) -> Fraction:
        return sum((p * self.stand(tuple(sorted((*player, c))), 2) for c, p in self.next_card(player).items()),
                   Fraction(0))


CASES = [((10, 6), 10), ((10, 6), 1), ((1, 7), 9), ((6, 6), 6), ((8, 8), 10), ((9, 7), 7), ((1, 6), 1)]


@pytest.mark.parametrize(("extra", "label"), [
    ("", "peek under ace and ten (the default)"),
    ('[dealer]\npeek = "ace"\n', "peek under ace only, ten-up blackjack takes all"),
    ('[dealer]\npeek = "none"\nno_peek_blackjack_takes = "original"\n', "no peek, original bets only"),
    ('[dealer]\nhits_soft_17 = true\n', "dealer hits soft 17"),
    ('[deal]\norder = ["hands", "dealer-up", "hands"]\n', "no hole card (European)"),
])
def test_stand_hit_double_match_brute_force(extra: str, label: str) -> None:
    rules = small_rules(extra)
    analysis = GameAnalysis(rules)
    for cards, up in CASES:
        brute = BruteForce(rules, up)
        ev = analysis.hand_ev(cards, up)
        player = tuple(sorted(cards))
        assert ev.actions["stand"] == pytest.approx(float(brute.stand(player)), abs=1e-10), (label, cards, up)
        assert ev.actions["hit"] == pytest.approx(float(brute.hit(player)), abs=1e-10), (label, cards, up)
        assert ev.actions["double"] == pytest.approx(float(brute.double(player)), abs=1e-10), (label, cards, up)


def test_split_value_is_twice_one_post_split_hand_played_from_the_post_split_shoe() -> None:
    rules = small_rules('[double]\nafter_split = true\n[split]\naces_one_card = false\n')
    analysis = GameAnalysis(rules)
    for pair, up in ((8, 10), (7, 6), (1, 9)):
        brute = BruteForce(rules, up, extra_removed=(pair,))
        one_hand = Fraction(0)
        for card, p in brute.next_card((pair,)).items():
            hand = tuple(sorted((pair, card)))
            options = [brute.stand(hand), brute.hit(hand), brute.double(hand)]
            one_hand += p * max(options)
        assert analysis.hand_ev((pair, pair), up).actions["split"] == pytest.approx(float(2 * one_hand), abs=1e-10)


def test_optimal_play_is_never_below_basic_strategy() -> None:
    from twentyone.variants import VARIANTS, builtin_rules

    for variant in VARIANTS:
        analysis = GameAnalysis(builtin_rules(variant))
        report = analysis.main_return()
        assert report.optimal >= report.basic - 1e-12, variant
        assert abs(sum(report.by_up_optimal.values()) - (report.optimal - 1)) < 1e-12


def test_deal_probabilities_sum_to_one() -> None:
    from twentyone.variants import builtin_rules

    for variant in ("single-deck", "power"):
        total = sum(p for _, _, p in GameAnalysis(builtin_rules(variant)).deals())
        assert total == pytest.approx(1.0, abs=1e-12)
