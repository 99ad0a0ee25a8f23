"""Round trips to PostgreSQL, counted in libpq's own trace: what the tests and ``benchmarks/history.py`` measure.

A round trip is a wait for PostgreSQL's answer: one ``ReadyForQuery`` from the server for each ``Sync`` or simple
query the client sends (a pipeline of several statements is one). SQLAlchemy's statement events cannot count them:
listening to them sends every statement SQLAlchemy's own way (``direct.watched``), and one event is not one round trip.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from sqlalchemy import Engine, event


def answers(trace: str) -> int:
    """The server's ``ReadyForQuery`` messages in a libpq trace (one per round trip).

    >>> lines = ["F\\t11\\tQuery\\t COMMIT", "B\\t11\\tCommandComplete\\t COMMIT", "B\\t5\\tReadyForQuery\\t I"]
    >>> answers(chr(10).join(lines))
    1
    """
    return sum(line.startswith("B\t") and "\tReadyForQuery\t" in line for line in trace.splitlines())


@contextmanager
def traced(engine: Engine, trace: Path) -> Iterator[list[int]]:
    """Trace every connection taken from ``engine``'s pool while the block runs into the file ``trace`` (appended to);
    once the block ends, the list it yields holds the round trips counted. A connection's trace is written out when
    it goes back to the pool, so :func:`count` may also be read between requests that returned theirs. (psycopg
    leaves about 4.5 KB behind each time a trace ends: for tests and short benchmark runs, not for a server.)"""
    from psycopg import pq

    files: dict[int, TextIO] = {}

    def taken(dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
        out = files[id(dbapi_connection)] = open(trace, "a")  # noqa: SIM115 - closed when the connection is returned
        dbapi_connection.pgconn.trace(out.fileno())
        dbapi_connection.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE)

    def returned(dbapi_connection: Any, _record: Any) -> None:
        out = files.pop(id(dbapi_connection), None)
        if out is not None:
            dbapi_connection.pgconn.untrace()
            out.close()

    counted: list[int] = []
    event.listen(engine, "checkout", taken)
    event.listen(engine, "checkin", returned)
    try:
        yield counted
    finally:
        event.remove(engine, "checkout", taken)
        event.remove(engine, "checkin", returned)
    counted.append(count(trace))


def count(trace: Path) -> int:
    """The round trips in the trace file written so far (0 if there is none)."""
    return answers(trace.read_text()) if trace.exists() else 0
