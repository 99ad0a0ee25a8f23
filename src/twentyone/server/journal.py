"""A write-ahead journal of the debits made in an operator's wallet, for a process dying before their stake commits.

A debit in an operator's wallet is a call made inside the transaction that records its stake
(``wallet.RemoteWallet.debit_now``). A transaction that fails owes its debits a rollback, and the
process sends it; a process killed between the call and the commit remembers nothing, and the
operator would keep the money. So each debit's id is appended to the process's own journal, and
synced to disk, before the call; it is marked resolved once its stake has committed or its
rollback is in the outbox. A journal whose process died (the lock on it released) is read by the
next process that delivers the outbox, in the same data directory: each debit it left unresolved
is looked up in the outbox (a debit recorded done: its stake committed; a rollback: already
queued), else a rollback is queued, and the file is deleted once that transaction commits.

Several processes on one PostgreSQL recover each other's journals where they share a data
directory; a process alone in its directory recovers its own when it starts again.
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

JOURNALS = "wallet-journals"  # the journals' folder in the data directory
# A journal with every debit resolved is emptied once it has grown past this (it is kept, and locked, while its
# process lives).
ROTATE_BYTES = 1 << 20


@dataclass(frozen=True)
class Debit:
    """A debit made in an operator's wallet: what its rollback needs, and the outbox's row, if it comes to that."""

    tx_id: str
    player_id: int
    currency: str
    amount: int
    round_id: int | None


def unresolved(lines: Iterable[bytes]) -> list[Debit]:
    """The debits a journal's lines leave unresolved, in the order they were made. A line cut short by the process's
    death is skipped: its sync had not returned, so its debit was never sent.

    >>> made = json.dumps(["+", "debit-1", 7, "USD", 500, 1]).encode()
    >>> unresolved([made + b"\\n", b'["-", "debit-1"]\\n', made.replace(b"-1", b"-2"), b'["+", "debit-3", 7'])
    [Debit(tx_id='debit-2', player_id=7, currency='USD', amount=500, round_id=1)]
    """
    debits: dict[str, Debit] = {}
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if entry[0] == "+":
            debits[entry[1]] = Debit(*entry[1:])
        else:
            debits.pop(entry[1], None)
    return list(debits.values())


class DebitJournal:
    """This process's journal of debits made and not yet resolved, in ``directory``; and the journals of the dead.

    >>> import tempfile
    >>> directory = Path(tempfile.mkdtemp())
    >>> journal = DebitJournal(directory)
    >>> journal.note([Debit("debit-1", 7, "USD", 500, 1), Debit("debit-2", 7, "USD", 500, 1)])
    >>> journal.resolved(["debit-1"])
    >>> DebitJournal(directory).abandoned()  # another process's view: this one lives
    []
    >>> journal.close()  # as if its process died, with debit-2 unresolved
    >>> [found] = DebitJournal(directory).abandoned()
    >>> found.path == journal.path, found.debits
    (True, [Debit(tx_id='debit-2', player_id=7, currency='USD', amount=500, round_id=1)])
    >>> found.settled(); found.path.exists()
    False
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.path = directory / f"debits-{uuid.uuid4().hex}.journal"
        self._file: IO[bytes] | None = None
        self._pid = 0
        self._open: set[str] = set()
        self._lock = threading.Lock()

    def _journal(self) -> IO[bytes]:
        """The file, opened and locked at the process's first debit; a process forked after that opens its own (a
        lock inherited through a fork is shared with the parent)."""
        if self._file is None or self._pid != os.getpid():
            self.directory.mkdir(parents=True, exist_ok=True)
            self.path = self.directory / f"debits-{uuid.uuid4().hex}.journal"
            self._file = open(self.path, "ab")  # noqa: SIM115 - held open (and locked) while the process lives
            fcntl.flock(self._file, fcntl.LOCK_EX | fcntl.LOCK_NB)
            self._pid = os.getpid()
            self._open = set()
        return self._file

    def note(self, debits: Sequence[Debit]) -> None:
        """Record ``debits`` on disk (one sync) before they are sent."""
        lines = [json.dumps(["+", debit.tx_id, debit.player_id, debit.currency, debit.amount, debit.round_id]).encode()
                 + b"\n" for debit in debits]
        with self._lock:
            journal = self._journal()
            journal.write(b"".join(lines))
            journal.flush()
            os.fsync(journal.fileno())
            self._open.update(debit.tx_id for debit in debits)

    def resolved(self, tx_ids: Iterable[str]) -> None:
        """Mark debits whose stake committed, or whose rollback the outbox holds. Not synced: a mark lost with the
        process leaves the debit to be looked up in the outbox, which tells the same."""
        with self._lock:
            if self._file is None or self._pid != os.getpid():
                return
            done = [tx_id for tx_id in tx_ids if tx_id in self._open]
            if not done:
                return
            self._open.difference_update(done)
            if not self._open and self._file.tell() > ROTATE_BYTES:
                self._file.truncate(0)
            else:
                self._file.write(b"".join(json.dumps(["-", tx_id]).encode() + b"\n" for tx_id in done))
            self._file.flush()

    def close(self) -> None:
        """Release the journal (a clean shutdown): deleted if nothing is left unresolved in it."""
        with self._lock:
            if self._file is None:
                return
            if not self._open:
                self.path.unlink(missing_ok=True)
            self._file.close()
            self._file = None

    def abandoned(self) -> list[Abandoned]:
        """The journals of processes that died, each with its unresolved debits and locked until it is settled or
        released (two processes never recover one journal at once)."""
        found = []
        for path in sorted(self.directory.glob("debits-*.journal")):
            try:
                handle = open(path, "rb")  # noqa: SIM115 - held (and locked) until settled or released
            except FileNotFoundError:
                continue
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:  # its process lives (this one's own, too: a lock per open file)
                handle.close()
                continue
            found.append(Abandoned(path, unresolved(handle), handle))
        return found


@dataclass(frozen=True)
class Abandoned:
    """A dead process's journal: its unresolved debits, and the file, held locked."""

    path: Path
    debits: list[Debit]
    handle: IO[bytes]

    def settled(self) -> None:
        """Every debit of it is resolved in the database: the journal goes."""
        self.path.unlink(missing_ok=True)
        self.handle.close()

    def release(self) -> None:
        """Left for a later try."""
        self.handle.close()
