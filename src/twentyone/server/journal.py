"""A write-ahead journal of the debits made in an operator's wallet, for a process dying before their stake commits.

A debit in an operator's wallet is a call made inside the transaction that records its stake
(``wallet.RemoteWallet.debit_now``). A transaction that fails owes its debits a rollback, and the
process sends it; a process killed between the call and the commit remembers nothing, and the
operator would keep the money. So each debit is appended to the process's own journal, and synced
to disk, before the call; the process forgets it once its stake has committed or its rollback is
in the outbox. A journal whose process died (the lock on it released) is read at the next tick of
any process in the same data directory: each debit in it is looked up in the outbox (a debit
recorded done: its stake committed; a rollback: already queued), else a rollback is queued, and
the file is deleted once that transaction commits.

Several processes on one PostgreSQL recover each other's journals where they share a data
directory; a process alone in its directory recovers its own when it starts again.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import threading
import time
import uuid
import weakref
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

JOURNALS = "wallet-journals"  # the journals' folder in the data directory
# A journal past this size is emptied when no debit in it is open, or else carried to a new one with its open debits
# alone (a dead process's journal is read whole at its recovery: this bounds that read).
ROTATE_BYTES = 256 * 1024
MAKING_SECONDS = 60  # a journal still under its making name this long after its process made it is a dead one's

log = logging.getLogger("twentyone.server")


@dataclass(frozen=True)
class Debit:
    """A debit made in an operator's wallet: what its rollback needs, and the outbox's row, if it comes to that."""

    tx_id: str
    player_id: int
    currency: str
    amount: int
    round_id: int | None


def unresolved(lines: Iterable[bytes]) -> list[Debit]:
    """The debits a journal's lines name, in the order they were made, each once. A line cut short by the process's
    death, or not a journal's line at all, is skipped: a line's sync had not returned, so its debit was never sent.

    >>> made = json.dumps(["+", "debit-1", 7, "USD", 500, 1]).encode()
    >>> unresolved([made + b"\\n", made + b"\\n", b'["+", "debit-2", 7]\\n', b'["+", {"x": 1}, 7, "USD", 5, 1]',
    ...             b'["+", "debit-3", 7'])
    [Debit(tx_id='debit-1', player_id=7, currency='USD', amount=500, round_id=1)]
    """
    debits: dict[str, Debit] = {}
    for line in lines:
        try:
            sign, tx_id, player_id, currency, amount, round_id = json.loads(line)
        except (ValueError, TypeError):
            continue
        if (sign == "+" and isinstance(tx_id, str) and 0 < len(tx_id) <= 64 and isinstance(player_id, int)
                and isinstance(currency, str) and len(currency) == 3 and isinstance(amount, int)
                and (round_id is None or isinstance(round_id, int))):
            debits.setdefault(tx_id, Debit(tx_id, player_id, currency, amount, round_id))
    return list(debits.values())


def _append_synced(journal: IO[bytes], debits: Iterable[Debit]) -> None:
    """Append a line for each debit, and sync the file to disk."""
    journal.write(b"".join(json.dumps(["+", debit.tx_id, debit.player_id, debit.currency, debit.amount,
                                       debit.round_id]).encode() + b"\n" for debit in debits))
    journal.flush()
    os.fsync(journal.fileno())


class DebitJournal:
    """This process's journal of debits made and not yet resolved, in ``directory``; and the journals of the dead.

    Only debits made are written (each synced before it is sent); a resolution is kept in memory, and the file is
    emptied, or its open debits carried to a new one, once it has grown past :data:`ROTATE_BYTES`. A dead process's
    journal is read whole: each debit in it is looked up in the outbox, which tells whether it was resolved.

    >>> import tempfile
    >>> directory = Path(tempfile.mkdtemp())
    >>> journal = DebitJournal(directory)
    >>> journal.note([Debit("debit-1", 7, "USD", 500, 1), Debit("debit-2", 7, "USD", 500, 1)])
    >>> journal.resolved(["debit-1"])
    >>> DebitJournal(directory).abandoned(), DebitJournal(directory).any_abandoned()  # this one lives
    ([], False)
    >>> journal.close()  # as if its process died, with debit-2 open
    >>> [found] = DebitJournal(directory).abandoned()
    >>> found.path == journal.path, [debit.tx_id for debit in found.debits]  # the outbox tells debit-1 resolved
    (True, ['debit-1', 'debit-2'])
    >>> found.settled(); found.path.exists()
    False
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.path: Path | None = None
        self._file: IO[bytes] | None = None
        self._pid = 0
        self._open: dict[str, Debit] = {}
        self._lock = threading.Lock()
        # A process forked from this one lets go of the journal it inherited (its lock is the parent's).
        own = weakref.WeakMethod(self._after_fork)
        os.register_at_fork(after_in_child=lambda: (method := own()) is not None and method())

    def _after_fork(self) -> None:
        if self._file is not None:
            self._file.close()
        self._file, self.path, self._open, self._lock = None, None, {}, threading.Lock()

    def _create(self) -> tuple[Path, IO[bytes]]:
        """A new journal, locked before any recovery can see it: made under a name recovery does not read, locked,
        then renamed (a journal found unlocked is a dead process's)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        name = uuid.uuid4().hex
        making = self.directory / f"making-{name}"
        handle = open(making, "ab")  # noqa: SIM115 - held open (and locked) while the process lives
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            path = self.directory / f"debits-{name}.journal"
            os.replace(making, path)
            self._sync_directory()  # the name, too, must outlive a power loss
        except BaseException:
            handle.close()
            making.unlink(missing_ok=True)
            raise
        return path, handle

    def _sync_directory(self) -> None:
        folder = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)

    def _journal(self) -> IO[bytes]:
        """The file, made at the process's first debit."""
        if self._file is None or self._pid != os.getpid():
            self.path, self._file = self._create()
            self._pid = os.getpid()
            self._open = {}
        return self._file

    def note(self, debits: Sequence[Debit]) -> None:
        """Record ``debits`` on disk (one sync) before they are sent."""
        with self._lock:
            _append_synced(self._journal(), debits)
            self._open.update((debit.tx_id, debit) for debit in debits)

    def resolved(self, tx_ids: Iterable[str]) -> None:
        """Forget debits whose stake committed, or whose rollback the outbox holds (committed: on PostgreSQL, and on
        SQLite with an operator's wallet, a commit is on disk when it returns)."""
        with self._lock:
            if self._file is None or self._pid != os.getpid():
                return
            for tx_id in tx_ids:
                self._open.pop(tx_id, None)
            if self._file.tell() <= ROTATE_BYTES:
                return
            if not self._open:
                self._file.truncate(0)
                return
            self._rotate()

    def _rotate(self) -> None:
        """Carry the open debits to a new journal; the old one is emptied before it is let go, so that a recovery
        that opened it meanwhile finds nothing in it."""
        assert self._file is not None and self.path is not None
        made: tuple[Path, IO[bytes]] | None = None
        try:
            made = path, journal = self._create()
            _append_synced(journal, self._open.values())
        except OSError:  # a full disk: the old journal, still whole and locked, goes on
            if made is not None:
                made[1].close()
                made[0].unlink(missing_ok=True)
            log.exception("the debit journal could not be carried to a new file; the old one goes on")
            return
        old_path, old = self.path, self._file
        old.truncate(0)
        os.fsync(old.fileno())
        old_path.unlink(missing_ok=True)
        old.close()
        self.path, self._file = path, journal

    def close(self) -> None:
        """Release the journal (a clean stop): deleted if no debit in it is open."""
        with self._lock:
            if self._file is None or self._pid != os.getpid():
                return
            if not self._open and self.path is not None:
                self.path.unlink(missing_ok=True)
            self._file.close()
            self._file = None

    def _dead(self) -> Iterator[tuple[Path, IO[bytes]]]:
        """Each journal of this directory whose lock is free (its process died), opened and locked. A journal a
        process died making (before any debit went into it) is deleted."""
        for making in self.directory.glob("making-*"):
            with contextlib.suppress(OSError), open(making, "rb") as handle:
                if time.time() - os.fstat(handle.fileno()).st_mtime > MAKING_SECONDS:  # not one being made now
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    making.unlink()
        for path in sorted(self.directory.glob("debits-*.journal")):
            try:
                handle = open(path, "rb")  # noqa: SIM115 - the caller closes it
            except FileNotFoundError:  # settled by another process meanwhile
                continue
            except OSError:
                log.exception("the debit journal %s cannot be opened; its debits wait", path)
                continue
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:  # its process lives (this one's own, too: a lock per open file)
                handle.close()
                continue
            yield path, handle

    def any_abandoned(self) -> bool:
        """Whether a dead process left a journal here (a few system calls: every tick of every process asks)."""
        for _path, handle in self._dead():
            handle.close()
            return True
        return False

    def abandoned(self) -> list[Abandoned]:
        """The journals of processes that died, each with its debits and locked until it is settled or released (two
        processes never recover one journal at once). One that cannot be read is left, and logged."""
        found: list[Abandoned] = []
        try:
            for path, handle in self._dead():
                try:
                    found.append(Abandoned(path, unresolved(handle), handle))
                except Exception:
                    log.exception("the debit journal %s could not be read; left for a later tick", path)
                    handle.close()
        except BaseException:
            for journal in found:
                journal.release()
            raise
        return found


@dataclass(frozen=True)
class Abandoned:
    """A dead process's journal: its debits, and the file, held locked."""

    path: Path
    debits: list[Debit]
    handle: IO[bytes]

    def settled(self) -> None:
        """Every debit of it is resolved in the database: the journal goes (if the name is still this file's)."""
        try:
            if os.stat(self.path).st_ino == os.fstat(self.handle.fileno()).st_ino:
                self.path.unlink()
        except FileNotFoundError:
            pass
        self.handle.close()

    def release(self) -> None:
        """Left for a later try."""
        self.handle.close()
