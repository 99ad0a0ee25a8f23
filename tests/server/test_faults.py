"""Faults, tested: a real server killed at many points of a round, and database errors injected inside a round.

(a) A test loops over the stages of a round. At each, a real server process dies
like kill -9 (``os._exit`` inside the transaction, or after the commit before the
answer, or SIGKILL from outside between requests); the next process starts on the
same database, the same request is retried with the same Idempotency-Key, and the
round resumes or settles exactly once with the ledger balanced to the cent.

(b) A database error (connection lost, write refused) raised inside a round's
transaction: 503 with Retry-After, the round exactly as it was, the same key
applies it later, and other tables keep serving.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from integrity import ledger_totals
from live import free_port
from server_helpers import OPERATOR, Client, Clock, eventually, new_guest
from sqlalchemy import create_engine, func, select
from sqlalchemy import exc as db_errors

from twentyone.server.app import create_app
from twentyone.server.config import Settings
from twentyone.server.models import Account, LedgerEntry, Round, RoundSeat
from twentyone.server.service import GameService

RUNNER = Path(__file__).with_name("crash_server.py")
# Classic: player 2S 3D, dealer 6H (hole TC); hit 2C, hit 2D, stand; the dealer draws 9S and busts: a win.
STACK = ["2S", "6H", "3D", "TC", "2C", "2D", "9S"]
PLAY = ["hit", "hit", "stand"]


class Server:
    """One database, one server process at a time, started with the stage at which it will die."""

    def __init__(self, tmp_path: Path, database_url: str, env: dict[str, str] | None = None) -> None:
        self.directory = tmp_path
        self.url = database_url
        self.env = env or {}  # more of the server's environment
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self.deaths = 0

    def arm(self, stage: str | None) -> None:
        armed = self.directory / "crash-at"
        if stage is None:
            armed.unlink(missing_ok=True)
        else:
            armed.write_text(stage)

    def start(self) -> None:
        self.arm(None)
        env = {**os.environ, "TWENTYONE_OPERATOR_TOKEN": OPERATOR, "TWENTYONE_TEST_STACKS": json.dumps([STACK] * 20),
               "PYTHONPATH": os.pathsep.join(sys.path), **self.env}
        self.process = subprocess.Popen([sys.executable, str(RUNNER), self.url, str(self.directory), str(self.port)],
                                        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 60
        while time.time() < deadline:
            assert self.process.poll() is None, "the server exited at start"
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/health", timeout=1).status_code == 200:
                    self.starts += 1
                    return
            except httpx.HTTPError:
                time.sleep(0.05)
        raise AssertionError("the server did not start")

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)
        self.deaths += 1

    def died(self) -> None:
        """The process ended itself at its stage, as kill -9 would have."""
        assert self.process is not None
        assert self.process.wait(timeout=30) == 137
        self.deaths += 1

    def call(self, method: str, path: str, token: str | None = None, body: Any = None,
             key: str | None = None) -> httpx.Response:
        headers = {"Idempotency-Key": key or uuid.uuid4().hex}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        return httpx.request(method, f"http://127.0.0.1:{self.port}{path}", headers=headers, json=body, timeout=30)

    def dies_on(self, method: str, path: str, token: str, body: Any = None, key: str | None = None) -> None:
        with pytest.raises(httpx.HTTPError):
            self.call(method, path, token, body, key)
        self.died()


def check_books(url: str, player_id: int, credits: int) -> dict[str, int]:
    """The ledger balances to the cent; the player's wallet is credits - staked + returned; each settled round
    paid once; nothing is left in play."""
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            assert connection.scalar(select(func.coalesce(func.sum(LedgerEntry.amount), 0))) == 0
            assert connection.execute(select(LedgerEntry.transfer_id).group_by(LedgerEntry.transfer_id)
                                      .having(func.sum(LedgerEntry.amount) != 0)).all() == []
            seats = connection.execute(select(RoundSeat.round_id, RoundSeat.staked, RoundSeat.returned, Round.status)
                                       .join(Round, Round.id == RoundSeat.round_id)
                                       .where(RoundSeat.player_id == player_id)).all()
            account = connection.scalar(select(Account.id).where(Account.owner == f"player:{player_id}",
                                                                 Account.currency == "USD"))
            balance = connection.scalar(select(func.coalesce(func.sum(LedgerEntry.amount), 0))
                                        .where(LedgerEntry.account_id == account))
            staked = sum(seat.staked for seat in seats)
            returned = sum(seat.returned for seat in seats)
            assert balance == credits - staked + returned
            for seat in seats:
                stakes = connection.scalar(select(func.coalesce(func.sum(LedgerEntry.amount), 0)).where(
                    LedgerEntry.round_id == seat.round_id, LedgerEntry.account_id == account,
                    LedgerEntry.kind == "stake"))
                paid = connection.execute(select(LedgerEntry.amount).where(
                    LedgerEntry.round_id == seat.round_id, LedgerEntry.account_id == account,
                    LedgerEntry.kind.in_(("win", "void")))).all()
                assert -stakes == seat.staked  # every stake recorded once
                assert len(paid) <= 1 and sum(row.amount for row in paid) == seat.returned  # paid once
            return {"rounds": len(seats), "playing": sum(seat.status == "playing" for seat in seats),
                    "settled": sum(seat.status == "settled" for seat in seats), "balance": int(balance)}
    finally:
        engine.dispose()


DEFAULT_STAGES = ["inside the deal", "a decision's answer lost", "between decisions", "inside settlement"]
SLOW = pytest.mark.skipif(not os.environ.get("TWENTYONE_SLOW"), reason="the full run: TWENTYONE_SLOW=1")


def test_kill_9_at_stages_of_a_round_loses_nothing(tmp_path: Path, database_url: str) -> None:
    kill_chain(tmp_path, database_url, DEFAULT_STAGES)


@pytest.mark.slow
@SLOW
def test_kill_9_at_every_stage_of_a_round_loses_nothing(tmp_path: Path, database_url: str) -> None:
    kill_chain(tmp_path, database_url, None)


def kill_chain(tmp_path: Path, database_url: str, names: list[str] | None) -> None:
    server = Server(tmp_path, database_url)
    try:
        run_chain(server, database_url, names)
    finally:
        if server.process is not None and server.process.poll() is None:
            server.process.kill()
            server.process.wait()


def run_chain(server: Server, database_url: str, names: list[str] | None) -> None:
    server.start()
    body = server.call("POST", "/auth/register", body={"name": "survivor", "password": "correct horse"}).json()
    token, player_id = body["token"], body["player"]["id"]
    credits = server.call("GET", "/me", token).json()["balances"]["USD"]
    rounds_played = 0

    def bet() -> None:
        assert server.call("POST", "/tables/classic/bets", token, {"spot": 1, "chip": 500}).status_code == 200

    def deal() -> dict[str, Any]:
        view = server.call("POST", "/tables/classic/deal", token).json()
        assert view["status"] == "playing" and view["hands"][0]["cards"] == ["2S", "3D"], view
        return view

    def play(round_id: int, actions: list[str]) -> dict[str, Any]:
        view: dict[str, Any] = {}
        for action in actions:
            response = server.call("POST", f"/rounds/{round_id}/actions", token, {"action": action})
            assert response.status_code == 200, response.json()
            view = response.json()
        return view

    def finish(round_id: int) -> dict[str, Any]:
        view = server.call("GET", f"/rounds/{round_id}", token).json()
        done = len(view["hands"][0]["cards"]) - 2 + (view["status"] != "playing")
        view = play(round_id, PLAY[done:]) if view["status"] == "playing" else view
        assert view["status"] == "settled" and view["hands"][0]["outcome"] == "win"
        assert view["me"]["staked"] == 500 and view["me"]["returned"] == 1000
        return view

    # Each stage: (the stage the process dies at, what to do until it dies, how to check and finish after restart).
    def after_bets() -> Callable[[], None]:
        bet()
        server.kill()  # SIGKILL with a bet on the slip, before the deal

        def recover() -> None:
            table = server.call("GET", "/tables/classic", token).json()
            assert table["slip"]["total"] in (0, 500) and table["round"] is None  # held, never debited
            assert server.call("GET", "/me", token).json()["balances"]["USD"] == credits + 500 * rounds_played
            server.call("POST", "/tables/classic/clear", token)
        return recover

    def inside_deal() -> Callable[[], None]:
        bet()
        server.dies_on("POST", "/tables/classic/deal", token, key="deal-1")

        def recover() -> None:
            nonlocal rounds_played
            assert check_books(database_url, player_id, credits)["rounds"] == rounds_played  # nothing dealt
            view = server.call("POST", "/tables/classic/deal", token, key="deal-1").json()
            rounds_played += 1
            finish(view["id"])
        return recover

    def deal_answer_lost() -> Callable[[], None]:
        bet()
        server.dies_on("POST", "/tables/classic/deal", token, key="deal-2")

        def recover() -> None:
            nonlocal rounds_played
            assert check_books(database_url, player_id, credits)["playing"] == 1  # committed before the death
            view = server.call("POST", "/tables/classic/deal", token, key="deal-2").json()  # the first answer
            assert view["hands"][0]["cards"] == ["2S", "3D"] and view["status"] == "playing"
            rounds_played += 1
            finish(view["id"])
        return recover

    def inside_decision(number: int) -> Callable[[], Callable[[], None]]:
        def stage() -> Callable[[], None]:
            bet()
            round_id = deal()["id"]
            play(round_id, PLAY[:number - 1])
            before = server.call("GET", f"/rounds/{round_id}", token).json()
            key = f"act-{round_id}-{number}"
            server.dies_on("POST", f"/rounds/{round_id}/actions", token, {"action": PLAY[number - 1]}, key)

            def recover() -> None:
                nonlocal rounds_played
                now = server.call("GET", f"/rounds/{round_id}", token).json()
                assert now == before  # same cards, same decision, same balance: nothing of it committed
                server.call("POST", f"/rounds/{round_id}/actions", token, {"action": PLAY[number - 1]}, key)
                rounds_played += 1
                finish(round_id)
            return recover
        return stage

    def decision_answer_lost(number: int) -> Callable[[], Callable[[], None]]:
        def stage() -> Callable[[], None]:
            bet()
            round_id = deal()["id"]
            play(round_id, PLAY[:number - 1])
            key = f"acted-{round_id}-{number}"
            server.dies_on("POST", f"/rounds/{round_id}/actions", token, {"action": PLAY[number - 1]}, key)

            def recover() -> None:
                nonlocal rounds_played
                first = server.call("POST", f"/rounds/{round_id}/actions", token, {"action": PLAY[number - 1]}, key)
                assert first.status_code == 200
                assert len(first.json()["hands"][0]["cards"]) == 2 + min(number, 2)  # applied once, not twice
                rounds_played += 1
                finish(round_id)
            return recover
        return stage

    def between_decisions() -> Callable[[], None]:
        bet()
        round_id = deal()["id"]
        play(round_id, PLAY[:1])
        before = server.call("GET", f"/rounds/{round_id}", token).json()
        server.kill()

        def recover() -> None:
            nonlocal rounds_played
            after = server.call("GET", f"/rounds/{round_id}", token).json()
            assert {k: after[k] for k in ("hands", "dealer", "legal_actions", "me")} == {
                k: before[k] for k in ("hands", "dealer", "legal_actions", "me")}
            rounds_played += 1
            finish(round_id)
        return recover

    every: dict[str, tuple[str | None, Callable[[], Callable[[], None]]]] = {
        "after bets": (None, after_bets),  # SIGKILL from outside with a bet on the slip
        "inside the deal": ("fault:deal", inside_deal),
        "the deal's answer lost": ("answer", deal_answer_lost),  # the deal committed, its answer never sent
        "inside the first decision": ("fault:act", inside_decision(1)),
        "a decision's answer lost": ("answer:2", decision_answer_lost(1)),  # the deal's answer went out
        "between decisions": (None, between_decisions),  # SIGKILL from outside between two decisions
        "inside the second decision": ("fault:act:2", inside_decision(2)),
        "inside settlement": ("fault:settle", inside_decision(3)),  # inside the settlement of the last decision
        "the settlement's answer lost": ("answer:4", decision_answer_lost(3)),  # settled and paid, answer lost
    }
    stages = [every[name] for name in names or every]
    for stage, run in stages:
        server.arm(stage)
        recover = run()  # the process dies in here
        server.start()  # a fresh process on the same database
        recover()
        books = check_books(database_url, player_id, credits)
        assert books["playing"] == 0 and books["settled"] == rounds_played
        assert books["balance"] == credits + 500 * rounds_played  # every round a win of 500, paid exactly once
    server.kill()
    assert server.deaths == len(stages) + 1
    assert rounds_played == len(stages) - (names is None or "after bets" in names)
    print(f"kill -9: {len(stages)} stages, {server.deaths} deaths, {server.starts} starts, "
          f"{rounds_played} rounds settled exactly once")


# -------------------------------------------------------- database errors
class Refuse:
    """Make the n-th flush of the game's sessions fail as a lost connection or a refused write would."""

    def __init__(self, service: GameService, error: Exception) -> None:
        self.service = service
        self.error = error
        self.armed = False

    def __enter__(self) -> Refuse:
        from sqlalchemy import event

        self.engine = self.service.db.engine
        event.listen(self.engine, "before_cursor_execute", self._fire)
        return self

    def _fire(self, conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool) -> None:
        if self.armed and statement.lstrip().upper().startswith(("INSERT", "UPDATE")):
            self.armed = False
            raise self.error

    def __exit__(self, *exc: object) -> None:
        from sqlalchemy import event

        event.remove(self.engine, "before_cursor_execute", self._fire)


ERRORS = {
    "connection lost": db_errors.OperationalError("UPDATE rounds", {}, Exception("server closed the connection")),
    "write refused": db_errors.OperationalError("INSERT INTO ledger", {}, Exception("database is locked")),
    "pool timeout": db_errors.TimeoutError("QueuePool limit reached"),
}


@pytest.mark.parametrize("kind", list(ERRORS))
def test_a_database_error_inside_a_round_is_503_and_changes_nothing(kind: str, http: TestClient,
                                                                    service: GameService, guest: Client) -> None:
    other = Client(http, http.post("/auth/guest").json()["token"])
    service.stacked.append(STACK)
    guest.bet("classic", 500)
    round_id = guest.post("/tables/classic/deal").json()["id"]
    guest.act(round_id, "hit")
    before, balance = guest.get(f"/rounds/{round_id}").json(), guest.balance()
    with Refuse(service, ERRORS[kind]) as refuse:
        steps = (("hit", "hit-2"), ("stand", "stand-1"))
        for (action, key), elsewhere in zip(steps, ("first-person", "classic-premium"), strict=True):
            refuse.armed = True
            refused = guest.post(f"/rounds/{round_id}/actions", {"action": action}, key=key)
            assert refused.status_code == 503, refused.json()
            assert int(refused.headers["Retry-After"]) >= 1 and set(refused.json()) == {"detail"}
            assert guest.get(f"/rounds/{round_id}").json() == before  # same cards, same decision
            assert guest.balance() == balance and ledger_totals(service)[:2] == (0, [])
            # Other tables keep serving meanwhile.
            other.bet(elsewhere, 500)
            assert other.post(f"/tables/{elsewhere}/deal").status_code == 200
    books_now = ledger_totals(service)
    assert books_now[0] == 0 and books_now[1] == []
    # Later, the same key applies the decision once.
    applied = guest.post(f"/rounds/{round_id}/actions", {"action": "hit"}, key="hit-2")
    assert applied.status_code == 200 and len(applied.json()["hands"][0]["cards"]) == 4
    again = guest.post(f"/rounds/{round_id}/actions", {"action": "hit"}, key="hit-2")
    assert again.json() == applied.json()
    final = guest.post(f"/rounds/{round_id}/actions", {"action": "stand"}, key="stand-1").json()
    assert final["status"] == "settled" and final["me"]["returned"] == 1000
    assert guest.balance() == balance + 1000
    with service.db.sessions() as session:
        assert session.get(Round, round_id).status == "settled"


def test_a_database_error_inside_the_deal_is_503_and_stakes_nothing(service: GameService, guest: Client,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    service.stacked.append(STACK)  # no blackjack: the retried deal must leave the stake on the table
    guest.bet("classic", 500)
    balance = guest.balance()
    with Refuse(service, ERRORS["connection lost"]) as refuse, caplog.at_level("WARNING", "twentyone.server.store"):
        refuse.armed = True
        refused = guest.post("/tables/classic/deal", key="deal-x")
    assert refused.status_code == 503 and refused.headers["Retry-After"]
    # The operator's log says why, in one line: contention (a deadlock, a lock time-out) or a lost connection.
    assert [record.getMessage() for record in caplog.records if record.name == "twentyone.server.store"] == \
        ["storage busy, answered 503: Exception: server closed the connection"]
    assert guest.balance() == balance and guest.get("/tables/classic").json()["round"] is None
    assert guest.get("/tables/classic").json()["slip"]["total"] == 500  # the bets wait on the slip
    dealt = guest.post("/tables/classic/deal", key="deal-x")
    assert dealt.status_code == 200 and guest.balance() == balance - 500
    assert dealt.json()["status"] == "playing" and dealt.json()["hands"][0]["cards"] == ["2S", "3D"]


def test_an_outage_is_one_line_and_a_count_in_the_log_not_a_line_a_request(
        tmp_path: Path, database_url: str, caplog: pytest.LogCaptureFixture) -> None:
    """Every refused request used to log its own line: a database restart under 200 players wrote hundreds a
    second. Now the first is logged in full and the timer tick tells the rest as one count when the window ends."""
    app = create_app(Settings(database_url, tmp_path, OPERATOR, tick_seconds=0.05), clock=Clock())
    with TestClient(app) as http, caplog.at_level("WARNING", "twentyone.server.store"):
        service: GameService = app.state.service
        window = service.store.busy_lines
        seconds = [0.0]
        window.clock = lambda: seconds[0]
        guest = new_guest(http)
        guest.bet("classic", 500)
        balance = guest.balance()
        with Refuse(service, ERRORS["connection lost"]) as refuse:
            for attempt in range(5):
                refuse.armed = True
                assert guest.post("/tables/classic/deal", key=f"deal-{attempt}").status_code == 503
        assert guest.balance() == balance

        def said() -> list[str]:
            return [record.getMessage() for record in caplog.records if record.name == "twentyone.server.store"]

        time.sleep(0.2)  # ticks pass inside the window: nothing more is said
        assert said() == ["storage busy, answered 503: Exception: server closed the connection"]
        seconds[0] = window.window_seconds
        eventually(lambda: len(said()) == 2, 5, "the tick tells the repeats")
        assert said()[1] == "storage busy, answered 503: Exception: server closed the connection " \
                            "(4 more times in the last 10 s)"
        with Refuse(service, ERRORS["connection lost"]) as refuse:  # a second outage, the server stopped in it
            for attempt in range(2):
                refuse.armed = True
                assert guest.post("/tables/classic/deal", key=f"again-{attempt}").status_code == 503
        seconds[0] += 3
    # Its count is told as the server stops, not lost with it.
    assert said()[2:] == ["storage busy, answered 503: Exception: server closed the connection",
                          "storage busy, answered 503: Exception: server closed the connection "
                          "(1 more time in the last 3 s)"]


def test_connections_postgresql_ends_cost_one_503_at_most_and_change_nothing(
        database_url: str, service: GameService, guest: Client) -> None:
    """PostgreSQL restarted (or failed over) ends every connection the pool holds. The pool does not ping each one
    before use (a round trip on every request), so the first request on a dead one fails: a 503 that changed
    nothing, after which the pool reconnects and the same key applies the decision once."""
    if not database_url.startswith("postgresql"):
        pytest.skip("only PostgreSQL's connections can be ended under the server")
    pings: list[object] = []
    dialect = service.db.engine.dialect
    ping = dialect.do_ping
    dialect.do_ping = lambda connection: pings.append(connection) or ping(connection)  # type: ignore[method-assign]
    service.stacked.append(STACK)
    guest.bet("classic", 500)
    round_id = guest.post("/tables/classic/deal").json()["id"]
    balance, before = guest.balance(), guest.get(f"/rounds/{round_id}").json()
    admin = create_engine(database_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as connection:
            ended = connection.exec_driver_sql(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()").scalar()
    finally:
        admin.dispose()
    assert ended and ended >= 1  # the pool's connections, at least
    statuses: list[int] = []
    for _ in range(3):  # the same key until it is applied
        answer = guest.post(f"/rounds/{round_id}/actions", {"action": "hit"}, key="hit-after-restart")
        statuses.append(answer.status_code)
        if answer.status_code != 503:
            break
        assert int(answer.headers["Retry-After"]) >= 1 and set(answer.json()) == {"detail"}
        assert guest.get(f"/rounds/{round_id}").json() == before and guest.balance() == balance
    assert statuses in ([200], [503, 200]), statuses  # one 503 at most: the pool dropped every dead connection
    assert len(answer.json()["hands"][0]["cards"]) == 3  # one card, whatever the tries
    final = guest.act(round_id, "stand").json()
    assert final["status"] == "settled" and guest.balance() == balance + final["me"]["returned"]
    assert pings == []  # no round trip spent on a ping before each request
    books = ledger_totals(service)
    assert books[0] == 0 and books[1] == []
