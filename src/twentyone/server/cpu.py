"""One CPU per server process (``serve --pin-cpu``): every thread of a process kept on one core of its own.

Why: a server process's threads (uvicorn's event loop, the request threads, the timers) run
Python one at a time, under one GIL. Left to the operating system they spread over the cores,
and then each hand-over of the GIL (every SQLite call releases it; every request passes from
the event loop to a request thread and back) wakes a thread on another core, whose caches are
cold, while the thread that let go waits to get it back. On one core the same hand-overs are a
switch between threads that share warm caches. Measured with ``benchmarks/load.py`` at
saturation on a 2-core machine (docs/server.md, "One CPU per process"): one SQLite process
served about a sixth more requests per CPU-second on one core, and two processes on one
PostgreSQL about half as many again, each on a core of its own.

How: each process claims a CPU that no other server of this user holds (a lock file per CPU in
the temporary directory, held while the process lives, so a worker restarted after a crash
takes over its predecessor's) and moves its threads there; those it starts later inherit it.
Where every CPU is claimed (a new worker started before the old one stops, as in a rolling
restart), the process runs unpinned and keeps trying, and moves as soon as a CPU is free. Where
the platform cannot pin (only Linux can) or the claims cannot be kept, it runs unpinned.

It is off unless asked for: claims are shared only by servers that share a temporary directory,
so containers or services with a private ``/tmp`` on one host would all claim the first CPU.
"""

from __future__ import annotations

import fcntl
import logging
import os
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO

log = logging.getLogger("twentyone.server")
PIN_ENV_VAR = "TWENTYONE_PIN_CPU"  # "1": each server process on a CPU of its own (serve --pin-cpu)
RETRY_SECONDS = 2.0  # how often a process that found every CPU claimed tries again
_held: list[IO[bytes]] = []  # this process's claim, kept open (and locked) for as long as it runs


def pin_wanted(environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``TWENTYONE_PIN_CPU`` asks for pinning (default no), read as every yes/no variable is
    (:func:`~twentyone.server.config.environment_flag`); any other word is a ``SettingError``, a ``ValueError``.

    >>> pin_wanted({}), pin_wanted({"TWENTYONE_PIN_CPU": "1"}), pin_wanted({"TWENTYONE_PIN_CPU": " Off "})
    (False, True, False)
    >>> try:
    ...     pin_wanted({"TWENTYONE_PIN_CPU": "maybe"})
    ... except ValueError as error:
    ...     print(error)
    TWENTYONE_PIN_CPU must be 1, true, yes or on, or 0, false, no or off, got 'maybe'.
    """
    from twentyone.server.config import environment_flag

    return environment_flag(PIN_ENV_VAR, False, environ)


def claims_directory() -> Path:
    """Where this user's servers claim their CPUs: a directory in the temporary directory.

    ``OSError`` where there is no usable temporary directory (a read-only file system).
    """
    return Path(tempfile.gettempdir()) / f"twentyone-cpus-{os.getuid()}"


def claim_cpu(allowed: list[int], directory: Path) -> tuple[int, IO[bytes]] | None:
    """The first of ``allowed`` whose lock file in ``directory`` no live process holds, with its locked file;
    None when every one is held. ``OSError`` when the directory or its files cannot be used.

    The lock (``flock``) is the operating system's: it ends with the process that holds it, however that
    process ends (a child forked without ``exec`` would share it, and nothing in the server forks).

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as scratch:
    ...     first, second = claim_cpu([3, 5], Path(scratch)), claim_cpu([3, 5], Path(scratch))
    ...     print(first[0], second[0], claim_cpu([3, 5], Path(scratch)))
    ...     first[1].close()
    ...     print(claim_cpu([3, 5], Path(scratch))[0])
    ...     second[1].close()
    3 5 None
    3
    """
    directory.mkdir(mode=0o700, exist_ok=True)
    for cpu in allowed:
        handle = open(directory / f"cpu-{cpu}.lock", "ab")  # noqa: SIM115 - held open for the process's life
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # held by another server
            handle.close()
            continue
        except OSError:  # a file system without flock: no claim can be kept here
            handle.close()
            raise
        return cpu, handle
    return None


def pin_to_one_cpu(directory: Path | None = None) -> int | None:
    """Move every thread of this process to a CPU of its own; the CPU, or None while it runs unpinned.

    Unpinned where the platform has no ``sched_setaffinity`` (not Linux), where the process may run on
    one CPU only anyway, or where its claim cannot be kept (no usable temporary directory, or no
    ``flock``): each is logged, none stops the server. Where every CPU is claimed by another server, a
    thread tries again every :data:`RETRY_SECONDS` and pins the process when one is free.
    """
    if not hasattr(os, "sched_setaffinity"):
        return None
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        return None
    try:
        directory = directory or claims_directory()
        claim = claim_cpu(allowed, directory)
    except OSError as error:
        log.warning("cannot claim a CPU (%s): this server runs unpinned", error)
        return None
    if claim is None:
        if not os.path.isdir("/proc/self/task"):  # a late claim could move no thread but its own
            log.warning("every CPU is claimed by another twentyone server: this one runs unpinned")
            return None
        log.warning("every CPU is claimed by another twentyone server: this one runs unpinned until one is free")
        threading.Thread(target=_claim_later, args=(allowed, directory), name="twentyone-cpu-claim",
                         daemon=True).start()
        return None
    return _pin(*claim)


def _pin(cpu: int, handle: IO[bytes]) -> int:
    """Keep the claim and move every thread there (threads started later inherit their starter's CPU)."""
    _held.append(handle)
    try:
        threads = [int(thread) for thread in os.listdir("/proc/self/task")]
    except OSError:  # no /proc: the calling thread, which at start-up is the only one
        threads = [0]
    for thread in threads:
        try:
            os.sched_setaffinity(thread, {cpu})
        except OSError:  # a thread that ended meanwhile
            continue
    return cpu


def _claim_later(allowed: list[int], directory: Path) -> None:
    while True:
        time.sleep(RETRY_SECONDS)
        try:
            claim = claim_cpu(allowed, directory)
        except OSError:
            return
        if claim is not None:
            log.warning("a CPU was freed: this server's threads are now on CPU %d", _pin(*claim))
            return
