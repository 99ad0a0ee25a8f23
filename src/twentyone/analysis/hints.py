"""Hints: the expected value of every legal action in a situation, best first.

>>> from twentyone.core.cards import parse_card, parse_cards
>>> from twentyone.variants import builtin_rules
>>> ranked = hint(builtin_rules("power"), parse_cards(["8S", "3D"]), parse_card("KH"))
>>> ranked[0][0], [action for action, _ in ranked][:3]
('hit', ['hit', 'double', 'triple'])
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from collections.abc import Iterable, Sequence

import numpy as np

from twentyone.analysis.game import GameAnalysis, HandEV
from twentyone.core.cards import Card
from twentyone.core.hand import hand_value
from twentyone.core.rules import Rules

_ANALYSES: dict[int, tuple[Rules, GameAnalysis]] = {}
_LIVE: OrderedDict[tuple[int, tuple[int, ...]], tuple[Rules, GameAnalysis]] = OrderedDict()
_LIVE_KEPT = 32  # live-shoe analyses kept (one per table and shoe state in use)


def analysis_for(rules: Rules, counts: Sequence[int] | None = None) -> GameAnalysis:
    """One analysis per rules object (and shoe composition by value, for a live shoe), kept for reuse."""
    if counts is not None:
        key = (id(rules), tuple(int(c) for c in counts))
        if key not in _LIVE:
            _LIVE[key] = (rules, GameAnalysis(rules, counts=np.array(key[1], dtype=np.int64)))
            while len(_LIVE) > _LIVE_KEPT:
                _LIVE.popitem(last=False)
        _LIVE.move_to_end(key)
        return _LIVE[key][1]
    if id(rules) not in _ANALYSES:
        _ANALYSES[id(rules)] = (rules, GameAnalysis(rules))
    return _ANALYSES[id(rules)][1]


def live_counts(unseen: Iterable[Card], shown: Iterable[Card]) -> list[int]:
    """The shoe by value as the analysis takes it: the unseen cards plus the player's and the up card.

    >>> from twentyone.core.cards import parse_cards
    >>> live_counts(parse_cards(["KS", "5D", "5C"]), parse_cards(["8S", "3D", "KH"]))
    [0, 0, 1, 0, 2, 0, 0, 1, 0, 2]
    """
    counts = [0] * 10
    for card in (*unseen, *shown):
        counts[card.value - 1] += 1
    return counts


def hint(rules: Rules, cards: Sequence[Card], up: Card, legal: Iterable[str] | None = None,
         first_decision: bool | None = None, analysis: GameAnalysis | None = None,
         unseen: Iterable[Card] | None = None) -> list[tuple[str, float]]:
    """``(action, EV per unit bet)`` for each action, best first.

    By default the shoe is a fresh one less the cards shown; ``unseen`` gives
    the cards a live shoe still holds as the player sees it (the hole card and
    every undealt card; not the player's cards nor the up card), for a shoe that
    is not reshuffled every round. ``legal`` limits the list to the actions the
    game offers now (as the engine names them); ``first_decision`` says whether
    the hand is still on its first two cards and not from a split (by default:
    two cards).

    >>> from twentyone.core.cards import parse_card, parse_cards
    >>> from twentyone.variants import builtin_rules
    >>> rules = builtin_rules("classic")
    >>> hand, up = parse_cards(["TS", "3D"]), parse_card("4H")
    >>> low = parse_cards(["2S"] * 30 + ["3S"] * 30 + ["TS"] * 5)   # a live shoe left rich in low cards
    >>> hint(rules, hand, up)[0][0], hint(rules, hand, up, unseen=low)[0][0]
    ('stand', 'hit')

    At an offer's decision both answers are ranked: insurance, valued as its own bet, against declining it (0).

    >>> [(action, round(ev, 3)) for action, ev in hint(rules, hand, parse_card("AH"), ["insurance", "no-insurance"])]
    [('no-insurance', 0.0), ('insurance', -0.039)]
    """
    if analysis is None:
        unseen = None if unseen is None else list(unseen)
        counts = None if unseen is None else live_counts(unseen, [*cards, up])
        analysis = analysis_for(rules, counts)
        if unseen is not None:
            _check_finishes(analysis, up, len(unseen))
    values = tuple(card.value for card in cards)
    first = len(values) == 2 if first_decision is None else first_decision
    if first:
        ev = analysis.hand_ev((values[0], values[1]), up.value)
    elif len(values) == 2:  # a split hand on its first decision: its doubles too
        ev = analysis.split_hand_ev((values[0], values[1]), up.value)
    else:
        ev = analysis.later_ev(values, up.value)
    actions = dict(ev.actions)
    value = hand_value(cards)
    factor = rules.cash_out.exact_factor(value.soft, value.total, up.value) if rules.cash_out.enabled else None
    if factor is not None and value.total < 21:
        actions["cash-out"] = float(factor - 1)
    if rules.auto_stand.stands(value.total, value.soft):  # the engine stands it: hitting a 21 is no choice
        actions = {name: ev for name, ev in actions.items() if name == "stand" or name in OFFERS}
    if legal is not None:
        allowed = set(legal)
        actions.update({name: value for name, value in _declines(actions, ev).items() if name in allowed})
        actions = {name: ev for name, ev in actions.items() if name in allowed}
    return sorted(actions.items(), key=lambda item: -item[1])


def insurance_ev(rules: Rules, seen: Iterable[Card], unseen: Iterable[Card] | None = None) -> float:
    """Insurance's EV per unit of the main bet (it costs half of it), from every card the player has seen: their
    hands and the dealer's Ace. It pays on the one hole card, so it is worth the same at each of their hands; valued
    from one hand's cards alone (as :func:`hint` values a hand), 9,9 beside 10,9 read as worth more (a review).
    ``unseen`` as in :func:`hint`, for a live shoe; else the shoe is a fresh one less ``seen``.

    >>> from twentyone.core.cards import parse_cards
    >>> from twentyone.variants import builtin_rules
    >>> rules = builtin_rules("classic")
    >>> one = [(action, round(ev, 4)) for action, ev in hint(rules, parse_cards(["TS", "3D"]), parse_cards(["AH"])[0],
    ...                                                       ["insurance"])]
    >>> one, round(insurance_ev(rules, parse_cards(["TS", "3D", "AH"])), 4)
    ([('insurance', -0.0388)], -0.0388)
    >>> round(insurance_ev(rules, parse_cards(["TS", "3D", "9S", "9D", "AH"])), 4)  # a second hand's 9s seen
    -0.0358
    """
    left = Counter(unseen) if unseen is not None else rules.shoe.composition.counts() - Counter(seen)
    total = sum(left.values())
    if total == 0:
        raise ValueError("The shoe left holds no card.")
    blackjack = sum(count for card, count in left.items() if card.value == 10) / total
    pays = rules.insurance.payout.numerator / rules.insurance.payout.denominator
    return 0.5 * (pays * blackjack - (1.0 - blackjack))


def _check_finishes(analysis: GameAnalysis, up: Card, left: int) -> None:
    """A ValueError where the live shoe is so short that some line of play runs it out before the dealer's hand is
    finished: the values would count those lines as nothing, and read as a push (an analyst's trial: a single deck
    with one card left hinted "stand +0.0000, hit +0.0000"). A shoe is reshuffled long before, at its cut card.

    >>> from twentyone.core.cards import parse_card, parse_cards
    >>> from twentyone.variants import builtin_rules
    >>> hint(builtin_rules("single-deck"), parse_cards(["2S", "3D"]), parse_card("4H"), unseen=parse_cards(["9S"]))
    Traceback (most recent call last):
    ...
    ValueError: The shoe left holds 1 card: some line of play runs it out before the dealer's hand is finished.
    """
    for variant in analysis.variants(up.value):
        if (variant.space.outcomes.sum(axis=1) < 1.0 - 1e-9).any():
            raise ValueError(f"The shoe left holds {left} card{'s' if left != 1 else ''}: some line of play runs "
                             "it out before the dealer's hand is finished.")


def hint_decisions(rules: Rules, cards: Sequence[Card], up: Card,
                   unseen: Iterable[Card] | None = None) -> dict[str, list[tuple[str, float]]]:
    """The play's actions ranked (``"play"``), and each offer made before it (insurance, even money) ranked apart
    with its decline, as the engine asks them: separate decisions. Ranked in one list, insurance (valued as its own
    bet) stood above every play of a poor hand and read as the best action (a trial of an analyst: 8,8 against an
    Ace, insurance -0.034 "best" above split -0.385).

    >>> from twentyone.core.cards import parse_card, parse_cards
    >>> from twentyone.variants import builtin_rules
    >>> ranked = hint_decisions(builtin_rules("classic"), parse_cards(["8S", "8D"]), parse_card("AH"))
    >>> ranked["play"][0][0], [(action, round(ev, 3)) for action, ev in ranked["insurance"]]
    ('split', [('no-insurance', 0.0), ('insurance', -0.034)])
    """
    every = hint(rules, cards, up, unseen=unseen)
    # An early surrender is offered before the peek too (the plays' values are the no-blackjack case).
    offers = ("surrender", *OFFERS) if rules.surrender == "early" and len(cards) == 2 else OFFERS  # asked first
    decisions = {"play": [(action, ev) for action, ev in every if action not in offers]}
    for offer in (offer for offer in offers if offer in dict(every)):  # in the order the engine asks them
        decisions[offer] = hint(rules, cards, up, [offer, f"no-{offer}"], unseen=unseen)
    return decisions


# Offers answered before the hand is played, each a decision of its own (the engine's action names).
OFFERS = ("insurance", "even-money")

# The actions that play a hand on: what declining an offer leads to.
_PLAYS = frozenset({"hit", "stand", "double", "triple", "quadruple", "split"})


def _declines(actions: dict[str, float], ev: HandEV) -> dict[str, float]:
    """The EV of declining each offer ``actions`` values, on the offer's own footing, for an offer's decision (whose
    legal actions are its two answers: before, the hint listed the offer alone). Insurance is valued as its own
    bet (what it adds to the hand), so declining it is 0; even money against playing the blackjack on, both before
    the peek; an early surrender, before the peek too, against the best play then, and insurance if it pays.

    Where the dealer peeks, the plays' values are the dealer's no-blackjack case (``ev``): declining surrender is
    worth that with chance 1 - P(blackjack), and the lost bet otherwise (found by review: the plays' own values made
    declining look better than surrender where it was worse).

    >>> from twentyone.analysis.game import HandEV
    >>> _declines({"stand": 1.04, "even-money": 1.0, "insurance": -0.04}, HandEV({}, 0.31, True))
    {'no-insurance': 0.0, 'no-even-money': 1.04}
    >>> declined = _declines({"hit": -0.4, "stand": -0.5, "surrender": -0.5}, HandEV({}, 0.3, True))
    >>> round(declined["no-surrender"], 9)  # 0.7 * -0.4 - 0.3: worse than surrender's -0.5
    -0.58
    """
    declines: dict[str, float] = {}
    if "insurance" in actions:
        declines["no-insurance"] = 0.0
    if "even-money" in actions and "stand" in actions:
        declines["no-even-money"] = actions["stand"]
    plays = [value for name, value in actions.items() if name in _PLAYS]
    if "surrender" in actions and plays:
        best = max(plays)
        if ev.peeked:
            best = (1.0 - ev.dealer_blackjack) * best - ev.dealer_blackjack
        declines["no-surrender"] = best + max(0.0, actions.get("insurance", 0.0))
    return declines
