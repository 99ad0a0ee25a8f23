"""What an operator's wallet that answers over a network costs the whole server: its players' rounds, and the other
players' requests while a shared table's betting closes.

An operator's wallet is called over the network for balances, debits and credits. A call made while a write
transaction is open holds that transaction open for the call's latency: on PostgreSQL the rows it locked, on SQLite
the write lock of the whole database, which every other player's every write then waits for. This runs a real server
(``twentyone serve``, a fresh database) whose wallet answers every call after ``--latency`` (the test suite's
``LatentWallet``), and, over loopback HTTP:

* ``--players`` guests playing private classic rounds as fast as answers come (bet, deal, stand until settled) for
  ``--duration`` seconds: rounds per second, request p50 and p99; the same against the built-in ledger, and the ratio;
* a power table of ``--seats`` seats whose betting the operator closes while 5 other guests place and clear bets at
  a private table: how long the close took, and the worst of those guests' requests that overlapped it.

    .venv/bin/python benchmarks/operator_latency.py [--latency 0.02] [--players 20] [--duration 15] [--seats 200]
        [--database URL]

``--database postgresql+psycopg://...`` gets a fresh database on that server for each run, dropped afterwards.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from load import free_port, start, stop
from sqlalchemy import create_engine, make_url, text

ROOT = Path(__file__).resolve().parents[1]
OPERATOR = "benchmark-operator-token-for-this-run"
CROWD = {"id": "crowd", "name": "Crowd", "variant": "power", "currency": "EUR", "chips": [100],
         "limits": {"main": [100, 500000]}, "seats": 0, "decision_timeout": 600, "betting_window": 3600}


@contextmanager
def fresh_database(url: str | None, folder: Path) -> Iterator[str]:
    """SQLite in ``folder``, or a new database on the PostgreSQL server of ``url``, dropped afterwards."""
    if url is None:
        yield f"sqlite:///{folder / 'twentyone.db'}"
        return
    name = f"twentyone_latency_{uuid.uuid4().hex[:8]}"
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(url).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@contextmanager
def server(folder: Path, database: str, operator_wallet: bool, latency: float) -> Iterator[str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "TWENTYONE_OPERATOR_TOKEN": OPERATOR, "TWENTYONE_TEST_WALLET_LATENCY": str(latency),
           "PYTHONPATH": os.pathsep.join([str(ROOT / "tests" / "server"), os.environ.get("PYTHONPATH", "")])}
    command = [sys.executable, "-m", "twentyone.cli.main", "serve", "--port", str(port), "--data-dir", str(folder),
               "--database", database]
    if operator_wallet:
        command += ["--wallet", "fake_operator_wallet:LatentWallet"]
    process = start(command, env, folder / "server.log", url)
    try:
        yield url
    finally:
        stop(process)


class Guest:
    def __init__(self, url: str, number: int) -> None:
        self.http = httpx.Client(base_url=url, timeout=120)
        # Each guest from an address of its own, as a proxy in front of a floor passes it on (the guest limit).
        token = self.http.post("/auth/guest", headers={"X-Forwarded-For": f"10.9.{number // 250}.{number % 250}"})
        self.headers = {"Authorization": f"Bearer {token.json()['token']}"}
        self.latencies: list[tuple[float, float]] = []  # (start, seconds)

    def post(self, path: str, body: Any = None) -> Any:
        began = time.perf_counter()
        answer = self.http.post(path, json=body, headers={**self.headers, "Idempotency-Key": uuid.uuid4().hex})
        self.latencies.append((began, time.perf_counter() - began))
        if answer.status_code != 200:
            raise SystemExit(f"{path}: {answer.status_code} {answer.text[:300]}")
        return answer.json()


def private_rounds(url: str, players: int, duration: float) -> tuple[float, float, float]:
    """Rounds per second, request p50 and p99 (seconds) of ``players`` guests at classic for ``duration``."""
    guests = [Guest(url, number) for number in range(players)]
    rounds = [0] * players
    deadline = time.perf_counter() + duration

    def play(index: int) -> None:
        guest = guests[index]
        while time.perf_counter() < deadline:
            guest.post("/tables/classic/bets", {"spot": 1, "chip": 100})
            view = guest.post("/tables/classic/deal")
            while view["status"] == "playing":
                action = "stand" if "stand" in view["legal_actions"] else view["legal_actions"][-1]
                view = guest.post(f"/rounds/{view['id']}/actions", {"action": action})
            rounds[index] += 1

    began = time.perf_counter()
    with ThreadPoolExecutor(players) as pool:
        list(pool.map(play, range(players)))
    elapsed = time.perf_counter() - began
    seconds = sorted(latency for guest in guests for _, latency in guest.latencies)
    return sum(rounds) / elapsed, seconds[len(seconds) // 2], seconds[int(len(seconds) * 0.99)]


def close_of_a_crowd(url: str, seats: int) -> tuple[float, int, float]:
    """A power table of ``seats`` seats closed by the operator while 5 guests place and clear bets at classic: the
    close's seconds, how many of their requests overlapped it, and the worst of those (seconds)."""
    operator = {"Authorization": f"Bearer {OPERATOR}"}
    http = httpx.Client(base_url=url, timeout=120)
    made = http.post("/admin/tables", json=CROWD, headers={**operator, "Idempotency-Key": uuid.uuid4().hex})
    assert made.status_code == 201, made.text
    crowd = [Guest(url, 1000 + number) for number in range(seats)]
    for guest in crowd:  # every slip first: the first to join is not alone, so the window is the table's hour
        guest.post("/tables/crowd/bets", {"spot": 1, "chip": 100})
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda guest: guest.post("/tables/crowd/deal"), crowd))
    others = [Guest(url, 5000 + number) for number in range(5)]
    stopped = threading.Event()

    def keep_betting(guest: Guest) -> None:
        while not stopped.is_set():
            guest.post("/tables/classic/bets", {"spot": 1, "chip": 100})
            guest.post("/tables/classic/clear")

    threads = [threading.Thread(target=keep_betting, args=(guest,)) for guest in others]
    for thread in threads:
        thread.start()
    time.sleep(2)
    began = time.perf_counter()
    closed = http.post("/admin/tables/crowd/close-betting", headers={**operator, "Idempotency-Key": uuid.uuid4().hex})
    ended = time.perf_counter()
    assert closed.status_code == 200 and closed.json()["round_id"], closed.text
    time.sleep(1)
    stopped.set()
    for thread in threads:
        thread.join()
    during = [latency for guest in others for start_, latency in guest.latencies
              if start_ + latency >= began and start_ <= ended]
    return ended - began, len(during), max(during, default=0.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.02, help="seconds every wallet call takes (default 0.02)")
    parser.add_argument("--players", type=int, default=20)
    parser.add_argument("--duration", type=float, default=15.0)
    parser.add_argument("--seats", type=int, default=200, help="seats at the power table whose betting closes")
    parser.add_argument("--database", help="a PostgreSQL URL (default: SQLite)")
    args = parser.parse_args()
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as folder:
        for name, operator_wallet in (("ledger", False), ("operator", True)):
            data_dir = Path(folder) / name
            data_dir.mkdir()
            with fresh_database(args.database, data_dir) as database, \
                    server(data_dir, database, operator_wallet, args.latency) as url:
                rate, p50, p99 = private_rounds(url, args.players, args.duration)
                figures[name] = rate
                print(f"{name:8} {args.players} players: {rate:6.1f} rounds/s, request p50 {p50 * 1000:.0f} ms, "
                      f"p99 {p99 * 1000:.0f} ms")
                if operator_wallet:
                    took, overlapping, worst = close_of_a_crowd(url, args.seats)
                    print(f"operator close of {args.seats} seats: {took * 1000:.0f} ms; the 5 other guests' requests "
                          f"that overlapped it: {overlapping}, the worst {worst * 1000:.0f} ms")
    print(f"operator / ledger rounds per second: {figures['operator'] / figures['ledger']:.2f} "
          f"(wallet latency {args.latency * 1000:.0f} ms)")


if __name__ == "__main__":
    main()
