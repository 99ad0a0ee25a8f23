"""Terminal play at a server's table (``twentyone play TABLE --server URL``, ``ui/remote.py``): the keys of terminal
play, the server's deal, balance, refusals and history, and a shared table with a player who is not at a terminal."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import threading
import time
import tty
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from live import call, free_port, start_server
from rich.console import Console
from server_helpers import OPERATOR, Client, Clock, dealt_shared_round, eventually, new_guest, new_player

from twentyone.server.service import GameService
from twentyone.ui.kept_guests import KeptGuests
from twentyone.ui.remote import MIN_READ_GAP, Api, Presence, RemoteTable, ServerError, _Quit, play_at_server, sign_in
from twentyone.ui.terminal import discard_typed_ahead, is_terminal, key_waiting

# Classic: the player's 10 and 9, the dealer's 6 and 10; the dealer draws the 8 and busts.
WIN = ["TS", "6H", "9D", "TC", "8C"]
# First person: the player's 10 and 9 against the dealer's Ace: insurance is offered; the hole card is a 7.
ACE_UP = ["TS", "AH", "9D", "7C", "5C"]


def console() -> Console:
    return Console(width=80, height=24, record=True, color_system=None, force_terminal=False)


def played(http: TestClient, table: str, keys: str) -> RemoteTable:
    return play_at_server("http://testserver", table, console=console(), keys=iter(keys), http=http)


def screen(table: RemoteTable) -> str:
    return table.console.export_text()


def me(http: TestClient, table: RemoteTable) -> Any:
    return http.get("/me", headers={"Authorization": f"Bearer {table.api.token}"}).json()


def test_a_round_is_the_servers_its_money_and_its_history(http: TestClient, service: GameService) -> None:
    service.stacked.append(WIN)
    table = played(http, "classic", "cbdsq")  # the $5 chip, a bet, the deal, stand
    shown = screen(table)
    assert "10♠ 9♦" in shown and "6♥ ▒▒" in shown  # the hole card face down while the player decides
    assert "Round over: won $5.00." in shown and "win +$5.00" in shown
    assert "Goodbye. Balance $1,005.00 after 1 round at Classic Blackjack." in shown
    assert me(http, table)["balances"]["USD"] == 100500  # the server's balance, not one the terminal kept
    history = http.get("/me/history", headers={"Authorization": f"Bearer {table.api.token}"}).json()
    [last] = history["rounds"]
    assert last["table_id"] == "classic" and last["status"] == "settled"


def test_the_servers_refusals_are_shown_in_its_words_and_change_nothing(http: TestClient) -> None:
    table = played(http, "classic", "d")  # a deal with no bet
    assert table.message.startswith("Place a main bet"), table.message
    assert me(http, table)["balances"]["USD"] == 100000 and table.round is None
    over = played(http, "classic", "cccbbbb")  # $100 chips on a $300 maximum
    assert over.message == "The maximum bet is $300.00 on this spot.", over.message
    assert over.state["slip"]["total"] == 30000



def test_the_betting_screen_says_what_each_bet_pays_as_the_server_settles_it(http: TestClient) -> None:
    """The server's paytables (``GET /tables``' ``pays``), each under its bet's column: sheet 000's Perfect Pairs and
    21+3 (a player's trial found them nowhere before a bet)."""
    shown = screen(played(http, "first-person", "q"))
    assert "Pays  BJ 3:2 · Perfect Pairs 25/12/6:1 · 21+3 100/40/30/10/5:1" in shown, shown
    assert "· [?] paytables" in shown  # wrapped onto a line of its own at 80 columns, never split
    # Which hand pays what: the odds alone did not say which of 21+3's hands paid 100 (a terminal trial).
    named = played(http, "first-person", "?q")
    assert named.message == ("Perfect Pairs: perfect pair 25:1, colored pair 12:1, mixed pair 6:1 · 21+3: suited "
                             "trips 100:1, straight flush 40:1, three of a kind 30:1, straight 10:1, flush 5:1")


def test_a_credit_made_while_betting_shows_at_the_next_bet_control(http: TestClient, operator: Client) -> None:
    """The betting screen's balance is the one each bet control was checked against: a credit made meanwhile shows
    at the next key. Before, the screen read it again only on a refusal, a deal or a round's end."""
    new_player(http, "carla")

    def keys() -> Any:
        yield "c"
        credited = operator.post("/admin/credit", {"player": "carla", "currency": "USD", "amount": 5000})
        assert credited.status_code == 200, credited.json()
        yield "b"

    table = play_at_server("http://testserver", "classic", "carla", "correct horse", console=console(), keys=keys(),
                           http=http)
    assert table.state["balance"] == 105000
    assert "Goodbye. Balance $1,050.00 after 0 rounds" in screen(table)


def test_the_balance_on_screen_is_less_the_bets_on_the_table_as_the_page_shows_it(http: TestClient,
                                                                                  service: GameService) -> None:
    """A trial of players: with $15.00 on the slip the terminal said "Balance $1,000.00" where the page said
    $985.00. Before the deal the bets are said beside the balance; in play the balance has paid them."""
    table = played(http, "classic", "bbb")
    assert "Balance $997.00 ($3.00 on the table)" in screen(table)
    service.stacked.append(WIN)  # here: the first bet control of the guest above shuffles the table's shoe
    table = played(http, "classic", "bd")
    now = console()
    now.print(table.render())
    assert table.round is not None and now.export_text().splitlines()[0].endswith(" Balance $999.00")


VIP = {"id": "vip", "name": "VIP", "variant": "classic", "currency": "USD", "chips": [500, 2500],
       "limits": {"main": [500, 100000]}}


@pytest.mark.parametrize("in_play", [False, True], ids=["betting", "round-in-play"])
def test_a_table_the_operator_removes_ends_the_terminal_once_nothing_of_the_players_is_open_there(
        http: TestClient, service: GameService, operator: Client, in_play: bool) -> None:
    """As the web page goes back to the lobby. A player betting there is told at the next key; one with a round in
    play there plays it out, sees its result, and is told then. Before, the client stayed and answered every key
    "There is no table 'vip'." (noted by a review)."""
    assert operator.post("/admin/tables", VIP).status_code == 201
    service.stacked.append(WIN)
    read: list[str] = []

    def keys() -> Any:
        for key in ("b", "d") if in_play else ("b",):
            read.append(key)
            yield key
        assert operator.delete("/admin/tables/vip").status_code == 200
        for key in "sbdq" if in_play else "bdq":
            read.append(key)
            yield key

    table = play_at_server("http://testserver", "vip", console=console(), keys=keys(), http=http)
    shown = screen(table)
    if in_play:
        assert read == ["b", "d", "s"]  # the stand settles the round, and the client ends: no key after it is read
        assert "Round over: won $5.00." in shown
        assert shown.index("Round over: won $5.00.") < shown.index("The table VIP was closed by the casino: it "
                                                                    "takes no new bets.")
        assert "Goodbye. Balance $1,005.00 after 1 round at VIP." in shown  # as sat down at: the stand-in has no name
        assert me(http, table)["balances"]["USD"] == 100500
    else:
        assert read == ["b", "b"]  # the bet held on the slip was dropped with the table, never debited
        assert "The table VIP was closed by the casino." in shown and "Goodbye. Balance $1,000.00 after 0 rounds" \
            in shown
        assert me(http, table)["balances"]["USD"] == 100000


def test_a_table_made_again_under_another_name_is_called_by_its_new_name(http: TestClient, operator: Client) -> None:
    """An operator changes its table by removing it and making it again: the client reads the new name (a first
    version kept the name it sat down at, and said goodbye "at VIP" from the Gold Room: review). A closed table's
    stand-in, which knows its id alone, keeps the last name read."""
    assert operator.post("/admin/tables", VIP).status_code == 201
    table = sat_down(http, "vip")
    assert table.table_name == "VIP"
    assert operator.delete("/admin/tables/vip").status_code == 200
    assert operator.post("/admin/tables", {**VIP, "name": "Gold Room"}).status_code == 201
    table.refresh()
    assert table.table_name == "Gold Room"
    table.draw()
    assert "Gold Room ·" in screen(table)


def test_a_player_who_sits_down_at_a_closed_table_to_finish_a_round_sees_its_id(
        http: TestClient, service: GameService, operator: Client) -> None:
    """The stand-in of a table taken out knows its id alone: that is its name on screen (not an empty one)."""
    assert operator.post("/admin/tables", VIP).status_code == 201
    service.stacked.append(WIN)
    api = Api(http)
    player = sign_in(api)["player"]
    api.post("/tables/vip/bets", {"spot": 1, "type": "main"})
    assert api.post("/tables/vip/deal")["status"] == "playing"
    assert operator.delete("/admin/tables/vip").status_code == 200
    table = RemoteTable(api, "vip", player, console(), wait_seconds=0)
    assert table.table["closed"] and table.table_name == "vip" and table.round_open()


def test_a_key_that_is_no_action_now_sends_nothing(http: TestClient, service: GameService) -> None:
    service.stacked.append(WIN)
    table = played(http, "classic", "bdp")  # no pair: no split
    assert table.message == "Key 'p' is not an action here; legal: [h] hit, [s] stand, [d] double."
    assert table.round is not None and table.round["status"] == "playing"
    assert len(table.round["hands"]) == 1 and len(table.round["hands"][0]["cards"]) == 2
    assert "You left mid-round: the server takes each of your open decisions" in screen(table)


def test_an_offer_is_asked_with_its_price_and_answered_with_y_or_n(http: TestClient, service: GameService) -> None:
    service.stacked.append(ACE_UP)
    asked = played(http, "first-person", "bd")
    assert "Insurance for $0.50 on hand 1? [y]es [n]o" in screen(asked)
    service.stacked.append(ACE_UP)
    answered = played(http, "first-person", "bd?ns")
    shown = screen(answered)
    assert "Hint (EV per unit bet): no-insurance" in shown  # the server's exact hint, best first
    assert "Round over: won $1.00." in shown  # 19 against the dealer's 18


def test_a_hint_is_shown_above_the_deadline_not_in_its_place(http: TestClient, service: GameService) -> None:
    """A message (here a hint) and the "Decide by" line are both on screen: the message took its place, so the
    deadline left the screen with the first hint (a terminal trial)."""
    service.stacked.append(WIN)
    table = played(http, "classic", "bd?")
    shown = screen(table).split("Hint (EV per unit bet)")[-1]  # the last screen, from its message on
    assert re.search(r"Decide by \d\d:\d\d:\d\d \(\d+ s left when shown\)\.", shown), shown
    assert "[h] hit  [s] stand  [d] double" in shown


def test_a_double_the_balance_cannot_cover_is_shown_short_on_the_keys_line(http: TestClient,
                                                                         service: GameService) -> None:
    """The whole balance is on the hand: the keys line says double needs what the balance lacks, as the web page
    disables the button. Before, it offered the double and the server refused it (a terminal trial)."""
    service.stacked.append(["5S", "6H", "6D", "TC", "9C"])  # 11 against the dealer's 6
    table = played(http, "first-person", "ccccbbdz")  # two $500 chips on the main bet: the guest's $1,000; then z
    assert table.round is not None and table.round["me"]["staked"] == 100000
    assert "[d] double (the balance is short)" in table.message  # a refused key's list of the legal ones says so too
    table.press("?")
    assert re.search(r"double [+-]\d\.\d{3} \(the balance is short\)", table.message), table.message  # the hint too
    assert "The balance of $0.00 is short: double needs $1,000.00." in screen(table).split("Chips:")[-1]
    covered = played(http, "first-person", "")  # a fresh guest, a $1 bet: nothing is short
    service.stacked.append(["5S", "6H", "6D", "TC", "9C"])
    covered.press("b")
    covered.press("d")
    covered.draw()
    assert covered.my_turn() and "is short" not in screen(covered).split("Dealer")[-1]


def test_a_key_the_daily_loss_limit_leaves_out_says_so(http: TestClient, service: GameService) -> None:
    """$1.20 a day to lose and $1.00 on the hand: the $0.50 insurance is left out of the legal actions. The key said
    only "Key 'y' is not an action here" (a terminal trial); it names the limit and what it leaves."""
    table = played(http, "classic", "")
    http.put("/me/limits", json={"daily_loss_limit": 120},
             headers={"Authorization": f"Bearer {table.api.token}", "Idempotency-Key": "limit"}).raise_for_status()
    service.stacked.append(["TS", "AH", "9D", "7C", "5S"])  # 19 against an Ace, no blackjack under it
    for key in "bd":
        table.press(key)
    table.press("y")
    assert table.message == "Your daily loss limit leaves $0.20 to stake today: insurance would stake $0.50."
    assert table.round is not None and table.round["decision"]["kind"] == "insurance"  # nothing was sent
    table.press("n")
    assert table.round["decision"]["kind"] == "play"


def test_a_server_that_did_not_answer_is_said_until_a_read_answers(http: TestClient, monkeypatch: Any) -> None:
    """Words of an answer that never came stayed on screen 15-20 s after the server was back, till a key was pressed,
    with the socket's "[Errno 111]" (a terminal trial)."""
    table = played(http, "classic", "")
    answers = table.api.http.request

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise httpx.ConnectError("[Errno 111] Connection refused")

    monkeypatch.setattr(table.api.http, "request", refused)
    monkeypatch.setattr(table.api, "sleep", lambda seconds: None)
    table._read_table()
    assert table.message == "The server at http://testserver did not answer (connection refused)."
    monkeypatch.setattr(table.api.http, "request", answers)
    table._read_table()
    assert table.message == ""


def test_insurance_taken_is_on_screen_before_it_is_settled(http: TestClient, service: GameService) -> None:
    """Single deck settles insurance with the hands (no peek): the screen says it was taken, and for how much, while
    the hand is played. Before, it showed only at the round's end (a terminal trial)."""
    service.stacked.append(["TS", "AH", "9D", "7C"])
    table = played(http, "single-deck", "bdy")
    assert table.my_turn() and table.round is not None and table.round["legal_actions"][:2] == ["hit", "stand"]
    assert "Insurance #1: taken, £12.50, paid 2:1 on a dealer blackjack" in screen(table).split("Dealer")[-1]


def test_x2_says_which_bets_it_capped_at_their_maximum(http: TestClient) -> None:
    """First person's Perfect Pairs takes $500 at most: x2 doubles the main bet and caps the side bet, and says so.
    Before, the cap was left for the player to notice (a terminal trial)."""
    table = played(http, "first-person", "cccbpppx")  # $100 chips: a $100 main bet, $300 Perfect Pairs, then x2
    assert {(bet["type"], bet["amount"]) for bet in table.state["slip"]["bets"]} == {("main", 20000),
                                                                                     ("perfect_pairs", 50000)}
    assert table.message == "x2 capped at the table's maximum: Perfect Pairs on spot 1 at $500.00."
    doubled = played(http, "first-person", "cccbx")  # nothing at its maximum: nothing to say
    assert doubled.state["slip"]["total"] == 20000 and doubled.message == ""


def test_single_decks_same_bet_deals_and_its_round_is_shown(http: TestClient, service: GameService) -> None:
    """At single-deck REBET is the sheet's Same Bet: it repeats the bets and deals, and its answer is the round."""
    service.stacked.append(["TS", "6H", "9D", "TC", "8C"])  # 10 and 9 against 6, 10, 8: the dealer busts
    service.stacked.append(["AS", "5H", "KD", "TC", "9C"])  # a blackjack against 5, 10, 9: paid at once
    assert "[r] same bet (deals)" in screen(played(http, "single-deck", ""))
    table = played(http, "single-deck", "bdsr")
    assert table.round is not None and table.round["status"] == "settled" and table.rounds == 2
    assert table.message == "Round over: won £37.50." and table.state["balance"] == 1_000_00 + 25_00 + 37_50
    assert "BJ" in screen(table).split("Round over: won £25.00.")[-1]


def test_cash_out_shows_its_amount_and_follows_the_players_setting(http: TestClient, service: GameService) -> None:
    service.stacked.append(WIN)
    offered = played(http, "first-person", "bd")
    amount = offered.round["offers"]["cash_out"] if offered.round else None
    keys_line = next(line for line in reversed(screen(offered).splitlines()) if line.startswith("[h] hit"))
    assert amount and f"[c] cash-out ${amount / 100:.2f}" in keys_line
    guest = new_guest(http)
    assert guest.put("/me/settings", {"cash_out_visible": False}).status_code == 200
    service.stacked.append(WIN)
    hidden = RemoteTable(Api(http, guest.token), "first-person", {"id": guest.player_id(), "name": guest.name},
                         console())
    hidden.run(iter("bdc"))
    assert hidden.message.startswith("Cash out is hidden by your settings")
    assert "cash-out" not in screen(hidden).split("Cash out is hidden")[-1]
    assert hidden.round is not None and hidden.round["status"] == "playing"


def test_a_login_that_returned_undealt_bets_says_so(http: TestClient) -> None:
    ann = new_player(http, "ann")
    ann.bet("classic", 500)
    table = play_at_server("http://testserver", "power", "ann", "correct horse", console=console(), keys=iter(""),
                           http=http)
    assert "Your undealt bets were returned: $5.00 at classic." in screen(table)
    assert table.state["balance"] == 100000


# Multiplayer, two seats: no Ace, so no blackjack and no offer whichever card goes where; small cards to draw.
NO_ACE = ["9S", "6H", "7D", "TC", "9D", "7C", "2S", "2H", "2D", "2C", "3S", "3H"]


def sat_down(http: TestClient, table: str, clock: Clock | None = None) -> RemoteTable:
    """A terminal player at ``table``, on the server's clock where a test moves it."""
    api = Api(http)
    return RemoteTable(api, table, sign_in(api)["player"], console(), wait_seconds=0, clock=clock or Clock())


def test_another_players_forming_round_is_watched_and_joined_not_taken_for_ones_own(http: TestClient) -> None:
    """Bob's round is forming when the terminal player sits down: her bets and DEAL join it. Before, the client took
    it for hers, answered every key "It is not your turn", and read it as a 404 until she quit."""
    bob = new_guest(http)
    bob.bet("multiplayer", 500)
    forming = bob.post("/tables/multiplayer/deal").json()
    ann = sat_down(http, "multiplayer")
    assert ann.round is None and ann.watched is not None and ann.watched["id"] == forming["id"]
    assert f"Round {forming['id']} is taking bets" in ann._status()
    ann.press("b")
    ann.press("d")
    assert ann.message == "" and ann.round is not None and ann.round["id"] == forming["id"] and "me" in ann.round
    assert ann.round["seat_count"] == 2 and ann.state["slip"]["total"] == 0 and ann.watched is None


def test_after_deal_at_a_shared_table_the_players_own_bets_are_on_screen(http: TestClient) -> None:
    """The slip is gone once DEAL joins the forming round: the screen lists the bets that went in. Before, it said
    "Bets are in (2 seats)" and nothing of what they were (a terminal trial)."""
    bob = new_guest(http)
    bob.bet("multiplayer", 500)
    bob.post("/tables/multiplayer/deal")
    ann = sat_down(http, "multiplayer")
    for key in "cbtd":  # a $5 main bet and a $5 21+3
        ann.press(key)
    ann.draw()
    shown = screen(ann)
    assert ann.round is not None and ann.round["status"] == "betting"
    assert "Your bets: $5.00 main, $5.00 21+3." in shown and "Bets are in (2 seats)." in shown


def test_a_round_of_others_in_play_says_bet_now_and_deal_once_it_ends(http: TestClient, service: GameService,
                                                                      clock: Clock) -> None:
    """Ann sits down while bob's round is in play: her screen says she may bet now and DEAL once it ends, which the
    server holds to. Before, it said "your bets go to the next round", and her DEAL was refused (a terminal trial)."""
    service.stacked.append(NO_ACE)
    bob = new_guest(http)
    dealt_shared_round(service, clock, [bob], "multiplayer")
    ann = sat_down(http, "multiplayer", clock)
    assert ann._status().endswith("is in play without you: bet now, and DEAL once it ends."), ann._status()
    ann.press("b")
    assert ann.state["slip"]["total"] == 100  # the bet is taken
    ann.press("d")
    assert ann.message == "A round is in play at this table: bet on the next one when it ends.", ann.message


def test_a_round_that_ends_while_the_next_forms_is_told_as_ones_own(http: TestClient, service: GameService,
                                                                    clock: Clock) -> None:
    """Ann's round ends at Bob's stand, and Bob forms the next round before Ann's screen reads hers again: her
    result is her round's, and she bets on beside his. Before, the client took his for hers ("Round over: even")."""
    service.stacked.append(NO_ACE)
    ann, bob = sat_down(http, "multiplayer"), new_guest(http)
    ann.press("b")
    ann.press("d")  # Ann forms the round (seat 1), Bob joins it (seat 2)
    bob.bet("multiplayer", 500)
    round_id = bob.post("/tables/multiplayer/deal").json()["id"]
    clock.advance(service.table("multiplayer").betting_window + 1)
    service.tick()
    ann._read_round()
    assert ann.my_turn()
    ann.press("s")
    assert ann.round is not None and ann.round["status"] == "playing" and not ann.my_turn()
    while bob.get(f"/rounds/{round_id}").json()["legal_actions"]:
        bob.act(round_id, "stand")
    bob.bet("multiplayer", 500)
    following = bob.post("/tables/multiplayer/deal").json()
    ann._read_round()
    hers = [hand for hand in bob.get(f"/rounds/{round_id}").json()["hands"] if hand["player_id"] == ann.player["id"]]
    net = sum(hand["returned"] - hand["stake"] for hand in hers)
    told = f"won ${net / 100:.2f}" if net > 0 else f"lost ${-net / 100:.2f}" if net < 0 else "even"
    assert ann.message == f"Round over: {told}." and ann.rounds == 1 and ann.state["balance"] == 100000 + net
    assert ann.round is not None and ann.round["id"] == round_id and ann.round["status"] == "settled"
    assert ann.watched is not None and ann.watched["id"] == following["id"]
    ann.press("b")
    assert ann.state["slip"]["total"] == 100 and ann.round is None  # betting on, beside Bob's forming round


def test_a_decision_the_servers_timer_took_is_caught_up_with(http: TestClient, service: GameService,
                                                             clock: Clock) -> None:
    """Ann let her turn run out: the server stood for her and the round settled. Her next key is refused, and the
    screen reads the round again, where it stayed on the old one and refused every key (found by a trial)."""
    service.stacked.append(NO_ACE)
    ann = sat_down(http, "multiplayer", clock)
    ann.press("b")
    ann.press("d")
    table = service.table("multiplayer")
    clock.advance(table.betting_window + 1)
    service.tick()
    ann._read_round()
    by = datetime.fromisoformat(ann.round["deadline"]).astimezone() if ann.round else None
    assert ann.my_turn() and by is not None and ann._status() == \
        f"Decide by {by:%H:%M:%S} ({table.decision_timeout} s left when shown)."
    clock.advance(table.decision_timeout + 1)
    service.tick()
    ann.press("s")
    assert ann.round is not None and ann.round["status"] == "settled" and not ann.round_open()
    assert "no decision is pending" in ann.message and "Round over:" in ann.message and ann.rounds == 1
    assert ann.message.endswith("Time ran out: the auto decision (stand, or no to an offer) was made for you.")


# Multiplayer, three players: their first cards, the hole card (a 6: no dealer blackjack), their second cards, the
# Ace up; then the dealer's draws. Nobody has a blackjack, so insurance is offered to all three at once.
THREE_AGAINST_AN_ACE = ["TS", "TC", "9S", "6H", "9D", "8H", "8S", "AH", "7C", "5S", "4D", "3C"]


def offered_insurance_with_two_others(http: TestClient, service: GameService,
                                      clock: Clock) -> tuple[RemoteTable, Client, Client, int]:
    """Ann at a terminal, then Bob and Cyd, in a multiplayer round whose Ace up offers each of them insurance."""
    service.stacked.append(THREE_AGAINST_AN_ACE)
    ann = sat_down(http, "multiplayer", clock)
    ann.press("b")
    ann.press("d")
    bob, cy = new_player(http, "bob"), new_player(http, "cyd")
    round_id = dealt_shared_round(service, clock, [bob, cy], table="multiplayer")
    ann._read_round()
    assert ann.round is not None and ann.round["id"] == round_id and ann._offer() == "insurance", ann.round
    return ann, bob, cy, round_id


def test_the_offers_name_every_player_still_answering(http: TestClient, service: GameService, clock: Clock) -> None:
    """The offers before the peek are every player's at once: once Ann has answered, the screen names each player
    still to answer, and then the one left. Before, it named the first in the round's order alone."""
    ann, bob, _, round_id = offered_insurance_with_two_others(http, service, clock)
    ann.press("n")
    timeout = service.table("multiplayer").decision_timeout
    assert not ann.my_turn() and ann._status() == f"Waiting for bob and cyd ({timeout} s).", ann._status()
    ann.draw()
    marked = [line for line in screen(ann).splitlines() if line.lstrip().startswith("▶")]
    assert [line.split()[1] for line in marked] == ["bob", "cyd"], marked  # each still answering, not one
    assert bob.act(round_id, "no-insurance").status_code == 200
    ann._read_round()
    assert ann._status() == f"Waiting for cyd ({timeout} s).", ann._status()


def test_an_offer_the_timer_declined_is_said_beside_the_next_decision(http: TestClient, service: GameService,
                                                                     clock: Clock) -> None:
    """Ann let the offers' clock run out: her insurance was declined, and her turn then began. The screen says so
    beside her decision, as the page does; before, it was told only in the round's result."""
    ann, bob, cy, round_id = offered_insurance_with_two_others(http, service, clock)
    ann.press("s")  # not an answer to the offer
    assert ann.message.startswith("Key 's' is not an action here; legal: [y] insurance, [n] no-insurance"), ann.message
    for other in (bob, cy):
        assert other.act(round_id, "no-insurance").status_code == 200
    clock.advance(service.table("multiplayer").decision_timeout + 1)
    service.tick()
    ann._read_round()
    assert ann.my_turn() and ann._offer() is None
    assert ann.message == ""  # the refusal was the offer's: here S is legal (it stayed: a trial of players)
    timer = "Time ran out: the auto decision (stand, or no to an offer) was made for you."
    assert ann._status().startswith(f"{timer} Decide by "), ann._status()
    ann.press("s")
    assert ann._status().startswith(f"{timer} Waiting for bob ("), ann._status()


def test_a_double_or_insurance_takes_its_stake_from_the_balance_on_screen(http: TestClient,
                                                                          service: GameService) -> None:
    service.stacked.append(ACE_UP)
    table = played(http, "first-person", "bdy")  # insurance for half the bet; the round goes on
    assert table.round is not None and table.round_open()
    assert table.state["balance"] == 100000 - 100 - 50 == me(http, table)["balances"]["USD"]


def test_a_crowded_round_lists_a_few_others_and_counts_the_rest(http: TestClient, service: GameService,
                                                                clock: Clock) -> None:
    service.stacked.append(["5S", "6H", "7D", "8C", "2S", "3H", "4D", "5C", "6S", "7H", "2C", "3D"])
    ann = sat_down(http, "power")
    guests = [Client(http, ann.api.token, ann.player["name"]), *(new_guest(http) for _ in range(6))]
    dealt_shared_round(service, clock, guests, "power")
    ann.refresh()
    ann.draw()
    shown = screen(ann)
    assert "and 2 more hands of 2 other players" in shown and shown.count("\n") <= 24, shown


def test_a_table_the_server_does_not_have_is_named_with_the_ones_it_has(http: TestClient) -> None:
    with pytest.raises(ServerError, match=r"The server has no table 'nope'; its tables: first-person, classic"):
        played(http, "nope", "q")


def through(http: TestClient, fault: Callable[[httpx.Request], httpx.Response | None]) -> tuple[Api, list[float]]:
    """An :class:`Api` whose requests reach the app, unless ``fault`` answers one first (or raises for it), and the
    waits it made between tries."""

    def send(request: httpx.Request) -> httpx.Response:
        made_up = fault(request)
        if made_up is not None:
            return made_up
        answer = http.request(request.method, request.url.path, content=request.content, headers=request.headers)
        return httpx.Response(answer.status_code, content=answer.content, headers=answer.headers)

    waits: list[float] = []
    api = Api(httpx.Client(transport=httpx.MockTransport(send), base_url="http://testserver"), sleep=waits.append)
    api.token = http.post("/auth/guest").json()["token"]
    return api, waits


def test_a_503_is_sent_again_with_the_same_key_and_applied_once(http: TestClient) -> None:
    """Storage trouble answers 503 with Retry-After; the terminal sends the same request again, with the same key,
    as the web page does, and the player sees the answer, not the trouble."""
    keys: list[str | None] = []
    refusals = [True, True]

    def busy_twice(request: httpx.Request) -> httpx.Response | None:
        keys.append(request.headers.get("Idempotency-Key"))
        if refusals:
            refusals.pop()
            return httpx.Response(503, json={"detail": "busy"}, headers={"Retry-After": "1"})
        return None

    api, waits = through(http, lambda request: busy_twice(request) if request.url.path.endswith("/bets") else None)
    assert api.post("/tables/classic/bets", {"spot": 1, "type": "main"})["slip"]["total"] == 100
    assert len(keys) == 3 and len(set(keys)) == 1 and waits == [1.0, 1.0]


def test_an_answer_lost_on_the_way_is_asked_again_and_the_bet_is_placed_once(http: TestClient) -> None:
    """The server placed the chip, and its answer never came back: the same request with the same key gets the
    first answer, and the spot holds one chip, not two."""
    lost = [True]

    def lose_the_first_answer(request: httpx.Request) -> None:
        if request.url.path.endswith("/bets") and lost:
            lost.pop()
            http.request(request.method, request.url.path, content=request.content, headers=request.headers)
            raise httpx.ReadTimeout("the answer was lost", request=request)

    api, waits = through(http, lose_the_first_answer)
    assert api.post("/tables/classic/bets", {"spot": 1, "type": "main"})["slip"]["total"] == 100
    assert api.get("/tables/classic")["slip"]["total"] == 100 and not lost and waits == [0.5]


def test_an_answer_that_is_not_the_servers_is_one_line() -> None:
    api = Api(httpx.Client(transport=httpx.MockTransport(lambda request: httpx.Response(200, text="<html>hi</html>")),
                           base_url="http://proxy.example"))
    with pytest.raises(ServerError, match="no JSON object: is it a twentyone server"):
        api.get("/tables/classic")


def test_a_guest_who_quit_mid_round_comes_back_to_it(http: TestClient, service: GameService,
                                                    tmp_path: Path) -> None:
    """The guest's sign-in is kept on this machine, as the web page keeps it in the browser: the next run is the same
    guest, with the round left open to finish. Before, the token was dropped at quit, and the round was left to the
    server's timer (a terminal trial)."""
    guests = KeptGuests(tmp_path / "state" / "guests.json")
    service.stacked.append(WIN)
    left = play_at_server("http://testserver", "classic", console=console(), keys=iter("bdq"), http=http,
                          guests=guests)
    assert left.round_open() and guests.token_for("http://testserver") == left.api.token
    assert (tmp_path / "state" / "guests.json").stat().st_mode & 0o777 == 0o600  # a sign-in: its owner's alone
    goodbye = screen(left)
    assert f"{left.player['name']} is kept on this machine: the same command comes back" in goodbye
    # What is still on the table is said with the balance: "Balance $999.00" alone read as lost (a terminal trial).
    assert f"Goodbye. Balance $999.00, and $1.00 in round {left.round['id']}, still in play, after 0 rounds" in goodbye
    back = play_at_server("http://testserver", "classic", console=console(), keys=iter("s"), http=http,
                          guests=guests)
    shown = screen(back)
    assert back.player["id"] == left.player["id"] and f"Welcome back, {left.player['name']}" in shown
    assert "Round over: won $1.00." in shown and back.state["balance"] == 100100


@pytest.mark.parametrize("past_the_limit", [False, True], ids=["401", "429-token-refused"])
def test_a_kept_guest_the_server_no_longer_takes_is_forgotten_for_a_new_one(http: TestClient, tmp_path: Path,
                                                                           past_the_limit: bool) -> None:
    """A kept token the server refuses, with a 401, or with a 429 ``token_refused`` where the address is past its
    limit of wrong tokens (someone else's guessing behind it: before, the terminal quit with that line)."""
    from twentyone.server.guards import BAD_TOKENS_PER_MINUTE

    for attempt in range(BAD_TOKENS_PER_MINUTE if past_the_limit else 0):
        assert http.get("/me", headers={"Authorization": f"Bearer guess-{attempt:04d}-" + "x" * 20}).status_code == 401
    guests = KeptGuests(tmp_path / "guests.json")
    guests.keep("http://testserver", "not-a-sign-in", "guest-gone")
    table = play_at_server("http://testserver", "classic", console=console(), keys=iter(""), http=http,
                           guests=guests)
    assert table.player["name"] != "guest-gone" and "Welcome back" not in screen(table)
    assert table.message == (f"guest-gone, the guest kept on this machine, is no longer known to this server (signed "
                             f"out, expired, or its records gone): you play as a new guest, {table.player['name']}.")
    assert guests.token_for("http://testserver") == table.api.token != "not-a-sign-in"


def test_new_guest_replaces_the_kept_one_only_once_signed_in(http: TestClient, tmp_path: Path) -> None:
    """``--new-guest`` (``resume=False``) plays as a new guest, kept in the old one's place; a server that does not
    answer leaves the kept one as it was. Before, the kept guest was forgotten first, and with it its balance and any
    round left open, whatever became of the new sign-in (found by review)."""
    guests = KeptGuests(tmp_path / "guests.json")
    old = play_at_server("http://testserver", "classic", console=console(), keys=iter(""), http=http, guests=guests)
    new = play_at_server("http://testserver", "classic", console=console(), keys=iter(""), http=http, guests=guests,
                         resume=False)
    assert new.player["id"] != old.player["id"] and guests.token_for("http://testserver") == new.api.token
    assert new.message == (f"You play as a new guest, {new.player['name']}; {old.player['name']}, kept on this "
                           f"machine until now, is no longer.")
    port = free_port()
    state = tmp_path / "state"
    KeptGuests(state / "twentyone" / "guests.json").keep(f"http://127.0.0.1:{port}", "kept-token", "guest-kept")
    nowhere = subprocess.run([sys.executable, "-m", "twentyone.cli.main", "play", "classic", "--server",
                              f"http://127.0.0.1:{port}", "--new-guest"], input="q", capture_output=True, text=True,
                             timeout=60, env={**os.environ, "XDG_STATE_HOME": str(state)})
    assert nowhere.returncode == 2 and "did not answer" in nowhere.stderr
    assert KeptGuests(state / "twentyone" / "guests.json").token_for(f"http://127.0.0.1:{port}") == "kept-token"


def test_command_line_refusals_are_one_line_and_exit_2() -> None:
    def run(*arguments: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "twentyone.cli.main", "play", *arguments], input="q",
                              capture_output=True, text=True, timeout=60)

    mixed = run("classic", "--server", "http://127.0.0.1:9", "--seed", "3")
    assert mixed.returncode == 2 and mixed.stderr.count("\n") == 1 and "--seed cannot be used with --server" in \
        mixed.stderr
    alone = run("classic", "--name", "ann")
    assert alone.returncode == 2 and "--name signs in at a server: give --server URL too." in alone.stderr
    new_alone = run("classic", "--new-guest")
    assert new_alone.returncode == 2 and "--new-guest signs in at a server: give --server URL too." in \
        new_alone.stderr
    both = run("classic", "--server", "http://127.0.0.1:9", "--name", "ann", "--new-guest")
    assert both.returncode == 2 and both.stderr.count("\n") == 1 and "--new-guest and --name cannot" in both.stderr
    for odd in ("http://127.0.0.1:abc", "http://[::1", "http://", "http://127.0.0.1:8000/tables", "ftp://host"):
        refused = run("classic", "--server", odd)
        assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and "--server" in refused.stderr, odd
    nowhere = run("classic", "--server", f"http://127.0.0.1:{free_port()}")
    assert nowhere.returncode == 2 and nowhere.stderr.count("\n") == 1 and "did not answer" in nowhere.stderr
    assert "Traceback" not in nowhere.stderr


def test_a_shared_round_with_a_player_of_the_web_page(tmp_path: Path) -> None:
    """A real server process; the terminal player (the command, keys from a pipe) and Bob (the HTTP API, as the page
    calls it) play one shared round: Bob joins the round the terminal's deal formed, each takes their own decisions,
    and the terminal waits through the betting window and Bob's turn, then shows the round's end."""
    port = free_port()
    server = start_server(tmp_path, port, f"sqlite:///{tmp_path / 'server.db'}")
    try:
        created = call(port, "POST", "/admin/tables", OPERATOR, {
            "id": "duo", "name": "Duo", "variant": "multiplayer", "currency": "USD", "chips": [100, 500],
            "limits": {"main": [100, 10000]}, "seats": 7, "decision_timeout": 60, "betting_window": 5})
        assert created.status_code == 201, created.json()
        bob = call(port, "POST", "/auth/guest").json()
        terminal = subprocess.Popen(
            [sys.executable, "-m", "twentyone.cli.main", "play", "duo", "--server", f"http://127.0.0.1:{port}"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")})
        bobs: list[int] = []
        bob_plays = threading.Thread(target=lambda: bobs.append(bobs_round(port, bob["token"])))
        bob_plays.start()
        # A bet and the deal (the round forms); then, once it is the terminal's turn, whatever it is asked is
        # declined or stood on (a key that is no action there is refused on screen); then quit.
        output, errors = terminal.communicate("bdnnsq", timeout=90)
        bob_plays.join(timeout=60)
        assert terminal.returncode == 0, errors
        [round_id] = bobs
        settled = call(port, "GET", f"/rounds/{round_id}", bob["token"]).json()
        assert settled["status"] == "settled" and settled["seat_count"] == 2
        assert re.search(r"Bets are in \([12] seats?\)\. Betting closes in \d s\.", output)  # the window, as it ran
        assert "Round over:" in output and "Goodbye. Balance" in output, output[-2000:]
        names = {seat["name"] for seat in settled["seats"]}
        assert bob["player"]["name"] in names and len(names) == 2
        [terminals] = names - {bob["player"]["name"]}
        kept = KeptGuests(tmp_path / "state" / "twentyone" / "guests.json")  # where the command keeps its guest
        assert kept.token_for(f"http://127.0.0.1:{port}") and f"{terminals} is kept on this machine" in output
    finally:
        server.kill()
        server.wait(timeout=30)


def test_a_terminal_at_a_shared_table_is_at_it_for_the_server(tmp_path: Path) -> None:
    """The terminal holds the table's WebSocket, as the page does: sitting there with no bet, it counts, so another
    player's round waits the table's whole betting window for it (a player alone gets 3 s: without the socket the
    round dealt before the terminal's player could join). A dropped line returns the bets never dealt, as the sheet
    says, and the terminal tells it and reads the slip again."""
    port = free_port()
    server = start_server(tmp_path, port, f"sqlite:///{tmp_path / 'server.db'}")
    url = f"http://127.0.0.1:{port}"
    try:
        assert call(port, "POST", "/admin/tables", OPERATOR, {
            "id": "duo", "name": "Duo", "variant": "multiplayer", "currency": "USD", "chips": [100, 500],
            "limits": {"main": [100, 10000]}, "seats": 7, "decision_timeout": 60, "betting_window": 30},
        ).status_code == 201
        with httpx.Client(base_url=url) as http:
            api = Api(http)
            ann = RemoteTable(api, "duo", sign_in(api)["player"], console())
            ann.presence = Presence.opened(url, "duo", api.token, seconds=10)  # as play_at_server opens it
            assert ann.presence is not None, "the table's socket did not open"
            try:
                bob = call(port, "POST", "/auth/guest").json()["token"]
                assert call(port, "POST", "/tables/duo/bets", bob, {"spot": 1, "type": "main"}).status_code == 200
                forming = call(port, "POST", "/tables/duo/deal", bob).json()
                opened = call(port, "GET", "/admin/rounds?table=duo", OPERATOR).json()["rounds"][0]
                window = datetime.fromisoformat(forming["betting_closes_at"]) - \
                    datetime.fromisoformat(opened["created_at"])
                assert window.total_seconds() > 20, window  # the table's 30 s, not a lone player's 3

                ann.press("b")
                assert ann.state["slip"]["total"] == 100
                ann.presence.connected.clear()
                ann.presence._socket.close()  # the line drops; the socket connects again
                assert ann.presence.connected.wait(10), "the table's socket did not open again"
                ann.press("b")  # the key meets the news first
                assert ann.message == "Your undealt bets were returned: $1.00 at duo.", ann.message
                assert ann.state["slip"]["total"] == 0
            finally:
                ann.presence.stop()
    finally:
        server.kill()
        server.wait(timeout=30)


def bobs_round(port: int, token: str) -> int:
    """Bob waits for the round the terminal formed, joins it, and plays his hand (declines each offer, stands)."""
    deadline = time.monotonic() + 60
    while not (forming := call(port, "GET", "/admin/rounds?status=betting&table=duo", OPERATOR).json()["rounds"]):
        assert time.monotonic() < deadline, "the terminal's deal formed no round"
        time.sleep(0.05)
    assert call(port, "POST", "/tables/duo/bets", token, {"spot": 1, "type": "main"}).status_code == 200
    joined = call(port, "POST", "/tables/duo/deal", token).json()
    round_id = int(forming[0]["id"])
    assert joined["id"] == round_id
    done = threading.Event()

    def play() -> None:
        while not done.is_set() and time.monotonic() < deadline:
            seen = call(port, "GET", f"/rounds/{round_id}", token).json()
            if seen["status"] not in ("betting", "playing"):
                return
            legal = seen["legal_actions"]
            if legal:
                choice = next((action for action in legal if action.startswith("no-")), "stand")
                call(port, "POST", f"/rounds/{round_id}/actions", token, {"action": choice})
            time.sleep(0.05)

    player = threading.Thread(target=play)
    player.start()
    player.join(timeout=60)
    done.set()
    return round_id


def test_at_a_terminal_q_ends_a_wait_and_keys_typed_before_a_decision_are_dropped(http: TestClient) -> None:
    """On a pseudo-terminal in single-key mode, as a player's: what was typed ahead is dropped, a key waiting is
    taken without waiting for Enter, and q while the table moves ends the session at once."""
    leader, follower = pty.openpty()
    tty.setcbreak(follower)
    with os.fdopen(follower, "r") as keyboard:
        assert is_terminal(keyboard)
        os.write(leader, b"dd")
        assert select.select([keyboard], [], [], 5)[0]  # the keys reached the terminal (the kernel passes them on)
        discard_typed_ahead(keyboard)
        assert key_waiting(keyboard) is None  # the second d of a deal never doubles an unseen hand
        os.write(leader, "£".encode())
        assert eventually(lambda: key_waiting(keyboard), 5, "the key typed") == "£"
        table = sat_down(http, "classic")
        table.keyboard, table.poll_seconds = keyboard, 5.0
        os.write(leader, b"q")
        started = time.monotonic()
        with pytest.raises(_Quit):
            table._pause()
        assert time.monotonic() - started < 2
    os.close(leader)


def test_between_keys_at_a_terminal_the_screen_follows_the_table(http: TestClient) -> None:
    """A terminal player waits at multiplayer, typing nothing: bob opens a round there, and the screen shows it
    taking bets, its clock drawn again as it runs, without a key; a key then ends the wait. Before, the screen stood
    as the last key left it (found by a terminal trial: a round forming, the timer's decision and the result showed
    only after a key)."""
    leader, follower = pty.openpty()
    tty.setcbreak(follower)
    with os.fdopen(follower, "r") as keyboard:
        table = sat_down(http, "multiplayer")
        table.keyboard = keyboard
        table.presence = Presence("http://testserver", "multiplayer", "token")  # its events, told by hand here
        follows = threading.Thread(target=table._follow_until_key)
        follows.start()
        bob = new_guest(http)
        bob.bet("multiplayer", 500)
        forming = bob.post("/tables/multiplayer/deal").json()
        table.presence.moved.set()  # the round's event
        eventually(lambda: f"Round {forming['id']} is taking bets" in screen(table), 10, "the round shown")
        drawn = screen(table).count("is taking bets")
        eventually(lambda: screen(table).count("is taking bets") > drawn, 10, "the clock drawn again")
        assert follows.is_alive()  # still waiting for a key
        os.write(leader, b"b")
        follows.join(timeout=10)
        assert not follows.is_alive() and key_waiting(keyboard) == "b"  # the key is left for the game to read
    os.close(leader)


def test_at_a_terminal_the_first_key_at_a_servers_table_needs_no_enter(tmp_path: Path) -> None:
    """The command on a pseudo-terminal as a person's (in line mode, as a shell leaves it): a key typed at the first
    screen is taken at once, and q quits. Before, the terminal was put in single-key mode only when the first key
    was read, while the screen followed the table waiting for a key that line mode kept until Enter: every key was
    dead at the start, and Enter then dropped the line (found by a terminal trial)."""
    port = free_port()
    server = start_server(tmp_path, port, f"sqlite:///{tmp_path / 'server.db'}")
    leader, follower = pty.openpty()
    try:
        terminal = subprocess.Popen(
            [sys.executable, "-m", "twentyone.cli.main", "play", "classic", "--server", f"http://127.0.0.1:{port}"],
            stdin=follower, stdout=follower, stderr=follower, start_new_session=True,
            env={**os.environ, "XDG_STATE_HOME": str(tmp_path / "state"), "COLUMNS": "80", "LINES": "24",
                 "TERM": "xterm"})
        shown = bytearray()

        def seen(text: str, seconds: float = 20) -> None:
            deadline = time.monotonic() + seconds
            while text.encode() not in re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]", b"", bytes(shown)):
                assert time.monotonic() < deadline, f"{text!r} never shown: {bytes(shown)[-1500:]!r}"
                if select.select([leader], [], [], 0.2)[0]:
                    shown.extend(os.read(leader, 65536))

        seen("TOTAL BET $0.00")
        os.write(leader, b"b")  # no Enter
        seen("TOTAL BET $1.00", 10)
        os.write(leader, b"q")
        seen("Goodbye.", 10)
        assert terminal.wait(timeout=10) == 0
    finally:
        os.close(leader)
        os.close(follower)
        server.kill()
        server.wait(timeout=30)


def test_bets_the_server_returns_at_the_table_are_told_with_why(http: TestClient, service: GameService) -> None:
    """Ann's bet is on her slip at multiplayer when bob's round closes without her DEAL: the server returns it and
    tells her socket why (``bets-returned``); her screen says so and shows the slip empty. Before, the bet left the
    slip with no word, and her next DEAL answered "Place a main bet before dealing." (found by a terminal trial)."""
    ann = sat_down(http, "multiplayer")
    ann.presence = Presence("http://testserver", "multiplayer", "token")  # its events, told by hand here
    ann.press("b")
    assert ann.state["slip"]["total"] > 0
    bob = new_guest(http)
    bob.bet("multiplayer", 500)
    bob.post("/tables/multiplayer/deal")
    service.close_betting("multiplayer")
    returned = ann.api.get("/tables/multiplayer")["slip"]["total"] == 0
    assert returned  # the server took the slip back
    ann.presence._heard({"type": "bets-returned", "table_id": "multiplayer", "player_id": ann.player["id"],
                         "total": 100, "private": True,
                         "reason": "Your bets were not in the round when betting closed: press DEAL to join the next "
                                   "one."})
    assert ann._bets_returned()
    assert ann.message == ("Bets of $1.00 returned. Your bets were not in the round when betting closed: press DEAL "
                           "to join the next one.")
    assert ann.state["slip"]["total"] == 0  # read again: the screen shows the slip as the server holds it


def test_an_event_of_the_table_reads_the_round_sooner_but_not_at_once(http: TestClient) -> None:
    """A crowded table's events would send every waiting terminal's read at each one: a read waits for the event,
    then for five reads a second at most."""
    table = sat_down(http, "classic")
    table.poll_seconds, table.presence = 5.0, Presence("http://testserver", "classic", "token")
    table.presence.moved.set()
    started = time.monotonic()
    table._pause()
    assert MIN_READ_GAP <= time.monotonic() - started < 2 and not table.presence.moved.is_set()


def test_a_key_after_ones_choice_at_a_common_draw_step_says_the_step_waits_for_the_others(
        http: TestClient, service: GameService) -> None:
    """Power: everyone chooses at each step. A key pressed after the player's own choice read "It is not your turn",
    which at a common draw is never what holds the round (found by a trial of two tabs at power)."""
    service.stacked.append(["8S", "7H", "5D", "KC", "2C", "3C", "QS"])
    ann = sat_down(http, "power")
    bob = new_guest(http)
    ann.press("b")
    ann.press("d")
    bob.bet("power", 500)
    bob.post("/tables/power/deal")
    service.close_betting("power")
    ann._catch_up()
    assert ann.my_turn(), ann.round
    ann.press("h")  # her choice at this step: the card comes once bob has chosen too
    assert not ann.my_turn(), ann.round
    ann.press("s")
    assert ann.message.startswith("You have nothing to decide at this step"), ann.message


def test_a_key_out_of_turn_at_a_table_played_in_turn_says_so(http: TestClient, service: GameService) -> None:
    """Multiplayer plays in turn: a key while another player decides is "not your turn" (the common draw's words are
    for power alone)."""
    service.stacked.append(list(NO_ACE))
    bob = new_guest(http)
    bob.bet("multiplayer", 500)
    bob.post("/tables/multiplayer/deal")  # bob sits first: he decides first
    ann = sat_down(http, "multiplayer")
    ann.press("b")
    ann.press("d")
    service.close_betting("multiplayer")
    ann._catch_up()
    assert ann.round is not None and ann.round["status"] == "playing" and not ann.my_turn(), ann.round
    ann.press("s")
    assert ann.message == "It is not your turn.", ann.message
