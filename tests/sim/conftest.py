"""The simulator's slow tests (10^7 rounds a game) run only when asked: ``pytest -m slow tests/sim``."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "slow" in (config.getoption("-m") or ""):
        return
    skip = pytest.mark.skip(reason="10^7-round check: run with -m slow")
    for item in items:
        if "slow" in item.keywords and "tests/sim/" in str(item.path).replace("\\", "/"):
            item.add_marker(skip)
