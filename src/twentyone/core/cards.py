"""Cards, ranks and suits: the small vocabulary every layer speaks.

A card is written as two characters, rank then suit (``AS``, ``TD``, ``7H``).
Parsing accepts lower case and ``10`` for ``T``.

>>> parse_card("10h")
Card('TH')
>>> parse_card("as").value, parse_card("KD").value
(1, 10)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

RANKS = "A23456789TJQK"
SUITS = "SHDC"
RED_SUITS = frozenset("HD")
TEN_RANKS = frozenset("TJQK")
FACE_RANKS = frozenset("JQK")

# Point value of each rank; an Ace is stored as 1 and promoted to 11 by hand logic.
RANK_VALUES = {rank: min(index + 1, 10) for index, rank in enumerate(RANKS)}


class CardError(ValueError):
    """A card, rank or suit could not be parsed."""


@dataclass(frozen=True, slots=True, order=True)
class Card:
    """A playing card: ``rank`` in ``RANKS`` and ``suit`` in ``SUITS``.

    >>> Card("Q", "H").is_ten, Card("Q", "H").is_red, str(Card("Q", "H"))
    (True, True, 'QH')
    """

    rank: str
    suit: str

    def __post_init__(self) -> None:
        if self.rank not in RANKS or len(self.rank) != 1:
            raise CardError(f"Unknown rank {self.rank!r}: expected one of {RANKS}.")
        if self.suit not in SUITS or len(self.suit) != 1:
            raise CardError(f"Unknown suit {self.suit!r}: expected one of {SUITS}.")

    @property
    def value(self) -> int:
        """Point value, with an Ace counted as 1."""
        return RANK_VALUES[self.rank]

    @property
    def is_ace(self) -> bool:
        return self.rank == "A"

    @property
    def is_ten(self) -> bool:
        """True for every ten-valued card (T, J, Q, K)."""
        return self.rank in TEN_RANKS

    @property
    def is_red(self) -> bool:
        return self.suit in RED_SUITS

    def __str__(self) -> str:
        return self.rank + self.suit

    def __repr__(self) -> str:
        return f"Card({str(self)!r})"


def parse_card(text: str) -> Card:
    """Parse ``'AS'``, ``'td'`` or ``'10C'`` into a :class:`Card`.

    >>> parse_card("7h")
    Card('7H')
    >>> parse_card("1H")
    Traceback (most recent call last):
    ...
    twentyone.core.cards.CardError: Cannot parse card '1H': write rank then suit, like 'AS', 'TD' or '10C'.
    """
    if not isinstance(text, str):
        raise CardError(f"Cannot parse card {text!r}: expected a string like 'AS'.")
    known = _CARDS.get(text)
    if known is not None:  # the 52 canonical spellings: a shoe of 416 cards parses without building any
        return known
    cleaned = text.strip().upper()
    if cleaned.startswith("10"):
        cleaned = "T" + cleaned[2:]
    if len(cleaned) != 2 or cleaned[0] not in RANKS or cleaned[1] not in SUITS:
        raise CardError(
            f"Cannot parse card {text!r}: write rank then suit, like 'AS', 'TD' or '10C'."
        )
    return Card(cleaned[0], cleaned[1])


_CARDS: dict[str, Card] = {rank + suit: Card(rank, suit) for rank in RANKS for suit in SUITS}


def parse_cards(texts: Iterable[str]) -> list[Card]:
    """Parse several cards.

    >>> [str(c) for c in parse_cards(["as", "10d"])]
    ['AS', 'TD']
    """
    return [parse_card(text) for text in texts]


def full_deck() -> list[Card]:
    """One 52-card deck in a fixed order (ranks within suits).

    >>> len(full_deck()), str(full_deck()[0]), str(full_deck()[-1])
    (52, 'AS', 'KC')
    """
    return [Card(rank, suit) for suit in SUITS for rank in RANKS]
