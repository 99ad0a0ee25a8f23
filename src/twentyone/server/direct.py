"""The request path's Core statements on SQLite's own cursor: compiled once, run without SQLAlchemy's execution layer.

A request runs 7-15 statements that SQLite answers in about a microsecond each, but each one through
``Session.execute`` cost about 21 us of Python here (``Connection.execute`` 15 us, ``exec_driver_sql`` 11 us,
pinned to one CPU; ``docs/server.md``, "Load"). :func:`run` compiles a statement once by SQLAlchemy's own
compiler, with SQLAlchemy's own type processors for its parameters and columns (JSON, datetimes, booleans), and
runs it on the DBAPI cursor of the session's connection, in the session's transaction, after the session's
autoflush: what it reads, writes and raises is what ``session.execute`` would have, less the bookkeeping.

It steps aside (plain ``session.execute``) where that bookkeeping is wanted or the shortcut would differ:

- on PostgreSQL, where SQLAlchemy also notices a connection the server ended and discards the pool's others;
- while anyone listens to the engine's statements (``before_cursor_execute``: the tests that count statements or
  inject storage faults, ``benchmarks/history.py``), so that they see every statement;
- for a statement it cannot run as compiled: an ``IN`` of a list given at execution (an expanding parameter).

Pass only statements built once (module constants): compiled forms are kept by the statement's identity.
"""

from __future__ import annotations

import threading
from collections import namedtuple
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from sqlalchemy import exc as db_errors
from sqlalchemy.engine import Dialect
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
    """Rows already fetched, read as SQLAlchemy's ``Result`` reads them (``first``, ``one``, ``scalar`` ...).

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
    """

    __slots__ = ("_rows",)

    def __init__(self, rows: list[Any]) -> None:
        self._rows = rows

    def first(self) -> Any:
        return self._rows[0] if self._rows else None

    def one(self) -> Any:
        if not self._rows:
            raise db_errors.NoResultFound("No row was found when one was required")
        if len(self._rows) > 1:
            raise db_errors.MultipleResultsFound("Multiple rows were found when exactly one was required")
        return self._rows[0]

    def scalar(self) -> Any:
        return self._rows[0][0] if self._rows else None

    def scalar_one(self) -> Any:
        return self.one()[0]

    def all(self) -> list[Any]:
        return self._rows

    def __iter__(self) -> Iterator[Any]:
        return iter(self._rows)


Processor = Callable[[Any], Any] | None
_UNSET = object()  # a parameter the statement does not give a value of its own


@dataclass(frozen=True)
class Compiled:
    """One statement compiled for one dialect and one set of parameter names."""

    sql: str
    names: tuple[str, ...]  # its parameters: in the order of their ``?`` (SQLite), or by name (PostgreSQL's %(name)s)
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
                raise db_errors.InvalidRequestError(f"A value is required for bind parameter {name!r}")
            out.append(value if process is None else process(value))  # None too: JSON's None is 'null'
        return tuple(out) if self.positional else dict(zip(self.names, out, strict=True))

    def rows(self, fetched: list[tuple[Any, ...]], description: Sequence[Sequence[Any]]) -> list[Any]:
        if not self.row:  # the names SQLAlchemy gives its rows' keys too ("balance", "count_1")
            self.row.append(namedtuple("Row", [column[0] for column in description], rename=True))
        make, results = self.row[0]._make, self.results  # type: ignore[attr-defined]
        if not any(results):
            return [make(row) for row in fetched]
        return [make(value if process is None else process(value) for value, process in zip(row, results, strict=True))
                for row in fetched]


_compiled: dict[tuple[str, int, tuple[str, ...]], tuple[Executable, Compiled | None]] = {}
_compiling = threading.Lock()
DIALECTS = ("sqlite", "postgresql")
_CURSOR = "twentyone.cursor"  # the DBAPI connection's info: its cursor, made once (psycopg's costs to make)


def compile_statement(statement: Executable, keys: tuple[str, ...], dialect: Dialect) -> Compiled | None:
    """``statement`` as ``dialect`` runs it for parameters named ``keys`` (which, as in SQLAlchemy, say the columns an
    ``INSERT`` or ``UPDATE`` without values of its own sets); None if it cannot run as compiled.

    >>> from sqlalchemy import bindparam, create_engine, select
    >>> from twentyone.server.models import ACCOUNTS
    >>> query = select(ACCOUNTS.c.balance).where(ACCOUNTS.c.id == bindparam("id"), ACCOUNTS.c.currency == "USD")
    >>> compiled = compile_statement(query, ("id",), create_engine("sqlite://").dialect)
    >>> compiled.sql.split("WHERE")[1].strip(), compiled.values({"id": 7})
    ('accounts.id = ? AND accounts.currency = ?', (7, 'USD'))
    >>> compiled = compile_statement(query, ("id",), create_engine("postgresql+psycopg://").dialect)
    >>> compiled.sql.split("WHERE")[1].strip(), compiled.values({"id": 7})
    ('accounts.id = %(id)s::INTEGER AND accounts.currency = %(currency_1)s::VARCHAR', {'id': 7, 'currency_1': 'USD'})
    """
    compiled = statement.compile(dialect=dialect, column_keys=list(keys))  # type: ignore[attr-defined]
    by_name = {name: bind for bind, name in compiled.bind_names.items()}  # each parameter by its name in the SQL
    names = tuple(compiled.positiontup) if compiled.positional else tuple(by_name)
    binds = [by_name[name] for name in names]
    if any(bind.expanding for bind in binds):
        return None  # an IN of a list given at execution: SQLAlchemy renders a marker for each item of the list
    literals = tuple(_UNSET if bind.required else bind.effective_value for bind in binds)
    bind_processors = tuple(bind.type.dialect_impl(dialect).bind_processor(dialect) for bind in binds)
    columns = _columns(statement)
    results = tuple(column.type.dialect_impl(dialect).result_processor(dialect, None) for column in columns or ())
    return Compiled(compiled.string, names, compiled.positional, literals, bind_processors, results,
                    columns is not None)


def _columns(statement: Executable) -> list[Any] | None:
    """The columns a statement answers with (None: it answers with no rows)."""
    if isinstance(statement, Select):
        return list(statement.selected_columns)
    if isinstance(statement, UpdateBase):
        returned = list(statement.exported_columns)
        return returned or None
    raise TypeError(f"not a SELECT, INSERT, UPDATE or DELETE: {type(statement).__name__}")


def run(session: Session, statement: Executable, params: Params | Sequence[Params] | None = None) -> Result:
    """``session.execute(statement, params)``, on the driver's cursor where it can be (module docstring).

    ``params``: a mapping, or a list of them for one statement run for each (as ``executemany``).
    """
    connection = session.connection()  # begins the session's transaction, if it has not begun
    engine = connection.engine
    dialect = engine.dialect
    if dialect.name not in DIALECTS or engine.dispatch.before_cursor_execute:
        return session.execute(statement, params)
    batch: list[Params] | None = list(params) if isinstance(params, Sequence) else None
    first: Params = (batch[0] if batch else {}) if batch is not None else (params or {})  # type: ignore[assignment]
    key = (dialect.name, id(statement), tuple(sorted(first)))
    entry = _compiled.get(key)
    if entry is None:
        with _compiling:  # the statement is kept with its compiled form, so that its id stays its own
            entry = _compiled[key] = (statement, compile_statement(statement, key[2], dialect))
    compiled = entry[1]
    if compiled is None or (compiled.answers and batch is not None):
        return session.execute(statement, params)
    if session.autoflush:
        session.flush()  # what session.execute does first: pending ORM changes reach the database (no-op if none)
    pooled = connection.connection
    cursor = pooled.info.get(_CURSOR)
    if cursor is None:
        cursor = pooled.info[_CURSOR] = pooled.driver_connection.cursor()  # type: ignore[union-attr]
    values: Any = None
    try:
        if batch is not None:
            values = [compiled.values(each) for each in batch]
            cursor.executemany(compiled.sql, values)
        else:
            values = compiled.values(first)
            cursor.execute(compiled.sql, values)
        fetched = cursor.fetchall() if compiled.answers else []
    except dialect.loaded_dbapi.Error as error:
        # SQLAlchemy's own handling of a driver's error: the exception it raises for it (OperationalError, so a busy
        # database is a 503; IntegrityError, so a twin's key gets the first answer), and on a connection the server
        # ended, the connection and the pool's older ones discarded, so the next request finds a live one.
        pooled.info.pop(_CURSOR, None)
        connection._handle_dbapi_exception(error, compiled.sql, values, cursor, None)
    return Rows(compiled.rows(fetched, cursor.description)) if compiled.answers else Rows([])
