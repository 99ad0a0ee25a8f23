"""Hints: the expected value of every legal action in a situation, best first.

>>> from twentyone.core.cards import parse_card, parse_cards
>>> from twentyone.variants import builtin_rules
>>> ranked = hint(builtin_rules("power"), parse_cards(["8S", "3D"]), parse_card("KH"))
>>> ranked[0][0], [action for action, _ in ranked][:3]
('hit', ['hit', 'double', 'triple'])
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from fractions import Fraction

from twentyone.analysis.game import GameAnalysis
from twentyone.core.cards import Card
from twentyone.core.hand import hand_value
from twentyone.core.rules import Rules

_ANALYSES: dict[int, tuple[Rules, GameAnalysis]] = {}


def analysis_for(rules: Rules) -> GameAnalysis:
    """One fresh-shoe analysis per rules object, kept for the life of the process."""
    if id(rules) not in _ANALYSES:
        _ANALYSES[id(rules)] = (rules, GameAnalysis(rules))
    return _ANALYSES[id(rules)][1]


def hint(rules: Rules, cards: Sequence[Card], up: Card, legal: Iterable[str] | None = None,
         first_decision: bool | None = None, analysis: GameAnalysis | None = None) -> list[tuple[str, float]]:
    """``(action, EV per unit bet)`` for each action, best first, from a fresh shoe less the cards shown.

    ``legal`` limits the list to the actions the game offers now (as the engine
    names them); ``first_decision`` says whether the hand is still on its first
    two cards and not from a split (by default: two cards).
    """
    analysis = analysis or analysis_for(rules)
    values = tuple(card.value for card in cards)
    first = len(values) == 2 if first_decision is None else first_decision
    if first:
        ev = analysis.hand_ev((values[0], values[1]), up.value)
        actions = dict(ev.actions)
    else:
        ev = analysis.later_ev(values, up.value)
        actions = dict(ev.actions)
    value = hand_value(cards)
    factor = rules.cash_out.factor(value.soft, value.total, up.value) if rules.cash_out.enabled else None
    if factor is not None and value.total < 21:
        actions["cash-out"] = float(Fraction(str(factor))) - 1.0
    if legal is not None:
        allowed = set(legal)
        actions = {name: ev for name, ev in actions.items() if name in allowed}
    return sorted(actions.items(), key=lambda item: -item[1])
