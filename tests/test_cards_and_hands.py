import pytest

from twentyone.core.cards import Card, CardError, full_deck, parse_card, parse_cards
from twentyone.core.hand import format_total, hand_value, is_natural


@pytest.mark.parametrize(("text", "card"), [("AS", "AS"), ("td", "TD"), ("10c", "TC"), (" 7h ", "7H"), ("Kd", "KD")])
def test_parse_accepts_lower_case_and_ten(text: str, card: str) -> None:
    assert str(parse_card(text)) == card


@pytest.mark.parametrize("bad", ["", "A", "1S", "AX", "11H", "ASX", "ZZ"])
def test_parse_rejects_with_the_input_in_the_message(bad: str) -> None:
    with pytest.raises(CardError, match="Cannot parse card"):
        parse_card(bad)


def test_card_values_ace_one_faces_ten() -> None:
    values = {card.rank: card.value for card in full_deck()}
    assert values == {"A": 1, "2": 2, "3": 3, "4": 4, "5": 5, "6": 6, "7": 7, "8": 8, "9": 9,
                      "T": 10, "J": 10, "Q": 10, "K": 10}


def test_card_rejects_unknown_rank_or_suit() -> None:
    with pytest.raises(CardError):
        Card("1", "S")
    with pytest.raises(CardError):
        Card("A", "X")


def test_soft_and_hard_totals() -> None:
    assert hand_value(parse_cards(["AS", "6H"])) == (17, True)
    assert hand_value(parse_cards(["AS", "7H", "9D"])) == (17, False)  # "Hard 17" in sheet 001
    assert hand_value(parse_cards(["AS", "AH", "9D"])) == (21, True)
    assert hand_value(parse_cards(["KS", "QH", "2D"])).bust


def test_soft_totals_are_shown_as_two_numbers() -> None:
    assert format_total(hand_value(parse_cards(["AS", "6H"]))) == "7/17"
    assert format_total(hand_value(parse_cards(["AS", "KH"]))) == "21"
    assert format_total(hand_value(parse_cards(["9S", "6H"]))) == "15"


def test_natural_is_two_cards_only() -> None:
    assert is_natural(parse_cards(["AS", "JD"]))
    assert not is_natural(parse_cards(["7S", "7D", "7C"]))
    assert not is_natural(parse_cards(["AS", "5D", "5C"]))
