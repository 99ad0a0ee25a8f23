"""The server's timers run apart, table by table, and apart from the operator wallet's retries: a call the operator is
slow to answer holds up only the timer that made it (``app._timers``, ``GameService.timers_due``)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from fake_operator_wallet import ContractWallet
from fastapi.testclient import TestClient
from server_helpers import OPERATOR, Clock, eventually, new_guest

from twentyone.server.app import create_app
from twentyone.server.config import Settings
from twentyone.server.wallet import WalletError

# Classic: the player's 5 and 6, the dealer's 6 and 10; a double draws the 9 (20), the dealer draws the 8 and busts.
DOUBLE_WINS = ["5S", "6H", "6D", "TC", "9C", "8C"]
# Multiplayer, one seat: no blackjack for either side (9 and 7 against 6 and 10, in either order of the deal), and
# small cards after them for whatever the dealer draws.
STAYS_IN_PLAY = ["9S", "6H", "7D", "TC", "2S", "2H", "2D", "2C", "3S", "3H"]


class SlowCredits(ContractWallet):
    """Credits refused while ``refusing``; once ``holding``, each waits (up to 30 s) until ``release`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.refusing = False
        self.holding = False
        self.held = threading.Event()  # a credit is waiting
        self.release = threading.Event()

    def credit(self, player: str, currency: str, amount: int, tx_id: str, round_id: int | None) -> None:
        if self.refusing:
            raise WalletError("The cashier is closed for a minute.")
        if self.holding:
            self.held.set()
            self.release.wait(30)
        super().credit(player, currency, amount, tx_id, round_id)


def test_a_wallet_call_held_up_holds_up_no_other_tables_timers(tmp_path: Path, database_url: str) -> None:
    """Ann's winnings wait in the outbox, and the operator takes 30 s over their retry. Meanwhile Bob's multiplayer
    round is dealt when its window closes, and his hand stands when its time is up. Before, one tick ran every timer
    in turn: the retry held the close and the Stand back until the operator answered (found by a trial of an
    integrator: a credit taking 30 s stood a multiplayer hand 25 s late)."""
    clock, wallet = Clock(), SlowCredits()
    # The test's clock jumps while the timers run: no jump is taken for the floor having been down (downtime.py).
    app = create_app(Settings(database_url, tmp_path, OPERATOR, tick_seconds=0.05, down_after_seconds=None),
                     operator_wallet=wallet, clock=clock)
    with TestClient(app) as http:
        service = app.state.service
        try:
            ann, bob = new_guest(http), new_guest(http)
            wallet.refusing = True
            service.stacked.append(DOUBLE_WINS)
            ann.bet("classic", 500)
            round_id = ann.post("/tables/classic/deal").json()["id"]
            assert ann.act(round_id, "double").json()["status"] == "settled"
            assert wallet.balance(f"player:{ann.player_id()}", "USD") == wallet.start - 1000  # her win is owed
            wallet.refusing, wallet.holding = False, True
            eventually(wallet.held.is_set, 10, "the timer retries Ann's credit")

            service.stacked.append(STAYS_IN_PLAY)
            bob.bet("multiplayer", 500)
            assert bob.post("/tables/multiplayer/deal").status_code == 200
            table = service.table("multiplayer")
            clock.advance(table.betting_window + 1)
            bobs_round = bob.get("/tables/multiplayer").json()["round"]["id"]
            eventually(lambda: bob.get(f"/rounds/{bobs_round}").json()["status"] == "playing", 10,
                       "the window's close deals Bob's round")
            clock.advance(table.decision_timeout + 1)
            eventually(lambda: bob.get(f"/rounds/{bobs_round}").json()["status"] == "settled", 10,
                       "the timer stands Bob's hand and the round settles")
            assert not wallet.release.is_set()  # all of it while Ann's credit was still held up
        finally:
            wallet.release.set()
    assert wallet.balance(f"player:{ann.player_id()}", "USD") == wallet.start + 1000  # 2,000 paid, once released


class CountsCreditsAtOnce(ContractWallet):
    """Credits refused while ``refusing``; else each takes 0.2 s, and ``most_at_once`` counts how many overlapped."""

    def __init__(self) -> None:
        super().__init__()
        self.refusing = True
        self.at_once = self.most_at_once = 0
        self.lock = threading.Lock()

    def credit(self, player: str, currency: str, amount: int, tx_id: str, round_id: int | None) -> None:
        if self.refusing:
            raise WalletError("The cashier is closed for a minute.")
        with self.lock:
            self.at_once += 1
            self.most_at_once = max(self.most_at_once, self.at_once)
        time.sleep(0.2)
        with self.lock:
            self.at_once -= 1
        super().credit(player, currency, amount, tx_id, round_id)


def test_the_outbox_sends_its_calls_several_at_once(tmp_path: Path, database_url: str) -> None:
    """Four players' winnings wait in the outbox; once the operator answers again, the timer's retry sends them at
    once rather than one after the other (a shared round's settlement, or a backlog after an outage, waited for each
    winner's credit in turn)."""
    wallet = CountsCreditsAtOnce()
    app = create_app(Settings(database_url, tmp_path, OPERATOR), operator_wallet=wallet, clock=Clock(), timers=False)
    with TestClient(app) as http:
        service = app.state.service
        players = [new_guest(http) for _ in range(4)]
        for player in players:
            service.stacked.append(DOUBLE_WINS)
            player.bet("classic", 500)
            round_id = player.post("/tables/classic/deal").json()["id"]
            assert player.act(round_id, "double").json()["status"] == "settled"
        wallet.refusing = False
        assert service.tick()["delivered"] == 4
        assert wallet.most_at_once >= 2  # 4 when their threads start within 0.2 s of each other; 1 one by one
        assert all(wallet.balance(f"player:{player.player_id()}", "USD") == wallet.start + 1000 for player in players)


def test_history_says_what_a_round_returned_that_the_operator_has_not_yet_taken(tmp_path: Path,
                                                                                  database_url: str) -> None:
    """Ann's winnings wait in the outbox: her history shows them `owed` (her balance does not have them yet), and
    nothing owed once the retry pays them. Before, it said "returned" and nothing told her they were on their way."""
    wallet = CountsCreditsAtOnce()
    app = create_app(Settings(database_url, tmp_path, OPERATOR), operator_wallet=wallet, clock=Clock(), timers=False)
    with TestClient(app) as http:
        service = app.state.service
        ann = new_guest(http)
        service.stacked.extend([DOUBLE_WINS, DOUBLE_WINS])
        rounds = []
        for _ in range(2):
            ann.bet("classic", 500)
            rounds.append(ann.post("/tables/classic/deal").json()["id"])
            assert ann.act(rounds[-1], "double").json()["status"] == "settled"
            wallet.refusing = False  # the first round's winnings are paid at once, the second's wait

        def owed() -> list[tuple[int, int]]:
            history = {entry["id"]: entry for entry in ann.get("/me/history").json()["rounds"]}
            return [(history[round_id]["returned"], history[round_id]["owed"]) for round_id in rounds]

        assert owed() == [(2000, 2000), (2000, 0)]  # the first round's credit refused, the second's taken
        assert service.tick()["delivered"] == 1
        assert owed() == [(2000, 0), (2000, 0)]
