"""Transactions that lock several players' accounts take them in one order: a close of betting as a settlement does.

A player may sit at two shared tables. A close of betting at one and a settlement at the other then both lock that
player's account and another's; taken in different orders, each could hold what the other waits for, and PostgreSQL
would end one of them after its deadlock check (a second's stall, and a 503 or a retried tick).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from fastapi.testclient import TestClient
from server_helpers import Client, Clock, joined_shared_round, new_player, next_shoe
from sqlalchemy import make_url, select, text

from twentyone.server.models import RoundSeat
from twentyone.server.roundtrips import traced
from twentyone.server.service import GameService
from twentyone.server.wallet import ledger_balance, lock_player, transfer, unreconciled_accounts

TABLE = "multiplayer"
NO_ACES = ["TS", "5H", "6D", "9C", "6S", "TC", "8H", "9S", "7D", "8D", "9D", "TD", "2C", "3C"]


def joined(service: GameService, clock: Clock, players: list[Client]) -> None:
    """Each player bets and joins the table's forming round, in this order (the seats' order); its window runs out."""
    assert [join.status_code for join in joined_shared_round(service, clock, players, TABLE)] == [200] * len(players)


def libpq_url(service: GameService) -> str:
    return make_url(service.db.url).set(drivername="postgresql").render_as_string(hide_password=False)


def account_id(connection: psycopg.Connection[Any], player: Client) -> int:
    row = connection.execute("SELECT id FROM accounts WHERE owner = %s AND currency = 'USD'",
                             [f"player:{player.player_id()}"]).fetchone()
    assert row is not None
    return int(row[0])


def wait_for_a_lock_wait(url: str, seconds: float = 10) -> None:
    """Until some transaction of this database waits for a row's lock."""
    with psycopg.connect(url, autocommit=True) as watcher:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            row = watcher.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                                  "AND wait_event_type = 'Lock'").fetchone()
            if row is not None and row[0]:
                return
            time.sleep(0.01)
    raise AssertionError("nothing waited for a lock")


def settled_elsewhere_meanwhile(service: GameService, first: Client, second: Client, work: Callable[[], None]) -> None:
    """Another table's settlement, which locks two players' accounts in the order of their ids, runs around ``work``:
    it holds ``first``'s (the lower id) while ``work`` starts in a thread, waits until something waits for a row's
    lock, then takes ``second``'s, credits ``first`` 1,000 (with its two ledger rows) and commits; ``work``'s thread is
    then joined. A ``work`` that holds ``second``'s account while it waits for ``first``'s deadlocks with it."""
    url = libpq_url(service)
    with psycopg.connect(url) as settlement:
        firsts, seconds = account_id(settlement, first), account_id(settlement, second)
        assert firsts < seconds
        settlement.execute("SET lock_timeout = '10s'")
        settlement.execute("SELECT id FROM accounts WHERE id = %s FOR NO KEY UPDATE", [firsts])
        working = threading.Thread(target=work)
        working.start()
        wait_for_a_lock_wait(url)
        settlement.execute("SELECT id FROM accounts WHERE id = %s FOR NO KEY UPDATE", [seconds])
        house = settlement.execute("SELECT id FROM accounts WHERE owner = 'house' AND currency = 'USD'").fetchone()
        assert house is not None
        settlement.execute("UPDATE accounts SET balance = balance + 1000 WHERE id = %s", [firsts])
        for account, amount in ((firsts, 1000), (house[0], -1000)):  # money reaching first meanwhile, as its rows
            settlement.execute("INSERT INTO ledger (transfer_id, account_id, amount, kind, round_id, created_at) "
                               "VALUES ('the other table', %s, %s, 'credit', NULL, now())", [account, amount])
        settlement.commit()
    working.join(timeout=30)


def test_a_close_of_betting_locks_its_seats_accounts_in_the_order_a_settlement_does(
        http: TestClient, service: GameService, clock: Clock) -> None:
    """Ann's account is older (a lower id) but Bob sat first. Another table's settlement holds Ann's account, as it
    would lock both in the order of their ids, while this table's betting closes; then it takes Bob's, and credits Ann.
    Seat by seat, the close held Bob's and waited for Ann's, and PostgreSQL ended it as a deadlock (503). In the order
    of the ids it waits for Ann's first, holding nothing the settlement needs, deals once the settlement commits, and
    stakes Ann's bet on the balance the settlement left her (which it read after its wait)."""
    if service.db.engine.dialect.name != "postgresql":
        pytest.skip("SQLite has one writer: its transactions never hold rows for each other")
    ann, bob = new_player(http, "ann"), new_player(http, "bob")
    joined(service, clock, [bob, ann])
    anns_balance = ann.balance("USD")
    outcome: dict[str, Any] = {}

    def close() -> None:
        try:
            outcome["round"] = service.close_betting(TABLE)
        except Exception as error:  # the test reports it
            outcome["error"] = error

    settled_elsewhere_meanwhile(service, ann, bob, close)
    assert "error" not in outcome, outcome
    round_id = outcome["round"]
    assert round_id is not None
    for player in (ann, bob):
        view = player.get(f"/rounds/{round_id}").json()
        assert view["status"] in ("playing", "settled") and view["me"]["staked"] == 500
    with service.db.sessions() as session:
        seat = session.scalars(select(RoundSeat).where(RoundSeat.round_id == round_id,
                                                       RoundSeat.player_id == ann.player_id())).one()
        assert seat.balance_before == anns_balance + 1000
        assert unreconciled_accounts(session) == []


# Ann 20 (TS, TC) stands, Bob 11 (5H, 6D) doubles and draws 2C; the dealer's 16 (hole 9C, up 7D) draws 2D: 18. Bob's
# double ends the round, and its settlement pays Ann.
ANN_WINS_AFTER_BOBS_DOUBLE = ["TS", "5H", "9C", "TC", "6D", "7D", "2C", "2D", "8S", "8H", "8C", "8D"]


def bobs_double_to_come(http: TestClient, service: GameService, clock: Clock) -> tuple[Client, Client, int]:
    """Ann (the older account) and Bob at the multiplayer table, that shoe stacked, Ann stood: Bob's turn."""
    ann, bob = new_player(http, "ann"), new_player(http, "bob")
    service.stacked.append(ANN_WINS_AFTER_BOBS_DOUBLE)
    joined(service, clock, [ann, bob])
    round_id = service.close_betting(TABLE)
    assert round_id is not None and ann.act(round_id, "stand").status_code == 200
    return ann, bob, round_id


def test_a_costly_decision_that_settles_the_round_locks_in_the_order_a_settlement_does(
        http: TestClient, service: GameService, clock: Clock) -> None:
    """Bob's double is the round's last decision, so its transaction stakes Bob's double and then pays Ann, the winner.
    Another table's settlement holds Ann's account (the lower id), as it would lock both in the order of their ids,
    while Bob doubles; then it takes Bob's, and credits Ann. Locking Bob's account for his stake first, the double held
    Bob's and waited for Ann's, and PostgreSQL ended one of the two as a deadlock. In the order of the ids the double
    waits for Ann's first, holding no account, and goes on once the settlement commits."""
    if service.db.engine.dialect.name != "postgresql":
        pytest.skip("SQLite has one writer: its transactions never hold rows for each other")
    ann, bob, round_id = bobs_double_to_come(http, service, clock)
    anns_balance, bobs_balance = ann.balance("USD"), bob.balance("USD")
    outcome: dict[str, Any] = {}
    settled_elsewhere_meanwhile(service, ann, bob, lambda: outcome.update(double=bob.act(round_id, "double")))
    assert outcome["double"].status_code == 200, outcome["double"].json()
    view = ann.get(f"/rounds/{round_id}").json()
    assert view["status"] == "settled" and view["me"]["returned"] == 1000, view["me"]
    assert ann.balance("USD") == anns_balance + 1000 + 1000  # the other table's credit, and her win (stake and as much)
    assert bob.balance("USD") == bobs_balance - 500  # the double's stake; he lost both
    with service.db.sessions() as session:
        assert unreconciled_accounts(session) == []


def test_a_decision_refused_once_its_accounts_are_locked_leaves_the_round_as_its_log_has_it(
        http: TestClient, service: GameService, clock: Clock) -> None:
    """At a shared table a decision's stake is checked before the engine moves (no lock held yet) and again once the
    accounts are locked. Bob's balance is spent at another table in between: the double is refused with the legal
    actions, the engine it had moved is dropped, and his stand then settles the round from the log."""
    if service.db.engine.dialect.name != "postgresql":
        pytest.skip("SQLite has one writer: nothing can spend Bob's balance while his decision is under way")
    ann, bob, round_id = bobs_double_to_come(http, service, clock)
    anns_balance = ann.balance("USD")

    def spend_bobs_balance(stage: str) -> None:  # after the unlocked check, before the engine moves
        if stage == "act":
            with service.db.transaction() as session:
                # Where the decision held Bob's account already (the code before), this waits for it: fail, not hang.
                session.execute(text("SET LOCAL lock_timeout = '5s'"))
                transfer(session, bob.player_id(), "USD", -ledger_balance(session, bob.player_id(), "USD"), "stake",
                         None)

    service.fault = spend_bobs_balance
    refused = bob.act(round_id, "double")
    service.fault = lambda stage: None
    assert refused.status_code == 409 and refused.json()["amounts"] == {"cost": 500, "balance": 0}, refused.json()
    assert refused.json()["legal_actions"] == ["hit", "stand", "double"]
    assert bob.get(f"/rounds/{round_id}").json()["hands"][-1]["cards"] == ["5H", "6D"]  # no card drawn
    assert bob.act(round_id, "stand").json()["status"] == "settled"
    view = ann.get(f"/rounds/{round_id}").json()
    assert view["status"] == "settled" and view["me"]["returned"] == 1000  # 20 against the dealer's 9, 7 and 2: 18
    assert ann.balance("USD") == anns_balance + 1000
    assert bob.get("/me/history").json()["rounds"][0]["decisions"] == ["stand"]
    with service.db.sessions() as session:
        assert unreconciled_accounts(session) == []


def test_a_close_of_betting_takes_no_round_trip_per_seat(http: TestClient, service: GameService, clock: Clock,
                                                        tmp_path: Path) -> None:
    """Its seats' accounts are locked by one statement, each stake, whose result the lock made known, goes with the
    next statement, and the daily loss limits every player here set are checked against one statement's sums: a round
    of five seats closes in as many round trips as one of two."""
    if service.db.engine.dialect.name != "postgresql":
        pytest.skip("round trips to PostgreSQL")
    players = [new_player(http, f"player{number}") for number in range(5)]
    for player in players:
        assert player.put("/me/limits", {"daily_loss_limit": 100_000}).status_code == 200
    trips = []
    for seated in (players[:2], players):
        service.stacked.append(NO_ACES)  # nobody's blackjack, nor the dealer's: no round settles at the deal
        next_shoe(service, TABLE)
        joined(service, clock, seated)
        with traced(service.db.engine, tmp_path / f"close{len(seated)}.trace") as counted:
            round_id = service.close_betting(TABLE)
        assert round_id is not None and seated[0].get(f"/rounds/{round_id}").json()["status"] == "playing"
        trips.append(counted[0])
        service.rounds.void(round_id, "the test is done with it")  # so that the next round forms
    assert trips[0] == trips[1], trips


def test_a_savepoint_rolled_back_leaves_no_balance_noted_from_inside_it(http: TestClient,
                                                                        service: GameService) -> None:
    """A transaction notes the balances it holds locked and changes (a stake's result then needs no answer). A rollback
    to a savepoint undoes the changes made since, and the notes with them: a stake inside it that was undone must not
    count in the balance read, nor in the next stake's."""
    ann = new_player(http, "ann")
    player_id, before = ann.player_id(), ann.balance("USD")
    with service.db.transaction() as session:
        lock_player(session, player_id, "USD")
        savepoint = session.begin_nested()
        transfer(session, player_id, "USD", -100, "stake", None)
        assert ledger_balance(session, player_id, "USD") == before - 100
        savepoint.rollback()
        assert ledger_balance(session, player_id, "USD") == before
        lock_player(session, player_id, "USD")
        transfer(session, player_id, "USD", -50, "stake", None)
        assert ledger_balance(session, player_id, "USD") == before - 50
    assert ann.balance("USD") == before - 50
    with service.db.sessions() as session:
        assert unreconciled_accounts(session) == []
