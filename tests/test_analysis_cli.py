"""The analysis's command-line verbs: split strategies, refusals, hints from a live shoe."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from twentyone.cli.main import app

RESPLIT = 'id = "resplit"\nname = "Resplit"\n[shoe]\ndecks = 1\n[double]\nafter_split = true\n[split]\nmax_hands = 4\n'


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TWENTYONE_CACHE", str(tmp_path / "cache"))


def test_rtp_names_the_split_strategy_and_the_strategies_differ_with_resplits(tmp_path: Path) -> None:
    path = tmp_path / "resplit.toml"
    path.write_text(RESPLIT)
    figures = {}
    for strategy in ("cdz-", "cdp1", "cdp"):
        result = CliRunner().invoke(app, ["rtp", "--rules", str(path), "--json", "--split-strategy", strategy])
        assert result.exit_code == 0, result.output
        report = json.loads(result.output)
        assert report["main"]["split_strategy"] == strategy
        figures[strategy] = report["main"]["optimal"]
    assert figures["cdz-"] < figures["cdp1"] < figures["cdp"]
    # Asked again, the report comes from the cache, and it is the one computed afresh.
    assert len(list((tmp_path / "cache").glob("rtp-*.json"))) == 3
    again = CliRunner().invoke(app, ["rtp", "--rules", str(path), "--json"])
    fresh = CliRunner().invoke(app, ["rtp", "--rules", str(path), "--json", "--no-cache"])
    assert json.loads(again.output) == json.loads(fresh.output) and json.loads(again.output)["main"]["optimal"] == \
        figures["cdp"]


def test_an_unknown_split_strategy_is_one_line_and_exit_2() -> None:
    result = CliRunner().invoke(app, ["rtp", "classic", "--split-strategy", "cdz"])
    assert result.exit_code == 2 and "--split-strategy" in result.output


def test_hint_plays_for_the_cards_still_unseen() -> None:
    fresh = CliRunner().invoke(app, ["hint", "classic", "TS", "3D", "--dealer", "4H", "--json"])
    # Every ten but five, every nine, eight and seven already dealt: the shoe left is low.
    seen = " ".join(["TC", "JC", "QC", "KC"] * 6 + ["TD", "JD", "QD", "KD"] * 5
                    + [f"{rank}{suit}" for rank in "987" for suit in "SHDC" for _ in range(6)])
    live = CliRunner().invoke(app, ["hint", "classic", "TS", "3D", "--dealer", "4H", "--json", "--seen", seen])
    assert fresh.exit_code == 0 and live.exit_code == 0, live.output
    assert json.loads(fresh.output)[0]["action"] == "stand"
    assert json.loads(live.output)[0]["action"] == "hit"
