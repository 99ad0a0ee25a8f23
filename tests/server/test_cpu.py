"""Each ``twentyone serve`` process keeps its threads on one CPU of its own (server/cpu.py).

Real server processes, whose threads' affinity is read from ``/proc`` as the operating system
keeps it. The servers claim their CPUs in a temporary directory of the test's own (``TMPDIR``),
so a server running elsewhere on the machine changes nothing here.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from live import free_port, start_server

ALLOWED = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
pytestmark = pytest.mark.skipif(len(ALLOWED) < 2, reason="pinning needs Linux and two CPUs or more")


def thread_cpus(pid: int) -> list[set[int]]:
    """The CPUs each thread of process ``pid`` may run on."""
    return [os.sched_getaffinity(int(thread)) for thread in os.listdir(f"/proc/{pid}/task")]


def the_one_cpu(pid: int) -> int:
    """The CPU every thread of ``pid`` is on; fails if they may run on more than one."""
    cpus = thread_cpus(pid)
    assert len(cpus) > 3  # the event loop, the checkpoints and others: not a process that has not started
    assert all(len(allowed) == 1 for allowed in cpus), cpus
    assert len({next(iter(allowed)) for allowed in cpus}) == 1, cpus
    return next(iter(cpus[0]))


def test_servers_keep_their_threads_on_one_cpu_each_and_a_crashed_ones_cpu_is_taken_again(tmp_path: Path) -> None:
    env = {"TMPDIR": str(tmp_path)}
    servers = []
    try:
        for name in ("first", "second"):
            servers.append(start_server(tmp_path / name, free_port(), f"sqlite:///{tmp_path / name / 'db.sqlite'}",
                                        env))
        first, second = (the_one_cpu(server.pid) for server in servers)
        assert first != second and {first, second} <= set(ALLOWED)
        # A server killed outright (no clean stop) leaves its CPU to the next one to start.
        servers[0].send_signal(signal.SIGKILL)
        servers[0].wait()
        servers.append(start_server(tmp_path / "third", free_port(), f"sqlite:///{tmp_path / 'third' / 'db.sqlite'}",
                                    env))
        assert the_one_cpu(servers[-1].pid) == first
    finally:
        for server in servers:
            if server.poll() is None:
                server.kill()
                server.wait()


def test_no_pin_cpu_leaves_the_threads_to_the_operating_system(tmp_path: Path) -> None:
    server = start_server(tmp_path, free_port(), f"sqlite:///{tmp_path / 'db.sqlite'}",
                          {"TMPDIR": str(tmp_path), "TWENTYONE_PIN_CPU": "0"})
    try:
        assert all(allowed == set(ALLOWED) for allowed in thread_cpus(server.pid))
        assert not list(tmp_path.glob("twentyone-cpus-*/*.lock"))  # nothing claimed either
    finally:
        server.kill()
        server.wait()
