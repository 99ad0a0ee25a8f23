"""Scenario replay: a stacked shoe and a list of decisions, played through the real engine.

This is the contract certification labs use (see DESIGN.md and README.md): the
input names a game, a shoe (top card first) and the bets; decisions are consumed
in the order the game asks for them. :func:`run_scenario` returns the JSON-ready
result; every problem raises :class:`ScenarioError` with a one-line message.

>>> result = run_scenario({"variant": "classic", "shoe": ["8S", "5H", "6D", "TC", "KS", "9C"],
...                        "hands": [{"bet": 1000}], "decisions": ["double"]})
>>> result["hands"][0]["outcome"], result["hands"][0]["stake"], result["net"]
('bust', 2000, -2000)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from twentyone.core.cards import CardError
from twentyone.core.money import INT64_MAX, MAX_AMOUNT
from twentyone.core.round import BetError, HandBet, IllegalActionError, Round
from twentyone.core.rules import Rules, RulesError
from twentyone.core.shoe import Shoe, ShoeError
from twentyone.core.view import hand_json, operation_json
from twentyone.variants import resolve_rules


class ScenarioError(ValueError):
    """The scenario cannot be played; the message is one line for the user."""


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ScenarioError(message)


def _short(value: Any, limit: int = 40) -> str:
    """``repr`` of a user's value, cut short so that an error message stays one readable line."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


SCENARIO_KEYS = ("variant", "rules", "shoe", "hands", "decisions", "players")
HAND_KEYS = ("bet", "side_bets")
PLAYER_KEYS = ("name", "hands", "decisions")


def _known_keys(given: Mapping[str, Any], known: tuple[str, ...], where: str) -> None:
    """Refuse a key the format does not have: a typo ("sidebets") was ignored, and its bets were never placed (a
    trial of an analyst).

    >>> _known_keys({"bet": 100, "sidebets": {}}, HAND_KEYS, "hands[0]")
    Traceback (most recent call last):
    ...
    twentyone.scenario.ScenarioError: hands[0]: unknown key 'sidebets' (the keys are bet, side_bets).
    """
    for key in given:
        _require(key in known, f"{where}: unknown key {_short(key)} (the keys are {', '.join(known)}).")


def _amount(value: Any, where: str, least: int) -> int:
    """A stake in minor units: a whole number from ``least`` to :data:`MAX_AMOUNT`."""
    _require(isinstance(value, int) and not isinstance(value, bool),
             f"{where} must be a whole number of minor units, got {_short(value)}.")
    _require(value >= least, f"{where} must be at least {least}{' (side bets need a main bet)' if least else ''}, "
                             f"got {value}.")
    _require(value <= MAX_AMOUNT, f"{where} is {_short(value)} but amounts are capped at {MAX_AMOUNT} "
                                  f"(10^15) minor units, so every total fits the ledger's 64-bit integers.")
    return int(value)


def _hand_bets(hands: Any, where: str) -> list[HandBet]:
    _require(isinstance(hands, list) and bool(hands), f"{where}: 'hands' must be a non-empty list.")
    result = []
    for index, hand in enumerate(hands):
        _require(isinstance(hand, Mapping) and "bet" in hand,
                 f"{where}: hands[{index}] must be an object with a 'bet'.")
        _known_keys(hand, HAND_KEYS, f"{where}: hands[{index}]")
        sides = hand.get("side_bets", {})
        _require(isinstance(sides, Mapping), f"{where}: hands[{index}].side_bets must be an object.")
        bet = _amount(hand["bet"], f"{where}: hands[{index}]: the main bet", 1)
        stakes = {name: _amount(amount, f"{where}: hands[{index}]: side bet {_short(name)}", 0)
                  for name, amount in sides.items()}
        result.append(HandBet(bet, stakes))
    return result


def _strings(values: Any, message: str) -> list[str]:
    """``values`` if it is a list of strings; otherwise the error ``message``."""
    _require(isinstance(values, list) and all(isinstance(v, str) for v in values), message)
    return list(values)


def _decisions(values: Any, where: str) -> list[str]:
    return _strings(values, f"{where}: 'decisions' must be a list of words like \"hit\".")


def _players(scenario: Mapping[str, Any]) -> list[tuple[str, list[HandBet], list[str]]]:
    if "players" in scenario:
        players = scenario["players"]
        _require(isinstance(players, list) and bool(players), "'players' must be a non-empty list.")
        both = [key for key in ("hands", "decisions") if key in scenario]
        _require(not both, f"give each player's {' and '.join(both)} under 'players', or a single player's at the "
                           f"top, not both.")
        result = []
        for index, player in enumerate(players):
            _require(isinstance(player, Mapping), f"players[{index}] must be an object.")
            _known_keys(player, PLAYER_KEYS, f"players[{index}]")
            name = player.get("name", f"p{index + 1}")
            _require(isinstance(name, str) and bool(name), f"players[{index}].name must be a string.")
            where = f"players[{index}]"
            result.append((name, _hand_bets(player.get("hands"), where),
                           _decisions(player.get("decisions", []), where)))
        return result
    return [("player", _hand_bets(scenario.get("hands"), "scenario"),
             _decisions(scenario.get("decisions", []), "scenario"))]


def scenario_rules(scenario: Mapping[str, Any]) -> Rules:
    """The rules a scenario names: ``"variant"`` or a ``"rules"`` file path."""
    _require(isinstance(scenario, Mapping), "The scenario must be a JSON object.")
    _known_keys(scenario, SCENARIO_KEYS, "scenario")
    variant = scenario.get("variant")
    rules_file = scenario.get("rules")
    _require(variant is not None or rules_file is not None, "The scenario needs a 'variant'.")
    _require(variant is None or isinstance(variant, str),
             f"'variant' must be a game's name like \"classic\", got {_short(variant)}.")
    _require(rules_file is None or isinstance(rules_file, str),
             f"'rules' must be the path of a rules file, got {_short(rules_file)}.")
    _require(variant is None or rules_file is None,
             "give the scenario a 'variant' or a 'rules' file, not both (the rules file was played, without a word).")
    try:
        return resolve_rules(variant, rules_file)
    except RulesError as error:
        raise ScenarioError(str(error)) from None


def play_scenario(scenario: Mapping[str, Any], rules: Rules | None = None) -> Round:
    """Play a scenario through the engine and return the settled :class:`Round`."""
    rules = rules or scenario_rules(scenario)
    shoe_cards = _strings(scenario.get("shoe"), "'shoe' must be a list of cards like \"AS\".")
    try:
        shoe = Shoe.stacked(shoe_cards, rules.shoe.composition)
    except (ShoeError, CardError) as error:
        raise ScenarioError(f"shoe: {error}") from None
    players = _players(scenario)
    game = Round(rules, shoe)
    queues: dict[str, list[str]] = {}
    try:
        for name, bets, decisions in players:
            game.place_bets(name, bets)
            queues[name] = decisions
        game.deal()
        used = dict.fromkeys(queues, 0)
        while (decision := game.decision()) is not None:
            queue, index = queues[decision.player], used[decision.player]
            label = _label(decision.player, index, len(players) > 1)
            if index >= len(queue):
                raise ScenarioError(
                    f"Missing {label}: the game waits at seat {decision.seat} hand {decision.hand} "
                    f"({decision.kind}); legal actions: {', '.join(game.legal_actions())}."
                )
            word = queue[index]
            used[decision.player] = index + 1
            try:
                game.act(word)
            except IllegalActionError as error:
                raise ScenarioError(f"{label} = {word!r} is illegal. {error}") from None
            except ShoeError as error:
                raise ScenarioError(f"shoe: {error} (while playing {label} = {word!r})") from None
        for name, queue in queues.items():
            if used[name] < len(queue):
                label = _label(name, used[name], len(players) > 1)
                raise ScenarioError(
                    f"Decisions left over: the round is settled but {len(queue) - used[name]} remain, "
                    f"from {label} = {queue[used[name]]!r}."
                )
    except BetError as error:
        raise ScenarioError(str(error)) from None
    except ShoeError as error:
        raise ScenarioError(f"shoe: {error}") from None
    return game


def _label(player: str, index: int, several: bool) -> str:
    return f"player {player!r} decisions[{index}]" if several else f"decisions[{index}]"


_REPLAY_HAND = ("seat", "player", "hand", "cards", "total", "soft", "stake", "outcome", "returned")


def round_result(game: Round) -> dict[str, Any]:
    """The replay output: dealer, hands, side bets, insurance and money totals.

    Built from the round's view and the one JSON form of hands and settlements in
    :mod:`twentyone.core.view`, keeping the fields the replay contract names.
    """
    seen = game.view()
    hands = [{key: hand_json(hand)[key] for key in _REPLAY_HAND} for hand in seen.hands]
    settled = [operation_json(op) for op in seen.settlements]
    side_bets = [{"seat": s["seat"], "player": s["player"], "name": s["item"], "stake": s["stake"],
                  "result": s["result"], "returned": s["returned"]}
                 for s in settled if s["item"] not in ("hand", "insurance")]
    insurance = [{"seat": s["seat"], "player": s["player"], "stake": s["stake"], "result": s["result"],
                  "returned": s["returned"]} for s in settled if s["item"] == "insurance"]
    return {
        "variant": game.rules.id,
        # The up card named: multiplayer deals the hole card first, and the cards alone did not say which was up
        # (an analyst's trial). None where the round ended before the dealer had one.
        "dealer": {"cards": [str(card) for card in seen.dealer_cards], "total": seen.dealer_value.total,
                   "blackjack": seen.dealer_blackjack, "up_card": str(game.dealer_up) if seen.dealer_cards else None},
        "hands": hands,
        "side_bets": side_bets,
        "insurance": insurance,
        "actions": [str(action) for action in game.actions],
        "staked": seen.staked,
        "returned": seen.returned,
        "net": seen.returned - seen.staked,
    }


def run_scenario(scenario: Mapping[str, Any]) -> dict[str, Any]:
    """Play a scenario and return its result as plain JSON-ready data.

    Stakes are capped at :data:`~twentyone.core.money.MAX_AMOUNT` minor units, and a
    round whose totals would not fit a signed 64-bit integer (a rules file with
    enormous odds) is refused rather than reported.

    >>> run_scenario({"variant": "classic", "shoe": [], "hands": [{"bet": 10**23}]})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    twentyone.scenario.ScenarioError: scenario: hands[0]: the main bet is 1000...000 but amounts are capped at ...
    """
    game = play_scenario(scenario)
    if max(game.staked, game.returned) > INT64_MAX:
        raise ScenarioError(f"The round's totals (staked {game.staked}, returned {game.returned}) exceed "
                            f"{INT64_MAX}, the largest amount the ledger stores; lower the bets or the paytable.")
    return round_result(game)


__all__ = ["ScenarioError", "play_scenario", "round_result", "run_scenario", "scenario_rules"]
