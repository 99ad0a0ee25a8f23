"""Upgrades of a database with rows in it: what each migration makes of the rows already there."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from alembic import command
from alembic.config import Config
from alembic.operations import Operations
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, create_engine, select, text
from sqlalchemy.orm import Session
from sqlalchemy.pool import NullPool

import twentyone.server.db as db
from twentyone.server.db import Database
from twentyone.server.models import Round
from twentyone.server.round_ids import RoundIds
from twentyone.server.store import Store


def alembic_config(url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(Path(db.__file__).parent / "migrations"))
    config.set_main_option("sqlalchemy.url", url)
    return config


@contextmanager
def at_revision(url: str, revision: str, table_id: str) -> Iterator[Engine]:
    """The database upgraded to ``revision`` alone, with one shoe (id 1) at ``table_id`` for rounds to draw from."""
    command.upgrade(alembic_config(url), revision)
    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.begin() as connection:
            connection.execute(text(
                "INSERT INTO shoes (id, table_id, cards, salt, commitment, position, finished, created_at) "
                "VALUES (1, :table_id, '2S 3D', 's', 'c', 0, false, CURRENT_TIMESTAMP)"), {"table_id": table_id})
        yield engine
    finally:
        engine.dispose()


def test_rounds_with_decisions_before_0005_keep_their_own_pace_and_the_rest_are_lockstep(database_url: str) -> None:
    """A power round's log from before lockstep is out of turn in lockstep: the upgrade marks every round with
    decisions on record ``lockstep`` false (replayed as played); one with none yet goes on in lockstep, and a
    round written after the upgrade is lockstep."""
    with at_revision(database_url, "0004", "power") as engine:
        with engine.begin() as connection:
            for round_id, status in ((1, "settled"), (3, "playing"), (4, "playing"), (5, "betting")):
                connection.execute(text(
                    "INSERT INTO rounds (id, table_id, variant, status, shoe_id, shoe_start, actions, version, "
                    f"created_at) VALUES ({round_id}, 'power', 'power', '{status}', 1, 0, '[]', 0, CURRENT_TIMESTAMP)"))
            for round_id in (1, 3):  # rounds 1 and 3 have decisions on record; 4 was dealt, 5 takes bets
                connection.execute(text("INSERT INTO round_actions (round_id, seq, player_id, action, source) "
                                        f"VALUES ({round_id}, 0, 1, 'hit', 'player')"))
        db.migrate(database_url)
        with Session(engine) as session, session.begin():  # as the server writes a round: through the model
            session.add(Round(id=2, table_id="power", variant="power", status="betting", shoe_id=1, shoe_start=0,
                              actions=[], version=0, created_at=datetime.now(UTC)))
        with engine.connect() as connection:
            rows = connection.execute(text("SELECT id, lockstep FROM rounds ORDER BY id")).all()
        assert [(row[0], bool(row[1])) for row in rows] == [(1, False), (2, True), (3, False), (4, True), (5, True)]


def test_seats_of_rounds_played_before_0007_count_the_timers_decisions_from_the_log(database_url: str) -> None:
    """Each seat's ``timed_out`` comes from its round's log: the player's decisions whose source is the timer,
    not their own, nor another player's time-outs in the same round."""
    with at_revision(database_url, "0006", "multiplayer") as engine:
        with engine.begin() as connection:
            for player_id, name in ((1, "ann"), (2, "bob")):
                connection.execute(text(
                    "INSERT INTO players (id, name, role, guest, settings, limits, created_at) "
                    f"VALUES ({player_id}, '{name}', 'player', false, '{{}}', '{{}}', CURRENT_TIMESTAMP)"))
            connection.execute(text(
                "INSERT INTO rounds (id, table_id, variant, status, shoe_id, shoe_start, actions, version, "
                "created_at) VALUES (1, 'multiplayer', 'multiplayer', 'settled', 1, 0, '[]', 4, CURRENT_TIMESTAMP)"))
            for position, player_id in ((1, 1), (2, 2)):
                connection.execute(text(
                    "INSERT INTO round_seats (round_id, player_id, position, bets, confirmed, staked, returned) "
                    f"VALUES (1, {player_id}, {position}, '[]', true, 100, 0)"))
            for seq, (player_id, action, source) in enumerate(((1, "no-insurance", "timeout"), (1, "stand", "timeout"),
                                                               (2, "hit", "player"), (2, "stand", "player"))):
                connection.execute(text("INSERT INTO round_actions (round_id, seq, player_id, action, source) "
                                        f"VALUES (1, {seq}, {player_id}, '{action}', '{source}')"))
        db.migrate(database_url)
        with engine.connect() as connection:
            rows = connection.execute(text("SELECT player_id, timed_out FROM round_seats ORDER BY player_id")).all()
        assert [tuple(row) for row in rows] == [(1, 2), (2, 0)]


def test_rounds_voided_at_their_windows_close_before_0009_get_the_close_as_their_end(database_url: str) -> None:
    """Such a round was left without ``settled_at``, so a report by period would have missed it: the upgrade gives
    it its window's close (or, with none on record, its start); every other round keeps its own."""
    with at_revision(database_url, "0008", "multiplayer") as engine:
        with engine.begin() as connection:
            rows = ((1, "void", "2026-11-29 12:00:00", "2026-11-29 12:00:15", None),
                    (2, "void", "2026-11-29 13:00:00", None, None),
                    (3, "void", "2026-11-29 14:00:00", "2026-11-29 14:00:15", "2026-11-29 14:05:00"),
                    (4, "settled", "2026-11-29 15:00:00", "2026-11-29 15:00:15", "2026-11-29 15:01:00"),
                    (5, "playing", "2026-11-29 16:00:00", "2026-11-29 16:00:15", None))
            for round_id, status, created, closes, ended in rows:
                connection.execute(text(
                    "INSERT INTO rounds (id, table_id, variant, status, shoe_id, shoe_start, actions, version, "
                    "created_at, betting_closes_at, settled_at) VALUES (:id, 'multiplayer', 'multiplayer', :status, "
                    "1, 0, '[]', 0, :created, :closes, :ended)"),
                    {"id": round_id, "status": status, "created": datetime.fromisoformat(created),
                     "closes": closes and datetime.fromisoformat(closes),
                     "ended": ended and datetime.fromisoformat(ended)})
        db.migrate(database_url)
        with Session(engine) as session:
            ended_at = {row.id: row.settled_at and row.settled_at.replace(tzinfo=None).isoformat(" ")
                        for row in session.scalars(select(Round).order_by(Round.id))}
        assert ended_at == {1: "2026-11-29 12:00:15", 2: "2026-11-29 13:00:00", 3: "2026-11-29 14:05:00",
                            4: "2026-11-29 15:01:00", 5: None}


def test_a_url_with_a_percent_sign_migrates(tmp_path: Path) -> None:
    """Alembic's options interpolate % (configparser): a URL's own, as in ?host=%2Ftmp for PostgreSQL's Unix socket
    or an escaped password, made the migration fail with "invalid interpolation syntax" before the server started."""
    folder = tmp_path / "100%"
    url = f"sqlite:///{folder / 'server.db'}"
    db.migrate(url)
    with create_engine(url).connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM rounds")).scalar() == 0


def head(config: Config) -> str | None:
    return ScriptDirectory.from_config(config).get_current_head()


def ledger_indexes(engine: Engine) -> dict[str, int]:
    """The ledger's indexes by name, each with the identity of its build (PostgreSQL's oid; SQLite's root page)."""
    with engine.connect() as connection:
        if engine.dialect.name == "postgresql":
            rows = connection.execute(text("SELECT indexrelid::regclass::text, indexrelid::int FROM pg_index "
                                           "WHERE indrelid = 'ledger'::regclass AND NOT indisprimary"))
        else:
            rows = connection.execute(text("SELECT name, rootpage FROM sqlite_master WHERE type = 'index' "
                                           "AND tbl_name = 'ledger' AND name NOT LIKE 'sqlite_autoindex%'"))
        return {name: identity for name, identity in rows}


def test_a_migration_that_crashed_half_way_is_finished_by_the_next_start(database_url: str) -> None:
    """A start dies inside 0010, after its new index is built and before the index it replaces is dropped. On SQLite
    the migration is one transaction, so nothing of it is left (its ``CREATE INDEX`` used to commit alone); on
    PostgreSQL the build ran ``CONCURRENTLY``, outside any transaction, and stays, valid. Either way the next start
    finishes the revision, and keeps a finished build rather than reading the whole ledger again."""
    config = alembic_config(database_url)
    command.upgrade(config, "0009")
    engine = create_engine(database_url, poolclass=NullPool)
    try:
        before = ledger_indexes(engine)

        drop_index = Operations.drop_index

        def crash(self: Operations, name: str, *args: Any, **kwargs: Any) -> None:
            if name == "ix_ledger_account_id":  # the replaced index's drop: the new one is built
                raise RuntimeError("the process died")
            drop_index(self, name, *args, **kwargs)

        with mock.patch.object(Operations, "drop_index", crash), pytest.raises(RuntimeError, match="died"):
            command.upgrade(config, "head")
        crashed = ledger_indexes(engine)
        with engine.connect() as connection:
            assert connection.execute(text("SELECT version_num FROM alembic_version")).scalar() == "0009"
        if engine.dialect.name == "sqlite":
            assert crashed == before
        else:
            assert crashed.keys() == before.keys() | {"ix_ledger_account_created"}
        db.migrate(database_url)
        after = ledger_indexes(engine)
        with engine.connect() as connection:
            assert connection.execute(text("SELECT version_num FROM alembic_version")).scalar() == head(config)
    finally:
        engine.dispose()
    assert after.keys() == before.keys() - {"ix_ledger_account_id"} | {"ix_ledger_account_created"}
    if engine.dialect.name == "postgresql":
        assert after["ix_ledger_account_created"] == crashed["ix_ledger_account_created"]  # the same build, kept



def test_a_migration_on_sqlite_waits_for_a_writer_beside_it_instead_of_failing(tmp_path: Path) -> None:
    """A migration's transaction reads before it writes (Alembic's version, a batch migration's table). Begun deferred,
    it failed at its first write ("database is locked", without waiting) if another connection committed in between:
    a new version's server starting beside a process of the old one still writing. It takes the write lock at its
    start, as the server's writers do: the other writer waits for it, and both go through."""
    url = f"sqlite:///{tmp_path / 'server.db'}"
    command.upgrade(alembic_config(url), "0009")
    other = sqlite3.connect(tmp_path / "server.db", timeout=30, check_same_thread=False)
    other.execute("CREATE TABLE beside (x INTEGER)")
    other.commit()
    writer = threading.Thread(target=lambda: (other.execute("INSERT INTO beside VALUES (1)"), other.commit()))
    create_index = Operations.create_index

    def after_another_commit(self: Operations, *args: Any, **kwargs: Any) -> Any:
        if writer.ident is None:  # at the first index a migration makes (0010's); the later ones just go on
            writer.start()
            writer.join(timeout=1)  # a deferred migration lets it commit here; an immediate one holds it until its end
        return create_index(self, *args, **kwargs)

    with mock.patch.object(Operations, "create_index", after_another_commit):
        db.migrate(url)
    writer.join(timeout=30)
    assert not writer.is_alive() and other.execute("SELECT count(*) FROM beside").fetchone() == (1,)
    other.close()
    with create_engine(url).connect() as connection:
        assert connection.execute(text("SELECT version_num FROM alembic_version")).scalar() == head(
            alembic_config(url))


def test_a_new_sqlite_database_is_in_wal_mode_before_its_first_server_connection(tmp_path: Path) -> None:
    """The migration leaves a new database in WAL, so a start's first connections, opened together, need not switch it
    (a switch needs the file to itself, and two at once failed one of them with "database is locked" at once)."""
    path = tmp_path / "new.db"
    db.migrate(f"sqlite:///{path}")
    untouched = sqlite3.connect(path)  # asks for no mode of its own: it reads the one in the file
    try:
        assert untouched.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    finally:
        untouched.close()


def test_round_numbers_taken_ahead_are_never_given_again_after_0011(database_url: str) -> None:
    """A deal at an operator's wallet takes its round's number before it writes the round (its debit names it). On
    SQLite before 0011 a new row took one above the largest in the table, so a row written without a number took the
    one a deal had taken and not yet written. After the upgrade the rows keep their numbers and what refers to them,
    and rows written without a number skip those taken ahead (PostgreSQL's sequence already behaved so)."""
    with at_revision(database_url, "0010", "classic") as engine:
        with engine.begin() as connection:
            connection.execute(text(
                "INSERT INTO players (id, name, role, guest, settings, limits, created_at) "
                "VALUES (1, 'ann', 'player', false, '{}', '{}', CURRENT_TIMESTAMP)"))
            for round_id in (1, 7):
                connection.execute(text(
                    "INSERT INTO rounds (id, table_id, variant, status, shoe_id, shoe_start, actions, version, "
                    f"created_at) VALUES ({round_id}, 'classic', 'classic', 'settled', 1, 0, '[]', 0, "
                    "CURRENT_TIMESTAMP)"))
            connection.execute(text(
                "INSERT INTO round_seats (round_id, player_id, position, bets, confirmed, staked, returned) "
                "VALUES (7, 1, 1, '[]', true, 100, 0)"))
        db.migrate(database_url)
        if engine.dialect.name == "postgresql":  # rows given their numbers by hand: the sequence goes past them
            with engine.begin() as connection:
                connection.execute(text("SELECT setval(pg_get_serial_sequence('rounds', 'id'), 7)"))
        ids = RoundIds(Store(Database(database_url), lambda: datetime.now(UTC)))
        try:
            taken = ids.take()
            with Session(engine) as session, session.begin():
                row = Round(table_id="classic", variant="classic", status="settled", shoe_id=1, shoe_start=0,
                            actions=[], version=0, created_at=datetime.now(UTC))
                session.add(row)
                session.flush()
                written = row.id
            taken_after = ids.take()
        finally:
            ids.store.db.close()
        assert (taken, written, taken_after) == (8, 9, 10)  # in the order they were made
        with engine.connect() as connection:
            assert connection.execute(text("SELECT id FROM rounds ORDER BY id")).scalars().all() == [1, 7, 9]
            assert connection.execute(text("SELECT round_id FROM round_seats")).scalars().all() == [7]
            if engine.dialect.name == "sqlite":
                assert connection.execute(text("PRAGMA foreign_key_check")).all() == []
                indexes = {row[1] for row in connection.execute(text("PRAGMA index_list('rounds')"))}
                # ix_rounds_status kept by the rebuild: 0014 drops it (no IF EXISTS on SQLite) for ix_rounds_status_id
                assert {"ix_rounds_table_status_id", "ix_rounds_status_settled_at", "ix_rounds_status_id"} <= indexes


def test_rounds_before_0013_get_the_currency_their_money_moved_in_else_their_tables(database_url: str) -> None:
    """A round had no currency of its own and was read in its table's as configured now (a table whose currency
    changed paid its dollar stakes in euros). The upgrade gives each the currency of its ledger rows, else of its
    calls to an operator's wallet, else its table's as configured then (shipped or the operator's)."""
    with at_revision(database_url, "0012", "classic") as engine:
        with engine.begin() as connection:
            connection.execute(text("INSERT INTO table_configs (id, spec, created_at) VALUES ('swiss', :spec, "
                                    "CURRENT_TIMESTAMP)"), {"spec": '{"variant": "classic", "currency": "CHF"}'})
            for round_id, table_id in ((1, "classic"), (2, "classic"), (3, "classic"), (4, "swiss"), (5, "gone")):
                connection.execute(text(
                    "INSERT INTO rounds (id, table_id, variant, status, shoe_id, shoe_start, actions, version, "
                    "created_at) VALUES (:id, :table_id, 'classic', 'settled', 1, 0, '[]', 0, CURRENT_TIMESTAMP)"),
                    {"id": round_id, "table_id": table_id})
            connection.execute(text("INSERT INTO accounts (id, owner, currency, version, balance) "
                                    "VALUES (1, 'player:1', 'EUR', 0, 0)"))
            connection.execute(text("INSERT INTO ledger (transfer_id, account_id, amount, kind, round_id, created_at) "
                                    "VALUES ('t1', 1, -500, 'stake', 1, CURRENT_TIMESTAMP)"))
            connection.execute(text("INSERT INTO wallet_calls (tx_id, player_id, currency, kind, amount, round_id, "
                                    "status, attempts, created_at) VALUES ('w1', 1, 'GBP', 'debit', 500, 2, 'done', "
                                    "1, CURRENT_TIMESTAMP)"))
        db.migrate(database_url)
        with engine.connect() as connection:
            currencies = dict(connection.execute(text("SELECT id, currency FROM rounds ORDER BY id")).all())
        assert currencies == {1: "EUR", 2: "GBP", 3: "USD", 4: "CHF", 5: None}


def test_a_database_with_calls_to_an_operators_wallet_before_0015_is_taken_as_one_until_the_server_starts(
        database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`admin credit` goes by where the server's latest start kept the balances (``wallet_modes``). A database
    upgraded before any start recorded one is read as before: with calls to an operator's wallet, the upgrade records
    an operator's wallet (named by no start), and the command refuses until the server starts with the built-in
    ledger, which records that and lets it credit; with none, nothing is recorded, and it credits. Before, a call in
    the database refused it for good."""
    from fastapi.testclient import TestClient
    from server_helpers import OPERATOR

    from twentyone.cli.main import _operators_wallet_in_use
    from twentyone.server.app import create_app
    from twentyone.server.config import Settings

    monkeypatch.delenv("TWENTYONE_OPERATOR_WALLET", raising=False)
    config = alembic_config(database_url)

    def recorded() -> list[tuple[str, str | None]]:
        with engine.connect() as connection:
            return [tuple(row) for row in connection.execute(text("SELECT mode, wallet FROM wallet_modes ORDER BY id"))]

    def refusal() -> str | None:
        server = Database(database_url)
        try:
            return _operators_wallet_in_use(server)
        finally:
            server.close()

    with at_revision(database_url, "0014", "classic") as engine:
        db.migrate(database_url)
        assert recorded() == [] and refusal() is None
        command.downgrade(config, "0014")
        with engine.begin() as connection:
            connection.execute(text("INSERT INTO wallet_calls (tx_id, player_id, currency, kind, amount, round_id, "
                                    "status, attempts, created_at) VALUES ('w1', 1, 'USD', 'credit', 500, NULL, "
                                    "'done', 1, CURRENT_TIMESTAMP)"))
        db.migrate(database_url)
        assert recorded() == [("operator", None)]
        assert "recorded by the upgrade" in (refusal() or "")
        with TestClient(create_app(Settings(database_url, tmp_path, OPERATOR), timers=False)):
            pass
        assert recorded() == [("operator", None), ("built-in", None)] and refusal() is None


def test_unfinished_shoes_before_0017_get_the_game_their_first_round_was_dealt_in(database_url: str) -> None:
    """A shoe knew its table, not its game, and a table whose game changed dealt the new game from it. The upgrade
    gives each unfinished shoe the game of its first round, the one it was shuffled for: a power shoe that went on
    to deal multiplayer rounds after such a change is power's (a first version took the least name, multiplayer,
    and the defect went on: found by review). A fresh one gets its table's configured game where it holds that
    game's cards and cut card (its published commitment stays the one dealt: a first version left it to the start,
    which replaced it, found by review); else none, as a finished one."""
    from twentyone.variants import builtin_rules

    deck = " ".join(str(card) for card in builtin_rules("single-deck").shoe.composition.cards())
    with at_revision(database_url, "0016", "power") as engine:
        with engine.begin() as connection:
            for shoe_id, table_id, cut_card in ((4, "single-deck", None), (5, "single-deck", 39), (6, "gone", None)):
                connection.execute(text(
                    "INSERT INTO shoes (id, table_id, player_id, cards, salt, commitment, position, cut_card, "
                    "finished, created_at) VALUES (:id, :table_id, 7, :cards, 's', 'c', 0, :cut_card, false, "
                    "CURRENT_TIMESTAMP)"), {"id": shoe_id, "table_id": table_id, "cards": deck, "cut_card": cut_card})
            for shoe_id, finished in ((2, False), (3, True)):  # 1: fresh, unfinished (at_revision's)
                connection.execute(text(
                    "INSERT INTO shoes (id, table_id, cards, salt, commitment, position, finished, created_at) "
                    "VALUES (:id, 'power', '2S 3D', 's', 'c', 0, :finished, CURRENT_TIMESTAMP)"),
                    {"id": shoe_id, "finished": finished})
            for round_id, shoe_id, variant in ((1, 2, "power"), (2, 2, "multiplayer"), (3, 3, "power")):
                connection.execute(text(
                    "INSERT INTO rounds (id, table_id, variant, status, shoe_id, shoe_start, actions, version, "
                    "created_at) VALUES (:id, 'power', :variant, 'settled', :shoe_id, 0, '[]', 0, CURRENT_TIMESTAMP)"),
                    {"id": round_id, "shoe_id": shoe_id, "variant": variant})
        db.migrate(database_url)
        with engine.connect() as connection:
            variants = dict(connection.execute(text("SELECT id, variant FROM shoes ORDER BY id")).all())
        # 1: power's configured game, but two cards; 5: a single deck with a cut card; 6: at a table configured nowhere
        assert variants == {1: None, 2: "power", 3: None, 4: "single-deck", 5: None, 6: None}
