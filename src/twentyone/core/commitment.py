"""The shuffle's proof: a hash of the shoe published before the deal, checked once the shoe is revealed.

Pure and small, so ``twentyone verify`` needs nothing of the server to check a record.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from twentyone.core.cards import SUITS, CardError, parse_card


def commitment(salt: str, cards: Sequence[str]) -> str:
    """SHA-256 of the salt and the shoe order, published before the deal.

    >>> commitment("00", ["AS", "KD"])[:16]  # hashlib.sha256(b"00:AS KD")
    '9392d9aca094c2ba'
    """
    return hashlib.sha256(f"{salt}:{' '.join(cards)}".encode()).hexdigest()


def record_problem(record: Mapping[str, Any]) -> str | None:
    """What is wrong with a revealed shoe's record, in words, or None when it proves the round fair: its hash
    is the one published before the deal, and the round's cards (at least one) are the shoe's cards from
    ``first_card`` on, in order.

    >>> cards = [f"{rank}{suit}" for rank in "A23456789TJQK" for suit in "SHDC"]  # one deck, in some order
    >>> record = {"salt": "00", "cards": cards, "commitment": commitment("00", cards), "first_card": 1,
    ...           "drawn": ["AH", "AD"]}
    >>> record_problem(record) is None
    True
    >>> record_problem({**record, "drawn": ["AD", "AH"]})
    "the round's cards are not the shoe's from card 1 on, in order"
    >>> record_problem({**record, "salt": "01"})
    'the shoe and salt do not hash to the commitment'
    """
    cards = list(record["cards"])
    first = record["first_card"]
    if isinstance(first, bool) or not isinstance(first, int):  # true or 1.9 read as 1 before (an analyst's trial)
        raise TypeError(f"first_card must be a whole number, got {first!r}")
    drawn = list(record["drawn"])
    if commitment(str(record["salt"]), cards) != record["commitment"]:
        return "the shoe and salt do not hash to the commitment"
    if (problem := shoe_problem(cards)) is not None:
        return problem
    if not drawn:
        return "the record lists no cards drawn, so it proves nothing about a round"
    if not 0 <= first <= len(cards) - len(drawn):
        return f"the round's {len(drawn)} cards from card {first} on do not fit in a shoe of {len(cards)}"
    if cards[first:first + len(drawn)] != drawn:
        return f"the round's cards are not the shoe's from card {first} on, in order"
    return None


def shoe_problem(cards: Sequence[Any]) -> str | None:
    """What keeps ``cards`` from being a shoe, or None: a shoe is whole decks (each card as often as every other),
    less whole ranks (power's have no 9s nor 10s). A record whose "shoe" was ``["ZZ", "hello"]``, 416 aces of
    spades or two cards was "verified" before, its hash being all that was checked (an analyst's trial).

    >>> shoe_problem([f"{rank}{suit}" for rank in "A23456789TJQK" for suit in "SHDC"] * 2) is None
    True
    >>> shoe_problem(["AS"] * 416)
    'the shoe is not whole decks: AS is there but AH is not'
    >>> shoe_problem(["ZZ", "hello"])
    "the shoe holds 'ZZ', which is not a card"
    """
    counts: Counter[str] = Counter()
    for card in cards:
        try:
            counts[str(parse_card(card))] += 1
        except (CardError, TypeError, AttributeError):
            return f"the shoe holds {card!r}, which is not a card"
    if not counts:
        return "the shoe holds no cards"
    for card in counts:
        for suit in SUITS:
            if f"{card[0]}{suit}" not in counts:
                return f"the shoe is not whole decks: {card} is there but {card[0]}{suit} is not"
    decks = set(counts.values())
    if len(decks) > 1:
        return f"the shoe is not whole decks: its cards come {min(decks)} to {max(decks)} times each"
    return None


def verify_record(record: Mapping[str, Any]) -> bool:
    """Whether a revealed shoe's record proves its round fair (:func:`record_problem` finds nothing).

    >>> cards = [f"{rank}{suit}" for rank in "A23456789TJQK" for suit in "SHDC"]
    >>> verify_record({"salt": "00", "cards": cards, "commitment": commitment("00", cards),
    ...                "first_card": 1, "drawn": ["AH", "AD"]})
    True
    """
    return record_problem(record) is None
