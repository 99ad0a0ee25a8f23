"""The storage path under load: checkpoints off the commit path, request threads and their connections, account ids."""

from __future__ import annotations

import time
from pathlib import Path

from sqlalchemy import event, text

from twentyone.server.db import SQLITE_THREADS, THREADS, Database, migrate, worker_threads


def test_checkpoints_run_in_their_own_thread_and_stop_with_the_database(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'server.db'}"
    migrate(url)
    db = Database(url)
    seen: list[str] = []

    @event.listens_for(db.engine, "before_cursor_execute")
    def record(_conn, _cursor, statement, *_args):  # type: ignore[no-untyped-def]
        if "wal_checkpoint" in statement:
            seen.append(statement)

    db.start_checkpoints(every=0.02)
    with db.transaction() as session:
        session.execute(text("INSERT INTO table_configs (id, spec, created_at) VALUES ('t', '{}', '2026-01-01')"))
    deadline = time.monotonic() + 5
    while not seen and time.monotonic() < deadline:
        time.sleep(0.01)
    assert seen and seen[0] == "PRAGMA wal_checkpoint(PASSIVE)"  # passive: it never holds up a writer
    db.close()
    assert db._checkpoints is None
    count = len(seen)
    time.sleep(0.1)
    assert len(seen) == count  # stopped


def test_sqlite_runs_fewer_request_threads_and_pools_a_connection_for_each(tmp_path: Path) -> None:
    assert worker_threads("sqlite:///x.db") == SQLITE_THREADS < THREADS == worker_threads("postgresql://h/db")
    db = Database(f"sqlite:///{tmp_path / 'server.db'}")
    assert db.engine.pool.size() == SQLITE_THREADS  # type: ignore[attr-defined]
    db.close()


def test_an_account_id_is_remembered_only_once_its_account_is_committed(tmp_path: Path) -> None:
    from sqlalchemy import select

    from twentyone.server.models import Account
    from twentyone.server.wallet import AccountIds

    url = f"sqlite:///{tmp_path / 'server.db'}"
    migrate(url)
    db = Database(url)
    ids = AccountIds()
    try:
        with db.transaction() as session:
            ids.of(session, "player:7", "USD")  # created by this transaction, which then fails
            raise RuntimeError("rolled back")
    except RuntimeError:
        pass
    with db.transaction() as session:
        created = ids.of(session, "player:7", "USD")  # not the id of the row that was rolled back
    with db.sessions() as session:
        assert session.scalar(select(Account.id).where(Account.owner == "player:7")) == created
    with db.transaction() as session:
        assert ids.of(session, "player:7", "USD") == created  # seen committed: remembered from now on
        session.execute(text("UPDATE accounts SET owner = 'moved' WHERE owner = 'player:7'"))
    with db.transaction() as session:
        assert ids.of(session, "player:7", "USD") == created  # from memory, without asking the database
    db.close()
