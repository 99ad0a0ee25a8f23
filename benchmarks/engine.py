"""Rounds per second of the pure-Python engine, one core, per game.

A player stands on 17 or more, hits below, and declines every offer; each round
uses a freshly shuffled shoe from a seeded generator. Run:

    .venv/bin/python benchmarks/engine.py [--rounds N]

This measures the reference engine (used by the server and replay), not the
compiled simulator, which is where billions of rounds belong.
"""

from __future__ import annotations

import argparse
import random
import time

from twentyone.core.operations import Action
from twentyone.core.round import HandBet, Round
from twentyone.core.shoe import Shoe
from twentyone.variants import VARIANTS, builtin_rules

DECLINE = (Action.NO_INSURANCE, Action.NO_EVEN_MONEY, Action.NO_SURRENDER)


def play_rounds(variant: str, rounds: int, seed: int = 1) -> float:
    rules = builtin_rules(variant)
    rng = random.Random(seed)
    composition = rules.shoe.composition
    start = time.perf_counter()
    for _ in range(rounds):
        game = Round(rules, Shoe.shuffled(composition, rng))
        game.place_bets("p", [HandBet(100)])
        game.deal()
        while (decision := game.decision()) is not None:
            legal = game.legal_actions()
            declined = [action for action in legal if action in DECLINE]
            if declined:
                game.act(declined[0])
                continue
            hand = game.hands[[(h.seat, h.hand) for h in game.hands].index((decision.seat, decision.hand))]
            game.act(Action.STAND if hand.value.total >= 17 else Action.HIT)
    return rounds / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5000)
    args = parser.parse_args()
    print(f"{'game':<14}{'rounds/s per core':>20}")
    for variant in VARIANTS:
        print(f"{variant:<14}{play_rounds(variant, args.rounds):>20,.0f}")


if __name__ == "__main__":
    main()
