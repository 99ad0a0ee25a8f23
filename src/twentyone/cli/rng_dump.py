"""Raw shuffle output for an outside test lab's batteries (``twentyone rng-dump``).

Each round shuffles a fresh shoe exactly as play does (:func:`twentyone.core.shoe.shuffled`
driven by the same random-bit source), and the dump gives the lab both ends of it:

* ``indices``: one shuffled shoe per line, the position each card had in the unshuffled
  shoe (0-based, space-separated): the permutation itself, for uniformity and serial tests;
* ``cards``: the same shoes as card codes (``AS KD 7H ...``);
* ``binary``: every bit the shuffles drew from the source, rejected draws included, in
  draw order (each draw's bits most significant first) packed into unsigned 32-bit
  little-endian words: the raw input for ``dieharder -g 201 -f FILE`` (or ``-g 200`` from
  a pipe) and TestU01's binary file readers. Bits short of a last whole word are dropped.

>>> import io, random
>>> from twentyone.core.shoe import ShoeComposition
>>> out = io.StringIO()
>>> dump_text(ShoeComposition(1, frozenset("23456789TJQ")), random.Random(1), 2, "cards", out)
>>> out.getvalue().splitlines()   # the 8-card shoe: a deck of only aces and kings
['KH AC KC KD AH AS AD KS', 'KS AH AS AD AC KD KC KH']
"""

from __future__ import annotations

import struct
from typing import BinaryIO, TextIO

from twentyone.core.shoe import RandomBits, ShoeComposition, shuffled

FORMATS = ("indices", "cards", "binary")


class RecordingBits:
    """A random-bit source that passes every draw on and keeps the bits, as 32-bit words.

    >>> import random
    >>> tap = RecordingBits(random.Random(7))
    >>> draws = [tap.getrandbits(5) for _ in range(7)]   # 35 bits: one whole word and 3 bits over
    >>> len(tap.take_words()), tap.pending_bits
    (1, 3)
    """

    def __init__(self, source: RandomBits) -> None:
        self.source = source
        self._bits = 0
        self.pending_bits = 0
        self._words: list[int] = []

    def getrandbits(self, k: int, /) -> int:
        value = self.source.getrandbits(k)
        self._bits = (self._bits << k) | value
        self.pending_bits += k
        while self.pending_bits >= 32:
            self.pending_bits -= 32
            self._words.append(self._bits >> self.pending_bits)
            self._bits &= (1 << self.pending_bits) - 1
        return value

    def take_words(self) -> list[int]:
        """The whole words drawn since the last call."""
        words, self._words = self._words, []
        return words


def shuffled_indices(size: int, rng: RandomBits) -> list[int]:
    """One shuffle of a ``size``-card shoe as the unshuffled positions of its cards, top first.

    The same draws, in the same order, as :meth:`twentyone.core.shoe.Shoe.shuffled` makes:

    >>> import random
    >>> from twentyone.core.shoe import Shoe
    >>> shoe = ShoeComposition(1)
    >>> cards = shoe.cards()
    >>> order = [cards[i] for i in shuffled_indices(52, random.Random(5))]
    >>> order == list(Shoe.shuffled(shoe, random.Random(5)).order)
    True
    """
    return shuffled(range(size), rng)  # type: ignore[arg-type]  # Fisher-Yates moves any items alike


def dump_text(composition: ShoeComposition, rng: RandomBits, rounds: int, fmt: str, out: TextIO) -> None:
    """Write ``rounds`` shuffled shoes, a line each, as ``indices`` or ``cards``."""
    cards = [str(card) for card in composition.cards()]
    for _ in range(rounds):
        order = shuffled_indices(len(cards), rng)
        out.write(" ".join(cards[i] for i in order) if fmt == "cards" else " ".join(map(str, order)))
        out.write("\n")


def dump_binary(composition: ShoeComposition, rng: RandomBits, rounds: int, out: BinaryIO) -> int:
    """Write the bits ``rounds`` shuffles draw as little-endian 32-bit words; returns the word count.

    >>> import io, random
    >>> out = io.BytesIO()
    >>> words = dump_binary(ShoeComposition(1), random.Random(2), 10, out)
    >>> len(out.getvalue()) == 4 * words, words > 10 * 51 * 5 // 32   # at least 5 bits a card on average
    (True, True)
    """
    tap = RecordingBits(rng)
    written = 0
    for _ in range(rounds):
        shuffled_indices(composition.size, tap)
        words = tap.take_words()
        out.write(struct.pack(f"<{len(words)}I", *words))
        written += len(words)
    return written


__all__ = ["FORMATS", "RecordingBits", "dump_binary", "dump_text", "shuffled_indices"]
