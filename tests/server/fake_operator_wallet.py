"""Operator wallets for the tests: one for the `serve --wallet` test, which keeps balances in memory; one that keeps
the contract strictly and misbehaves on demand; that one kept in a file, for server processes a test kills; and the
one in memory answering after a network's latency, for benchmarks."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from twentyone.server.wallet import WalletError, WalletTimeout


class MemoryWallet:
    def __init__(self) -> None:
        self.balances: dict[str, int] = {}

    def balance(self, player: str, currency: str) -> int:
        return self.balances.setdefault(player, 77_700)

    def debit(self, player: str, currency: str, amount: int, tx_id: str, round_id: int | None) -> None:
        self.balances[player] = self.balance(player, currency) - amount

    def credit(self, player: str, currency: str, amount: int, tx_id: str, round_id: int | None) -> None:
        self.balances[player] = self.balance(player, currency) + amount

    def rollback(self, tx_id: str) -> None:
        return None


class ContractWallet:
    """An operator's wallet that keeps the usual contract strictly, for the tests of debits that must be undone.

    Each call is idempotent by its id; a rollback undoes a debit and is final (a debit with an id rolled back is
    refused, as operators refuse it); a rollback of an id never seen is remembered as such. ``refuse`` (players whose
    debits are refused), ``unanswered`` (players whose debits apply, then lose their answer), ``debit_timeouts`` (so
    many debits that apply and lose their answer) and ``rollback_timeouts`` (rollbacks that do not answer) make it
    misbehave, as do ``refuse_rollbacks`` and ``after_debit`` (called once a debit has applied: it may raise);
    ``on_debit`` runs inside each debit, before anything (in a pool's threads, at a close of betting).
    """

    def __init__(self, start: int = 100_000) -> None:
        self.start = start
        self.balances: dict[str, int] = {}
        self.applied: dict[str, tuple[str, int]] = {}  # tx id: (player, signed amount)
        self.rolled_back: set[str] = set()
        self.calls: list[tuple[str, str]] = []
        self.refuse: set[str] = set()
        self.debit_timeouts = 0
        self.unanswered: set[str] = set()
        self.rollback_timeouts = 0
        self.on_debit: Callable[[], None] = lambda: None
        self.after_debit: Callable[[], None] = lambda: None
        self.refuse_rollbacks = False

    def balance(self, player: str, currency: str) -> int:
        return self.balances.setdefault(player, self.start)

    def _move(self, player: str, amount: int, tx_id: str) -> None:
        if tx_id in self.rolled_back:
            raise WalletError(f"Transaction {tx_id} was rolled back.")
        if tx_id not in self.applied:
            self.balances[player] = self.balance(player, "USD") + amount
            self.applied[tx_id] = (player, amount)

    def debit(self, player: str, currency: str, amount: int, tx_id: str, round_id: int | None) -> None:
        self.calls.append(("debit", tx_id))
        self.on_debit()
        if player in self.refuse or amount > self.balance(player, currency):
            raise WalletError("The operator's wallet refused the stake.")
        self._move(player, -amount, tx_id)
        self.after_debit()
        if player in self.unanswered:
            raise WalletTimeout()  # applied, and the answer lost
        if self.debit_timeouts:
            self.debit_timeouts -= 1
            raise WalletTimeout()

    def credit(self, player: str, currency: str, amount: int, tx_id: str, round_id: int | None) -> None:
        self.calls.append(("credit", tx_id))
        self._move(player, amount, tx_id)

    def rollback(self, tx_id: str) -> None:
        self.calls.append(("rollback", tx_id))
        if self.refuse_rollbacks:
            raise WalletError(f"Unknown transaction {tx_id}.", 404)
        if self.rollback_timeouts:
            self.rollback_timeouts -= 1
            raise WalletTimeout()
        if tx_id in self.applied and tx_id not in self.rolled_back:
            player, amount = self.applied[tx_id]
            self.balances[player] -= amount
        self.rolled_back.add(tx_id)

    def rollbacks(self) -> set[str]:
        """The debits rolled back (ids of debits this wallet applied)."""
        return {tx_id for tx_id in self.rolled_back if tx_id in self.applied}


class FileWallet(ContractWallet):
    """A :class:`ContractWallet` kept in a JSON file (``TWENTYONE_TEST_WALLET_FILE``), so that it outlives the server
    processes a test kills, and the test reads what the operator holds."""

    def __init__(self, path: str | None = None) -> None:
        super().__init__()
        self.path = Path(path or os.environ["TWENTYONE_TEST_WALLET_FILE"])

    def _load(self) -> None:
        if self.path.exists():
            state = json.loads(self.path.read_text())
            self.balances = state["balances"]
            self.applied = {tx_id: (player, amount) for tx_id, (player, amount) in state["applied"].items()}
            self.rolled_back = set(state["rolled_back"])

    def _save(self) -> None:
        state = {"balances": self.balances, "applied": self.applied, "rolled_back": sorted(self.rolled_back)}
        self.path.with_suffix(".tmp").write_text(json.dumps(state))
        self.path.with_suffix(".tmp").replace(self.path)

    def balance(self, player: str, currency: str) -> int:
        self._load()
        return super().balance(player, currency)

    def debit(self, player: str, currency: str, amount: int, tx_id: str, round_id: int | None) -> None:
        self._load()
        try:
            super().debit(player, currency, amount, tx_id, round_id)
        finally:
            self._save()

    def credit(self, player: str, currency: str, amount: int, tx_id: str, round_id: int | None) -> None:
        self._load()
        super().credit(player, currency, amount, tx_id, round_id)
        self._save()

    def rollback(self, tx_id: str) -> None:
        self._load()
        super().rollback(tx_id)
        self._save()


class LatentWallet:
    """An operator's wallet over a network, kept in memory: every call answers after ``TWENTYONE_TEST_WALLET_LATENCY``
    seconds (0.02 if unset), as one in another data centre would; calls from several threads at once. For ``serve
    --wallet`` (benchmarks)."""

    def __init__(self) -> None:
        self.latency = float(os.environ.get("TWENTYONE_TEST_WALLET_LATENCY", "0.02"))
        self.balances: dict[str, int] = {}
        self.lock = threading.Lock()

    def _move(self, player: str, amount: int) -> int:
        time.sleep(self.latency)
        with self.lock:
            self.balances[player] = self.balances.get(player, 10**9) + amount
            return self.balances[player]

    def balance(self, player: str, currency: str) -> int:
        return self._move(player, 0)

    def debit(self, player: str, currency: str, amount: int, tx_id: str, round_id: int | None) -> None:
        self._move(player, -amount)

    def credit(self, player: str, currency: str, amount: int, tx_id: str, round_id: int | None) -> None:
        self._move(player, amount)

    def rollback(self, tx_id: str) -> None:
        time.sleep(self.latency)
