"""The shuffle as a test lab checks it (GLI-19 style): uniform positions, no serial correlation, no modulo bias.

Every statistical test uses a fixed seed, so it is deterministic; each one is also run
against a deliberately faulty shuffle to show it would catch the fault. Critical values
of the chi-square distribution are computed here (the regularized incomplete gamma
function), since scipy is not a dependency.
"""

from __future__ import annotations

import math
import random
import struct
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from fractions import Fraction
from itertools import permutations
from pathlib import Path
from statistics import NormalDist

import pytest

from twentyone.cli.rng_dump import RecordingBits, shuffled_indices
from twentyone.core.shoe import RandomBits, Shoe, ShoeComposition, shuffled, uniform_below

CLI = [sys.executable, "-m", "twentyone.cli.main"]
ACES_AND_KINGS = ShoeComposition(1, frozenset("23456789TJQ"))  # a real shoe of 8 distinct cards
Shuffle = Callable[[Sequence[int], RandomBits], list[int]]


# ------------------------------------------------------------------ chi-square, from first principles

def chi_square_cdf(x: float, df: int) -> float:
    """P(X <= x) for X ~ chi-square(df): the regularized lower incomplete gamma P(df/2, x/2)."""
    a, z = df / 2, x / 2
    if z <= 0:
        return 0.0
    log_prefix = -z + a * math.log(z) - math.lgamma(a)
    if z < a + 1:  # power series
        term = total = 1 / a
        n = 0
        while abs(term) > abs(total) * 1e-15:
            n += 1
            term *= z / (a + n)
            total += term
        return total * math.exp(log_prefix)
    # continued fraction for the upper tail (modified Lentz)
    tiny = 1e-300
    b = z + 1 - a
    c, d = 1 / tiny, 1 / b
    h = d
    for i in range(1, 10_000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        delta = d * c
        h *= delta
        if abs(delta - 1) < 1e-15:
            break
    return 1 - h * math.exp(log_prefix)


def chi_square_critical(confidence: float, df: int) -> float:
    """The value a chi-square(df) statistic stays below with probability ``confidence``."""
    low, high = 0.0, df + 40 * math.sqrt(2 * df) + 100
    for _ in range(200):
        middle = (low + high) / 2
        low, high = (middle, high) if chi_square_cdf(middle, df) < confidence else (low, middle)
    return (low + high) / 2


def family_critical(df: int, tests: int, confidence: float = 0.99) -> float:
    """The bound each of ``tests`` statistics keeps to so that all of them pass together at ``confidence``
    (Bonferroni): checking many cards at a plain 99 % would fail a perfect shuffle 1 time in 100 per card."""
    return chi_square_critical(1 - (1 - confidence) / tests, df)


def chi_square(observed: Sequence[int], expected: float) -> float:
    return sum((count - expected) ** 2 / expected for count in observed)


@pytest.mark.parametrize(("confidence", "df", "table"), [
    (0.99, 1, 6.635), (0.99, 7, 18.475), (0.99, 55, 82.292), (0.999, 23, 49.728), (0.99, 51, 77.386),
    (0.95, 10, 18.307), (0.99, 100, 135.807), (0.99, 1000, 1106.969),
])
def test_chi_square_critical_values_match_the_published_tables(confidence: float, df: int, table: float) -> None:
    assert chi_square_critical(confidence, df) == pytest.approx(table, abs=0.002)


# ------------------------------------------------------------------ shuffles to test, good and faulty

def production(items: Sequence[int], rng: RandomBits) -> list[int]:
    return shuffled(items, rng)  # type: ignore[arg-type]


def naive(items: Sequence[int], rng: RandomBits) -> list[int]:
    """The classic mistake: swap every position with any position (n^n paths onto n! orders)."""
    order = list(items)
    for i in range(len(order)):
        j = uniform_below(rng, len(order))
        order[i], order[j] = order[j], order[i]
    return order


def modulo(items: Sequence[int], rng: RandomBits) -> list[int]:
    """Fisher-Yates with the card mapped by a modulo of a few bits instead of rejection."""
    order = list(items)
    for i in range(len(order) - 1, 0, -1):
        j = rng.getrandbits(3) % (i + 1)
        order[i], order[j] = order[j], order[i]
    return order


def cut(items: Sequence[int], rng: RandomBits) -> list[int]:
    """A single random cut: every card at a uniform position, but neighbours stay neighbours."""
    k = uniform_below(rng, len(items))
    return [*items[k:], *items[:k]]


def positions_statistics(shuffle: Shuffle, size: int, shuffles: int, seed: int) -> list[float]:
    """For each card, the chi-square statistic of the positions it took over ``shuffles`` shuffles."""
    rng = random.Random(seed)
    counts = [[0] * size for _ in range(size)]
    for _ in range(shuffles):
        for position, card in enumerate(shuffle(range(size), rng)):
            counts[card][position] += 1
    return [chi_square(row, shuffles / size) for row in counts]


def pair_statistics(shuffle: Shuffle, size: int, shuffles: int, seed: int) -> list[float]:
    """For each pair of consecutive positions, the chi-square statistic of which ordered pair of cards fell there."""
    rng = random.Random(seed)
    counts = [Counter[tuple[int, int]]() for _ in range(size - 1)]
    for _ in range(shuffles):
        order = shuffle(range(size), rng)
        for position in range(size - 1):
            counts[position][order[position], order[position + 1]] += 1
    cells = size * (size - 1)
    return [chi_square([count[pair] for pair in permutations(range(size), 2)], shuffles / cells) for count in counts]


# ------------------------------------------------------------------ positions

def test_every_card_of_a_small_shoe_takes_every_position_equally_often() -> None:
    """8 cards, 40 000 shuffles: every card's 8 position counts pass chi-square (7 df) at 99 % family-wise,
    and the whole 8 x 8 table (49 df) at 99 %."""
    statistics = positions_statistics(production, ACES_AND_KINGS.size, 40_000, seed=20261130)
    assert max(statistics) < family_critical(7, tests=8), statistics
    assert sum(statistics) < chi_square_critical(0.99, 49)


def test_a_full_deck_passes_card_by_card_and_as_a_whole() -> None:
    """52 cards, 10 000 shuffles: every card at 99 % with the family-wise (Bonferroni) bound, at most 3 of
    52 cards beyond the plain 99 % value (Binomial(52, 1 %) exceeds 3 with probability 0.2 %), and the
    whole 52 x 52 table at 99 %."""
    statistics = positions_statistics(production, 52, 10_000, seed=8)
    assert max(statistics) < family_critical(51, tests=52)
    assert sum(value > chi_square_critical(0.99, 51) for value in statistics) <= 3
    assert sum(statistics) < chi_square_critical(0.99, 51 * 51)


@pytest.mark.parametrize("faulty", [naive, modulo])
def test_the_positions_test_catches_a_biased_shuffle(faulty: Shuffle) -> None:
    statistics = positions_statistics(faulty, ACES_AND_KINGS.size, 40_000, seed=20261130)
    assert max(statistics) > family_critical(7, tests=8)


def test_the_positions_are_those_of_the_real_shoe() -> None:
    """The statistics above shuffle positions; the shoe shuffles cards with the very same draws."""
    cards = ACES_AND_KINGS.cards()
    for seed in range(20):
        order = [cards[i] for i in shuffled_indices(ACES_AND_KINGS.size, random.Random(seed))]
        assert order == list(Shoe.shuffled(ACES_AND_KINGS, random.Random(seed)).order)


# ------------------------------------------------------------------ serial correlation

def test_consecutive_positions_show_no_serial_dependence() -> None:
    """Which ordered pair of cards lies at positions (p, p+1): uniform over the 56 pairs, chi-square (55 df)
    at 99 % family-wise over the 7 consecutive pairs of the 8-card shoe."""
    statistics = pair_statistics(production, ACES_AND_KINGS.size, 40_000, seed=77)
    assert max(statistics) < family_critical(55, tests=7), statistics


def test_lag_one_correlation_of_a_full_deck_is_that_of_a_random_permutation() -> None:
    """Pearson correlation of the cards (0-51) at positions p and p+1 over 10 000 shuffles: a random
    permutation has -1/51, not 0; every p is within the family-wise 99 % band (Fisher z)."""
    size, shuffles = 52, 10_000
    rng = random.Random(4)
    orders = [shuffled(range(size), rng) for _ in range(shuffles)]  # type: ignore[arg-type]
    expected = -1 / (size - 1)
    bound = NormalDist().inv_cdf(1 - 0.01 / (2 * (size - 1)))
    worst = 0.0
    for position in range(size - 1):
        xs = [order[position] for order in orders]
        ys = [order[position + 1] for order in orders]
        mean_x, mean_y = sum(xs) / shuffles, sum(ys) / shuffles
        covariance = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True))
        spread = math.sqrt(sum((x - mean_x) ** 2 for x in xs) * sum((y - mean_y) ** 2 for y in ys))
        z = (math.atanh(covariance / spread) - math.atanh(expected)) * math.sqrt(shuffles - 3)
        worst = max(worst, abs(z))
    assert worst < bound


def test_the_serial_test_catches_a_shuffle_that_keeps_neighbours() -> None:
    assert max(positions_statistics(cut, ACES_AND_KINGS.size, 40_000, seed=77)) < family_critical(7, tests=8)
    assert min(pair_statistics(cut, ACES_AND_KINGS.size, 40_000, seed=77)) > family_critical(55, tests=7)


# ------------------------------------------------------------------ no modulo bias: exact enumeration

class Exhausted(Exception):
    """The scripted bits ran out: the function under test asked for another draw."""


class Scripted:
    """A fake bit source that hands out the given values and records how many bits each draw asked for."""

    def __init__(self, values: Sequence[int]) -> None:
        self.values = list(values)
        self.widths: list[int] = []

    def getrandbits(self, k: int) -> int:
        if len(self.widths) == len(self.values):
            self.asked = k
            raise Exhausted
        value = self.values[len(self.widths)]
        assert 0 <= value < 2**k
        self.widths.append(k)
        return value


def first_draw_outcomes(below: Callable[[RandomBits, int], int], n: int) -> tuple[Counter[int], int, int]:
    """Feed every possible first draw: what each maps to, how many ask for a fresh draw, and the draw's width."""
    width = max((n - 1).bit_length(), 1)
    outcomes: Counter[int] = Counter()
    retried = 0
    for value in range(2**width):
        source = Scripted([value])
        try:
            outcomes[below(source, n)] += 1
        except Exhausted:
            retried += 1
    return outcomes, retried, width


def test_uniform_below_maps_equally_many_bit_patterns_to_every_value() -> None:
    """For every range the 416-card shoe's shuffle asks for (2 to 416): every k-bit pattern is equally likely;
    each value below n is hit by exactly one of them and every other pattern draws again (a fresh, identical,
    independent trial), so each value has probability exactly 1/n. The width is the least that covers n, so a
    draw is retried less than half the time."""
    for n in range(2, 417):
        outcomes, retried, width = first_draw_outcomes(uniform_below, n)
        assert outcomes == Counter(range(n)), n
        assert retried == 2**width - n < 2**width / 2, n
        assert (n - 1).bit_length() == width, n


def test_a_modulo_mapping_fails_the_same_enumeration() -> None:
    def modulo_below(rng: RandomBits, n: int) -> int:
        return rng.getrandbits((n - 1).bit_length()) % n

    outcomes, _, _ = first_draw_outcomes(modulo_below, 5)
    assert outcomes == Counter({0: 2, 1: 2, 2: 2, 3: 1, 4: 1})  # 0, 1 and 2 twice as likely as 3 and 4


def shuffle_distribution(size: int, max_draws: int) -> tuple[Counter[tuple[int, ...]], Fraction]:
    """Run the production shuffle on every sequence of draws up to ``max_draws`` long: the exact probability
    of each order among the runs that finished, and the probability still undecided (runs still retrying)."""
    finished: Counter[tuple[int, ...]] = Counter()
    undecided = Fraction(0)
    pending: list[list[int]] = [[]]
    while pending:
        prefix = pending.pop()
        source = Scripted(prefix)
        try:
            order = tuple(shuffled(range(size), source))  # type: ignore[arg-type]
        except Exhausted:  # it wants another draw: branch on every value of the width it asked for
            if len(prefix) == max_draws:
                undecided += Fraction(1, 2 ** sum(source.widths))
            else:
                pending.extend([*prefix, value] for value in range(2**source.asked))
            continue
        finished[order] += Fraction(1, 2 ** sum(source.widths))
    return finished, undecided


@pytest.mark.parametrize(("size", "max_draws"), [(3, 6), (4, 6), (5, 6)])
def test_every_order_of_a_small_deck_has_exactly_the_same_probability(size: int, max_draws: int) -> None:
    """Exact enumeration of the bit source: every one of the size! orders gets the same probability,
    to the last bit, whatever the number of retries allowed; what is left is runs still retrying."""
    finished, undecided = shuffle_distribution(size, max_draws)
    assert set(finished) == set(permutations(range(size)))
    assert len(set(finished.values())) == 1
    assert sum(finished.values()) + undecided == 1
    assert undecided < Fraction(1, 2)


# ------------------------------------------------------------------ rng-dump: what a lab feeds its batteries

def run(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*CLI, "rng-dump", *args], capture_output=True, timeout=120)


def test_rng_dump_indices_are_the_shuffled_shoes_one_per_line() -> None:
    result = run("power", "--rounds", "3", "--seed", "9")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.decode().splitlines()
    assert len(lines) == 3
    rng = random.Random(9)
    for line in lines:
        order = [int(word) for word in line.split()]
        assert sorted(order) == list(range(352))
        assert order == shuffled_indices(352, rng)


def test_rng_dump_cards_match_the_shoes_play_would_deal() -> None:
    result = run("single-deck", "--rounds", "2", "--seed", "5", "--format", "cards")
    rng = random.Random(5)
    composition = ShoeComposition(1)
    expected = [" ".join(map(str, Shoe.shuffled(composition, rng).order)) for _ in range(2)]
    assert result.stdout.decode().splitlines() == expected


def test_rng_dump_binary_is_every_bit_drawn_in_32_bit_words(tmp_path: Path) -> None:
    path = tmp_path / "bits.bin"
    result = run("classic", "--rounds", "4", "--seed", "3", "--format", "binary", "--output", str(path))
    assert result.returncode == 0 and result.stdout == b""
    data = path.read_bytes()
    words = struct.unpack(f"<{len(data) // 4}I", data)

    class Listening:
        def __init__(self) -> None:
            self.source, self.bits = random.Random(3), ""

        def getrandbits(self, k: int) -> int:
            value = self.source.getrandbits(k)
            self.bits += format(value, f"0{k}b")
            return value

    listening = Listening()
    for _ in range(4):
        shuffled(range(312), listening)  # type: ignore[arg-type]
    whole = len(listening.bits) // 32
    assert len(words) == whole > 4 * 311 * 8 // 32
    assert [int(listening.bits[32 * i: 32 * i + 32], 2) for i in range(whole)] == list(words)


def test_recording_packs_draws_most_significant_bit_first() -> None:
    tap = RecordingBits(Scripted([0xA, 0xB, 0xC, 0xD, 0xE, 0xF, 0x0, 0x1, 0x5]))  # type: ignore[arg-type]
    for _ in range(9):
        tap.getrandbits(4)
    assert tap.take_words() == [0xABCDEF01] and tap.pending_bits == 4


def test_rng_dump_bad_options_are_one_line_errors(tmp_path: Path) -> None:
    for args, fragment in [(["--format", "hex"], b"--format must be one of indices, cards, binary"),
                           (["--rounds", "0"], b"--rounds must be at least 1"),
                           (["--output", str(tmp_path / "no" / "x")], b"no folder"),
                           (["craps"], b"unknown game 'craps'"),
                           # -3 seeded Python's generator as 3 does: two seeds, one output (an analyst's trial)
                           (["--seed", "-3"], b"--seed must be 0 or more, got -3")]:
        result = run(*args)
        assert result.returncode == 2 and result.stderr.count(b"\n") == 1 and fragment in result.stderr, result


def test_rng_dump_without_a_seed_uses_the_system_source() -> None:
    first, second = run("single-deck", "--rounds", "1").stdout, run("single-deck", "--rounds", "1").stdout
    assert first != second and sorted(map(int, first.split())) == list(range(52))
