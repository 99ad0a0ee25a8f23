"""Alembic environment: migrations run at server start against the configured database."""

from __future__ import annotations

from typing import Any

from alembic import context
from sqlalchemy import Connection, Engine, create_engine, event

from twentyone.server.db import tcp_keepalives
from twentyone.server.models import Base

config = context.config
target_metadata = Base.metadata


def transactional_ddl(engine: Engine) -> None:
    """Make each migration on SQLite one transaction, its DDL included, as it is on PostgreSQL.

    Python's ``sqlite3`` opens a transaction only before an INSERT, UPDATE or DELETE, so a
    ``CREATE INDEX`` or ``DROP INDEX`` run before one committed on its own: a start that
    crashed half-way through a migration left part of it behind, with the revision not
    recorded, and the next start tried it again over what was left. Here the driver opens
    no transaction of its own and SQLAlchemy's sends ``BEGIN IMMEDIATE`` (SQLAlchemy's
    recipe for pysqlite); Alembic begins one per migration. IMMEDIATE, as the server's
    writers do: a deferred transaction that read the schema and then met another
    connection's commit failed at its first write ("database is locked") without waiting
    for the busy timeout (an admin command of a new version beside a running server).
    """
    @event.listens_for(engine, "connect")
    def _driver_opens_none(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None

    @event.listens_for(engine, "begin")
    def _begin(connection: Connection) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE")


def wal_from_the_first_connection(engine: Engine) -> None:
    """Put a SQLite database in WAL mode on the migration's connection, the first of every start.

    The server's connections ask for WAL as each opens (``db.make_engine``). A new database was made here in
    rollback mode, so the first connections of a start asked together, and the switch needs the file to itself: two
    connections, each holding a read lock and waiting for the other's, are a deadlock that SQLite answers at once with
    "database is locked", without its busy timeout (four engines opened together on a new database: 3 times in 100,
    found by a test that starts four). WAL stays in the file, so every connection after this one finds it set.
    """
    @event.listens_for(engine, "connect")
    def _wal(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.execute("PRAGMA journal_mode=WAL")


def run_migrations_online() -> None:
    url = config.get_main_option("sqlalchemy.url")
    assert url is not None
    engine = create_engine(url, connect_args=tcp_keepalives(url))  # a silent database ends the start, not hangs it
    if engine.dialect.name == "sqlite":
        wal_from_the_first_connection(engine)
        transactional_ddl(engine)
    with engine.connect() as connection:
        context.configure(connection=connection, target_metadata=target_metadata,
                          render_as_batch=url.startswith("sqlite"))
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


run_migrations_online()
