"""The shoe: a composition of decks, a shuffle, and the order cards leave it.

Randomness enters the project only here, as the order of a shoe, produced by an
injected random-bit source. Production uses :func:`system_rng`
(the operating system's CSPRNG, read in blocks); tests and simulations pass a seeded generator.

>>> composition = ShoeComposition(decks=8, removed_ranks=frozenset("9T"))
>>> composition.size
352
>>> shoe = Shoe.stacked(["AS", "KD"], composition)
>>> str(shoe.draw()), shoe.remaining
('AS', 1)
"""

from __future__ import annotations

import math
import os
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Protocol, TypeVar

from twentyone.core.cards import RANKS, Card, CardError, full_deck, parse_card

_Item = TypeVar("_Item")


class RandomBits(Protocol):
    """Anything that yields uniform random bits: ``random.Random``, ``secrets.SystemRandom``."""

    def getrandbits(self, k: int, /) -> int: ...


class ShoeError(ValueError):
    """A shoe cannot hold a card, or ran out of cards."""


class SystemBits:
    """The operating system's CSPRNG, read a block at a time.

    ``secrets.SystemRandom`` makes a system call for every draw (hundreds per shuffle);
    this reads the same source 512 bytes at a time and hands out its bits in order, each bit
    once. Safe to share between threads. (Why 512: the unused bits are one Python integer that
    every draw shifts, so a bigger block makes each draw dearer; 512 bytes, one system call
    per six-deck shuffle or so, shuffled fastest of the sizes measured from 64 B to 4 KiB.)

    >>> bits = SystemBits()
    >>> all(0 <= bits.getrandbits(9) < 512 for _ in range(10_000))
    True
    """

    def __init__(self, block: int = 512) -> None:
        self._block = block
        self._bits = 0
        self._count = 0
        self._lock = threading.Lock()

    def getrandbits(self, k: int, /) -> int:
        if k < 0:
            raise ValueError("number of bits must be non-negative")
        with self._lock:
            while self._count < k:
                self._bits |= int.from_bytes(os.urandom(self._block), "little") << self._count
                self._count += 8 * self._block
            value = self._bits & ((1 << k) - 1)
            self._bits >>= k
            self._count -= k
            return value


def system_rng() -> RandomBits:
    """The production source: the operating system's CSPRNG."""
    return SystemBits()


def uniform_below(rng: RandomBits, n: int) -> int:
    """A uniform integer in ``[0, n)`` by rejection sampling, so there is no modulo bias.

    Draw just enough bits to cover ``n - 1`` and retry on values ``>= n``; every
    accepted value is equally likely and the expected number of draws is below 2.

    >>> class Counting:
    ...     def __init__(self): self.values = iter([7, 6, 2])
    ...     def getrandbits(self, k): return next(self.values)
    >>> uniform_below(Counting(), 5)   # 7 and 6 are rejected, 2 is kept
    2
    """
    if n <= 0:
        raise ValueError(f"uniform_below needs n >= 1, got {n}.")
    if n == 1:
        return 0
    bits = (n - 1).bit_length()
    while True:
        value = rng.getrandbits(bits)
        if value < n:
            return value


def shuffled(cards: Sequence[_Item], rng: RandomBits) -> list[_Item]:
    """A Fisher–Yates shuffle of ``cards`` (a new list) driven by ``rng``; it moves any items alike.

    Each swap's partner ``j`` (uniform in ``[0, i]``) is drawn from ``rng`` in turn, so a seeded source gives the
    same order on every run (tests, simulations, scenario replay). The operating system's CSPRNG
    (:class:`SystemBits`, the server's) gives the same kind of order faster: :func:`factorial_shuffled`.

    >>> import random
    >>> sorted(shuffled(full_deck(), random.Random(1))) == sorted(full_deck())
    True
    """
    if isinstance(rng, SystemBits):
        return factorial_shuffled(cards, rng)
    order = list(cards)
    for i in range(len(order) - 1, 0, -1):
        j = uniform_below(rng, i + 1)
        order[i], order[j] = order[j], order[i]
    return order


def factorial_shuffled(cards: Sequence[_Item], rng: RandomBits) -> list[_Item]:
    """A Fisher–Yates shuffle whose partners ``j`` are the digits of one uniform draw below ``n!``.

    ``x`` uniform in ``[0, n!)`` written in the mixed radix ``n, n-1, ..., 2`` has digits that are independent
    and uniform, digit ``i`` in ``[0, i]`` (the radices' product is ``n!``, so each ``x`` is one list of digits):
    exactly what Fisher–Yates draws one at a time. One draw (rejected and redrawn if ``>= n!``, less than half
    the time) and divisions replace ``n - 1`` draws: a six-deck shoe in about 57 us rather than 200 (pinned).
    The radices are taken in groups whose product fits in a machine word, so most divisions are of small ints.

    >>> class Fixed:  # the draw x = 5 for three cards: digits 5 % 3 = 2, then (5 // 3) % 2 = 1
    ...     def getrandbits(self, k): return 5
    >>> factorial_shuffled(["a", "b", "c"], Fixed())  # swap 2 with 2, then 1 with 1
    ['a', 'b', 'c']
    >>> class Four:  # x = 4: digit 4 % 3 = 1 (swap 2 with 1), then (4 // 3) % 2 = 1 (swap 1 with 1)
    ...     def getrandbits(self, k): return 4
    >>> factorial_shuffled(["a", "b", "c"], Four())
    ['a', 'c', 'b']
    """
    order = list(cards)
    total, groups = _radix_groups(len(order))
    x = uniform_below(rng, total)
    for product, radices in groups:
        x, rest = divmod(x, product)
        for radix in radices:
            rest, j = divmod(rest, radix)
            i = radix - 1
            order[i], order[j] = order[j], order[i]
    return order


_WORD = 2**62  # a group's product stays below this: a small int, divided fast


@cache
def _radix_groups(n: int) -> tuple[int, tuple[tuple[int, tuple[int, ...]], ...]]:
    """``n!`` and the radices ``n, n-1, ..., 2`` in order, grouped with each group's product below :data:`_WORD`.

    >>> _radix_groups(4)
    (24, ((24, (4, 3, 2)),))
    """
    groups: list[tuple[int, tuple[int, ...]]] = []
    radices: list[int] = []
    product = 1
    for radix in range(n, 1, -1):
        if product * radix >= _WORD:
            groups.append((product, tuple(radices)))
            radices, product = [], 1
        radices.append(radix)
        product *= radix
    if radices:
        groups.append((product, tuple(radices)))
    return math.factorial(n), tuple(groups)


def needs_shuffle(dealt: int, cut_card: int | None) -> bool:
    """Whether a shoe that has dealt ``dealt`` cards is reshuffled before the next round.

    ``cut_card`` None means the game reshuffles every round.

    >>> needs_shuffle(40, None), needs_shuffle(40, 264), needs_shuffle(264, 264)
    (True, False, True)
    """
    return cut_card is None or dealt >= cut_card


@dataclass(frozen=True)
class ShoeComposition:
    """How many decks and which ranks are taken out of each (power: every 9 and 10)."""

    decks: int
    removed_ranks: frozenset[str] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        if self.decks < 1:
            raise ShoeError(f"A shoe needs at least one deck, got {self.decks}.")
        unknown = set(self.removed_ranks) - set(RANKS)
        if unknown:
            raise ShoeError(f"Unknown removed ranks {sorted(unknown)}.")

    def cards(self) -> list[Card]:
        """Every card of the shoe in a fixed, unshuffled order."""
        deck = [card for card in full_deck() if card.rank not in self.removed_ranks]
        return deck * self.decks

    def counts(self) -> Counter[Card]:
        """How many copies of each card the shoe holds."""
        return Counter(self.cards())

    @property
    def size(self) -> int:
        return (52 - 4 * len(self.removed_ranks)) * self.decks

    def check_stack(self, cards: Sequence[Card]) -> None:
        """Raise :class:`ShoeError` if ``cards`` could not all come out of this shoe.

        >>> ShoeComposition(1).check_stack([Card("A", "S"), Card("A", "S")])
        Traceback (most recent call last):
        ...
        twentyone.core.shoe.ShoeError: Card AS appears 2 times but a 1-deck shoe holds 1.
        """
        available = self.counts()
        for card, count in Counter(cards).items():
            if card.rank in self.removed_ranks:
                raise ShoeError(f"Card {card} cannot be in this shoe: every {card.rank} is removed.")
            if count > available[card]:
                raise ShoeError(
                    f"Card {card} appears {count} times but a {self.decks}-deck shoe "
                    f"holds {available[card]}."
                )


class Shoe:
    """Cards in the order they will be dealt, and how many have been dealt.

    ``cut_card`` is the number of cards dealt after which the shoe should be
    reshuffled before the next round (``None``: reshuffle every round).
    """

    def __init__(
        self,
        order: Sequence[Card],
        composition: ShoeComposition | None = None,
        cut_card: int | None = None,
    ) -> None:
        self.order: tuple[Card, ...] = tuple(order)
        self.composition = composition
        self.cut_card = cut_card
        self.position = 0

    @classmethod
    def shuffled(
        cls, composition: ShoeComposition, rng: RandomBits, cut_card: int | None = None
    ) -> Shoe:
        """A freshly shuffled shoe of ``composition``."""
        return cls(shuffled(composition.cards(), rng), composition, cut_card)

    @classmethod
    def stacked(
        cls, cards: Iterable[Card | str], composition: ShoeComposition | None = None
    ) -> Shoe:
        """A shoe whose top cards are given, for scenario replay and tests.

        With a composition the stack is checked against it: a 9 in a shoe without
        nines, or more copies of a card than the decks hold, is an error.
        """
        try:
            order = [card if isinstance(card, Card) else parse_card(card) for card in cards]
        except CardError as error:
            raise ShoeError(str(error)) from None
        if composition is not None:
            composition.check_stack(order)
        return cls(order, composition)

    @property
    def remaining(self) -> int:
        return len(self.order) - self.position

    @property
    def needs_shuffle(self) -> bool:
        """True once the cut card has come out (always true for a reshuffle-every-round shoe)."""
        return needs_shuffle(self.position, self.cut_card)

    def draw(self) -> Card:
        if self.position >= len(self.order):
            raise ShoeError(
                f"The shoe ran out of cards after {len(self.order)}: the stacked shoe is too short."
            )
        card = self.order[self.position]
        self.position += 1
        return card
