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
