"""Chunk statistics added up into returns with standard errors, intervals and distributions.

Returns are percent of the amount wagered on the bet (the initial main bets for the main
game, as ``twentyone rtp`` quotes it), with the standard error of the mean over rounds
and a 95 % normal interval.

>>> estimate(rounds=100, net=-200.0, net_squared=40_000.0, wager_per_round=100.0).rtp
98.0
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from twentyone.core.rules import SIDE_BET_LINES
from twentyone.sim import kernel
from twentyone.sim.chunk import ChunkResult
from twentyone.sim.tables import KernelGame

Z95 = 1.959963984540054


@dataclass(frozen=True)
class Estimate:
    """A simulated return (percent) with its standard error and 95 % interval."""

    rtp: float
    se: float

    @property
    def ci95(self) -> tuple[float, float]:
        return self.rtp - Z95 * self.se, self.rtp + Z95 * self.se

    def as_dict(self) -> dict[str, Any]:
        return {"rtp": self.rtp, "se": self.se, "ci95": list(self.ci95)}


def estimate(rounds: float, net: float, net_squared: float, wager_per_round: float) -> Estimate:
    """Return (percent) and its standard error from the sums of a per-round net result.

    >>> e = estimate(rounds=4, net=0.0, net_squared=4.0, wager_per_round=1.0)
    >>> e.rtp, round(e.se, 4)
    (100.0, 57.735)
    """
    if rounds <= 0 or wager_per_round <= 0:
        return Estimate(math.nan, math.nan)
    mean = net / rounds
    variance = max(net_squared - rounds * mean * mean, 0.0) / max(rounds - 1, 1)
    return Estimate(100.0 * (1.0 + mean / wager_per_round), 100.0 * math.sqrt(variance / rounds) / wager_per_round)


def add_chunks(chunks: list[ChunkResult]) -> ChunkResult:
    """The sum of chunk results, in the order given (the same order gives the same floats)."""
    total = ChunkResult(*(np.zeros_like(part) for part in vars(chunks[0]).values()))
    for chunk in chunks:
        total.stats[:] += chunk.stats
        total.stats[kernel.S_BIGGEST] = max(total.stats[kernel.S_BIGGEST] - chunk.stats[kernel.S_BIGGEST],
                                            chunk.stats[kernel.S_BIGGEST])
        total.histogram += chunk.histogram
        total.side_sums += chunk.side_sums
        total.side_counts += chunk.side_counts
        total.depth_sums += chunk.depth_sums
    return total


@dataclass
class SimulationResult:
    """Everything a run measured, ready for the report, ``--json`` and the plot."""

    game: KernelGame
    strategy: str
    seed: int
    chunks: int
    workers: int
    seconds: float
    total: ChunkResult
    convergence: list[tuple[float, float, float]] = field(default_factory=list)  # (rounds, rtp, se)
    exact: dict[str, Any] = field(default_factory=dict)

    @property
    def rounds(self) -> int:
        return int(self.total.stats[kernel.S_ROUNDS])

    @property
    def wager_per_round(self) -> float:
        return float(self.total.stats[kernel.S_MAIN_WAGER]) / max(self.rounds, 1)

    @property
    def main(self) -> Estimate:
        s = self.total.stats
        return estimate(s[kernel.S_ROUNDS], s[kernel.S_MAIN_NET], s[kernel.S_MAIN_SQ], self.wager_per_round)

    @property
    def first_hand(self) -> Estimate:
        """The first round of each shoe only: the figure a sheet quotes for a game dealt to a cut card."""
        s = self.total.stats
        return estimate(s[kernel.S_FIRST_N], s[kernel.S_FIRST_NET], s[kernel.S_FIRST_SQ], self.wager_per_round)

    def side_bet(self, index: int) -> Estimate:
        rounds = self.rounds
        net, squared, staked = self.total.side_sums[index]
        return estimate(rounds, net, squared, staked / max(rounds, 1))

    def by_depth(self) -> list[dict[str, Any]]:
        """RTP by how much of the shoe was dealt before the round (tenths of the shoe)."""
        rows = []
        buckets = len(self.total.depth_sums)
        for i, (n, net, squared) in enumerate(self.total.depth_sums):
            if n:
                e = estimate(n, net, squared, self.wager_per_round)
                rows.append({"depth": [i / buckets, (i + 1) / buckets], "rounds": int(n), **e.as_dict()})
        return rows

    def line_frequencies(self, index: int) -> dict[str, float]:
        """How often each paytable line of a side bet hits, per bet placed."""
        counts = self.total.side_counts[index]
        placed = max(int(counts.sum()), 1)
        kind = self.game.rules.side_bets[self.game.side_names[index]].kind
        lines = {line: counts[j] / placed for j, line in enumerate(SIDE_BET_LINES[kind])}
        lines["lose"] = counts[kernel.LOSE_SLOT] / placed
        if kind == "bust_it":
            lines["push"] = counts[kernel.PUSH_SLOT] / placed
        return {line: float(p) for line, p in lines.items()}

    def outcomes(self) -> dict[str, float]:
        """Share of settled hands by outcome (the paytable of the main bet: blackjack 3:2, win, push...),
        and of insurance bets won and lost."""
        s = self.total.stats
        counts = s[kernel.S_OUTCOMES:kernel.S_OUTCOMES + len(kernel.OUTCOMES)]
        hands = max(float(counts.sum()), 1.0)
        shares = {name: float(count / hands) for name, count in zip(kernel.OUTCOMES, counts, strict=True)}
        insured = s[kernel.S_INSURANCE_WON] + s[kernel.S_INSURANCE_LOST]
        if insured:
            shares["insurance_won"] = float(s[kernel.S_INSURANCE_WON] / insured)
        return shares

    def net_distribution(self) -> dict[str, float]:
        """Share of rounds by net result of the main game, in main bets (bins of half a bet, floored)."""
        histogram = self.total.histogram
        rounds = max(int(histogram.sum()), 1)
        return {f"{(i - kernel.HIST_OFFSET) / 2:+g}": float(count / rounds)
                for i, count in enumerate(histogram) if count}

    def as_dict(self) -> dict[str, Any]:
        """The ``--json`` document (returns in percent, as ``twentyone rtp`` gives them)."""
        rules = self.game.rules
        result: dict[str, Any] = {
            "variant": rules.id,
            "strategy": self.strategy,
            "rounds": self.rounds,
            "hands": self.game.options.hands,
            "seed": self.seed,
            "chunks": self.chunks,
            "workers": self.workers,
            "seconds": self.seconds,
            "rounds_per_second": self.rounds / self.seconds if self.seconds > 0 else None,
            "main": self.main.as_dict(),
            "side_bets": {},
            "hands_played": int(self.total.stats[kernel.S_OUTCOMES:kernel.S_OUTCOMES + len(kernel.OUTCOMES)].sum()),
            "outcomes": self.outcomes(),
            "net_distribution": self.net_distribution(),
            "largest_win": float(self.total.stats[kernel.S_BIGGEST]) / self.game.options.bet,
            "exact": self.exact,
            "options": {"insurance": self.game.options.insurance, "even_money": self.game.options.even_money,
                        "cash_out": self.game.options.cash_out},
        }
        for i, name in enumerate(self.game.side_names):
            result["side_bets"][name] = {**self.side_bet(i).as_dict(), "lines": self.line_frequencies(i)}
        if int(self.game.params[kernel.P_CUT]) >= 0:
            result["shoes"] = int(self.total.stats[kernel.S_SHOES])
            result["first_hand"] = self.first_hand.as_dict()
            result["by_depth"] = self.by_depth()
        return result
