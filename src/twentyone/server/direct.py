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
    """One statement compiled for SQLite, for one set of parameter names."""

    sql: str
    names: tuple[str, ...]  # the parameters in the order of their ``?``
    literals: tuple[Any, ...]  # a value per position: the statement's own, where no parameter of that name is given
    binds: tuple[Processor, ...]  # SQLAlchemy's type processors, a parameter's Python value to SQLite's
    results: tuple[Processor, ...]  # and a column's SQLite value to Python's
    answers: bool  # whether it answers with rows
    row: list[type] = field(default_factory=list)  # the rows' named tuple, made from the first answer's column names

    def values(self, params: Params) -> tuple[Any, ...]:
        out = []
        for name, literal, process in zip(self.names, self.literals, self.binds, strict=True):
            value = params.get(name, literal)
            if value is _UNSET:
                raise db_errors.InvalidRequestError(f"A value is required for bind parameter {name!r}")
            out.append(value if process is None else process(value))  # None too: JSON's None is 'null'
        return tuple(out)

    def rows(self, fetched: list[tuple[Any, ...]], description: Sequence[Sequence[Any]]) -> list[Any]:
        if not self.row:  # the names SQLAlchemy gives its rows' keys too ("balance", "count_1")
            self.row.append(namedtuple("Row", [column[0] for column in description], rename=True))
        make, results = self.row[0]._make, self.results  # type: ignore[attr-defined]
        if not any(results):
            return [make(row) for row in fetched]
        return [make(value if process is None else process(value) for value, process in zip(row, results, strict=True))
                for row in fetched]


_compiled: dict[tuple[int, tuple[str, ...]], tuple[Executable, Compiled | None]] = {}
_compiling = threading.Lock()


def compile_for_sqlite(statement: Executable, keys: tuple[str, ...], dialect: Dialect) -> Compiled | None:
    """``statement`` as SQLite runs it for parameters named ``keys`` (which, as in SQLAlchemy, say the columns an
    ``INSERT`` or ``UPDATE`` without values of its own sets); None if it cannot run as compiled.

    >>> from sqlalchemy import bindparam, create_engine, select
    >>> from twentyone.server.models import ACCOUNTS
    >>> query = select(ACCOUNTS.c.balance).where(ACCOUNTS.c.id == bindparam("id"), ACCOUNTS.c.currency == "USD")
    >>> compiled = compile_for_sqlite(query, ("id",), create_engine("sqlite://").dialect)
    >>> compiled.sql.split("WHERE")[1].strip(), compiled.values({"id": 7})
    ('accounts.id = ? AND accounts.currency = ?', (7, 'USD'))
    """
    compiled = statement.compile(dialect=dialect, column_keys=list(keys))  # type: ignore[attr-defined]
    names = tuple(compiled.positiontup or ())
    binds = [compiled.binds[name] for name in names]
    if any(bind.expanding for bind in binds):
        return None  # an IN of a list given at execution: SQLAlchemy renders its ? marks for each list
    literals = tuple(_UNSET if bind.required else bind.effective_value for bind in binds)
    bind_processors = tuple(bind.type.dialect_impl(dialect).bind_processor(dialect) for bind in binds)
    columns = _columns(statement)
    results = tuple(column.type.dialect_impl(dialect).result_processor(dialect, None) for column in columns or ())
    return Compiled(compiled.string, names, literals, bind_processors, results, columns is not None)


def _columns(statement: Executable) -> list[Any] | None:
    """The columns a statement answers with (None: it answers with no rows)."""
    if isinstance(statement, Select):
        return list(statement.selected_columns)
    if isinstance(statement, UpdateBase):
        returned = list(statement.exported_columns)
        return returned or None
    raise TypeError(f"not a SELECT, INSERT, UPDATE or DELETE: {type(statement).__name__}")


def run(session: Session, statement: Executable, params: Params | Sequence[Params] | None = None) -> Result:
    """``session.execute(statement, params)``, on SQLite's cursor where it can be (module docstring).

    ``params``: a mapping, or a list of them for one statement run for each (as ``executemany``).
    """
    connection = session.connection()  # begins the session's transaction, if it has not begun
    engine = connection.engine
    if engine.dialect.name != "sqlite" or engine.dispatch.before_cursor_execute:
        return session.execute(statement, params)
    batch: list[Params] | None = list(params) if isinstance(params, Sequence) else None
    first: Params = (batch[0] if batch else {}) if batch is not None else (params or {})  # type: ignore[assignment]
    keys = tuple(sorted(first))
    entry = _compiled.get((id(statement), keys))
    if entry is None:
        with _compiling:  # the statement is kept with its compiled form, so that its id stays its own
            entry = _compiled[(id(statement), keys)] = (statement, compile_for_sqlite(statement, keys, engine.dialect))
    compiled = entry[1]
    if compiled is None or (compiled.answers and batch is not None):
        return session.execute(statement, params)
    if session.autoflush:
        session.flush()  # what session.execute does first: pending ORM changes reach the database (no-op if none)
    dbapi_connection = connection.connection.driver_connection
    assert dbapi_connection is not None
    cursor = dbapi_connection.cursor()
    values: Any = None
    try:
        if batch is not None:
            values = [compiled.values(each) for each in batch]
            cursor.executemany(compiled.sql, values)
        else:
            values = compiled.values(first)
            cursor.execute(compiled.sql, values)
        fetched = cursor.fetchall() if compiled.answers else []
        description = cursor.description
    except engine.dialect.loaded_dbapi.Error as error:
        # The same exception SQLAlchemy raises for it (OperationalError, IntegrityError ...): what the store's
        # callers catch, a busy database as 503 and a twin's key as its stored answer.
        raise db_errors.DBAPIError.instance(compiled.sql, values, error,
                                            engine.dialect.loaded_dbapi.Error) from error
    finally:
        cursor.close()
    return Rows(compiled.rows(fetched, description)) if compiled.answers else Rows([])
