"""An operator wallet for the `serve --wallet` test: it keeps balances in memory."""

from __future__ import annotations


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
