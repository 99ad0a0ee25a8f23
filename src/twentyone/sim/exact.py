"""The exact return of what the simulator plays, from :mod:`twentyone.analysis`, to compare with.

The main figure is the return of the simulated strategy itself (not of optimal play),
per unit of the initial main bet on one hand off a fresh shoe, with the player's
insurance, even-money and cash-out choices added deal by deal; each side bet's is its
exact return from a fresh shoe.

>>> from twentyone.variants import builtin_rules
>>> from twentyone.sim.tables import SimOptions
>>> exact = exact_returns(builtin_rules("power"), "basic", SimOptions(side_bets=("any_pair",)))
>>> round(exact["main"], 2), round(exact["side_bets"]["any_pair"], 4)
(98.8, 96.5812)
"""

from __future__ import annotations

from typing import Any

from twentyone.analysis.game import GameAnalysis
from twentyone.analysis.report import even_money_gain
from twentyone.analysis.sidebets import side_bet_return
from twentyone.core.rules import Rules
from twentyone.sim.strategy import load_strategy
from twentyone.sim.tables import SimOptions


def _offer_adjustment(rules: Rules, analysis: GameAnalysis, options: SimOptions) -> float:
    """What taking insurance or even money adds to the return, deal by deal (per unit bet)."""
    insurance_pays = rules.insurance.payout.numerator / rules.insurance.payout.denominator
    # Even money as rtp values it (its "Basic strategy, taking even money" row): one sum, not two.
    extra = even_money_gain(rules, analysis) if rules.insurance.even_money and options.even_money else 0.0
    for up, cards, p in analysis.deals():
        if up != 1:
            continue
        natural = sorted(cards) == [1, 10]
        bj = analysis.hand_ev(cards, up).dealer_blackjack
        if natural and rules.insurance.even_money:  # offered even money, not insurance: counted above
            continue
        insurable = rules.insurance.offered and (not natural or rules.insurance.to_blackjack)
        if options.insurance and insurable:
            extra += p * 0.5 * (bj * (1.0 + insurance_pays) - 1.0)
    return extra


def _offers_taken_by_optimal(rules: Rules, analysis: GameAnalysis) -> float:
    """What the maths' optimal player gains from offers (insurance or even money where they are
    worth taking, which they are not in the five games): the simulated optimal player answers
    offers by the options instead, so this is taken out of its return."""
    payout = rules.blackjack_payout.numerator / rules.blackjack_payout.denominator
    gain = 0.0
    for up, cards, p in analysis.deals():
        if up != 1:
            continue
        ev = analysis.hand_ev(cards, up)
        natural = sorted(cards) == [1, 10]
        if natural and rules.insurance.even_money:
            gain += p * max(0.0, 1.0 - (1.0 - ev.dealer_blackjack) * payout)
        elif "insurance" in ev.actions and (not natural or rules.insurance.to_blackjack):
            gain += p * max(0.0, ev.actions["insurance"])
    return gain


def _always_cash_out(rules: Rules, analysis: GameAnalysis, options: SimOptions) -> float:
    """Return of taking the first cash-out offer on every hand, with the offers of the rules file."""
    payout = rules.blackjack_payout.numerator / rules.blackjack_payout.denominator
    total = 0.0
    for up, cards, p in analysis.deals():
        ev = analysis.hand_ev(cards, up)
        if sorted(cards) == [1, 10]:
            total += p * (1.0 + (1.0 - ev.dealer_blackjack) * payout)
            continue
        reach = p * (1.0 - ev.dealer_blackjack) if ev.peeked else p
        hard = cards[0] + cards[1]
        soft = 1 in cards and hard + 10 <= 21
        # Whole minor units, floored as the engine does: a float floor made 0.7656 x 10000 7655 (an analyst's trial).
        offer = rules.cash_out.offer(soft, hard + 10 if soft else hard, up, options.bet)
        total += reach * (offer or 0) / options.bet
    return total


def exact_returns(rules: Rules, strategy: str, options: SimOptions,
                  analysis: GameAnalysis | None = None) -> dict[str, Any]:
    """Exact returns (percent) of the simulated play: ``main`` and each simulated side bet.

    ``main`` is None for a play the maths package does not value (insurance with cash out, optimal
    play declining early surrender).
    """
    analysis = analysis or GameAnalysis(rules)
    main: float | None
    if options.cash_out:
        main = None if options.insurance else 100 * _always_cash_out(rules, analysis, options)
    elif strategy == "optimal" and rules.surrender == "early":
        main = None  # the simulated optimal player declines early surrender; the maths values taking it
    elif strategy == "optimal":
        optimal = analysis.main_return().optimal - _offers_taken_by_optimal(rules, analysis)
        main = 100 * (optimal + _offer_adjustment(rules, analysis, options))
    else:
        basic = load_strategy(rules, strategy, analysis)
        main = 100 * (analysis.main_return(basic).basic + _offer_adjustment(rules, analysis, options))
    sides = {name: side_bet_return(rules, name).percent for name in options.side_bets}
    return {"main": main, "side_bets": sides}
