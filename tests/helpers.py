"""Helpers shared by the engine tests: play a stacked shoe the way scenario replay does."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from twentyone.core.round import HandBet, Round
from twentyone.core.shoe import Shoe
from twentyone.scenario import run_scenario
from twentyone.variants import builtin_rules


def play(variant: str, shoe: Sequence[str], bets: Sequence[int | Mapping[str, Any]],
         decisions: Sequence[str] = ()) -> dict[str, Any]:
    """Scenario replay for one player; ``bets`` are main bets or full hand objects."""
    hands = [{"bet": bet} if isinstance(bet, int) else dict(bet) for bet in bets]
    return run_scenario({"variant": variant, "shoe": list(shoe), "hands": hands,
                         "decisions": list(decisions)})


def start(variant: str, shoe: Sequence[str], *bets: int, side_bets: Mapping[str, int] | None = None) -> Round:
    """A dealt round for one player, stopped at its first decision."""
    rules = builtin_rules(variant)
    game = Round(rules, Shoe.stacked(shoe, rules.shoe.composition))
    game.place_bets("you", [HandBet(bet, dict(side_bets or {})) for bet in bets])
    game.deal()
    return game


def hand(result: Mapping[str, Any], index: int = 0) -> Mapping[str, Any]:
    return result["hands"][index]


def side(result: Mapping[str, Any], name: str, seat: int = 1) -> Mapping[str, Any]:
    for entry in result["side_bets"]:
        if entry["name"] == name and entry["seat"] == seat:
            return entry
    raise AssertionError(f"no side bet {name} at seat {seat} in {result['side_bets']}")
