"""A log line said once a window: the first time in full, its repeats counted and reported as one line.

Why: a storage outage answers every request 503, and each 503 logged its own line. With 200 players a restart of
PostgreSQL wrote hundreds of identical lines a second, burying what the operator needs (when it began, what it
was, when it ended, how many were refused). Now the first of each line is logged at once, and the repeats within
the window go into one line when the window ends (``flush``, called each timer tick and at the server's stop) or at
the next repeat after it: an outage is two lines for each cause and window of ten seconds.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

WINDOW_SECONDS = 10.0
MAX_LINES = 64  # distinct lines held at once; past that a line is logged as it comes (nothing is ever dropped)


@dataclass
class _Window:
    started: float
    repeats: int = 0


class RepeatedLines:
    """Log each distinct line at once, then at most one line per window saying how many times it came again.

    >>> import sys
    >>> logger = logging.getLogger("twentyone.example")
    >>> logger.addHandler(logging.StreamHandler(sys.stdout)); logger.propagate = False
    >>> now = [0.0]
    >>> lines = RepeatedLines(logger, window_seconds=10, clock=lambda: now[0])
    >>> for _ in range(3):
    ...     lines.warning("storage busy")
    storage busy
    >>> now[0] = 4.0; lines.flush()  # the window is still open: nothing yet
    >>> now[0] = 10.0; lines.flush()
    storage busy (2 more times in the last 10 s)
    >>> lines.warning("storage busy")  # a new window: said again in full
    storage busy
    """

    def __init__(self, logger: logging.Logger, window_seconds: float = WINDOW_SECONDS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.logger = logger
        self.window_seconds = window_seconds
        self.clock = clock
        self._windows: dict[str, _Window] = {}
        self._lock = threading.Lock()

    def warning(self, line: str) -> None:
        """Log ``line`` at WARNING if it was not said in the current window; count it otherwise."""
        now = self.clock()
        with self._lock:
            window = self._windows.get(line)
            if window is not None and now - window.started < self.window_seconds:
                window.repeats += 1
                return
            ended = window  # its window is over: its repeats are said before the line starts a new one
            if window is not None or len(self._windows) < MAX_LINES:
                self._windows[line] = _Window(now)
        if ended is not None and ended.repeats:
            self._say(line, ended.repeats, now - ended.started)
        self.logger.warning("%s", line)

    def flush(self, every: bool = False) -> None:
        """Report the repeats of every window that has ended (``every``: of every window, as the server stops), and
        forget those lines."""
        now = self.clock()
        with self._lock:
            ended = [(line, window) for line, window in self._windows.items()
                     if every or now - window.started >= self.window_seconds]
            for line, _ in ended:
                del self._windows[line]
        for line, window in ended:
            if window.repeats:
                self._say(line, window.repeats, now - window.started)

    def _say(self, line: str, repeats: int, seconds: float) -> None:
        times = "time" if repeats == 1 else "times"
        self.logger.warning("%s (%d more %s in the last %.0f s)", line, repeats, times, seconds)


def first_line(error: BaseException) -> str:
    """An error's first line, for a log line that repeats: psycopg's add the server's details on lines of their own.

    >>> first_line(OSError("connection failed: refused\\nIs the server running?"))
    'connection failed: refused'
    """
    return str(error).splitlines()[0] if str(error) else type(error).__name__
