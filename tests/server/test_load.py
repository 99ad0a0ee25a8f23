"""The load benchmark in short: a few dozen guests for a few seconds, no 5xx, every cent reconciled.

Runs ``benchmarks/load.py`` (Locust, in its own process: Locust patches the standard
library for gevent) against a real ``twentyone serve`` on loopback. It asserts
correctness under concurrency, not speed: speed is the benchmark's to report.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from live import free_port

ROOT = Path(__file__).resolve().parents[2]

# Never import Locust here: it patches the standard library for gevent in whatever process imports it.
pytestmark = pytest.mark.skipif(importlib.util.find_spec("locust") is None,
                                reason="the load benchmark needs Locust (the dev extra)")


def short_load(tmp_path: Path, database_url: str, *options: str) -> tuple[dict[str, Any], str, int]:
    """``benchmarks/load.py``, short: 24 guests (private tables, one multiplayer table, five at a power table), on a
    database of the fixture's; its figures, the tail of its report, and its exit status."""
    figures = tmp_path / "load.json"
    command = [sys.executable, str(ROOT / "benchmarks" / "load.py"), "--players", "24", "--no-bare",
               "--multiplayer-tables", "1", "--power-players", "5", "--warmup", "30", "--drain", "20",
               "--database", database_url, "--no-fresh", "--json", str(figures), *options]
    # Its work directory (the server's log, with --keep) in the test's own.
    run = subprocess.run(command, capture_output=True, text=True, timeout=180, cwd=tmp_path,
                         env={**os.environ, "TMPDIR": str(tmp_path)})
    assert figures.exists(), run.stdout[-3000:] + run.stderr[-3000:]
    return json.loads(figures.read_text()), run.stdout[-3000:] + run.stderr[-3000:], run.returncode


def test_a_few_dozen_guests_playing_at_once_get_no_5xx_and_every_cent_reconciles(tmp_path: Path,
                                                                                 database_url: str) -> None:
    port = free_port()  # on the port asked for: a machine's rules may give the load a range (an operator's trial)
    result, report, returncode = short_load(tmp_path, database_url, "--duration", "5", "--port", str(port))
    game, audit = result["game"], result["audit"]
    assert game["port"] == port, report
    assert game["errors_5xx"] == 0, report
    assert game["failed_requests"] == 0, report
    assert game["server_tracebacks"] == 0, report
    assert audit["ok"], audit["problems"]
    assert game["signed_in"] == 24, report
    assert game["kinds"]["action"]["requests"] > 0 and audit["rounds"].get("settled", 0) > 0, report
    assert returncode == 0, report


def test_a_server_killed_under_load_comes_back_and_every_cent_reconciles(tmp_path: Path, database_url: str) -> None:
    """Every process of the server killed at once (kill -9) while two dozen guests play, then started again on the
    same database: the requests the crash cut off are sent again with their keys, the rounds in play at the kill
    are played on or voided, and every wallet, round and the house reconcile to the cent. On PostgreSQL, two
    processes, whose timers' advisory locks die with them."""
    workers = ("--workers", "2") if database_url.startswith("postgresql") else ()
    result, report, returncode = short_load(tmp_path, database_url, "--duration", "6", "--crash-at", "2", *workers)
    game, audit = result["game"], result["audit"]
    [crash] = game["faults"]
    assert crash["kind"] == "crash" and 0 < crash["down_s"] < 60, report
    assert game["cut_off_by_the_fault"] > 0, report  # it was under load when killed
    assert game["errors_5xx"] == game["failed_requests"] == game["server_tracebacks"] == 0, report
    assert audit["ok"], audit["problems"]
    assert game["rounds_after_the_fault"] > 0, report  # the guests played on
    assert returncode == 0, report


def test_a_worker_killed_under_load_is_replaced_and_every_cent_reconciles(tmp_path: Path, database_url: str) -> None:
    """One of two server processes killed (kill -9) while two dozen guests play: the requests under way in it are
    cut and sent again, the other process serves on and takes over the dead one's timers, the supervisor starts
    another in its place, and every wallet, round and the house reconcile to the cent."""
    if not database_url.startswith("postgresql"):
        pytest.skip("several server processes share PostgreSQL only")
    result, report, returncode = short_load(tmp_path, database_url, "--duration", "6", "--kill-worker-at", "2",
                                            "--workers", "2")
    game, audit = result["game"], result["audit"]
    [killed] = game["faults"]
    assert killed["kind"] == "killed worker" and 0 <= killed["replaced_s"] < 60, report
    assert game["errors_5xx"] == game["failed_requests"] == game["server_tracebacks"] == 0, report
    assert audit["ok"], audit["problems"]
    assert game["rounds_after_the_fault"] > 0, report
    assert returncode == 0, report


def test_a_database_that_ends_every_connection_under_load_is_reconnected_and_every_cent_reconciles(
        tmp_path: Path, database_url: str) -> None:
    """PostgreSQL ends every connection two server processes hold (``pg_terminate_backend``, as a database
    restarting or failing over does) while two dozen guests play: the requests it cuts are answered 503 and sent
    again, the servers reconnect (their pools, their timers' advisory locks, their event listeners) and play on, and
    every wallet, round and the house reconcile to the cent. The servers' logs say what they lost and took again."""
    if not database_url.startswith("postgresql"):
        pytest.skip("SQLite's connections are the server's own: nothing outside ends them")
    result, report, returncode = short_load(tmp_path, database_url, "--duration", "6", "--drop-connections-at",
                                            "2", "--workers", "2", "--keep")
    game, audit = result["game"], result["audit"]
    [drop] = game["faults"]
    # Each process's request connections in the pool, its timers' and its listener's, at the least.
    assert drop["kind"] == "dropped connections" and drop["ended"] >= 4, report
    assert game["errors_5xx"] == game["failed_requests"] == game["server_tracebacks"] == 0, report
    assert audit["ok"], audit["problems"]
    assert game["rounds_after_the_fault"] > 0, report
    log = "".join(path.read_text() for path in tmp_path.glob("twentyone-load-*/server.log"))
    assert "event listener disconnected" in log and "timer ownership lost" in log, log[-3000:]
    assert returncode == 0, report


def test_a_short_power_crowd_settles_every_socket_and_stamps_each_arrival_by_the_kernel(tmp_path: Path) -> None:
    """``benchmarks/power_crowd.py`` with 30 players (SQLite, a fresh database each run): every socket gets its
    settled event, every wallet reconciles, and the fan-out is timed from the kernel's stamp of each arrival, which
    never comes after the listener read it."""
    figures = tmp_path / "crowd.json"
    command = [sys.executable, str(ROOT / "benchmarks" / "power_crowd.py"), "--players", "30", "--timeout", "60",
               "--json", str(figures)]
    for _ in range(5):  # a dealer's blackjack settles the round at the deal (exit 3): nothing to time, deal again
        run = subprocess.run(command, capture_output=True, text=True, timeout=180, cwd=tmp_path)
        if run.returncode != 3:
            break
    report = run.stdout[-3000:] + run.stderr[-3000:]
    assert run.returncode == 0 and figures.exists(), report
    result = json.loads(figures.read_text())
    assert result["sockets_settled"] == result["kernel_stamped"] == 30, report
    assert result["stamped_after_read"] == 0, report
    assert result["audit_ok"] and not any(int(code) >= 500 for code in result["statuses"]), report
    assert 0 <= result["fan_out_p50_s"] <= result["fan_out_p99_s"] < 60, report


@pytest.mark.parametrize("taken", [0, 1], ids=["the game's port", "the bare endpoint's"])
def test_a_port_in_use_is_refused_before_anything_runs(tmp_path: Path, taken: int) -> None:
    """``--port P`` takes P for the game and P + 1 for the bare endpoint: one already listened on is a one-line
    refusal, exit 2. Before, the run started, and the program on that port could answer it as if it were the
    server (a review)."""
    import socket

    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        port = holder.getsockname()[1] - taken
        holder.listen()
        run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "load.py"), "--port", str(port)],
                             capture_output=True, text=True, timeout=60, cwd=tmp_path,
                             env={**os.environ, "TMPDIR": str(tmp_path)})  # where a run makes its work directory
    assert run.returncode == 2, run.stdout + run.stderr
    assert f"port {port + taken} (" in run.stderr and "is in use: give another --port" in run.stderr, run.stderr
    assert "Traceback" not in run.stderr and not list(tmp_path.iterdir()), run.stderr
