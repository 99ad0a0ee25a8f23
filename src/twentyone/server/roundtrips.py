"""Round trips to PostgreSQL, counted in libpq's own trace: what the tests and ``benchmarks/history.py`` measure.

A round trip is a wait for PostgreSQL's answer: one ``ReadyForQuery`` from the server for each ``Sync`` or simple
query the client sends (a pipeline of several statements is one). SQLAlchemy's statement events cannot count them:
listening to them sends every statement SQLAlchemy's own way (``direct.watched``), and one event is not one round trip.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from sqlalchemy import Engine, event


def sent_by_round_trip(trace: str) -> list[str]:
    """What the client sent in a libpq trace (its ``Parse`` and ``Query`` messages, SQL text included), one string per
    round trip: what went out before each ``ReadyForQuery`` of the server's.

    >>> trace = ["F\\t11\\tQuery\\t COMMIT", "B\\t11\\tCommandComplete\\t COMMIT", "B\\t5\\tReadyForQuery\\t I"]
    >>> sent_by_round_trip(chr(10).join(trace))
    [' COMMIT']
    """
    trips: list[str] = []
    sent: list[str] = []
    for message in re.split(r"\n(?=[FB]\t)", trace):  # a statement's text may hold line breaks
        fields = [*message.split("\t", 3), "", "", "", ""]
        side, kind, text = fields[0], fields[2], fields[3]
        if side == "F" and kind in ("Parse", "Query"):
            sent.append(text)
        elif side == "B" and kind == "ReadyForQuery":
            trips.append("\n".join(sent))
            sent = []
    return trips


def answers(trace: str) -> int:
    """The round trips in a libpq trace: the server's ``ReadyForQuery`` messages."""
    return len(sent_by_round_trip(trace))


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
