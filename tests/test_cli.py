"""The command line as a user runs it: exit codes, one-line errors, JSON output."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

CLI = [sys.executable, "-m", "twentyone.cli.main"]
SCENARIO = {"variant": "first-person", "shoe": ["8S", "5H", "6D", "TC", "KS", "9C"],
            "hands": [{"bet": 1000, "side_bets": {"perfect_pairs": 100}}], "decisions": ["double"]}


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], input=stdin, capture_output=True, text=True, timeout=60)


def assert_one_line_error(result: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert result.returncode == 2, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def test_variants_lists_the_five_games_a_line_each() -> None:
    result = run("variants")
    assert result.returncode == 0
    for variant in ("first-person", "classic", "single-deck", "multiplayer", "power"):
        assert variant in result.stdout


def test_variants_json() -> None:
    rows = json.loads(run("variants", "--json").stdout)
    assert [row["id"] for row in rows] == ["first-person", "classic", "single-deck", "multiplayer", "power"]
    power = rows[-1]
    assert power["cards"] == 352 and power["double_multipliers"] == [2, 3, 4] and power["common_draw"]


def test_replay_from_a_file_and_from_standard_input(tmp_path: Path) -> None:
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps(SCENARIO))
    from_file = json.loads(run("replay", str(path)).stdout)
    from_stdin = json.loads(run("replay", "-", stdin=json.dumps(SCENARIO)).stdout)
    assert from_file == from_stdin
    assert from_file["hands"][0]["outcome"] == "bust" and from_file["hands"][0]["stake"] == 2000
    assert from_file["staked"] == 2100 and from_file["returned"] == 0 and from_file["net"] == -2100
    assert from_file["side_bets"] == [{"seat": 1, "player": "player", "name": "perfect_pairs", "stake": 100,
                                       "result": "lose", "returned": 0}]


@pytest.mark.parametrize(
    ("change", "fragments"),
    [
        ({"decisions": ["split"]}, ["decisions[0] = 'split' is illegal", "legal actions: hit, stand, double"]),
        ({"decisions": ["fold"]}, ["decisions[0] = 'fold'", "Unknown action 'fold'"]),
        ({"decisions": []}, ["Missing decisions[0]", "legal actions: hit, stand, double"]),
        ({"decisions": ["stand", "hit"]}, ["Decisions left over", "decisions[1] = 'hit'"]),
        ({"shoe": ["8S", "5H", "6D"]}, ["shoe:", "too short"]),
        ({"shoe": ["8S", "5H", "6D", "TC"], "decisions": ["hit"]}, ["shoe:", "decisions[0] = 'hit'"]),
        ({"shoe": ["AS"] * 9}, ["Card AS appears 9 times"]),
        ({"shoe": ["XX"]}, ["Cannot parse card 'XX'"]),
        ({"shoe": "8S 5H"}, ["'shoe' must be a list"]),
        ({"variant": "baccarat"}, ["unknown game 'baccarat'"]),
        ({"hands": []}, ["'hands' must be a non-empty list"]),
        ({"hands": [{"bet": -5}]}, ["main bet must be"]),
        ({"hands": [{"bet": 100, "side_bets": {"hot_3": 5}}]}, ["no side bet 'hot_3'"]),
        ({"hands": [{"bet": 100}] * 6}, ["allows 1 to 5"]),
    ],
)
def test_replay_errors_exit_2_with_one_line(change: dict[str, object], fragments: list[str]) -> None:
    scenario = {**SCENARIO, **change}
    assert_one_line_error(run("replay", "-", stdin=json.dumps(scenario)), *fragments)


def test_replay_power_rejects_a_nine() -> None:
    scenario = {"variant": "power", "shoe": ["9S", "5H", "6D", "KC"], "hands": [{"bet": 100}], "decisions": []}
    assert_one_line_error(run("replay", "-", stdin=json.dumps(scenario)), "every 9 is removed")


def test_replay_names_the_player_in_a_multiplayer_scenario() -> None:
    scenario = {"variant": "multiplayer", "shoe": ["TS", "9S", "7H", "6S", "8S", "8D", "2C"],
                "players": [{"name": "ann", "hands": [{"bet": 100}], "decisions": ["stand"]},
                            {"name": "bob", "hands": [{"bet": 100}], "decisions": ["split"]}]}
    assert_one_line_error(run("replay", "-", stdin=json.dumps(scenario)), "player 'bob' decisions[0] = 'split'")


def test_replay_bad_json_and_missing_file() -> None:
    assert_one_line_error(run("replay", "-", stdin="{not json"), "not valid JSON")
    assert_one_line_error(run("replay", "-", stdin="[1, 2]"), "must be a JSON object")
    assert_one_line_error(run("replay", "/nonexistent/scenario.json"), "cannot read")


def test_replay_with_a_rules_file(tmp_path: Path) -> None:
    rules = tmp_path / "h17.toml"
    rules.write_text('id = "h17"\nname = "H17"\n[shoe]\ndecks = 6\n[dealer]\nhits_soft_17 = true\n')
    scenario = {"rules": str(rules), "shoe": ["TS", "6H", "8D", "AC", "3C"], "hands": [{"bet": 100}],
                "decisions": ["stand"]}
    result = json.loads(run("replay", "-", stdin=json.dumps(scenario)).stdout)
    assert result["dealer"]["cards"] == ["6H", "AC", "3C"] and result["variant"] == "h17"
    rules.write_text('id = "h17"\nname = "H17"\n[shoe]\ndecks = 0\n')
    assert_one_line_error(run("replay", "-", stdin=json.dumps(scenario)), "shoe.decks")


def test_play_errors_exit_2() -> None:
    assert_one_line_error(run("play", "craps"), "unknown game 'craps'")
    assert_one_line_error(run("play", "classic", "--balance", "0"), "--balance must be at least 1")
    assert_one_line_error(run("play", "--rules", "/nonexistent.toml"), "cannot read")
    usage = run("play", "--balance", "lots")
    assert usage.returncode == 2 and "Traceback" not in usage.stderr


def test_play_from_a_pipe_bets_deals_and_quits() -> None:
    result = run("play", "classic", "--seed", "7", stdin="bd" + "s" * 6 + "q")
    assert result.returncode == 0, result.stderr
    assert "Classic Blackjack" in result.stdout and "Goodbye. Final balance" in result.stdout


def test_unknown_verb_is_a_usage_error() -> None:
    result = run("shuffle")
    assert result.returncode == 2 and "Traceback" not in result.stderr
