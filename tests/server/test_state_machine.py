"""A hypothesis state machine drives the app through random legal and illegal requests from several players at
several tables, with the clock moved by hand. After every step: money is conserved (the ledger sums to zero and
every wallet is its credits less its stakes plus its returns), no balance is negative, nobody sees a face-down card
or acts on another's seat, and no answer is a 5xx; at the end, every round ends once the timers have run."""

from __future__ import annotations

import os
import random
import tempfile
import uuid
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from integrity import ledger_totals, round_money
from server_helpers import OPERATOR, Clock
from sqlalchemy import func, select

from twentyone.core.operations import CardDealt, HoleCardRevealed
from twentyone.server.app import create_app
from twentyone.server.config import Settings
from twentyone.server.live import rebuild
from twentyone.server.models import LedgerEntry, Round, RoundSeat
from twentyone.server.service import GameService

TABLES = ["classic", "first-person", "multiplayer", "power"]
CONTROLS = ["undo", "double", "rebet", "clear"]
ACTIONS = ["hit", "stand", "double", "split", "insurance", "no-insurance", "even-money", "no-even-money",
           "cash-out", "surrender", "no-surrender", "triple", "quadruple", "fold"]
PLAYERS = 3
EXAMPLES = int(os.environ.get("TWENTYONE_STATE_EXAMPLES", "4"))
STEPS = int(os.environ.get("TWENTYONE_STATE_STEPS", "40"))
STATS = {"examples": 0, "requests": 0, "refused": 0, "rounds": 0}


class Casino(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.directory = tempfile.TemporaryDirectory()
        path = Path(self.directory.name)
        self.clock = Clock()
        # A seeded shuffle: a failing sequence of requests replays with the same cards.
        self.app = create_app(Settings(f"sqlite:///{path / 'db.sqlite'}", path, OPERATOR), clock=self.clock,
                              rng=random.Random(2026), timers=False)
        self.http = TestClient(self.app).__enter__()
        self.service: GameService = self.app.state.service
        self.players: list[tuple[int, dict[str, str]]] = []
        for _ in range(PLAYERS):
            body = self.http.post("/auth/guest").json()
            self.players.append((body["player"]["id"], {"Authorization": f"Bearer {body['token']}"}))
        self.rounds: list[int] = []
        self.last: tuple[str, str, Any, dict[str, str], Any] | None = None
        STATS["examples"] += 1

    def teardown(self) -> None:
        try:
            # Every round ends: the betting windows close and the decision timers stand for the absent.
            for _ in range(60):
                with self.service.db.sessions() as session:
                    open_rounds = session.scalar(select(func.count()).select_from(Round)
                                                 .where(Round.status.in_(("betting", "playing"))))
                if not open_rounds:
                    break
                self.clock.advance(1300)
                self.service.tick()
            assert open_rounds == 0, "a round never ended"
            self.money_is_conserved()
            with self.service.db.sessions() as session:
                STATS["rounds"] += int(session.scalar(select(func.count()).select_from(Round)) or 0)
        finally:
            self.http.__exit__(None, None, None)
            self.directory.cleanup()

    # ------------------------------------------------------------- helpers
    def send(self, method: str, path: str, who: int, body: Any = None, key: str | None = None) -> Any:
        headers = {**self.players[who][1], "Idempotency-Key": key or uuid.uuid4().hex}
        response = self.http.request(method, path, headers=headers, json=body)
        STATS["requests"] += 1
        assert response.status_code < 500, (method, path, body, response.status_code, response.text)
        if response.status_code >= 400:
            STATS["refused"] += 1
            assert set(response.json()) >= {"detail"}
        self.last = (method, path, body, headers, response)
        payload = response.json()
        if (isinstance(payload, dict) and isinstance(payload.get("id"), int) and "table_id" in payload
                and payload["id"] not in self.rounds):
            self.rounds.append(payload["id"])
        return response

    def decision_of(self, round_id: int, who: int | None = None) -> tuple[str, int | None]:
        """The round's version, and the player it waits for; with ``who``, that player if the round waits for them
        (in a common-draw round, power, every player still deciding chooses at the same step, in any order)."""
        with self.service.db.sessions() as session:
            row = session.get(Round, round_id)
            if row is None or row.status != "playing":
                return ("none", None)
            decision = rebuild(session, row).decision(None if who is None else str(self.players[who][0]))
            return (str(row.version), None if decision is None else int(decision.player))

    # --------------------------------------------------------------- rules
    @rule(who=st.integers(0, PLAYERS - 1), table=st.sampled_from(TABLES), spot=st.integers(0, 4),
          chip=st.sampled_from([None, 100, 500, 2500, 7, 10**6]), kind=st.sampled_from(["main", "main", "21+3", "x"]))
    def bet(self, who: int, table: str, spot: int, chip: int | None, kind: str) -> None:
        self.send("POST", f"/tables/{table}/bets", who, {"spot": spot, "type": kind, "chip": chip})

    @rule(who=st.integers(0, PLAYERS - 1), table=st.sampled_from(TABLES), control=st.sampled_from(CONTROLS))
    def control(self, who: int, table: str, control: str) -> None:
        self.send("POST", f"/tables/{table}/{control}", who)

    @rule(who=st.integers(0, PLAYERS - 1), table=st.sampled_from(TABLES))
    def deal(self, who: int, table: str) -> None:
        self.send("POST", f"/tables/{table}/deal", who)

    @initialize(who=st.integers(0, PLAYERS - 1), table=st.sampled_from(TABLES), spots=st.integers(1, 2))
    def first_round(self, who: int, table: str, spots: int) -> None:
        self.bet_and_deal(who, table, spots)

    @rule(who=st.integers(0, PLAYERS - 1), table=st.sampled_from(TABLES), spots=st.integers(1, 2))
    def bet_and_deal(self, who: int, table: str, spots: int) -> None:
        """A legal start: the table's smallest bet on a spot or two, then DEAL."""
        for spot in range(1, spots + 1):
            self.send("POST", f"/tables/{table}/bets", who, {"spot": spot, "type": "main", "chip": 100})
        self.send("POST", f"/tables/{table}/deal", who)

    @precondition(lambda self: self.rounds)
    @rule(who=st.integers(0, PLAYERS - 1), pick=st.integers(0, 50), action=st.sampled_from(ACTIONS))
    def act_anyhow(self, who: int, pick: int, action: str) -> None:
        """Any player, any known round, any action: legal or not, in turn or not."""
        round_id = self.rounds[pick % len(self.rounds)]
        version, player = self.decision_of(round_id, who)
        response = self.send("POST", f"/rounds/{round_id}/actions", who, {"action": action})
        if player != self.players[who][0]:  # no decision of this player's now: refused, and the round did not move
            assert response.status_code in (404, 409), response.json()
            assert self.decision_of(round_id)[0] == version

    @precondition(lambda self: self.rounds)
    @rule(pick=st.integers(0, 50), choice=st.integers(0, 5))
    def act_legally(self, pick: int, choice: int) -> None:
        """Whoever must decide in a known round takes one of their legal actions."""
        round_id = self.rounds[pick % len(self.rounds)]
        _, player = self.decision_of(round_id)
        if player is None:
            return
        who = next(i for i, (pid, _) in enumerate(self.players) if pid == player)
        legal = self.send("GET", f"/rounds/{round_id}", who).json()["legal_actions"]
        if legal:
            response = self.send("POST", f"/rounds/{round_id}/actions", who, {"action": legal[choice % len(legal)]})
            assert response.status_code in (200, 409), response.json()  # 409: the balance does not cover it

    @precondition(lambda self: self.last is not None)
    @rule()
    def retry_the_last_request(self) -> None:
        """The same key again: the first answer comes back, and nothing moves."""
        assert self.last is not None
        method, path, body, headers, first = self.last
        if method not in ("POST", "PUT") or first.status_code == 503:
            return
        books = ledger_totals(self.service)
        again = self.http.request(method, path, headers=headers, json=body)
        STATS["requests"] += 1
        if first.status_code < 300:
            assert (again.status_code, again.json()) == (first.status_code, first.json())
            assert ledger_totals(self.service) == books

    @rule(seconds=st.sampled_from([1, 5, 16, 30, 1201]))
    def time_passes(self, seconds: int) -> None:
        self.clock.advance(seconds)
        self.service.tick()

    @precondition(lambda self: self.rounds)
    @rule(who=st.integers(0, PLAYERS - 1), pick=st.integers(0, 50),
          suffix=st.sampled_from(["", "/replay", "/hint", "/verify"]))
    def read(self, who: int, pick: int, suffix: str) -> None:
        round_id = self.rounds[pick % len(self.rounds)]
        response = self.send("GET", f"/rounds/{round_id}{suffix}", who)
        with self.service.db.sessions() as session:
            seated = session.scalar(select(RoundSeat.id).where(RoundSeat.round_id == round_id,
                                                               RoundSeat.player_id == self.players[who][0]))
        if seated is None:
            assert response.status_code == 404  # another's round: not even its existence

    # ----------------------------------------------------------- invariants
    @invariant()
    def money_is_conserved(self) -> None:
        total, unbalanced, balances = ledger_totals(self.service)
        assert total == 0 and unbalanced == []
        with self.service.db.sessions() as session:  # the demo credits: the only money that came in
            credits = session.execute(select(func.count(), func.sum(LedgerEntry.amount)).where(
                LedgerEntry.kind == "credit", LedgerEntry.amount > 0)).one()
        assert tuple(credits) == (PLAYERS * 3, PLAYERS * 3 * 100_000)
        for player_id, _ in self.players:
            for currency in ("USD", "EUR"):
                balance = balances[f"player:{player_id}/{currency}"]
                staked, returned = round_money(self.service, player_id, currency)
                assert balance >= 0
                assert balance == 100_000 - staked + returned, (player_id, currency)

    @invariant()
    def nobody_sees_a_face_down_card(self) -> None:
        with self.service.db.sessions() as session:
            playing = session.execute(select(Round.id).where(Round.status == "playing")).scalars().all()
            truths = {}
            for round_id in playing:
                row = session.get(Round, round_id)
                assert row is not None
                engine = rebuild(session, row)
                revealed = any(isinstance(op, HoleCardRevealed) for op in engine.operations)
                dealer = [str(op.card) for op in engine.operations if isinstance(op, CardDealt) and op.seat == 0
                          and (op.face_up or revealed)]
                hidden = [op for op in engine.operations if isinstance(op, CardDealt) and not (op.face_up or revealed)]
                seats = session.scalars(select(RoundSeat.player_id).where(RoundSeat.round_id == round_id)).all()
                truths[round_id] = (dealer, len(hidden), set(seats))
        for round_id, (dealer, hidden, seats) in truths.items():
            for who, (player_id, _) in enumerate(self.players):
                if player_id not in seats:
                    continue
                view = self.send("GET", f"/rounds/{round_id}", who).json()
                assert view["dealer"]["cards"] == dealer and view["dealer"]["hidden"] == hidden
                replay = self.send("GET", f"/rounds/{round_id}/replay", who).json()
                face_down = [op for op in replay["operations"] if op["type"] == "card" and not op["face_up"]]
                assert all(op["card"] is None for op in face_down) and len(face_down) == hidden


Casino.TestCase.settings = settings(max_examples=EXAMPLES, stateful_step_count=STEPS, deadline=None,
                                    database=None, suppress_health_check=list(HealthCheck))
TestCasino = Casino.TestCase


def test_the_machine_ran() -> None:
    """Runs after TestCasino (file order): the figures for docs/reliability.md."""
    if STATS["examples"]:
        print(f"state machine: {STATS}")
        assert STATS["requests"] > STATS["examples"] * 5 and STATS["rounds"] >= STATS["examples"]
