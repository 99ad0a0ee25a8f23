"""Split a run into chunks and play them: in this process, on local processes, or on Dask.

The chunks depend only on the number of rounds (never on the number of workers) and
chunk ``i`` always plays from child ``i`` of ``SeedSequence(seed)``; results are added
in chunk order. So the same seed gives the same result on one core, on every local
core, or on a cluster.

>>> from twentyone.variants import builtin_rules
>>> one = simulate(builtin_rules("single-deck"), 40_000, seed=3, workers=1, exact=False)
>>> two = simulate(builtin_rules("single-deck"), 40_000, seed=3, workers=2, exact=False)
>>> one.main == two.main, one.chunks
(True, 2)
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from concurrent.futures import CancelledError, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from typing import Any

import numpy as np

from twentyone.core.rules import Rules
from twentyone.sim.chunk import ChunkResult, chunk_seed, play_chunk
from twentyone.sim.exact import exact_returns
from twentyone.sim.result import SimulationResult, add_chunks, estimate
from twentyone.sim.strategy import StrategyTables, play_tables
from twentyone.sim.tables import KernelGame, SimOptions, SimulationError, compile_game

MIN_CHUNK = 20_000
MAX_CHUNK = 2_000_000
Progress = Callable[[int, SimulationResult], None]


def chunk_sizes(rounds: int) -> list[int]:
    """Rounds per chunk: about 64 chunks, each 20 000 to 2 000 000 rounds, from ``rounds`` alone.

    >>> chunk_sizes(50_000), len(chunk_sizes(10**8)), sum(chunk_sizes(10**8))
    ([16667, 16667, 16666], 64, 100000000)
    """
    if rounds < 1:
        raise SimulationError(f"--rounds must be at least 1, got {rounds}.")
    size = min(max(rounds // 64, MIN_CHUNK), MAX_CHUNK)
    count = max(1, -(-rounds // size))
    base, extra = divmod(rounds, count)
    return [base + (1 if i < extra else 0) for i in range(count)]


def _task(game: KernelGame, tables: StrategyTables, seed: int, index: int, chunks: int, rounds: int) -> ChunkResult:
    return play_chunk(game, tables, chunk_seed(seed, index, chunks), rounds)


def _local(game: KernelGame, tables: StrategyTables, seed: int, sizes: list[int],
           workers: int) -> Iterator[tuple[int, ChunkResult]]:
    if workers == 1:
        for index, rounds in enumerate(sizes):
            yield index, _task(game, tables, seed, index, len(sizes), rounds)
        return
    # Compile (or load) the kernel here first: forked workers inherit it instead of each compiling it.
    play_chunk(game, tables, chunk_seed(seed, 0, 1), 1)
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = {pool.submit(_task, game, tables, seed, index, len(sizes), rounds): index
                   for index, rounds in enumerate(sizes)}
        try:
            for future in as_completed(futures):
                yield futures[future], future.result()
        except BrokenProcessPool:  # a worker killed (out of memory, a signal): one line, not the pool's traceback
            raise SimulationError("a worker process ended before its chunk was done (killed, or out of memory?): "
                                  "run again, with fewer --workers if memory is short.") from None


DASK_TRIES = 3  # sends of the run's inputs: each after the workers holding the last were all lost


def _dask(address: str, game: KernelGame, tables: StrategyTables, seed: int,
          sizes: list[int], cluster: dict[str, int]) -> Iterator[tuple[int, ChunkResult]]:
    """The chunks run on a Dask cluster; ``cluster["workers"]`` is set to its threads (chunks at once) on connecting.
    Before, the report said this machine's cores (an analyst's trial: a cluster of one thread was "2 workers")."""
    try:
        from distributed import Client
    except ImportError:
        raise SimulationError("--scheduler needs Dask: pip install 'twentyone[cluster]'.") from None
    try:
        client = Client(address, timeout=10)
    except (OSError, TimeoutError, ValueError) as error:
        raise SimulationError(f"cannot reach the Dask scheduler at {address!r} ({error}).") from None
    try:
        workers = client.scheduler_info()["workers"].values()
        if not workers:  # scatter would wait 10 s for one, then raise its own traceback (a researcher's trial)
            raise SimulationError(f"the Dask scheduler at {address!r} has no workers: start one "
                                  f"(dask worker {address}).")
        cluster["workers"] = max(1, sum(int(worker.get("nthreads", 1)) for worker in workers))
        yield from _dask_chunks(client, game, tables, seed, sizes, address)
    finally:
        client.close()


def _dask_chunks(client: Any, game: KernelGame, tables: StrategyTables, seed: int, sizes: list[int],
                 address: str) -> Iterator[tuple[int, ChunkResult]]:
    """Each chunk once, in the order they finish. The inputs are scattered to every worker; Dask keeps no recipe for
    scattered data, so when every worker holding them is lost (a worker killed mid-run, its nanny's restart
    empty) the chunks still to run are cancelled: the inputs are sent again and those chunks run again, from
    the same seeds (a researcher's trial: the run died with Dask's traceback). A chunk a worker ran to the end
    before it was lost comes back once."""
    from distributed import KilledWorker
    from distributed import as_completed as dask_completed

    left = dict(enumerate(sizes))
    futures: dict[Any, int] = {}
    for _ in range(DASK_TRIES):
        client.cancel(list(futures))  # a try's chunks not yet done: run again below, not twice
        try:
            game_ref, tables_ref = client.scatter([game, tables], broadcast=True)
            futures = {client.submit(_task, game_ref, tables_ref, seed, index, len(sizes), rounds, pure=False): index
                       for index, rounds in left.items()}
            for future in dask_completed(futures):
                index = futures[future]
                result = future.result()
                del left[index]
                yield index, result
            return
        except (CancelledError, KilledWorker, TimeoutError, OSError):
            continue
    raise SimulationError(f"the Dask cluster at {address!r} lost its workers {DASK_TRIES} times with "
                          f"{len(left)} chunks left: check the workers' logs and run again.")


def _convergence(game: KernelGame, chunks: list[ChunkResult]) -> list[tuple[float, float, float]]:
    """Running (rounds, RTP, SE) through the chunks in order, from each chunk's checkpoints."""
    points = []
    done = np.zeros(4)
    for chunk in chunks:
        for row in chunk.checkpoints:
            if row[0] == 0:
                continue
            rounds, net, squared, wager = done + row
            e = estimate(rounds, net, squared, wager / rounds)
            points.append((float(rounds), e.rtp, e.se))
        last = chunk.stats
        done += np.array([last[0], last[1], last[2], last[3]])
    return points


def simulate(rules: Rules, rounds: int, strategy: str = "basic", options: SimOptions | None = None,
             seed: int = 0, workers: int | None = None, scheduler: str | None = None,
             progress: Progress | None = None, exact: bool = True) -> SimulationResult:
    """Play ``rounds`` rounds of ``rules`` and measure every return.

    Parameters
    ----------
    rules : Rules
        The game, as the engine and the analyser read it.
    rounds : int
        Rounds to play (each round is ``options.hands`` spots).
    strategy : str
        ``basic``, ``optimal`` (composition-dependent, as the exact maths plays it) or the path of a
        chart file written by ``twentyone strategy --json``.
    options : SimOptions, optional
        Hands, side bets, insurance / even money / cash-out choices, stakes.
    seed : int
        The run's seed; the same seed gives the same result for any ``workers`` or scheduler.
    workers : int, optional
        Local processes (default: every core); ignored with ``scheduler``.
    scheduler : str, optional
        A Dask scheduler address (``tcp://host:8786``) to play the chunks on a cluster.
    progress : callable, optional
        Called as ``progress(rounds_done, partial_result)`` after each chunk.
    exact : bool
        Also compute the exact returns to compare with (``result.exact``).

    Returns
    -------
    SimulationResult

    Examples
    --------
    >>> from twentyone.variants import builtin_rules
    >>> result = simulate(builtin_rules("power"), 30_000, options=SimOptions(side_bets=("hot_3",)), seed=1)
    >>> result.rounds, bool(abs(result.main.rtp - result.exact["main"]) < 5 * result.main.se)
    (30000, True)
    """
    options = options or SimOptions()
    game = compile_game(rules, options)
    tables = play_tables(rules, strategy)
    sizes = chunk_sizes(rounds)
    workers = max(1, min(workers or os.cpu_count() or 1, len(sizes)))
    started = time.perf_counter()
    results: list[ChunkResult | None] = [None] * len(sizes)
    cluster: dict[str, int] = {}
    stream = (_dask(scheduler, game, tables, seed, sizes, cluster) if scheduler
              else _local(game, tables, seed, sizes, workers))
    done = 0
    for index, chunk in stream:
        workers = cluster.get("workers", workers)
        results[index] = chunk
        done += sizes[index]
        if progress is not None:
            partial = add_chunks([c for c in results if c is not None])
            progress(done, SimulationResult(game, strategy, seed, len(sizes), workers,
                                            time.perf_counter() - started, partial))
    seconds = time.perf_counter() - started
    ordered = [c for c in results if c is not None]
    result = SimulationResult(game, strategy, seed, len(sizes), workers, seconds, add_chunks(ordered),
                              _convergence(game, ordered))
    if exact:
        result.exact = exact_returns(rules, strategy, options)
    return result
