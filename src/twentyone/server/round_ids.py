"""Round numbers taken before their rows are written: a debit at an operator's wallet names its round, and is sent
before the transaction that writes the round begins (on SQLite that transaction holds the one write lock of the
whole database, which a call over the network must not hold).

A number taken is never given to another round, even when its deal does not commit (its debit rolled back names a
round that never was, not some later one). On SQLite the rounds table counts with ``AUTOINCREMENT`` (migration 0011),
so a row inserted without a number gets one above every number taken; a block is taken by moving that count on, in
a short transaction of its own. On PostgreSQL the numbers would come from the rounds' own sequence, which never gives
one twice; the server sends its debits ahead on SQLite alone (``Rounds.debits_ahead`` says why).
"""

from __future__ import annotations

import os
import threading
from collections import deque

from sqlalchemy import text

from twentyone.server.store import Store

BLOCK = 16  # numbers taken at once: one short transaction (SQLite: one sync to disk) per this many deals
# SQLite: the count starts at the largest number in use (a row inserted with one of its own counts too).
_SQLITE_COUNT = text("INSERT INTO sqlite_sequence (name, seq) SELECT 'rounds', 0 "
                     "WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'rounds')")
_SQLITE_TAKE = text("UPDATE sqlite_sequence SET seq = max(seq, (SELECT coalesce(max(id), 0) FROM rounds)) + :n "
                    "WHERE name = 'rounds' RETURNING seq")
_POSTGRES_TAKE = text("SELECT nextval(pg_get_serial_sequence('rounds', 'id')) FROM generate_series(1, :n)")


class RoundIds:
    """Round numbers for this process, taken from the database a block at a time.

    >>> from pathlib import Path
    >>> from tempfile import TemporaryDirectory
    >>> from datetime import UTC, datetime
    >>> from twentyone.server.db import Database, migrate
    >>> with TemporaryDirectory() as folder:
    ...     url = f"sqlite:///{Path(folder) / 'ids.db'}"
    ...     migrate(url)
    ...     db = Database(url)
    ...     ids = RoundIds(Store(db, lambda: datetime.now(UTC)), block=2)
    ...     taken = [ids.take() for _ in range(3)]
    ...     db.close()
    >>> taken
    [1, 2, 3]
    """

    def __init__(self, store: Store, block: int = BLOCK) -> None:
        self.store = store
        self.block = block
        self._ready: deque[int] = deque()
        self._lock = threading.Lock()
        self._pid = os.getpid()  # a forked child has a copy of its parent's block: its numbers are the parent's

    def take(self) -> int:
        """A round number no round has, nor will be given by anyone else. Never called inside a transaction: on
        SQLite taking a block writes, and would wait for the write lock that transaction holds."""
        with self._lock:
            if self._pid != os.getpid():
                self._ready.clear()
                self._pid = os.getpid()
            if not self._ready:
                self._ready.extend(self._take_block())
            return self._ready.popleft()

    def _take_block(self) -> list[int]:
        with self.store.write_apart() as session:
            if self.store.db.is_sqlite:
                session.execute(_SQLITE_COUNT)
                last = session.execute(_SQLITE_TAKE, {"n": self.block}).scalar_one()
                return list(range(last - self.block + 1, last + 1))
            return list(session.execute(_POSTGRES_TAKE, {"n": self.block}).scalars())
