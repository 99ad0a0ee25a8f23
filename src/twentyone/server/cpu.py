"""One CPU per server process: every thread of a ``twentyone serve`` process kept on one core of its own.

Why: a server process's threads (uvicorn's event loop, the request threads, the timers) run
Python one at a time, under one GIL. Left to the operating system they spread over the cores,
and then each hand-over of the GIL (every SQLite call releases it; every request passes from
the event loop to a request thread and back) wakes a thread on another core, whose caches are
cold, while the thread that let go waits to get it back. On one core the same hand-overs are a
switch between threads that share warm caches. Measured with ``benchmarks/load.py`` at
saturation on the 2-core machine (docs/server.md, "One CPU per process"): one SQLite process
served about a sixth more requests per CPU-second on one core, and two processes on one
PostgreSQL about half as many again, each on a core of its own.

How: each process claims a CPU no other server on this machine holds (a lock file per CPU,
held while the process lives, so a worker restarted after a crash takes over its
predecessor's) and moves its threads there; those it starts later inherit it. Where every CPU
is claimed, or the platform cannot pin (only Linux can), the process runs unpinned.
``serve --no-pin-cpu`` (or ``TWENTYONE_PIN_CPU=0``) leaves the choice to the operating system,
as on a machine shared with other work that should not share this core.
"""

from __future__ import annotations

import fcntl
import logging
import os
import tempfile
from pathlib import Path
from typing import IO

log = logging.getLogger("twentyone.server")
ENVIRONMENT = "TWENTYONE_PIN_CPU"  # "0" leaves a server's threads to the operating system
_held: list[IO[bytes]] = []  # this process's claim, kept open (and locked) for as long as it runs


def claims_directory() -> Path:
    """Where this machine's servers claim their CPUs: one directory per user, in the temporary directory."""
    return Path(tempfile.gettempdir()) / f"twentyone-cpus-{os.getuid()}"


def pin_wanted(environ: dict[str, str] | None = None) -> bool:
    """Whether to pin, from ``TWENTYONE_PIN_CPU`` (default yes).

    >>> pin_wanted({}), pin_wanted({"TWENTYONE_PIN_CPU": "0"}), pin_wanted({"TWENTYONE_PIN_CPU": "false"})
    (True, False, False)
    """
    value = (os.environ if environ is None else environ).get(ENVIRONMENT, "1")
    return value.strip().lower() not in ("0", "false", "no", "off")


def claim_cpu(allowed: list[int], directory: Path) -> tuple[int, IO[bytes]] | None:
    """The first of ``allowed`` whose lock file in ``directory`` no live process holds, with its locked file.

    The lock (``flock``) is the operating system's: it ends with the process that holds it, however
    that process ends, so a claim cannot outlive its server.

    >>> import tempfile
    >>> directory = Path(tempfile.mkdtemp())
    >>> first, second = claim_cpu([3, 5], directory), claim_cpu([3, 5], directory)
    >>> first[0], second[0], claim_cpu([3, 5], directory)
    (3, 5, None)
    >>> first[1].close()
    >>> claim_cpu([3, 5], directory)[0]
    3
    """
    try:
        directory.mkdir(mode=0o700, exist_ok=True)
    except OSError:
        return None
    for cpu in allowed:
        try:
            handle = open(directory / f"cpu-{cpu}.lock", "ab")  # noqa: SIM115 - held open for the process's life
        except OSError:
            continue
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held by another server
            handle.close()
            continue
        return cpu, handle
    return None


def pin_to_one_cpu(directory: Path | None = None) -> int | None:
    """Move every thread of this process to a CPU of its own; the CPU, or None where it stays unpinned.

    Unpinned where the platform has no ``sched_setaffinity`` (not Linux), where the process may run
    on one CPU only anyway, or where every CPU it may use is claimed by another server.
    """
    if not hasattr(os, "sched_setaffinity"):
        return None
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        return None
    claim = claim_cpu(allowed, directory or claims_directory())
    if claim is None:
        log.warning("every CPU is claimed by another twentyone server: this one runs unpinned")
        return None
    cpu, handle = claim
    for thread in os.listdir("/proc/self/task"):  # threads started at import (numba's, BLAS's) as well
        try:
            os.sched_setaffinity(int(thread), {cpu})
        except OSError:  # a thread that ended meanwhile
            continue
    _held.append(handle)
    return cpu
