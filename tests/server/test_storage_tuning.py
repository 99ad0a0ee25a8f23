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


def test_an_operators_wallet_gets_more_request_threads_on_postgresql(settings) -> None:  # type: ignore[no-untyped-def]
    """Requests wait on the operator's HTTP wallet without holding the GIL: more of them may wait at once."""
    from fake_operator_wallet import MemoryWallet

    from twentyone.server.app import create_app
    from twentyone.server.db import REMOTE_WALLET_THREADS

    url = settings.database_url
    expected = SQLITE_THREADS if url.startswith("sqlite") else REMOTE_WALLET_THREADS
    assert worker_threads(url, remote_wallet=True) == expected > THREADS or url.startswith("sqlite")
    app = create_app(settings, operator_wallet=MemoryWallet(), timers=False)
    assert app.state.service.db.engine.pool.size() == expected
    app.state.service.db.close()
    plain = create_app(settings, timers=False)
    assert plain.state.service.db.engine.pool.size() == worker_threads(url)
    plain.state.service.db.close()


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


def test_a_shoe_commitment_is_remembered_only_once_its_shoe_is_committed(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    from twentyone.core.shoe import SystemBits
    from twentyone.server.config import shipped_tables
    from twentyone.server.models import Shoe as ShoeRow
    from twentyone.server.tables import Shoes, commitment_of

    url = f"sqlite:///{tmp_path / 'server.db'}"
    migrate(url)
    db = Database(url)
    shoes = Shoes(SystemBits(), lambda: datetime.now(UTC))
    table = shipped_tables()["classic"]
    try:
        with db.transaction() as session:
            lost = shoes.prepared(session, table, player_id=7)
            assert commitment_of(session, lost.id) == lost.commitment  # its own transaction sees it
            raise RuntimeError("rolled back")
    except RuntimeError:
        pass
    with db.transaction() as session:
        kept = shoes.prepared(session, table, player_id=7)
    assert kept.id == lost.id and kept.commitment != lost.commitment  # SQLite hands the free id out again
    with db.sessions() as session:
        assert commitment_of(session, kept.id) == kept.commitment  # not the rolled-back shoe's
    with db.transaction() as session:
        session.execute(text("UPDATE shoes SET commitment = 'changed' WHERE id = :id"), {"id": kept.id})
    with db.sessions() as session:
        assert commitment_of(session, kept.id) == kept.commitment  # from memory: it is read once per shoe
        assert session.get(ShoeRow, kept.id).commitment == "changed"  # type: ignore[union-attr]
    db.close()


def test_a_settling_decision_writes_the_round_and_its_seat_once_each(guest, service) -> None:  # type: ignore[no-untyped-def]
    """The wallet's statements inside settlement used to flush the round and seat half-changed, so each
    was written twice; the round view re-read the shoe's commitment, which never changes; and on PostgreSQL the
    next shoe's look-up ran twice, before and after its lock (now made at the deal where each round shuffles)."""
    service.stacked.append(["TS", "6H", "9D", "TC", "8C"])  # player 19 stands, dealer 6+10+8 = 24: a win
    guest.bet("classic", 500)
    dealt = guest.post("/tables/classic/deal").json()
    statements: list[str] = []

    @event.listens_for(service.store.db.engine, "before_cursor_execute")
    def record(_conn, _cursor, statement, *_args):  # type: ignore[no-untyped-def]
        statements.append(" ".join(statement.split()[:3]).upper())

    settled = guest.act(dealt["id"], "stand").json()
    event.remove(service.store.db.engine, "before_cursor_execute", record)
    assert settled["status"] == "settled" and settled["me"]["returned"] == 1000
    assert statements.count("UPDATE ROUNDS SET") == 1
    assert statements.count("UPDATE ROUND_SEATS SET") == 1
    # The shoe is moved on once, and that statement returns what the settled view reveals: it is not read again.
    assert statements.count("UPDATE SHOES SET") == 1
    assert not any(s.startswith("SELECT SHOES.COMMITMENT") for s in statements)
    assert settled["revealed"] == guest.get(f"/rounds/{dealt['id']}").json()["revealed"]  # as read afresh
    assert settled["commitment"] == dealt["commitment"]
    # The payment's UPDATE of the account returns the balance it leaves: the round's balance after is not read again.
    assert not any(s.startswith("SELECT ACCOUNTS.BALANCE") for s in statements)
    assert settled["me"]["balance_after"] == guest.balance()
    # Classic shuffles every round: its deal made the next shoe (Shoes.following), so the settlement reads no shoe
    # and makes none.
    assert not any(s.startswith("SELECT SHOES.ID, SHOES.TABLE_ID,") or s.startswith("INSERT INTO SHOES")
                   for s in statements)
    assert guest.get("/tables/classic").json()["next_shoe"] is not None


def test_a_shoe_in_play_never_answers_with_its_salt_or_cards(tmp_path: Path) -> None:
    """The shoe's move at a settlement answers with what the settled view reveals: its salt and cards only once the
    shoe is finished (past its cut card). A shoe still in play answers with neither, held or read, and a later
    transaction does not find the notes of an earlier one."""
    from datetime import UTC, datetime

    from twentyone.core.shoe import SystemBits
    from twentyone.server.config import shipped_tables
    from twentyone.server.tables import Shoes, move_shoe, revealed_of

    url = f"sqlite:///{tmp_path / 'server.db'}"
    migrate(url)
    db = Database(url)
    shoes = Shoes(SystemBits(), lambda: datetime.now(UTC))
    power = shipped_tables()["power"]  # eight decks, a cut card at 264
    try:
        with db.transaction() as session:
            shoe = shoes.prepared(session, power, player_id=1)
        with db.transaction() as session:
            assert move_shoe(session, shoe.id, 40) is False
            assert tuple(revealed_of(session, shoe.id)) == (shoe.commitment, False, None, None)
        with db.sessions() as session:  # a session of several transactions
            assert tuple(revealed_of(session, shoe.id)) == (shoe.commitment, False, None, None)  # read, not held
            assert move_shoe(session, shoe.id, 270) is True
            assert tuple(revealed_of(session, shoe.id)) == (shoe.commitment, True, shoe.salt, shoe.cards)
            session.rollback()
            assert tuple(revealed_of(session, shoe.id)) == (shoe.commitment, False, None, None)  # the move undone
    finally:
        db.close()


def test_a_deal_reads_its_shoe_once(guest, service) -> None:  # type: ignore[no-untyped-def]
    """A private table deals each round from the shoe its last round's deal made (Shoes.following): the deal reads
    that shoe (cards and commitment) and used to read its commitment again for the answer. The second round's shoe
    is the shuffled one published before its bet (a stacked one would replace it), so its outcome is the shoe's."""
    service.stacked.append(["TS", "6H", "9D", "TC", "8C"])  # the first round: 19 against a 6 up, no blackjack
    guest.bet("classic", 500)
    first = guest.post("/tables/classic/deal").json()
    while first["status"] == "playing":
        first = guest.act(first["id"], "stand").json()
    next_shoe = guest.get("/tables/classic").json()["next_shoe"]
    guest.bet("classic", 500)
    before = guest.balance()
    statements: list[str] = []

    @event.listens_for(service.store.db.engine, "before_cursor_execute")
    def record(_conn, _cursor, statement, *_args):  # type: ignore[no-untyped-def]
        statements.append(" ".join(statement.split()[:4]).upper())

    dealt = guest.post("/tables/classic/deal").json()
    event.remove(service.store.db.engine, "before_cursor_execute", record)
    assert dealt["commitment"] == next_shoe["commitment"]  # published before the bet
    assert sum(s.startswith("SELECT SHOES.") for s in statements) == 1
    # The account's lock returns its balance, which the bets are checked against: it is not read again.
    assert not any(s.startswith("SELECT ACCOUNTS.BALANCE") for s in statements)
    assert dealt["me"]["balance_before"] == before


def _orm_layer_use(state) -> list[str]:  # type: ignore[no-untyped-def]
    """What an ORM execution (``do_orm_execute``) did through the ORM's own layer without loading objects:
    DML on a mapped class (``update(Account)``), or a select of a mapped class's bare columns."""
    statement = state.statement
    if state.is_insert or state.is_update or state.is_delete:
        return [f"DML on {mapper.class_.__name__}" for mapper in state.all_mappers]
    if not state.is_select:
        return []
    return [f"columns of {desc['entity'].__name__}: {desc['name']}" for desc in statement.column_descriptions
            if desc.get("entity") is not None and desc["expr"] is not desc["entity"]]


def test_a_round_writes_its_slips_new_rows_and_shoes_without_the_orms_unit_of_work(guest, service) -> None:  # type: ignore[no-untyped-def]
    """Every chip and bet writes the player's slip, a deal inserts a round and a seat, and a private round's
    last decision changes the round and its seat and shuffles the next shoe. Written as ORM objects, each was a
    flush of the unit of work, which cost more than the statement it sent; and statements built on mapped classes
    (``update(Account)``, ``select(Account.balance)``) went through the ORM's layer at every execution, 2-4 times
    the cost of the same statement on the table (models.ACCOUNTS)."""
    from sqlalchemy.orm import Session

    service.stacked.append(["TS", "6H", "9D", "TC", "8C"])  # player 19 stands, dealer 24: settled, a new shoe
    flushed: list[str] = []
    orm_layer: list[str] = []

    def on_flush(session, _context, _instances):  # type: ignore[no-untyped-def]
        flushed.extend(sorted(type(obj).__name__ for obj in (*session.new, *session.dirty)))

    def on_execute(state):  # type: ignore[no-untyped-def]
        orm_layer.extend(_orm_layer_use(state))

    event.listen(Session, "before_flush", on_flush)
    event.listen(Session, "do_orm_execute", on_execute)
    try:
        assert guest.post("/tables/classic/chip", {"chip": 500}).status_code == 200
        guest.bet("classic", 500)
        assert flushed == []  # the slip: Core statements (tables.SlipRecord)
        dealt = guest.post("/tables/classic/deal").json()
        assert dealt["status"] == "playing" and flushed == []  # the round and its seat: Core inserts (store.inserted)
        settled = guest.act(dealt["id"], "stand").json()
    finally:
        event.remove(Session, "before_flush", on_flush)
        event.remove(Session, "do_orm_execute", on_execute)
    assert settled["status"] == "settled" and "revealed" in settled  # the shoe is finished: a new one was made
    next_shoe = guest.get("/tables/classic").json()["next_shoe"]
    assert next_shoe is not None and next_shoe["commitment"] != settled["commitment"]
    # The settling decision's round and seat are records (direct.Record), written by an UPDATE each; the next shoe was
    # a Core insert: nothing went through the unit of work.
    assert flushed == []
    assert orm_layer == []


def test_a_private_rounds_statements_all_run_as_compiled_once(guest, service) -> None:  # type: ignore[no-untyped-def]
    """direct.run hands SQLAlchemy what it cannot run as compiled once (ORM entities, an expanding IN, text), and
    each such statement costs two to three times a direct one. A chip, a bet, a deal and a settling decision at a
    private table hand it none: the shoes are read as rows, a round still open is looked for without IN, one
    player's balance after the round is read by its owner, and PostgreSQL's wait for twins is a Core statement."""
    from sqlalchemy.orm import Session

    service.stacked.append(["TS", "6H", "9D", "TC", "8C"])  # player 19 stands, dealer 24: settled, a new shoe
    assert guest.get("/tables/classic").status_code == 200  # the caller and the tables: kept in memory from here on
    handed: list[str] = []

    def on_execute(state):  # type: ignore[no-untyped-def]
        handed.append(" ".join(str(state.statement).split()[:6]))

    event.listen(Session, "do_orm_execute", on_execute)
    try:
        assert guest.post("/tables/classic/chip", {"chip": 500}).status_code == 200
        guest.bet("classic", 500)
        dealt = guest.post("/tables/classic/deal").json()
        settled = guest.act(dealt["id"], "stand").json()
    finally:
        event.remove(Session, "do_orm_execute", on_execute)
    assert settled["status"] == "settled" and "revealed" in settled
    assert handed == [], handed


def test_a_read_ends_with_commit_so_its_statements_stay_prepared_and_it_writes_nothing(database_url: str) -> None:
    """A read's transaction ends with COMMIT, not ROLLBACK: at each ROLLBACK psycopg forgets every statement it has
    prepared on the connection, so on PostgreSQL the server parsed and planned nearly every statement anew. A read
    still writes nothing: an object changed in it is dropped even when a query follows the change, and a flush or an
    INSERT, UPDATE or DELETE is refused before it reaches the database. A read that raises still rolls back."""
    from datetime import UTC, datetime

    import pytest
    from sqlalchemy import select, update

    from twentyone.server.direct import WriteInRead, run
    from twentyone.server.models import ACCOUNTS, Account
    from twentyone.server.store import Store

    migrate(database_url)
    db = Database(database_url, threads=1)  # one pooled connection: every read below runs on it
    store = Store(db, lambda: datetime.now(UTC))
    with db.transaction() as session:
        session.add(Account(owner="reader", currency="EUR", version=0, balance=500))
    endings: list[str] = []
    event.listen(db.engine, "commit", lambda _connection: endings.append("commit"))
    event.listen(db.engine, "rollback", lambda _connection: endings.append("rollback"))
    balance = select(ACCOUNTS.c.balance).where(ACCOUNTS.c.owner == "reader", ACCOUNTS.c.currency == "EUR")
    for _ in range(8):  # psycopg prepares a statement at its fifth run on a connection
        with store.read() as session:
            assert run(session, balance).first().balance == 500
    with store.read() as session:
        session.scalars(select(Account).where(Account.owner == "reader")).one().balance = 1  # never written,
        assert run(session, balance).first().balance == 500  # not even by the query after it (no autoflush)
    with store.read() as session:
        assert run(session, balance).first().balance == 500
        if db.engine.dialect.name == "postgresql":
            prepared = session.connection().exec_driver_sql("SELECT statement FROM pg_prepared_statements").all()
            assert any("accounts.balance" in row.statement for row in prepared), prepared
    assert endings == ["commit"] * 10
    with pytest.raises(RuntimeError), store.read() as session:
        run(session, balance)
        raise RuntimeError("a read that fails")
    assert endings[-1] == "rollback"
    raise_balance = update(ACCOUNTS).where(ACCOUNTS.c.owner == "reader").values(balance=ACCOUNTS.c.balance + 1)
    for write in (lambda session: run(session, raise_balance), lambda session: session.execute(raise_balance),
                  lambda session: (session.add(Account(owner="intruder", currency="EUR")), session.flush())):
        with pytest.raises(WriteInRead), store.read() as session:
            write(session)
    with store.read() as session:
        assert run(session, balance).first().balance == 500
        assert session.scalars(select(Account).where(Account.owner == "intruder")).first() is None
    db.close()
