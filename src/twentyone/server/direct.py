"""The request path's Core statements on the driver's cursor: compiled once, run without SQLAlchemy's execution layer.

A request runs 7-15 statements that SQLite answers in about a microsecond each, but each one through
``Session.execute`` cost about 21 us of Python here (``Connection.execute`` 15 us, ``exec_driver_sql`` 11 us, this
module 6 us; on PostgreSQL 100 us against 42 us on psycopg's own cursor: pinned to one CPU, ``docs/server.md``,
"Load"). :func:`run` compiles a statement once by SQLAlchemy's own compiler, passes its parameters and columns
through SQLAlchemy's own type processors (JSON, datetimes, booleans), runs it on the session's connection in the
session's transaction after the session's autoflush, and hands a driver's error to SQLAlchemy's own handler (the
same exception, and a connection the server ended discarded with the pool's older ones). What it reads, writes
and raises is what ``session.execute`` would have, less the bookkeeping.

It steps aside (plain ``session.execute``) where that bookkeeping is wanted or the shortcut would differ:

- while anyone watches the statements (SQLAlchemy's execution or cursor events, or its log: ``echo``, or the
  ``sqlalchemy.engine`` logger at INFO): the tests that count statements or inject storage faults, and an operator
  reading the log, see every statement;
- for a statement it cannot run as compiled once: ORM entities, an ``IN`` of a list given at execution, values
  made at execution (Python-side column defaults, callables), text, or a type whose processor needs the driver's
  type code;
- on databases and drivers other than SQLite (sqlite3) and PostgreSQL (psycopg 3).

Pass only statements built once (module constants): compiled forms are kept by the statement's identity.
:func:`defer` runs a statement whose answer nobody reads; on PostgreSQL it waits to go with the transaction's next
statement or its ``COMMIT``, in one round trip.
:class:`Record` and :func:`save` read a row for a change and write back what was set on it, without the ORM.
"""

from __future__ import annotations

import functools
import json
import logging
import re
import threading
import weakref
from collections import namedtuple
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn, Protocol

from sqlalchemy import Table, bindparam, event, update
from sqlalchemy import exc as db_errors
from sqlalchemy.engine import Connection, Dialect, Engine
from sqlalchemy.orm import Session
from sqlalchemy.sql.base import Executable
from sqlalchemy.sql.dml import UpdateBase
from sqlalchemy.sql.selectable import Select

Params = Mapping[str, Any]


class Result(Protocol):
    """What the request path reads of a statement's result: SQLAlchemy's ``Result`` and :class:`Rows` alike."""

    def first(self) -> Any: ...
    def one(self) -> Any: ...
    def scalar(self) -> Any: ...
    def scalar_one(self) -> Any: ...
    def all(self) -> Sequence[Any]: ...
    def __iter__(self) -> Iterator[Any]: ...


class Rows:
    """Rows already fetched, read as SQLAlchemy's ``Result`` reads them (``first``, ``one``, ``scalar`` ...);
    ``None`` for a statement that answers with no rows, whose reads raise as SQLAlchemy's do.

    >>> Pair = namedtuple("Pair", ["id", "name"])
    >>> rows = Rows([Pair(1, "a")])
    >>> rows.first().name, rows.scalar(), rows.scalar_one(), rows.one()._asdict()
    ('a', 1, 1, {'id': 1, 'name': 'a'})
    >>> Rows([]).first() is None, Rows([]).scalar() is None
    (True, True)
    >>> Rows([]).one()
    Traceback (most recent call last):
    ...
    sqlalchemy.exc.NoResultFound: No row was found when one was required
    >>> Rows(None).first()
    Traceback (most recent call last):
    ...
    sqlalchemy.exc.ResourceClosedError: This result object does not return rows.
    """

    __slots__ = ("_rows",)

    def __init__(self, rows: list[Any] | None) -> None:
        self._rows = rows

    def all(self) -> list[Any]:
        if self._rows is None:
            raise db_errors.ResourceClosedError("This result object does not return rows.")
        return self._rows

    def first(self) -> Any:
        rows = self.all()
        return rows[0] if rows else None

    def one(self) -> Any:
        rows = self.all()
        if not rows:
            raise db_errors.NoResultFound("No row was found when one was required")
        if len(rows) > 1:
            raise db_errors.MultipleResultsFound("Multiple rows were found when exactly one was required")
        return rows[0]

    def scalar(self) -> Any:
        rows = self.all()
        return rows[0][0] if rows else None

    def scalar_one(self) -> Any:
        return self.one()[0]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.all())


Processor = Callable[[Any], Any] | None
_UNSET = object()  # a parameter the statement does not give a value of its own


@dataclass(frozen=True)
class Compiled:
    """One statement compiled for one dialect and one set of parameter names."""

    sql: str
    names: tuple[str, ...]  # its parameters: in the order of their ``?`` (SQLite) or ``$n`` (psycopg)
    keys: tuple[str, ...]  # each parameter's name in the SQL (PostgreSQL escapes some characters of a name)
    positional: bool
    literals: tuple[Any, ...]  # a value per parameter: the statement's own, where no parameter of that name is given
    binds: tuple[Processor, ...]  # SQLAlchemy's type processors, a parameter's Python value to the driver's
    results: tuple[Processor, ...]  # and a column's driver value to Python's
    answers: bool  # whether it answers with rows
    row: list[type] = field(default_factory=list)  # the rows' named tuple, made from the first answer's column names

    def values(self, params: Params) -> tuple[Any, ...] | dict[str, Any]:
        out = []
        for name, literal, process in zip(self.names, self.literals, self.binds, strict=True):
            value = params.get(name, literal)
            if value is _UNSET:
                raise db_errors.StatementError(f"A value is required for bind parameter {name!r}", self.sql,
                                               dict(params), None)
            try:
                out.append(value if process is None else process(value))  # None too: JSON's None is 'null'
            except Exception as error:  # as SQLAlchemy reports a value its type cannot take
                raise db_errors.StatementError(f"({type(error).__name__}) {error}", self.sql, dict(params),
                                               error) from error
        return tuple(out) if self.positional else dict(zip(self.keys, out, strict=True))

    def rows(self, fetched: list[tuple[Any, ...]], cursor: Any) -> list[Any]:
        """``fetched`` as named rows; the names are read off ``cursor`` once, at the statement's first answer.

        Not at every answer: psycopg builds ``cursor.description`` anew at each read, a column object per column
        (about 0.6 us each, pinned: 8.5 us for a round's 14 columns), for names that never change.
        """
        if not self.row:  # the names SQLAlchemy gives its rows' keys too ("balance", "count_1")
            self.row.append(namedtuple("Row", [column[0] for column in cursor.description], rename=True))
        make, results = self.row[0]._make, self.results  # type: ignore[attr-defined]
        if not any(results):
            return [make(row) for row in fetched]
        return [make(value if process is None else process(value) for value, process in zip(row, results, strict=True))
                for row in fetched]


READING = "twentyone.reading"  # session.info: a read's session (db.Database.readers), which must never write


class WriteInRead(db_errors.InvalidRequestError):
    """A read's session was asked to write: a bug in the caller. Reads end with ``COMMIT`` (``store.end_read``), so
    a write there would be kept; it is refused instead, before it reaches the database."""

    @classmethod
    def of(cls, statement: object) -> WriteInRead:
        """The refusal of ``statement``, named by the start of its SQL.

        >>> from sqlalchemy import delete
        >>> from twentyone.server.models import ACCOUNTS
        >>> str(WriteInRead.of(delete(ACCOUNTS)))
        'A read may not write (DELETE FROM accounts).'
        """
        return cls(f"A read may not write ({statement!s:.60}).")


_compiled: dict[tuple[Any, ...], tuple[Executable, Compiled | None]] = {}
_compiling = threading.Lock()
DIALECTS = ("sqlite+pysqlite", "postgresql+psycopg")  # the drivers this module runs statements on
_WATCHED = "twentyone.watched"  # transaction_notes: whether anyone watches the transaction's statements
_CURSOR = "twentyone.cursor"  # SQLite: the DBAPI connection's info: its one cursor, made once


def compile_statement(statement: Executable, keys: tuple[str, ...], dialect: Dialect) -> Compiled | None:
    """``statement`` as ``dialect`` runs it for parameters named ``keys`` (which, as in SQLAlchemy, say the columns an
    ``INSERT`` or ``UPDATE`` without values of its own sets); None if it cannot run as compiled once.

    >>> from sqlalchemy import bindparam, create_engine, select
    >>> from twentyone.server.models import ACCOUNTS, Account
    >>> query = select(ACCOUNTS.c.balance).where(ACCOUNTS.c.id == bindparam("id"), ACCOUNTS.c.currency == "USD")
    >>> compiled = compile_statement(query, ("id",), create_engine("sqlite://").dialect)
    >>> compiled.sql.split("WHERE")[1].strip(), compiled.values({"id": 7})
    ('accounts.id = ? AND accounts.currency = ?', (7, 'USD'))
    >>> compiled = compile_statement(query, ("id",), create_engine("postgresql+psycopg://").dialect)
    >>> compiled.sql.split("WHERE")[1].strip(), compiled.values({"id": 7})
    ('accounts.id = $1::INTEGER AND accounts.currency = $2::VARCHAR', (7, 'USD'))
    >>> compile_statement(select(Account), (), create_engine("sqlite://").dialect) is None  # ORM entities
    True
    """
    if statement._propagate_attrs.get("compile_state_plugin") == "orm":
        return None  # ORM entities: SQLAlchemy's ORM loads objects (and the statement compiles through the ORM)
    columns = _columns(statement)
    if columns is None:
        return None
    compiled = statement.compile(dialect=dialect, column_keys=list(keys))  # type: ignore[attr-defined]
    if compiled.insert_prefetch or compiled.update_prefetch or compiled.literal_execute_params \
            or compiled.post_compile_params:
        return None  # values made at each execution: Python-side defaults, or values rendered into the SQL
    by_name = {name: bind for bind, name in compiled.bind_names.items()}  # each parameter by its name in the SQL
    names = tuple(compiled.positiontup) if compiled.positional else tuple(by_name)
    binds = [by_name[name] for name in names]
    if any(bind.expanding or bind.callable is not None for bind in binds):
        return None  # an IN of a list given at execution, or a value computed at each execution
    literals = tuple(_UNSET if bind.required else bind.value for bind in binds)
    escaped = compiled.escaped_bind_names or {}
    try:
        bind_processors = tuple(bind.type.dialect_impl(dialect).bind_processor(dialect) for bind in binds)
        results = tuple(column.type.dialect_impl(dialect).result_processor(dialect, None) for column in columns)
    except Exception:  # a processor that needs the driver's type code (Numeric on psycopg): SQLAlchemy's path
        return None
    in_sql = tuple(escaped.get(name, name) for name in names)
    sql, positional = compiled.string, compiled.positional
    if dialect.driver == "psycopg":  # numbered once here, as psycopg would number them at every run (its RawCursor)
        sql, order = numbered(sql)
        pick = [in_sql.index(name) for name in order]
        names, in_sql = tuple(names[i] for i in pick), tuple(in_sql[i] for i in pick)
        literals, bind_processors = tuple(literals[i] for i in pick), tuple(bind_processors[i] for i in pick)
        positional = True
    return Compiled(sql, names, in_sql, positional, literals, bind_processors, results, bool(columns))


_PLACEHOLDER = re.compile(r"%\((.+?)\)s|%%")


def numbered(sql: str) -> tuple[str, list[str]]:
    """``sql`` with its named placeholders (``%(name)s``, psycopg's form) numbered (``$1``; a name used twice keeps
    its number) and ``%%`` made ``%``, as psycopg converts a query at each run; and the names in number order.

    >>> numbered("UPDATE t SET a=%(a)s WHERE b = %(b)s OR %(a)s > 0 AND c LIKE 'x%%'")
    ("UPDATE t SET a=$1 WHERE b = $2 OR $1 > 0 AND c LIKE 'x%'", ['a', 'b'])
    """
    order: list[str] = []

    def number(match: re.Match[str]) -> str:
        name = match.group(1)
        if name is None:
            return "%"
        if name not in order:
            order.append(name)
        return f"${order.index(name) + 1}"

    return _PLACEHOLDER.sub(number, sql), order


def _columns(statement: Executable) -> list[Any] | None:
    """The columns a statement answers with (empty: it answers with no rows; None: not a Core SELECT or DML)."""
    if isinstance(statement, Select):
        return list(statement.selected_columns)
    if isinstance(statement, UpdateBase):
        return list(statement.exported_columns)
    return None  # text() and the like: SQLAlchemy's path


def _dialect_key(dialect: Dialect) -> tuple[Any, ...]:
    """What makes one dialect compile and process a statement as another does: its class (the driver), the server's
    version, and the JSON functions (an engine may be given its own)."""
    return (type(dialect), dialect.server_version_info, getattr(dialect, "_json_serializer", None),
            getattr(dialect, "_json_deserializer", None))


def transaction_notes(session: Session, name: str) -> dict[Any, Any]:
    """A dict in ``session.info`` that lasts as long as the session's current transaction: what the transaction
    learnt of its own rows (a balance it holds locked, a shoe it made or moved), which a commit or a rollback
    makes stale. A later transaction of the same session finds it empty.

    >>> from sqlalchemy import create_engine
    >>> session = Session(create_engine("sqlite://"))
    >>> _ = session.connection()  # a transaction begins
    >>> transaction_notes(session, "seen")["shoe 7"] = "moved"
    >>> transaction_notes(session, "seen")
    {'shoe 7': 'moved'}
    >>> session.rollback()
    >>> _ = session.connection()
    >>> transaction_notes(session, "seen")
    {}
    """
    transaction = session.get_transaction()
    kept = session.info.get(name)
    if kept is None or kept[0] is not transaction:
        kept = session.info[name] = (transaction, {})
    return kept[1]


def watched(connection: Connection) -> bool:
    """Whether anyone watches ``connection``'s statements: SQLAlchemy's execution or cursor events, or its log (its
    own ``_echo``: true with ``echo=True`` and with the ``sqlalchemy.engine`` logger at INFO alike)."""
    events = connection.dispatch
    return bool(events.before_cursor_execute or events.after_cursor_execute or events.before_execute
                or events.after_execute or connection._echo)


def _watched_in(session: Session, connection: Connection) -> bool:
    """:func:`watched`, asked once per transaction: each ask cost 3-9 us (a new connection's joined event
    dispatcher builds its listener collections on first use), a dozen times a request. A listener added in the
    middle of a transaction sees that transaction's statements from the next one on."""
    notes = transaction_notes(session, _WATCHED)
    if "watched" not in notes:
        notes["watched"] = watched(connection)
    return bool(notes["watched"])


def run_driver_sql(connection: Connection, sql: str) -> None:
    """``connection.exec_driver_sql(sql)`` for a statement without parameters or rows (SQLite's ``BEGIN``), on the
    driver's own connection while nobody watches (:func:`watched`); a driver's error is SQLAlchemy's to raise."""
    if watched(connection):
        connection.exec_driver_sql(sql)
        return
    try:
        driver = connection.connection.driver_connection
        _begin_if_owed(driver)
        driver.execute(sql)  # type: ignore[union-attr]
    except BaseException as error:
        if isinstance(error, Exception) and not isinstance(error, connection.dialect.loaded_dbapi.Error):
            raise
        connection._handle_dbapi_exception(error, sql, (), None, None)


def run(session: Session, statement: Executable, params: Params | Sequence[Params] | None = None) -> Result:
    """``session.execute(statement, params)``, on the driver's cursor where it can be (module docstring).

    ``params``: a mapping, or a list of them for one statement run for each (as ``executemany``). On PostgreSQL the
    writes held back by :func:`defer` go with it, in the same round trip.
    """
    plan = _plan(session, statement, params)
    if plan is None:
        return session.execute(statement, params)
    return _run_planned(session, statement, params, plan)


def _run_planned(session: Session, statement: Executable, params: Params | Sequence[Params] | None,
                 plan: tuple[Connection, Compiled, list[Params] | None, Params]) -> Result:
    connection, compiled, batch, first = plan
    if compiled.answers and batch is not None:
        return session.execute(statement, params)
    pooled = connection.connection
    values: Any = None
    cursor = None
    label = compiled.sql
    try:
        values = [compiled.values(each) for each in batch] if batch is not None else compiled.values(first)
        if connection.engine.dialect.name == "postgresql":
            cursor = _cursor(pooled, compiled.sql)
            held = _held_on(session)[0]
            label = f"(writes held back, then) {compiled.sql}" if held else compiled.sql
            _send(pooled, held, (compiled, values if batch is not None else [values]))
        else:
            cursor = pooled.info.get(_CURSOR)
            if cursor is None:
                cursor = pooled.info[_CURSOR] = pooled.driver_connection.cursor()  # type: ignore[union-attr]
            if batch is not None:
                cursor.executemany(compiled.sql, values)
            else:
                cursor.execute(compiled.sql, values)
        fetched = cursor.fetchall() if compiled.answers else None
    except BaseException as error:
        _driver_error(connection, error, label, values, cursor)
    return Rows(compiled.rows(fetched, cursor) if fetched is not None else None)


def defer(session: Session, statement: Executable, params: Params | Sequence[Params] | None = None) -> None:
    """:func:`run` for a statement whose answer nobody reads (a write, an advisory lock): on PostgreSQL it is held
    back, and sent with the transaction's next statement, or with its ``COMMIT`` (:func:`commit_held`), in one
    round trip (psycopg's pipeline mode). Elsewhere, or where it could not be held safely, it runs at once.

    Nothing reads the database between a held write and the statement it goes with, so every statement sees what
    the ones before it wrote, in order, as if each had been sent alone; only a held write's error (a broken
    constraint, a lost connection) is raised where it is sent, the same exception a little later. A transaction
    rolled back drops what it held. Writes are held only in sessions that send them before anything else reaches
    their connection (``db.Database``'s writers: :func:`hold_writes`), and never inside a savepoint, whose
    ``ROLLBACK TO`` must undo them. What goes to the connection past the session (``session.connection().execute``,
    ``exec_driver_sql``, :func:`run_driver_sql`) is not seen: nothing on the request path does that on PostgreSQL,
    and nothing may in a session that holds writes.

    Each round trip costs a server process about 50 us of CPU and PostgreSQL's backend as much again
    (``docs/server.md``, "Round trips to PostgreSQL"); a decision's three writes and its ``COMMIT`` were four.
    """
    plan = _plan(session, statement, params)
    if plan is None:
        session.execute(statement, params)
        return
    connection, compiled, batch, first = plan
    if not _holds(session, connection):
        _run_planned(session, statement, params, plan)
        return
    held = _held(session, connection)
    dumps = connection.engine.dialect._json_serializer or json.dumps
    for each in batch if batch is not None else [first]:
        held.append((compiled, _as_of_now(compiled.values(each), dumps), None))


def defer_read(session: Session, statement: Executable, params: Params, then: Callable[[Result], None]) -> None:
    """A read whose answer can wait: like :func:`defer`, held back on PostgreSQL to go with the transaction's next
    statement in one round trip, and its rows handed to ``then`` as soon as they come back, before that statement's
    own rows are used. ``then`` may raise: the statement it went with has run, but nothing has used its answer, and
    the transaction rolls back. Never with the ``COMMIT``: :func:`commit_held` sends it first, so ``then`` always
    judges before anything commits. Where nothing can be held, it runs at once and ``then`` is called at once.

    The look-up of a request's idempotency key goes this way (``store._check_key``), after the key's lock held back
    by :func:`defer`: both with the work's first statement, ahead of it, where they were a round trip of their own;
    and a private deal's check for a round still in play (``rounds.Rounds.deal``), judged after the key's.
    """
    plan = _plan(session, statement, params)
    if plan is None or not _holds(session, plan[0]):
        then(run(session, statement, params))
        return
    connection, compiled, _, first = plan
    held = _held(session, connection)
    if any(then is not None and pending.sql == compiled.sql for pending, _, then in held):
        send_held(session)  # the same statement held as a read: its answer would come back on this one's cursor
    held.append((compiled, _as_of_now(compiled.values(first), connection.engine.dialect._json_serializer or json.dumps),
                 then))


def _holds(session: Session, connection: Connection) -> bool:
    """Whether ``session`` may hold a statement back on ``connection`` (see :func:`defer`)."""
    return (connection.engine.dialect.name == "postgresql" and bool(session.info.get(_HOLDS))
            and not session.in_nested_transaction() and _pipelines())


@functools.cache
def _pipelines() -> bool:
    """Whether psycopg can run a pipeline here: its libpq must be 14 or later (psycopg[binary] brings its own)."""
    import psycopg

    return bool(psycopg.Pipeline.is_supported())


def _as_of_now(values: Any, dumps: Callable[[Any], str]) -> tuple[Any, ...]:
    """A held statement's values as they are now: psycopg serialises a JSON value (SQLAlchemy hands it ``Json(obj)``)
    only when it is sent, so a dict changed after :func:`defer` would be written changed. Serialised here instead,
    with the connection's own JSON encoder; the rest are immutable (numbers, text, times, None)."""
    from psycopg.types.json import Json

    return tuple(Json(dumps(value.obj), dumps=str) if isinstance(value, Json) else value for value in values)


def send_held(session: Session) -> None:
    """Send the writes ``session`` holds back (:func:`defer`), in one round trip: before anything that does not go
    through :func:`run` reaches the connection (an ORM statement or flush, a savepoint, SQLAlchemy's own ``COMMIT``).
    """
    held, connection = _held_on(session)
    if not held:
        return
    try:
        _send(connection.connection, held, None)
    except BaseException as error:
        _driver_error(connection, error, "(writes held back)", None, None)


def commit_held(session: Session) -> None:
    """Send the writes ``session`` holds back with ``COMMIT``, in one round trip (PostgreSQL): call it last in the
    transaction's block; SQLAlchemy's own commit that follows finds the transaction ended (psycopg sends no
    ``COMMIT`` when none is open). With nothing held, or ORM changes still to flush, it leaves the commit to
    SQLAlchemy (the flush sends what is held first)."""
    held, connection = _held_on(session)
    if not held or session.new or session.deleted or session.dirty:
        return
    if any(then is not None for _, _, then in held):  # judged before anything commits (defer_read)
        send_held(session)
        return
    transaction_notes(session, _HELD)["committed"] = True  # nothing may reach the connection after this COMMIT
    try:
        _send(connection.connection, held, None, commit=True)
    except BaseException as error:
        _driver_error(connection, error, "COMMIT", None, None)


def hold_writes(sessions: Any) -> None:
    """Let ``sessions`` (a ``sessionmaker``) hold writes back (:func:`defer`): whatever else reaches one of their
    connections (an ORM statement or flush, a savepoint, a ``COMMIT``) sends what is held first."""
    sessions.kw.setdefault("info", {})[_HOLDS] = True
    psycopg_log = logging.getLogger("psycopg")
    if not any(isinstance(each, _AbortedPipelineNoise) for each in psycopg_log.filters):
        psycopg_log.addFilter(_AbortedPipelineNoise())
    for name in ("do_orm_execute", "before_flush"):
        event.listen(sessions, name, _send_first)
    event.listen(sessions, "before_commit", send_held)  # a commit not made by commit_held
    event.listen(sessions, "after_transaction_create", _send_before_savepoint)


def _send_first(subject: Any, *_: Any) -> None:
    session = subject if isinstance(subject, Session) else subject.session  # an ORMExecuteState has its session
    _refuse_after_commit(session)
    send_held(session)


def _send_before_savepoint(session: Session, transaction: Any) -> None:
    # Before SQLAlchemy emits the SAVEPOINT (lazily, at the savepoint's first statement). Should a held write fail
    # here, its error comes out of begin_nested(); the one caller (wallet.account) queries just before, which sends
    # anything held, so its IntegrityError is always its own insert's.
    if transaction.nested:
        send_held(session)


class _AbortedPipelineNoise(logging.Filter):
    """psycopg warns when a pipeline ends after an error ("error ignored terminating <Pipeline>: pipeline
    aborted"): the error it ignored only follows the first, which is raised (a 503 or a twin's key), and logged
    there if it needs to be."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.msg == "error ignored terminating %r: %s" and isinstance(record.args, tuple)
                    and type(record.args[-1]).__name__ == "PipelineAborted")


_HOLDS = "twentyone.holds"  # session.info: the session may hold writes back (hold_writes)
_HELD = "twentyone.held"  # transaction_notes: the writes held back, with their values, in order
# What a transaction holds back (defer, defer_read), in order: a statement, its values, and for a read what judges
# its rows when they come back (None for a write).
Held = tuple["Compiled", Any, Callable[[Result], None] | None]
HELD_READ = "held read: "  # the key of a held read's cursor (defer_read) among a connection's cursors (_cursor)
_CURSORS = "twentyone.cursors"  # PostgreSQL: a DBAPI connection's cursors, one per statement (their adapters kept)


def _held(session: Session, connection: Connection) -> list[Held]:
    """The writes ``session``'s transaction holds back, on ``connection``: a list to append to."""
    notes = transaction_notes(session, _HELD)
    held = notes.get("writes")
    if held is None:
        held = notes["writes"] = []
        notes["connection"] = connection
    return held


def _refuse_after_commit(session: Session) -> None:
    """A statement after :func:`commit_held` would run in a transaction of its own, which SQLAlchemy would commit
    apart from the one it belongs with: a bug in the caller, refused."""
    if transaction_notes(session, _HELD).get("committed"):
        raise db_errors.InvalidRequestError("This transaction was committed with its held writes (commit_held): "
                                            "nothing may run in it after that.")


def _held_on(session: Session) -> tuple[list[Held], Any]:
    """The writes held back and the connection they wait on: that one, not ``session.connection()``, which in a
    savepoint's first moment would emit the ``SAVEPOINT`` before them."""
    notes = transaction_notes(session, _HELD)
    return notes.get("writes") or [], notes.get("connection")


def _plan(session: Session, statement: Executable,
          params: Params | Sequence[Params] | None) -> tuple[Connection, Compiled, list[Params] | None, Params] | None:
    """The statement compiled for the session's connection, and its parameters; None where it must go SQLAlchemy's
    way. Pending ORM changes are flushed first, as ``session.execute`` would (if autoflush is on)."""
    if isinstance(statement, UpdateBase) and session.info.get(READING):
        raise WriteInRead.of(statement)
    connection = session.connection()  # begins the session's transaction, if it has not begun
    dialect = connection.engine.dialect
    if dialect.name == "postgresql" and session.info.get(_HOLDS):
        _refuse_after_commit(session)
    if f"{dialect.name}+{dialect.driver}" not in DIALECTS or _watched_in(session, connection):
        return None
    batch: list[Params] | None = list(params) if isinstance(params, Sequence) else None
    first: Params = (batch[0] if batch else {}) if batch is not None else (params or {})  # type: ignore[assignment]
    key = (_dialect_key(dialect), id(statement), tuple(sorted(first)))
    entry = _compiled.get(key)
    if entry is None:
        with _compiling:  # the statement is kept with its compiled form, so that its id stays its own
            entry = _compiled[key] = (statement, compile_statement(statement, key[2], dialect))
    compiled = entry[1]
    if compiled is None:
        return None
    session._autoflush()  # what session.execute does first: pending ORM changes reach the database, if autoflush is on
    return connection, compiled, batch, first


def _cursor(pooled: Any, sql: str) -> Any:
    """psycopg: the connection's cursor for ``sql`` (a statement, or :data:`HELD_READ` and a statement), made once. A
    cursor keeps the adapters of the last statement it ran; one per statement spares making them anew at each run
    (about 10 us a statement, pinned)."""
    cursors = pooled.info.get(_CURSORS)
    if cursors is None:
        cursors = pooled.info[_CURSORS] = {}
    cursor = cursors.get(sql)
    if cursor is None:
        import psycopg  # only here: SQLite servers need not have it

        cursor = cursors[sql] = psycopg.RawCursor(pooled.driver_connection)
    return cursor


def _send(pooled: Any, held: list[Held], last: tuple[Any, list[Any]] | None, commit: bool = False) -> None:
    """psycopg: the transaction's ``BEGIN`` if it is still owed (:func:`begin_with_first_statement`), the held
    writes, then ``last`` (a statement and its values, one set per run) or ``COMMIT``, in one round trip: pipeline
    mode while anything goes with the statement, the statement alone otherwise. A held write that fails is raised
    here; the statements after it are not run (PostgreSQL aborts the rest of the pipeline)."""
    begin = _pay_begin(pooled.driver_connection)
    if begin and not _pipelines():  # a libpq without pipeline mode: the BEGIN goes alone, as psycopg would send it
        _cursor(pooled, "BEGIN").execute("BEGIN", prepare=False)
        begin = False
    if not held and not begin:
        if last is not None:
            compiled, runs = last
            cursor = _cursor(pooled, compiled.sql)
            if len(runs) == 1:
                cursor.execute(compiled.sql, runs[0])
            else:
                cursor.executemany(compiled.sql, runs)
        return
    writes = held[:]
    held.clear()  # sent, or the transaction fails with them
    judged = []  # the held reads (defer_read): their cursors, read once every answer is back
    with pooled.driver_connection.pipeline():
        if begin:
            _cursor(pooled, "BEGIN").execute("BEGIN", prepare=False)
        for compiled, values, then in writes:
            # A held read's answer is read after the pipeline: on a cursor of its own, not the one the same statement
            # sent last (below) would answer on.
            cursor = _cursor(pooled, compiled.sql if then is None else HELD_READ + compiled.sql)
            cursor.execute(compiled.sql, values)
            if then is not None:
                judged.append((compiled, cursor, then))
        if last is not None:
            compiled, runs = last
            cursor = _cursor(pooled, compiled.sql)
            for values in runs:  # not executemany: a pipeline inside a pipeline would wait for the first's results
                cursor.execute(compiled.sql, values)
        if commit:
            _cursor(pooled, "COMMIT").execute("COMMIT", prepare=False)  # PostgreSQL prepares no COMMIT
    for compiled, cursor, then in judged:  # before the caller reads ``last``'s answer
        then(Rows(compiled.rows(cursor.fetchall(), cursor)))


_OWING: weakref.WeakSet[Any] = weakref.WeakSet()  # psycopg connections whose transaction's BEGIN is not sent yet


def begin_with_first_statement(engine: Engine) -> None:
    """PostgreSQL: send each transaction's ``BEGIN`` with its first statement, in one round trip, rather than alone.

    psycopg begins a transaction before a connection's first statement, and waits for the ``BEGIN``'s answer
    before it sends anything else, pipeline mode included: a round trip of its own at every transaction (a
    decision in play made three, one of them this). ``engine`` must be made with ``isolation_level="AUTOCOMMIT"``
    (psycopg then begins nothing itself); SQLAlchemy still marks every transaction's start, and there the
    ``BEGIN`` is noted as owed. It is sent ahead of the transaction's first statement: in the same pipeline by
    :func:`run`, :func:`defer` and :func:`commit_held` (``_send``), and just before it by SQLAlchemy's own
    execution (an ORM statement or flush, text, a ``SAVEPOINT``) through the dialect's execute events, which
    leave :func:`watched` false. A transaction that sends nothing sends no ``BEGIN`` and no ``COMMIT`` (psycopg's
    ``commit()`` and ``rollback()`` send nothing while the server holds no transaction open), and every statement
    still runs inside its transaction: nothing reaches a connection of ``engine`` but through SQLAlchemy or this
    module (``run_driver_sql`` pays the ``BEGIN`` first too).

    A read (a connection with the execution option ``reading``: ``db.Database.readers``) owes none: its statements
    go alone, with no ``BEGIN`` and no ``COMMIT``. At ``READ COMMITTED``, PostgreSQL's level and the server's, each
    statement in a transaction sees what was committed when that statement began, exactly as a statement alone
    does; a read never writes (:class:`WriteInRead`), so it has nothing to commit. A read of one statement made
    three round trips, and makes one.
    """
    event.listen(engine, "begin", _owe_begin)
    event.listen(engine, "commit", _forget_begin)
    event.listen(engine, "rollback", _forget_begin)
    event.listen(engine, "do_execute", _begin_first)
    event.listen(engine, "do_executemany", _begin_first)
    event.listen(engine, "do_execute_no_params", _begin_first)


def _owe_begin(connection: Connection) -> None:
    if not connection.get_execution_options().get("reading"):
        _OWING.add(connection.connection.driver_connection)


def _forget_begin(connection: Connection) -> None:
    # A transaction that ended without a statement sent nothing. (An invalidated connection is discarded.)
    if not connection.invalidated:
        _OWING.discard(connection.connection.driver_connection)


def _pay_begin(driver_connection: Any) -> bool:
    """Whether ``driver_connection`` owed its transaction's ``BEGIN``: the caller sends it now, ahead of anything."""
    if driver_connection in _OWING:
        _OWING.discard(driver_connection)
        return True
    return False


def _begin_first(cursor: Any, *_: Any) -> None:
    """Before SQLAlchemy runs a statement on a cursor: the transaction's ``BEGIN``, if it is still owed, on a cursor of
    its own (a server-side cursor, ``yield_per``, can run nothing but its query). Returns None, so SQLAlchemy goes on
    to run the statement itself. (A read owes none: a server-side cursor, which PostgreSQL keeps only inside a
    transaction block, is for a writer's session.)"""
    _begin_if_owed(cursor.connection)


def _begin_if_owed(driver: Any) -> None:
    """Send the transaction's ``BEGIN`` on psycopg's connection ``driver`` if it is still owed; no longer owed only
    once sent, so a ``BEGIN`` that fails is still owed."""
    if driver in _OWING:
        driver.execute("BEGIN", prepare=False)
        _OWING.discard(driver)


def _driver_error(connection: Connection, error: BaseException, sql: str, values: Any, cursor: Any) -> NoReturn:
    """Raise ``error`` as SQLAlchemy would have: a driver's error, or an interruption (Ctrl-C, a cancellation), as
    the exception SQLAlchemy raises for it (OperationalError, so a busy database is a 503; IntegrityError, so a
    twin's key gets the first answer); a connection the server ended is discarded with the pool's older ones, so
    the next request finds a live one, and one left mid-statement by an interruption is discarded alone. Ours (a
    value its type cannot take: StatementError) is raised as it is, unless it left the connection unusable."""
    dbapi = connection.engine.dialect.loaded_dbapi
    pooled = connection.connection
    if connection.engine.dialect.name == "postgresql":
        driver = pooled.driver_connection
        left_in_a_pipeline = _close_if_left_in_a_pipeline(driver)
        if isinstance(error, Exception) and not isinstance(error, dbapi.Error) \
                and (left_in_a_pipeline or _raised_inside_the_driver(error)):
            # Not the driver's error, yet the connection cannot be trusted: psycopg's own IndexError on leaving a
            # pipeline that held an answer it had not asked for (a test's pipeline made by hand, beside another
            # worker), whether or not it left pipeline mode (it had, in a fresh-check's run). Raised as the
            # driver's, the connection is discarded as any other the server ended, and the player told to try again.
            if driver is not None and not driver.closed:
                driver.close()
            error = dbapi.OperationalError(f"the connection's pipeline could not be left: {error!r}")
    if isinstance(error, Exception) and not isinstance(error, dbapi.Error):
        raise error
    pooled.info.pop(_CURSOR, None)
    pooled.info.pop(_CURSORS, None)
    connection._handle_dbapi_exception(error, sql, values, cursor, None)


def _raised_inside_the_driver(error: BaseException) -> bool:
    """Whether ``error`` was raised in psycopg's own code (its traceback's last frame), not in ours: psycopg's state
    of the connection is then not what the connection is, and nothing more may be sent on it. An error of ours (a
    bug) is raised as it is.

    >>> try:
    ...     exec("raise IndexError('pop from an empty deque')", {"__name__": "psycopg._pipeline"})
    ... except IndexError as error:
    ...     _raised_inside_the_driver(error), _raised_inside_the_driver(IndexError("ours, never raised"))
    (True, False)
    """
    frame = error.__traceback__
    while frame is not None and frame.tb_next is not None:
        frame = frame.tb_next
    return frame is not None and str(frame.tb_frame.f_globals.get("__name__", "")).split(".")[0] == "psycopg"


def _close_if_left_in_a_pipeline(driver: Any) -> bool:
    """psycopg: close a connection its pipeline could not leave, so that SQLAlchemy sees it gone and discards it.

    When PostgreSQL ends a connection (restarting, failing over, ``pg_terminate_backend``) while a pipeline waits
    on its answers, psycopg may read the server's last message (AdminShutdown) before it notices the connection
    closed: it raises that, and cannot leave pipeline mode ("cannot exit pipeline mode while busy"), so the
    connection is still open to SQLAlchemy, which took it for alive and put it back in the pool, whose reset (a
    ``ROLLBACK``, refused in pipeline mode) failed and was logged with three tracebacks, once for each request the
    database cut (found by a load run whose database ended every connection). Nothing can be sent on such a
    connection again, whatever the error was. Returns whether it closed it."""
    from psycopg import pq

    if not driver.closed and driver.pgconn.pipeline_status != pq.PipelineStatus.OFF:
        driver.close()
        return True
    return False


class Record:
    """A row read for a change: its columns as attributes; what is set on it is written back by :func:`save`.

    The ORM's unit of work did this for a decision's round and seat at about 390 us (load, change, flush: pinned,
    SQLite); a record and one ``UPDATE`` of the columns set cost about 60 us. There is no identity map: read a
    row once per transaction, and :func:`save` it before anything reads that row from the database again.

    >>> from twentyone.server.models import ROUNDS
    >>> record = Record(ROUNDS, {"id": 7, "version": 2, "status": "playing"})
    >>> record.version += 1
    >>> record.version, record.changes
    (3, {'version': 3})
    >>> record.colour = "red"
    Traceback (most recent call last):
    ...
    AttributeError: rounds has no column 'colour'
    """

    __slots__ = ("changes", "table", "values")

    def __init__(self, table: Table, values: Mapping[str, Any]) -> None:
        object.__setattr__(self, "table", table)
        object.__setattr__(self, "values", dict(values))
        object.__setattr__(self, "changes", {})

    def __getattr__(self, name: str) -> Any:
        try:
            return self.values[name]
        except KeyError:
            raise AttributeError(f"{self.table.name} has no column {name!r}") from None

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self.values:
            raise AttributeError(f"{self.table.name} has no column {name!r}")
        self.values[name] = value
        self.changes[name] = value


_UPDATES: dict[str, Executable] = {}  # UPDATE table ... WHERE id = :row_id, by table: the SET is the changes' keys


def read_record(session: Session, statement: Executable, params: Params, table: Table) -> Record | None:
    """The first row of ``statement`` (its columns ``table``'s) as a :class:`Record`, or None."""
    row = run(session, statement, params).first()
    return Record(table, row._asdict()) if row is not None else None


def save(session: Session, record: Record) -> None:
    """Write the columns set on ``record`` since it was read (or last saved): one ``UPDATE``, none if nothing was."""
    if not record.changes:
        return
    table = record.table
    statement = _UPDATES.get(table.name)
    if statement is None:
        statement = _UPDATES[table.name] = update(table).where(table.c.id == bindparam("row_id"))
    defer(session, statement, {"row_id": record.values["id"], **record.changes})
    record.changes.clear()
