"""First Person Blackjack's cash-out offers, derived from the fair value of each hand.

The offer for a hand of a given total (hard or soft) against a dealer up card is

    factor = (1 - margin) x (1 + fair value)

where the fair value is the expected value of the hand under optimal play at the
moment of the offer (``cash_out.fair_value = "hit-stand"`` values it with hitting
and standing only, as if doubling and splitting were not open) (conditional on no dealer blackjack when the dealer has
peeked under an Ace; a ten up card carries the unpeeked blackjack risk), averaged
over the two-card hands of that total by how often each is dealt. One margin
serves the whole table; it is solved so that a player who always takes the
first offer gets the sheet's stated return (``cash_out.target_return``).

>>> from twentyone.variants import builtin_rules
>>> table = cash_out_table(builtin_rules("first-person"))
>>> round(table.always_cash_out * 100, 2), 0.0 < table.margin < 0.05
(96.8, True)
"""

from __future__ import annotations

from dataclasses import dataclass

from twentyone.analysis.game import STRATEGY_UPS, GameAnalysis
from twentyone.core.hand import value_of_points
from twentyone.core.rules import Rules

HARD_TOTALS = tuple(range(4, 21))
# Which actions the fair value may use: every one ("optimal") or only hitting and standing.
FAIR_VALUE_ACTIONS = {"optimal": None, "hit-stand": ("stand", "hit")}
SOFT_TOTALS = tuple(range(12, 21))


@dataclass(frozen=True)
class CashOutTable:
    """Offer factors by (soft, total, up value), the margin, and the return of always cashing out."""

    factors: dict[tuple[bool, int, int], float]
    fair: dict[tuple[bool, int, int], float]
    margin: float
    always_cash_out: float  # with the factors as rounded in the table
    target: float

    @property
    def span(self) -> tuple[float, float]:
        return min(self.factors.values()), max(self.factors.values())

    def to_toml(self) -> str:
        """The table as the engine reads it (rows by total, columns up 2..10 then Ace)."""
        lines = [
            "# First Person Blackjack cash-out offers, written by `twentyone cash-out-table`.",
            "# factor = (1 - margin) x (1 + fair value of the hand under optimal play); see docs/maths.md.",
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


def cash_out_table(rules: Rules, analysis: GameAnalysis | None = None, decimals: int = 4) -> CashOutTable:
    """Derive the offer table of ``rules`` (which must state ``cash_out.target_return``)."""
    target = rules.cash_out.target_return
    if target is None:
        raise ValueError("cash_out.target_return is not set in the rules: the margin has no target.")
    analysis = analysis or GameAnalysis(rules)
    payout = rules.blackjack_payout.numerator / rules.blackjack_payout.denominator
    fixed = 0.0  # return from deals that never see an offer (blackjacks, peeked dealer blackjacks)
    offered: dict[tuple[bool, int, int], float] = {}
    weighted: dict[tuple[bool, int, int], float] = {}
    for up, cards, p in analysis.deals():
        ev = analysis.hand_ev(cards, up)
        natural = sorted(cards) == [1, 10]
        if natural:
            fixed += p * (1.0 + (1.0 - ev.dealer_blackjack) * payout)
            continue
        reach = p * (1.0 - ev.dealer_blackjack) if ev.peeked else p
        considered = FAIR_VALUE_ACTIONS.get(rules.cash_out.fair_value)
        fair = max(value for action, value in ev.actions.items()
                   if action != "insurance" and (considered is None or action in considered))
        total, soft = value_of_points(cards)
        key = (soft, total, up)
        offered[key] = offered.get(key, 0.0) + reach
        weighted[key] = weighted.get(key, 0.0) + reach * (1.0 + fair)
    fair_by_key = {key: weighted[key] / offered[key] - 1.0 for key in offered}
    exposure = sum(weighted.values())
    margin = 1.0 - (target - fixed) / exposure
    factors = {key: round((1.0 - margin) * (1.0 + fair), decimals) for key, fair in fair_by_key.items()}
    achieved = fixed + sum(offered[key] * factors[key] for key in factors)
    return CashOutTable(factors, fair_by_key, margin, achieved, target)
