"""Engine and sessions: SQLite (WAL, one file in the data directory) by default, PostgreSQL for scale."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import NullPool


def make_engine(url: str) -> Engine:
    """An engine for ``url``; SQLite gets WAL, a busy timeout and serialised write transactions."""
    if url.startswith("sqlite"):
        path = url.split("///", 1)[-1]
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

        @event.listens_for(engine, "connect")
        def _pragmas(connection, _record):  # type: ignore[no-untyped-def]
            cursor = connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=FULL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.close()
            connection.isolation_level = None  # let BEGIN below decide the locking

        @event.listens_for(engine, "begin")
        def _begin(connection):  # type: ignore[no-untyped-def]
            # A writing transaction takes the write lock at its start (IMMEDIATE), so two wallet
            # transactions never interleave; a reading one starts deferred and never waits in WAL mode.
            writing = connection.get_execution_options().get("writing", False)
            connection.exec_driver_sql("BEGIN IMMEDIATE" if writing else "BEGIN")

        return engine
    return create_engine(url, pool_pre_ping=True)


MIGRATION_LOCK = 0x7477656E74796F6E  # advisory lock key ("twentyon"): one process migrates at a time


def migrate(url: str) -> None:
    """Bring the database schema up to date (run at every start).

    On PostgreSQL, several processes may start at once: an advisory lock lets
    one migrate while the others wait, then find the schema at head.
    """
    config = Config()
    config.set_main_option("script_location", str(Path(__file__).parent / "migrations"))
    config.set_main_option("sqlalchemy.url", url)
    if url.startswith("sqlite"):
        path = url.split("///", 1)[-1]
        if path and path != ":memory:":  # a new data directory (the token came from the environment)
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        command.upgrade(config, "head")
        return
    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as connection:
            connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": MIGRATION_LOCK})
            try:
                command.upgrade(config, "head")
            finally:
                connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": MIGRATION_LOCK})
    finally:
        engine.dispose()


class Database:
    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = make_engine(url)
        self.sessions = sessionmaker(self.engine, expire_on_commit=False)
        self._writers = sessionmaker(self.engine.execution_options(writing=True), expire_on_commit=False)
        self.is_sqlite = url.startswith("sqlite")

    @contextmanager
    def transaction(self) -> Iterator[Session]:
        """One unit of work: committed when the block ends, rolled back if it raises."""
        with self._writers() as session, session.begin():
            yield session
