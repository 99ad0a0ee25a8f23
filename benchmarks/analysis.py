"""CPU seconds per game for the full exact RTP computation, on one core.

For each game: a fresh analysis (no cached state), then optimal and basic
strategy returns with every up card's contribution; then the same 8-deck games
with resplits to four hands (aces too) under each post-split strategy. The
first run of a session also compiles the numba kernels (numba caches them on
disk); it is timed apart. The command line's own start-up is timed last
(`twentyone rtp classic --json`, computing afresh and from the report cache).

    .venv/bin/python benchmarks/analysis.py [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import replace

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

from twentyone.analysis.game import GameAnalysis
from twentyone.core.rules import Rules
from twentyone.variants import VARIANTS, builtin_rules


def time_game(rules: Rules, split_strategy: str = "cdp") -> tuple[float, float, float]:
    # CPU seconds of this process: on a shared machine wall time also counts other people's work.
    start = time.process_time()
    analysis = GameAnalysis(rules, split_strategy=split_strategy)
    report = analysis.main_return()
    return time.process_time() - start, report.optimal, report.basic


def best_of(repeat: int, rules: Rules, split_strategy: str = "cdp") -> tuple[float, float, float]:
    runs = [time_game(rules, split_strategy) for _ in range(repeat)]
    return min(run[0] for run in runs), runs[0][1], runs[0][2]


def cli_seconds(*arguments: str) -> float:
    """CPU seconds (user and system) of one command-line run, start-up included."""
    before = os.times()
    subprocess.run([sys.executable, "-m", "twentyone.cli.main", *arguments], check=True, capture_output=True)
    after = os.times()
    return (after.children_user - before.children_user) + (after.children_system - before.children_system)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    start = time.perf_counter()
    time_game(builtin_rules("single-deck"))
    print(f"warm-up (kernel compile or cache load): {time.perf_counter() - start:.2f} s")
    header = f"{'game':<34}{'CPU s (best of ' + str(args.repeat) + ')':>22}{'optimal %':>12}{'basic %':>10}"
    print(header)
    for variant in VARIANTS:
        seconds, optimal, basic = best_of(args.repeat, builtin_rules(variant))
        print(f"{variant:<34}{seconds:>22.3f}{optimal * 100:>12.4f}{basic * 100:>10.4f}")
    for variant in ("first-person", "multiplayer"):
        rules = builtin_rules(variant)
        rules = replace(rules, split=replace(rules.split, max_hands=4, resplit_aces=True))
        for strategy in ("cdp", "cdp1", "cdz-"):
            seconds, optimal, basic = best_of(args.repeat, rules, strategy)
            label = f"{variant}, resplit to 4, {strategy}"
            print(f"{label:<34}{seconds:>22.3f}{optimal * 100:>12.4f}{basic * 100:>10.4f}")
    with tempfile.TemporaryDirectory() as folder:
        os.environ["TWENTYONE_CACHE"] = folder
        fresh = min(cli_seconds("rtp", "classic", "--json", "--no-cache") for _ in range(args.repeat))
        cli_seconds("rtp", "classic", "--json")
        cached = min(cli_seconds("rtp", "classic", "--json") for _ in range(args.repeat))
    print(f"twentyone rtp classic --json (CPU s): {fresh:.2f} computing afresh, {cached:.2f} from the report cache")


if __name__ == "__main__":
    main()
