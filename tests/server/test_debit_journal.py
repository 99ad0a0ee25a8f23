"""The debit journal's file handling (``twentyone.server.journal``): what another process's recovery, a fork, a long
life and a damaged file do to it. Several cases were found by review; each test fails on the journal before."""

from __future__ import annotations

import fcntl
import itertools
import os
from pathlib import Path
from typing import IO

import pytest

from twentyone.server import journal as journal_module
from twentyone.server.journal import Debit, DebitJournal


def debit(number: int) -> Debit:
    return Debit(f"debit-{number}", 7, "USD", 500, 1)


def recovered(directory: Path) -> list[str]:
    """What another process's recovery finds now, settling each journal it finds (as after its commit)."""
    found = []
    for journal in DebitJournal(directory).abandoned():
        found.extend(each.tx_id for each in journal.debits)
        journal.settled()
    return found


def test_a_journal_is_never_found_before_it_is_locked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another process's recovery runs just before the new journal is locked. The journal was made under its own name,
    so that recovery found it unlocked and empty, settled it, and deleted it: the process then wrote its debits to a
    file no one would ever find. It is now made under a name recovery does not read, and renamed once locked."""
    flock = fcntl.flock
    raced = []

    def recovery_first(handle: IO[bytes], operation: int) -> None:
        if not raced and getattr(handle, "mode", "") == "ab":
            raced.extend(recovered(tmp_path))
            raced.append("ran")
        flock(handle, operation)

    monkeypatch.setattr(journal_module.fcntl, "flock", recovery_first)
    live = DebitJournal(tmp_path)
    live.note([debit(1)])
    monkeypatch.setattr(journal_module.fcntl, "flock", flock)
    assert raced == ["ran"] and live.path is not None and live.path.exists()
    live.close()  # dies with debit-1 open
    assert recovered(tmp_path) == ["debit-1"]


def test_a_journal_with_a_debit_always_open_stays_small(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Under steady load some debit is always open, so a journal emptied only when none is would grow for the process's
    whole life (and a recovery reads it whole). Past its size it is carried to a new journal with its open debits."""
    monkeypatch.setattr(journal_module, "ROTATE_BYTES", 4096)
    journal = DebitJournal(tmp_path)
    journal.note([debit(0)])
    for number in range(1, 2000):
        journal.note([debit(number)])
        journal.resolved([f"debit-{number - 1}"])
    assert journal.path is not None and journal.path.stat().st_size <= 4096 + 100
    assert len(list(tmp_path.glob("debits-*.journal"))) == 1
    journal.close()
    found = recovered(tmp_path)  # the open one, and those noted since the last carry (the outbox tells them resolved)
    assert found[-1] == "debit-1999" and len(found) < 100


def test_a_forked_child_leaves_its_parents_journal_alone(tmp_path: Path) -> None:
    """A child forked from a process with a journal let go of its copy at its clean stop by deleting it: the parent's
    later debits went to a file no one would find."""
    journal = DebitJournal(tmp_path)
    journal.note([debit(1)])
    journal.resolved(["debit-1"])
    child = os.fork()
    if child == 0:
        journal.close()
        os._exit(0)
    os.waitpid(child, 0)
    journal.note([debit(2)])
    assert journal.path is not None and journal.path.exists()
    assert recovered(tmp_path) == []  # the parent lives: its journal is locked
    journal.close()
    assert recovered(tmp_path) == ["debit-1", "debit-2"]  # the outbox tells debit-1 resolved


def test_a_damaged_journal_is_read_for_what_it_holds(tmp_path: Path) -> None:
    """A line of the wrong shape (a damaged disk, a hand's edit) stopped every recovery, and every delivery with it."""
    (tmp_path / "debits-0.journal").write_bytes(b'["+", "debit-1", 7]\n["+", "debit-2", 7, "USD", 500, 1]\n{}\n\xff\n')
    assert recovered(tmp_path) == ["debit-2"]
    assert list(tmp_path.glob("debits-*.journal")) == []


@pytest.mark.parametrize("failing", ["the new file", "its folder"])
def test_a_journal_that_cannot_be_carried_to_a_new_file_goes_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 failing: str) -> None:
    """The disk is full when the journal is carried to a new file: the old one, whole and still locked, goes on (before,
    the new file's lock was let go with its handle, and another process could recover debits still in flight)."""
    monkeypatch.setattr(journal_module, "ROTATE_BYTES", 100)
    journal = DebitJournal(tmp_path)
    journal.note([debit(number) for number in range(5)])  # 175 bytes
    sync, syncs = os.fsync, itertools.count(1)
    fails = 1 if failing == "its folder" else 2  # the new file's folder is synced first (its name), then the file

    def disk_full(descriptor: int) -> None:
        if next(syncs) == fails:
            raise OSError(28, "No space left on device")
        sync(descriptor)

    monkeypatch.setattr(journal_module.os, "fsync", disk_full)
    journal.resolved(["debit-0"])
    monkeypatch.setattr(journal_module.os, "fsync", sync)
    assert next(syncs) > fails  # the carry was tried, and failed
    assert recovered(tmp_path) == [] and [path.name for path in tmp_path.iterdir()] == [journal.path.name]
    journal.note([debit(5)])
    journal.close()
    assert recovered(tmp_path) == [f"debit-{number}" for number in range(6)]
