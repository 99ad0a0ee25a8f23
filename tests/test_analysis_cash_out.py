"""First Person Blackjack's cash-out offers against the value of playing on (``analysis/cashout.py``).

The sheet prices an offer by the hand's total and the dealer's up card alone. Priced from the total's two-card hands,
which may still double and split, the offers paid hands that had hit more than playing on is worth, and optimal play
that took them returned 99.4966 % against the sheet's optimal 99.29 % (a trial of an analyst). The shipped table is
priced from the lowest value of playing on among every hand of the total (``cash_out.fair_value = "lowest"``): no
offer beats playing on, the best return is the main game's, and the offers span the sheet's 0.4-1.77x.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from itertools import combinations_with_replacement

import pytest

from twentyone.analysis.cashout import cash_out_table
from twentyone.analysis.game import STRATEGY_UPS, GameAnalysis
from twentyone.analysis.report import comparison_rows, rtp_report
from twentyone.core.cards import parse_cards
from twentyone.core.hand import value_of_points
from twentyone.core.round import HandBet, Round
from twentyone.core.rules import FairValue, Rules
from twentyone.core.shoe import Shoe
from twentyone.variants import builtin_rules

FIRST_PERSON = builtin_rules("first-person")


def priced_by(fair_value: FairValue) -> Rules:
    """First person with offers derived by ``fair_value``, as `twentyone cash-out-table` would write them."""
    rules = replace(FIRST_PERSON, cash_out=replace(FIRST_PERSON.cash_out, fair_value=fair_value))
    return replace(rules, cash_out=replace(rules.cash_out, factors=cash_out_table(rules).factors))


@pytest.fixture(scope="module")
def playing_on() -> GameAnalysis:
    return GameAnalysis(FIRST_PERSON)


def test_no_offer_beats_playing_on_so_the_best_return_is_the_main_games(playing_on: GameAnalysis) -> None:
    """Optimal play that may cash out at any decision (``cash_out=True``) gains nothing on any deal, and returns the
    main game's optimal figure; with the offers of the two-card average ("optimal") it gains, as the trial found."""
    cashing_out = GameAnalysis(FIRST_PERSON, cash_out=True)
    gains = [cashing_out._initial(cards, up, None)[1] - playing_on._initial(cards, up, None)[1]
             for up, cards, _ in playing_on.deals()]
    assert min(gains) > -1e-12 and max(gains) < 1e-12
    assert cashing_out.optimal_return() == pytest.approx(playing_on.optimal_return(), abs=1e-12)
    averaged = GameAnalysis(priced_by(FairValue.OPTIMAL), cash_out=True).optimal_return()
    assert averaged > playing_on.optimal_return() + 0.001


def worth_playing_on(analysis: GameAnalysis, cards: tuple[int, ...], up: int) -> float:
    """A hand's value of playing on, through the analysis's one-hand values: a two-card hand's best play (doubling
    and splitting included), a longer hand's hit or stand."""
    if len(cards) == 2:
        ev = analysis.hand_ev((cards[0], cards[1]), up)
        return max(value for action, value in ev.actions.items() if action != "insurance")
    return max(analysis.later_ev(cards, up).actions.values())


def test_every_offer_is_at_most_what_each_hand_of_its_total_is_worth(playing_on: GameAnalysis) -> None:
    """Checked hand by hand through the analysis's one-hand values, not the table's own sweep of the state space:
    every hand of two, three and four cards is worth at least its total's offer. And each offer is set by a hand the
    table names, which is worth what the table says: the offer is no lower than it need be. Among those hands, some
    hold many cards (twenty Aces, a hard 20 against a 6)."""
    rules = FIRST_PERSON
    table = cash_out_table(rules, playing_on)
    hands = [cards for size in (2, 3, 4) for cards in combinations_with_replacement(range(1, 11), size)]
    for up in STRATEGY_UPS:
        for cards in hands:
            total, soft = value_of_points(cards)
            if total >= 21:
                continue
            factor = rules.cash_out.factor(soft, total, up)
            worth = worth_playing_on(playing_on, cards, up)
            assert factor is not None and factor <= 1.0 + worth + 1e-12, (cards, up, factor, worth)
            assert worth >= table.fair[(soft, total, up)] - 1e-12, (cards, up)
    for key, cards in table.lowest_hands.items():
        soft, total, up = key
        assert value_of_points(cards) == (total, soft)
        assert worth_playing_on(playing_on, cards, up) == pytest.approx(table.fair[key], abs=1e-12), (key, cards)
        assert table.factors[key] == round((1.0 - table.margin) * (1.0 + table.fair[key]), 4)
    assert max(len(cards) for cards in table.lowest_hands.values()) > 4  # beyond the hands checked above


def test_the_offers_meet_the_sheets_figures() -> None:
    """"Cash Out pays 0.4-1.77x" and "always taking the early cash out offer is 96.80%" (sheet 000), with the one
    margin solved for the second: the first comes out of the values. The two-card average gave 0.42-1.74x."""
    table = cash_out_table(FIRST_PERSON)
    low, high = table.span
    assert (round(low, 1), round(high, 2)) == (0.4, 1.77)
    assert round(table.always_cash_out * 100, 2) == 96.80
    assert round(cash_out_table(priced_by(FairValue.OPTIMAL)).span[1], 2) == 1.74


def test_the_engine_pays_the_offer_of_the_table(playing_on: GameAnalysis) -> None:
    """Ten-six against a 7: the offer is hard 16's, which its lowest hand sets (one of three cards, which can only hit
    or stand), below what ten-six's best play is worth; the engine pays it, rounded down to the cent."""
    factor = Fraction(str(FIRST_PERSON.cash_out.factor(False, 16, 7)))
    best = max(value for action, value in playing_on.hand_ev((10, 6), 7).actions.items() if action != "insurance")
    assert float(factor) < 1.0 + best
    game = Round(FIRST_PERSON, Shoe(parse_cards(["TS", "7H", "6D", "5C"])))
    game.place_bets("p", [HandBet(10_001)])
    game.deal()
    game.cash_out()
    assert game.returned == int(factor * 10_001)


def test_a_game_without_cash_out_is_the_same_with_the_option_asked() -> None:
    classic = builtin_rules("classic")
    assert GameAnalysis(classic, cash_out=True).optimal_return() == GameAnalysis(classic).optimal_return()


def test_the_report_sets_the_best_return_with_cash_out_against_the_sheets_optimal_figure() -> None:
    report = rtp_report(FIRST_PERSON)
    rows = {label: (computed, published) for label, computed, published in comparison_rows(report)}
    computed, published = rows["Optimal play with cash out"]
    assert published == 99.29 and computed == report["cash_out_optimal"]
    assert computed == pytest.approx(rows["Main game, optimal play"][0], abs=1e-9)


def test_the_table_is_derived_from_play_without_its_own_offers() -> None:
    with pytest.raises(ValueError, match="without cashing out"):
        cash_out_table(FIRST_PERSON, GameAnalysis(FIRST_PERSON, cash_out=True))
