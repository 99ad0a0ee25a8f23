"""The proof that the analyser and the engine play the same game.

With the engine alone, the exact expected return of a fixed strategy on a small
shoe is computed by branching over every card: a round is replayed from a
stacked shoe prefix; when the shoe runs out, the prefix is extended by every card
still unseen, weighted by its chance. The analyser values the same strategy (the
basic-strategy chart it derives for that shoe, split hands resplit whenever the
rules allow) with its own method; the two must agree to 1e-9.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from twentyone.analysis.game import BasicStrategy, GameAnalysis, code_action, total_of
from twentyone.core.cards import Card
from twentyone.core.operations import Action
from twentyone.core.round import HandBet, Round
from twentyone.core.rules import Rules, rules_from_toml
from twentyone.core.shoe import Shoe, ShoeError
from twentyone.variants import builtin_rules

BET = 10  # every payout of these rules is a whole number of units on 10
DECLINE = {Action.NO_INSURANCE, Action.NO_EVEN_MONEY}
ACTIONS = {"stand": Action.STAND, "hit": Action.HIT, "double": Action.DOUBLE, "triple": Action.TRIPLE,
           "quadruple": Action.QUADRUPLE, "surrender": Action.SURRENDER}


def chart_code(strategy: BasicStrategy, up: int, values: tuple[int, ...]) -> tuple[str, int, bool]:
    total, soft = total_of(tuple(values.count(v) for v in range(1, 11)))
    return strategy.two_card_by_up[up].get((total, soft), "S"), total, soft


def chart_action(strategy: BasicStrategy, game: Round) -> Action:
    """What the chart plays: split the chart's pairs, resplit whenever allowed, never insure."""
    legal = game.legal_actions()
    decision = game.decision()
    assert decision is not None
    hand = next(h for h in game.hands if (h.seat, h.hand) == (decision.seat, decision.hand))
    up = game.dealer_up.value
    values = tuple(card.value for card in hand.cards)
    if Action.NO_SURRENDER in legal:  # early surrender, offered before the peek
        code, _, _ = chart_code(strategy, up, values)
        pair_split = values[0] == values[1] and strategy.pairs_by_up[up].get(values[0], False)
        return Action.SURRENDER if code.startswith("R") and not pair_split else Action.NO_SURRENDER
    declined = [action for action in legal if action in DECLINE]
    if declined:
        return declined[0]
    if len(values) == 2:
        if Action.SPLIT in legal and (hand.from_split or strategy.pairs_by_up[up].get(values[0], False)):
            return Action.SPLIT
        code, total, _ = chart_code(strategy, up, values)
        open_actions = {name: 0.0 for name, action in ACTIONS.items() if action in legal}
        if total == 21:
            return Action.STAND
        return ACTIONS[code_action(code, open_actions)]
    total, soft = total_of(tuple(values.count(v) for v in range(1, 11)))
    return Action.HIT if strategy.hit_by_up[up].get((total, soft), 0) else Action.STAND


def card_classes(rules: Rules, counts: np.ndarray) -> list[tuple[Card, int]]:
    """One representative card per value (a ten and a face apart where the peek tells them apart)."""
    classes: list[tuple[Card, int]] = []
    for value in range(1, 11):
        if value < 10:
            rank = "A" if value == 1 else str(value)
            classes.append((Card(rank, "S"), int(counts[value - 1])))
            continue
        ranks = [rank for rank in "TJQK" if rank not in rules.shoe.removed_ranks]
        faces = [rank for rank in ranks if rules.dealer.peeks_under(rank) != rules.dealer.peeks_under(ranks[0])]
        if not faces:
            classes.append((Card(ranks[0], "S"), int(counts[9])))
            continue
        # Split in the shares of a full deck, as the analysis weighs a ten's peek variants.
        share = int(counts[9]) // len(ranks)
        classes.append((Card(ranks[0], "S"), share * (len(ranks) - len(faces))))
        classes.append((Card(faces[0], "S"), share * len(faces)))
    return [(card, count) for card, count in classes if count]


def play_out(rules: Rules, prefix: tuple[Card, ...], strategy: BasicStrategy,
             taken: set[Action] | None = None) -> float | None:
    """Net result per unit bet of the round dealt from ``prefix``, or None when it needs another card."""
    game = Round(rules, Shoe(prefix))
    game.place_bets("p", [HandBet(BET)])
    try:
        game.deal()
        while game.decision() is not None:
            game.act(chart_action(strategy, game))
    except ShoeError:
        return None
    if taken is not None:
        taken.update(game.actions)
    return (game.returned - game.staked) / BET


def engine_expectation(rules: Rules, counts: np.ndarray, strategy: BasicStrategy,
                       taken: set[Action] | None = None) -> float:
    classes = card_classes(rules, counts)
    expected = 0.0
    stack: list[tuple[tuple[Card, ...], tuple[int, ...], float]] = [((), tuple(c for _, c in classes), 1.0)]
    while stack:
        prefix, left, chance = stack.pop()
        result = play_out(rules, prefix, strategy, taken)
        if result is not None:
            expected += chance * result
            continue
        n = sum(left)
        assert n > 0, f"the shoe ran out of cards after {len(prefix)}: give the test a bigger shoe"
        for index, (card, _) in enumerate(classes):
            if left[index]:
                rest = (*left[:index], left[index] - 1, *left[index + 1:])
                stack.append(((*prefix, card), rest, chance * left[index] / n))
    return expected


def small(rules: Rules, counts: list[int]) -> tuple[Rules, np.ndarray]:
    return replace(rules, side_bets={}, cash_out=replace(rules.cash_out, enabled=False)), np.array(counts)


CUSTOM = 'id = "custom"\nname = "Custom"\n[shoe]\ndecks = 1\n'
# Cards by value, Aces first: a few dozen at most, enough pairs to split (and resplit), few enough kinds
# to branch over every card in seconds, and never so few that a round could run out of cards.
SHOE = [2, 0, 0, 0, 2, 1, 0, 4, 0, 8]
POWER_SHOE = [2, 0, 0, 0, 2, 1, 0, 4, 0, 8]  # power's shoe has no nines (nor tens: tens here are faces)
RESPLIT_SHOE = [4, 0, 0, 0, 0, 0, 0, 4, 0, 7]  # four aces and four eights: four hands of either
CASES: dict[str, tuple[Rules, list[int], set[Action]]] = {
    "first-person": (builtin_rules("first-person"), SHOE, {Action.SPLIT, Action.DOUBLE}),
    "classic": (builtin_rules("classic"), SHOE, {Action.SPLIT, Action.DOUBLE}),
    "single-deck": (builtin_rules("single-deck"), SHOE, {Action.SPLIT, Action.DOUBLE}),
    "multiplayer": (builtin_rules("multiplayer"), SHOE, {Action.SPLIT, Action.DOUBLE}),
    "power": (builtin_rules("power"), POWER_SHOE, {Action.SPLIT, Action.QUADRUPLE}),
    "resplit to 4, aces too, H17, DAS, late surrender, 6:5": (rules_from_toml(
        CUSTOM + '[dealer]\nhits_soft_17 = true\n[double]\nafter_split = true\n'
        '[split]\nmax_hands = 4\nresplit_aces = true\n[player]\nsurrender = "late"\nblackjack_pays = "6:5"\n'),
        RESPLIT_SHOE, {Action.SPLIT}),
    "no hole card, resplit to 3, aces hit, x2-x4 after split, early surrender": (rules_from_toml(
        CUSTOM + '[deal]\norder = ["hands", "dealer-up", "hands"]\n[double]\nmultipliers = [2, 3, 4]\n'
        'after_split = true\n[split]\nmax_hands = 3\naces_one_card = false\n[player]\nsurrender = "early"\n'),
        [3, 0, 0, 0, 0, 1, 0, 3, 0, 7], {Action.SPLIT}),
    "peek under ace only, original bets, 10-11 doubles, wins pay 6:5, insurance 3:1": (rules_from_toml(
        CUSTOM + '[dealer]\npeek = "ace"\nno_peek_blackjack_takes = "original"\n[double]\ntotals = "10-11"\n'
        '[insurance]\npays = "3:1"\n[player]\nwin_pays = "6:5"\n'), SHOE, {Action.SPLIT}),
}


@pytest.mark.parametrize("name", list(CASES))
def test_engine_branching_over_every_card_equals_the_analysis(name: str) -> None:
    game_rules, counts, expected_actions = CASES[name]
    rules, shoe = small(game_rules, counts)
    analysis = GameAnalysis(rules, counts=shoe)
    strategy = analysis.basic_strategy()
    # Split (and resplit) every pair of which the shoe holds three or more, tens aside; the chart decides the rest.
    for up, pairs in strategy.pairs_by_up.items():
        strategy.pairs_by_up[up] = {pair: split or (pair != 10 and counts[pair - 1] >= 3)
                                    for pair, split in pairs.items()}
    exact = analysis.main_return(strategy).basic - 1.0
    taken: set[Action] = set()
    assert engine_expectation(rules, shoe, strategy, taken) == pytest.approx(exact, abs=1e-9), name
    assert expected_actions <= taken, taken
