"""Multiplayer 8-deck table (seed 003): one test per rule of the sheet."""

from typing import Any

import pytest

from helpers import side
from twentyone.core.operations import Action, CardDealt
from twentyone.core.round import ACTION_WORDS, BetError, HandBet, IllegalActionError, Phase, Round
from twentyone.core.shoe import Shoe
from twentyone.scenario import run_scenario
from twentyone.variants import builtin_rules

V = "multiplayer"


def table(shoe: list[str], *players: tuple[str, int]) -> Round:
    rules = builtin_rules(V)
    game = Round(rules, Shoe.stacked(shoe, rules.shoe.composition))
    for name, bet in players:
        game.place_bets(name, [HandBet(bet)])
    game.deal()
    return game


def scenario(shoe: list[str], players: list[dict[str, Any]]) -> dict[str, Any]:
    return run_scenario({"variant": V, "shoe": shoe, "players": players})


def test_eight_deck_shoe_reshuffled_every_round() -> None:
    rules = builtin_rules(V)
    assert rules.shoe.decks == 8 and rules.shoe.reshuffle == "every-round"


def test_dealt_left_to_right_one_face_down_dealer_card_before_second_cards_up_card_last() -> None:
    game = table(["2S", "3S", "KH", "4S", "5S", "7D"], ("ann", 100), ("bob", 100))
    dealt = [(str(op.card), op.seat, op.face_up) for op in game.operations if isinstance(op, CardDealt)]
    assert dealt == [("2S", 1, True), ("3S", 2, True), ("KH", 0, False), ("4S", 1, True), ("5S", 2, True),
                     ("7D", 0, True)]
    assert str(game.dealer_up) == "7D" and [str(c) for c in game.dealer_cards] == ["7D"]


def test_player_closest_to_the_dealers_left_acts_first_then_left_to_right() -> None:
    game = table(["TS", "9S", "7H", "6S", "8S", "8D", "2C"], ("ann", 100), ("bob", 100))
    assert game.decision().player == "ann"  # type: ignore[union-attr]
    game.stand()
    assert game.decision().player == "bob"  # type: ignore[union-attr]


def test_hit_until_stand_or_bust() -> None:
    result = scenario(["5S", "7H", "4S", "8D", "2C", "3C", "9C"], [{"name": "ann", "hands": [{"bet": 100}],
                                                              "decisions": ["hit", "hit", "hit"]}])
    assert result["hands"][0]["cards"] == ["5S", "4S", "2C", "3C", "9C"]
    assert result["hands"][0]["outcome"] == "bust"


def test_double_down_adds_an_equal_bet_one_card_then_stands() -> None:
    result = scenario(["6S", "TH", "5S", "7D", "KC"], [{"hands": [{"bet": 100}], "decisions": ["double"]}])
    assert result["hands"][0]["stake"] == 200 and result["hands"][0]["outcome"] == "win"


def test_split_hands_each_get_one_card_then_first_hand_played_before_second() -> None:
    game = table(["8S", "TH", "8D", "9D", "2C", "3C", "TC"], ("ann", 100))
    game.split()
    assert [[str(c) for c in h.cards] for h in game.hands] == [["8S", "2C"], ["8D", "3C"]]
    assert game.decision().hand == 1  # type: ignore[union-attr]


def test_split_hands_may_hit_aces_included() -> None:
    game = table(["AS", "TH", "AD", "9D", "2C", "3C", "5C"], ("ann", 100))
    game.split()
    assert game.can_hit()
    game.hit()
    assert [str(c) for c in game.hands[0].cards] == ["AS", "2C", "5C"]


def test_no_double_down_on_split_hands() -> None:
    game = table(["5S", "TH", "5D", "9D", "6C", "4C"], ("ann", 100))
    game.split()
    with pytest.raises(IllegalActionError, match="no double after split"):
        game.double()


def test_no_re_splitting() -> None:
    game = table(["8S", "TH", "8D", "9D", "8C", "8H"], ("ann", 100))
    game.split()
    assert not game.can_split()


def test_winning_hand_pays_1_to_1_not_3_to_2() -> None:
    result = scenario(["TS", "9H", "9S", "8D"], [{"hands": [{"bet": 100}], "decisions": ["stand"]}])
    assert result["hands"][0]["outcome"] == "win" and result["hands"][0]["returned"] == 200


def test_blackjack_pays_3_to_2() -> None:
    result = scenario(["AS", "9H", "KS", "8D"], [{"hands": [{"bet": 100}], "decisions": []}])
    assert result["hands"][0]["outcome"] == "blackjack" and result["hands"][0]["returned"] == 250


def test_dealer_stands_on_17_and_more() -> None:
    result = scenario(["TS", "AH", "8S", "6D"], [{"hands": [{"bet": 100}], "decisions": ["stand"]}])
    assert result["dealer"]["total"] == 17 and len(result["dealer"]["cards"]) == 2


def test_insurance_under_an_ace_pays_2_to_1_when_the_dealer_has_21() -> None:
    result = scenario(["TS", "KH", "8S", "AD"], [{"hands": [{"bet": 100}], "decisions": ["insurance"]}])
    assert result["insurance"][0]["returned"] == 150 and result["hands"][0]["outcome"] == "lose"


def test_dealer_checks_the_face_down_card_under_an_ace_and_under_a_ten() -> None:
    # The sheet is silent on the ten-up peek; the chosen reading is the American hole-card game.
    game = table(["TS", "AH", "8S", "KD"], ("ann", 100))
    assert game.phase is Phase.SETTLED and game.dealer_blackjack
    assert game.hands[0].stake == 100  # no double or split was ever at risk


def test_21_plus_3_pays_flush_5_straight_10_trips_30_straight_flush_40_suited_trips_100() -> None:
    cases = {("2C", "6C", "TC"): 60, ("2S", "3C", "4H"): 110, ("KS", "KH", "KD"): 310,
             ("TD", "JD", "QD"): 410, ("QH", "QH", "QH"): 1010}
    for (first, second, up), returned in cases.items():
        result = scenario([first, "5S", second, up, "5H", "5D"],
                          [{"hands": [{"bet": 100, "side_bets": {"21+3": 10}}], "decisions": ["stand"]}])
        assert side(result, "21+3")["returned"] == returned, (first, second, up)


def test_perfect_pairs_pays_mixed_5_colored_10_perfect_30() -> None:
    for second, returned in (("8D", 60), ("8C", 110), ("8S", 310), ("9S", 0)):
        result = scenario(["8S", "TH", second, "9D"],
                          [{"hands": [{"bet": 100, "side_bets": {"perfect_pairs": 10}}], "decisions": ["stand"]}])
        assert side(result, "perfect_pairs")["returned"] == returned, second


def test_seats_at_the_table_are_limited() -> None:
    rules = builtin_rules(V)
    game = Round(rules, Shoe.stacked([]))
    for seat in range(rules.deal.seats):
        game.place_bets(f"p{seat}", [HandBet(100)])
    with pytest.raises(BetError, match="table is full"):
        game.place_bets("late", [HandBet(100)])


def test_each_players_decisions_are_consumed_in_turn() -> None:
    result = scenario(["TS", "5S", "7H", "6S", "6D", "9D", "KC", "2C", "5C"],
                      [{"name": "ann", "hands": [{"bet": 100}], "decisions": ["hit"]},
                       {"name": "bob", "hands": [{"bet": 200}], "decisions": ["hit", "stand"]}])
    assert [h["player"] for h in result["hands"]] == ["ann", "bob"]
    assert result["hands"][0]["cards"] == ["TS", "6S", "KC"]
    assert result["hands"][1]["cards"] == ["5S", "6D", "2C"]


def test_a_refused_answer_to_an_offer_this_game_never_makes_says_so() -> None:
    """Even money is not offered here, nor surrender: the refusal says the game has none, not that none is pending
    (which read as if one might come, found by a trial)."""
    game = table(["2S", "KH", "4S", "7D"], ("ann", 100))
    with pytest.raises(IllegalActionError) as even_money:
        game.act("even-money", "ann")
    assert even_money.value.plain == ("You cannot take even money now: this game has no even money. "
                                      "You can hit, stand or double down.")
    with pytest.raises(IllegalActionError) as surrender:
        game.act("surrender", "ann")
    assert surrender.value.plain.startswith("You cannot surrender now: this game has no surrender.")
    with pytest.raises(IllegalActionError) as insurance:  # it has insurance: an offer that is not pending now
        game.act("insurance", "ann")
    assert insurance.value.plain.startswith("You cannot take insurance now: no insurance offer is pending.")


def test_while_insurance_is_offered_an_answer_to_an_offer_this_game_never_makes_says_so() -> None:
    """Under the Ace, insurance waits: even money and surrender are refused because the game has neither, not because
    insurance must be answered first (found by review)."""
    game = table(["TS", "KH", "8S", "AD"], ("ann", 100))
    assert game.legal_actions("ann") == ("insurance", "no-insurance")
    for action, reason in (("even-money", "this game has no even money"), ("surrender", "this game has no surrender"),
                           ("no-surrender", "this game has no surrender"),
                           ("hit", "the insurance offer must be answered first")):
        with pytest.raises(IllegalActionError) as refused:
            game.act(action, "ann")
        assert refused.value.plain.startswith(f"You cannot {ACTION_WORDS[Action(action)]} now: {reason}. "), action


def test_the_readings_the_sheet_leaves_open_are_worth_what_docs_variants_says() -> None:
    """Sheet 003 is silent on the peek and on split aces; docs/variants.md gives what each reading is worth, and this
    computes it (an analyst's trial found the two readings, both the player's way, worth about 0.28 %)."""
    from dataclasses import replace
    from pathlib import Path

    from twentyone.analysis.game import GameAnalysis

    rules = builtin_rules(V)
    one_card = replace(rules, split=replace(rules.split, aces_one_card=True))
    peek_ace = replace(one_card, dealer=replace(one_card.dealer, peek="ace"))
    text = " ".join((Path(__file__).parents[1] / "docs" / "variants.md").read_text().split())
    figures = [f"{GameAnalysis(game).optimal_return() * 100:.4f} %" for game in (rules, one_card, peek_ace)]
    assert figures[2] == f"{GameAnalysis(builtin_rules('first-person')).optimal_return() * 100:.4f} %"
    assert (f"one card to split aces gives {figures[1]} (optimal, against {figures[0]}), and with the peek under an "
            f"Ace alone as well, {figures[2]}, first person's figure") in text, figures
