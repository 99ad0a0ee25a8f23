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


def verify_record(record: Mapping[str, Any]) -> bool:
    """Check a revealed shoe: its hash is the one published before the deal, and the round's cards
    are the shoe's cards from ``first_card`` on, in order.

    >>> cards = ["AS", "KD", "7C"]
    >>> verify_record({"salt": "00", "cards": cards, "commitment": commitment("00", cards),
    ...                "first_card": 1, "drawn": ["KD", "7C"]})
    True
    """
    cards = list(record["cards"])
    first = int(record["first_card"])
    drawn = list(record["drawn"])
    return commitment(str(record["salt"]), cards) == record["commitment"] and cards[first:first + len(drawn)] == drawn
