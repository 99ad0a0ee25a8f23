"""Start-up: the command line loads only what the command it runs needs.

Importing numpy and numba, FastAPI, SQLAlchemy or matplotlib costs tenths of a second
before a command does anything; these tests hold each command to the modules it uses.
They check which modules are loaded rather than time, so a busy machine cannot make
them flaky.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# pydantic is not listed: typer itself loads it to convert every command's parameters.
HEAVY = ("numpy", "numba", "fastapi", "starlette", "sqlalchemy", "alembic", "uvicorn", "matplotlib",
         "rich", "twentyone.analysis", "twentyone.server", "twentyone.core", "twentyone.ui", "twentyone.scenario")
PROBE = """
import json, sys
from twentyone.cli.main import app
sys.argv = ["twentyone", *json.loads(sys.argv[1])]
try:
    app()
except SystemExit:
    pass
sys.stderr.write("\\nMODULES " + json.dumps(sorted(sys.modules)))
"""


def loaded(*args: str, stdin: str = "") -> set[str]:
    """The heavy modules loaded by ``twentyone ARGS`` (by their top package, or the project's package)."""
    result = subprocess.run([sys.executable, "-c", PROBE, json.dumps(args)], input=stdin, capture_output=True,
                            text=True, timeout=120)
    modules = json.loads(result.stderr.rsplit("MODULES ", 1)[1])
    return {heavy for heavy in HEAVY for module in modules if module == heavy or module.startswith(heavy + ".")}


def test_importing_the_command_line_loads_nothing_heavy() -> None:
    code = f"import sys, twentyone.cli.main; print([m for m in sys.modules if m.startswith({HEAVY!r})])"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "[]", result.stdout


@pytest.mark.parametrize(
    ("args", "stdin", "allowed"),
    [
        (["--help"], "", {"rich"}),  # typer draws its help with rich
        (["variants"], "", {"twentyone.core"}),
        (["variants", "--json"], "", {"twentyone.core"}),
        (["replay", "-"], '{"variant": "classic", "shoe": ["TS", "6H", "9D", "TC", "8C"], "hands": [{"bet": 100}], '
                          '"decisions": ["stand"]}', {"twentyone.core", "twentyone.scenario"}),
        (["play", "classic", "--seed", "1"], "bdq", {"twentyone.core", "twentyone.ui", "rich", "twentyone.server"}),
        (["rng-dump", "--rounds", "2"], "", {"twentyone.core"}),
        (["rtp", "classic", "--json"], "", {"twentyone.core", "twentyone.analysis", "numpy", "numba"}),
    ],
)
def test_each_command_loads_only_what_it_uses(args: list[str], stdin: str, allowed: set[str]) -> None:
    extra = loaded(*args, stdin=stdin) - allowed
    assert not extra, f"twentyone {' '.join(args)} loads {sorted(extra)}"


def test_terminal_play_reads_its_table_without_the_database() -> None:
    """`play` takes the table's currency from the server's table file, not from its web stack."""
    modules = loaded("play", "single-deck", "--seed", "1", stdin="q")
    assert modules.isdisjoint({"sqlalchemy", "fastapi", "numpy", "numba", "matplotlib"})


@pytest.mark.parametrize(
    "args",
    [
        ["report", "--since", "2026-12-01T00:00:00Z"],
        ["rounds", "--status", "open", "--size", "5"],
        ["create-table", "quick", '{"name": "Quick", "variant": "classic", "currency": "USD", "chips": [100], '
                                  '"limits": {"main": [100, 1000]}}'],
        ["player", "nobody"],
    ],
)
def test_operator_commands_check_their_arguments_without_the_web_stack(tmp_path, args: list[str]) -> None:
    """`twentyone admin` checks its arguments with the endpoints' own models (server/shapes.py), not by importing the
    application, which brought FastAPI and Starlette into every command (0.4 s of its 1.8)."""
    from twentyone.server.db import migrate

    migrate(f"sqlite:///{tmp_path / 'twentyone.db'}")
    modules = loaded("admin", *args, "--data-dir", str(tmp_path))
    assert "twentyone.server" in modules and "sqlalchemy" in modules  # the command reached the database
    assert modules.isdisjoint({"fastapi", "starlette", "uvicorn"}), sorted(modules)
