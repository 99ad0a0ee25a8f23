"""Helpers for the server tests: a clock the tests move, a player's API client, a fresh PostgreSQL database."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import Engine, update

from twentyone.server.models import Shoe

OPERATOR = "operator-secret-for-the-tests-only"


@contextmanager
def fresh_postgres_database(admin_url: str, prefix: str, template: str | None = None) -> Iterator[str]:
    """A new database on the PostgreSQL server of ``admin_url``, dropped afterwards; yields its URL. Empty, or a copy
    of the database named ``template`` (which no one may be connected to meanwhile)."""
    from sqlalchemy import create_engine, make_url, text

    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else "")))
    try:
        yield make_url(admin_url).set(database=name).render_as_string(hide_password=False)  # a query may follow
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


class Client:
    """A player's view of the API: their token and an Idempotency-Key on every change."""

    def __init__(self, http: TestClient, token: str, name: str = "") -> None:
        self.http = http
        self.token = token
        self.name = name
        self.headers = {"Authorization": f"Bearer {token}"}

    def get(self, path: str, **params: Any) -> Any:
        return self.http.get(path, headers=self.headers, params=params)

    def post(self, path: str, json: Any = None, key: str | None = None) -> Any:
        headers = {**self.headers, "Idempotency-Key": key or uuid.uuid4().hex}
        return self.http.post(path, json=json, headers=headers)

    def put(self, path: str, json: Any = None, key: str | None = None) -> Any:
        headers = {**self.headers, "Idempotency-Key": key or uuid.uuid4().hex}
        return self.http.put(path, json=json, headers=headers)

    def delete(self, path: str, key: str | None = None) -> Any:
        return self.http.delete(path, headers={**self.headers, "Idempotency-Key": key or uuid.uuid4().hex})

    def player_id(self) -> int:
        return int(self.get("/me").json()["id"])

    def balance(self, currency: str = "USD") -> int:
        return int(self.get("/me").json()["balances"][currency])

    def bet(self, table: str, amount: int, spot: int = 1, bet_type: str = "main") -> Any:
        """Place ``amount`` as one chip of that size (the table must have it)."""
        response = self.post(f"/tables/{table}/bets", {"spot": spot, "type": bet_type, "chip": amount})
        assert response.status_code == 200, response.json()
        return response

    def act(self, round_id: int, action: str) -> Any:
        return self.post(f"/rounds/{round_id}/actions", {"action": action})


def new_guest(http: TestClient) -> Client:
    body = http.post("/auth/guest").json()
    return Client(http, body["token"], body["player"]["name"])


def joined_shared_round(service: Any, clock: Clock, players: list[Client], table: str = "power",
                        bet: int = 500) -> list[Any]:
    """Each player bets and joins the table's forming round, in this order (the seats' order), and its betting window
    runs out; nothing closes it yet. The answers to the players' DEALs."""
    joins = []
    for player in players:
        player.bet(table, bet)
        joins.append(player.post(f"/tables/{table}/deal"))
    clock.advance(service.table(table).betting_window + 1)
    return joins


def dealt_shared_round(service: Any, clock: Clock, players: list[Client], table: str = "power",
                       bet: int = 500) -> int:
    """Each player bets and joins the table's round, then its window closes (the timer's tick): the round's id."""
    joined_shared_round(service, clock, players, table, bet)
    service.tick()
    in_play = players[0].get(f"/tables/{table}").json()["round"]
    # A dealer's blackjack (or every hand's) settles the round at its deal: a test that needs the round in play
    # stacks a shoe that keeps it there (a random one does this about one round in twenty).
    assert in_play is not None, f"the round at {table!r} settled at its deal: stack a shoe that leaves it in play"
    return int(in_play["id"])


def next_shoe(service: Any, table_id: str) -> None:
    """End the shared table's shoe as if its cut card had come out, so that the next round opens a new one
    (the next of ``service.stacked``, when a test stacked one)."""
    with service.store.db.transaction() as session:
        session.execute(update(Shoe).where(Shoe.table_id == table_id).values(finished=True))


def new_player(http: TestClient, name: str) -> Client:
    response = http.post("/auth/register", json={"name": name, "password": "correct horse"})
    assert response.status_code == 201, response.json()
    return Client(http, response.json()["token"], name)


def plan_nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every node of a PostgreSQL plan (``EXPLAIN (FORMAT JSON)``'s ``Plan``), the plan itself first."""
    yield plan
    for child in plan.get("Plans", ()):
        yield from plan_nodes(child)


@contextmanager
def migrated_postgres_engine() -> Iterator[Engine]:
    """An engine on a fresh PostgreSQL database (of ``TWENTYONE_TEST_POSTGRES_URL``'s server) at the newest
    migration, for tests that fill it by SQL and read its planner's choices; dropped afterwards."""
    import os

    from sqlalchemy import create_engine
    from sqlalchemy.pool import NullPool

    from twentyone.server.db import migrate

    with fresh_postgres_database(os.environ["TWENTYONE_TEST_POSTGRES_URL"], "twentyone_test") as url:
        migrate(url)
        engine = create_engine(url, poolclass=NullPool)
        try:
            yield engine
        finally:
            engine.dispose()


def eventually(check: Callable[[], Any], seconds: float, what: str) -> Any:
    """Poll ``check`` until it returns something true, for at most ``seconds``; return what it returned."""
    deadline = time.monotonic() + seconds
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {seconds} s")
        time.sleep(0.02)
