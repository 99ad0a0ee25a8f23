"""Terminal play at a server's table (``twentyone play TABLE --server URL``, ``ui/remote.py``): the keys of terminal
play, the server's deal, balance, refusals and history, and a shared table with a player who is not at a terminal."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from live import call, free_port, start_server
from rich.console import Console
from server_helpers import OPERATOR, Client

from twentyone.server.service import GameService
from twentyone.ui.remote import Api, RemoteTable, ServerError, play_at_server

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


def test_a_table_the_server_does_not_have_is_named_with_the_ones_it_has(http: TestClient) -> None:
    with pytest.raises(ServerError, match=r"The server has no table 'nope'; its tables: first-person, classic"):
        played(http, "nope", "q")


def test_a_503_is_sent_again_with_the_same_key_and_applied_once(http: TestClient) -> None:
    """Storage trouble answers 503 with Retry-After; the terminal sends the same request again, with the same key,
    as the web page does, and the player sees the answer, not the trouble."""
    sent: list[tuple[str, str | None]] = []
    refusals = [True, True]

    def busy_then_through(request: httpx.Request) -> httpx.Response:
        sent.append((request.url.path, request.headers.get("Idempotency-Key")))
        if request.url.path.endswith("/bets") and refusals:
            refusals.pop()
            return httpx.Response(503, json={"detail": "busy"}, headers={"Retry-After": "1"})
        answer = http.request(request.method, request.url.path, content=request.content, headers=request.headers)
        return httpx.Response(answer.status_code, content=answer.content, headers=answer.headers)

    waits: list[float] = []
    api = Api(httpx.Client(transport=httpx.MockTransport(busy_then_through), base_url="http://testserver"),
              sleep=waits.append)
    api.token = http.post("/auth/guest").json()["token"]
    assert api.post("/tables/classic/bets", {"spot": 1, "type": "main"})["slip"]["total"] == 100
    keys = [key for path, key in sent if path.endswith("/bets")]
    assert len(keys) == 3 and len(set(keys)) == 1 and waits == [1.0, 1.0]
    assert Client(http, api.token, "").balance() == 100000  # held on the slip: nothing staked twice


def test_command_line_refusals_are_one_line_and_exit_2() -> None:
    def run(*arguments: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "twentyone.cli.main", "play", *arguments], input="q",
                              capture_output=True, text=True, timeout=60)

    mixed = run("classic", "--server", "http://127.0.0.1:9", "--seed", "3")
    assert mixed.returncode == 2 and mixed.stderr.count("\n") == 1 and "--seed cannot be used with --server" in \
        mixed.stderr
    alone = run("classic", "--name", "ann")
    assert alone.returncode == 2 and "--name signs in at a server: give --server URL too." in alone.stderr
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
            "limits": {"main": [100, 10000]}, "seats": 7, "decision_timeout": 60, "betting_window": 3})
        assert created.status_code == 201, created.json()
        bob = call(port, "POST", "/auth/guest").json()
        terminal = subprocess.Popen(
            [sys.executable, "-m", "twentyone.cli.main", "play", "duo", "--server", f"http://127.0.0.1:{port}"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
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
        assert "Bets are in. Betting closes in" in output  # the window, drawn while it ran
        assert "Round over:" in output and "Goodbye. Balance" in output, output[-2000:]
        names = {seat["name"] for seat in settled["seats"]}
        assert bob["player"]["name"] in names and len(names) == 2
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
