"""An operator's wallet is debited by a call outside the game's transaction: a debit whose stake does not commit is
rolled back, once and surely, and a retry of the work debits anew.

The operator here (``fake_operator_wallet.ContractWallet``) keeps the contract strictly: a rollback is final, and a
debit with an id it rolled back is refused.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from fake_operator_wallet import ContractWallet, FileWallet
from fastapi.testclient import TestClient
from server_helpers import Client, Clock, new_guest
from sqlalchemy import select
from test_faults import Server
from test_lock_order import account_id, bobs_double_to_come, joined, libpq_url

from twentyone.server.app import create_app
from twentyone.server.config import Settings
from twentyone.server.journal import JOURNALS, Debit
from twentyone.server.models import Account, LedgerEntry, WalletCall
from twentyone.server.service import GameService
from twentyone.server.wallet import unreconciled_accounts

# Classic: the player's 5 and 6, the dealer's 6 and 10; a double draws the 9 (20), the dealer draws the 8 and busts.
DOUBLE_WINS = ["5S", "6H", "6D", "TC", "9C", "8C"]


@pytest.fixture
def wallet() -> ContractWallet:
    return ContractWallet()


@pytest.fixture
def http(settings: Settings, clock: Clock, wallet: ContractWallet) -> Iterator[TestClient]:
    app = create_app(settings, operator_wallet=wallet, clock=clock, timers=False)
    with TestClient(app) as client:
        yield client


def owner(player: Client) -> str:
    return f"player:{player.player_id()}"


def outbox(service: GameService) -> list[tuple[str, str]]:
    """Every call in the outbox: (kind, status)."""
    with service.db.sessions() as session:
        return [(call.kind, call.status) for call in session.scalars(select(WalletCall).order_by(WalletCall.id))]


def staked(service: GameService, player: Client) -> int:
    """What the game's ledger (the operator's balances' shadow) records as the player's stakes."""
    with service.db.sessions() as session:
        rows = session.scalars(select(LedgerEntry.amount).join(Account, Account.id == LedgerEntry.account_id)
                               .where(LedgerEntry.kind == "stake", Account.owner == owner(player)))
        return -sum(rows)


def test_a_double_whose_settlement_fails_is_rolled_back_and_the_round_refunded(
        http: TestClient, service: GameService, wallet: ContractWallet) -> None:
    """The double is debited, then the settlement it leads to malfunctions: nothing of the decision commits and the
    round is voided, its committed stake refunded. The double's debit is rolled back; before, the operator kept it."""
    guest = new_guest(http)
    service.stacked.append(DOUBLE_WINS)
    guest.bet("classic", 500)
    round_id = guest.post("/tables/classic/deal").json()["id"]
    assert wallet.balance(owner(guest), "USD") == wallet.start - 500

    def settlement_fails(stage: str) -> None:
        if stage == "settle":
            raise RuntimeError("the card reader failed")

    service.fault = settlement_fails
    answer = guest.act(round_id, "double")
    service.fault = lambda stage: None
    assert answer.status_code == 200 and answer.json()["status"] == "void", answer.json()
    doubles = [tx_id for kind, tx_id in wallet.calls if kind == "debit" and tx_id.startswith(f"debit-{round_id}-")]
    assert len(doubles) == 2  # the deal's and the double's
    assert wallet.rollbacks() == {doubles[1]}
    service.tick()  # the void's refund of the deal's stake, from the outbox
    assert wallet.balance(owner(guest), "USD") == wallet.start
    assert sorted(outbox(service)) == [("credit", "done"), ("debit", "done"), ("rollback", "done")]
    with service.db.sessions() as session:
        assert unreconciled_accounts(session) == []


def test_a_deal_retried_after_a_malfunction_is_debited_anew(http: TestClient, service: GameService,
                                                            wallet: ContractWallet) -> None:
    """The deal malfunctions after its debit: the debit is rolled back, and the player's retry (the same key) is a new
    debit, which the operator takes. With one id for both, the operator refused the retry as rolled back, or (before
    the rollback) took the first attempt's debit for the retry's."""
    guest = new_guest(http)
    guest.bet("classic", 500)

    def deal_fails(stage: str) -> None:
        if stage == "deal":
            raise RuntimeError("the shuffler jammed")

    service.fault = deal_fails
    failed = guest.post("/tables/classic/deal", key="deal-once")
    service.fault = lambda stage: None
    assert failed.status_code == 500 and "nothing was staked" in failed.json()["detail"]
    assert wallet.balance(owner(guest), "USD") == wallet.start and len(wallet.rollbacks()) == 1
    retried = guest.post("/tables/classic/deal", key="deal-once")
    assert retried.status_code == 200, retried.json()
    assert wallet.balance(owner(guest), "USD") == wallet.start - 500
    assert staked(service, guest) == 500
    debits = [tx_id for kind, tx_id in wallet.calls if kind == "debit"]
    assert len(debits) == 2 and debits[0] != debits[1]


def test_a_debit_that_lost_its_answer_is_rolled_back_through_the_outbox(http: TestClient, service: GameService,
                                                                        wallet: ContractWallet) -> None:
    """The operator applies the debit and its answer is lost, at every retry; the rollback does not answer either, three
    times. The deal is a 503 with nothing dealt, and the rollback waits in the outbox until it gets through. Before, the
    rollback was tried three times and forgotten: the operator kept the stake."""
    guest = new_guest(http)
    guest.bet("classic", 500)
    wallet.debit_timeouts, wallet.rollback_timeouts = 3, 3
    refused = guest.post("/tables/classic/deal")
    assert refused.status_code == 503 and refused.headers["Retry-After"], refused.json()
    assert wallet.balance(owner(guest), "USD") == wallet.start - 500  # the operator holds it until the rollback
    assert outbox(service) == [("rollback", "pending")]
    for _ in range(3):
        service.tick()
    assert wallet.balance(owner(guest), "USD") == wallet.start
    assert outbox(service) == [("rollback", "done")]
    assert guest.get("/tables/classic").json()["round"] is None and staked(service, guest) == 0


def test_a_debit_whose_commit_answer_was_lost_stands(http: TestClient, service: GameService,
                                                     wallet: ContractWallet) -> None:
    """A transaction whose COMMIT went through, its answer lost with the connection, owes its debits a rollback as any
    failed one does; the debit's row in the outbox, written with its stake, tells that it stands."""
    guest = new_guest(http)
    service.stacked.append(DOUBLE_WINS)  # the round stays in play: no credit yet
    guest.bet("classic", 500)
    round_id = guest.post("/tables/classic/deal").json()["id"]
    (tx_id,) = [tx_id for kind, tx_id in wallet.calls if kind == "debit"]
    remote = service.wallet.remote  # type: ignore[attr-defined]
    remote.owe_rollback(Debit(tx_id, guest.player_id(), "USD", 500, round_id))
    assert service.wallet.owes()
    service.tick()
    assert not service.wallet.owes() and ("rollback", tx_id) not in wallet.calls
    assert wallet.balance(owner(guest), "USD") == wallet.start - 500


def test_an_operators_refusal_of_a_decision_is_answered_with_the_legal_actions(
        http: TestClient, service: GameService, wallet: ContractWallet) -> None:
    guest = new_guest(http)
    service.stacked.append(DOUBLE_WINS)
    guest.bet("classic", 500)
    round_id = guest.post("/tables/classic/deal").json()["id"]
    wallet.refuse.add(owner(guest))
    refused = guest.act(round_id, "double")
    assert refused.status_code == 409, refused.json()
    assert refused.json()["detail"] == "The operator's wallet refused the stake."
    assert refused.json()["legal_actions"] == ["hit", "stand", "double"]
    assert guest.get(f"/rounds/{round_id}").json()["hands"][-1]["cards"] == ["5S", "6D"]  # no card drawn


def test_a_seat_the_operator_refuses_at_the_close_of_betting_sits_out_alone(
        http: TestClient, service: GameService, clock: Clock, wallet: ContractWallet) -> None:
    """Bob's debit is refused when the betting closes: his bets sit the round out and Ann's are dealt. Before, the
    refusal voided the round for everyone, and the debits made before his were kept by the operator."""
    ann, bob = new_guest(http), new_guest(http)
    joined(service, clock, [ann, bob])
    wallet.refuse.add(owner(bob))
    round_id = service.close_betting("multiplayer")
    assert round_id is not None
    view = ann.get(f"/rounds/{round_id}").json()
    assert view["status"] in ("playing", "settled") and view["me"]["staked"] == 500, view
    assert bob.get(f"/rounds/{round_id}").status_code == 404 or bob.get(f"/rounds/{round_id}").json()["me"] is None
    assert wallet.balance(owner(bob), "USD") == wallet.start
    assert staked(service, bob) == 0 and staked(service, ann) == 500


def test_a_costly_decision_at_a_shared_table_debits_before_it_locks_any_account(
        http: TestClient, service: GameService, clock: Clock, wallet: ContractWallet) -> None:
    """Bob's double settles the round, so its transaction locks his account and Ann's, the winner's: the operator's
    debit, a call over the network, is made before, holding neither. Before, it was made with both locked: a slow
    operator held every winner of the round, and whatever else waited for them."""
    if service.db.engine.dialect.name != "postgresql":
        pytest.skip("SQLite has one writer: its transactions lock no rows")
    ann, bob, round_id = bobs_double_to_come(http, service, clock)
    free: dict[str, bool] = {}

    def try_the_accounts() -> None:
        with psycopg.connect(libpq_url(service)) as other:
            for name, player in (("ann", ann), ("bob", bob)):
                try:
                    other.execute("SELECT id FROM accounts WHERE id = %s FOR NO KEY UPDATE NOWAIT",
                                  [account_id(other, player)])
                    free[name] = True
                except psycopg.errors.LockNotAvailable:
                    free[name] = False
                other.rollback()

    anns, bobs = owner(ann), owner(bob)
    wallet.on_debit = try_the_accounts
    answer: Any = bob.act(round_id, "double")
    wallet.on_debit = lambda: None
    assert answer.status_code == 200 and answer.json()["status"] == "settled", answer.json()
    assert free == {"ann": True, "bob": True}
    service.tick()  # Ann's win, from the outbox
    assert wallet.balance(anns, "USD") == wallet.start + 500  # 20 against 18: even money
    assert wallet.balance(bobs, "USD") == wallet.start - 1000  # the bet and its double, lost


def wait_until(condition: Callable[[], bool], seconds: float = 15) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "not within the time"
        time.sleep(0.05)


def test_a_debit_left_by_a_killed_process_is_rolled_back_by_the_next(tmp_path: Path, database_url: str) -> None:
    """A real server dies (``os._exit``, as kill -9) inside the deal, after the operator's debit and before its stake
    commits; then again inside the settlement of a double. Each time the next process finds the debit in the dead
    one's journal and rolls it back at its first tick; the player's retries (the same keys) debit anew, and the
    operator ends holding exactly what the round's record says. Before the journal, the operator kept both debits."""
    wallet_file = tmp_path / "operator.json"
    server = Server(tmp_path, database_url, {"TWENTYONE_TEST_WALLET": "fake_operator_wallet:FileWallet",
                                             "TWENTYONE_TEST_WALLET_FILE": str(wallet_file)})
    operator = FileWallet(str(wallet_file))
    try:
        server.start()
        guest = server.call("POST", "/auth/guest").json()
        token, owner = guest["token"], f"player:{guest['player']['id']}"

        def held() -> int:
            return operator.balance(owner, "USD")

        assert server.call("POST", "/tables/classic/bets", token, {"spot": 1, "chip": 500}).status_code == 200
        server.arm("fault:deal")
        server.dies_on("POST", "/tables/classic/deal", token, key="deal")
        assert held() == operator.start - 500  # the dead process's debit, with the operator
        server.start()
        wait_until(lambda: held() == operator.start)  # rolled back from the dead process's journal
        view = server.call("POST", "/tables/classic/deal", token, key="deal").json()
        assert view["status"] == "playing" and held() == operator.start - 500, view
        server.arm("fault:settle")  # 5 doubled draws a 2; the dealer's 16 draws a 2: the settlement, then death
        server.dies_on("POST", f"/rounds/{view['id']}/actions", token, {"action": "double"}, "double")
        assert held() == operator.start - 1000
        server.start()
        wait_until(lambda: held() == operator.start - 500)
        settled = server.call("POST", f"/rounds/{view['id']}/actions", token, {"action": "double"}, "double").json()
        assert settled["status"] == "settled" and settled["me"]["staked"] == 1000, settled
        wait_until(lambda: held() == operator.start - settled["me"]["staked"] + settled["me"]["returned"])
        assert len(list((tmp_path / JOURNALS).glob("*.journal"))) == 1  # the living process's; the dead ones', gone
    finally:
        if server.process is not None and server.process.poll() is None:
            server.process.kill()
            server.process.wait()
