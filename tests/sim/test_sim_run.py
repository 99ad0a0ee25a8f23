"""Reproducibility (any worker count, Dask) and the ``twentyone simulate`` command."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from twentyone.cli.main import app
from twentyone.sim.run import chunk_sizes, simulate
from twentyone.sim.tables import SimOptions
from twentyone.variants import builtin_rules

runner = CliRunner()


def _same(a, b) -> None:  # type: ignore[no-untyped-def]
    assert a.main == b.main
    for part in ("stats", "histogram", "side_sums", "side_counts", "depth_sums"):
        np.testing.assert_array_equal(getattr(a.total, part), getattr(b.total, part))


def test_same_seed_same_result_for_any_number_of_workers() -> None:
    rules = builtin_rules("first-person")
    options = SimOptions(hands=3, side_bets=("21+3",))
    one = simulate(rules, 150_000, options=options, seed=9, workers=1, exact=False)
    two = simulate(rules, 150_000, options=options, seed=9, workers=2, exact=False)
    _same(one, two)
    other = simulate(rules, 150_000, options=options, seed=10, workers=1, exact=False)
    assert other.main != one.main


def test_chunks_depend_on_rounds_only() -> None:
    assert chunk_sizes(1) == [1]
    assert sum(chunk_sizes(123_457)) == 123_457
    assert max(chunk_sizes(10**10)) <= 2_000_000


def test_dask_cluster_plays_the_same_chunks() -> None:
    distributed = pytest.importorskip("distributed")
    rules = builtin_rules("power")
    options = SimOptions(side_bets=("bust_it",))
    local = simulate(rules, 60_000, options=options, seed=4, workers=1, exact=False)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, dashboard_address=None) as cluster:
        remote = simulate(rules, 60_000, options=options, seed=4, scheduler=cluster.scheduler_address, exact=False)
    _same(local, remote)
    assert remote.workers == 2  # the cluster's threads, not this machine's cores (before: os.cpu_count())


def test_simulate_json_has_the_documented_fields(tmp_path) -> None:  # type: ignore[no-untyped-def]
    plot = tmp_path / "rtp.png"
    result = runner.invoke(app, ["simulate", "multiplayer", "--rounds", "50000", "--side-bets", "all", "--hands", "2",
                                 "--workers", "1", "--seed", "3", "--json", "--plot", str(plot)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["rounds"] == 50_000 and data["rounds_per_second"] > 0
    assert set(data["side_bets"]) == {"21+3", "perfect_pairs"}
    assert 90 < data["main"]["rtp"] < 110 and 0 < data["main"]["se"] < 2
    assert 0 < data["side_bets"]["perfect_pairs"]["se"] < 5
    assert abs(data["exact"]["main"] - 99.574) < 0.01
    assert sum(data["net_distribution"].values()) == pytest.approx(1.0)
    assert data["hands_played"] >= 100_000 and sum(data["outcomes"].values()) == pytest.approx(1.0)
    assert 0.04 < data["outcomes"]["blackjack"] < 0.05
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_simulate_prints_a_report() -> None:
    result = runner.invoke(app, ["simulate", "power", "--rounds", "30000", "--side-bets", "hot_3", "--workers", "1"])
    assert result.exit_code == 0, result.output
    assert "Whole shoes" in result.stdout and "hot_3" in result.stdout and "Largest win" in result.stdout


@pytest.mark.parametrize(("args", "message"), [
    (["simulate"], "name a game"),
    (["simulate", "nope"], "unknown game"),
    (["simulate", "classic", "--rounds", "0"], "--rounds"),
    (["simulate", "classic", "--side-bets", "perfect_pairs"], "no side bet 'perfect_pairs'"),
    (["simulate", "classic", "--hands", "11"], "--hands"),
    (["simulate", "classic", "--cash-out"], "no cash out"),
    (["simulate", "classic", "--strategy", "missing.json"], "cannot read"),
    (["simulate", "classic", "--workers", "0"], "--workers"),
    (["simulate", "power", "--rules", "x.toml"], "name a game or give --rules FILE, not both"),
    (["simulate", "classic", "--rounds", "100", "--plot", "chart.txt"], "give a file name ending in .png"),
    (["simulate", "classic", "--rounds", "100", "--plot", "/no/such/folder/chart.png"], "no folder"),
])
def test_bad_input_is_one_line_and_exit_2(args: list[str], message: str) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], result.stderr


def test_a_chart_of_another_game_is_refused_in_one_line(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Power's chart has no column for a 9 up: simulating classic with it ended in a KeyError (an analyst's trial)."""
    path = tmp_path / "power.json"
    path.write_text(runner.invoke(app, ["strategy", "power", "--json"]).stdout)
    result = runner.invoke(app, ["simulate", "classic", "--rounds", "1000", "--strategy", str(path)])
    assert result.exit_code == 2 and result.stderr.strip() == (
        "error: strategy file: the chart has no column for a dealer 9, which classic deals (a chart of another "
        "game?)."), result.output


def test_payouts_past_64_bits_are_refused_not_wrapped_round(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A 10^15:1 blackjack simulated a negative return, its sums wrapped round (a researcher's trial); replay refuses
    such a round. The simulator refuses the rules, in one line."""
    from importlib import resources

    source = resources.files("twentyone.variants_data").joinpath("classic.toml").read_text("utf-8")
    path = tmp_path / "big.toml"
    path.write_text(source.replace('blackjack_pays = "3:2"', 'blackjack_pays = "1000000000000000:1"'))
    result = runner.invoke(app, ["simulate", "--rules", str(path), "--rounds", "1000", "--workers", "1"])
    assert result.exit_code == 2 and "past 9223372036854775807, the most the kernel's 64-bit amounts hold" in \
        result.stderr, result.output


def test_a_chart_file_is_simulated_and_valued(tmp_path) -> None:  # type: ignore[no-untyped-def]
    chart = runner.invoke(app, ["strategy", "single-deck", "--json"])
    path = tmp_path / "chart.json"
    data = json.loads(chart.stdout)
    data["hard"]["16"]["10"] = "S"  # a player's own deviation
    path.write_text(json.dumps(data))
    result = runner.invoke(app, ["simulate", "single-deck", "--rounds", "400000", "--strategy", str(path),
                                 "--json", "--workers", "1"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert abs(out["main"]["rtp"] - out["exact"]["main"]) < 4 * out["main"]["se"]
