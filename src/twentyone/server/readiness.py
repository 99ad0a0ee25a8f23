"""Whether this process can serve the floor now (``GET /health/ready``), for a load balancer or an orchestrator.

``/health`` says only that the process answers. An operator's trial found a floor stalled behind a ``200`` there:
a lock held from psql hung every request, and a database URL the timers' connection could not use left every table
without timers (rounds stayed in betting past their window). Readiness asks what those faults stop:

- **database**: a read of the rounds table through the request pool answers within :data:`READY_WAIT` seconds
  (it waits behind a lock on that table, as the game's requests do; on SQLite, behind the file's write lock);
- **timers**: the timer loop looked for due timers within :data:`STALE_TICKS` ticks, and where several processes
  share PostgreSQL, its advisory-lock connection answered at that look;
- **events**: where several processes share PostgreSQL, the listener that brings the other processes' events is
  connected.

The check's read runs on a thread of its own, one at a time (a daemon): a database that never answers (frozen with its
connections open) holds that one thread, not a request's, and later probes say how long it has been waiting. What
failed is told by name only; the error itself (a host, a port) is in the server's log, not on a public endpoint.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from twentyone.server.repeats import RepeatedLines, first_line

log = logging.getLogger("twentyone.server")
READY_WAIT = 3.0  # seconds a probe waits for the database's answer (an orchestrator's probe commonly waits 1-10 s)
STALE_TICKS = 10  # the timers are stale once their loop has not looked for this many ticks
RETRY_AFTER = "5"


@dataclass
class Readiness:
    """The checks of one process. ``read`` is a small read through the request pool; ``timers_answering`` whether
    the timers' ownership answered at its last look; ``events_connected`` whether events reach this process from the
    others; ``tick_seconds`` the timer loop's period (``None``: this process runs no timers).

    >>> checks = Readiness(read=lambda: None, timers_answering=lambda: True, events_connected=lambda: True,
    ...                    tick_seconds=1.0)
    >>> asyncio.run(checks.report())
    (True, {'database': 'ok', 'timers': 'ok', 'events': 'ok'})
    >>> checks.looked(at=time.monotonic() - 60)  # a loop that has not looked for a minute
    >>> asyncio.run(checks.report())
    (False, {'database': 'ok', 'timers': 'no look for 60 s', 'events': 'ok'})
    """

    read: Callable[[], Any]
    timers_answering: Callable[[], bool]
    events_connected: Callable[[], bool]
    tick_seconds: float | None
    wait: float = READY_WAIT
    # From the start: a grace of STALE_TICKS ticks before the first look must have been made.
    _last_look: float = field(default_factory=time.monotonic, init=False, repr=False)
    _pending: Future[str] | None = field(default=None, init=False, repr=False)  # the read under way, or the last
    _pending_since: float = field(default=0.0, init=False, repr=False)
    # A probe every few seconds through an outage: one line, then a count.
    _lines: RepeatedLines = field(default_factory=lambda: RepeatedLines(log), init=False, repr=False)

    def looked(self, at: float | None = None) -> None:
        """The timer loop looked for due timers (at ``at``, a :func:`time.monotonic` reading; now by default)."""
        self._last_look = time.monotonic() if at is None else at

    async def report(self) -> tuple[bool, dict[str, str]]:
        """Whether every check passed, and each check's word: ``ok``, ``off`` (no timers in this process), or what
        is wrong."""
        checks = {"database": await self._database(), "timers": self._timers(),
                  "events": "ok" if self.events_connected() else "listener disconnected"}
        return all(word in ("ok", "off") for word in checks.values()), checks

    async def _database(self) -> str:
        if self._pending is None or self._pending.done():
            self._pending, self._pending_since = Future(), time.monotonic()
            # A daemon thread of its own: a read that never ends must not hold a request's thread, nor the exit.
            threading.Thread(target=self._read, args=(self._pending,), name="twentyone-ready", daemon=True).start()
        try:
            return await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(self._pending)), self.wait)
        except TimeoutError:
            return f"no answer for {time.monotonic() - self._pending_since:.0f} s"

    def _read(self, answer: Future[str]) -> None:
        try:
            self.read()
        except Exception as error:  # the error in the log; by name only on the public endpoint
            self._lines.warning(f"not ready: the database read failed ({first_line(error)})")
            answer.set_result("failed (see the server's log)")
        else:
            answer.set_result("ok")

    def _timers(self) -> str:
        if self.tick_seconds is None:
            return "off"
        if not self.timers_answering():
            return "ownership connection down"
        silent = time.monotonic() - self._last_look
        if silent > STALE_TICKS * self.tick_seconds:
            return f"no look for {silent:.0f} s"
        return "ok"
