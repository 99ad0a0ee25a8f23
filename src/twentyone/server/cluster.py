"""Several server processes on one PostgreSQL: timers owned by advisory lock, events carried by LISTEN/NOTIFY.

Every process serves every request: money and rounds are guarded by row locks
(``SELECT ... FOR UPDATE``), so no request needs to know which process it hit.
Two things cannot be shared that way, and this module handles them:

- **Timers** (betting windows, decision time-outs, wallet retries) must fire in
  one process per table. A process runs a table's timers only while it holds
  ``pg_try_advisory_lock(key of the table)`` on a dedicated connection. The lock
  lives as long as that connection: when the process dies, PostgreSQL ends the
  session, frees the lock, and another process takes the table at its next tick.
  A process that loses its connection owns nothing until it reconnects. The same
  connection holds, for its duration, a close of betting that asks an operator's
  wallet for debits (:func:`betting_close`): one such close of a table at a time.
- **Events** published in one process must reach WebSocket clients of every
  process. :class:`PostgresBroadcaster` delivers locally at once and sends the
  event to the others with ``NOTIFY``; a listener thread per process (its own
  connection) hands other processes' events to its own clients. If the bridge
  loses its connection, events may have been missed, so every local client is
  dropped and re-reads on reconnect rather than miss one silently.
- **Presence** (who watches a table live, which sets a lone player's short betting
  window) is each process's own: every process tells the others, by the same
  bridge, whom it has at each table, at once when that changes and every
  :data:`PRESENCE_EVERY` seconds. What a process has not repeated for
  :data:`PRESENCE_STALE` seconds (it died) is forgotten.

On SQLite (one process) :class:`LocalOwnership` owns every timer and the plain
:class:`~twentyone.server.events.Broadcaster` is the whole fan-out.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import itertools
import json
import logging
import os
import queue
import signal
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from sqlalchemy import BigInteger, bindparam, func, select
from sqlalchemy.engine import make_url

from twentyone.server.context import Busy
from twentyone.server.db import tcp_keepalives
from twentyone.server.direct import READING, WriteInRead, defer
from twentyone.server.events import QUEUE_LIMIT, Broadcaster
from twentyone.server.repeats import RepeatedLines, first_line

if TYPE_CHECKING:
    import psycopg
    from fastapi import FastAPI
    from sqlalchemy.orm import Session

log = logging.getLogger("twentyone.server")
EVENTS_CHANNEL = "twentyone_events"
TABLES_CHANNEL = "twentyone_tables"  # an operator created a table: reload the registry
WAKE_CHANNEL = "twentyone_wake"  # and a process's origin: its own stop wakes its listener
LISTEN_POLL = 1.0  # seconds: how often the listener looks for a stop when nothing woke it
MAX_PAYLOAD = 7900  # bytes: PostgreSQL refuses NOTIFY payloads of 8000 bytes or more
IDLE_SESSION_TIMEOUT_MS = 30_000  # a timer session silent this long (a frozen host) is ended by PostgreSQL
PRESENCE_EVERY = 5.0  # seconds: how often a process with anyone at its tables tells the others so, changed or not
PRESENCE_STALE = 3 * PRESENCE_EVERY  # a process not heard from this long (it died) counts nobody anywhere
PRESENCE_PART = 200  # tables told in one NOTIFY (about 25 bytes each, well under MAX_PAYLOAD)


def lock_key(name: str) -> int:
    """A stable signed 64-bit advisory lock key for ``name`` (the same in every process and release)."""
    digest = hashlib.blake2b(f"twentyone:{name}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def lock_in_transaction(session: Session, name: str) -> bool:
    """Hold the advisory lock on ``name`` until the session's transaction ends, on PostgreSQL, and say so; on
    SQLite nothing (False), since it runs one write transaction at a time. For a check, then a write, that no
    other transaction may make at the same time: after the lock, check again."""
    if session.info.get(READING):  # a read runs outside any transaction block on PostgreSQL: the lock would not last
        raise WriteInRead(f"A read takes no lock ({name}): take it in the write it guards.")
    if session.get_bind().dialect.name != "postgresql":
        return False
    defer(session, XACT_LOCK, {"key": lock_key(name)})  # taken before the next statement runs, in its round trip
    return True


# A Core statement, not text: run as compiled once (direct.run), at every deal and settlement on PostgreSQL.
XACT_LOCK = select(func.pg_advisory_xact_lock(bindparam("key", type_=BigInteger)))


def table_timers(table_id: str) -> str:
    """The ownership name of a table's timers (its betting window and decision time-outs)."""
    return f"table:{table_id}"


def betting_close(table_id: str) -> str:
    """The name a close of a table's betting holds while it asks an operator's wallet for the seats' debits and deals:
    one such close at a time among every process (the timer's in one, the operator's button in another)."""
    return f"closing:{table_id}"


OUTBOX = "outbox"  # the operator-wallet retries: one process delivers them


def is_postgres(url: str) -> bool:
    return make_url(url).get_backend_name() == "postgresql"


def libpq_params(url: str) -> dict[str, Any]:
    """The SQLAlchemy URL as libpq's parameters, for connections kept outside the pool: as SQLAlchemy's dialect makes
    them for the pool's (several hosts joined, each value as the URL means it: psycopg quotes them), a parameter
    given twice joined by spaces (libpq's ``options`` adds up so). Before, the URL was written out again as text,
    where a space became ``+`` (``options=-c+lock_timeout%3D3000``), which libpq does not read as a space: the timers'
    and the listener's connections were refused for ever, and no table's timers ran (an operator's trial).

    >>> sorted(libpq_params("postgresql+psycopg://ann:a%20b@db/floor?options=-c%20lock_timeout%3D3000").items())
    [('dbname', 'floor'), ('host', 'db'), ('options', '-c lock_timeout=3000'), ('password', 'a b'), ('user', 'ann')]
    >>> libpq_params("postgresql+psycopg://u@/db?host=a:5432&host=b:5433")["host"]
    'a,b'
    """
    parsed = make_url(url)
    _, params = parsed.get_dialect()().create_connect_args(parsed)
    return {name: " ".join(value) if isinstance(value, tuple | list) else value for name, value in params.items()}


def _connect(url: str, purpose: str) -> psycopg.Connection[Any]:
    import psycopg

    # The application name says which process holds the connection (and its locks): see pg_stat_activity. TCP finds
    # out a peer gone silent (db.TCP_KEEPALIVES): a half-open timers' connection stalled the ticks and the closes.
    params = {"connect_timeout": 5, **tcp_keepalives(url), **libpq_params(url),
              "application_name": f"twentyone-{purpose} {os.getpid()}"}
    return psycopg.connect(autocommit=True, **params)


# ----------------------------------------------------------------- timers
class TimerOwnership(Protocol):
    def owned(self, names: Iterable[str]) -> set[str]:
        """Of ``names``, those whose timers run in this process now (taking free ones)."""
        ...

    def hold(self, name: str) -> bool:
        """Take ``name`` for this process if no other process holds it (True), until :meth:`let_go`. Within one
        process the caller takes turns by its own lock: this excludes the other processes."""
        ...

    def let_go(self, name: str) -> None:
        """Give back what :meth:`hold` took."""
        ...

    def close(self) -> None: ...

    @property
    def answering(self) -> bool:
        """Whether the last look at ownership was answered (else no timer runs here until one is: readiness)."""
        ...


class LocalOwnership:
    """One process (SQLite, or a test without PostgreSQL): every timer is this process's."""

    answering = True

    def owned(self, names: Iterable[str]) -> set[str]:
        return set(names)

    def hold(self, name: str) -> bool:
        return True  # no other process

    def let_go(self, name: str) -> None:
        pass

    def close(self) -> None:
        pass


class AdvisoryOwnership:
    """Timers owned through PostgreSQL advisory locks, held on one dedicated connection.

    A lock once taken is kept until the process ends (or loses the connection):
    ownership does not move while its owner is alive, so a table's timers never
    run in two processes at once, and a dead owner's tables are free at once.
    The locks :meth:`hold` takes are held until :meth:`let_go`; while any is,
    a thread keeps the connection from falling silent for as long as
    ``idle_session_timeout``, which would end it and its locks (a close that
    asks the operator for a thousand debits may take longer than the ticks'
    gap, and the timer's close runs on the tick's own thread).
    """

    def __init__(self, url: str) -> None:
        self.url = url
        self._connection: psycopg.Connection[Any] | None = None
        self._held: set[str] = set()
        self._holding: set[str] = set()  # hold's, until let go
        self._lock = threading.Lock()
        self._beats: threading.Thread | None = None
        self._closed = threading.Event()
        self._lines = RepeatedLines(log)  # a database away: one line, then a count (a line a tick buried the log)
        self.answering = True  # until a look fails (a new process's first look is at once)

    def owned(self, names: Iterable[str]) -> set[str]:
        import psycopg

        names = set(names)
        with self._lock:
            try:
                connection = self._connect()
                wanted = sorted(names - self._held)
                if wanted:
                    keys = {lock_key(name): name for name in wanted}
                    rows = connection.execute("SELECT k, pg_try_advisory_lock(k) FROM unnest(%s::bigint[]) AS k",
                                              [list(keys)]).fetchall()
                    self._held |= {keys[key] for key, taken in rows if taken}
                else:
                    connection.execute("SELECT 1")  # still alive, so the locks held are still ours
            except psycopg.Error as error:
                self._lines.warning(f"timer ownership lost ({first_line(error)}); reconnecting at the next tick")
                self._reset()
                self.answering = False
                return set()
            self._lines.flush(every=True)  # back: how many ticks it was away
            self.answering = True
            return names & self._held

    def hold(self, name: str) -> bool:
        """``pg_try_advisory_lock`` of ``name`` on the timers' connection: a lock that ends with this process, as its
        tables' do. Storage trouble is :class:`~twentyone.server.context.Busy` (and, as at a tick, the connection and
        every lock on it are let go)."""
        import psycopg

        with self._lock:
            for attempt in (1, 2):  # a connection PostgreSQL ended (its idle timeout, a restart): once more, anew
                try:
                    row = self._connect().execute("SELECT pg_try_advisory_lock(%s)", [lock_key(name)]).fetchone()
                    break
                except psycopg.Error as error:
                    log.warning("advisory lock %s not taken (%s); timer ownership let go", name, error)
                    self._reset()
                    if attempt == 2:
                        raise Busy() from error
            taken = bool(row and row[0])
            if taken:
                self._holding.add(name)
                if self._beats is None or not self._beats.is_alive():
                    self._beats = threading.Thread(target=self._keep_alive, name="twentyone-advisory-beats",
                                                   daemon=True)
                    self._beats.start()
            return taken

    def let_go(self, name: str) -> None:
        import psycopg

        with self._lock:
            if name not in self._holding or self._connection is None:  # lost with its connection (so let go)
                return
            self._holding.discard(name)
            try:
                self._connection.execute("SELECT pg_advisory_unlock(%s)", [lock_key(name)])
            except psycopg.Error as error:  # the connection's end lets go of it, and of the tables' locks
                log.warning("advisory lock %s not let go (%s); timer ownership let go", name, error)
                self._reset()

    def _connect(self) -> psycopg.Connection[Any]:
        import psycopg

        if self._connection is None or self._connection.closed:
            self._held, self._holding = set(), set()
            self._connection = _connect(self.url, "timers")
            # PostgreSQL 14+: a frozen owner's session (and its locks) ends after this much silence.
            with contextlib.suppress(psycopg.Error):
                self._connection.execute("SELECT set_config('idle_session_timeout', %s, false)",
                                         [str(IDLE_SESSION_TIMEOUT_MS)])
        return self._connection

    def _keep_alive(self) -> None:
        """While a lock :meth:`hold` took is held: a statement every tenth of ``idle_session_timeout``, so that a beat
        late by most of the timeout (a loaded host, a pause of the collector) still keeps the session. (A process
        frozen for the whole timeout has its beats frozen too: its session still ends, and its locks with it.)"""
        import psycopg

        while not self._closed.wait(IDLE_SESSION_TIMEOUT_MS / 10_000):
            with self._lock:
                if not self._holding or self._connection is None:
                    continue
                try:
                    self._connection.execute("SELECT 1")
                except (psycopg.Error, OSError) as error:
                    log.warning("advisory locks %s lost (%s); timer ownership let go", sorted(self._holding), error)
                    self._reset()

    def _reset(self) -> None:
        self._held = set()
        self._holding = set()
        if self._connection is not None:
            with contextlib.suppress(Exception):  # closing a broken connection
                self._connection.close()
        self._connection = None

    def close(self) -> None:
        """Give every table back (a clean shutdown): other processes take them at their next tick."""
        self._closed.set()
        with self._lock:
            self._reset()


# ----------------------------------------------------------------- events
# What an event cut to fit NOTIFY's payload keeps.
CUT_KEEPS = ("type", "round_id", "private", "player_id")


class _Stop:
    """The mark a stop puts in the sender's queue: what was queued before it is the last to send."""


class _PresenceChanged:
    """The mark a change of whom this process has at a table puts in the sender's queue: send it now."""


PRESENCE_CHANGED = _PresenceChanged()


class PostgresBroadcaster(Broadcaster):
    """The in-process fan-out plus a bridge: events reach the clients of every process by LISTEN/NOTIFY.

    ``publish`` delivers to this process's clients at once and queues the event
    for a sender thread, which sends what has gathered in one round trip (so a
    request never waits on the bridge). A listener thread, on its own connection,
    delivers other processes' events to this process's clients.

    Presence travels the same way: the sender tells the others whom this process
    has at its tables (:func:`~twentyone.server.events.presence_summary`) when that changes, every
    :data:`PRESENCE_EVERY` seconds while anyone is there, and when another process
    starts and asks; :meth:`anyone_else` counts what the others told, unless stale.
    """

    def __init__(self, url: str, limit: int = QUEUE_LIMIT,
                 on_tables_changed: Callable[[], object] | None = None) -> None:
        super().__init__(limit)
        self.url = url
        self.origin = uuid.uuid4().hex[:12]
        self.on_tables_changed = on_tables_changed or (lambda: None)
        self._outbox: queue.SimpleQueue[tuple[str, str] | _Stop | _PresenceChanged] = queue.SimpleQueue()
        self._stop_marker = _Stop()
        self._sequence = itertools.count()  # NOTIFY folds identical payloads of one transaction: keep each unique
        self._stopping = threading.Event()
        self._listening = threading.Event()
        self._threads: list[threading.Thread] = []
        # The listener's reconnections while the database is away: one line, then a count once it is back (two lines
        # a second a process buried an outage's start and end: an operator's trial).
        self._lines = RepeatedLines(log)
        # Presence: what the sender last told (None: nothing yet, or a send failed), when, and whether to ask the
        # others for theirs (a start, a reconnection) or answer one who asked; the others' as last heard, by origin.
        self._presence_told: dict[str, int | None] | None = None
        self._presence_told_at = 0.0
        self._ask_others = False
        self._asked = False
        self._others_present: dict[str, tuple[float, dict[str, int | None]]] = {}
        self._presence_lock = threading.Lock()

    # Requests call these.
    def publish(self, table_id: str, event: dict[str, Any]) -> None:
        self.deliver(table_id, event)
        payload = self._payload({"t": table_id, "e": event})
        if len(payload.encode()) > MAX_PAYLOAD:  # keep what a client needs to re-read (the kind and the round) and
            # whom a private event is for: cut without them, it went to everyone at the table (found by review)
            payload = self._payload({"t": table_id, "e": {k: event[k] for k in CUT_KEEPS if k in event}})
        self._outbox.put((EVENTS_CHANNEL, payload))

    def _payload(self, body: dict[str, Any]) -> str:
        return json.dumps({"o": self.origin, "n": next(self._sequence), **body}, separators=(",", ":"))

    def _presence_changed(self, table_id: str) -> None:
        self._outbox.put(PRESENCE_CHANGED)  # the sender tells the others now

    def connected(self) -> bool:
        """Whether the listener is connected: other processes' events reach this one's clients (readiness)."""
        return self._listening.is_set()

    def anyone_else(self, table_id: str, player_id: int) -> bool:
        """Whether a player other than ``player_id`` watches the table live through this process or another. Before,
        only this process's were counted: with ``--workers``, a player whose socket was in another process than the
        bettor's did not count, and the bettor got the short window of a player alone."""
        if super().anyone_else(table_id, player_id):
            return True
        now = time.monotonic()
        with self._presence_lock:
            for heard_at, summary in self._others_present.values():
                if now - heard_at < PRESENCE_STALE and table_id in summary and summary[table_id] != player_id:
                    return True
        return False

    # The server's lifespan calls these.
    def start(self, wait: float = 10.0) -> None:
        """Start the sender and the listener; return once the listener listens (or after ``wait`` seconds)."""
        if self._threads:
            return
        self._stopping.clear()
        # Each start's sender ends at its own marker: one left in the queue by a stop whose sender did not answer in
        # time (a database out of reach) must not end the sender of the next start.
        self._stop_marker = _Stop()
        self._threads = [threading.Thread(target=self._send_loop, args=(self._stop_marker,), name="twentyone-notify",
                                          daemon=True),
                         threading.Thread(target=self._listen_loop, name="twentyone-listen", daemon=True)]
        for thread in self._threads:
            thread.start()
        if not self._listening.wait(wait):
            log.warning("the event listener is not connected yet; it keeps trying")

    def stop(self) -> None:
        """Send what is queued, then end both threads. The sender, woken by the stop in its queue, wakes the
        listener with a ``NOTIFY`` on a channel of this process's own: before, each waited out its poll (the listener
        a second), and every stop of a server on PostgreSQL took a second."""
        self._stopping.set()
        if self._threads:
            self._outbox.put(self._stop_marker)
        for thread in self._threads:
            thread.join(timeout=5)
        self._threads = []
        self._listening.clear()

    @property
    def _wake_channel(self) -> str:
        return f"{WAKE_CHANNEL}_{self.origin}"

    # The threads.
    def _send_loop(self, stop_marker: _Stop) -> None:
        import psycopg

        connection: psycopg.Connection[Any] | None = None
        missed = False  # events were lost: tell every process to drop its clients (they re-read)
        stopped = False
        while not stopped:
            try:
                taken: list[tuple[str, str] | _Stop | _PresenceChanged] = [self._outbox.get(timeout=self._until_due())]
            except queue.Empty:
                taken = []  # nothing to send but presence, told again
            while len(taken) < 500:
                try:
                    taken.append(self._outbox.get_nowait())
                except queue.Empty:
                    break
            batch = [item for item in taken if isinstance(item, tuple)]
            events = len(batch)
            stopped = stop_marker in taken
            told = self._presence_payloads(changed=len(batch) < len(taken), leaving=stopped)
            if told is not None:
                batch += [(EVENTS_CHANNEL, payload) for payload in told.payloads]
            if stopped:  # the last send: what was queued before the stop, and the listener's wake-up
                batch.append((self._wake_channel, ""))
            if not batch:
                continue  # an earlier start's marker alone, or no presence to tell
            try:
                if connection is None or connection.closed:
                    connection = _connect(self.url, "notify")
                if missed:
                    batch.insert(0, (EVENTS_CHANNEL, self._payload({"resync": True})))
                channels, payloads = zip(*batch, strict=True)
                connection.execute("SELECT pg_notify(c, p) FROM unnest(%s::text[], %s::text[]) AS x(c, p)",
                                   [list(channels), list(payloads)])
                missed = False
            except psycopg.Error as error:
                if events:  # presence alone lost is told again, and costs no client its socket
                    log.warning("%d events could not be sent to other processes (%s)", events, error)
                    missed = True
                if told is not None:
                    self._presence_unsent(told)
                if connection is not None:
                    connection.close()
                connection = None
                self._stopping.wait(0.5)
        if connection is not None:
            connection.close()

    def _listen_loop(self) -> None:
        import psycopg

        first = True
        while not self._stopping.is_set():
            connection = None
            try:
                connection = _connect(self.url, "listen")
                connection.execute(f"LISTEN {EVENTS_CHANNEL}")
                connection.execute(f"LISTEN {TABLES_CHANNEL}")
                connection.execute(f"LISTEN {self._wake_channel}")
                if not first:  # events of the gap are lost: clients re-read, the registry reloads
                    self.drop_all()
                    self.on_tables_changed()
                first = False
                with self._presence_lock:
                    self._ask_others = True  # whom the others have at their tables: they tell at once, not in 5 s
                self._outbox.put(PRESENCE_CHANGED)
                self._listening.set()
                self._lines.flush(every=True)  # reconnected: how many tries it took
                while not self._stopping.is_set():
                    for note in connection.notifies(timeout=LISTEN_POLL):
                        if note.channel == self._wake_channel:
                            if self._stopping.is_set():
                                break  # stop() woke it
                            continue  # an earlier start's stop, late
                        self._received(note.channel, note.payload)
            except psycopg.Error as error:
                if not self._stopping.is_set():
                    self._lines.warning(f"event listener disconnected ({first_line(error)}); reconnecting")
                    first = False
                    self._stopping.wait(1.0)
            except Exception:  # pragma: no cover - a bad payload must not stop the listener
                log.exception("event listener failed; restarting it")
                self._stopping.wait(1.0)
            finally:
                self._listening.clear()
                if connection is not None:
                    connection.close()

    def _received(self, channel: str, payload: str) -> None:
        try:
            message = json.loads(payload)
        except (ValueError, RecursionError):  # RecursionError: thousands of "[" (before, the listener restarted)
            return
        if channel == TABLES_CHANNEL:
            self.on_tables_changed()
            return
        if not isinstance(message, dict):
            return  # not ours (any role may NOTIFY on the channel): ignored, no client dropped
        if message.get("o") == self.origin:
            return  # delivered locally when it was published
        if message.get("resync"):
            self.drop_all()
        elif isinstance(message.get("p"), dict):
            self._heard_presence(str(message.get("o")), message["p"], message.get("part"), message.get("ask") is True)
        elif isinstance(message.get("t"), str) and isinstance(message.get("e"), dict):
            self.deliver(message["t"], message["e"])

    # Presence.
    def _until_due(self) -> float:
        """How long the sender may wait for its queue: until presence is due again while anyone is here (before, any
        event began the wait anew, and repeats came up to twice :data:`PRESENCE_EVERY` apart)."""
        with self._presence_lock:
            if self._presence_told is None:  # not told yet, or a send failed: soon
                return 1.0
            if not self._presence_told:  # nobody here: nothing to repeat
                return PRESENCE_EVERY
            return max(0.0, self._presence_told_at + PRESENCE_EVERY - time.monotonic())

    def _presence_payloads(self, changed: bool, leaving: bool) -> _Told | None:
        """What the sender tells of this process's presence now, if anything: a change (``changed``: the sender took
        a :data:`PRESENCE_CHANGED`) since it last told, a repeat every :data:`PRESENCE_EVERY` seconds while anyone is
        here, an answer to a process that asked, a question of its own; and, ``leaving`` (a stop), that nobody is here
        now. In parts of :data:`PRESENCE_PART` tables, each within ``NOTIFY``'s limit."""
        now = time.monotonic()
        with self._presence_lock:
            ask, asked = self._ask_others, self._asked
            due = bool(self._presence_told) and now - self._presence_told_at >= PRESENCE_EVERY
            if not (changed or leaving or ask or asked or due or self._presence_told is None):
                return None
            summary = {} if leaving else self.presence()
            if summary == self._presence_told and not ask and not (summary and (asked or due)):
                return None
            # Only what was read is cleared: a question heard since is answered by this very send, which goes after.
            self._ask_others = self._ask_others and not ask
            self._asked = self._asked and not asked
            self._presence_told, self._presence_told_at = summary, now
        tables = list(summary.items())
        parts = [dict(tables[at:at + PRESENCE_PART]) for at in range(0, len(tables), PRESENCE_PART)] or [{}]
        payloads = [self._payload({"p": part, "part": number, **({"ask": True} if ask else {})})
                    for number, part in enumerate(parts)]
        return _Told(payloads, ask, asked)

    def _presence_unsent(self, told: _Told) -> None:
        """A send failed: presence is told again at the next, with the question and the answer it carried."""
        with self._presence_lock:
            self._presence_told = None
            self._ask_others = self._ask_others or told.ask
            self._asked = self._asked or told.asked

    def _heard_presence(self, origin: str, summary: dict[str, Any], part: Any, ask: bool) -> None:
        """Another process's presence (part 0 begins it anew; later parts of the same telling add to it). A value
        other than a player's id counts as two or more: what is not understood never makes a player alone."""
        now = time.monotonic()
        heard = {str(table_id): value if type(value) is int else None for table_id, value in summary.items()}
        with self._presence_lock:
            self._others_present = {o: known for o, known in self._others_present.items()
                                    if now - known[0] < PRESENCE_STALE}
            if part not in (0, None) and origin in self._others_present:
                heard = {**self._others_present[origin][1], **heard}
            if heard:
                self._others_present[origin] = (now, heard)
            else:
                self._others_present.pop(origin, None)
            self._asked = self._asked or ask  # a process started (or reconnected): it hears whom this one has now
        if ask:
            self._outbox.put(PRESENCE_CHANGED)


class _Told(NamedTuple):
    """Presence sent in one batch: its payloads, and the question or the answer it carries (kept if the send fails)."""

    payloads: list[str]
    ask: bool
    asked: bool


# ------------------------------------------------------------- workers
SUPERVISOR_ENV_VAR = "TWENTYONE_SUPERVISOR_PID"  # serve --workers: the process whose workers end with it
_PR_SET_PDEATHSIG = 1  # Linux's prctl option: a signal sent to this process when its parent ends


def end_with_supervisor() -> None:
    """A worker of ``serve --workers N`` ends (SIGTERM: it shuts down as it would when stopped) when the process
    that started it ends, however it ends. Before, ``kill -9`` of that process left its workers serving on the port
    for ever, and the next ``serve`` found the port taken (found by a trial of an operator).

    On Linux the kernel sends the signal (``prctl(PR_SET_PDEATHSIG)``); elsewhere a thread looks at the parent
    every 2 s. A worker whose parent is already gone when it starts ends at once. Nothing happens outside such a
    worker (no :data:`SUPERVISOR_ENV_VAR`).
    """
    supervisor = int(os.environ.get(SUPERVISOR_ENV_VAR) or 0)
    if not supervisor:
        return
    armed = False
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            armed = ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) == 0
    if os.getppid() != supervisor:  # it ended before the kernel was asked to tell
        os.kill(os.getpid(), signal.SIGTERM)
        return
    if not armed:
        def watch() -> None:
            while os.getppid() == supervisor:
                time.sleep(2)
            os.kill(os.getpid(), signal.SIGTERM)

        threading.Thread(target=watch, name="twentyone-supervisor-watch", daemon=True).start()


def worker_app() -> FastAPI:
    """The application of one ``serve --workers N`` worker, from the environment the parent set.

    uvicorn starts workers from an import string, so settings travel as
    environment variables (``serve`` sets them, the operator token included, so
    every worker shares one token and none races to create it).
    """
    from twentyone.server.app import create_app, freeze_startup_objects
    from twentyone.server.config import Settings
    from twentyone.server.cpu import pin_to_one_cpu, pin_wanted
    from twentyone.server.wallet import load_operator_wallet

    end_with_supervisor()
    spec = os.environ.get("TWENTYONE_OPERATOR_WALLET")
    application = create_app(Settings.from_environment(), operator_wallet=load_operator_wallet(spec) if spec else None)
    if pin_wanted():  # serve --pin-cpu: each worker on a CPU of its own (docs/server.md, "One CPU per process")
        cpu = pin_to_one_cpu()
        if cpu is not None:
            print(f"twentyone worker {os.getpid()}: its threads on CPU {cpu}", flush=True)
    freeze_startup_objects()
    return application
