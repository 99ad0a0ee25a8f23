"""Writes held back for the next round trip (direct.defer): on PostgreSQL a transaction's last writes go with its
COMMIT, and earlier ones with the statement after them, in psycopg's pipeline mode; every statement still sees
what the ones before it wrote, a rollback drops them, and their errors are SQLAlchemy's."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager as ContextManager
from contextlib import nullcontext
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from server_helpers import Client, Clock, dealt_shared_round, new_guest, next_shoe
from sqlalchemy import bindparam, event, insert, select, text, update
from sqlalchemy import exc as db_errors
from sqlalchemy.orm import Session
from test_faults import STACK  # classic: hit, hit, stand, and the dealer busts

from twentyone.server import direct
from twentyone.server.db import Database, migrate
from twentyone.server.direct import commit_held, defer, defer_read, run
from twentyone.server.models import ACCOUNTS, IDEMPOTENCY, Account, RoundSeat
from twentyone.server.roundtrips import sent_by_round_trip, traced
from twentyone.server.service import GameService
from twentyone.server.store import RECORD
from twentyone.server.wallet import unreconciled_accounts

MAKE = insert(ACCOUNTS)
RAISE = (update(ACCOUNTS).where(ACCOUNTS.c.owner == bindparam("who"))
         .values(balance=ACCOUNTS.c.balance + bindparam("amount")))
BALANCE = select(ACCOUNTS.c.balance).where(ACCOUNTS.c.owner == bindparam("who"))


# Power: the players' 5 and 7 stand on 12 against the dealer's 6, who draws 8 and K and busts: every player wins.
POWER_DEALER_BUSTS = ["5S", "7H", "6D", "8C", "KD"]


def account(owner: str, balance: int = 0) -> dict[str, Any]:
    return {"owner": owner, "currency": "EUR", "version": 0, "balance": balance}


def balances(db: Database) -> dict[str, int]:
    with db.sessions() as session:
        return {row.owner: row.balance for row in session.execute(select(ACCOUNTS.c.owner, ACCOUNTS.c.balance))}


@pytest.fixture
def db(database_url: str) -> Iterator[Database]:
    migrate(database_url)
    database = Database(database_url, threads=1)
    yield database
    database.close()


def round_trips(db: Database, trace: Path) -> ContextManager[list[int]]:
    """The times the server process waited on PostgreSQL's answer while the block ran (libpq's trace)."""
    return traced(db.engine, trace)


def test_a_held_write_is_seen_by_the_next_statement_and_kept_by_the_commit(db: Database) -> None:
    with db.transaction() as session:
        defer(session, MAKE, account("held", 5))
        defer(session, RAISE, {"who": "held", "amount": 2})
        assert run(session, BALANCE, {"who": "held"}).scalar_one() == 7  # both went before it, in order
        defer(session, RAISE, {"who": "held", "amount": 3})
        defer(session, MAKE, [account("batch one"), account("batch two")])
    assert balances(db) == {"held": 10, "batch one": 0, "batch two": 0}


def test_a_transaction_that_fails_drops_what_it_held(db: Database) -> None:
    with pytest.raises(RuntimeError), db.transaction() as session:
        run(session, MAKE, account("sent"))
        defer(session, MAKE, account("held"))
        raise RuntimeError("the request fails")
    with db.transaction() as session:  # the next transaction on the same connection holds nothing of the last
        defer(session, MAKE, account("next"))
    assert balances(db) == {"next": 0}


def test_a_held_write_that_breaks_a_constraint_is_sqlalchemys_error_and_nothing_of_its_transaction_is_kept(
        db: Database) -> None:
    with db.transaction() as session:
        run(session, MAKE, account("taken"))
    with pytest.raises(db_errors.IntegrityError), db.transaction() as session:
        run(session, MAKE, account("before"))
        defer(session, RAISE, {"who": "taken", "amount": 1})
        defer(session, MAKE, account("taken"))  # owner and currency are unique
    assert balances(db) == {"taken": 0}
    with db.transaction() as session:  # the connection is still good
        defer(session, RAISE, {"who": "taken", "amount": 4})
    assert balances(db) == {"taken": 4}


def test_a_connection_left_in_pipeline_mode_is_discarded_without_a_reset(
        database_url: str, db: Database, caplog: pytest.LogCaptureFixture) -> None:
    """Held writes go in psycopg's pipeline mode. When PostgreSQL ends the connection while a pipeline waits on its
    answers, psycopg may raise the server's last message (AdminShutdown) and fail to leave pipeline mode ("cannot
    exit pipeline mode while busy"), the connection still open: here made so by hand, a query sent in pipeline mode
    and its answer never read. The next statement's error closes it, so SQLAlchemy raises the error as the
    connection invalidated (a 503 to the player) and discards it. Before, the connection went back to the pool,
    whose reset (a ROLLBACK, refused in pipeline mode) failed and was logged with its traceback, for each request a
    database's restart cut (found by a load run whose database ended every connection)."""
    import logging

    if not database_url.startswith("postgresql"):
        pytest.skip("psycopg's pipeline mode is PostgreSQL's")
    with db.transaction() as session:
        run(session, MAKE, account("held", 5))
    with (caplog.at_level(logging.DEBUG, logger="sqlalchemy.pool"),
          pytest.raises(db_errors.OperationalError) as raised, db.transaction() as session):
        run(session, BALANCE, {"who": "held"})
        pgconn = session.connection().connection.driver_connection.pgconn  # type: ignore[union-attr]
        pgconn.enter_pipeline_mode()
        pgconn.send_query_params(b"SELECT 1", None)  # busy: as a pipeline the database cut off leaves it
        defer(session, RAISE, {"who": "held", "amount": 2})
        run(session, BALANCE, {"who": "held"})
    assert raised.value.connection_invalidated
    assert [record.getMessage() for record in caplog.records if record.exc_info] == []
    for _ in range(2):  # the pool's connections are good ones
        assert balances(db) == {"held": 5}


def test_an_error_of_psycopgs_own_on_leaving_a_pipeline_is_raised_as_a_lost_connection(
        database_url: str, db: Database, caplog: pytest.LogCaptureFixture) -> None:
    """Beside another test's process, the test above once failed with psycopg's own IndexError ("pop from an empty
    deque": an answer in its pipeline that it had not asked for), raised as it was, not as the driver's error, and
    the connection, left in pipeline mode, went back to the pool. Whatever the error, a connection left so is closed,
    and an error that is not the driver's is raised as its OperationalError: SQLAlchemy discards the connection, the
    player is told to try again, and no reset is logged. The error is handed over here as psycopg raised it."""
    import logging

    if not database_url.startswith("postgresql"):
        pytest.skip("psycopg's pipeline mode is PostgreSQL's")
    with db.transaction() as session:
        run(session, MAKE, account("held", 5))
    with (caplog.at_level(logging.DEBUG, logger="sqlalchemy.pool"),
          pytest.raises(db_errors.OperationalError, match="pipeline could not be left") as raised,
          db.transaction() as session):
        connection = session.connection()
        pgconn = connection.connection.driver_connection.pgconn  # type: ignore[union-attr]
        pgconn.enter_pipeline_mode()
        pgconn.send_query_params(b"SELECT 1", None)
        direct._driver_error(connection, IndexError("pop from an empty deque"), "SELECT 1", None, None)
    assert raised.value.connection_invalidated
    assert [record.getMessage() for record in caplog.records if record.exc_info] == []
    for _ in range(2):  # the pool's connections are good ones
        assert balances(db) == {"held": 5}


def test_an_error_of_psycopgs_own_after_it_left_the_pipeline_is_raised_as_a_lost_connection(
        database_url: str, db: Database, caplog: pytest.LogCaptureFixture) -> None:
    """The test of a connection left in pipeline mode failed once in a fresh-check with psycopg's IndexError raised
    after psycopg had left pipeline mode: nothing then said the connection was broken, and the IndexError went out as
    it was (a 500). An error raised inside psycopg's own code is now taken as the connection lost whatever its
    pipeline's state; one raised in ours is still raised as it is."""
    import logging

    if not database_url.startswith("postgresql"):
        pytest.skip("psycopg's pipeline mode is PostgreSQL's")

    def raised_in(module: str) -> IndexError:
        try:
            exec("raise IndexError('pop from an empty deque')", {"__name__": module})
        except IndexError as error:
            return error
        raise AssertionError("nothing raised")

    with db.transaction() as session:
        run(session, MAKE, account("held", 5))
    with (caplog.at_level(logging.DEBUG, logger="sqlalchemy.pool"),
          pytest.raises(db_errors.OperationalError, match="pipeline could not be left") as raised,
          db.transaction() as session):
        direct._driver_error(session.connection(), raised_in("psycopg._pipeline"), "SELECT 1", None, None)
    assert raised.value.connection_invalidated
    assert [record.getMessage() for record in caplog.records if record.exc_info] == []
    with pytest.raises(IndexError), db.transaction() as session:  # ours: a bug, raised as it is
        direct._driver_error(session.connection(), raised_in("twentyone.server.rounds"), "SELECT 1", None, None)
    for _ in range(2):  # the pool's connections are good ones
        assert balances(db) == {"held": 5}


class Refused(Exception):
    """What a held read's judge raises in these tests (as the key's look-up raises store.AlreadyApplied)."""


def refuse(_rows: Any) -> None:
    """A held read's judge that refuses whatever it reads."""
    raise Refused()


def test_a_held_read_is_judged_with_the_next_statement_before_its_answer_is_used(db: Database,
                                                                                tmp_path: Path) -> None:
    with db.transaction() as session:
        run(session, MAKE, account("read", 5))
    judged: list[int] = []
    traced = round_trips(db, tmp_path / "read.trace") if db.engine.dialect.name == "postgresql" else nullcontext([])
    with traced as counted, db.transaction() as session:
        defer_read(session, BALANCE, {"who": "read"}, lambda rows: judged.append(rows.scalar_one()))
        assert judged == ([] if db.engine.dialect.name == "postgresql" else [5])  # SQLite: read at once
        defer(session, RAISE, {"who": "read", "amount": 1})
        assert run(session, BALANCE, {"who": "read"}).scalar_one() == 6  # it went first: it read 5
        assert judged == [5]
    if db.engine.dialect.name == "postgresql":
        assert counted == [2]  # BEGIN with the read, the write and the next read; COMMIT
    with db.transaction() as session:  # the same statement thrice: each read gets its own answer
        defer_read(session, BALANCE, {"who": "read"}, lambda rows: judged.append(rows.scalar_one()))
        defer_read(session, BALANCE, {"who": "read"}, lambda rows: judged.append(-rows.scalar_one()))
        assert run(session, BALANCE, {"who": "read"}).scalar_one() == 6
    assert judged == [5, 6, -6]


def test_a_held_read_that_refuses_rolls_back_the_statement_it_went_with(db: Database) -> None:
    with db.transaction() as session:
        run(session, MAKE, account("kept", 5))

    with pytest.raises(Refused), db.transaction() as session:
        defer_read(session, BALANCE, {"who": "kept"}, refuse)
        run(session, RAISE, {"who": "kept", "amount": 1})
        raise AssertionError("not reached: the read was judged before this statement's answer was used")
    assert balances(db) == {"kept": 5}


def test_a_held_read_is_judged_before_the_commit(db: Database) -> None:
    """A transaction whose only other statements are held writes: the read is judged before COMMIT goes, not with
    it, so that a refusal still rolls everything back."""
    with pytest.raises(Refused), db.transaction() as session:
        defer_read(session, BALANCE, {"who": "nobody"}, refuse)
        defer(session, MAKE, account("never"))
    assert balances(db) == {}


def test_a_retry_whose_work_only_holds_writes_is_answered_without_running_again(service: GameService,
                                                                               guest: Client) -> None:
    """The key's look-up goes with the work's first statement: a work that reads nothing still has it judged before
    its COMMIT, so a retry gets the first answer and its writes are not made twice."""
    who = service.authenticate(guest.token)
    ran: list[int] = []

    def work() -> dict[str, Any]:
        with service.store.write() as session:
            defer(session, MAKE, account(f"made by run {len(ran)}"))
            ran.append(1)
            return service.store.answer(session, {"made": len(ran)})

    assert service.idempotent(who, "only-writes", "POST /x", 200, work) == (200, {"made": 1})
    assert service.idempotent(who, "only-writes", "POST /x", 200, work) == (200, {"made": 1})
    made = [owner for owner in balances(service.db) if owner.startswith("made by")]
    assert made == ["made by run 0"]


def test_held_writes_go_before_the_orms_statements_its_flush_and_a_savepoint(db: Database) -> None:
    with db.transaction() as session:
        defer(session, MAKE, account("core", 1))
        found = session.scalars(select(Account).where(Account.owner == "core")).one()  # an ORM query sees it
        defer(session, RAISE, {"who": "core", "amount": 10})
        found.balance = 2  # an ORM change, flushed at the commit: after the write held before it
    assert balances(db) == {"core": 2}  # the flush came last, as the code reads
    with db.transaction() as session:
        defer(session, RAISE, {"who": "core", "amount": 5})
        with pytest.raises(db_errors.IntegrityError), session.begin_nested():
            defer(session, RAISE, {"who": "core", "amount": 100})  # in a savepoint: at once, undone with it
            run(session, MAKE, account("core"))
    assert balances(db) == {"core": 7}  # the write held before the savepoint was sent before it, and kept


def test_a_session_that_does_not_send_held_writes_runs_them_at_once(db: Database) -> None:
    with db.sessions() as session:  # a plain session: nothing would send what it held
        defer(session, MAKE, account("plain"))
        session.commit()
    assert balances(db) == {"plain": 0}


def driver_in_transaction(session: Session) -> bool:
    """Whether the driver's connection has a transaction open (not SQLAlchemy's view of it)."""
    driver = session.connection().connection.driver_connection
    if hasattr(driver, "in_transaction"):  # sqlite3
        return bool(driver.in_transaction)
    from psycopg.pq import TransactionStatus

    return bool(driver.info.transaction_status != TransactionStatus.IDLE)


def test_commit_held_commits_only_what_it_holds_and_sqlalchemys_commit_follows(db: Database) -> None:
    commits: list[str] = []
    event.listen(db.engine, "commit", lambda _connection: commits.append("commit"))
    with db.transaction() as session:
        run(session, MAKE, account("sent alone"))
        commit_held(session)  # nothing held: the transaction is still open, at the driver too
        assert driver_in_transaction(session)
        run(session, RAISE, {"who": "sent alone", "amount": 1})
    assert commits == ["commit"] and balances(db) == {"sent alone": 1}
    with db.transaction() as session:
        defer(session, RAISE, {"who": "sent alone", "amount": 1})
        commit_held(session)
        # PostgreSQL: the held write went with COMMIT; SQLite ran it at once, and SQLAlchemy commits it below
        assert driver_in_transaction(session) == (db.engine.dialect.name == "sqlite")
    assert commits == ["commit", "commit"] and balances(db) == {"sent alone": 2}


def test_nothing_runs_after_commit_held_has_committed(db: Database) -> None:
    if db.engine.dialect.name != "postgresql":
        pytest.skip("SQLite holds nothing: commit_held leaves its commit to SQLAlchemy")
    with pytest.raises(db_errors.InvalidRequestError, match="commit_held"), db.transaction() as session:
        defer(session, MAKE, account("committed"))
        commit_held(session)
        run(session, MAKE, account("too late"))  # would run in a transaction of its own
    assert balances(db) == {"committed": 0}


def test_a_commit_outside_commit_held_sends_what_is_held_first(db: Database) -> None:
    with db._writers() as session:  # a writer's session, committed by hand rather than by db.transaction()
        defer(session, MAKE, account("by hand", 3))
        session.commit()
    assert balances(db) == {"by hand": 3}


def test_a_held_json_value_is_written_as_it_was_when_held(db: Database) -> None:
    body = {"status": "playing", "cards": ["AS"]}
    with db.transaction() as session:
        defer(session, RECORD, {"player_id": 1, "key": "k", "request": "POST /x", "status_code": 200,
                                "response": body, "created_at": datetime.now(UTC)})
        body["status"], body["cards"][0] = "changed", "KD"  # after it was held: not what was written
    with db.sessions() as session:
        assert session.execute(select(IDEMPOTENCY.c.response)).scalar_one() == {"status": "playing", "cards": ["AS"]}


def test_a_held_write_that_times_out_on_a_lock_is_an_operational_error_and_the_connection_goes_on(
        db: Database) -> None:
    """Storage trouble in a held write is SQLAlchemy's OperationalError, as it was sent alone (a 503 upstream)."""
    if db.engine.dialect.name != "postgresql":
        pytest.skip("PostgreSQL's lock_timeout")
    with db.transaction() as session:
        run(session, MAKE, account("locked"))
    with db.engine.connect() as holder:
        holder.execute(select(ACCOUNTS.c.id).where(ACCOUNTS.c.owner == "locked").with_for_update())
        with pytest.raises(db_errors.OperationalError, match="lock timeout"), db.transaction() as session:
            session.execute(text("SET LOCAL lock_timeout = '100ms'"))
            defer(session, RAISE, {"who": "locked", "amount": 1})
        holder.rollback()
    with db.transaction() as session:
        defer(session, RAISE, {"who": "locked", "amount": 2})
    assert balances(db) == {"locked": 2}


def test_a_decision_sends_its_writes_with_its_commit(service: GameService, guest: Client, tmp_path: Path) -> None:
    """A decision that leaves the round in play: its BEGIN, its key's lock and look-up with its round and the player's
    seat, in one round trip, then one for its three writes (the log, the round, the stored answer) and COMMIT; before,
    each was a round trip of its own, the key and the seat were read apart from the round, and the BEGIN went alone."""
    if service.db.engine.dialect.name != "postgresql":
        pytest.skip("round trips to PostgreSQL")
    service.stacked.append(STACK)
    guest.bet("classic", 500)
    round_id = guest.post("/tables/classic/deal").json()["id"]
    with round_trips(service.db, tmp_path / "act.trace") as counted:
        assert guest.act(round_id, "hit").json()["status"] == "playing"
    # BEGIN, the key's lock and look-up with the round and the player's seat; the writes with COMMIT
    assert counted == [2]


def test_a_deal_checks_for_a_round_in_play_in_its_first_round_trip(service: GameService, guest: Client,
                                                                   tmp_path: Path) -> None:
    """A private deal's check that no round of the player's is still in play goes with its BEGIN, its key's lock and
    look-up and the player's row, in one round trip (it was a round trip of its own, the second), and still refuses
    a second deal while the first round is in play."""
    if service.db.engine.dialect.name != "postgresql":
        pytest.skip("round trips to PostgreSQL")
    service.stacked.append(STACK)
    guest.bet("classic", 500)
    with round_trips(service.db, tmp_path / "deal.trace"):
        round_id = guest.post("/tables/classic/deal").json()["id"]
    first, second = sent_by_round_trip((tmp_path / "deal.trace").read_text())[:2]
    # (the key's lock and look-up go in it too, as prepared statements: by name, without their text)
    assert [statement in first for statement in ('"BEGIN"', "SELECT rounds.id", "FROM players")] == [True] * 3
    assert "SELECT rounds.id" not in second
    refused = guest.post("/tables/classic/deal")
    assert refused.status_code == 409 and refused.json()["detail"] == "Finish the round in play before dealing another."
    for action in ("hit", "hit", "stand"):
        guest.act(round_id, action)
    service.stacked.append(STACK)
    guest.bet("classic", 500)
    assert guest.post("/tables/classic/deal").json()["status"] == "playing"  # the round ended: the next deals


def test_a_settlement_pays_every_winner_in_the_same_round_trips(http: TestClient, service: GameService, clock: Clock,
                                                                tmp_path: Path) -> None:
    """The decision that settles a power round pays every winner with it: as many round trips for 12 winners as for
    3 (each winner's payment was a round trip of its own, 1,000 at a table of 1,000), and each winner is paid once."""
    if service.db.engine.dialect.name != "postgresql":
        pytest.skip("round trips to PostgreSQL")

    def settle(players: int) -> int:
        crowd = [new_guest(http) for _ in range(players)]
        service.stacked.append(POWER_DEALER_BUSTS)
        next_shoe(service, "power")
        round_id = dealt_shared_round(service, clock, crowd, bet=500)
        before = [player.balance("EUR") for player in crowd]
        for player in crowd[:-1]:
            assert player.act(round_id, "stand").json()["status"] == "playing"
        with round_trips(service.db, tmp_path / f"settle-{players}.trace") as counted:
            assert crowd[-1].act(round_id, "stand").json()["status"] == "settled"
        assert [player.balance("EUR") for player in crowd] == [balance + 1000 for balance in before]
        return counted[0]

    settle(2)  # the power table's first round: its accounts' ids and statements known from here on
    assert settle(3) == settle(12)
    with service.db.sessions() as session:
        assert unreconciled_accounts(session) == []


def test_a_crowds_wins_and_refunds_reach_every_player_once_with_their_balances_on_record(
        http: TestClient, service: GameService, clock: Clock) -> None:
    """Several winners paid at once (PostgreSQL: in two statements) and several stakes refunded at once by a void:
    each player's money moves once, the ledger reconciles, and each seat records the balance the player was left."""
    def seats_after(round_id: int) -> dict[int, int | None]:
        with service.db.sessions() as session:
            return dict(session.execute(select(RoundSeat.player_id, RoundSeat.balance_after)
                                        .where(RoundSeat.round_id == round_id)).all())

    crowd = [new_guest(http) for _ in range(4)]
    service.stacked.append(POWER_DEALER_BUSTS)
    next_shoe(service, "power")
    before = [player.balance("EUR") for player in crowd]
    round_id = dealt_shared_round(service, clock, crowd, bet=500)
    for player in crowd:
        player.act(round_id, "stand")
    won = [player.balance("EUR") for player in crowd]
    assert won == [balance + 500 for balance in before]  # staked 500, paid 1,000
    assert seats_after(round_id) == {player.player_id(): balance for player, balance in zip(crowd, won, strict=True)}

    service.stacked.append(POWER_DEALER_BUSTS)  # a random shoe's dealer blackjack would settle it before the void
    next_shoe(service, "power")
    round_id = dealt_shared_round(service, clock, crowd, bet=500)
    assert [player.balance("EUR") for player in crowd] == [balance - 500 for balance in won]
    service.rounds.void(round_id, "a test's malfunction")
    assert [player.balance("EUR") for player in crowd] == won
    assert seats_after(round_id) == {player.player_id(): balance for player, balance in zip(crowd, won, strict=True)}
    with service.db.sessions() as session:
        assert unreconciled_accounts(session) == []


def test_a_transaction_without_held_writes_makes_the_round_trips_it_did(db: Database, tmp_path: Path) -> None:
    if db.engine.dialect.name != "postgresql":
        pytest.skip("round trips to PostgreSQL")
    with round_trips(db, tmp_path / "alone.trace") as counted, db.transaction() as session:
        run(session, MAKE, account("alone"))
        run(session, BALANCE, {"who": "alone"})
    assert counted == [3]  # BEGIN with the first statement, the second, COMMIT
    with round_trips(db, tmp_path / "held.trace") as counted, db.transaction() as session:
        run(session, MAKE, account("with"))
        defer(session, RAISE, {"who": "with", "amount": 1})
        assert run(session, BALANCE, {"who": "with"}).scalar_one() == 1
        defer(session, RAISE, {"who": "with", "amount": 1})
    assert counted == [3]  # BEGIN with the insert, the update with the select, the update with COMMIT



def test_without_pipeline_mode_a_held_write_runs_at_once(db: Database, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A psycopg whose libpq has no pipeline mode (older than 14) holds nothing back: each write goes alone."""
    if db.engine.dialect.name != "postgresql":
        pytest.skip("round trips to PostgreSQL")
    monkeypatch.setattr(direct, "_pipelines", lambda: False)
    with round_trips(db, tmp_path / "alone.trace") as counted, db.transaction() as session:
        run(session, MAKE, account("no pipeline"))
        defer(session, RAISE, {"who": "no pipeline", "amount": 1})
    assert counted == [4]  # BEGIN, the insert, the update, COMMIT
    assert balances(db) == {"no pipeline": 1}


@pytest.mark.parametrize("first", ["run", "defer", "sqlalchemy", "text", "savepoint", "connection"])
def test_a_transaction_is_one_whichever_way_its_first_statement_goes(db: Database, first: str) -> None:
    """On PostgreSQL psycopg begins no transaction itself (direct.begin_with_first_statement): whatever sends a
    transaction's first statement sends its BEGIN ahead of it, so a rollback drops every statement of it (without
    the BEGIN each would have been committed alone, and a SAVEPOINT refused outside a transaction block)."""
    insert_text = text("INSERT INTO accounts (owner, currency, version, balance) VALUES ('first', 'EUR', 0, 0)")
    if first == "connection":  # a plain connection, as store._stored reads a stored answer
        with db.engine.connect() as connection:
            connection.execute(insert_text)
            connection.execute(MAKE, account("second"))
            connection.rollback()
        assert balances(db) == {}
        return
    with pytest.raises(RuntimeError), db.transaction() as session:
        if first == "run":
            run(session, MAKE, account("first"))
        elif first == "defer":
            defer(session, MAKE, account("first"))
        elif first == "sqlalchemy":
            session.execute(MAKE, account("first"))
        elif first == "text":
            session.execute(insert_text)
        else:
            with session.begin_nested():
                run(session, MAKE, account("first"))
        run(session, MAKE, account("second"))
        session.execute(MAKE, account("third"))
        raise RuntimeError("the request fails")
    assert balances(db) == {}


def test_a_transactions_begin_goes_with_its_first_statement_and_an_empty_one_sends_nothing(db: Database,
                                                                                         tmp_path: Path) -> None:
    if db.engine.dialect.name != "postgresql":
        pytest.skip("round trips to PostgreSQL")
    from twentyone.server.store import end_read

    with round_trips(db, tmp_path / "empty.trace") as counted, db.transaction():
        pass
    assert counted == [0]  # psycopg sent a BEGIN and a COMMIT for nothing
    with db.transaction() as session:
        run(session, MAKE, account("read", 5))
    with round_trips(db, tmp_path / "write.trace") as counted, db.transaction() as session:
        assert run(session, BALANCE, {"who": "read"}).scalar_one() == 5
        defer(session, RAISE, {"who": "read", "amount": 1})
    assert counted == [2]  # BEGIN with the read; the write with COMMIT (three before: the BEGIN alone)
    assert "\n".join(sent_by_round_trip((tmp_path / "write.trace").read_text())).count('"BEGIN"') == 1
    with round_trips(db, tmp_path / "read.trace") as counted, db.readers() as session:
        assert run(session, BALANCE, {"who": "read"}).scalar_one() == 6
        end_read(session)
    assert counted == [1]  # a read: its statement alone, no BEGIN, no COMMIT (three before)


def test_a_read_takes_no_lock_that_would_not_last(db: Database) -> None:
    """A read runs outside any transaction block on PostgreSQL, so a transaction's advisory lock taken there would be
    let go at once: refused, on both databases, before it reaches one."""
    from twentyone.server.cluster import lock_in_transaction
    from twentyone.server.direct import WriteInRead

    with db.readers() as session, pytest.raises(WriteInRead, match="A read takes no lock"):
        lock_in_transaction(session, "forming:classic")
    with db.transaction() as session:
        assert lock_in_transaction(session, "forming:classic") == (db.engine.dialect.name == "postgresql")


def test_a_server_side_cursor_is_the_first_statement_of_a_transaction(db: Database) -> None:
    """The BEGIN owed goes on a cursor of its own: a server-side cursor (yield_per) runs nothing but its query."""
    with db.transaction() as session:
        run(session, MAKE, [account("one"), account("two")])
    with pytest.raises(RuntimeError), db.transaction() as session:
        rows = session.execute(select(ACCOUNTS.c.owner).order_by(ACCOUNTS.c.owner).execution_options(yield_per=1))
        assert [row.owner for row in rows] == ["one", "two"]
        run(session, MAKE, account("three"))
        raise RuntimeError("the request fails")
    assert balances(db) == {"one": 0, "two": 0}
