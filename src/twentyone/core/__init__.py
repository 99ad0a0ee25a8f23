"""The rules engine: cards, shoe, rules, hands, side bets and the round state machine.

Pure Python, standard library only, no I/O: deterministic given the shoe.
"""

from twentyone.core.cards import Card, CardError, parse_card, parse_cards
from twentyone.core.hand import HandValue, format_total, hand_value
from twentyone.core.operations import Action
from twentyone.core.round import BetError, HandBet, IllegalActionError, Phase, Round, replay
from twentyone.core.rules import Rules, RulesError, rules_from_mapping, rules_from_toml
from twentyone.core.shoe import Shoe, ShoeComposition, ShoeError
from twentyone.core.view import Decision, HandState, RoundView, view_json

__all__ = [
    "Action",
    "BetError",
    "Card",
    "CardError",
    "Decision",
    "HandBet",
    "HandState",
    "HandValue",
    "IllegalActionError",
    "Phase",
    "Round",
    "RoundView",
    "Rules",
    "RulesError",
    "Shoe",
    "ShoeComposition",
    "ShoeError",
    "format_total",
    "hand_value",
    "parse_card",
    "parse_cards",
    "replay",
    "rules_from_mapping",
    "rules_from_toml",
    "view_json",
]
