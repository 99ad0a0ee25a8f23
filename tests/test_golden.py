"""Golden playthroughs: a stacked shoe in, the exact JSON out, for every game.

Regenerate with scripts/update_golden.py only after a deliberate change, and
read every diff: each expected file was checked by hand when it was written.
"""

import json
from pathlib import Path

import pytest

from twentyone.scenario import run_scenario

GOLDEN = sorted((Path(__file__).parent / "golden").glob("*.json"))


def test_every_game_has_a_golden_playthrough() -> None:
    variants = {json.loads(path.read_text())["scenario"]["variant"] for path in GOLDEN}
    assert variants == {"first-person", "classic", "single-deck", "multiplayer", "power"}


@pytest.mark.parametrize("path", GOLDEN, ids=[path.stem for path in GOLDEN])
def test_golden_playthrough(path: Path) -> None:
    record = json.loads(path.read_text())
    assert run_scenario(record["scenario"]) == record["expected"]
