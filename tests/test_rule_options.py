"""Rule settings beyond the five seeds, as a rules file can set them."""

from typing import Any

import pytest

from twentyone.core.round import HandBet, IllegalActionError, Phase, Round
from twentyone.core.rules import Rules, rules_from_toml
from twentyone.core.shoe import Shoe

BASE = 'id = "house"\nname = "House"\n[shoe]\ndecks = 8\n'


def rules(**sections: dict[str, Any]) -> Rules:
    text = BASE
    for section, values in sections.items():
        text += f"[{section}]\n"
        for key, value in values.items():
            rendered = str(value).lower() if isinstance(value, bool) else repr(value).replace("'", '"')
            text += f"{key} = {rendered}\n"
    return rules_from_toml(text)


def deal(game_rules: Rules, shoe: list[str], *bets: int) -> Round:
    game = Round(game_rules, Shoe.stacked(shoe))
    game.place_bets("you", [HandBet(bet) for bet in bets])
    game.deal()
    return game


def test_dealer_hits_soft_17() -> None:
    game = deal(rules(dealer={"hits_soft_17": True}), ["TS", "6H", "8D", "AC", "3C"], 100)
    game.stand()
    assert [str(c) for c in game.dealer_cards] == ["6H", "AC", "3C"]


def test_peek_under_ace_and_ten() -> None:
    game = deal(rules(dealer={"peek": "ace-ten"}), ["TS", "KH", "8D", "AC"], 100)
    assert game.phase is Phase.SETTLED and game.dealer_blackjack


def test_no_peek_dealer_blackjack_takes_original_bets_only() -> None:
    game_rules = rules(dealer={"peek": "none", "no_peek_blackjack_takes": "original"}, double={"after_split": True})
    game = deal(game_rules, ["8S", "KH", "8D", "AC", "3C", "2H", "5D", "7S"], 100)
    game.split()
    game.double()
    game.double()
    assert game.dealer_blackjack
    # The original bet is lost; the split bet and both doubles come back.
    assert [(h.stake, h.returned) for h in game.hands] == [(200, 100), (200, 200)]


def test_late_surrender_returns_half_on_the_first_two_cards_only() -> None:
    game = deal(rules(player={"surrender": "late"}), ["TS", "TH", "6D", "7C", "5S"], 101)
    assert "surrender" in game.legal_actions()
    game.surrender()
    assert game.hands[0].outcome == "surrender" and game.hands[0].returned == 50
    hit_first = deal(rules(player={"surrender": "late"}), ["2S", "TH", "3D", "7C", "5S"], 100)
    hit_first.hit()
    with pytest.raises(IllegalActionError, match="first decision"):
        hit_first.surrender()


def test_late_surrender_comes_after_the_peek() -> None:
    game = deal(rules(player={"surrender": "late"}), ["TS", "KH", "6D", "AC"], 100)
    assert game.phase is Phase.SETTLED and game.hands[0].outcome == "lose"


def test_early_surrender_is_offered_before_the_peek() -> None:
    game = deal(rules(player={"surrender": "early"}), ["TS", "KH", "6D", "AC"], 100)
    assert game.legal_actions() == ("surrender", "no-surrender")
    game.surrender()
    assert game.dealer_blackjack and game.hands[0].returned == 50


def test_resplit_up_to_four_hands_and_resplit_aces() -> None:
    game_rules = rules(split={"max_hands": 4, "resplit_aces": True})
    game = deal(game_rules, ["8S", "7H", "8D", "TC", "8C", "2H", "3D", "KS", "9S"], 100)
    game.split()
    game.split()
    assert [[str(c) for c in h.cards] for h in game.hands] == [["8S", "3D"], ["8C", "KS"], ["8D", "2H"]]
    aces = deal(game_rules, ["AS", "7H", "AD", "TC", "AC", "5H", "6D", "KS"], 100)
    aces.split()
    assert aces.legal_actions() == ("stand", "split")
    aces.split()
    assert [len(h.cards) for h in aces.hands] == [2, 2, 2]


def test_split_aces_may_hit_when_the_rules_say_so() -> None:
    game = deal(rules(split={"aces_one_card": False}), ["AS", "7H", "AD", "TC", "2C", "3H", "4S"], 100)
    game.split()
    assert game.can_hit() and game.can_double() is False  # no double after split by default


def test_split_by_identical_rank_only() -> None:
    assert not deal(rules(split={"match": "rank"}), ["KS", "7H", "QD", "TC"], 100).can_split()
    assert deal(rules(split={"match": "rank"}), ["KS", "7H", "KD", "TC"], 100).can_split()


def test_double_on_10_or_11_only() -> None:
    game_rules = rules(double={"totals": "10-11"})
    assert not deal(game_rules, ["4S", "7H", "5D", "TC"], 100).can_double()
    assert deal(game_rules, ["4S", "7H", "6D", "TC"], 100).can_double()


def test_six_to_five_blackjack_rounds_down() -> None:
    game = deal(rules(player={"blackjack_pays": "6:5"}), ["AS", "7H", "KD", "TC"], 101)
    assert game.hands[0].returned == 101 + 121


def test_hitting_a_hard_21_is_possible_when_auto_stand_is_off() -> None:
    game = deal(rules(player={"auto_stand": "none"}), ["7S", "7H", "7D", "TC", "7C", "2H"], 100)
    game.hit()
    assert game.hands[0].value.total == 21 and game.can_hit()


def test_soft_21_only_auto_stand_leaves_a_hard_21_decision() -> None:
    game = deal(rules(player={"auto_stand": "soft-21"}), ["7S", "7H", "7D", "TC", "7C", "2H"], 100)
    game.hit()
    assert game.decision() is not None


def test_insurance_cannot_be_offered_on_a_one_unit_bet() -> None:
    game = deal(rules(), ["TS", "AH", "6D", "7C", "5S"], 1)
    assert game.decision().kind == "play"  # type: ignore[union-attr]
