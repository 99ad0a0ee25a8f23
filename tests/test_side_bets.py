"""Side-bet evaluators, and their paytables checked against the sheets' published returns.

The return of a deal-time side bet depends only on three cards drawn from a
fresh shoe, so it is enumerated exactly here: every ordered triple of card
types weighted by how many ways the shoe can deal it. The published figures are
the references; the computed returns are what the rules files and evaluators give.
"""

from fractions import Fraction

import pytest

from twentyone.core.cards import Card, parse_cards
from twentyone.core.rules import SIDE_BET_LINES, Rules
from twentyone.core.sidebets import (
    DEAL_TIME_EVALUATORS,
    any_pair,
    bust_it,
    hot_3,
    is_straight,
    perfect_pairs,
    twenty_one_plus_three,
)
from twentyone.variants import builtin_rules


def exact_return(rules: Rules, name: str) -> tuple[Fraction, dict[str, Fraction]]:
    """Return to player of a deal-time side bet and the probability of each line."""
    side = rules.side_bets[name]
    evaluate = DEAL_TIME_EVALUATORS[side.kind]
    counts = rules.shoe.composition.counts()
    cards = list(counts)
    total = rules.shoe.composition.size
    ways_total = total * (total - 1) * (total - 2)
    line_ways: dict[str, int] = dict.fromkeys(SIDE_BET_LINES[side.kind], 0)
    line_ways["lose"] = 0
    for first in cards:
        n1 = counts[first]
        counts[first] -= 1
        for second in cards:
            n2 = counts[second]
            if not n2:
                continue
            counts[second] -= 1
            for up in cards:
                n3 = counts[up]
                if n3:
                    line = evaluate(first, second, up)
                    line_ways[line if line in side.paytable else "lose"] += n1 * n2 * n3
            counts[second] += 1
        counts[first] += 1
    probabilities = {line: Fraction(ways, ways_total) for line, ways in line_ways.items()}
    rtp = sum(((1 + side.paytable[line]) * p for line, p in probabilities.items() if line != "lose"), Fraction(0))
    return rtp, probabilities


@pytest.mark.parametrize(
    ("variant", "name", "published"),
    [
        ("first-person", "perfect_pairs", 95.90),
        ("first-person", "21+3", 96.30),
        ("power", "any_pair", 96.58),
        ("power", "21+3", 96.09),
        ("power", "hot_3", 96.21),
    ],
)
def test_side_bet_returns_match_the_published_figures(variant: str, name: str, published: float) -> None:
    rtp, probabilities = exact_return(builtin_rules(variant), name)
    assert sum(probabilities.values()) == 1
    assert round(float(rtp) * 100, 2) == published, f"computed {float(rtp) * 100:.4f} %, published {published} %"


def test_perfect_pairs_lines() -> None:
    assert perfect_pairs(*parse_cards(["8S", "8S"])) == "perfect"
    assert perfect_pairs(*parse_cards(["2D", "2H"])) == "colored"
    assert perfect_pairs(*parse_cards(["TH", "TC"])) == "mixed"
    assert perfect_pairs(*parse_cards(["TH", "KH"])) is None  # equal value is not a pair here


def test_any_pair_lines() -> None:
    assert any_pair(*parse_cards(["AS", "AS"])) == "suited_pair"
    assert any_pair(*parse_cards(["8C", "8H"])) == "any_pair"
    assert any_pair(*parse_cards(["JC", "QC"])) is None


@pytest.mark.parametrize(
    ("cards", "line"),
    [
        ("QH QH QH", "suited_trips"), ("TD JD QD", "straight_flush"), ("KS KH KD", "three_of_a_kind"),
        ("2S 3C 4H", "straight"), ("2C 6C TC", "flush"), ("AS 2D 3C", "straight"), ("QS KD AC", "straight"),
        ("KS AD 2C", None), ("AH 2H 3H", "straight_flush"), ("8S JD QC", None), ("2C 2D 5H", None),
    ],
)
def test_21_plus_3_lines(cards: str, line: str | None) -> None:
    assert twenty_one_plus_three(*parse_cards(cards.split())) == line


def test_straight_needs_three_distinct_consecutive_ranks() -> None:
    assert not is_straight(parse_cards(["2S", "2D", "3C"]))
    assert is_straight(parse_cards(["JS", "QD", "KC"]))


@pytest.mark.parametrize(
    ("cards", "line"),
    [("7H 7C 7D", "seven_seven_seven"), ("8D 3D KD", "suited_21"), ("8H 3D KS", "21"),
     ("8H 2D QS", "20"), ("JH 2D 7S", "19"), ("AH AD 7C", "19"), ("AH 9D 9C", "19"), ("5H 6D 3C", None)],
)
def test_hot_3_lines(cards: str, line: str | None) -> None:
    assert hot_3(*parse_cards(cards.split())) == line


def test_bust_it_counts_both_initial_cards() -> None:
    assert bust_it(parse_cards(["TS", "6D", "KC"])) == "bust_3"
    assert bust_it(parse_cards(["2S", "3D", "4C", "5H", "3S", "KC"])) == "bust_6"
    assert bust_it([Card("2", "S")] * 7 + [Card("K", "S")]) == "bust_8_plus"
    assert bust_it([Card("2", "S")] * 9 + [Card("K", "S")]) == "bust_8_plus"
    assert bust_it(parse_cards(["TS", "7D"])) is None
