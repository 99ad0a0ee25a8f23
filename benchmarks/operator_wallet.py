"""What an operator's wallet costs the game per private round, beside the built-in ledger: the same rounds, in process.

With an operator's wallet every stake is a call over the network, which this benchmark leaves out: its wallet
answers at once from memory. What remains is the game's own work around the call: the debit's write-ahead journal
entry (``journal.py``: a write and an ``fsync`` before the call), the debit's row in the outbox, and the credits
written to the outbox and delivered after the commit. Prints rounds per CPU-second of this process and per
wall-clock second for both wallets, and their ratio; the journal's ``fsync`` shows in the wall clock, not the CPU.

    .venv/bin/python benchmarks/operator_wallet.py [--rounds 400]

Each wallet gets a fresh SQLite database in a temporary folder (the operator's wallet changes what the game writes,
not how: PostgreSQL adds the same rows).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "server"))
from fake_operator_wallet import MemoryWallet

from twentyone.server.app import create_app
from twentyone.server.config import Settings

OPERATOR = "benchmark-operator-token-for-this-run"


def play(url: str, data_dir: Path, rounds: int, wallet: Any) -> tuple[float, float]:
    """Rounds per CPU-second and per wall-clock second: one guest, classic, bet, deal, stand until settled."""
    app = create_app(Settings(url, data_dir, OPERATOR), operator_wallet=wallet, timers=False)
    with TestClient(app) as http:
        guest = http.post("/auth/guest").json()
        headers = {"Authorization": f"Bearer {guest['token']}"}
        key = iter(range(10**9))

        def post(path: str, body: Any = None) -> Any:
            answer = http.post(path, json=body, headers={**headers, "Idempotency-Key": f"k{next(key)}"})
            assert answer.status_code == 200, answer.json()
            return answer.json()

        cpu, wall = time.process_time(), time.perf_counter()
        for _ in range(rounds):
            post("/tables/classic/bets", {"spot": 1, "chip": 100})
            view = post("/tables/classic/deal")
            while view["status"] == "playing":
                action = "stand" if "stand" in view["legal_actions"] else view["legal_actions"][-1]
                view = post(f"/rounds/{view['id']}/actions", {"action": action})
        return rounds / (time.process_time() - cpu), rounds / (time.perf_counter() - wall)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=400)
    args = parser.parse_args()
    figures = {}
    with tempfile.TemporaryDirectory() as folder:
        for name, wallet in (("ledger", None), ("operator", MemoryWallet())):
            data_dir = Path(folder) / name
            figures[name] = play(f"sqlite:///{data_dir / 'twentyone.db'}", data_dir, args.rounds, wallet)
            print(f"{name:8} {figures[name][0]:7.1f} rounds per CPU-second  {figures[name][1]:7.1f} rounds per second")
    cpu = figures["operator"][0] / figures["ledger"][0]
    wall = figures["operator"][1] / figures["ledger"][1]
    print(f"operator / ledger: {cpu:.2f} per CPU-second, {wall:.2f} per second")


if __name__ == "__main__":
    main()
