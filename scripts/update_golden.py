"""Rewrite the expected output of every golden playthrough in tests/golden/.

Each file holds {"scenario": ..., "expected": ...}. Run this only after a
deliberate change to the engine's behaviour, then read the diff of every file
before committing it: the golden files are the regression record.

    .venv/bin/python scripts/update_golden.py
"""

from __future__ import annotations

import json
from pathlib import Path

from twentyone.scenario import run_scenario

GOLDEN = Path(__file__).resolve().parents[1] / "tests" / "golden"


def main() -> None:
    for path in sorted(GOLDEN.glob("*.json")):
        record = json.loads(path.read_text())
        scenario = record.get("scenario", record)
        record = {"scenario": scenario, "expected": run_scenario(scenario)}
        path.write_text(json.dumps(record, indent=2) + "\n")
        print(f"wrote {path.name}")


if __name__ == "__main__":
    main()
