"""Round numbers taken before their rows are written: a debit at an operator's wallet names its round, and is sent
before the transaction that writes the round begins (on SQLite that transaction holds the one write lock of the
whole database, which a call over the network must not hold).

A number taken is never given to another round, even when its deal does not commit (its debit rolled back names a
round that never was, not some later one). On SQLite the rounds table counts with ``AUTOINCREMENT`` (migration 0011),
so a row inserted without a number gets one above every number taken; a number is taken by moving that count on, in
a short transaction of its own. On PostgreSQL it would come from the rounds' own sequence, which never gives one
twice; the server sends its debits ahead on SQLite alone (``Rounds.debits_ahead`` says why).

Numbers are taken one at a time, so they follow the order rounds are made in, as the numbers the database gives
itself do: history lists a player's rounds newest first, and signing in finds the last round played, by their
numbers. Blocks taken ahead broke that: a shared round made meanwhile was numbered above the whole block, and the
private rounds dealt after it below (found by review: a player's session time limit could be passed that way).
"""

from __future__ import annotations

from sqlalchemy import text

from twentyone.server.store import Store

# SQLite: the count starts at the largest number in use (a row inserted with one of its own counts too).
_SQLITE_COUNT = text("INSERT INTO sqlite_sequence (name, seq) SELECT 'rounds', 0 "
                     "WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'rounds')")
_SQLITE_TAKE = text("UPDATE sqlite_sequence SET seq = max(seq, (SELECT coalesce(max(id), 0) FROM rounds)) + 1 "
                    "WHERE name = 'rounds' RETURNING seq")
_POSTGRES_TAKE = text("SELECT nextval(pg_get_serial_sequence('rounds', 'id'))")


class RoundIds:
    """Round numbers for rounds not yet written, each taken from the database when asked for.

    >>> from pathlib import Path
    >>> from tempfile import TemporaryDirectory
    >>> from datetime import UTC, datetime
    >>> from twentyone.server.db import Database, migrate
    >>> with TemporaryDirectory() as folder:
    ...     url = f"sqlite:///{Path(folder) / 'ids.db'}"
    ...     migrate(url)
    ...     db = Database(url)
    ...     ids = RoundIds(Store(db, lambda: datetime.now(UTC)))
    ...     taken = [ids.take() for _ in range(3)]
    ...     db.close()
    >>> taken
    [1, 2, 3]
    """

    def __init__(self, store: Store) -> None:
        self.store = store

    def take(self) -> int:
        """A round number no round has, nor will be given by anyone else. Never called inside a transaction: on
        SQLite taking one writes, and would wait for the write lock that transaction holds."""
        with self.store.write_apart() as session:
            if self.store.db.is_sqlite:
                session.execute(_SQLITE_COUNT)
                return int(session.execute(_SQLITE_TAKE).scalar_one())
            return int(session.execute(_POSTGRES_TAKE).scalar_one())
