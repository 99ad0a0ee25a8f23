"""Random input to `twentyone replay -`: it answers with a result (exit 0) or one line (exit 2), never a traceback.

The command runs in process (typer's CliRunner), so any exception that escapes the
command shows up as ``result.exception`` rather than a subprocess's stderr.
"""

from __future__ import annotations

import json
import os
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from twentyone.cli.main import app
from twentyone.core.money import INT64_MAX
from twentyone.variants import VARIANTS

SETTINGS = settings(max_examples=int(os.environ.get("TWENTYONE_EXAMPLES", "200")), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
WORDS = ["hit", "stand", "double", "triple", "quadruple", "split", "insurance", "no-insurance", "even-money",
         "no-even-money", "cash-out", "surrender", "no-surrender", "fold", ""]
CARDS = [rank + suit for rank in "A23456789TJQK" for suit in "SHDC"] + ["10h", "as", "XX", "", "A"]

# Text includes unpaired surrogates: JSON can spell them ("\\ud800") and they break naive printing and paths.
texts = st.text(st.characters(exclude_categories=()) | st.characters(categories=["Cs"]), max_size=8)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | texts,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(texts, children, max_size=4),
    max_leaves=20,
)
amounts = st.integers(-5, 5000) | st.integers(10**14, 10**24) | json_values
hands = st.lists(st.fixed_dictionaries(
    {"bet": amounts},
    optional={"side_bets": st.dictionaries(st.sampled_from(["perfect_pairs", "21+3", "any_pair", "hot_3",
                                                           "bust_it", "x"]), amounts, max_size=3) | json_values},
), max_size=6) | json_values
decisions = st.lists(st.sampled_from(WORDS), max_size=12) | json_values
scenarios = st.fixed_dictionaries(
    {"variant": st.sampled_from(VARIANTS) | json_values},
    optional={"shoe": st.lists(st.sampled_from(CARDS), max_size=30) | json_values,
              "hands": hands, "decisions": decisions,
              "rules": st.sampled_from([5, None, [], "/nonexistent/rules.toml", "\ud800", "a\x00b"]),
              "players": st.lists(st.fixed_dictionaries({"name": texts | json_values,
                                                         "hands": hands, "decisions": decisions}), max_size=3)
              | json_values},
)

runner = CliRunner()


def invoke(verb: str, data: bytes) -> None:
    result = runner.invoke(app, [verb, "-"], input=data)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    assert result.exit_code in ((0, 2) if verb == "replay" else (0, 1, 2)), (result.exit_code, result.output)
    if result.exit_code != 0:  # 2: bad input; 1 (verify only): the record does not verify
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and (lines[0].startswith("error: ") or result.exit_code == 1), result.stderr
        assert result.stdout == ""
        return
    if verb != "replay":
        return
    answer = json.loads(result.stdout)
    assert answer["staked"] - answer["returned"] == -answer["net"]
    assert all(0 <= amount <= INT64_MAX for amount in (answer["staked"], answer["returned"]))


@SETTINGS
@given(st.binary(max_size=200))
def test_random_bytes(data: bytes) -> None:
    invoke("replay", data)


@SETTINGS
@given(json_values)
def test_random_json(value: Any) -> None:
    invoke("replay", json.dumps(value).encode())


@SETTINGS
@given(scenarios)
def test_random_scenarios(scenario: dict[str, Any]) -> None:
    invoke("replay", json.dumps(scenario).encode())


records = st.fixed_dictionaries({}, optional={key: json_values | st.floats() for key in
                                              ("salt", "cards", "commitment", "first_card", "drawn", "round_id")})


@SETTINGS
@given(records | json_values)
def test_random_verify_records(record: Any) -> None:
    invoke("verify", json.dumps(record).encode())
