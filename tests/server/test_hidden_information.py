"""Hidden information, enumerated: at every phase of a round of every shipped table, every answer a player can get.

The top of the shoe is stacked with distinct cards, so every card of the round is
unique and a face-down or undealt card's text anywhere in an answer is a leak,
exactly. Ground truth (the hole card, the undealt cards, the salts of unfinished
shoes) comes from the database and the engine's own log, never from a view.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import Counter
from typing import Any

import pytest
from fastapi.testclient import TestClient
from integrity import Secrets, leaks, stack_for, table_secrets
from server_helpers import OPERATOR, Client, Clock
from sqlalchemy import select

from twentyone.server.models import Shoe as ShoeRow
from twentyone.server.service import GameService
from twentyone.variants import builtin_rules

TABLES = ["first-person", "classic", "classic-premium", "single-deck", "multiplayer", "power"]
OFFERS_TAKEN = ("no-even-money", "insurance", "no-insurance", "no-surrender")


def choose(view: dict[str, Any]) -> str:
    """A fixed policy that walks through offers, splits, doubles, hits and stands."""
    legal = view["legal_actions"]
    for offer in OFFERS_TAKEN:
        if offer in legal:
            return offer
    decision = view["decision"]
    hand = next(h for h in view["hands"] if (h["seat"], h["hand"]) == (decision["seat"], decision["hand"]))
    if "split" in legal:
        return "split"
    if "double" in legal and hand["total"] in (9, 10, 11):
        return "double"
    if "hit" in legal and hand["total"] < 13:
        return "hit"
    return "stand" if "stand" in legal else legal[0]


class Probe:
    """Reads everything each player can read and checks it against what is secret at this moment."""

    def __init__(self, http: TestClient, service: GameService, table: str, players: dict[str, Client]) -> None:
        self.http = http
        self.service = service
        self.table = table
        self.players = players
        self.operator = Client(http, OPERATOR, "operator")
        self.stack: list[str] = []  # the stacked top of the round's shoe
        self.stacks: dict[int, int] = {}
        self.rounds: list[int] = []
        self.seated: dict[str, set[int]] = {name: set() for name in players}
        self.sockets: dict[str, Any] = {}
        self.received: Counter[str] = Counter()
        self.published: Counter[str] = Counter()
        self.reads = 0
        self.phases: list[str] = []
        self.hidden_seen = 0  # checks made while a face-down card was secret: proves the check was armed
        original = service.events.publish

        ids = {client.player_id(): name for name, client in players.items()}

        def counting(table_id: str, event: dict[str, Any]) -> None:
            if table_id == table:  # what each player's connection at the table receives: a private event, theirs alone
                for name in ([ids[event["player_id"]]] if event["player_id"] in ids else []) \
                        if event.get("private") else players:
                    self.published[name] += 1
            original(table_id, event)

        service.events.publish = counting  # type: ignore[method-assign]

    def secrets(self) -> Secrets:
        self._find_stacked()
        return table_secrets(self.service, self.table, self.stacks)

    def _find_stacked(self) -> None:
        """The shoes dealt from the stacked top, found in the database as soon as one exists (a table shuffles
        its next shoe at a write: a private table's first chip, a shared table's first bets, a finished shoe)."""
        if not self.stack:
            return
        with self.service.db.sessions() as session:
            for shoe in session.scalars(select(ShoeRow).where(ShoeRow.table_id == self.table)):
                if shoe.cards.split()[:len(self.stack)] == self.stack:
                    self.stacks[shoe.id] = len(self.stack)

    def answer(self, what: str, response: Any) -> Any:
        """A POST's answer, checked against the secrets right after it."""
        body = response.json()
        found = leaks(body, self.secrets())
        assert not found, f"{self.table} {what}: {found[:5]}"
        self.reads += 1
        return body

    def checkpoint(self, phase: str) -> None:
        self.phases.append(phase)
        before = self.secrets()
        answers: list[tuple[str, Any]] = []
        for name, client in self.players.items():
            answers.append((f"{name} GET /tables", self.http.get("/tables").json()))
            for path in (f"/tables/{self.table}", "/me", "/me/history"):
                response = client.get(path)
                assert response.status_code == 200, (path, response.json())
                answers.append((f"{name} GET {path}", response.json()))
            for round_id in self.rounds:
                for suffix in ("", "/replay", "/hint", "/verify"):
                    response = client.get(f"/rounds/{round_id}{suffix}")
                    if round_id in self.seated[name]:
                        assert response.status_code in (200, 409), (suffix, response.json())
                    else:  # someone else's private round: not even its existence
                        assert response.status_code == 404, (name, suffix, response.json())
                    answers.append((f"{name} GET /rounds/{round_id}{suffix}", response.json()))
                if round_id not in self.seated[name]:
                    refused = client.post(f"/rounds/{round_id}/actions", {"action": "stand"})
                    assert refused.status_code == 404, refused.json()
            # The operator's look at the player: their rounds exactly as their own history shows them.
            looked = self.operator.get(f"/admin/players/{client.name}")
            assert looked.status_code == 200, looked.json()
            assert looked.json()["rounds"] == client.get("/me/history").json()["rounds"], (name, phase)
            answers.append((f"operator GET /admin/players/{client.name}", looked.json()))
            socket = self.sockets.get(name)
            while socket is not None and self.received[name] < self.published[name]:
                answers.append((f"{name} WebSocket event", socket.receive_json()))
                self.received[name] += 1
        for path in ("/admin/rounds", "/admin/rounds?status=open", "/admin/report"):  # no cards there at all
            response = self.operator.http.get(path, headers=self.operator.headers)
            assert response.status_code == 200, (path, response.json())
            answers.append((f"operator GET {path}", response.json()))
        after = self.secrets()
        secrets = Secrets(before.cards | after.cards, before.salts | after.salts, before.orders + after.orders)
        if secrets.cards & set(self.hole_cards()):
            self.hidden_seen += 1
        for where, body in answers:
            found = leaks(body, secrets)
            assert not found, f"{self.table}, {phase}, {where}: {found[:5]}"
        self.reads += len(answers)

    def hole_cards(self) -> list[str]:
        from integrity import visible_and_hidden

        from twentyone.server.live import rebuild
        from twentyone.server.models import Round

        with self.service.db.sessions() as session:
            hidden: list[str] = []
            for round_id in self.rounds:
                row = session.get(Round, round_id)
                if row is not None and row.status == "playing":
                    hidden += sorted(visible_and_hidden(rebuild(session, row))[1])
            return hidden


def guest(http: TestClient) -> Client:
    body = http.post("/auth/guest").json()
    return Client(http, body["token"], body["player"]["name"])


@pytest.mark.parametrize("table", TABLES)
def test_no_answer_shows_a_hidden_card_a_shoe_or_a_salt_before_its_time(table: str, http: TestClient,
                                                                        service: GameService, clock: Clock) -> None:
    spec = service.table(table)
    ann, bob, cid = guest(http), guest(http), guest(http)
    players = {"ann": ann, "bob": bob, "cid": cid}
    ids = {name: client.get("/me").json()["id"] for name, client in players.items()}
    probe = Probe(http, service, table, players)
    layout = [1, 1] if spec.shared else [2]
    # A blackjack under the Ace (even money) and a small hand; power's players share their two cards.
    common = builtin_rules(spec.variant).deal.common_draw
    stack = stack_for(spec.variant, layout, up="AH", hands=[["2D", "3S"]] if common else [["AS", "KD"], ["2D", "3S"]])
    service.stacked.append(stack)
    probe.stack = stack

    with contextlib.ExitStack() as sockets:
        for name, client in players.items():
            socket = sockets.enter_context(http.websocket_connect(f"/ws/tables/{table}?token={client.token}"))
            hello = socket.receive_json()
            assert hello["type"] == "hello"
            probe.sockets[name] = socket
        deadline = time.monotonic() + 10
        while len(service.events._subscribers.get(table, ())) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(service.events._subscribers.get(table, ())) == 3

        probe.checkpoint("before the deal")
        chip = spec.chips[0] if spec.limits["main"][0] <= spec.chips[0] else spec.limits["main"][0]
        for spot in range(1, layout[0] + 1):
            probe.answer("bet", ann.post(f"/tables/{table}/bets", {"spot": spot, "type": "main", "chip": chip}))
        probe.checkpoint("bets placed")
        dealt = probe.answer("deal", ann.post(f"/tables/{table}/deal"))
        round_id = dealt["id"]
        probe.rounds.append(round_id)
        probe.seated["ann"].add(round_id)
        if spec.shared:
            assert dealt["status"] == "betting"
            probe.checkpoint("ann's bets in the round being formed")
            probe.answer("bet", bob.post(f"/tables/{table}/bets", {"spot": 1, "type": "main", "chip": chip}))
            probe.answer("deal", bob.post(f"/tables/{table}/deal"))
            probe.seated["bob"].add(round_id)
            probe.checkpoint("bets placed at a shared table")
            clock.advance(spec.betting_window + 1)
            assert service.tick()["dealt"] == 1
        assert service.stacked == [] and len(probe.stacks) == 1  # the round's shoe is the stacked one, known
        probe.checkpoint("after the deal")
        view = ann.get(f"/rounds/{round_id}").json()
        assert view["status"] == "playing" and view["dealer"]["cards"][0] == "AH"
        taken: list[str] = []
        for _ in range(30):
            if view["status"] != "playing":
                break
            # Whoever has a decision of their own (in power's common draw, nobody is told another's).
            actor, own = next((name, seen) for name, seen in ((name, players[name].get(f"/rounds/{round_id}").json())
                                                              for name in ids)
                              if seen["decision"] and seen["decision"]["player_id"] == ids[name])
            action = choose(own)
            view = probe.answer(f"{actor} {action}", players[actor].post(f"/rounds/{round_id}/actions",
                                                                          {"action": action}))
            assert "status" in view, view
            taken.append(action)
            probe.checkpoint(f"after {actor}'s {action}")
        assert view["status"] == "settled", taken
        probe.checkpoint("after settlement")

    # The walk went where it had to: an offer under the Ace, several decisions, the hole card secret until the end.
    assert any(action in OFFERS_TAKEN for action in taken), taken
    assert len(taken) >= 3, taken
    if service.table(table).variant != "single-deck":  # no hole card there: the second card is undealt
        assert probe.hidden_seen >= 2
    proof = ann.get(f"/rounds/{round_id}/verify")
    if table == "power":  # a live shoe: its order stays secret until the cut card
        assert proof.status_code == 409
        assert probe.secrets().salts
    else:
        assert proof.status_code == 200 and proof.json()["valid"] and proof.json()["cards"][:len(stack)] == stack
        assert bob.get(f"/rounds/{round_id}/verify").status_code == (200 if spec.shared else 404)
    assert cid.get(f"/rounds/{round_id}/verify").status_code == 404
    assert probe.reads > 100
    print(f"hidden information: {table}: {len(probe.phases)} phases, {len(taken)} decisions, "
          f"{probe.reads} answers checked")


def test_the_leak_detector_finds_what_it_looks_for() -> None:
    secrets = Secrets({"7C"}, {"abcdef0123"}, [["2S", "3S", "4S", "5S", "6S", "7S", "8S"]])
    assert leaks({"dealer": {"cards": ["AH", "7C"]}}, secrets)
    assert leaks({"operations": [{"type": "card", "card": "7C"}]}, secrets)
    assert leaks({"detail": "hole 7C"}, secrets)
    assert leaks({"revealed": {"salt": "abcdef0123"}}, secrets)
    assert leaks({"x": ["3S", "4S", "5S", "6S", "7S", "8S"]}, secrets)
    assert not leaks({"dealer": {"cards": ["AH"]}, "created_at": "2026-11-29T12:00:00+00:00", "n": "17C8"}, secrets)


def test_stacked_ground_truth_comes_from_the_database(http: TestClient, service: GameService) -> None:
    client = guest(http)
    stack = stack_for("classic", [1])
    service.stacked.append(stack)
    client.bet("classic", 100)  # a first visit's shoe is shuffled at the first bet control
    shoe_id = client.get("/tables/classic").json()["next_shoe"]["id"]
    secrets = table_secrets(service, "classic", {shoe_id: len(stack)})
    assert secrets.cards == set(stack)  # before the deal, every stacked card is secret
    view = client.post("/tables/classic/deal").json()
    secrets = table_secrets(service, "classic", {shoe_id: len(stack)})
    shown = set(view["dealer"]["cards"]) | {card for hand in view["hands"] for card in hand["cards"]}
    assert len(shown) == 3 and not shown & secrets.cards
    assert secrets.cards == set(stack) - shown  # the hole card and every undealt card
    with service.db.sessions() as session:
        assert select(ShoeRow) is not None and session.get(ShoeRow, shoe_id).salt in secrets.salts


def drawn_cards(service: GameService, round_id: int) -> dict[int, list[str]]:
    """Ground truth from the round's log: the cards each player has drawn after the deal, in order."""
    from twentyone.core.operations import CardDealt
    from twentyone.server.live import rebuild
    from twentyone.server.models import Round

    with service.db.sessions() as session:
        row = session.get(Round, round_id)
        assert row is not None
        engine = rebuild(session, row)
    players = {hand.seat: int(hand.player) for hand in engine.hands}
    drawn: dict[int, list[str]] = {player: [] for player in players.values()}
    for op in engine.operations:
        if isinstance(op, CardDealt) and op.seat >= 1:
            drawn[players[op.seat]].append(str(op.card))
    return drawn


def test_a_common_draw_shows_nobody_the_cards_another_player_drew_until_it_settles(
        http: TestClient, service: GameService, clock: Clock) -> None:
    """In power a player's k-th drawn card is every player's k-th. Players move in lockstep: a card chosen is
    dealt only once everyone still deciding has chosen at its step, so a second account that hits first learns
    nothing, and the shared clock and the table's events move only with the step, never with one player's
    choice. Until the round settles nobody, onlookers included, sees another player's draws, from any answer."""
    ann, bob, cid = guest(http), guest(http), guest(http)  # cid only watches the table
    players = {"ann": ann, "bob": bob, "cid": cid}
    operator = Client(http, OPERATOR, "operator")
    ids = {name: client.get("/me").json()["id"] for name, client in players.items()}
    service.stacked.append(stack_for("power", [1, 1], up="6H", hands=[["2D", "3S"]]))  # both hold 5; no offers
    for client in (ann, bob):
        client.bet("power", 100)
        assert client.post("/tables/power/deal").json()["status"] == "betting"
    round_id = ann.get("/tables/power").json()["round"]["id"]
    clock.advance(service.table("power").betting_window + 1)
    assert service.tick()["dealt"] == 1
    checked = 0
    published, received = [0], dict.fromkeys(players, 0)
    original = service.events.publish

    def counting(table_id: str, event: dict[str, Any]) -> None:
        published[0] += table_id == "power"
        original(table_id, event)

    service.events.publish = counting  # type: ignore[method-assign]

    def everything_read_by(name: str, socket: Any) -> list[tuple[str, Any]]:
        client = players[name]
        answers = [(path, client.get(path)) for path in (f"/rounds/{round_id}", f"/rounds/{round_id}/replay",
                                                         f"/rounds/{round_id}/hint", "/tables/power", "/me/history")]
        answers = [(path, response.json()) for path, response in answers]
        # What the operator reads of this player: the player's own view, so nothing of another's draw either.
        answers.append(("operator's look at them", operator.get(f"/admin/players/{client.name}").json()["rounds"]))
        while received[name] < published[0]:  # every event sent so far (each names a round; the client re-reads)
            answers.append(("WebSocket", socket.receive_json()))
            received[name] += 1
        return answers

    def nobody_sees_another_players_draw(after: str, sockets: dict[str, Any]) -> int:
        """Check every answer of every reader; the number of events the sockets had sent since the last check."""
        nonlocal checked
        drawn = drawn_cards(service, round_id)
        events = 0
        for name in players:
            own = drawn.get(ids[name], [])
            # Cards someone else drew that this player has not drawn yet (all distinct: a match is a leak).
            secret = {card for pid, cards in drawn.items() if pid != ids[name] for card in cards} - set(own)
            for where, body in everything_read_by(name, sockets[name]):
                found = leaks(body, Secrets(cards=secret))
                assert not found, f"after {after}: {name} {where}: {found[:3]}"
                checked += 1
                events += where == "WebSocket"
            response = players[name].get(f"/rounds/{round_id}")
            view = response.json() if name != "cid" else players[name].get("/tables/power").json()["round"]
            assert (response.status_code == 404) == (name == "cid"), response.json()  # not cid's round to read
            if view["status"] == "playing":
                others = [hand for hand in view["hands"] if hand["player_id"] != ids[name]]
                assert all(hand["cards"] == ["2D", "3S"] and hand["outcome"] is None for hand in others), others
                assert set(view["deciding"]) <= {ids[name]}, view["deciding"]
                replay = players[name].get(f"/rounds/{round_id}/replay").json()
                assert replay.get("actions", []) == [] or {a["player_id"] for a in replay["actions"]} == {ids[name]}
        return events

    with contextlib.ExitStack() as stack:
        sockets = {name: stack.enter_context(http.websocket_connect(f"/ws/tables/power?token={client.token}"))
                   for name, client in players.items()}
        for socket in sockets.values():
            assert socket.receive_json()["type"] == "hello"
        nobody_sees_another_players_draw("the deal", sockets)
        clock.advance(3)  # a clock restarted by ann's choice would move bob's deadline on by 3 s
        deadline = bob.get(f"/rounds/{round_id}").json()["decision"]["deadline"]
        assert ann.act(round_id, "hit").status_code == 200
        # Chosen, not dealt: bob still chooses at this step, so the card is nowhere, not even in the log.
        assert drawn_cards(service, round_id) == {ids["ann"]: [], ids["bob"]: []}
        waiting = ann.get(f"/rounds/{round_id}").json()
        assert waiting["decision"] is None and waiting["legal_actions"] == [] and waiting["status"] == "playing"
        assert waiting["drawing"] and waiting["deadline"] == deadline  # the step's clock, shown to ann too
        assert not bob.get(f"/rounds/{round_id}").json()["drawing"]
        assert nobody_sees_another_players_draw("ann's hit", sockets) == 0  # no event tells that someone acted
        assert bob.get(f"/rounds/{round_id}").json()["decision"]["deadline"] == deadline
        assert bob.act(round_id, "hit").status_code == 200  # the step is complete: both get common card 0
        drawn = drawn_cards(service, round_id)
        assert len(drawn[ids["ann"]]) == 1 and drawn[ids["bob"]] == drawn[ids["ann"]]
        assert nobody_sees_another_players_draw("bob's hit", sockets) >= len(players)  # the step, to everyone
        assert bob.get(f"/rounds/{round_id}").json()["decision"]["deadline"] > deadline  # a fresh clock
        # Next step: ann hits, bob stands. Ann's card is dealt at once; bob, done, still may not see it.
        if "hit" in ann.get(f"/rounds/{round_id}").json()["legal_actions"]:
            assert ann.act(round_id, "hit").status_code == 200
            nobody_sees_another_players_draw("ann's second hit", sockets)
        assert bob.act(round_id, "stand").status_code == 200
        nobody_sees_another_players_draw("bob's stand", sockets)
        assert len(drawn_cards(service, round_id)[ids["ann"]]) >= 1
        view = ann.get(f"/rounds/{round_id}").json()
        if view["decision"] is not None:
            assert ann.act(round_id, "stand").status_code == 200
    settled = bob.get(f"/rounds/{round_id}").json()
    assert settled["status"] == "settled" and not settled["others_withheld"]
    anns = next(hand for hand in settled["hands"] if hand["player_id"] == ids["ann"])
    assert anns["cards"] == ["2D", "3S", *drawn_cards(service, round_id)[ids["ann"]]] and anns["outcome"]
    assert {a["player_id"] for a in bob.get(f"/rounds/{round_id}/replay").json()["actions"]} == {ids["ann"], ids["bob"]}
    assert checked > 60


@pytest.mark.parametrize(("action", "commits"), [("stand", False), ("stand", True), ("hit", False)],
                         ids=["a stand not committed", "a stand committed", "a hit not committed"])
def test_a_read_never_shows_a_decision_that_changed_the_engine_after_its_snapshot_began(
        action: str, commits: bool, http: TestClient, service: GameService, monkeypatch: pytest.MonkeyPatch) -> None:
    """A read fetches the round's engine, then leaves the round free while it reads the database; the stand that
    settles the round changes that engine in place meanwhile. If the stand does not commit (its log entry fails to
    be written), the read must not show the hole card it turned; if it commits, the read must not show the dealer's
    cards and the result beside the round in play and no money paid (both seen in crowded play: a trial's reads
    answered "playing" with the hole card turned, 3 in 5,288). A hit that does not commit must not show the card it
    drew. The read is made again in a new snapshot."""
    from test_operator_debits import FailStatement

    import twentyone.server.views as views

    client = guest(http)
    # 19 against the 6 and the hole card TC, the 8 to bust the dealer; or 11 against them, the 8 a hit's card.
    service.stacked.append(["TS", "6H", "9D", "TC", "8C"] if action == "stand" else ["5S", "6H", "6D", "TC", "8C"])
    client.bet("classic", 500)
    round_id = client.post("/tables/classic/deal").json()["id"]
    caller = service.authenticate(client.token)
    fetched, stood = threading.Event(), threading.Event()
    reads: list[int] = []
    original = views.round_json

    def paused(*args: Any, **kwargs: Any) -> Any:  # between fetching the engine and reading it
        if threading.current_thread().name == "reader":
            reads.append(1)
            if len(reads) == 1:
                fetched.set()
                assert stood.wait(10)
        return original(*args, **kwargs)

    monkeypatch.setattr(views, "round_json", paused)
    seen: list[dict[str, Any]] = []
    reader = threading.Thread(target=lambda: seen.append(service.round_view(caller, round_id)), name="reader")
    reader.start()
    assert fetched.wait(10)
    with FailStatement(service, "INSERT INTO round_actions", armed=not commits):
        decided = client.act(round_id, action)
    stood.set()
    reader.join(10)
    assert decided.status_code == (200 if commits else 503), decided.json()
    view = seen[0]
    if commits:  # read again: the settled round, its money paid
        assert view["status"] == "settled" and view["me"]["returned"] == 1000, view
    else:  # read again: the round as it stands, the hole card face down, no card drawn
        assert view["status"] == "playing" and view["dealer"]["cards"] == ["6H"], view
        assert "TC" not in str(view) and "8C" not in str(view) and len(view["hands"][0]["cards"]) == 2, view
        assert client.get(f"/rounds/{round_id}").json()["hands"][0]["cards"] == view["hands"][0]["cards"]
    assert len(reads) == 2  # the first read was refused, the second made anew
