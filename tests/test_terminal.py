"""Terminal play driven key by key, and its screens measured against an 80x24 terminal."""

import random
import re

import pytest
from rich.console import Console

from twentyone.core.betting import BetLimits
from twentyone.core.money import format_money
from twentyone.core.shoe import Shoe
from twentyone.ui.terminal import TerminalTable
from twentyone.variants import VARIANTS, builtin_rules


def table(variant: str, shoe: list[str] | None = None, balance: int = 100000, **setting: object) -> TerminalTable:
    console = Console(width=80, height=24, record=True, color_system=None, force_terminal=False)
    source = (lambda: Shoe.stacked(shoe)) if shoe else None
    return TerminalTable(builtin_rules(variant), balance, random.Random(1), console, shoe_source=source,
                         **setting)  # type: ignore[arg-type]


def press(game: TerminalTable, keys: str) -> None:
    for key in keys:
        assert game.press(key)


def screen(game: TerminalTable) -> str:
    game.console.print(game.render())
    return game.console.export_text()


def test_bet_deal_stand_and_the_balance_follows_the_round() -> None:
    game = table("classic", ["TS", "6H", "9D", "TC", "8C"])
    press(game, "bd")
    assert game.balance == 100000 - 100
    press(game, "s")
    assert game.game is not None and game.game.hands[0].outcome == "win"
    assert game.balance == 100000 + 100
    assert "Round over: won $1.00" in screen(game)


def test_illegal_key_is_refused_with_the_reason_and_changes_nothing() -> None:
    game = table("classic", ["TS", "6H", "9D", "TC", "8C"])
    press(game, "bd")
    press(game, "p")
    assert game.message.startswith("You cannot split now:") and "You can hit, stand or double down." in game.message
    assert game.balance == 100000 - 100


def test_every_bets_limits_are_shown_under_its_column() -> None:
    """The side bets' limits too, not the main bet's alone (found by a trial)."""
    game = table("multiplayer", limits=BetLimits({"main": (100, 100000), "21+3": (100, 10000),
                                                  "perfect_pairs": (500, 20000)}))
    betting = screen(game)
    assert re.search(r"Spot +Main +21\+3 +Perfect Pairs", betting)
    assert re.search(r"Limits +\$1–\$1,000 +\$1–\$100 +\$5–\$200 ", betting), betting
    # And what each pays, from the rules it is settled by (a player's trial found the paytables nowhere before a bet).
    assert "Pays  BJ 3:2 · 21+3 100/40/30/10/5:1 · Perfect Pairs 30/10/5:1" in betting, betting  # sheet 003


@pytest.mark.parametrize("width", [60, 80])
def test_every_limit_and_paytable_is_read_whole_on_a_narrow_terminal(width: int) -> None:
    """Power's five bets at 60 and 80 columns: nothing cut with an ellipsis. Before, its limits read "€1–€5,0…" at 60
    columns, and its paytables "100/35/25/8/5:…" at 80 (a terminal trial)."""
    game = table("power", currency="EUR", limits=BetLimits({"main": (100, 500000), **{name: (100, 20000) for name in (
        "any_pair", "21+3", "hot_3", "bust_it")}}))
    game.console.width = width
    betting = screen(game)
    assert "…" not in betting
    assert re.search(r"Limits +€1–€5,000 +€1–€200 ", betting), betting
    read = " ".join(" ".join(line.strip("│ ") for line in betting.splitlines()).split())  # the lines, unwrapped
    assert "Pays BJ 3:2 · Any Pair 20/7:1 · 21+3 100/35/25/8/5:1 · Hot 3 100/20/4/2/1:1 · Bust It 250/100/25/8/2/1:1" \
        in read, betting
    # Each bet's name with its odds on one line: wrapped as words, "· Hot 3" ended a line and its odds began the next.
    for entry in ("Any Pair 20/7:1", "21+3 100/35/25/8/5:1", "Hot 3 100/20/4/2/1:1", "Bust It 250/100/25/8/2/1:1"):
        assert any(entry in line for line in betting.splitlines()), (entry, betting)


def test_limits_and_chips_drop_a_zero_minor_part_whichever_side_the_currency_is_written() -> None:
    """"1–200 CHF", not "1.00 CHF–200.00 CHF" wrapped over three lines of its column (found by review)."""
    game = table("power", currency="CHF", limits=BetLimits({"main": (100, 500000), "any_pair": (100, 20000),
                                                            "21+3": (100, 20000), "hot_3": (100, 20000),
                                                            "bust_it": (250, 20000)}))
    betting = screen(game)
    assert re.search(r"Limits +1–5,000 CHF +1–200 CHF +1–200 CHF +1–200 CHF +2.50–200 CHF ", betting), betting
    assert " 25 CHF " in betting


def test_soft_totals_shown_as_two_numbers() -> None:
    game = table("classic", ["AS", "6H", "6D", "TC", "8C"])
    press(game, "bd")
    assert "7/17" in screen(game)


def test_insurance_offer_answered_with_y() -> None:
    game = table("first-person", ["TS", "AH", "9D", "KC"])
    press(game, "bd")
    assert "Insurance for $0.50 on hand 1? [y]es [n]o" in screen(game)
    press(game, "?")
    assert game.message.startswith("Hint (EV per unit bet): no-insurance +0.000  insurance -")  # both answers
    press(game, "y")
    assert game.game is not None and game.game.dealer_blackjack
    assert game.balance == 100000  # lost 1.00, insurance paid 1.50 back on 0.50


def test_cash_out_button_shows_its_amount() -> None:
    game = table("first-person", ["TS", "8H", "4D", "7C"])
    press(game, "bd")
    assert game.game is not None
    offer = game.game.offer_amount(game.game.legal_actions()[-1])
    assert f"[c] cash-out {format_money(offer, 'USD')}" in screen(game)
    press(game, "c")
    assert game.balance == 100000 - 100 + offer


def test_a_double_the_balance_cannot_cover_is_refused() -> None:
    game = table("classic", ["5S", "6H", "6D", "TC", "8C"], balance=150)
    press(game, "bd")
    press(game, "d")
    assert "needs $1.00 and the balance is $0.50" in game.message
    assert game.game is not None and game.game.hands[0].stake == 100


def test_chips_side_bets_undo_x2_and_rebet() -> None:
    game = table("first-person", ["TS", "6H", "9D", "TC", "8C"] * 2)
    press(game, "bcb")  # 1.00 then a 5.00 chip on spot 1
    assert game.slip.total == 600
    press(game, "p")  # Perfect Pairs with the 5.00 chip
    press(game, "u")
    assert game.slip.total == 600
    press(game, "x")
    assert game.slip.total == 1200
    press(game, "ds")
    press(game, "r")
    assert game.slip.total == 1200


def test_the_selected_chip_stays_selected_for_the_next_round() -> None:
    game = table("classic", ["TS", "6H", "9D", "TC", "8C"] * 2, balance=1000)
    press(game, "cb")  # the 5.00 chip on spot 1
    press(game, "ds")  # 19 against the dealer's 24: won, balance 15.00
    assert game.balance == 1500 and game.slip.chip == 500
    press(game, "bds")  # the next round's bet is one 5.00 chip again
    assert game.balance == 2000
    poor = table("classic", ["TS", "TH", "7D", "KC"], balance=600)
    press(poor, "cb")
    press(poor, "ds")  # 17 against 20, lost: 1.00 left, so the largest chip it covers is selected
    assert poor.balance == 100 and poor.slip.chip == 100


def test_bet_refusals_write_their_amounts_as_money() -> None:
    game = table("classic", balance=250)
    press(game, "bbb")
    assert game.message == "Your bets of $2.00 leave $0.50 of your balance: not enough for another $1.00."
    press(game, "x")
    assert game.message == "Doubling every bet needs $4.00 but the balance is $2.50."


def test_side_bet_without_a_main_bet_is_refused() -> None:
    game = table("first-person")
    press(game, "p")
    assert "needs a main bet" in game.message


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_screen_fits_80_by_24(variant: str) -> None:
    rules = builtin_rules(variant)
    game = table(variant, balance=10**7)
    for spot in range(1, rules.deal.hands_per_player + 1):
        press(game, f"{spot}b")
        for key in ("p", "a", "t", "o", "k"):
            if key in game._side_keys():
                press(game, key)
    frames = [game.render()]
    press(game, "d")
    frames.append(game.render())
    for frame in frames:
        lines = game.console.render_lines(frame, game.console.options, pad=False)
        assert len(lines) <= 23, variant  # one line left for the cursor
        assert all(sum(segment.cell_length for segment in line) <= 80 for line in lines)


def test_question_mark_shows_the_ev_of_each_legal_action_best_first() -> None:
    game = table("power", ["8S", "KH", "3D", "7C", "5S"])
    press(game, "bd?")
    assert game.message.startswith("Hint (EV per unit bet): hit ")
    for action in ("stand", "double", "triple", "quadruple"):
        assert action in game.message
    assert game.balance == 100000 - 100  # a hint changes nothing


def test_input_ending_mid_round_stands_the_hand_and_settles_it() -> None:
    game = table("classic", ["TS", "6H", "9D", "TC", "8C"])
    game.run(iter("bd"))
    assert game.game is not None and game.game.hands[0].outcome == "win"
    assert game.balance == 100000 + 100 and game.rounds == 1
    assert "The input ended mid-round: 1 open hand stood, as the server does" in game.message
    assert "Goodbye. Final balance $1,001.00 after 1 round." in game.console.export_text()


def test_quitting_mid_round_declines_the_offer_then_stands_every_hand() -> None:
    game = table("first-person", ["TS", "9S", "AH", "9D", "8D", "7C"])
    game.run(iter("b2bdq"))  # two hands: 19 and 17 against an Ace up; insurance offered on each
    assert game.game is not None
    assert [hand.outcome for hand in game.game.hands] == ["win", "lose"]  # dealer A7 stands on 18
    assert game.balance == 100000 - 200 + 200 and game.rounds == 1
    assert game.message.startswith("You quit mid-round: 2 open hands stood and 2 offers declined")


def test_ctrl_c_mid_round_settles_the_round_and_says_goodbye_as_q_does() -> None:
    """Before, Ctrl-C left the round unsettled with the screen frozen and no word (a trial of a terminal player)."""
    def keys_then_ctrl_c():  # type: ignore[no-untyped-def]
        yield from "bd"
        raise KeyboardInterrupt

    game = table("classic", ["TS", "6H", "9D", "TC", "8C"])
    game.run(keys_then_ctrl_c())
    assert game.game is not None and game.game.hands[0].outcome == "win" and game.rounds == 1
    assert game.balance == 100000 + 100
    assert game.message.startswith("You quit (Ctrl-C) mid-round: 1 open hand stood")
    assert "Goodbye. Final balance $1,001.00 after 1 round." in game.console.export_text()


def test_quitting_between_rounds_settles_nothing() -> None:
    game = table("classic", ["TS", "6H", "9D", "TC", "8C"])
    game.run(iter("bdsq"))
    assert game.rounds == 1 and game.balance == 100000 + 100
    assert "mid-round" not in game.message


def test_every_amount_is_in_the_tables_currency() -> None:
    game = table("single-deck", ["TS", "8H", "9D", "TC", "KC"], currency="GBP", chips=(2500, 10000),
                 limits=BetLimits({"main": (2500, 5000)}))
    betting = screen(game)
    assert "Balance £1,000.00" in betting and "£25 " in betting and "£100 " in betting
    press(game, "b")  # the bet on the table is said beside the balance, as the web page says it
    assert "Balance £975.00 (£25.00 on the table)" in screen(game)
    press(game, "u")
    assert re.search(r"Limits +£25–£50 ", betting)
    press(game, "bb")
    press(game, "b")
    assert game.message == "The maximum bet is £50.00 on this spot."
    press(game, "ds")
    assert game.message == "Round over: won £50.00."
    assert "win +£50.00" in screen(game)


def test_side_bets_and_insurance_are_told_in_words_with_what_they_won() -> None:
    game = table("power", ["8S", "6H", "KD", "6D", "2C", "KC"])
    press(game, "bkad")  # main, Bust It and Any Pair, 1.00 each
    press(game, "s")  # 18 stands; the dealer draws 6 6 2 K: bust with 4 cards
    text = screen(game)
    assert "Bust It #1: dealer busts with 4 cards, +$2.00" in text
    assert "Any Pair #1: no win, −$1.00" in text
    assert "win +$1.00" in text and game.message == "Round over: won $2.00."
    insured = table("first-person", ["TS", "AH", "9D", "KC"])
    press(insured, "bdy")
    assert "Insurance #1: dealer blackjack, +$1.00" in screen(insured)


def test_a_push_reads_even() -> None:
    game = table("classic", ["TS", "9H", "8D", "9C"])
    press(game, "bds")
    assert game.message == "Round over: even." and "push even" in screen(game)


@pytest.mark.parametrize("variant", ["classic", "first-person", "multiplayer", "power"])
def test_the_hole_card_is_not_on_the_screen_until_it_is_turned(variant: str) -> None:
    """The terminal draws from the player's view of the round: the hole card shows as a back, not its face."""
    shoe = {"multiplayer": ["2S", "QH", "3D", "7C", "5C", "4S"],  # first card, hole, second card, up
            "power": ["2S", "7C", "3D", "QH", "5C", "4S"]}.get(variant, ["2S", "7C", "3D", "QH", "5C", "4S"])
    game = table(variant, shoe)
    press(game, "bd")
    assert game.game is not None and game.game.phase == "player-turns"
    shown = screen(game)
    assert "Q♥" not in shown and "QH" not in shown
    press(game, "s")
    assert "Q♥" in screen(game)  # turned over once the player is done


def test_a_hole_card_dealt_first_turns_over_in_place() -> None:
    """Multiplayer deals the dealer's hole card before the up card: the back is drawn left of the up card, where the
    card turns over, so the up card stays where it was (drawn after it, the hole card took its place)."""
    game = table("multiplayer", ["2S", "QH", "3D", "7C", "5C", "4S"])
    press(game, "bd")
    assert dealer_line(game).index("7♣") > dealer_line(game).index("▒")
    press(game, "s")
    assert dealer_line(game).index("Q♥") < dealer_line(game).index("7♣")


def dealer_line(game: TerminalTable) -> str:
    """The dealer's cards as the screen shows them now (the console records every screen: the last one's)."""
    return [line for line in screen(game).splitlines() if "Dealer  " in line][-1]


def test_insurance_taken_at_single_deck_is_on_the_screen_until_it_settles_with_the_hands() -> None:
    """Single deck does not peek: insurance taken is settled with the hands, and until then the local table said
    nothing of it, though the balance had paid for it (a trial of a terminal player; the server's client showed it)."""
    game = table("single-deck", ["TS", "AH", "9D", "7C", "TD"])
    press(game, "bd")
    assert "Insurance for $0.50 on hand 1? [y]es [n]o" in screen(game)
    press(game, "y")
    assert game.game is not None and game.game.phase == "player-turns"
    assert "Insurance #1: taken, $0.50, paid 2:1 on a dealer blackjack" in screen(game)
    press(game, "s")  # the dealer's A 7 stands on 18: no blackjack, the insurance lost, the 19 wins
    text = screen(game)
    assert "Insurance #1: no dealer blackjack, −$0.50" in text and "taken" not in text


def test_question_mark_while_betting_names_each_side_bets_paying_hands() -> None:
    """The pays line gives the odds alone ("Bust It 250/100/25/8/2/1:1"): nothing said which hand paid what (a trial
    of a terminal player). ``?`` while betting names them, from the rules' own paytables (sheet 004's)."""
    game = table("power")
    assert "[?] paytables" in screen(game)
    press(game, "?")
    assert game.message == (
        "Any Pair: suited pair 20:1, pair 7:1 · 21+3: suited trips 100:1, straight flush 35:1, three of a kind 25:1, "
        "straight 8:1, flush 5:1 · Hot 3: 7-7-7 100:1, suited 21 20:1, total 21 4:1, total 20 2:1, total 19 1:1 · "
        "Bust It: dealer busts with 8 or more cards 250:1, dealer busts with 7 cards 100:1, dealer busts with 6 cards "
        "25:1, dealer busts with 5 cards 8:1, dealer busts with 4 cards 2:1, dealer busts with 3 cards 1:1"), \
        game.message
    assert "[?] paytables" not in screen(table("classic"))  # no side bets there
