"""The simulated player's strategy: tables from the exact maths, for the kernel and for the engine.

A strategy is a :class:`~twentyone.analysis.game.BasicStrategy` (total-dependent: hit or
stand by total, a chart code for two-card hands, pairs to split, each by dealer up card),
derived by :mod:`twentyone.analysis` or read from a chart file written by
``twentyone strategy --json``. :func:`strategy_tables` turns it into arrays for the kernel;
:func:`engine_action` plays the same strategy on a :class:`~twentyone.core.round.Round`,
reading the engine's own legal actions, for the differential test and the Gymnasium
environment.

>>> from twentyone.variants import builtin_rules
>>> strategy = load_strategy(builtin_rules("classic"), "basic")
>>> tables = strategy_tables(strategy)
>>> int(tables.hit[10, 16]), int(tables.hit[10, 17])  # hard 16 against a ten: hit; 17: stand
(1, 0)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from twentyone.analysis.composition import value_counts
from twentyone.analysis.game import ACTION_OF_CODE, BasicStrategy, GameAnalysis, code_action, policy_array
from twentyone.core.cards import Card
from twentyone.core.hand import hand_value
from twentyone.core.operations import Action
from twentyone.core.round import Round
from twentyone.core.rules import Rules
from twentyone.sim import kernel
from twentyone.sim.optimal import OptimalTables, empty_optimal, optimal_tables
from twentyone.sim.tables import SimOptions, SimulationError

Int8Array = npt.NDArray[np.int8]
PRIMARY_OF_CODE = {"S": kernel.STAND, "H": kernel.HIT, "D": kernel.DOUBLE, "T": kernel.TRIPLE,
                   "Q": kernel.QUADRUPLE, "R": kernel.SURRENDER}
UP_OF_LABEL = {"A": 1, **{str(v): v for v in range(2, 11)}}


@dataclass(frozen=True)
class StrategyTables:
    """``hit[up, total + 22*soft]``, ``two_card[up, from_split, total + 22*soft]``, ``pairs[up, value]``,
    and for optimal play the composition tables of :mod:`twentyone.sim.optimal` (the chart is then
    only a fallback the tables never need)."""

    hit: Int8Array
    two_card: Int8Array
    pairs: Int8Array
    optimal: OptimalTables = field(default_factory=empty_optimal)
    uses_optimal: bool = False


def _encode(code: str) -> int:
    """A chart code as the kernel reads it: the play, plus 8 when it falls back to standing."""
    return PRIMARY_OF_CODE[code[0]] + (8 if code.endswith("s") or code == "S" else 0)


def strategy_tables(strategy: BasicStrategy, optimal: OptimalTables | None = None) -> StrategyTables:
    """Arrays of ``strategy`` with exactly the defaults the exact analysis uses for missing entries;
    with ``optimal``, the kernel plays the composition-dependent tables instead."""
    hit = np.zeros((11, 44), dtype=np.int8)
    two_card = np.zeros((11, 2, 44), dtype=np.int8)
    pairs = np.zeros((11, 11), dtype=np.int8)
    for up, policy in strategy.hit_by_up.items():
        hit[up] = policy_array(policy)
    for up, table in strategy.two_card_by_up.items():
        for key in range(44):
            total, soft = key % 22, bool(key // 22)
            # A total missing from the chart stands, as BasicStrategy.action_for and the split plans read it.
            two_card[up, 0, key] = two_card[up, 1, key] = _encode(table.get((total, soft), "S"))
    for up, splits in strategy.pairs_by_up.items():
        for value, split in splits.items():
            pairs[up, value] = split
    if optimal is None:
        return StrategyTables(hit, two_card, pairs)
    return StrategyTables(hit, two_card, pairs, optimal, True)


def strategy_from_chart(chart: dict[str, Any]) -> BasicStrategy:
    """A strategy from a chart as ``twentyone strategy --json`` writes it (hard, soft and pairs rows).

    After the first decision a hand hits where its code hits (H, D, T, Q, R) and stands
    where it stands (S, Ds, Ts, Qs, Rs); totals the chart leaves out stand from 17 (hard) or
    18 (soft) up and hit below.
    """
    try:
        ups = [UP_OF_LABEL[label] for label in chart["up_cards"]]
        strategy = BasicStrategy(hit={}, two_card={}, pairs={})
        for up in ups:
            label = "A" if up == 1 else str(up)
            two: dict[tuple[int, bool], str] = {}
            for section, soft in (("hard", False), ("soft", True)):
                for total_text, row in chart[section].items():
                    code = str(row[label])
                    if code[0] not in ACTION_OF_CODE or code not in {c for c in _CODES}:
                        raise SimulationError(f"strategy file: unknown code {code!r} in {section} {total_text}.")
                    two[(int(total_text), soft)] = code
            pairs: dict[int, bool] = {}
            for pair_text, row in chart.get("pairs", {}).items():
                value = 1 if pair_text.split(",")[0] == "A" else int(pair_text.split(",")[0])
                pairs[value] = str(row[label]) == "P"
            hit: dict[tuple[int, bool], int] = {}
            for total in range(2, 22):
                for soft in (False, True):
                    found = two.get((total, soft))
                    if found is None:
                        hit[(total, soft)] = int(total < (18 if soft else 17))
                    else:
                        hit[(total, soft)] = int(found[0] != "S" and not found.endswith("s"))
            hit[(21, False)] = hit[(21, True)] = 0
            strategy.hit_by_up[up] = hit
            strategy.two_card_by_up[up] = two
            strategy.pairs_by_up[up] = pairs
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        if isinstance(error, SimulationError):
            raise
        raise SimulationError(
            f"strategy file: not a chart as `twentyone strategy --json` writes it ({error}).") from None
    return strategy


_CODES = ("H", "S", "D", "Ds", "T", "Ts", "Q", "Qs", "R", "Rs")


def load_strategy(rules: Rules, name: str, analysis: GameAnalysis | None = None) -> BasicStrategy:
    """``basic`` (derived by the exact maths for ``rules``) or a chart file's path.

    ``optimal`` gives the basic chart too: optimal play itself is in :func:`play_tables`.
    """
    if name in ("basic", "optimal"):
        return (analysis or GameAnalysis(rules)).basic_strategy()
    path = Path(name)
    try:
        chart = json.loads(path.read_text("utf-8"))
    except OSError as error:
        raise SimulationError(f"strategy file: cannot read {name!r} ({error.strerror}).") from None
    except json.JSONDecodeError as error:
        raise SimulationError(f"strategy file: not JSON ({error.msg}).") from None
    if isinstance(chart, dict) and "chart" in chart:
        chart = chart["chart"]
    if not isinstance(chart, dict):
        raise SimulationError("strategy file: expected a chart object.")
    strategy = strategy_from_chart(chart)
    # A chart of another game (power's has no 9 column) left out an up card this shoe deals: a KeyError deep in
    # the exact maths, and a traceback (an analyst's trial).
    dealt = [value for value in range(1, 11) if value_counts(rules)[value - 1]]
    missing = ["A" if value == 1 else str(value) for value in dealt if value not in strategy.hit_by_up]
    if missing:
        raise SimulationError(f"strategy file: the chart has no column for a dealer {', '.join(missing)}, which "
                              f"{rules.id} deals (a chart of another game?).")
    return strategy


def play_tables(rules: Rules, name: str, analysis: GameAnalysis | None = None) -> StrategyTables:
    """The kernel's tables for ``basic``, ``optimal`` or a chart file."""
    analysis = analysis or GameAnalysis(rules)
    chart = load_strategy(rules, name, analysis)
    return strategy_tables(chart, optimal_tables(rules, analysis) if name == "optimal" else None)


def _optimal_action(game: Round, tables: OptimalTables, cards: tuple[Card, ...], from_split: bool,
                    spot_hands: int, legal: tuple[Action, ...]) -> Action:
    """The optimal tables' action for a hand, found by walking its cards from the first one or two."""
    up = game.dealer_up
    rules = game.rules
    peeked = int(rules.checks_for_blackjack(up.rank))
    if from_split:
        state = int(tables.split[up.value, peeked, cards[0].value, min(spot_hands - 1, tables.split.shape[3] - 1)])
        rest = cards[1:]
    else:
        state = int(tables.main[up.value, peeked, cards[0].value, cards[1].value])
        rest = cards[2:]
    for card in rest:
        state = int(tables.child[state, card.value - 1])
    action = list(Action)[int(tables.action[state])]
    if action is Action.SPLIT and action not in legal:
        action = list(Action)[int(tables.alt[state])]
    return action


def _early_surrender(game: Round, strategy: BasicStrategy, decision: Any) -> Action:
    """The chart's answer to an early-surrender offer: take it where the chart surrenders (R, Rs)
    and does not split the pair."""
    hand = next(h for h in game.hands if h.seat == decision.seat and h.hand == decision.hand)
    up = game.dealer_up.value
    first, second = hand.cards
    value = hand_value(hand.cards)
    pair = first.rank == second.rank if game.rules.split.match == "rank" else first.value == second.value
    splits = pair and game.rules.split.max_hands >= 2 and strategy.pairs_by_up.get(up, {}).get(first.value, False)
    code = strategy.two_card_by_up[up].get((value.total, value.soft), "S")
    return Action.SURRENDER if code[0] == "R" and not splits else Action.NO_SURRENDER


def engine_action(game: Round, strategy: BasicStrategy, options: SimOptions,
                  optimal: OptimalTables | None = None) -> Action:
    """The action ``strategy`` takes at the round's pending decision, among the engine's legal actions.

    The same player as the kernel: offers answered by ``options``, the first cash-out offer
    taken when ``options.cash_out``, then the chart (pairs, two-card codes, hit/stand by total).
    """
    decision = game.decision()
    if decision is None:
        raise ValueError("No decision is pending.")
    legal = game.legal_actions()
    if decision.kind == "insurance":
        return Action.INSURANCE if options.insurance else Action.NO_INSURANCE
    if decision.kind == "even-money":
        return Action.EVEN_MONEY if options.even_money else Action.NO_EVEN_MONEY
    if decision.kind == "surrender":
        return _early_surrender(game, strategy, decision) if optimal is None else Action.NO_SURRENDER
    if options.cash_out and Action.CASH_OUT in legal:
        return Action.CASH_OUT
    hand = next(h for h in game.hands if h.seat == decision.seat and h.hand == decision.hand)
    up = game.dealer_up.value
    value = hand_value(hand.cards)
    if hand.from_split and Action.SPLIT in legal:
        return Action.SPLIT  # a pair card on a split hand is split again, as the exact maths plays it
    if optimal is not None:
        spot_hands = sum(1 for other in game.hands if other.seat == hand.seat)
        choice = _optimal_action(game, optimal, hand.cards, hand.from_split, spot_hands, legal)
        if choice not in legal:  # as the kernel: an unavailable play hits, and split aces stand
            choice = Action.HIT if Action.HIT in legal else Action.STAND
        return choice
    if len(hand.cards) == 2:
        first = hand.cards[0]
        if Action.SPLIT in legal and strategy.pairs_by_up.get(up, {}).get(first.value, False):
            return Action.SPLIT
        code = strategy.two_card_by_up[up].get((value.total, value.soft), "S")
        open_actions = {str(action): 0.0 for action in legal}
        open_actions.setdefault("hit", 0.0)  # the chart's fallback is read as in the exact maths
        choice = Action(code_action(code, open_actions))
    else:
        hits = policy_array(strategy.hit_by_up[up])[value.total + 22 * value.soft]
        choice = Action.HIT if hits else Action.STAND
    if choice not in legal:  # split aces may not hit: they stand
        choice = Action.STAND
    return choice
