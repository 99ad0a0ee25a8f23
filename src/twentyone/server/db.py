"""Engine and sessions: SQLite (WAL, one file in the data directory) by default, PostgreSQL for scale.

Pools are sized from the threads that use them: every request runs in one of
anyio's worker threads (:func:`worker_threads`: 8 on SQLite; 10 on PostgreSQL, 40
with an operator's wallet) and holds at most one connection at a time, so a pool of
that size never makes a request wait for a connection.

SQLite has one writer at a time. Its own busy handler makes a waiting writer
sleep and poll (1, 2, 5 ... 100 ms), which leaves the lock idle between
transactions; so this process queues its writers on a lock of its own, and
SQLite's handler only arbitrates between processes. ``synchronous=NORMAL`` in
WAL mode makes a commit durable against a crash of the process (the commit is in
the WAL file before the call returns) but not against a power loss or an
operating-system crash, which may lose the last commits (never corrupt the
database): the WAL is synced to disk at each checkpoint rather than at each commit.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from pydantic_core import to_json
from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy import exc as db_errors
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import NullPool

from twentyone.server.direct import (
    READING,
    WriteInRead,
    begin_with_first_statement,
    commit_held,
    hold_writes,
    run_driver_sql,
)

# At most this many requests of one process hold a connection at once. anyio's default is 40, but a
# PostgreSQL request is mostly Python (the GIL's) and its statements are short: past a handful, threads
# only contend for the interpreter, and each connection is one more PostgreSQL backend process
# competing for the same cores. Two processes at saturation on the 2-core machine: 40 threads
# 232-253 requests/s, 16 threads 279, 10 threads 281-282, 5 threads 288 (docs/server.md, "Load").
THREADS = 10
# With an operator's wallet, requests also wait on its HTTP calls (debits inside the deal, credits
# delivered after each commit): a thread waiting on the network holds no GIL, so more of them wait at once.
REMOTE_WALLET_THREADS = 40
# SQLite has one writer, so threads past a few only queue for its lock, and the runnable ones share
# the GIL with the one holding it: under 200 players at a human pace, 40 threads left the writer
# waiting its turn for the interpreter (decision p99 70-100 ms) where 6 kept it under 50 ms.
SQLITE_THREADS = 8
SPARE = 4  # connections beyond that: the timer tick, the checkpoints and admin work in the same process
MMAP_BYTES = 256 * 1024 * 1024
CHECKPOINT_EVERY = 0.5  # seconds between WAL checkpoints off the commit path (Database.start_checkpoints)
WRITE_WAIT = 20.0  # seconds a writer waits for this process's SQLite write lock before the request is refused (503)


def worker_threads(url: str, remote_wallet: bool = False) -> int:
    """How many requests run at once in worker threads (the server sets anyio's limiter to this).

    >>> worker_threads("sqlite:///x.db"), worker_threads("postgresql://h/db"), worker_threads("postgresql://h/db", True)
    (8, 10, 40)
    """
    if url.startswith("sqlite"):
        return SQLITE_THREADS  # one writer at a time, whatever the wallet: more threads would only queue
    return REMOTE_WALLET_THREADS if remote_wallet else THREADS


def json_text(value: Any) -> str:
    """A JSON column's value as stored: pydantic-core's encoder (Rust), about five times the standard library's
    speed on a round view, and compact. Every decision stores its answer (1-20 KB) for its Idempotency-Key, and
    slips and seats are JSON too. For what the server stores (strings, ints, floats, booleans, None, lists, and
    dicts with string or int keys) the text reads back as the standard encoder's did: without the blanks after
    ``,`` and ``:``, and with non-ASCII characters as they are rather than escaped. Unlike the standard encoder it
    does not refuse other types (a datetime is written as its ISO text, a set as a list, a None key as "None"):
    what the server stores is built of the plain types above, its views' times already ISO text (``context.iso``).

    >>> json_text({"id": 7, "cards": ["AS", "KD"], "soft": True, "none": None, 3: "three"})
    '{"id":7,"cards":["AS","KD"],"soft":true,"none":null,"3":"three"}'
    """
    return to_json(value).decode()


def make_engine(url: str, threads: int | None = None, durable: bool = False) -> Engine:
    """An engine for ``url``; SQLite gets WAL, a busy timeout and serialised write transactions.

    ``threads``: the request threads that share it (default :func:`worker_threads`), one connection each.
    ``durable``: SQLite syncs every commit (``synchronous=FULL``), so that a power loss cannot take back a commit
    that returned: with an operator's wallet, whose debits outside the database are settled by what committed
    (``journal.py``).
    """
    pool: dict[str, Any] = {"pool_size": threads or worker_threads(url), "max_overflow": SPARE}
    if url.startswith("sqlite"):
        path = url.split("///", 1)[-1]
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            # The connection returned last is the one taken next (LIFO; SQLAlchemy's default is FIFO). SQLite keeps a
            # connection's page cache from one transaction to the next only while no other connection has written in
            # between, and writers here take turns: the last writer's connection is the one whose cache is still
            # good. Saturation, 200 players, pinned, runs alternated: 600, 600, 604 requests/s FIFO; 650, 671, 647 LIFO.
            pool["pool_use_lifo"] = True
        else:
            pool = {}  # an in-memory database keeps one connection (SingletonThreadPool / StaticPool)
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30}, json_serializer=json_text,
                               **pool)

        @event.listens_for(engine, "connect")
        def _pragmas(connection, _record):  # type: ignore[no-untyped-def]
            cursor = connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            # In WAL, NORMAL: a process crash loses nothing, a power loss the last commits (module docstring).
            cursor.execute(f"PRAGMA synchronous={'FULL' if durable else 'NORMAL'}")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA temp_store=MEMORY")
            cursor.execute(f"PRAGMA mmap_size={MMAP_BYTES}")  # pages read from the mapping, not a read() each
            cursor.close()
            connection.isolation_level = None  # let BEGIN below decide the locking

        @event.listens_for(engine, "begin")
        def _begin(connection):  # type: ignore[no-untyped-def]
            # A writing transaction takes the write lock at its start (IMMEDIATE), so two wallet
            # transactions never interleave; a reading one starts deferred and never waits in WAL mode.
            writing = connection.get_execution_options().get("writing", False)
            # On sqlite3's own connection (direct.run_driver_sql): through exec_driver_sql a transaction of one
            # statement took 147 us, and 125 us this way (pinned; sqlite3 alone: 4 us for BEGIN, a SELECT and COMMIT).
            run_driver_sql(connection, "BEGIN IMMEDIATE" if writing else "BEGIN")

        return engine
    # No ping at each checkout: it was one more round trip (about 80 us here, half of it this process's CPU) on
    # every request, to catch a connection PostgreSQL ended (a restart, a failover). Without it the first
    # request on such a connection fails, as storage trouble: 503 with Retry-After, nothing changed, and
    # SQLAlchemy then discards every connection of the pool made before it, so the others reconnect.
    # psycopg begins no transaction itself (AUTOCOMMIT): each one's BEGIN goes with its first statement, where it
    # was a round trip of its own (direct.begin_with_first_statement); every statement still runs in a transaction.
    engine = create_engine(url, pool_pre_ping=False, json_serializer=json_text, isolation_level="AUTOCOMMIT",
                           connect_args=tcp_keepalives(url), **pool)

    @event.listens_for(engine, "connect")
    def _lock_wait(connection, _record):  # type: ignore[no-untyped-def]
        with connection.cursor() as cursor:  # psycopg's own connection, before SQLAlchemy sets its autocommit
            cursor.execute(SET_LOCK_WAIT, {"wait": LOCK_WAIT})
        connection.commit()  # the setting is the session's (not local to this transaction): it stays

    begin_with_first_statement(engine)
    return engine


# A connection to PostgreSQL whose other end is gone without a word (its host lost, a network cut, a failover's
# old address) is found out by TCP itself: probes after 10 s of silence, every 5 s, and the connection ended once
# probes or data stay unanswered 30 s (Linux: the user timeout, where set, stands for the probes' count). Without
# these Linux waits about two hours for an idle connection, and about 15 minutes for one whose statement went out:
# the timers' connection stalled every table's timers and closes of betting so long, and a pooled one its request.
# (Ignored for a Unix socket, which cannot half-close; nothing for SQLite.)
TCP_KEEPALIVES = {"keepalives": 1, "keepalives_idle": 10, "keepalives_interval": 5, "keepalives_count": 3,
                  "tcp_user_timeout": 30_000}


def tcp_keepalives(url: str) -> dict[str, Any]:
    """:data:`TCP_KEEPALIVES` for a connection to ``url``, but for those its own query sets (an operator's choice).

    >>> tcp_keepalives("postgresql+psycopg://db/twentyone")["tcp_user_timeout"]
    30000
    >>> sorted(tcp_keepalives("postgresql+psycopg://db/twentyone?keepalives_idle=60&tcp_user_timeout=0"))
    ['keepalives', 'keepalives_count', 'keepalives_interval']
    >>> tcp_keepalives("sqlite:///twentyone.db")
    {}
    """
    parsed = make_url(url)
    if parsed.get_backend_name() != "postgresql":
        return {}
    return {name: value for name, value in TCP_KEEPALIVES.items() if name not in parsed.query}


# How long a request's statement waits for a lock before PostgreSQL cancels it: the request is then a 503 with
# Retry-After that changed nothing (store.storage_trouble_as_busy), as on SQLite after WRITE_WAIT. Without it a lock
# held elsewhere (an operator's psql session, a migration run by hand) made every request wait without end, /health
# still 200 (an operator's trial). Set on each new pooled connection, and only where nothing else set it (the URL's
# ``options``, PGOPTIONS, ``ALTER ROLE/DATABASE ... SET``, postgresql.conf: ``pg_settings.source`` is ``default``),
# so that an operator's value, 0 included, stands; by a statement, not the ``options`` startup parameter, which
# connection poolers such as PgBouncer refuse.
LOCK_WAIT = "20s"
SET_LOCK_WAIT = ("SELECT set_config('lock_timeout', %(wait)s, false) FROM pg_settings "
                 "WHERE name = 'lock_timeout' AND source = 'default'")


MIGRATION_LOCK = 0x7477656E74796F6E  # advisory lock key ("twentyon"): one process migrates at a time
MIGRATION_POLL = 0.2  # seconds between tries for it


MIGRATIONS = Path(__file__).parent / "migrations"  # Alembic's scripts


def migrate(url: str) -> None:
    """Bring the database schema up to date (run at every start).

    On PostgreSQL, several processes may start at once: an advisory lock lets
    one migrate while the others wait, then find the schema at head.
    """
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    # Alembic's options are configparser values, where % starts an interpolation: a URL's own (an escaped password,
    # ?host=%2Ftmp for a Unix socket) is doubled to stay itself.
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    if url.startswith("sqlite"):
        path = url.split("///", 1)[-1]
        if path and path != ":memory:":  # a new data directory (the token came from the environment)
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        command.upgrade(config, "head")
        return
    # A migration that builds an index CONCURRENTLY (0009) waits for every transaction older than itself to end.
    # So the lock is held and waited for outside any transaction: AUTOCOMMIT, and a try every MIGRATION_POLL
    # seconds rather than pg_advisory_lock, whose wait is a statement that keeps its snapshot: the process
    # migrating would wait for the waiters, and they for it, for ever.
    engine = create_engine(url, poolclass=NullPool, isolation_level="AUTOCOMMIT", connect_args=tcp_keepalives(url))
    try:
        with engine.connect() as connection:
            while not connection.execute(text("SELECT pg_try_advisory_lock(:key)"), {"key": MIGRATION_LOCK}).scalar():
                time.sleep(MIGRATION_POLL)
            try:
                command.upgrade(config, "head")
            finally:
                connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": MIGRATION_LOCK})
    finally:
        engine.dispose()


def _refuse_flush(_session: Session, _context: Any, _instances: Any) -> None:
    raise WriteInRead("A read may not flush changes to the database.")


def _refuse_writes(state: Any) -> None:  # an ORMExecuteState: every statement a read's session executes
    if state.is_insert or state.is_update or state.is_delete:
        raise WriteInRead.of(state.statement)


class Database:
    def __init__(self, url: str, threads: int | None = None, durable: bool = False) -> None:
        self.url = url
        self.engine = make_engine(url, threads, durable)
        self.sessions = sessionmaker(self.engine, expire_on_commit=False)
        # Reads (store.Store.read) never flush, and refuse to write: they end with COMMIT (store.end_read). On
        # PostgreSQL they run outside any transaction block (direct.begin_with_first_statement: "reading").
        self.reading = self.engine.execution_options(reading=True)
        self.readers = sessionmaker(self.reading, expire_on_commit=False, autoflush=False, info={READING: True})
        event.listen(self.readers, "before_flush", _refuse_flush)
        event.listen(self.readers, "do_orm_execute", _refuse_writes)
        self._writers = sessionmaker(self.engine.execution_options(writing=True), expire_on_commit=False)
        hold_writes(self._writers)  # PostgreSQL: a transaction's last writes go with its COMMIT (direct.defer)
        self.is_sqlite = url.startswith("sqlite")
        # SQLite writers of this process queue here rather than in SQLite's sleeping busy handler.
        self._write_lock = threading.RLock() if self.is_sqlite else None
        self._checkpoints: threading.Thread | None = None
        self._stopping = threading.Event()

    def start_checkpoints(self, every: float = CHECKPOINT_EVERY) -> None:
        """SQLite: copy the WAL into the database from a thread of its own, every ``every`` seconds.

        Left to itself SQLite checkpoints inside whichever commit finds the WAL past 1,000 pages,
        and the checkpoint's fsync then holds that player's request, and every writer queued behind
        it, for as long as the disk takes (the tail of the latency under load). A PASSIVE checkpoint
        here takes no write lock, so commits go on meanwhile, and the WAL stays short enough that
        the commit path rarely reaches SQLite's own threshold.
        """
        if not self.is_sqlite or self._checkpoints is not None or ":memory:" in self.url:
            return

        def run() -> None:
            while not self._stopping.wait(every):
                try:
                    with self.engine.connect() as connection:
                        connection.exec_driver_sql("PRAGMA wal_checkpoint(PASSIVE)")
                except db_errors.DBAPIError:  # busy or closing: the next turn, or SQLite's own, will do it
                    continue

        self._checkpoints = threading.Thread(target=run, name="sqlite-checkpoints", daemon=True)
        self._checkpoints.start()

    def close(self) -> None:
        """Stop the checkpoints and close every pooled connection."""
        self._stopping.set()
        if self._checkpoints is not None:
            self._checkpoints.join(timeout=5)
            self._checkpoints = None
        self.engine.dispose()

    @contextmanager
    def transaction(self) -> Iterator[Session]:
        """One unit of work: committed when the block ends, rolled back if it raises."""
        if self._write_lock is None:
            with self._writers() as session, session.begin():
                yield session
                commit_held(session)
            return
        if not self._write_lock.acquire(timeout=WRITE_WAIT):
            raise db_errors.TimeoutError(f"no turn to write in {WRITE_WAIT:.0f} s")
        try:
            with self._writers() as session, session.begin():
                yield session
                commit_held(session)
        finally:
            self._write_lock.release()
