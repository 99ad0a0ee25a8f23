"""Power Blackjack (seed 004): one test per rule of the sheet."""

from typing import Any

import pytest

from helpers import play, side, start
from twentyone.core.operations import ActionTaken, Settled
from twentyone.core.round import HandBet, IllegalActionError, Phase, Round
from twentyone.core.shoe import Shoe
from twentyone.scenario import ScenarioError, run_scenario
from twentyone.variants import builtin_rules

V = "power"


def common(shoe: list[str], players: list[dict[str, Any]]) -> dict[str, Any]:
    return run_scenario({"variant": V, "shoe": shoe, "players": players})


def power_round(shoe: list[str], *players: str) -> Round:
    """A power round dealt from ``shoe`` to ``players``, each betting 100."""
    rules = builtin_rules(V)
    game = Round(rules, Shoe.stacked(shoe, rules.shoe.composition))
    for name in players:
        game.place_bets(name, [HandBet(100)])
    game.deal()
    return game


def test_eight_decks_with_every_9_and_10_removed() -> None:
    assert builtin_rules(V).shoe.composition.size == 352
    with pytest.raises(ScenarioError, match="every 9 is removed"):
        play(V, ["9S", "KH", "7D", "8C"], [100])
    with pytest.raises(ScenarioError, match="every T is removed"):
        play(V, ["TS", "KH", "7D", "8C"], [100])


def test_live_shoe_with_a_cut_card() -> None:
    shoe = builtin_rules(V).shoe
    assert shoe.reshuffle == "cut-card" and shoe.cut_card is not None


def test_double_triple_quadruple_any_two_initial_cards() -> None:
    for action, stake in (("double", 200), ("triple", 300), ("quadruple", 400)):
        result = play(V, ["5S", "7H", "6D", "8C", "KC", "JD"], [100], [action])
        assert result["hands"][0]["stake"] == stake and len(result["hands"][0]["cards"]) == 3


def test_double_triple_quadruple_after_split() -> None:
    result = play(V, ["5S", "7H", "5D", "8C", "6C", "3H", "KC", "JD", "2S"], [100],
                  ["split", "triple", "quadruple"])
    assert [h["stake"] for h in result["hands"]] == [300, 400]
    assert [h["cards"] for h in result["hands"]] == [["5S", "6C", "KC"], ["5D", "3H", "JD"]]


def test_no_double_on_split_aces() -> None:
    game = start(V, ["AS", "7H", "AD", "8C", "AC", "AH", "KS"], 100)
    assert game.can_split()
    game.split()
    assert game.phase is Phase.SETTLED  # one card each, no decision


def test_split_initial_cards_of_equal_value_only_once() -> None:
    game = start(V, ["JS", "7H", "KD", "8C", "QC", "2H"], 100)
    game.split()
    assert not game.can_split()


def test_single_card_dealt_to_each_split_ace() -> None:
    result = play(V, ["AS", "7H", "AD", "8C", "5C", "6H", "3S"], [100], ["split"])
    assert [len(h["cards"]) for h in result["hands"]] == [2, 2]


def test_dealer_checks_for_blackjack_on_j_q_k_and_ace() -> None:
    for up in ("JH", "QH", "KH"):
        game = start(V, ["8S", up, "7D", "AC"], 100)
        assert game.phase is Phase.SETTLED and game.dealer_blackjack, up
    game = start(V, ["8S", "AH", "7D", "KC"], 100)
    game.decline_insurance()
    assert game.phase is Phase.SETTLED and game.dealer_blackjack


def test_dealer_checks_face_card_and_play_continues_without_blackjack() -> None:
    game = start(V, ["8S", "KH", "7D", "6C"], 100)
    assert game.phase is Phase.PLAYER_TURNS


def test_insurance_offered_under_an_ace_even_to_a_blackjack() -> None:
    game = start(V, ["AS", "AH", "KD", "6C"], 100)
    assert game.decision().kind == "insurance"  # type: ignore[union-attr]


def test_both_blackjack_push() -> None:
    result = play(V, ["AS", "KH", "KD", "AC"], [100])
    assert result["hands"][0]["outcome"] == "push"


def test_no_decision_offered_on_a_soft_21() -> None:
    game = start(V, ["AS", "7H", "5D", "8C", "5C", "KD"], 100)
    game.hit()
    assert game.hands[0].value == (21, True)
    assert game.phase is Phase.SETTLED


def test_common_draw_every_player_has_the_same_first_two_cards_and_dealer() -> None:
    result = common(["8S", "7H", "5D", "KC", "2C", "3C", "4C"],
                    [{"name": "ann", "hands": [{"bet": 100}], "decisions": ["stand"]},
                     {"name": "bob", "hands": [{"bet": 300}], "decisions": ["stand"]}])
    assert [h["cards"][:2] for h in result["hands"]] == [["8S", "5D"], ["8S", "5D"]]
    assert [h["seat"] for h in result["hands"]] == [1, 2]


def test_common_draw_kth_drawn_card_is_the_kth_card_of_one_sequence() -> None:
    result = common(["5S", "7H", "4D", "6C", "2C", "3C", "8C", "QS"],
                    [{"name": "ann", "hands": [{"bet": 100}], "decisions": ["hit", "hit", "stand"]},
                     {"name": "bob", "hands": [{"bet": 100}], "decisions": ["hit", "stand"]}])
    assert result["hands"][0]["cards"] == ["5S", "4D", "2C", "3C"]
    assert result["hands"][1]["cards"] == ["5S", "4D", "2C"]
    # The dealer's draws come after the longest player's use of the sequence.
    assert result["dealer"]["cards"] == ["7H", "6C", "8C"]


def test_common_draw_counts_split_hands_in_the_order_drawn() -> None:
    result = common(["6S", "7H", "6D", "5H", "2C", "3C", "4C", "5C", "QS"],
                    [{"name": "ann", "hands": [{"bet": 100}], "decisions": ["split", "hit", "stand", "stand"]},
                     {"name": "bob", "hands": [{"bet": 100}], "decisions": ["hit", "stand"]}])
    ann = [h["cards"] for h in result["hands"] if h["player"] == "ann"]
    assert ann == [["6S", "2C", "4C"], ["6D", "3C"]]
    assert [h["cards"] for h in result["hands"] if h["player"] == "bob"] == [["6S", "6D", "2C"]]
    assert result["dealer"]["cards"] == ["7H", "5H", "5C"]


def test_unlimited_players() -> None:
    rules = builtin_rules(V)
    game = Round(rules, Shoe.stacked(["8S", "7H", "5D", "KC"]))
    for index in range(200):
        game.place_bets(f"p{index}", [HandBet(100)])
    game.deal()
    assert len(game.hands) == 200


def test_any_pair_suited_20_to_1_any_7_to_1() -> None:
    bet = {"bet": 100, "side_bets": {"any_pair": 10}}
    for second, returned in (("8S", 210), ("8H", 80), ("7S", 0)):
        assert side(play(V, ["8S", "KH", second, "7C"], [bet], ["stand"]), "any_pair")["returned"] == returned


def test_21_plus_3_paytable_100_35_25_8_5_and_straights_do_not_jump_removed_ranks() -> None:
    bet = {"bet": 100, "side_bets": {"21+3": 10}}
    cases = {("QH", "QH", "QH"): 1010, ("JD", "QD", "KD"): 360, ("KS", "KH", "KD"): 260,
             ("2S", "3C", "4H"): 90, ("2C", "6C", "8C"): 60, ("8S", "JC", "QH"): 0, ("QS", "KC", "AH"): 90}
    for (first, up, second), returned in cases.items():
        decisions = [] if {first[0], second[0]} == {"Q", "A"} else ["stand"]  # a blackjack has no decision
        result = play(V, [first, up, second, "7S", "5S", "5H", "5D", "6C"], [bet], decisions)
        assert side(result, "21+3")["returned"] == returned, (first, up, second)


def test_hot_3_pays_777_100_suited_21_20_21_4_20_2_19_1() -> None:
    bet = {"bet": 100, "side_bets": {"hot_3": 10}}
    cases = {("7H", "7C", "7D"): 1010, ("8D", "KD", "3D"): 210, ("8H", "KS", "3D"): 50,
             ("8H", "QS", "2D"): 30, ("JH", "7S", "2D"): 20, ("AH", "8S", "KD"): 20, ("5H", "6S", "3D"): 0}
    for (first, up, second), returned in cases.items():
        result = play(V, [first, up, second, "4S", "3S", "3H", "3C", "2C", "2S", "2H"], [bet],
                      [] if first == "AH" else ["stand"])
        assert side(result, "hot_3")["returned"] == returned, (first, up, second)


def test_hot_3_aces_count_1_or_11_whichever_is_better() -> None:
    result = play(V, ["AH", "KS", "QD", "4C"], [{"bet": 100, "side_bets": {"hot_3": 10}}], [])
    assert side(result, "hot_3")["result"] == "21"  # A + K + Q = 21 with the Ace as 1


def test_bust_it_pays_by_the_number_of_dealer_cards() -> None:
    bet = {"bet": 100, "side_bets": {"bust_it": 10}}
    three = play(V, ["8S", "6H", "KD", "JC", "QH"], [bet], ["stand"])
    assert three["dealer"]["cards"] == ["6H", "JC", "QH"] and side(three, "bust_it")["result"] == "bust_3"
    assert side(three, "bust_it")["returned"] == 20
    five = play(V, ["8S", "2H", "KD", "3C", "2C", "4D", "KS"], [bet], ["stand"])
    assert five["dealer"]["total"] == 21 and side(five, "bust_it")["result"] == "lose"
    eight = play(V, ["8S", "2H", "KD", "2C", "2D", "2S", "3H", "3C", "2H", "KH"], [bet], ["stand"])
    assert len(eight["dealer"]["cards"]) == 8 and side(eight, "bust_it")["result"] == "bust_8_plus"
    assert side(eight, "bust_it")["returned"] == 2510


def test_bust_it_is_pushed_when_the_player_has_blackjack() -> None:
    result = play(V, ["AS", "6H", "KD", "JC", "QH"], [{"bet": 100, "side_bets": {"bust_it": 10}}])
    assert side(result, "bust_it")["result"] == "push" and side(result, "bust_it")["returned"] == 10


def test_bust_it_settled_even_when_every_main_hand_busted() -> None:
    result = play(V, ["KS", "6H", "QD", "JC", "8S", "QH"], [{"bet": 100, "side_bets": {"bust_it": 10}}], ["hit"])
    assert result["hands"][0]["outcome"] == "bust"
    assert result["dealer"]["cards"] == ["6H", "JC", "QH"] and side(result, "bust_it")["result"] == "bust_3"


def test_bust_it_loses_to_a_peeked_dealer_blackjack() -> None:
    result = play(V, ["8S", "KH", "7D", "AC"], [{"bet": 100, "side_bets": {"bust_it": 10}}])
    assert side(result, "bust_it")["result"] == "lose"


def test_only_the_multipliers_of_the_rules_are_offered() -> None:
    with pytest.raises(IllegalActionError, match="only double"):
        start("classic", ["5S", "7H", "6D", "8C", "KC"], 100).triple()


def test_common_draw_players_move_in_lockstep_and_the_order_within_a_step_does_not_matter() -> None:
    """Power's common draw: a player's k-th card is the k-th card of one sequence. As at the live table,
    common card k is dealt once every player still deciding has chosen at step k; within a step players
    choose in any order, and any order deals the same cards and settles the same money."""
    rules = builtin_rules(V)
    shoe = ["5S", "7H", "6D", "8C", "4C", "KD", "2H", "3S", "QC"]
    plans = {"ann": ["hit", "stand"], "bob": ["stand"], "cy": ["hit", "hit"]}

    def run(steps: list[list[str]], lockstep: bool = True) -> Round:
        game = Round(rules, Shoe.stacked(shoe, rules.shoe.composition), lockstep=lockstep)
        for name in plans:
            game.place_bets(name, [HandBet(100)])
        game.deal()
        queues = {name: list(actions) for name, actions in plans.items()}
        for step in steps:
            for name in step:
                assert game.decision(name) is not None, name  # deciding at this step, whoever came first
                game.act(queues[name].pop(0), name)
        assert game.phase is Phase.SETTLED
        return game

    in_seat_order = run([["ann", "bob", "cy"], ["ann", "cy"]])
    last_first = run([["cy", "bob", "ann"], ["cy", "ann"]])
    # A round recorded before lockstep (each player at their own pace) replays to the same cards and money.
    own_pace = run([["cy", "cy", "bob", "ann", "ann"]], lockstep=False)
    for other in (last_first, own_pace):
        assert [h.cards for h in in_seat_order.hands] == [h.cards for h in other.hands]
        assert [h.returned for h in in_seat_order.hands] == [h.returned for h in other.hands]
        assert in_seat_order.dealer_cards == other.dealer_cards
    # Both players hitting first take the same card: the first of the common sequence.
    assert in_seat_order.hands[0].cards[2] == in_seat_order.hands[2].cards[2]


def test_common_draw_deals_no_card_until_everyone_still_deciding_has_chosen_at_its_step() -> None:
    """A second account (or a friend) who hits first learns nothing: the card stays in the shoe, seen by
    nobody, the house included, until the last player still deciding has chosen; a player who has chosen
    waits, and the round's step (its one decision clock) moves only when the card is dealt."""
    game = power_round(["5S", "7H", "6D", "8C", "4C", "KD", "2H"], "ann", "scout", "cy")
    step = game.step
    game.act("hit", "scout")
    with pytest.raises(IllegalActionError, match="no decision is pending for player 'scout'"):
        game.act("hit", "scout")  # waiting for the card chosen: no second choice before the others'
    game.act("hit", "ann")
    everyone = [game.view(name) for name in ("ann", "scout", "cy", None)]
    assert not any("4C" in repr(view) for view in everyone) and game.step == step
    assert game.decision("cy") is not None and game.decision("ann") is None
    dealt = game.act("stand", "cy")
    assert [str(op.card) for op in dealt if hasattr(op, "card")] == ["4C", "4C"]  # ann's and the scout's
    assert game.step == step + 1 and game.decision("ann") is not None and game.decision("scout") is not None


def test_common_draw_split_hands_both_get_their_card_before_either_is_played() -> None:
    game = power_round(["6S", "7H", "6D", "5H", "2C", "3C", "4C"], "ann", "bob")
    game.act("split", "ann")
    game.act("hit", "bob")  # takes common card 0 with ann's first hand; card 1 waits for bob's next choice
    assert game.decision("ann") is None and [len(h.cards) for h in game.hands] == [2, 1, 3]
    game.act("stand", "bob")
    assert [[str(c) for c in h.cards] for h in game.hands if h.player == "ann"] == [["6S", "2C"], ["6D", "3C"]]
    assert game.decision("ann") is not None


def test_players_at_a_table_without_common_draw_still_decide_in_turn() -> None:
    rules = builtin_rules("multiplayer")
    game = Round(rules, Shoe.stacked(["5S", "7H", "6D", "8C", "4C", "KD", "2H", "3S", "QC"],
                                     rules.shoe.composition))
    game.place_bets("ann", [HandBet(100)])
    game.place_bets("bob", [HandBet(100)])
    game.deal()
    assert game.decision("bob") is None and game.decision("ann") is not None
    with pytest.raises(IllegalActionError, match="no decision is pending for player 'bob'"):
        game.act("stand", "bob")


def test_common_draw_withholds_another_players_insurance_until_the_round_settles() -> None:
    """Taking insurance is a decision like any other: its result (lost, at the peek) is the taker's alone
    until the round settles, though the step that ends with the peek has completed for everyone."""
    game = power_round(["5S", "AH", "6D", "8C", "4C", "KD", "2H"], "ann", "bob")
    game.act("insurance", "ann")
    game.act("no-insurance", "bob")  # the offers are answered: the dealer peeks, ann's insurance is lost
    assert [op.player for op in game.settlements] == ["ann"]
    bobs = game.view("bob")
    assert not bobs.settlements
    assert not [op for op in bobs.operations if isinstance(op, ActionTaken | Settled) and op.player == "ann"]
    assert [op.player for op in game.view("ann").settlements] == ["ann"]
