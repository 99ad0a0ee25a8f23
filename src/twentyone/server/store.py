"""Units of work over the database: short transactions, storage trouble as 503, idempotent requests.

Every request that changes state is one transaction. A request carrying an
``Idempotency-Key`` records its key *and its answer* in that same transaction,
so a retry after any failure either finds nothing (nothing happened: it runs
again) or finds the first answer (it happened: the answer is sent again). A
lock, a pool time-out or a lost connection is storage trouble, not a game
malfunction: the transaction rolls back, the round stays as it was, and the
caller gets :class:`~twentyone.server.context.Busy` (503 with ``Retry-After``).
No transaction here ever waits for a second connection.
"""

from __future__ import annotations

import logging
import threading
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar, cast

from sqlalchemy import Insert, Integer, Table, bindparam, func, insert, select
from sqlalchemy import exc as db_errors
from sqlalchemy.orm import Session, make_transient_to_detached

from twentyone.server.context import Busy, Caller, ServiceError, SnapshotBehind
from twentyone.server.db import Database
from twentyone.server.direct import Result, defer, defer_read, run
from twentyone.server.models import IDEMPOTENCY, Base, Round
from twentyone.server.repeats import RepeatedLines, first_line

log = logging.getLogger(__name__)
MAX_KEY = 128
KEY_MALFORMED = f"An Idempotency-Key is 1 to {MAX_KEY} printable ASCII characters."
STORED = (select(IDEMPOTENCY.c.request, IDEMPOTENCY.c.status_code, IDEMPOTENCY.c.response)
          .where(IDEMPOTENCY.c.player_id == bindparam("player_id"), IDEMPOTENCY.c.key == bindparam("key")))
SEEN = select(IDEMPOTENCY.c.player_id).where(IDEMPOTENCY.c.player_id == bindparam("player_id"),
                                             IDEMPOTENCY.c.key == bindparam("key"))
RECORD = insert(IDEMPOTENCY)  # Core (models.IDEMPOTENCY): the row is never read back in its transaction
# PostgreSQL: twins with one key (a double click, a retry while the first is in flight) queue on an advisory lock of
# the key, so that the second sees the first's answer. Every write waits for the key's lock, then looks the key up:
# the look-up's snapshot, taken after the wait, sees a twin that committed meanwhile. Both go ahead of the work's
# first statement, in its round trip (direct.defer, direct.defer_read): the wait comes before the work locks any row,
# so a twin waiting for the key holds nothing the first needs (waiting only after the work's first lock, twins at a
# bet deadlocked: one held the slip and waited for the key, the other held the key and waited for the slip).
# Core statements run as compiled once (direct.run), not text.
_KEY_LOCK = (bindparam("player", type_=Integer), bindparam("key_lock", type_=Integer))
TWINS_WAIT = select(func.pg_advisory_xact_lock(*_KEY_LOCK))


@dataclass
class _Pending:
    """The idempotent request this thread serves, until a transaction records its answer."""

    player_id: int
    key: str
    request: str
    status: int
    recorded: bool = False


_Row = TypeVar("_Row", bound=Base)
_T = TypeVar("_T")
READ_ATTEMPTS = 5  # reads of a round that moved on meanwhile (SnapshotBehind), before a 503
_INSERTS: dict[str, Insert] = {}  # INSERT ... RETURNING id by table: built once


def insert_returning_id(table: Table) -> Insert:
    """``INSERT INTO table ... RETURNING id``, built once per table: a new row's id in the statement that makes it.

    >>> from twentyone.server.models import SHOES
    >>> str(insert_returning_id(SHOES)).endswith("RETURNING shoes.id")
    True
    >>> insert_returning_id(SHOES) is insert_returning_id(SHOES)
    True
    """
    statement = _INSERTS.get(table.name)
    if statement is None:
        statement = _INSERTS[table.name] = insert(table).returning(table.c.id)
    return statement


def inserted(session: Session, row: _Row) -> _Row:
    """Insert ``row`` (a new ORM object with every column but ``id`` given, ``None`` included; ``id`` too, where it
    was taken ahead) with one Core ``INSERT``, and put it in the session as if it had been loaded: its later changes
    are written as usual.

    The unit of work's flush of one new object cost more than the statement it sends (on SQLite here
    283 us against 216 us for this, transaction included), and a deal inserts a round and a seat.
    """
    table = cast(Table, type(row).__table__)
    values = {column.key: row.__dict__[column.key] for column in table.columns if column.key != "id"}
    if row.__dict__.get("id") is not None:  # a number taken ahead (a round: server/round_ids.py)
        values["id"] = row.__dict__["id"]
    row.id = run(session, insert_returning_id(table), values).scalar_one()  # type: ignore[attr-defined]
    make_transient_to_detached(row)
    session.add(row)
    return row


class AlreadyApplied(Exception):
    """A concurrent twin of this request committed first: answer with its stored answer."""


@contextmanager
def storage_trouble_as_busy(lines: RepeatedLines) -> Iterator[None]:
    """Turn a lock, pool time-out or lost connection into :class:`Busy` (nothing was committed), logged on
    ``lines`` (:func:`_busy`)."""
    try:
        yield
    except (db_errors.OperationalError, db_errors.TimeoutError, db_errors.InterfaceError) as error:
        _busy(lines, error)
        raise Busy() from error
    except db_errors.DBAPIError as error:
        if error.connection_invalidated:
            _busy(lines, error)
            raise Busy() from error
        raise


def key_lock(player_id: int, key: str) -> dict[str, int]:
    """:data:`TWINS_WAIT`'s parameters for a player's key: the advisory lock that twins with one key queue on.

    >>> key_lock(7, "k")
    {'player': 7, 'key_lock': -2006821027}
    """
    return {"player": player_id, "key_lock": zlib.crc32(key.encode()) - 2**31}


def _check_key(session: Session, pending: _Pending, strict: bool = False) -> None:
    """Raise :class:`AlreadyApplied` if the request's key was applied already. On PostgreSQL a twin in flight is
    waited for first (without the wait it would wait on the round's or wallet's lock, then be refused: a 409 where
    the first answer is due): the key's lock and the look-up go with the work's first statement, in its round trip,
    ahead of it (``direct.defer_read``), and the look-up is judged before that statement's answer is used, and before
    anything commits. ``strict`` (an operator's wallet): both at once, before the work."""
    key = {"player_id": pending.player_id, "key": pending.key}

    def judge(rows: Result) -> None:
        if rows.first() is not None:
            raise AlreadyApplied()

    if session.get_bind().dialect.name != "postgresql":
        judge(run(session, SEEN, key))
        return
    lock = key_lock(pending.player_id, pending.key)
    if strict:
        run(session, TWINS_WAIT, lock)
        judge(run(session, SEEN, key))
    else:
        defer(session, TWINS_WAIT, lock)
        defer_read(session, SEEN, key, judge)


def _busy(lines: RepeatedLines, error: Exception) -> None:
    """One line in the log for the 503s that storage caused, what an operator needs to tell contention from faults:
    the first of each cause in full, its repeats counted in one line per window (an outage answers every request
    503, and a line per request buried the outage's start and end)."""
    cause = (error.orig if isinstance(error, db_errors.DBAPIError) else None) or error
    lines.warning(f"storage busy, answered 503: {type(cause).__name__}: {first_line(cause) if str(cause) else ''}")


def end_read(session: Session) -> None:
    """End a read with ``COMMIT`` (on PostgreSQL, where a read runs outside any transaction block, it sends nothing:
    ``direct.begin_with_first_statement``). Not a ``ROLLBACK``: on PostgreSQL, psycopg forgets every statement it has
    prepared on a connection at each ``ROLLBACK`` (and has the server deallocate them all), so with a read ending
    that way every few requests, a statement was seldom run the five times psycopg waits before preparing it, and
    PostgreSQL parsed and planned nearly every statement anew.

    Nothing is written: a read's session (``db.Database.readers``) never flushes and refuses any ``INSERT``,
    ``UPDATE`` or ``DELETE`` (:class:`~twentyone.server.direct.WriteInRead`), and its objects are let go first (as
    closing it would), so a change made to one is dropped, as the ``ROLLBACK`` dropped it.

    >>> from sqlalchemy import create_engine, event, text
    >>> engine = create_engine("sqlite://")
    >>> endings = []
    >>> event.listen(engine, "commit", lambda _connection: endings.append("COMMIT"))
    >>> session = Session(engine)
    >>> session.execute(text("SELECT 1")).scalar()
    1
    >>> end_read(session)
    >>> session.in_transaction(), endings
    (False, ['COMMIT'])
    """
    session.expunge_all()
    session.commit()


class Store:
    """The service's only door to the database."""

    def __init__(self, db: Database, clock: Callable[[], datetime], strict_twins: bool = False) -> None:
        self.db = db
        self.clock = clock
        self.strict_twins = strict_twins  # see _check_key
        self.busy_lines = RepeatedLines(log)  # the 503s storage caused; flushed at each timer tick
        self._local = threading.local()

    @contextmanager
    def read(self) -> Iterator[Session]:
        """A read: no write lock, no transaction held open after the block.

        The block's transaction ends with ``COMMIT`` (:func:`end_read`), not the ``ROLLBACK`` that closing the session
        would send; a block that raises still rolls back.
        """
        with storage_trouble_as_busy(self.busy_lines), self.db.readers() as session:
            yield session
            end_read(session)

    def answers(self) -> None:
        """Read the rounds table once, as the game's requests do (readiness): it waits where they would, behind a
        lock held on that table, and raises :class:`~twentyone.server.context.Busy` where they would fail.

        On SQLite the read is made in a write transaction, in the writers' queue: SQLite's write lock is the whole
        file's, and in WAL mode it blocks no read, so a lock held by another program (a ``BEGIN IMMEDIATE`` from the
        sqlite3 shell, a script that writes to it) left every bet and decision waiting while a plain read answered (a
        trial)."""
        if self.db.is_sqlite:
            with storage_trouble_as_busy(self.busy_lines), self.db.transaction() as session:
                session.execute(select(Round.id).limit(1)).all()
            return
        with self.read() as session:
            session.execute(select(Round.id).limit(1)).all()

    def read_anew(self, work: Callable[[Session], _T]) -> _T:
        """``work`` in a read (:meth:`read`), made again in a new read while a round it reads moved on since the
        read began (:class:`~twentyone.server.context.SnapshotBehind`), up to :data:`READ_ATTEMPTS` times; then 503
        (a round changing that fast is busy)."""
        for _ in range(READ_ATTEMPTS):
            try:
                with self.read() as session:
                    return work(session)
            except SnapshotBehind:
                continue
        raise Busy()

    @contextmanager
    def write(self) -> Iterator[Session]:
        """One write transaction; the request's key, if any, is checked first and recorded with the answer.

        An answer recorded in a transaction that does not commit is not recorded: the request's answer is then kept
        after its work (:meth:`idempotent`), as if none had been (a close of betting whose deal fails at its commit
        voids the round, and answers with it; before, a retry with its key ran the close again)."""
        pending: _Pending | None = getattr(self._local, "pending", None)
        answered = pending is None or pending.recorded
        try:
            with storage_trouble_as_busy(self.busy_lines), self.db.transaction() as session:
                if pending is not None and not pending.recorded:
                    _check_key(session, pending, self.strict_twins)
                yield session
        except BaseException:
            if pending is not None and not answered:
                pending.recorded = False
            raise

    @contextmanager
    def write_apart(self) -> Iterator[Session]:
        """A write transaction of the server's own beside the request being served (the outbox's delivery after its
        commit): its key is neither checked nor recorded there."""
        with storage_trouble_as_busy(self.busy_lines), self.db.transaction() as session:
            yield session

    def applied_before(self) -> None:
        """Raise :class:`AlreadyApplied` if the request being served was applied already (its key has an answer): a
        look-up ahead of work that acts outside the database before its first write (a close of betting's debits at
        an operator's wallet), so that a retry does not act again. Nothing once this request's answer is recorded."""
        pending: _Pending | None = getattr(self._local, "pending", None)
        if pending is not None and not pending.recorded and \
                self._stored(pending.player_id, pending.key, pending.request) is not None:
            raise AlreadyApplied()

    def answer(self, session: Session, body: dict[str, Any]) -> dict[str, Any]:
        """Record ``body`` as the answer of the idempotent request being served, in ``session``'s transaction."""
        pending: _Pending | None = getattr(self._local, "pending", None)
        if pending is not None and not pending.recorded:
            defer(session, RECORD, {"player_id": pending.player_id, "key": pending.key, "request": pending.request,
                                    "status_code": pending.status, "response": body, "created_at": self.clock()})
            pending.recorded = True
        return body

    def keep_answer(self, body: dict[str, Any]) -> None:
        """Record ``body`` as the answer of the idempotent request being served, in a transaction of its own, unless
        one of its transactions did: for work whose answer must be kept before it lets others in (a close of betting,
        before its turn ends), and for work that wrote nothing. A twin that recorded first: :class:`AlreadyApplied`."""
        pending: _Pending | None = getattr(self._local, "pending", None)
        if pending is not None and not pending.recorded:
            with self.write() as session:
                self.answer(session, body)

    def idempotent(self, caller: Caller, key: str | None, request: str, status: int,
                   work: Callable[[], dict[str, Any]]) -> tuple[int, dict[str, Any]]:
        """Run ``work`` once per (caller, key): a retry, or a concurrent twin, gets the first answer back."""
        if key is None:
            raise ServiceError(400, "Send an Idempotency-Key header with every request that changes state.")
        if not 1 <= len(key) <= MAX_KEY or not key.isascii() or not key.isprintable():
            raise ServiceError(400, KEY_MALFORMED)
        # No look-up before the work: its first write transaction checks the key under the write lock (a
        # request seen before raises AlreadyApplied there), which spares every new request a connection
        # and a query. A request that writes nothing is looked up below.
        self._local.pending = pending = _Pending(caller.id, key, request, status)
        try:
            body = work()
            if not pending.recorded:  # the work wrote nothing: keep its answer all the same, for a retry
                stored = self._stored(caller.id, key, request)
                if stored is not None:
                    return stored
                self.keep_answer(body)
        except (AlreadyApplied, db_errors.IntegrityError) as error:  # a twin's, or a retry's: the first answer
            stored = self._stored(caller.id, key, request)
            if stored is None:
                if isinstance(error, AlreadyApplied):  # pragma: no cover - a committed key cannot vanish
                    raise Busy() from None
                raise
            return stored
        except ServiceError:
            # Refused before its first write: a retry of a request applied earlier still gets its first answer.
            stored = self._stored(caller.id, key, request) if not pending.recorded else None
            if stored is not None:
                return stored
            raise
        finally:
            self._local.pending = None
        return status, body

    def _stored(self, player_id: int, key: str, request: str) -> tuple[int, dict[str, Any]] | None:
        # A plain connection and a prepared statement (no ORM session): a read, outside any transaction block.
        with storage_trouble_as_busy(self.busy_lines), self.db.reading.connect() as connection:
            row = connection.execute(STORED, {"player_id": player_id, "key": key}).first()
            connection.commit()  # not a ROLLBACK: see end_read
        if row is None:
            return None
        if row.request != request:
            raise ServiceError(422, "This Idempotency-Key was already used for a different request.")
        return row.status_code, row.response
