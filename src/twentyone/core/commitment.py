"""The shuffle's proof: a hash of the shoe published before the deal, checked once the shoe is revealed.

Pure and small, so ``twentyone verify`` needs nothing of the server to check a record.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any


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

    >>> cards = ["AS", "KD", "7C"]
    >>> record = {"salt": "00", "cards": cards, "commitment": commitment("00", cards), "first_card": 1,
    ...           "drawn": ["KD", "7C"]}
    >>> record_problem(record) is None
    True
    >>> record_problem({**record, "drawn": ["7C", "KD"]})
    "the round's cards are not the shoe's from card 1 on, in order"
    >>> record_problem({**record, "salt": "01"})
    'the shoe and salt do not hash to the commitment'
    """
    cards = list(record["cards"])
    first = int(record["first_card"])
    drawn = list(record["drawn"])
    if commitment(str(record["salt"]), cards) != record["commitment"]:
        return "the shoe and salt do not hash to the commitment"
    if not drawn:
        return "the record lists no cards drawn, so it proves nothing about a round"
    if not 0 <= first <= len(cards) - len(drawn):
        return f"the round's {len(drawn)} cards from card {first} on do not fit in a shoe of {len(cards)}"
    if cards[first:first + len(drawn)] != drawn:
        return f"the round's cards are not the shoe's from card {first} on, in order"
    return None


def verify_record(record: Mapping[str, Any]) -> bool:
    """Whether a revealed shoe's record proves its round fair (:func:`record_problem` finds nothing).

    >>> cards = ["AS", "KD", "7C"]
    >>> verify_record({"salt": "00", "cards": cards, "commitment": commitment("00", cards),
    ...                "first_card": 1, "drawn": ["KD", "7C"]})
    True
    """
    return record_problem(record) is None
