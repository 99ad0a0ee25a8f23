import math
import random
from collections import Counter
from itertools import permutations
from typing import Any

import pytest

from twentyone.core.cards import full_deck, parse_cards
from twentyone.core.shoe import (
    Shoe,
    ShoeComposition,
    ShoeError,
    factorial_shuffled,
    shuffled,
    system_rng,
    uniform_below,
)
from twentyone.variants import builtin_rules


def test_power_shoe_has_every_nine_and_ten_removed() -> None:
    composition = builtin_rules("power").shoe.composition
    cards = composition.cards()
    assert len(cards) == composition.size == 352
    assert not any(card.rank in "9T" for card in cards)
    assert Counter(card.rank for card in cards)["J"] == 32


@pytest.mark.parametrize(("variant", "size"), [("first-person", 416), ("classic", 312), ("single-deck", 52),
                                                ("multiplayer", 416), ("power", 352)])
def test_shoe_sizes(variant: str, size: int) -> None:
    assert builtin_rules(variant).shoe.composition.size == size


def test_stacked_shoe_rejects_cards_the_shoe_cannot_hold() -> None:
    with pytest.raises(ShoeError, match="every 9 is removed"):
        Shoe.stacked(["9S"], ShoeComposition(8, frozenset("9T")))
    with pytest.raises(ShoeError, match="appears 2 times but a 1-deck shoe holds 1"):
        Shoe.stacked(["AS", "AS"], ShoeComposition(1))
    with pytest.raises(ShoeError, match="appears 9 times"):
        Shoe.stacked(["AS"] * 9, ShoeComposition(8))
    assert Shoe.stacked(["AS"] * 8, ShoeComposition(8)).remaining == 8


def test_short_shoe_raises() -> None:
    shoe = Shoe.stacked(["AS"])
    shoe.draw()
    with pytest.raises(ShoeError, match="ran out of cards"):
        shoe.draw()


def test_production_rng_is_the_system_csprng(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every bit production shuffles with comes from the operating system's CSPRNG, each used once."""
    import os

    from twentyone.core import shoe as shoe_module

    handed: list[bytes] = []
    original = os.urandom

    def urandom(size: int) -> bytes:
        handed.append(original(size))
        return handed[-1]

    monkeypatch.setattr(shoe_module.os, "urandom", urandom)
    rng = system_rng()
    words = [rng.getrandbits(32) for _ in range(2048)]  # 8 KiB: sixteen blocks of 512 bytes, each read once
    assert [len(block) for block in handed] == [512] * 16
    assert b"".join(word.to_bytes(4, "little") for word in words) == b"".join(handed)


def test_uniform_below_rejects_instead_of_taking_a_modulo() -> None:
    class Scripted:
        def __init__(self, values: list[int]) -> None:
            self.values = iter(values)
            self.bits: list[int] = []

        def getrandbits(self, k: int) -> int:
            self.bits.append(k)
            return next(self.values)

    source = Scripted([5, 6, 7, 3])
    assert uniform_below(source, 5) == 3  # 5, 6, 7 rejected rather than folded onto 0, 1, 2
    assert source.bits == [3, 3, 3, 3]


def _permutations_chi_square(shuffle: Any, cards: list[Any], rng: random.Random, trials: int) -> float:
    """Shuffle ``cards`` ``trials`` times: every permutation must come up, and this is their chi-square."""
    counts = Counter(tuple(shuffle(cards, rng)) for _ in range(trials))
    assert set(counts) == set(permutations(cards))
    expected = trials / len(counts)
    return sum((count - expected) ** 2 / expected for count in counts.values())


def test_fisher_yates_gives_every_permutation_equally_often() -> None:
    cards = parse_cards(["AS", "KD", "7H", "2C"])
    chi_square = _permutations_chi_square(shuffled, cards, random.Random(20261129), 48_000)
    assert chi_square < 49.7  # 99.9th percentile of chi-square with 23 degrees of freedom


def test_the_system_csprng_shuffles_from_one_draw_below_n_factorial() -> None:
    """The server's shoes (SystemBits) are shuffled by factorial_shuffled: one draw (and a redraw now and then), not
    one a card. Every other source draws card by card, so a seed's shoe stays what it was."""
    from twentyone.core.shoe import SystemBits

    class Counted(SystemBits):
        draws = 0

        def getrandbits(self, k: int, /) -> int:
            self.draws += 1
            return super().getrandbits(k)

    source = Counted()
    order = shuffled(full_deck(), source)
    assert sorted(order) == sorted(full_deck()) and 1 <= source.draws < 52
    seeded, expected = random.Random(1), full_deck()
    for i in range(51, 0, -1):  # Fisher-Yates as a seeded source has always driven it
        j = uniform_below(seeded, i + 1)
        expected[i], expected[j] = expected[j], expected[i]
    assert shuffled(full_deck(), random.Random(1)) == expected


def test_the_factorial_shuffle_gives_every_permutation_equally_often() -> None:
    cards = parse_cards(["AS", "KD", "7H", "2C", "5D"])
    chi_square = _permutations_chi_square(factorial_shuffled, cards, random.Random(20261201), 60_000)
    assert chi_square < 173.6  # 99.9th percentile of chi-square with 119 degrees of freedom


def test_a_long_factorial_shuffle_puts_every_card_everywhere_alike() -> None:
    """Forty cards take three groups of radices: a card lands at the top, at the bottom and in the middle equally
    often, wherever its group's divisions put it."""
    cards = list(range(40))
    trials = 20_000
    rng = random.Random(20261202)
    shuffles = [factorial_shuffled(cards, rng) for _ in range(trials)]
    for position in (0, 19, 39):
        counts = Counter(order[position] for order in shuffles)
        expected = trials / 40
        chi_square = sum((counts[card] - expected) ** 2 / expected for card in cards)
        assert chi_square < 72.1  # 99.9th percentile of chi-square with 39 degrees of freedom


def test_the_factorial_shuffle_is_fisher_yates_on_the_draws_mixed_radix_digits() -> None:
    """Grouping the radices changes nothing: the order is Fisher-Yates with j = digit i of the draw, read one radix
    at a time (n, n-1, ..., 2), for a shoe's worth of cards; and a draw of n! or more is drawn again."""
    class Scripted:
        def __init__(self, values: list[int]) -> None:
            self.values = iter(values)

        def getrandbits(self, k: int) -> int:
            return next(self.values)

    cards = list(range(312))
    total = math.factorial(312)
    rng = random.Random(7)
    for _ in range(20):
        x = rng.randrange(total)
        expected, rest = list(cards), x
        for i in range(311, 0, -1):
            rest, j = divmod(rest, i + 1)
            expected[i], expected[j] = expected[j], expected[i]
        assert factorial_shuffled(cards, Scripted([total, x])) == expected  # the first draw, n!, is drawn again


def test_shuffle_keeps_the_composition() -> None:
    composition = ShoeComposition(8, frozenset("9T"))
    shoe = Shoe.shuffled(composition, random.Random(1))
    assert Counter(shoe.order) == composition.counts()


def test_reshuffle_every_round_versus_cut_card() -> None:
    every_round = builtin_rules("classic").shoe
    assert every_round.cut_card is None
    assert Shoe.shuffled(every_round.composition, random.Random(1), every_round.cut_card).needs_shuffle
    power = builtin_rules("power").shoe
    assert power.reshuffle == "cut-card" and power.cut_card == 264
    live = Shoe.shuffled(power.composition, random.Random(1), power.cut_card)
    assert not live.needs_shuffle
    for _ in range(264):
        live.draw()
    assert live.needs_shuffle
