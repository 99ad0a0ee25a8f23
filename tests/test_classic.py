"""Classic Blackjack (seed 001) and its premium table: one test per rule of the sheet."""

import pytest

from helpers import hand, play, start
from twentyone.core.round import IllegalActionError, Phase
from twentyone.variants import builtin_rules

V = "classic"


def test_six_decks_shuffled_after_every_round() -> None:
    rules = builtin_rules(V)
    assert rules.shoe.decks == 6 and rules.shoe.composition.size == 312
    assert rules.shoe.reshuffle == "every-round"


def test_a_player_may_play_multiple_hands() -> None:
    result = play(V, ["TS", "9S", "7H", "8D", "TD", "TC"], [100, 100], ["stand", "stand"])
    assert [h["outcome"] for h in result["hands"]] == ["win", "win"]  # 18 and 19 against 17


def test_insurance_then_concealed_card_checked_under_an_ace() -> None:
    game = start(V, ["TS", "AH", "9D", "KC"], 100)
    assert game.decision().kind == "insurance"  # type: ignore[union-attr]
    game.insurance()
    assert game.phase is Phase.SETTLED and game.dealer_blackjack


def test_concealed_card_not_checked_under_a_ten() -> None:
    game = start(V, ["TS", "KH", "9D", "AC"], 100)
    assert game.phase is Phase.PLAYER_TURNS
    game.stand()
    assert game.dealer_blackjack and game.hands[0].outcome == "lose"


def test_ten_up_dealer_blackjack_takes_initial_and_secondary_bets() -> None:
    doubled = play(V, ["5S", "QH", "6D", "AC", "4C"], [100], ["double"])
    assert hand(doubled)["stake"] == 200 and doubled["net"] == -200
    split = play(V, ["9S", "KH", "9D", "AC", "2C", "KS", "3D", "JD"],
                 [100], ["split", "double", "double"])
    assert [h["stake"] for h in split["hands"]] == [200, 200]
    assert split["net"] == -400


def test_dealer_hits_16_and_stands_on_17() -> None:
    result = play(V, ["TS", "6H", "8D", "TC", "AC"], [100], ["stand"])
    assert result["dealer"]["cards"] == ["6H", "TC", "AC"] and result["dealer"]["total"] == 17
    assert hand(result)["outcome"] == "win"


def test_dealer_stands_on_soft_17() -> None:
    result = play(V, ["TS", "6H", "7D", "AC"], [100], ["stand"])
    assert result["dealer"]["total"] == 17 and len(result["dealer"]["cards"]) == 2
    assert hand(result)["outcome"] == "push"


def test_dealer_bust_pays_all_remaining_hands() -> None:
    result = play(V, ["TS", "2S", "6H", "8D", "5D", "TC", "KC"], [100, 100], ["stand", "stand"])
    assert result["dealer"]["total"] == 26
    assert [h["outcome"] for h in result["hands"]] == ["win", "win"]


def test_double_down_on_any_first_two_cards_one_card_only() -> None:
    for first, second in (("2S", "3D"), ("AS", "8D"), ("TS", "TD")):
        game = start(V, [first, "6H", second, "TC", "5S", "5C"], 100)
        game.double()
        assert len(game.hands[0].cards) == 3 and game.phase is Phase.SETTLED


def test_double_down_after_splitting_a_pair() -> None:
    result = play(V, ["5S", "6H", "5D", "TC", "6C", "4H", "KD", "TS", "AC"],
                  [100], ["split", "double", "double"])
    assert [h["stake"] for h in result["hands"]] == [200, 200]
    assert [h["total"] for h in result["hands"]] == [21, 19]


def test_split_on_same_value_as_well_as_identical_cards() -> None:
    assert start(V, ["JS", "6H", "KD", "TC"], 100).can_split()
    assert start(V, ["8S", "6H", "8S", "TC"], 100).can_split()
    assert not start(V, ["8S", "6H", "9S", "TC"], 100).can_split()


def test_split_places_an_additional_bet_equal_to_the_original() -> None:
    result = play(V, ["8S", "6H", "8D", "TC", "TD", "9H", "9C"], [100], ["split", "stand", "stand"])
    assert [h["stake"] for h in result["hands"]] == [100, 100]
    assert result["staked"] == 200


def test_split_aces_receive_one_card_each() -> None:
    result = play(V, ["AS", "6H", "AD", "TC", "2C", "3H", "9C"], [100], ["split"])
    assert [len(h["cards"]) for h in result["hands"]] == [2, 2]


def test_no_resplit() -> None:
    game = start(V, ["8S", "6H", "8D", "TC", "8C", "8H"], 100)
    game.split()
    with pytest.raises(IllegalActionError, match="no resplit"):
        game.split()


def test_player_blackjack_paid_one_and_a_half_times_the_bet() -> None:
    result = play(V, ["AS", "9H", "KD", "8C"], [100])
    assert hand(result)["outcome"] == "blackjack" and hand(result)["returned"] == 250


def test_player_and_dealer_blackjack_push() -> None:
    result = play(V, ["AS", "AH", "KD", "KC"], [100], ["no-even-money"])
    assert hand(result)["outcome"] == "push" and hand(result)["returned"] == 100


def test_only_a_ten_or_face_with_an_ace_is_blackjack_and_beats_21() -> None:
    result = play(V, ["AS", "7H", "QD", "4C", "KH"], [100])
    assert hand(result)["outcome"] == "blackjack"
    three_card = play(V, ["7S", "7H", "7D", "4C", "7C", "KH"], [100], ["hit"])
    assert hand(three_card)["total"] == 21 and hand(three_card)["outcome"] == "push"  # dealer 21 too


def test_split_aces_or_tens_making_21_are_a_regular_21() -> None:
    aces = play(V, ["AS", "7H", "AD", "4C", "KD", "QD", "TS"], [100], ["split"])
    assert [h["outcome"] for h in aces["hands"]] == ["push", "push"]  # dealer 21 pushes a split 21
    tens = play(V, ["KS", "QH", "TD", "AC", "AD", "AH"], [100], ["split"])  # each 21 stands by itself
    assert [h["total"] for h in tens["hands"]] == [21, 21]
    assert [h["outcome"] for h in tens["hands"]] == ["lose", "lose"]  # dealer blackjack wins


def test_even_money_pays_one_to_one_without_exposing_the_down_card() -> None:
    game = start(V, ["AS", "AH", "KD", "KC"], 100)
    assert game.decision().kind == "even-money"  # type: ignore[union-attr]
    game.even_money()
    assert game.hands[0].outcome == "even-money" and game.hands[0].returned == 200
    assert game.phase is Phase.SETTLED


def test_declined_even_money_pays_3_to_2_when_the_dealer_has_no_blackjack() -> None:
    result = play(V, ["AS", "AH", "KD", "7C"], [100], ["no-even-money"])
    assert hand(result)["outcome"] == "blackjack" and hand(result)["returned"] == 250


def test_insurance_is_half_the_original_bet_and_pays_double() -> None:
    result = play(V, ["TS", "AH", "7D", "KC"], [100], ["insurance"])
    assert result["insurance"][0]["stake"] == 50 and result["insurance"][0]["returned"] == 150


def test_insurance_lost_when_down_card_is_below_ten_and_hand_continues() -> None:
    result = play(V, ["TS", "AH", "7D", "5C", "2C"], [100], ["insurance", "stand"])
    assert result["insurance"][0]["result"] == "lose"
    assert hand(result)["outcome"] == "lose"  # dealer soft 18 beats 17


def test_premium_table_has_the_same_rules() -> None:
    # classic-premium is a table setting (limits 5-2000, black theme) over this same rules file.
    assert builtin_rules(V).id == "classic"
