"""Hypothesis strategies shared by the property tests: random tables, shoes and legal play."""

from __future__ import annotations

import random
from dataclasses import dataclass

from hypothesis import strategies as st

from twentyone.core.round import HandBet, Round
from twentyone.core.rules import Rules
from twentyone.core.shoe import Shoe
from twentyone.variants import VARIANTS, builtin_rules


@dataclass
class Table:
    rules: Rules
    order: tuple
    bets: list[tuple[str, list[HandBet]]]


@st.composite
def tables(draw: st.DrawFn, variants: tuple[str, ...] = VARIANTS) -> Table:
    rules = builtin_rules(draw(st.sampled_from(variants)))
    seed = draw(st.integers(0, 2**32 - 1))
    order = tuple(Shoe.shuffled(rules.shoe.composition, random.Random(seed)).order)
    max_players = 1 if rules.deal.seats == 1 else 4
    players = draw(st.integers(1, max_players))
    bets = []
    for index in range(players):
        hands = draw(st.integers(1, rules.deal.hands_per_player))
        hand_bets = []
        for _ in range(hands):
            bet = draw(st.integers(1, 5000))
            sides = {name: draw(st.integers(0, 500)) for name in rules.side_bets if draw(st.booleans())}
            hand_bets.append(HandBet(bet, sides))
        bets.append((f"p{index + 1}", hand_bets))
    return Table(rules, order, bets)


def seat(table: Table) -> Round:
    game = Round(table.rules, Shoe(table.order, table.rules.shoe.composition))
    for name, hand_bets in table.bets:
        game.place_bets(name, hand_bets)
    return game
