"""Crashes, races and a flaky operator wallet: no money lost or created."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import httpx
from fastapi.testclient import TestClient
from live import call, free_port, start_server
from server_helpers import OPERATOR, Client, Clock

from twentyone.server.app import create_app
from twentyone.server.config import Settings
from twentyone.server.service import GameService
from twentyone.server.wallet import WalletTimeout


def test_a_killed_server_resumes_every_unfinished_round_with_the_balance_exact(tmp_path: Path,
                                                                               database_url: str) -> None:
    port = free_port()
    server = start_server(tmp_path, port, database_url)
    try:
        token = call(port, "POST", "/auth/guest").json()["token"]
        before = call(port, "GET", "/me", token).json()["balances"]["USD"]
        call(port, "POST", "/tables/classic/bets", token, {"spot": 1, "chip": 2500})
        call(port, "POST", "/tables/classic/bets", token, {"spot": 2, "chip": 2500})
        view = call(port, "POST", "/tables/classic/deal", token).json()
        while view["status"] == "playing" and view["decision"]["hand"] == 1 and view["decision"]["seat"] == 1:
            if "insurance" in view["legal_actions"]:
                view = call(port, "POST", f"/rounds/{view['id']}/actions", token, {"action": "no-insurance"}).json()
                continue
            break
        pending = {key: view[key] for key in ("hands", "decision", "legal_actions", "dealer")}
    finally:
        server.send_signal(signal.SIGKILL)
        server.wait()
    server = start_server(tmp_path, port, database_url)
    try:
        resumed = call(port, "GET", f"/rounds/{view['id']}", token).json()
        assert {key: resumed[key] for key in pending} == pending
        while resumed["status"] == "playing":
            legal = resumed["legal_actions"]
            choice = "stand" if "stand" in legal else next(a for a in legal if a.startswith("no-"))
            resumed = call(port, "POST", f"/rounds/{view['id']}/actions", token, {"action": choice}).json()
        after = call(port, "GET", "/me", token).json()["balances"]["USD"]
        assert after == before - resumed["me"]["staked"] + resumed["me"]["returned"]
        assert resumed["me"]["balance_after"] == after
    finally:
        server.send_signal(signal.SIGKILL)
        server.wait()


def test_two_clients_racing_on_one_wallet_cannot_overspend(http: TestClient, service: GameService,
                                                           operator: Client) -> None:
    body = http.post("/auth/register", json={"name": "racer", "password": "correct horse"}).json()
    racer = Client(http, body["token"], "racer")
    # Leave exactly 250.00 USD: room for one 250 bet, never two.
    balance = racer.balance()
    spend = balance - 25000
    operator.post("/admin/credit", {"player": "racer", "currency": "USD", "amount": 1})
    racer_balance = racer.balance()
    assert racer_balance == balance + 1
    service_debit(service, racer, spend + 1)
    assert racer.balance() == 25000
    for spot, chip in ((1, 10000), (2, 10000), (3, 2500), (4, 2500)):
        racer.bet("first-person", chip, spot=spot)
    errors: list[int] = []
    key = uuid.uuid4().hex

    def deal(same_key: bool) -> None:
        response = racer.post("/tables/first-person/deal", key=key if same_key else None)
        errors.append(response.status_code)

    def double() -> None:
        errors.append(racer.post("/tables/first-person/double").status_code)

    threads = [threading.Thread(target=deal, args=(True,)), threading.Thread(target=deal, args=(True,)),
               threading.Thread(target=double), threading.Thread(target=deal, args=(False,))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    final = racer.balance()
    assert final >= 0
    history = racer.get("/me/history").json()["rounds"]
    assert len(history) == 1  # the same key dealt once; the other deal found the round in play
    staked = history[0]["staked"]
    assert staked <= 25000 and final == 25000 - staked + (history[0]["returned"] or 0)


def service_debit(service: GameService, client: Client, amount: int) -> None:
    """Move money out of a player's account as a table would (a stake), for setting up a test."""
    from twentyone.server.wallet import transfer

    player_id = client.get("/me").json()["id"]
    with service.db.transaction() as session:
        transfer(session, player_id, "USD", -amount, "stake", None)


class FlakyOperatorWallet:
    """An operator's wallet that times out on the first call of each transaction id, like a busy network."""

    def __init__(self) -> None:
        self.balances: dict[str, int] = {}
        self.applied: dict[str, int] = {}
        self.seen: set[str] = set()
        self.calls: list[tuple[str, str]] = []

    def _flaky(self, kind: str, tx_id: str) -> None:
        self.calls.append((kind, tx_id))
        if tx_id not in self.seen:
            self.seen.add(tx_id)
            raise WalletTimeout()

    def balance(self, player: str, currency: str) -> int:
        return self.balances.setdefault(player, 100000)

    def debit(self, player: str, currency: str, amount: int, tx_id: str, round_id: int | None) -> None:
        self._flaky("debit", tx_id)
        if tx_id in self.applied:
            return  # idempotent: a retry of a debit already made moves nothing
        self.balances[player] = self.balance(player, currency) - amount
        self.applied[tx_id] = -amount

    def credit(self, player: str, currency: str, amount: int, tx_id: str, round_id: int | None) -> None:
        self._flaky("credit", tx_id)
        if tx_id in self.applied:
            return
        self.balances[player] = self.balance(player, currency) + amount
        self.applied[tx_id] = amount

    def rollback(self, tx_id: str) -> None:
        self.calls.append(("rollback", tx_id))


def test_an_operator_wallet_that_times_out_is_retried_without_double_debits_or_lost_credits(
        tmp_path: Path, database_url: str) -> None:
    wallet = FlakyOperatorWallet()
    settings = Settings(database_url, tmp_path, OPERATOR)
    clock = Clock()
    app = create_app(settings, operator_wallet=wallet, clock=clock, timers=False)
    with TestClient(app) as http:
        service: GameService = app.state.service
        body = http.post("/auth/guest").json()
        player = Client(http, body["token"])
        service.stacked.append(["TS", "6H", "9D", "TC", "8C"])  # 19 stands, dealer busts: a win
        player.bet("classic", 500)
        player.bet("classic", 500)
        view = player.post("/tables/classic/deal").json()
        owner = f"player:{body['player']['id']}"
        assert wallet.balances[owner] == 99000  # one debit despite the timeout and its retry
        settled = player.act(view["id"], "stand").json()
        assert settled["status"] == "settled" and settled["hands"][0]["returned"] == 2000
        # The credit timed out once inside the request; it waits in the outbox and a later tick delivers it.
        assert wallet.balances[owner] in (99000, 101000)
        service.tick()
        assert wallet.balances[owner] == 101000
        service.tick()
        assert wallet.balances[owner] == 101000  # delivered once, never twice
        credits = [tx for kind, tx in wallet.calls if kind == "credit"]
        assert len(set(credits)) == 1


def test_an_outbox_left_by_a_crash_is_delivered_after_a_restart(tmp_path: Path, database_url: str) -> None:
    wallet = FlakyOperatorWallet()
    settings = Settings(database_url, tmp_path, OPERATOR)
    app = create_app(settings, operator_wallet=wallet, clock=Clock(), timers=False)
    with TestClient(app) as http:
        service: GameService = app.state.service
        body = http.post("/auth/guest").json()
        player = Client(http, body["token"])
        service.stacked.append(["TS", "6H", "9D", "TC", "8C"])
        player.bet("classic", 500)
        player.bet("classic", 500)
        view = player.post("/tables/classic/deal").json()
        service._deliver_outbox = lambda: 0  # type: ignore[method-assign]  # dies before delivering
        assert player.act(view["id"], "stand").json()["status"] == "settled"
    restarted = create_app(settings, operator_wallet=wallet, clock=Clock(), timers=False)
    with TestClient(restarted):
        owner = f"player:{body['player']['id']}"
        assert wallet.balances[owner] == 99000
        restarted.state.service.tick()  # first try times out
        restarted.state.service.tick()
        assert wallet.balances[owner] == 101000


def test_serve_plugs_in_an_operator_wallet_by_name(tmp_path: Path) -> None:
    port = free_port()
    env = {**os.environ, "TWENTYONE_OPERATOR_TOKEN": OPERATOR,
           "PYTHONPATH": str(Path(__file__).parent) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    process = subprocess.Popen(
        [sys.executable, "-m", "twentyone.cli.main", "serve", "--port", str(port), "--data-dir", str(tmp_path),
         "--wallet", "fake_operator_wallet:MemoryWallet"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        token = call(port, "POST", "/auth/guest").json()["token"]
        assert call(port, "GET", "/me", token).json()["balances"]["USD"] == 77_700  # the operator's balance
    finally:
        process.kill()
        process.wait()
    bad = subprocess.run([sys.executable, "-m", "twentyone.cli.main", "serve", "--wallet", "nowhere:Nothing"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "cannot import 'nowhere'" in bad.stderr
