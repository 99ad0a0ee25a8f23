"""First Person Blackjack's cash-out offers, derived from the value of playing each hand on.

The offer for a hand of a given total (hard or soft) against a dealer up card is

    factor = (1 - margin) x (1 + fair value)

One margin serves the whole table; it is solved so that a player who always takes the first offer gets the sheet's
stated return (``cash_out.target_return``). The fair value of a total (``cash_out.fair_value``) is, by default
(``"lowest"``), the lowest value of playing on among every hand of that total the offer may be made to: two cards,
which may still double and split, or more, which may only hit and stand; so no offer is worth more than playing the
hand on from the shoe as dealt, and the game's best return is the main game's (cards seen at a player's other hands
can tilt one by a few thousandths: docs/maths.md). ``"optimal"`` (``"hit-stand"``) averages the total's
two-card hands, by how often each is dealt, under best play (hitting and standing only), and pays some hands more
than they are worth (docs/maths.md, "Cash out"). Values are at the moment of the offer: conditional on no dealer
blackjack where the dealer has peeked under an Ace; a ten up card carries the unpeeked blackjack risk.

>>> from twentyone.variants import builtin_rules
>>> table = cash_out_table(builtin_rules("first-person"))
>>> round(table.always_cash_out * 100, 2), 0.0 < table.margin < 0.05
(96.8, True)
>>> [round(factor, 2) for factor in table.span]  # the sheet: "Cash Out pays 0.4-1.77x"
[0.42, 1.77]
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from twentyone.analysis.game import STRATEGY_UPS, GameAnalysis
from twentyone.core.hand import value_of_points
from twentyone.core.rules import FairValue, Rules

HARD_TOTALS = tuple(range(4, 21))
# Which actions a two-card hand's value may use: every one ("optimal", "lowest") or only hitting and standing.
FAIR_VALUE_ACTIONS = {FairValue.LOWEST: None, FairValue.OPTIMAL: None, FairValue.HIT_STAND: ("stand", "hit")}
SOFT_TOTALS = tuple(range(12, 21))
NOT_PLAYING_ON = frozenset({"insurance", "cash-out"})  # an offer apart, and the offer itself
Key = tuple[bool, int, int]  # (soft, total, up value)


@dataclass(frozen=True)
class CashOutTable:
    """Offer factors by (soft, total, up value), the margin, and the return of always cashing out."""

    factors: dict[Key, float]
    fair: dict[Key, float]
    margin: float
    always_cash_out: float  # with the factors as rounded in the table
    target: float
    fair_value: FairValue = FairValue.LOWEST
    # By "lowest": the hand (card values) whose value of playing on sets each offer: among hard 20s against a 6,
    # twenty Aces (the shoe left without them favours the dealer a little more than after any other 20).
    lowest_hands: dict[Key, tuple[int, ...]] = field(default_factory=dict)

    @property
    def span(self) -> tuple[float, float]:
        return min(self.factors.values()), max(self.factors.values())

    def to_toml(self) -> str:
        """The table as the engine reads it (rows by total, columns up 2..10 then Ace)."""
        lines = [
            "# First Person Blackjack cash-out offers, written by `twentyone cash-out-table`.",
            f"# factor = (1 - margin) x (1 + {FAIR_VALUE_WORDS[self.fair_value]}); see docs/maths.md.",
            "# Rows: the hand's total; columns: dealer up card 2, 3, 4, 5, 6, 7, 8, 9, 10, A.",
            f'source = "exact fair values, margin {self.margin:.6f}, always cash out {self.always_cash_out:.6f}"',
            f"margin = {self.margin:.6f}",
        ]
        for kind, totals in (("hard", HARD_TOTALS), ("soft", SOFT_TOTALS)):
            lines.append(f"\n[{kind}]")
            for total in totals:
                row = [f"{self.factors[(kind == 'soft', total, up)]:.4f}" for up in STRATEGY_UPS]
                lines.append(f'"{total}" = [{", ".join(row)}]')
        return "\n".join(lines) + "\n"


FAIR_VALUE_WORDS = {
    FairValue.LOWEST: "the lowest value of playing on among every hand of the total",
    FairValue.OPTIMAL: "the fair value of the total's two-card hands under optimal play",
    FairValue.HIT_STAND: "the fair value of the total's two-card hands, hitting and standing only",
}


def cash_out_table(rules: Rules, analysis: GameAnalysis | None = None, decimals: int = 4) -> CashOutTable:
    """Derive the offer table of ``rules`` (which must state ``cash_out.target_return``)."""
    target = rules.cash_out.target_return
    if target is None:
        raise ValueError("cash_out.target_return is not set in the rules: the margin has no target.")
    analysis = analysis or GameAnalysis(rules)
    if analysis.cash_out:  # playing on is valued without the offers the table is to make
        raise ValueError("The offers are derived from play without cashing out: GameAnalysis(rules), "
                         "not cash_out=True.")
    payout = rules.blackjack_payout.numerator / rules.blackjack_payout.denominator
    mode = rules.cash_out.fair_value
    considered = FAIR_VALUE_ACTIONS[mode]
    fixed = 0.0  # return from deals that never see an offer (blackjacks, peeked dealer blackjacks)
    offered: dict[Key, float] = {}  # how often each first offer is made
    weighted: dict[Key, float] = {}  # and the two-card hands' value behind it, weighted alike
    lowest: dict[Key, tuple[float, tuple[int, ...]]] = {}  # each total's lowest value of playing on, and its hand
    for up, cards, p in analysis.deals():
        ev = analysis.hand_ev(cards, up)
        if sorted(cards) == [1, 10]:
            fixed += p * (1.0 + (1.0 - ev.dealer_blackjack) * payout)
            continue
        reach = p * (1.0 - ev.dealer_blackjack) if ev.peeked else p
        fair = max(value for action, value in ev.actions.items()
                   if action not in NOT_PLAYING_ON and (considered is None or action in considered))
        total, soft = value_of_points(cards)
        key = (soft, total, up)
        offered[key] = offered.get(key, 0.0) + reach
        weighted[key] = weighted.get(key, 0.0) + reach * (1.0 + fair)
        lowest[key] = min(lowest.get(key, (fair, cards)), (fair, cards))
    hands: dict[Key, tuple[int, ...]] = {}
    if mode is FairValue.LOWEST:
        for up in STRATEGY_UPS:
            for key, found in _lowest_after_hits(analysis, up).items():
                lowest[key] = min(lowest.get(key, found), found)
        fair_by_key = {key: lowest[key][0] for key in offered}
        hands = {key: lowest[key][1] for key in offered}
    else:
        fair_by_key = {key: weighted[key] / offered[key] - 1.0 for key in offered}
    exposure = sum(reach * (1.0 + fair_by_key[key]) for key, reach in offered.items())
    margin = 1.0 - (target - fixed) / exposure
    factors = {key: round((1.0 - margin) * (1.0 + fair), decimals) for key, fair in fair_by_key.items()}
    achieved = fixed + sum(offered[key] * factors[key] for key in factors)
    return CashOutTable(factors, fair_by_key, margin, achieved, target, mode, hands)


def _lowest_after_hits(analysis: GameAnalysis, up: int) -> dict[Key, tuple[float, tuple[int, ...]]]:
    """The lowest value of playing on (hit or stand, as the better of the two) among the hands of three or more cards
    of each total below 21 against ``up``: every hand the shoe can make, each from the shoe less its own cards, as
    :meth:`GameAnalysis.later_ev` values one, with the peek's condition where the dealer peeked.

    Such a hand may no longer double or split, so a hard 16 of three cards is worth less than ten-six, and less still
    than the hard 16s' average with 8,8 among them: an offer priced from two-card hands alone paid 2,2,7 against a 6
    1.6268x where hitting on is worth 1.3390 (a trial of an analyst).
    """
    variants = analysis.variants(up)
    space = variants[0].space
    value = np.zeros(space.size)
    for variant in variants:  # a ten up card may be peeked under or not, by its rank
        own = variant.space
        best = analysis.play_on_values(variant)
        per_hand = best / own.mass if variant.peeked else best
        value += variant.weight * per_hand[own.index_of(space.keys)]
    lowest: dict[Key, tuple[float, int]] = {}
    for state in np.flatnonzero((space.cards >= 3) & (space.total < 21)):
        key = (bool(space.soft[state]), int(space.total[state]), up)
        lowest[key] = min(lowest.get(key, (float(value[state]), int(state))), (float(value[state]), int(state)))
    return {key: (worth, tuple(rank for rank, count in enumerate(space.array[state], start=1) for _ in range(count)))
            for key, (worth, state) in lowest.items()}
