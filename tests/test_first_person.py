"""First Person Blackjack (seed 000): one test per rule of the sheet."""

from fractions import Fraction

import pytest

from helpers import hand, play, side, start
from twentyone.core.round import BetError, IllegalActionError, Phase
from twentyone.scenario import ScenarioError
from twentyone.variants import builtin_rules

V = "first-person"


def test_played_with_8_decks() -> None:
    assert builtin_rules(V).shoe.decks == 8
    with pytest.raises(ScenarioError, match="appears 9 times but a 8-deck shoe holds 8"):
        play(V, ["AS"] * 9, [100])


def test_cards_are_shuffled_before_each_game() -> None:
    assert builtin_rules(V).shoe.reshuffle == "every-round"


def test_five_hands_available() -> None:
    game = start(V, ["2S", "3S", "4S", "5S", "6S", "9H", "2D", "3D", "4D", "5D", "6D", "8C"], 1, 1, 1, 1, 1)
    assert len(game.hands) == 5
    with pytest.raises(BetError, match="allows 1 to 5"):
        start(V, ["2S"] * 8, *([1] * 6))


def test_dealing_starts_with_each_hand_then_dealer_up_then_second_cards_then_hole_face_down() -> None:
    game = start(V, ["2S", "3S", "9H", "2D", "3D", "KC"], 10, 10)
    assert [str(c) for c in game.hands[0].cards] == ["2S", "2D"]
    assert [str(c) for c in game.hands[1].cards] == ["3S", "3D"]
    assert str(game.dealer_up) == "9H"
    assert [str(c) for c in game.dealer_cards] == ["9H"]  # hole card face down
    faces = [op.face_up for op in game.operations if type(op).__name__ == "CardDealt" and op.seat == 0]
    assert faces == [True, False]


def test_dealer_always_stands_on_17_including_soft_17() -> None:
    result = play(V, ["TS", "6H", "9D", "AC"], [100], ["stand"])
    assert result["dealer"]["cards"] == ["6H", "AC"] and result["dealer"]["total"] == 17
    assert hand(result)["outcome"] == "win"


def test_double_on_any_two_initial_cards() -> None:
    for first, second in (("2S", "3D"), ("AS", "7D"), ("TS", "8D")):
        game = start(V, [first, "6H", second, "TC", "5S"], 100)
        assert game.can_double()


def test_split_initial_cards_of_equal_value() -> None:
    game = start(V, ["KS", "6H", "QD", "TC"], 100)
    assert game.can_split()


def test_only_one_split_per_hand() -> None:
    game = start(V, ["8S", "6H", "8D", "TC", "8C", "8H"], 100)
    game.split()
    assert [str(c) for c in game.hands[0].cards] == ["8S", "8C"]
    assert not game.can_split()
    with pytest.raises(IllegalActionError, match="at most 2 hands"):
        game.split()


def test_single_card_dealt_to_each_split_ace() -> None:
    result = play(V, ["AS", "6H", "AD", "TC", "5C", "9H", "8D"], [100], ["split"])
    assert [h["cards"] for h in result["hands"]] == [["AS", "5C"], ["AD", "9H"]]
    assert result["actions"] == ["split"]  # no decision is asked on split aces


def test_split_hands_get_second_cards_at_once_first_then_second() -> None:
    game = start(V, ["7S", "6H", "7D", "TC", "2C", "3H", "KD"], 100)
    game.split()
    assert [str(c) for c in game.hands[0].cards] == ["7S", "2C"]
    assert [str(c) for c in game.hands[1].cards] == ["7D", "3H"]
    assert game.decision().hand == 1  # type: ignore[union-attr]


def test_no_double_after_split() -> None:
    game = start(V, ["7S", "6H", "7D", "TC", "4C", "3H"], 100)
    game.split()
    assert not game.can_double()
    with pytest.raises(IllegalActionError, match="no double after split"):
        game.double()


def test_insurance_offered_when_dealer_shows_an_ace() -> None:
    game = start(V, ["TS", "AH", "9D", "7C"], 100)
    assert game.decision().kind == "insurance"  # type: ignore[union-attr]
    game_ten = start(V, ["TS", "KH", "9D", "7C"], 100)
    assert game_ten.decision().kind == "play"  # type: ignore[union-attr]


def test_insurance_offered_even_to_a_player_blackjack() -> None:
    game = start(V, ["AS", "AH", "KD", "7C"], 100)
    assert game.decision().kind == "insurance"  # type: ignore[union-attr]
    result = play(V, ["AS", "AH", "KD", "KC"], [100], ["insurance"])
    assert hand(result)["outcome"] == "push" and result["insurance"][0]["returned"] == 150
    assert result["net"] == 100  # the insured blackjack is paid even money in effect


def test_insurance_is_half_the_main_bet_and_pays_2_to_1() -> None:
    result = play(V, ["TS", "AH", "9D", "KC"], [100], ["insurance"])
    assert result["insurance"] == [{"seat": 1, "player": "player", "stake": 50, "result": "win", "returned": 150}]
    assert hand(result)["outcome"] == "lose"
    assert result["net"] == 0


def test_insurance_lost_when_the_dealer_has_no_blackjack_and_play_continues() -> None:
    result = play(V, ["TS", "AH", "9D", "7C"], [100], ["insurance", "stand"])
    assert result["insurance"][0]["result"] == "lose"
    assert hand(result)["outcome"] == "win"  # 19 beats soft 18


def test_peek_only_under_an_ace() -> None:
    game = start(V, ["TS", "AH", "9D", "KC"], 100)
    game.decline_insurance()
    assert game.phase is Phase.SETTLED and game.dealer_blackjack
    # Under a ten there is no check: the round goes on to the player's decision.
    game_ten = start(V, ["TS", "KH", "9D", "AC"], 100)
    assert game_ten.phase is Phase.PLAYER_TURNS and not game_ten.dealer_blackjack


def test_ten_up_dealer_blackjack_takes_every_bet_including_doubles_and_splits() -> None:
    doubled = play(V, ["6S", "KH", "5D", "AC", "2C"], [100], ["double"])
    assert hand(doubled)["stake"] == 200 and hand(doubled)["returned"] == 0
    assert doubled["dealer"]["blackjack"] and doubled["net"] == -200
    split = play(V, ["8S", "QH", "8D", "AC", "3C", "2H"], [100], ["split", "stand", "stand"])
    assert [h["outcome"] for h in split["hands"]] == ["lose", "lose"] and split["net"] == -200


def test_ten_up_dealer_blackjack_takes_every_hand_but_a_player_blackjack_pushes() -> None:
    result = play(V, ["AS", "9S", "JH", "KD", "7C", "AC"], [100, 100], ["stand"])
    assert [h["outcome"] for h in result["hands"]] == ["push", "lose"]


def test_blackjack_pays_3_to_2() -> None:
    result = play(V, ["AS", "9H", "KD", "7C"], [100])
    assert hand(result)["outcome"] == "blackjack" and hand(result)["returned"] == 250


def test_blackjack_payout_rounds_down_to_the_minor_unit() -> None:
    result = play(V, ["AS", "9H", "KD", "7C"], [25])
    assert hand(result)["returned"] == 25 + 37


def test_push_when_hands_are_tied() -> None:
    result = play(V, ["TS", "9H", "9D", "TC"], [100], ["stand"])
    assert hand(result)["outcome"] == "push" and hand(result)["returned"] == 100


def test_split_21_is_not_a_blackjack_and_loses_to_dealer_blackjack() -> None:
    result = play(V, ["AS", "KH", "AD", "AC", "KC", "QD"], [100], ["split"])
    assert [h["total"] for h in result["hands"]] == [21, 21]
    assert [h["outcome"] for h in result["hands"]] == ["lose", "lose"]


def test_split_21_is_paid_one_to_one() -> None:
    result = play(V, ["AS", "9H", "AD", "8C", "KC", "QD"], [100], ["split"])
    assert [h["outcome"] for h in result["hands"]] == ["win", "win"]
    assert [h["returned"] for h in result["hands"]] == [200, 200]


def test_bust_loses_the_bet() -> None:
    result = play(V, ["TS", "9H", "6D", "8C", "KC"], [100], ["hit"])
    assert hand(result)["outcome"] == "bust" and hand(result)["returned"] == 0


def _offer(game_hand_total: tuple[bool, int], up_value: int, bet: int) -> int:
    factor = builtin_rules(V).cash_out.factor(*game_hand_total, up_value)
    assert factor is not None
    return int(Fraction(str(factor)) * bet)


def test_cash_out_ends_the_hand_and_returns_the_offer_for_total_and_up_card() -> None:
    game = start(V, ["TS", "8H", "4D", "7C"], 1000)
    expected = _offer((False, 14), 8, 1000)
    assert game.offer_amount(game.legal_actions()[-1]) == expected
    game.cash_out()
    assert game.phase is Phase.SETTLED
    assert game.hands[0].outcome == "cash-out" and game.hands[0].returned == expected
    assert 0.4 * 1000 <= expected <= 1.77 * 1000


def test_cash_out_offered_after_a_hit_with_the_new_total() -> None:
    game = start(V, ["5S", "6H", "4D", "7C", "2H"], 1000)
    game.hit()
    assert game.can_cash_out()
    assert game.offer_amount(game.legal_actions()[-1]) == _offer((False, 11), 6, 1000)


def test_cash_out_offered_on_soft_hands() -> None:
    game = start(V, ["AS", "6H", "5D", "7C"], 1000)
    assert game.offer_amount(game.legal_actions()[-1]) == _offer((True, 16), 6, 1000)


def test_cash_out_only_on_the_main_bet_side_bets_still_settle() -> None:
    result = play(V, ["7S", "8H", "7D", "7C"], [{"bet": 1000, "side_bets": {"perfect_pairs": 100}}], ["cash-out"])
    assert hand(result)["outcome"] == "cash-out"
    assert side(result, "perfect_pairs")["result"] == "mixed"
    assert side(result, "perfect_pairs")["returned"] == 700


def test_cash_out_not_possible_after_double_split_bust_21_or_blackjack() -> None:
    assert "cash-out" not in start(V, ["AS", "8H", "KD", "7C"], 100).legal_actions()  # blackjack: no decision
    split = start(V, ["7S", "8H", "7D", "7C", "2C", "3H"], 100)
    split.split()
    assert not split.can_cash_out()
    twenty_one = start(V, ["7S", "8H", "7D", "9C", "7C"], 100)
    twenty_one.hit()  # 21 stands by itself
    assert twenty_one.phase is Phase.SETTLED and twenty_one.hands[0].outcome == "win"
    with pytest.raises(IllegalActionError, match="no decision is pending"):
        twenty_one.cash_out()


def test_cash_out_under_a_ten_escapes_a_dealer_blackjack_revealed_later() -> None:
    result = play(V, ["TS", "KH", "6D", "AC"], [1000], ["cash-out"])
    assert result["dealer"]["blackjack"]
    assert hand(result)["outcome"] == "cash-out" and hand(result)["returned"] == _offer((False, 16), 10, 1000)


def test_perfect_pairs_pays_25_12_6() -> None:
    bet = {"bet": 100, "side_bets": {"perfect_pairs": 10}}
    for second, returned in (("8S", 260), ("8C", 130), ("8D", 70), ("7D", 0)):
        result = play(V, ["8S", "9H", second, "TC"], [bet], ["stand"])
        assert side(result, "perfect_pairs")["returned"] == returned, second


def test_21_plus_3_pays_100_40_30_10_5() -> None:
    bet = {"bet": 100, "side_bets": {"21+3": 10}}
    cases = {("QH", "QH", "QH"): 1010, ("TD", "JD", "QD"): 410, ("KS", "KH", "KD"): 310,
             ("2S", "3C", "4H"): 110, ("2C", "6C", "TC"): 60, ("2C", "6C", "TD"): 0}
    for (first, up, second), returned in cases.items():
        result = play(V, [first, up, second, "7S", "5S", "5H", "5D"], [bet], ["stand"])
        assert side(result, "21+3")["returned"] == returned, (first, up, second)


def test_side_bets_win_whatever_happens_to_the_main_bet() -> None:
    result = play(V, ["8S", "KH", "8S", "AC"], [{"bet": 100, "side_bets": {"perfect_pairs": 10}}], ["stand"])
    assert hand(result)["outcome"] == "lose" and side(result, "perfect_pairs")["returned"] == 260


def test_main_bet_is_required_to_place_side_bets() -> None:
    with pytest.raises(ScenarioError, match="side bets need a main bet"):
        play(V, ["8S", "KH", "8S", "AC"], [{"bet": 0, "side_bets": {"perfect_pairs": 10}}])
