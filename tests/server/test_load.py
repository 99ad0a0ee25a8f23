"""The load benchmark in short: a few dozen guests for a few seconds, no 5xx, every cent reconciled.

Runs ``benchmarks/load.py`` (Locust, in its own process: Locust patches the standard
library for gevent) against a real ``twentyone serve`` on loopback. It asserts
correctness under concurrency, not speed: speed is the benchmark's to report.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Never import Locust here: it patches the standard library for gevent in whatever process imports it.
pytestmark = pytest.mark.skipif(importlib.util.find_spec("locust") is None,
                                reason="the load benchmark needs Locust (the dev extra)")


def test_a_few_dozen_guests_playing_at_once_get_no_5xx_and_every_cent_reconciles(tmp_path: Path,
                                                                                 database_url: str) -> None:
    figures = tmp_path / "load.json"
    command = [sys.executable, str(ROOT / "benchmarks" / "load.py"), "--players", "24", "--duration", "5",
               "--no-bare", "--multiplayer-tables", "1", "--power-players", "5", "--warmup", "30", "--drain", "20",
               "--database", database_url, "--no-fresh", "--json", str(figures)]
    run = subprocess.run(command, capture_output=True, text=True, timeout=180, cwd=tmp_path)
    assert figures.exists(), run.stdout[-3000:] + run.stderr[-3000:]
    result = json.loads(figures.read_text())
    game, audit = result["game"], result["audit"]
    report = run.stdout[-3000:]
    assert game["errors_5xx"] == 0, report
    assert game["failed_requests"] == 0, report
    assert game["server_tracebacks"] == 0, report + run.stderr[-3000:]
    assert audit["ok"], audit["problems"]
    assert game["signed_in"] == 24, report
    assert game["kinds"]["action"]["requests"] > 0 and audit["rounds"].get("settled", 0) > 0, report
    assert run.returncode == 0, report


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
