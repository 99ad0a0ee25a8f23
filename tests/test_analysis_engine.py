"""The analyser's numbers against the real engine: Monte Carlo rounds with the computed basic strategy."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from twentyone.analysis.cashout import cash_out_table
from twentyone.analysis.game import BasicStrategy, GameAnalysis, total_of
from twentyone.core.operations import Action
from twentyone.core.round import HandBet, Round
from twentyone.core.shoe import Shoe
from twentyone.variants import builtin_rules

DECLINE = {Action.NO_INSURANCE, Action.NO_EVEN_MONEY, Action.NO_SURRENDER}
CODES = {"S": Action.STAND, "H": Action.HIT, "D": Action.DOUBLE, "T": Action.TRIPLE, "Q": Action.QUADRUPLE,
         "R": Action.SURRENDER}


def basic_action(strategy: BasicStrategy, game: Round) -> Action:
    legal = game.legal_actions()
    declined = [action for action in legal if action in DECLINE]
    if declined:
        return declined[0]
    decision = game.decision()
    assert decision is not None
    hand = next(h for h in game.hands if (h.seat, h.hand) == (decision.seat, decision.hand))
    up = game.dealer_up.value
    values = tuple(card.value for card in hand.cards)
    total, soft = total_of(tuple(values.count(v) for v in range(1, 11)))
    if len(values) == 2:
        splits = values[0] == values[1] and not hand.from_split and strategy.pairs_by_up[up].get(values[0])
        if splits and Action.SPLIT in legal:
            return Action.SPLIT
        code = strategy.two_card_by_up[up].get((total, soft), "S")
        first = CODES[code[0]]
        if first in legal:
            return first
        return Action.STAND if code.endswith("s") or code == "S" else Action.HIT
    return Action.HIT if strategy.hit_by_up[up].get((total, soft), 0) else Action.STAND


@pytest.mark.parametrize("variant", ["single-deck", "first-person"])
def test_basic_strategy_return_agrees_with_engine_rounds(variant: str) -> None:
    rules = builtin_rules(variant)
    analysis = GameAnalysis(rules)
    strategy = analysis.basic_strategy()
    exact = analysis.main_return(strategy).basic
    rng = random.Random(7)
    rounds = 40_000
    results = []
    for _ in range(rounds):
        game = Round(rules, Shoe.shuffled(rules.shoe.composition, rng))
        game.place_bets("p", [HandBet(1000)])
        game.deal()
        while game.decision() is not None:
            game.act(basic_action(strategy, game))
        results.append(1 + (game.returned - game.staked) / 1000)  # return per unit of the initial bet
    mean = sum(results) / rounds
    spread = (sum((r - mean) ** 2 for r in results) / (rounds - 1)) ** 0.5
    assert abs(mean - exact) < 4 * spread / rounds**0.5, (mean, exact)


def test_the_shipped_cash_out_table_is_the_computed_one() -> None:
    rules = builtin_rules("first-person")
    table = cash_out_table(rules)
    shipped = Path(__file__).parents[1] / "src" / "twentyone" / "variants_data" / "first-person-cash-out.toml"
    assert shipped.read_text() == table.to_toml()
    for (soft, total, up), factor in table.factors.items():
        assert rules.cash_out.factor(soft, total, up) == factor


def test_always_cashing_out_returns_the_target_and_offers_span_the_sheets_range() -> None:
    table = cash_out_table(builtin_rules("first-person"))
    assert abs(table.always_cash_out - 0.968) < 5e-5
    low, high = table.span
    assert 0.38 < low < 0.45 and 1.70 < high < 1.80
    assert 0 < table.margin < 0.05


def test_the_best_play_is_never_insurance() -> None:
    """Insurance is valued as its own bet (what it adds to the hand): 8,8 against an Ace named it best, above the
    split (a researcher's trial). It stays among the actions, for the offer's own ranking."""
    ev = GameAnalysis(builtin_rules("classic")).hand_ev((8, 8), 1)
    assert ev.best == "split" and ev.actions["insurance"] > ev.actions["split"]


@pytest.mark.parametrize(("call", "message"), [
    (lambda a: a.hand_ev((10, 6), 0), "A card's value is 1 \\(Ace\\) to 10, got 0."),
    (lambda a: a.hand_ev((10, 6), 11), "got 11"),
    (lambda a: a.later_ev((11, 6, 2), 5), "got 11"),
])
def test_the_library_refuses_card_values_no_card_has(call: object, message: str) -> None:
    """A 0 up card was valued as if it were a card, and 11 raised an IndexError (a researcher's trial)."""
    analysis = GameAnalysis(builtin_rules("classic"))
    with pytest.raises(ValueError, match=message):
        call(analysis)  # type: ignore[operator]


def test_an_unknown_side_bet_is_a_value_error_naming_those_offered() -> None:
    from twentyone.analysis.sidebets import side_bet_return

    offered = "no side bet 'nosuch' in power \\(offered: any_pair, 21\\+3, hot_3, bust_it\\)"
    with pytest.raises(ValueError, match=offered):
        side_bet_return(builtin_rules("power"), "nosuch")
