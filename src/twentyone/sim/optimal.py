"""Optimal (composition-dependent) play as tables the kernel can walk, from the exact maths.

The exact analysis values every hand composition behind each up card (and whether the
dealer peeked): the best first action of each initial two-card hand (split included),
the best action of each split hand's two cards, and hit or stand for every larger hand.
Those choices are laid out over one global array of states, with the state each drawn
card leads to, so the kernel follows a hand's composition card by card with one lookup.

>>> from twentyone.variants import builtin_rules
>>> tables = optimal_tables(builtin_rules("single-deck"))
>>> from twentyone.sim import kernel
>>> state = int(tables.main[10, 0, 10, 6])      # T-6 against a ten
>>> int(tables.action[state]) == kernel.HIT
True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from twentyone.analysis.game import GameAnalysis, hand_of
from twentyone.core.rules import Rules
from twentyone.sim import kernel

ACTION_CODES = {"stand": kernel.STAND, "hit": kernel.HIT, "double": kernel.DOUBLE, "triple": kernel.TRIPLE,
                "quadruple": kernel.QUADRUPLE, "surrender": kernel.SURRENDER, "split": kernel.SPLIT}


@dataclass(frozen=True)
class OptimalTables:
    """``child[g, v-1]``: the state after drawing a card of value v (-1: bust); ``action[g]``;
    ``main[up, peeked, a, b]``: an initial hand's state; ``split[up, peeked, p]``: the one-card
    state a split hand of pair p starts from (-1 where there is none)."""

    child: npt.NDArray[np.int32]
    action: npt.NDArray[np.int8]
    main: npt.NDArray[np.int32]
    split: npt.NDArray[np.int32]


def empty_optimal() -> OptimalTables:
    """Placeholder tables for a strategy that does not use them."""
    return OptimalTables(np.full((1, 10), -1, dtype=np.int32), np.zeros(1, dtype=np.int8),
                         np.full((11, 2, 11, 11), -1, dtype=np.int32), np.full((11, 2, 11), -1, dtype=np.int32))


def _best(values: dict[str, float]) -> int:
    return ACTION_CODES[max(values, key=lambda name: values[name])]


def optimal_tables(rules: Rules, analysis: GameAnalysis | None = None) -> OptimalTables:
    """The optimal play of ``rules`` as the exact analysis values it (resplits are not chosen)."""
    analysis = analysis or GameAnalysis(rules)
    children: list[npt.NDArray[np.int64]] = []
    actions: list[npt.NDArray[np.int8]] = []
    main = np.full((11, 2, 11, 11), -1, dtype=np.int32)
    split = np.full((11, 2, 11), -1, dtype=np.int32)
    offset = 0

    def add_block(space, split_hand: bool, variant) -> int:  # type: ignore[no-untyped-def]
        nonlocal offset
        _, hit = analysis._continuation(variant, space, split_hand, None)
        stand = space.stand(1.0, analysis._blackjack_loss(1.0, split_hand))
        action = np.where(hit > stand, kernel.HIT, kernel.STAND).astype(np.int8)
        children.append(np.where(space.child >= 0, space.child + offset, -1))
        actions.append(action)
        start = offset
        offset += space.size
        return start

    for up in range(1, 11):
        if analysis.counts[up - 1] == 0:
            continue
        for variant in analysis.variants(up):
            peeked = int(variant.peeked)
            space = variant.space
            start = add_block(space, False, variant)
            for a in range(1, 11):
                for b in range(1, 11):
                    state = space.find(hand_of(a, b))
                    if state is None:
                        continue
                    main[up, peeked, a, b] = start + state
                    if sorted((a, b)) == [1, 10]:
                        continue
                    values = analysis._two_card_values(variant, space, state, False, None)
                    if a == b and analysis._can_split(a) and space.find(hand_of(a, a)) is not None:
                        values["split"] = analysis._split_value(variant, a, None, None)
                    actions[-1][state] = _best(values)
            for pair in range(1, 11):
                if not analysis._can_split(pair) or space.find(hand_of(pair, pair)) is None:
                    continue
                split_space = analysis.split_space(variant, pair)
                split_start = add_block(split_space, True, variant)
                one = split_space.state(hand_of(pair))
                split[up, peeked, pair] = split_start + one
                for v in range(10):
                    two = int(split_space.child[one, v])
                    if two < 0 or int(split_space.total[two]) == 21:
                        continue
                    values = analysis._two_card_values(variant, split_space, two, True, None)
                    values.pop("surrender", None)
                    actions[-1][two] = _best(values)
    return OptimalTables(np.concatenate(children).astype(np.int32), np.concatenate(actions), main, split)
