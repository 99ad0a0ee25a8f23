"""Workers lost mid-run: a Dask worker killed, its nanny's new one holding nothing; a local worker process killed.

Found by a trial of a researcher: the run ended in Dask's traceback ("already forgotten") where the scattered inputs
went with the only worker holding them, and in ``BrokenProcessPool``'s where a local worker was killed.
"""

from __future__ import annotations

import contextlib
import os
import signal
from typing import Any

import numpy as np
import pytest

from twentyone.sim.run import simulate
from twentyone.sim.tables import SimulationError
from twentyone.variants import builtin_rules


def _same(a: Any, b: Any) -> None:
    assert a.main == b.main
    for part in ("stats", "histogram", "side_sums", "side_counts", "depth_sums"):
        np.testing.assert_array_equal(getattr(a.total, part), getattr(b.total, part))


def test_a_dask_run_outlives_the_loss_of_its_only_worker() -> None:
    """The worker is killed once the first chunk is in: its nanny starts another, which holds none of the run's
    inputs. They are sent again, the chunks left run again from their own seeds, and the result is the one a single
    process gets."""
    distributed = pytest.importorskip("distributed")
    rules = builtin_rules("single-deck")
    here = simulate(rules, 1_000_000, seed=5, workers=1, exact=False)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:  # closed before the run's own: two in one thread share a loop
            pid = next(iter(client.run(os.getpid).values()))
        killed: list[int] = []

        def kill_once(chunks_done: int, _: Any) -> None:
            if not killed:
                os.kill(pid, signal.SIGKILL)
                killed.append(chunks_done)

        there = simulate(rules, 1_000_000, seed=5, scheduler=cluster.scheduler_address, exact=False,
                         progress=kill_once)
    assert killed and there.chunks == here.chunks
    _same(here, there)


def test_a_scheduler_without_workers_is_one_line() -> None:
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=0, dashboard_address=None) as cluster, \
            pytest.raises(SimulationError, match="has no workers: start one"):
        simulate(builtin_rules("single-deck"), 40_000, scheduler=cluster.scheduler_address, exact=False)


def test_a_local_worker_killed_mid_run_is_one_line() -> None:
    """A worker process of ``--workers 2`` killed mid-run: the run ends with one line, not the pool's traceback."""
    killed: list[int] = []

    def kill_a_worker(chunks_done: int, _: Any) -> None:
        import multiprocessing

        # One worker, once: a second call found the first one killed and already reaped (ProcessLookupError, a race
        # a fresh check hit); a child that ended meanwhile is passed over for the next.
        for child in multiprocessing.active_children() if not killed else ():
            with contextlib.suppress(ProcessLookupError):
                os.kill(child.pid, signal.SIGKILL)
                killed.append(child.pid)
                break

    with pytest.raises(SimulationError, match="a worker process ended before its chunk was done"):
        simulate(builtin_rules("single-deck"), 2_000_000, seed=5, workers=2, exact=False, progress=kill_a_worker)
    assert killed
