"""Exact returns of every side bet, line by line, as fractions where the bet allows.

Deal-time bets (Perfect Pairs, Any Pair, 21+3, Hot 3) depend only on the
player's two cards and the dealer's up card, so their returns are enumerated
over every ordered triple of card types weighted by the ways a fresh shoe deals
it: exact rational numbers. Bust It depends on the dealer's whole hand: its
line probabilities come from the dealer's bust-by-card-count distribution with
the player's two cards and the up card removed, and it pushes on a player
blackjack.

>>> from twentyone.variants import builtin_rules
>>> report = side_bet_return(builtin_rules("power"), "any_pair")
>>> report.rtp, round(report.percent, 4)
(Fraction(113, 117), 96.5812)
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from twentyone.analysis.composition import initial_deals, remove, value_counts
from twentyone.analysis.dealer import BUST_CARDS, OUTCOMES, dealer_outcomes
from twentyone.core.cards import Card
from twentyone.core.rules import SIDE_BET_LINES, Rules
from twentyone.core.sidebets import DEAL_TIME_EVALUATORS


@dataclass(frozen=True)
class SideBetReport:
    """A side bet's return, and each paytable line's probability and contribution."""

    name: str
    kind: str
    rtp: Fraction | float
    lines: dict[str, tuple[float, int, float]]  # line -> (probability, pays x:1, contribution to return)

    @property
    def percent(self) -> float:
        return float(self.rtp) * 100


def _deal_time(rules: Rules, name: str) -> SideBetReport:
    side = rules.side_bets[name]
    evaluate = DEAL_TIME_EVALUATORS[side.kind]
    counts: Counter[Card] = rules.shoe.composition.counts()
    cards = list(counts)
    n = rules.shoe.composition.size
    ways: Counter[str] = Counter()
    for first in cards:
        n1 = counts[first]
        counts[first] -= 1
        for second in cards:
            n2 = counts[second]
            if not n2:
                continue
            counts[second] -= 1
            for up in cards:
                n3 = counts[up]
                if n3:
                    line = evaluate(first, second, up)
                    ways[line if line is not None and line in side.paytable else "lose"] += n1 * n2 * n3
            counts[second] += 1
        counts[first] += 1
    total = n * (n - 1) * (n - 2)
    lines: dict[str, tuple[float, int, float]] = {}
    rtp = Fraction(0)
    for line in (*SIDE_BET_LINES[side.kind], "lose"):
        p = Fraction(ways[line], total)
        pays = side.paytable.get(line, -1) if line != "lose" else -1
        contribution = p * (1 + pays)
        rtp += contribution
        lines[line] = (float(p), pays, float(contribution))
    return SideBetReport(name, side.kind, rtp, lines)


def _bust_it(rules: Rules, name: str) -> SideBetReport:
    side = rules.side_bets[name]
    counts = value_counts(rules)
    rows = []
    weights = []
    push = 0.0
    for up, (a, b), p in initial_deals(counts):
        if {a, b} == {1, 10}:
            push += p  # a player blackjack pushes the bet
            continue
        rows.append((up, remove(counts, [up, a, b])))
        weights.append(p)
    lines = {line: 0.0 for line in SIDE_BET_LINES["bust_it"]}
    by_up: dict[int, list[int]] = {}
    for i, (up, _) in enumerate(rows):
        by_up.setdefault(up, []).append(i)
    for up, indices in by_up.items():
        table = dealer_outcomes(np.array([rows[i][1] for i in indices]), up, rules.dealer.hits_soft_17,
                                with_bust_cards=True)
        bust_columns = table[:, len(OUTCOMES):]
        for row, i in enumerate(indices):
            for column, cards in enumerate(BUST_CARDS):
                line = "bust_8_plus" if cards == 8 else f"bust_{cards}"
                lines[line] += weights[i] * bust_columns[row, column]
    report: dict[str, tuple[float, int, float]] = {}
    rtp = push
    for line, p in lines.items():
        pays = side.paytable.get(line, -1)
        report[line] = (float(p), pays, float(p * (1 + pays)))
        rtp += p * (1 + pays)
    lose = 1.0 - push - sum(lines.values())
    report["push"] = (push, 0, push)
    report["lose"] = (lose, -1, 0.0)
    lines_report = {line: (float(p), pays, float(c)) for line, (p, pays, c) in report.items()}
    return SideBetReport(name, side.kind, float(rtp), lines_report)


def side_bet_return(rules: Rules, name: str) -> SideBetReport:
    """The exact return of a side bet from a fresh shoe, line by line.

    Parameters
    ----------
    rules : Rules
        The game; its paytables and shoe are used.
    name : str
        The side bet's name in the rules (``perfect_pairs``, ``21+3``, ``bust_it``...).

    Returns
    -------
    SideBetReport
        ``rtp`` (a Fraction for deal-time bets, a float for Bust It) and each line's
        probability, payout and contribution.

    Examples
    --------
    >>> from twentyone.variants import builtin_rules
    >>> round(side_bet_return(builtin_rules("power"), "bust_it").percent, 2)
    94.71
    """
    if name not in rules.side_bets:  # a KeyError of the name alone before (a researcher's trial)
        raise ValueError(f"no side bet {name!r} in {rules.id} (offered: {', '.join(rules.side_bets) or 'none'}).")
    if rules.side_bets[name].kind == "bust_it":
        return _bust_it(rules, name)
    return _deal_time(rules, name)
