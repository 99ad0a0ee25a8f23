"""The request path's direct statements (server/direct.py): the driver's cursor, read and raised as SQLAlchemy would."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from integrity import ledger_totals
from server_helpers import Client
from sqlalchemy import Executable, event
from sqlalchemy import exc as db_errors
from test_faults import STACK  # classic: hit, hit, stand, and the dealer busts

from twentyone.server import direct
from twentyone.server.db import Database, migrate
from twentyone.server.live import ACTIONS
from twentyone.server.models import IDEMPOTENCY, Round
from twentyone.server.rounds import PLAYER, SEATS_TAKEN
from twentyone.server.service import GameService
from twentyone.server.store import RECORD, SEEN
from twentyone.server.tables import REVEALED, SLIP
from twentyone.server.views import SEATS_OF
from twentyone.server.wallet import BALANCE


def sqlite_only(service: GameService) -> None:
    if not service.db.is_sqlite:
        pytest.skip("the fault is made with sqlite3's own classes")


def played_round(service: GameService, guest: Client) -> dict[str, Any]:
    service.stacked.append(STACK)
    guest.bet("classic", 500)
    round_id = guest.post("/tables/classic/deal").json()["id"]
    for action in ("hit", "hit", "stand"):
        settled = guest.act(round_id, action).json()
    assert settled["status"] == "settled"
    return settled


def test_direct_statements_read_what_sqlalchemy_reads(service: GameService, guest: Client) -> None:
    """JSON (bets, limits), datetimes, booleans and counts, compared row by row with session.execute."""
    settled = played_round(service, guest)
    player_id = guest.player_id()
    with service.db.sessions() as session:
        shoe_id = session.get(Round, settled["id"]).shoe_id  # type: ignore[union-attr]
    queries: list[tuple[Executable, dict[str, Any]]] = [
        (SLIP, {"player_id": player_id, "table_id": "classic"}),
        (REVEALED, {"shoe_id": shoe_id}),
        (SEATS_OF, {"round_id": settled["id"]}),
        (SEATS_TAKEN, {"round_id": settled["id"]}),
        (ACTIONS, {"round_id": settled["id"]}),
        (BALANCE, {"owner": f"player:{player_id}", "currency": "USD"}),
        (PLAYER, {"player_id": player_id}),
    ]
    with service.db.sessions() as session:
        for query, params in queries:
            ours = direct.run(session, query, params).all()
            theirs = session.execute(query, params).all()
            assert ours and ours == [tuple(row) for row in theirs], query
            assert [row._asdict() for row in ours] == [row._asdict() for row in theirs]  # names and types alike
        revealed = direct.run(session, REVEALED, queries[1][1]).one()
        assert revealed.finished is True and isinstance(revealed.cards, str)  # a boolean (SQLite's is 1)
        slip = direct.run(session, SLIP, queries[0][1]).one()
        assert isinstance(slip.bets, dict) and slip.updated_at.year >= 2026  # JSON and a datetime, parsed


def test_a_listener_on_the_engine_sees_every_statement(service: GameService, guest: Client) -> None:
    """Direct statements skip SQLAlchemy's statement event; a listener (a test, a benchmark) gets them all back,
    from the next transaction on: whether anyone watches is asked once a transaction, as SQLAlchemy decides its
    own echo once a connection."""
    seen: list[str] = []

    def note(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        seen.append(statement)

    params = {"owner": "house", "currency": "USD"}
    with service.db.sessions() as session:
        assert direct.run(session, BALANCE, params).all() == session.execute(BALANCE, params).all()
        assert len(seen) == 0
        event.listen(service.db.engine, "before_cursor_execute", note)
        try:
            direct.run(session, BALANCE, params)  # this transaction was not watched when it began
            assert seen == []
            session.rollback()
            direct.run(session, BALANCE, params)  # the next one is
        finally:
            event.remove(service.db.engine, "before_cursor_execute", note)
    # SQLite's BEGIN too (db.make_engine sends it, as direct.run_driver_sql): PostgreSQL's is psycopg's own.
    begun = ["BEGIN"] if service.db.is_sqlite else []
    assert [statement.split()[0] for statement in seen] == [*begun, "SELECT"]
    assert seen[-1].startswith("SELECT accounts.balance")
    with service.db.sessions() as session:
        direct.run(session, BALANCE, params)
    assert len(seen) == len(begun) + 1  # and once the listener is gone, the statements run direct again


def test_pending_orm_changes_are_flushed_first_unless_autoflush_is_off(service: GameService, guest: Client) -> None:
    settled = played_round(service, guest)
    with service.db.transaction() as session:
        seat_query = {"round_id": settled["id"]}
        round_row = session.get(Round, settled["id"])
        assert round_row is not None
        with session.no_autoflush:
            round_row.void_reason = "changed"
            assert direct.run(session, SEATS_TAKEN, seat_query).one() == (1, 1)
            assert session.dirty  # not flushed: autoflush is off, as in session.execute
        direct.run(session, SEATS_TAKEN, seat_query)
        assert not session.dirty  # flushed first, as session.execute does
        session.rollback()


def test_a_twins_key_is_an_integrity_error_and_a_busy_database_an_operational_one(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'server.db'}"
    migrate(url)
    db = Database(url)
    with db.sessions() as session:
        session.execute(IDEMPOTENCY.delete())
    row = {"player_id": 1, "key": "k", "request": "r", "status_code": 200, "response": {"a": None},
           "created_at": datetime(2026, 1, 1, tzinfo=UTC)}
    with db.transaction() as session:
        direct.run(session, RECORD, row)
        assert direct.run(session, SEEN, {"player_id": 1, "key": "k"}).one() == (1,)
        # JSON's None is 'null' (SQLAlchemy's bind processor ran), not SQL NULL.
        assert session.connection().exec_driver_sql("SELECT response FROM idempotency").scalar() == '{"a":null}'
        with pytest.raises(db_errors.IntegrityError):
            direct.run(session, RECORD, row)
        session.rollback()
    with db.sessions() as session:
        connection = session.connection().connection.driver_connection
        connection.set_progress_handler(lambda: 1, 1)  # interrupts every statement at its first step
        with pytest.raises(db_errors.OperationalError, match="interrupted"):
            direct.run(session, SEEN, {"player_id": 1, "key": "k"})
        connection.set_progress_handler(None, 0)
    db.close()


def test_statements_that_cannot_run_as_compiled_go_through_sqlalchemy(service: GameService, guest: Client) -> None:
    """ORM entities, an IN of a list given at execution, Python-side column defaults, values computed at each
    execution and text: SQLAlchemy loads, renders and fills those, so run() hands them to it."""
    from sqlalchemy import bindparam, insert, select, text

    from twentyone.server.models import SHOES
    from twentyone.server.models import Shoe as ShoeRow
    from twentyone.server.wallet import BALANCES

    played_round(service, guest)
    player_id = guest.player_id()
    params = {"owners": ["house", f"player:{player_id}"], "currency": "USD"}
    with service.db.transaction() as session:
        assert sorted(direct.run(session, BALANCES, params).all()) == sorted(session.execute(BALANCES, params).all())
        shoes = select(ShoeRow).where(ShoeRow.player_id == bindparam("player_id"))
        shoe = direct.run(session, shoes, {"player_id": player_id}).first()
        assert isinstance(shoe[0], ShoeRow)  # an ORM object, as session.execute gives, not its columns
        # position and finished left to their Python-side defaults (0, False), which SQLAlchemy fills in.
        partial = insert(SHOES).returning(SHOES.c.position, SHOES.c.finished)
        row = {"table_id": "classic", "player_id": None, "cards": "2S", "salt": "s", "commitment": "c",
               "cut_card": None, "created_at": datetime(2026, 1, 1, tzinfo=UTC)}
        assert tuple(direct.run(session, partial, row).one()) == (0, False)
        counter = iter(range(10))
        computed = select(bindparam("n", callable_=lambda: next(counter)))
        assert [direct.run(session, computed, {}).scalar() for _ in range(3)] == [0, 1, 2]
        assert direct.run(session, text("SELECT 1 + :n"), {"n": 1}).scalar() == 2
        session.rollback()


def test_echo_and_listeners_on_the_connection_take_sqlalchemys_path(service: GameService,
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    """An operator who turns on the engine's echo sees every statement in the log, direct ones included."""
    seen: list[str] = []
    params = {"owner": "house", "currency": "USD"}
    with service.db.sessions() as session:
        connection = session.connection()
        event.listen(connection, "after_cursor_execute", lambda *args: seen.append(args[2]))
        direct.run(session, BALANCE, params)
    assert len(seen) == 1
    service.db.engine.echo = True
    try:
        with caplog.at_level("INFO", "sqlalchemy.engine"), service.db.sessions() as session:
            direct.run(session, BALANCE, params)
    finally:
        service.db.engine.echo = False
    assert any(record.getMessage().startswith("SELECT accounts.balance") for record in caplog.records)
    caplog.clear()
    # The usual way to log SQL in production: the logger's level, with echo left unset.
    with caplog.at_level("INFO", "sqlalchemy.engine"), service.db.sessions() as session:
        direct.run(session, BALANCE, params)
    assert any(record.getMessage().startswith("SELECT accounts.balance") for record in caplog.records)


def test_an_in_memory_sqlite_database_still_has_its_one_connection() -> None:
    """The pool's LIFO order is for a file's pool of connections; an in-memory database keeps a single one."""
    from twentyone.server.db import make_engine

    engine = make_engine("sqlite:///:memory:")
    with engine.connect() as connection:
        assert connection.exec_driver_sql("SELECT 1").scalar() == 1
    engine.dispose()


class _Faulty(sqlite3.Connection):
    """A connection whose cursors refuse the next statement starting with ``refuse`` as a locked database would."""

    refuse: str | None = None

    def cursor(self, factory: Any = None) -> sqlite3.Cursor:  # type: ignore[override]
        return super().cursor(_FaultyCursor)


class _FaultyCursor(sqlite3.Cursor):
    def execute(self, sql: str, parameters: Any = ()) -> sqlite3.Cursor:  # type: ignore[override]
        if _Faulty.refuse is not None and sql.startswith(_Faulty.refuse):
            _Faulty.refuse = None
            raise sqlite3.OperationalError("database is locked")
        return super().execute(sql, parameters)


def test_a_locked_database_in_a_direct_statement_is_503_and_changes_nothing(
        service: GameService, guest: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    """A decision whose log row (a direct statement, after the engine moved) meets a locked database."""
    sqlite_only(service)
    dbapi = service.db.engine.dialect.loaded_dbapi  # sqlite3.dbapi2, as SQLAlchemy imported it
    connect = dbapi.connect
    monkeypatch.setattr(dbapi, "connect", lambda *args, **kwargs: connect(*args, factory=_Faulty, **kwargs))
    service.db.engine.dispose()  # the pool's connections are made again, of that class
    service.stacked.append(STACK)
    guest.bet("classic", 500)
    round_id = guest.post("/tables/classic/deal").json()["id"]
    before, balance = guest.get(f"/rounds/{round_id}").json(), guest.balance()
    _Faulty.refuse = "INSERT INTO round_actions"
    refused = guest.post(f"/rounds/{round_id}/actions", {"action": "hit"}, key="hit-1")
    assert _Faulty.refuse is None  # it was the direct statement that failed
    assert refused.status_code == 503 and int(refused.headers["Retry-After"]) >= 1
    assert guest.get(f"/rounds/{round_id}").json() == before and guest.balance() == balance
    applied = guest.post(f"/rounds/{round_id}/actions", {"action": "hit"}, key="hit-1")
    assert applied.status_code == 200 and applied.json()["hands"][0]["cards"] == ["2S", "3D", "2C"]
    assert ledger_totals(service)[:2] == (0, [])


def test_other_databases_take_sqlalchemys_path(service: GameService, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []
    monkeypatch.setattr(direct, "DIALECTS", ())  # as for a database the direct path was not written for
    with service.db.sessions() as session:
        event.listen(session.get_bind(), "after_cursor_execute", lambda *args: seen.append(args[2]))
        params = {"owner": "house", "currency": "USD"}
        assert direct.run(session, BALANCE, params).all() == session.execute(BALANCE, params).all()
    assert sum(statement.startswith("SELECT accounts.balance") for statement in seen) == 2


def test_a_connection_postgresql_ended_is_discarded_with_the_pools_others(
        database_url: str, service: GameService, guest: Client) -> None:
    """What SQLAlchemy does for its own statements, for a direct one: the error says the connection was invalidated
    (a 503 to the player), and the pool then replaces every connection made before it."""
    from sqlalchemy import create_engine

    if not database_url.startswith("postgresql"):
        pytest.skip("only PostgreSQL's connections can be ended under the server")
    params = {"owner": "house", "currency": "USD"}
    with service.db.sessions() as session:
        before = direct.run(session, BALANCE, params).all()
    admin = create_engine(database_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as connection:
            connection.exec_driver_sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                       "WHERE datname = current_database() AND pid <> pg_backend_pid()")
    finally:
        admin.dispose()
    with service.db.sessions() as session, pytest.raises(db_errors.OperationalError) as raised:
        direct.run(session, BALANCE, params)
    assert raised.value.connection_invalidated
    for _ in range(3):  # every pooled connection was ended: each is replaced, none fails again
        with service.db.sessions() as session:
            assert direct.run(session, BALANCE, params).all() == before


def test_a_shared_rounds_settling_double_writes_the_deciding_seat_once(http: Any, service: GameService,
                                                                      clock: Any) -> None:
    """The last decision at a shared table (a double) changes its seat's stake; settlement then pays every seat.
    The deciding seat is written once, stake and result together, and every seat ends as the ledger says."""
    from server_helpers import dealt_shared_round, new_player

    from twentyone.server.models import RoundSeat

    # ann TS 9C (19), bob 5H 6S (11), dealer 6D TC (16); bob doubles onto 8H (19); the dealer draws 9S and busts.
    service.stacked.append(["TS", "5H", "6D", "9C", "6S", "TC", "8H", "9S"])
    ann, bob = new_player(http, "ann"), new_player(http, "bob")
    round_id = dealt_shared_round(service, clock, [ann, bob], table="multiplayer")
    assert ann.act(round_id, "stand").status_code == 200
    statements: list[str] = []

    def note(_conn: Any, _cursor: Any, statement: str, parameters: Any, _context: Any, many: bool) -> None:
        statements.extend([" ".join(statement.split())] * (len(parameters) if many else 1))  # a row each

    event.listen(service.db.engine, "before_cursor_execute", note)
    try:
        settled = bob.act(round_id, "double").json()
    finally:
        event.remove(service.db.engine, "before_cursor_execute", note)
    assert settled["status"] == "settled" and settled["me"]["staked"] == 1000 and settled["me"]["returned"] == 2000
    seat_updates = [s for s in statements if s.startswith("UPDATE round_seats")]
    assert len(seat_updates) == 2, seat_updates  # a row each: ann's result, and bob's stake with his result
    with service.db.sessions() as session:
        seats = {seat.player_id: seat for seat in session.query(RoundSeat).filter_by(round_id=round_id)}
        assert sorted((seat.staked, seat.returned) for seat in seats.values()) == [(500, 1000), (1000, 2000)]
    for player in (ann, bob):
        assert player.balance() == seats[player.player_id()].balance_after
    assert ledger_totals(service)[:2] == (0, [])


def test_sqlites_begin_on_the_drivers_connection_is_busy_as_sqlalchemy_says(tmp_path: Path) -> None:
    """A writer's BEGIN IMMEDIATE goes to sqlite3 directly; when another connection holds the write lock past the
    busy timeout, it fails with SQLAlchemy's OperationalError (the server's 503), and the connection is fine after."""
    url = f"sqlite:///{tmp_path / 'busy.db'}"
    migrate(url)
    db = Database(url)
    with db.engine.connect():
        pass  # the pool's connection made (and its pragmas set) before the lock is taken
    holder = sqlite3.connect(tmp_path / "busy.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with db.engine.connect() as connection:
            connection.connection.driver_connection.execute("PRAGMA busy_timeout = 50")  # type: ignore[union-attr]
            with pytest.raises(db_errors.OperationalError, match="database is locked"):
                direct.run_driver_sql(connection, "BEGIN IMMEDIATE")
        holder.execute("ROLLBACK")
        with db.transaction() as session:  # a writer's BEGIN IMMEDIATE, on a connection of the same pool
            assert direct.run(session, BALANCE, {"owner": "house", "currency": "USD"}).scalar() is None
    finally:
        holder.close()
        db.close()
