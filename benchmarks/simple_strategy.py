"""The simple strategy the benchmarks' players follow, over a round view (``legal_actions``, hands, decision).

>>> view = {"legal_actions": ["hit", "stand", "double"], "decision": {"player_id": 1, "seat": 1, "hand": 0},
...         "hands": [{"player_id": 1, "seat": 1, "hand": 0, "total": 11, "soft": False, "cards": ["6S", "5H"]}]}
>>> choose(view)
'double'
>>> choose({**view, "legal_actions": ["insurance", "no-insurance"]})
'no-insurance'
"""

from __future__ import annotations

from typing import Any

DECLINE = ("no-insurance", "no-even-money", "no-surrender")


def choose(view: dict[str, Any]) -> str:
    """A simple strategy over the round view: decline offers; split aces and eights; double 10 and 11;
    hit hard totals below 17 and soft below 18; stand otherwise."""
    legal = view["legal_actions"]
    for declined in DECLINE:
        if declined in legal:
            return declined
    decision = view["decision"]
    hand = next((h for h in view["hands"] if h["seat"] == decision["seat"] and h["hand"] == decision["hand"]
                 and h["player_id"] == decision["player_id"]), None)
    if hand is None:
        return "stand" if "stand" in legal else legal[0]
    total, soft, cards = hand["total"], hand["soft"], hand["cards"]
    if "split" in legal and len(cards) == 2 and cards[0][0] == cards[1][0] and cards[0][0] in "A8":
        return "split"
    if "double" in legal and not soft and total in (10, 11):
        return "double"
    if "hit" in legal and (total < 17 or (soft and total < 18)):
        return "hit"
    return "stand" if "stand" in legal else legal[0]
