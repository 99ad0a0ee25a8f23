"""Seconds per game for the full exact RTP computation, on one core.

For each game: a fresh analysis (no cached state), then optimal and basic
strategy returns with every up card's contribution. The first run of a session
also compiles the dealer kernel (numba caches it on disk); it is timed apart.

    .venv/bin/python benchmarks/analysis.py [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

from twentyone.analysis.game import GameAnalysis
from twentyone.variants import VARIANTS, builtin_rules


def time_game(variant: str) -> tuple[float, float, float]:
    rules = builtin_rules(variant)
    start = time.perf_counter()
    analysis = GameAnalysis(rules)
    report = analysis.main_return()
    return time.perf_counter() - start, report.optimal, report.basic


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    start = time.perf_counter()
    time_game("single-deck")
    print(f"warm-up (kernel compile or cache load): {time.perf_counter() - start:.2f} s")
    print(f"{'game':<14}{'seconds (best of ' + str(args.repeat) + ')':>22}{'optimal %':>12}{'basic %':>10}")
    for variant in VARIANTS:
        runs = [time_game(variant) for _ in range(args.repeat)]
        best = min(run[0] for run in runs)
        print(f"{variant:<14}{best:>22.3f}{runs[0][1] * 100:>12.4f}{runs[0][2] * 100:>10.4f}")


if __name__ == "__main__":
    main()
