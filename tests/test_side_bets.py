"""Side-bet evaluators, and the exact returns checked against the sheets' published figures.

The returns come from twentyone.analysis.sidebets (exact enumeration); the tests
set them against the published percentages (to the second decimal), against
closed forms for the pair bets, against sampled deals, and Bust It against a
card-by-card dealer recursion on a small shoe.
"""

import random
from fractions import Fraction

import pytest

from twentyone.analysis.sidebets import side_bet_return
from twentyone.core.cards import Card, parse_cards
from twentyone.core.rules import rules_from_toml
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


@pytest.mark.parametrize(
    ("variant", "name", "published"),
    [
        ("first-person", "perfect_pairs", 95.90),
        ("first-person", "21+3", 96.30),
        ("power", "any_pair", 96.58),
        ("power", "21+3", 96.09),
        ("power", "hot_3", 96.21),
        ("power", "bust_it", 94.71),
    ],
)
def test_side_bet_returns_match_the_published_figures(variant: str, name: str, published: float) -> None:
    report = side_bet_return(builtin_rules(variant), name)
    assert sum(p for p, _, _ in report.lines.values()) == pytest.approx(1.0, abs=1e-12)
    assert round(report.percent, 2) == published, f"computed {report.percent:.4f} %, published {published} %"
    assert builtin_rules(variant).published[name] == published


def test_perfect_pairs_matches_its_closed_form() -> None:
    decks = 8
    n = 52 * decks
    perfect, colored, mixed = Fraction(decks - 1, n - 1), Fraction(decks, n - 1), Fraction(2 * decks, n - 1)
    first_person = side_bet_return(builtin_rules("first-person"), "perfect_pairs").rtp
    multiplayer = side_bet_return(builtin_rules("multiplayer"), "perfect_pairs").rtp
    assert first_person == perfect * 26 + colored * 13 + mixed * 7
    assert multiplayer == perfect * 31 + colored * 11 + mixed * 6


def test_any_pair_matches_its_closed_form() -> None:
    # 352 cards: 44 kinds of card, 8 of each; the partner of the first card is one of 351.
    suited, other_suit = Fraction(7, 351), Fraction(24, 351)
    assert side_bet_return(builtin_rules("power"), "any_pair").rtp == suited * 21 + other_suit * 8


@pytest.mark.parametrize(("variant", "name"), [("first-person", "21+3"), ("power", "21+3"), ("power", "hot_3")])
def test_three_card_bets_agree_with_sampled_deals(variant: str, name: str) -> None:
    rules = builtin_rules(variant)
    side = rules.side_bets[name]
    evaluate = DEAL_TIME_EVALUATORS[side.kind]
    rng = random.Random(2026)
    cards = rules.shoe.composition.cards()
    trials = 60_000
    returns = []
    for _ in range(trials):
        first, up, second = rng.sample(cards, 3)
        line = evaluate(first, second, up)
        returns.append(1 + side.paytable[line] if line in side.paytable else 0)
    mean = sum(returns) / trials
    spread = (sum((r - mean) ** 2 for r in returns) / (trials - 1)) ** 0.5
    exact = float(side_bet_return(rules, name).rtp)
    assert abs(mean - exact) < 4 * spread / trials**0.5


def _bust_by_cards(counts: tuple[int, ...], cards: tuple[int, ...]) -> dict[int, Fraction]:
    """Dealer bust probability by card count, drawing card by card (the up card is in ``cards``)."""
    hard = sum(cards)
    total = hard + 10 if 1 in cards and hard + 10 <= 21 else hard
    if total > 21:
        return {len(cards): Fraction(1)}
    if total >= 17:
        return {}
    n = sum(counts)
    result: dict[int, Fraction] = {}
    for index, count in enumerate(counts):
        if count:
            left = (*counts[:index], count - 1, *counts[index + 1:])
            for cards_count, q in _bust_by_cards(left, (*cards, index + 1)).items():
                result[cards_count] = result.get(cards_count, Fraction(0)) + Fraction(count, n) * q
    return result


def test_bust_it_lines_agree_with_a_card_by_card_dealer_on_a_small_shoe() -> None:
    rules = rules_from_toml(
        'id = "small"\nname = "Small"\n[shoe]\ndecks = 1\nremoved_ranks = ["2", "3", "4", "5", "6"]\n'
        '[side_bets.bust_it]\nkind = "bust_it"\n'
        "paytable = { bust_3 = 1, bust_4 = 2, bust_5 = 8, bust_6 = 25, bust_7 = 100, bust_8_plus = 250 }\n"
    )
    counts = [0] * 10
    for card in rules.shoe.composition.cards():
        counts[card.value - 1] += 1
    lines: dict[str, Fraction] = {}
    push = Fraction(0)
    for up in range(1, 11):
        for a in range(1, 11):
            for b in range(1, 11):
                left = list(counts)
                p = Fraction(1)
                for value in (a, up, b):
                    if left[value - 1] <= 0:
                        p = Fraction(0)
                        break
                    p *= Fraction(left[value - 1], sum(left))
                    left[value - 1] -= 1
                if p == 0:
                    continue
                if {a, b} == {1, 10}:
                    push += p
                    continue
                for count, q in _bust_by_cards(tuple(left), (up,)).items():
                    line = "bust_8_plus" if count >= 8 else f"bust_{count}"
                    lines[line] = lines.get(line, Fraction(0)) + p * q
    report = side_bet_return(rules, "bust_it")
    assert report.lines["push"][0] == pytest.approx(float(push), abs=1e-12)
    assert lines, "the small shoe lets the dealer bust"
    for line, p in lines.items():
        assert report.lines[line][0] == pytest.approx(float(p), abs=1e-12), line


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


def test_a_side_bet_refused_at_its_limit_is_named_by_its_title() -> None:
    """A player who reaches a side bet's maximum hears about that side bet, not the main bet's words."""
    from twentyone.core.betting import MAIN, BetLimits, BetSlip, BetSlipError

    limits = BetLimits({MAIN: (100, 30000), "21+3": (100, 200), "perfect_pairs": (100, 300)})
    slip = BetSlip(limits, chips=(100,), balance=100000, spots=2, side_bets=("21+3", "perfect_pairs"))
    slip.place(1)
    slip.place(1, "21+3")
    slip.place(1, "21+3")
    with pytest.raises(BetSlipError) as at_maximum:
        slip.place(1, "21+3")
    assert str(at_maximum.value) == "The maximum 21+3 bet is 200 on this spot."
    with pytest.raises(BetSlipError) as too_much:
        slip.rebet({(1, MAIN): 500, (1, "perfect_pairs"): 500})
    assert str(too_much.value) == "The Perfect Pairs bet on spot 1 is above the maximum of 300."
