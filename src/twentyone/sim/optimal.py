"""Optimal (composition-dependent) play as tables the kernel can walk, from the exact maths.

The exact analysis values every hand composition behind each up card (and whether the
dealer peeked): the best first action of each initial two-card hand (split included),
hit or stand for every larger hand, and for split hands the plan of
:class:`~twentyone.analysis.splits.PairSplit` (CDP: each split hand played for the shoe
less every pair card heading a hand of its spot when it is played; a pair card dealt to
a split hand is split again while the rules allow). Those choices are laid out over one
array of states with the state each drawn card leads to, so the kernel follows a hand's
composition card by card with one lookup.

>>> from twentyone.variants import builtin_rules
>>> from twentyone.sim import kernel
>>> tables = optimal_tables(builtin_rules("single-deck"))
>>> state = int(tables.main[10, 0, 10, 6])      # T-6 against a ten: hit
>>> int(tables.action[state]) == kernel.HIT
True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from twentyone.analysis.game import GameAnalysis, UpVariant, hand_of
from twentyone.analysis.splits import PairSplit
from twentyone.analysis.states import StateSpace
from twentyone.core.rules import Rules
from twentyone.sim import kernel

ACTION_CODES = {"stand": kernel.STAND, "hit": kernel.HIT, "double": kernel.DOUBLE, "triple": kernel.TRIPLE,
                "quadruple": kernel.QUADRUPLE, "surrender": kernel.SURRENDER, "split": kernel.SPLIT}
MAX_SPLIT_HANDS = 8


@dataclass(frozen=True)
class OptimalTables:
    """``child[g, v-1]``: the state after a card of value v (-1: bust); ``action[g]`` and ``alt[g]``
    (the best action when a split the table chose is not open: tens of different ranks);
    ``main[up, peeked, a, b]``: an initial hand's state; ``split[up, peeked, pair, others]``: the
    one-card state a split hand starts from when its spot holds ``others + 1`` hands (-1: none)."""

    child: npt.NDArray[np.int32]
    action: npt.NDArray[np.int8]
    alt: npt.NDArray[np.int8]
    main: npt.NDArray[np.int32]
    split: npt.NDArray[np.int32]


def empty_optimal() -> OptimalTables:
    """Placeholder tables for a strategy that does not use them."""
    return OptimalTables(np.full((1, 10), -1, dtype=np.int32), np.zeros(1, dtype=np.int8), np.zeros(1, dtype=np.int8),
                         np.full((11, 2, 11, 11), -1, dtype=np.int32),
                         np.full((11, 2, 11, MAX_SPLIT_HANDS), -1, dtype=np.int32))


def _best(values: dict[str, float]) -> int:
    return ACTION_CODES[max(values, key=lambda name: values[name])]


class _Builder:
    def __init__(self) -> None:
        self.children: list[npt.NDArray[np.int64]] = []
        self.actions: list[npt.NDArray[np.int8]] = []
        self.alts: list[npt.NDArray[np.int8]] = []
        self.offset = 0

    def block(self, space: StateSpace, hits: npt.NDArray[np.bool_]) -> tuple[int, npt.NDArray[np.int8],
                                                                              npt.NDArray[np.int8]]:
        """Add a space's states (hit or stand by ``hits``); returns its offset and its action arrays."""
        action = np.where(hits, kernel.HIT, kernel.STAND).astype(np.int8)
        alt = action.copy()
        self.children.append(np.where(space.child >= 0, space.child + self.offset, -1))
        self.actions.append(action)
        self.alts.append(alt)
        start = self.offset
        self.offset += space.size
        return start, action, alt


def _main_block(analysis: GameAnalysis, variant: UpVariant, builder: _Builder, main: npt.NDArray[np.int32]) -> None:
    rules = analysis.rules
    space = variant.space
    _, hit = analysis._continuation(variant, space, False, None)
    start, action, alt = builder.block(space, hit > space.stand(1.0, analysis.blackjack_loss(1.0, False)))
    peeked = int(variant.peeked)
    for a in range(1, 11):
        for b in range(1, 11):
            state = space.find(hand_of(a, b))
            if state is None:
                continue
            main[variant.up, peeked, a, b] = start + state
            if sorted((a, b)) == [1, 10]:
                continue
            values = analysis._two_card_values(variant, space, state, False, None)
            if rules.surrender == "early":
                values.pop("surrender", None)  # an offer before the peek, declined by the simulator
            alt[state] = _best(values)
            if a == b and analysis._can_split(a):
                values["split"] = analysis._split_value(variant, a, None, None)
            action[state] = _best(values)


def _split_blocks(analysis: GameAnalysis, variant: UpVariant, builder: _Builder,
                  split: npt.NDArray[np.int32]) -> None:
    rules = analysis.rules
    peeked = int(variant.peeked)
    for pair in range(1, 11):
        if not analysis._can_split(pair) or variant.space.find(hand_of(pair, pair)) is None:
            continue
        splitter = PairSplit(analysis, variant, pair)
        pairs_left = int(variant.space.base[pair - 1]) - 1
        for others in range(1, min(rules.split.max_hands, MAX_SPLIT_HANDS)):
            if others > pairs_left:
                break
            plan = splitter.plan(others, None)
            space = plan.space
            assert space is not None and plan.policy is not None
            start, action, alt = builder.block(space, plan.policy.astype(bool))
            one = space.state(hand_of(pair))
            split[variant.up, peeked, pair, others] = start + one
            for card, name in plan.first.items():
                child = int(space.child[one, card - 1])
                if child >= 0:
                    action[child] = alt[child] = ACTION_CODES[name]


def optimal_tables(rules: Rules, analysis: GameAnalysis | None = None) -> OptimalTables:
    """The optimal play of ``rules`` as the exact analysis (CDP split play) values it."""
    analysis = analysis or GameAnalysis(rules)
    builder = _Builder()
    main = np.full((11, 2, 11, 11), -1, dtype=np.int32)
    split = np.full((11, 2, 11, MAX_SPLIT_HANDS), -1, dtype=np.int32)
    for up in range(1, 11):
        if analysis.counts[up - 1] == 0:
            continue
        for variant in analysis.variants(up):
            _main_block(analysis, variant, builder, main)
            _split_blocks(analysis, variant, builder, split)
    return OptimalTables(np.concatenate(builder.children).astype(np.int32), np.concatenate(builder.actions),
                         np.concatenate(builder.alts), main, split)
