"""One chunk of rounds: the unit of work a process or a Dask worker plays, and its statistics.

A chunk is fully described by the compiled game, the strategy tables, its own seed
(an entry of ``SeedSequence(seed).spawn(chunks)``) and its number of rounds, so any
process plays it to the same result.

>>> from twentyone.variants import builtin_rules
>>> from twentyone.sim.tables import SimOptions, compile_game
>>> from twentyone.sim.strategy import play_tables
>>> rules = builtin_rules("classic")
>>> game = compile_game(rules, SimOptions())
>>> tables = play_tables(rules, "basic")
>>> a = play_chunk(game, tables, chunk_seed(7, 0, 4), 2000)
>>> b = play_chunk(game, tables, chunk_seed(7, 0, 4), 2000)
>>> a.stats[0], bool((a.stats == b.stats).all())
(np.float64(2000.0), True)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from twentyone.sim import kernel
from twentyone.sim.strategy import StrategyTables
from twentyone.sim.tables import KernelGame

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
CHECKPOINTS = 16  # running totals kept inside each chunk, for the convergence plot
DEPTH_BUCKETS = 10  # RTP by shoe depth: tenths of the shoe dealt before the round


@dataclass
class ChunkResult:
    """Sums over a chunk's rounds (see the ``S_*`` indices in :mod:`twentyone.sim.kernel`)."""

    stats: FloatArray
    histogram: IntArray
    side_sums: FloatArray  # per side bet: net, net squared, staked
    side_counts: IntArray  # per side bet: rounds x spots hitting each line, then lose, push
    depth_sums: FloatArray  # per depth bucket: rounds, net, net squared
    checkpoints: FloatArray  # running (rounds, net, net squared, wager) within the chunk


@dataclass
class Trace:
    """Every round of a traced chunk: cards drawn, decisions taken, and staked/returned money."""

    cards: IntArray
    actions: IntArray
    money: IntArray


def chunk_seed(seed: int, index: int, chunks: int) -> npt.NDArray[np.uint64]:
    """The xoshiro256** state of chunk ``index`` of ``chunks``: its own ``SeedSequence.spawn`` child.

    >>> chunk_seed(1, 0, 2).dtype, len(chunk_seed(1, 0, 2)), bool((chunk_seed(1, 0, 2) != chunk_seed(1, 1, 2)).any())
    (dtype('uint64'), 4, True)
    """
    child = np.random.SeedSequence(seed).spawn(chunks)[index]
    return child.generate_state(4, dtype=np.uint64)


def _empty(game: KernelGame) -> ChunkResult:
    n_side = len(game.side_names)
    return ChunkResult(
        stats=np.zeros(kernel.STATS_SIZE),
        histogram=np.zeros(kernel.HIST_SIZE, dtype=np.int64),
        side_sums=np.zeros((n_side, 3)),
        side_counts=np.zeros((n_side, kernel.LINE_SLOTS), dtype=np.int64),
        depth_sums=np.zeros((DEPTH_BUCKETS, 3)),
        checkpoints=np.zeros((CHECKPOINTS, 4)),
    )


def _run(game: KernelGame, tables: StrategyTables, state: npt.NDArray[np.uint64], rounds: int,
         result: ChunkResult, trace: Trace) -> None:
    params = game.params.copy()
    params[kernel.P_OPTIMAL] = tables.uses_optimal
    optimal = tables.optimal
    kernel.simulate_chunk(
        params, game.fresh_deck, tables.hit, tables.two_card, tables.pairs,
        optimal.child, optimal.action, optimal.alt, optimal.main, optimal.split,
        game.side_kind, game.side_pay, game.cash_out, state.copy(), rounds,
        result.stats, result.histogram, result.side_sums, result.side_counts, result.depth_sums,
        result.checkpoints, trace.cards, trace.actions, trace.money,
    )


def play_chunk(game: KernelGame, tables: StrategyTables, state: npt.NDArray[np.uint64], rounds: int) -> ChunkResult:
    """Play ``rounds`` rounds from the seed ``state``; returns their summed statistics."""
    result = _empty(game)
    none = Trace(np.zeros((1, 1), dtype=np.int64), np.zeros((1, 1), dtype=np.int64),
                 np.zeros((1, 4), dtype=np.int64))
    _run(game, tables, state, rounds, result, none)
    return result


def trace_chunk(game: KernelGame, tables: StrategyTables, state: npt.NDArray[np.uint64],
                rounds: int) -> tuple[ChunkResult, Trace]:
    """Like :func:`play_chunk` (``rounds`` >= 2), also recording every round for the differential test."""
    result = _empty(game)
    trace = Trace(np.full((rounds, 256), -1, dtype=np.int64), np.full((rounds, 128), -1, dtype=np.int64),
                  np.zeros((rounds, 4), dtype=np.int64))
    _run(game, tables, state, rounds, result, trace)
    return result, trace
