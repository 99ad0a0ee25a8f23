"""``serve --pin-cpu``: each server process keeps its threads on one CPU of its own (server/cpu.py).

Real server processes, whose threads' affinity is read from ``/proc`` as the operating system
keeps it. The servers claim their CPUs in a temporary directory of the test's own (``TMPDIR``),
so a server running elsewhere on the machine changes nothing here, and they may use two CPUs
only, so that the test is the same on a machine with more.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from live import free_port, start_server

ALLOWED = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
TWO = set(ALLOWED[:2])
pytestmark = pytest.mark.skipif(len(ALLOWED) < 2, reason="pinning needs Linux and two CPUs or more")


def thread_cpus(pid: int) -> list[set[int]]:
    """The CPUs each thread of process ``pid`` may run on."""
    return [os.sched_getaffinity(int(thread)) for thread in os.listdir(f"/proc/{pid}/task")]


def the_one_cpu(pid: int) -> int:
    """The CPU every thread of ``pid`` is on; fails if they may run on more than one."""
    cpus = thread_cpus(pid)
    assert len(cpus) >= 2  # the event loop's and the checkpoints', at least: a server that has started
    assert all(len(allowed) == 1 for allowed in cpus), cpus
    assert len({next(iter(allowed)) for allowed in cpus}) == 1, cpus
    return next(iter(cpus[0]))


def eventually_one_cpu(pid: int, seconds: float = 15) -> int:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if all(len(allowed) == 1 for allowed in thread_cpus(pid)):
            return the_one_cpu(pid)
        time.sleep(0.2)
    return the_one_cpu(pid)


@pytest.fixture
def servers() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for server in started:
        if server.poll() is None:
            server.kill()
            server.wait()


def serve(servers: list[subprocess.Popen[bytes]], tmp_path: Path, name: str, pin: str | None,
          tmpdir: Path | None = None) -> subprocess.Popen[bytes]:
    env = {"TMPDIR": str(tmpdir or tmp_path)}
    if pin is not None:
        env["TWENTYONE_PIN_CPU"] = pin
    server = start_server(tmp_path / name, free_port(), f"sqlite:///{tmp_path / name / 'db.sqlite'}", env,
                          log=tmp_path / f"{name}.log", cpus=TWO)
    servers.append(server)
    return server


def test_pinned_servers_take_a_cpu_each_and_one_that_found_none_free_takes_a_crashed_ones(
        tmp_path: Path, servers: list[subprocess.Popen[bytes]]) -> None:
    first, second = serve(servers, tmp_path, "first", "1"), serve(servers, tmp_path, "second", "1")
    first_cpu, second_cpu = the_one_cpu(first.pid), the_one_cpu(second.pid)
    assert {first_cpu, second_cpu} == TWO
    # Both CPUs are claimed (a new worker started before the old one stops): the third runs unpinned ...
    third = serve(servers, tmp_path, "third", "1")
    assert all(allowed == TWO for allowed in thread_cpus(third.pid))
    assert "every CPU is claimed" in (tmp_path / "third.log").read_text()
    # ... until a CPU is free: here the first server's, killed outright (no clean stop), whose claim ended with it.
    first.send_signal(signal.SIGKILL)
    first.wait()
    assert eventually_one_cpu(third.pid) == first_cpu


def test_pinning_is_off_unless_asked_for(tmp_path: Path, servers: list[subprocess.Popen[bytes]],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TWENTYONE_PIN_CPU", raising=False)
    for server in (serve(servers, tmp_path, "default", None), serve(servers, tmp_path, "off", "0")):
        assert all(allowed == TWO for allowed in thread_cpus(server.pid))
    assert not list(tmp_path.glob("twentyone-cpus-*/*.lock"))  # nothing claimed either


def test_a_claim_that_cannot_be_kept_leaves_the_server_serving_unpinned(
        tmp_path: Path, servers: list[subprocess.Popen[bytes]]) -> None:
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    (blocked / f"twentyone-cpus-{os.getuid()}").write_text("a file where the claims' directory would be")
    server = serve(servers, tmp_path, "blocked-server", "1", tmpdir=blocked)  # start_server waits for /health
    assert all(allowed == TWO for allowed in thread_cpus(server.pid))
    log = (tmp_path / "blocked-server.log").read_text()
    assert "cannot claim a CPU" in log and "Traceback" not in log
