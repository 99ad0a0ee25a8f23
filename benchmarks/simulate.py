"""Rounds per second of the compiled simulator, per game: one core without and with every side
bet, then every core.

Each round is a complete round of the real rules (a reshuffle before every round where the
game has one, insurance offers, splits, doubles, dealer play, settlement), one hand, basic
strategy. Run:

    .venv/bin/python benchmarks/simulate.py [--rounds N]

The first call of each configuration compiles or loads the kernel and is not timed.
"""

from __future__ import annotations

import argparse
import os
import time

from twentyone.sim.chunk import chunk_seed, play_chunk
from twentyone.sim.run import simulate
from twentyone.sim.strategy import load_strategy, strategy_tables
from twentyone.sim.tables import SimOptions, compile_game
from twentyone.variants import VARIANTS, builtin_rules


def one_core(variant: str, rounds: int, side_bets: bool, repeats: int = 3) -> float:
    """Rounds per second of one chunk in this process (no process pool, no aggregation).

    Timed in CPU seconds of this process (rounds per second per core, even on a busy
    machine), the best of ``repeats`` runs.
    """
    rules = builtin_rules(variant)
    game = compile_game(rules, SimOptions(side_bets=tuple(rules.side_bets) if side_bets else ()))
    tables = strategy_tables(load_strategy(rules, "basic"))
    play_chunk(game, tables, chunk_seed(0, 0, 1), 1000)
    best = 0.0
    for repeat in range(repeats):
        start = time.process_time()
        play_chunk(game, tables, chunk_seed(1 + repeat, 0, 1), rounds)
        best = max(best, rounds / (time.process_time() - start))
    return best


def all_cores(variant: str, rounds: int) -> float:
    """Rounds per second of a whole run on every core, wall clock (process start-up and chunking
    included; other work on the machine slows it)."""
    rules = builtin_rules(variant)
    simulate(rules, 50_000, seed=0, exact=False)
    result = simulate(rules, rounds, seed=1, exact=False)
    return result.rounds / result.seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=10_000_000)
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    print(f"{'game':<14}{'1 core':>14}{'1 core + side bets':>22}{f'{cores} cores':>14}   (rounds/s)")
    for variant in VARIANTS:
        plain = one_core(variant, args.rounds, side_bets=False)
        sides = one_core(variant, args.rounds, side_bets=True) if builtin_rules(variant).side_bets else float("nan")
        every = all_cores(variant, args.rounds * cores)
        sides_text = "—" if sides != sides else f"{sides:,.0f}"
        print(f"{variant:<14}{plain:>14,.0f}{sides_text:>22}{every:>14,.0f}")


if __name__ == "__main__":
    main()
