"""Optimal play that cashes out where the offer beats playing on (``GameAnalysis(rules, cash_out=True)``).

First Person Blackjack prices an offer by the hand's total and the up card alone, from the total's two-card hands,
which may still double and split. A trial of an analyst found hands where the offer is worth more than any play,
and a top return above the main game's optimal one that nothing disclosed (docs/maths.md, "Cash out").
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from twentyone.analysis.game import GameAnalysis
from twentyone.analysis.report import comparison_rows, rtp_report
from twentyone.core.cards import parse_cards
from twentyone.core.round import HandBet, Round
from twentyone.core.shoe import Shoe
from twentyone.variants import builtin_rules

FIRST_PERSON = builtin_rules("first-person")


@pytest.fixture(scope="module")
def analyses() -> tuple[GameAnalysis, GameAnalysis]:
    return GameAnalysis(FIRST_PERSON), GameAnalysis(FIRST_PERSON, cash_out=True)


def test_cashing_out_where_it_pays_more_returns_more_than_playing_on(
        analyses: tuple[GameAnalysis, GameAnalysis]) -> None:
    playing_on, cashing_out = analyses
    gains = [cashing_out._initial(cards, up, None)[1] - playing_on._initial(cards, up, None)[1]
             for up, cards, _ in playing_on.deals()]
    assert min(gains) > -1e-12  # an option more is never worth less
    assert sum(gain > 1e-9 for gain in gains) > 10  # and some deals use it
    assert cashing_out.optimal_return() > playing_on.optimal_return() + 0.001


def test_a_game_without_cash_out_is_the_same_with_the_option_asked() -> None:
    classic = builtin_rules("classic")
    assert GameAnalysis(classic, cash_out=True).optimal_return() == GameAnalysis(classic).optimal_return()


def test_hard_16_against_a_7_is_worth_cashing_out_at_the_offer_the_engine_pays(
        analyses: tuple[GameAnalysis, GameAnalysis]) -> None:
    """Ten-six against a 7 is offered what hard 16s are worth on average, 8,8 (which splits) among them: more than
    hitting. The analysis values the offer at the table's factor, which is what the engine pays."""
    playing_on, cashing_out = analyses
    factor = Fraction(str(FIRST_PERSON.cash_out.factor(False, 16, 7)))
    ev = cashing_out.hand_ev((10, 6), 7)
    assert ev.best == "cash-out" and ev.actions["cash-out"] == pytest.approx(float(factor - 1), abs=1e-12)
    assert ev.actions["cash-out"] > max(value for name, value in playing_on.hand_ev((10, 6), 7).actions.items())
    game = Round(FIRST_PERSON, Shoe(parse_cards(["TS", "7H", "6D", "5C"])))
    game.place_bets("p", [HandBet(10_000)])
    game.deal()
    game.cash_out()
    assert game.returned == int(factor * 10_000)


def test_the_report_shows_the_return_with_cash_out_beside_the_published_one() -> None:
    report = rtp_report(FIRST_PERSON)
    rows = {label: (computed, published) for label, computed, published in comparison_rows(report)}
    computed, published = rows["Optimal play with cash out"]
    assert published is None and computed == report["cash_out_optimal"]
    assert computed > rows["Main game, optimal play"][0] + 0.1
