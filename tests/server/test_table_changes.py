"""An operator changes a table's configuration (``tables.toml``) and restarts the server: bets, rounds in play and
history made under the old configuration keep their meaning. Found by a trial of an operator: a slip held from a
table of three spots was charged for three and dealt one; rounds staked in dollars settled in euros; a table
removed left its rounds' stakes out for good and every one of its players' history a 404."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from server_helpers import OPERATOR, Client, Clock, new_player
from sqlalchemy import func, select
from starlette.websockets import WebSocketDisconnect

from twentyone.server.app import create_app
from twentyone.server.config import Settings, shipped_definitions
from twentyone.server.context import Busy, Caller
from twentyone.server.models import ROUNDS, SHOES

Restart = Callable[..., tuple[TestClient, Any]]


def tables_changed(**changes: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """``tables.toml`` as an operator edited it (the settings of ``serve --tables FILE``): each table id given maps to
    the changes of its settings (a table of its own where the id is new), or to None where the table was removed."""
    tables = {table_id: dict(spec) for table_id, spec in shipped_definitions().items()}
    for table_id, change in changes.items():
        if change is None:
            del tables[table_id]
        else:
            tables.setdefault(table_id, {}).update(json.loads(json.dumps(change)))  # a file's lists, not tuples
    return tables


@pytest.fixture
def restart(settings: Settings, clock: Clock) -> Iterator[Restart]:
    """Start the server again on the same database with ``tables.toml`` changed (:func:`tables_changed`). The new
    server's client and service."""
    opened: list[TestClient] = []

    def restarted(given: bool | None = None, **changes: dict[str, Any] | None) -> tuple[TestClient, Any]:
        # A file given (``--tables``) where tables changed; else the shipped ones, unless ``given`` says otherwise.
        changed = replace(settings, tables=tables_changed(**changes), tables_given=bool(changes) if given is None
                          else given)
        client = TestClient(create_app(changed, clock=clock, timers=False))
        opened.append(client.__enter__())
        return client, client.app.state.service  # type: ignore[attr-defined]

    yield restarted
    for client in opened:
        client.__exit__(None, None, None)


def again(client: TestClient, player: Client) -> Client:
    """The same player (same token) on the restarted server."""
    return Client(client, player.token, player.name)


def test_a_held_slip_past_the_tables_spots_or_maximum_now_is_refused_at_the_deal_and_nothing_is_staked(
        http: TestClient, restart: Restart) -> None:
    held, high, rebet = new_player(http, "held"), new_player(http, "high"), new_player(http, "rebet")
    for spot in (1, 2, 3):
        held.bet("classic", 500, spot)
        rebet.bet("classic", 100, spot)
    high.bet("classic", 10000)
    played_out(rebet, rebet.post("/tables/classic/deal").json()["id"])
    client, _ = restart(classic={"hands_per_player": 1, "limits": {"main": (100, 5000)}})
    held, high, rebet = (again(client, player) for player in (held, high, rebet))
    balances = [player.balance() for player in (held, high, rebet)]
    refused = held.post("/tables/classic/deal")
    assert refused.status_code == 409, refused.json()
    # Before, the deal took $15.00 and dealt one hand of $5.00.
    assert refused.json()["detail"] == "Spot 2 does not exist at this table; spots are 1 to 1: clear the bet."
    refused = high.post("/tables/classic/deal")
    assert refused.status_code == 409, refused.json()
    assert refused.json()["detail"] == "The main bet on spot 1 is above the maximum of $50.00."
    refused = rebet.post("/tables/classic/rebet")
    assert refused.status_code == 409, refused.json()
    assert refused.json()["detail"] == "Spot 2 does not exist at this table; spots are 1 to 1: clear the bet."
    assert [player.balance() for player in (held, high, rebet)] == balances
    held.post("/tables/classic/clear")
    held.bet("classic", 500)
    dealt = held.post("/tables/classic/deal").json()
    assert len(dealt["hands"]) == 1 and dealt["me"]["staked"] == 500


def played_out(player: Client, round_id: int) -> dict[str, Any]:
    """Stand on every hand of the player's round (declining any offer) until it settles: its view."""
    view = player.get(f"/rounds/{round_id}").json()
    while view["status"] == "playing":
        legal = view["legal_actions"]
        view = player.act(round_id, "stand" if "stand" in legal else legal[-1]).json()
        assert "status" in view, view
    return view


def test_a_round_keeps_the_currency_it_was_staked_in_when_its_tables_currency_changes(
        http: TestClient, restart: Restart, service: Any) -> None:
    """Staked in dollars, settled, shown and reported in dollars; the table's next rounds in euros."""
    ann = new_player(http, "ann")
    service.stacked.append(["TS", "6H", "9D", "TC", "8C"])  # 19 stands against 6 + 10, and the dealer busts
    ann.bet("classic", 10000)
    round_id = ann.post("/tables/classic/deal").json()["id"]
    finished = new_player(http, "bob")
    finished.bet("classic", 500)
    done = played_out(finished, finished.post("/tables/classic/deal").json()["id"])
    before = {currency: ann.balance(currency) for currency in ("USD", "EUR")}
    client, service = restart(classic={"currency": "EUR"})
    ann, operator = again(client, ann), Client(client, service.settings.operator_token, "operator")
    assert ann.get(f"/rounds/{round_id}").json()["currency"] == "USD"
    assert ann.get("/tables/classic").json()["round"]["currency"] == "USD"
    view = played_out(ann, round_id)
    assert view["currency"] == "USD" and view["status"] == "settled" and view["me"]["returned"] == 20000
    # Before, a win of this round was paid in euros, its stake having been taken in dollars.
    assert ann.balance("EUR") == before["EUR"]
    assert ann.balance("USD") == before["USD"] + view["me"]["returned"]
    assert [entry["currency"] for entry in ann.get("/me/history").json()["rounds"]] == ["USD"]
    ann.bet("classic", 500)
    euros = played_out(ann, ann.post("/tables/classic/deal").json()["id"])
    assert euros["currency"] == "EUR" and ann.balance("EUR") == before["EUR"] - 500 + euros["me"]["returned"]
    report = operator.get("/admin/report").json()
    usd, eur = report["tables"]["classic/USD"], report["tables"]["classic/EUR"]
    assert (usd["table_id"], usd["currency"], usd["rounds"]) == ("classic", "USD", 2)
    assert usd["staked"] == 10000 + done["me"]["staked"]
    assert (eur["currency"], eur["rounds"], eur["staked"]) == ("EUR", 1, 500)
    assert report["totals"]["USD"]["staked"] == usd["staked"] and report["totals"]["EUR"]["staked"] == 500


def test_a_round_at_a_table_taken_out_of_the_configuration_is_played_out_and_still_read(
        http: TestClient, restart: Restart, service: Any, clock: Clock) -> None:
    """Its player can read it and their history, finish it, or let the timer stand; a round still taking bets
    there is voided with nothing staked."""
    from server_helpers import joined_shared_round

    ann, bob, cat = (new_player(http, name) for name in ("ann", "bob", "cat"))
    service.stacked.extend([["TS", "6H", "9D", "TC", "8C"]] * 2)  # 19 against 6 + 10: each wins
    for player in (ann, bob):
        player.bet("classic-premium", 500)
    ann_round = ann.post("/tables/classic-premium/deal").json()["id"]
    bob_round = bob.post("/tables/classic-premium/deal").json()["id"]
    joined_shared_round(service, clock, [cat], "multiplayer")
    balances = [player.balance() for player in (ann, bob, cat)]
    client, service = restart(**{"classic-premium": None, "multiplayer": None})
    ann, bob, cat = (again(client, player) for player in (ann, bob, cat))
    history = ann.get("/me/history")
    assert history.status_code == 200, history.json()  # before, a 404 for every page
    assert [(entry["table_id"], entry["currency"]) for entry in history.json()["rounds"]] \
        == [("classic-premium", "USD")]
    view = played_out(ann, ann_round)
    assert view["status"] == "settled" and view["me"]["returned"] == 1000 and ann.balance() == balances[0] + 1000
    clock.advance(20 * 60 + 1)  # the game's decision time: the timer stands for bob
    service.tick()
    view = bob.get(f"/rounds/{bob_round}").json()
    assert view["status"] == "settled" and view["me"]["timed_out"] and view["me"]["returned"] == 1000
    assert bob.balance() == balances[1] + 1000
    clock.advance(60)  # the forming round's window has long closed
    service.tick()
    assert cat.balance() == balances[2]
    with service.db.sessions() as session:
        from twentyone.server.models import Round
        statuses = session.execute(select(Round.table_id, Round.status, Round.void_reason)
                                   .where(Round.table_id == "multiplayer")).all()
    assert [(row.status, row.void_reason) for row in statuses] == [
        ("void", "The table was closed before this round was dealt: nothing was staked.")]


@pytest.mark.parametrize("table", ["single-deck", "first-person"])
def test_a_round_at_the_only_table_of_its_game_taken_out_is_read_and_played_out(
        http: TestClient, restart: Restart, service: Any, clock: Clock, table: str) -> None:
    """The stand-in is built from the game alone: before, it was built from another table of the game, and a game
    whose only table was removed made every read of its rounds, and every tick, fail (found by review)."""
    ann, bob = new_player(http, "ann"), new_player(http, "bob")
    chip = 2500 if table == "single-deck" else 100
    service.stacked.extend([["TS", "6H", "9D", "TC", "8C"]] * 2)  # 19 against 6 + 10: in play
    rounds = []
    for player in (ann, bob):
        player.bet(table, chip)
        rounds.append(player.post(f"/tables/{table}/deal").json()["id"])
    client, service = restart(**{table: None})
    ann, bob = again(client, ann), again(client, bob)
    assert ann.get("/me/history").status_code == 200
    assert ann.get(f"/rounds/{rounds[0]}").json()["status"] == "playing"
    assert played_out(ann, rounds[0])["status"] == "settled"
    clock.advance(20 * 60 + 1)  # the private game's decision time: the timer stands for bob
    service.tick()
    assert bob.get(f"/rounds/{rounds[1]}").json()["status"] == "settled"


def test_a_round_that_cannot_be_read_holds_up_no_other_timer(
        http: TestClient, service: Any, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    """One round's timer that fails is logged, and the tick goes on: before, it stopped every table's timers and
    the operator wallet's deliveries, tick after tick (found by review)."""
    ann, bob = new_player(http, "ann"), new_player(http, "bob")
    service.stacked.extend([["TS", "6H", "9D", "TC", "8C"]] * 2)
    ids = []
    for player in (ann, bob):
        player.bet("classic", 100)
        ids.append(player.post("/tables/classic/deal").json()["id"])
    decide = service.rounds.auto_decide

    def failing_for_ann(round_id: int, version: int, since: datetime | None) -> int:
        if round_id == ids[0]:
            raise RuntimeError("this round cannot be read")
        return decide(round_id, version, since)

    monkeypatch.setattr(service.rounds, "auto_decide", failing_for_ann)
    clock.advance(20 * 60 + 1)
    assert service.tick()["auto"] == 1
    assert bob.get(f"/rounds/{ids[1]}").json()["status"] == "settled"
    assert ann.get(f"/rounds/{ids[0]}").json()["status"] == "playing"


def test_a_join_to_a_round_formed_before_the_tables_currency_changed_is_refused(
        http: TestClient, restart: Restart, clock: Clock) -> None:
    """Its stakes are taken in the round's currency: a join checked against the table's new one would be told a
    balance and limits in the wrong money (found by review). The player joins the next round, in the new one."""
    cat, dan = new_player(http, "cat"), new_player(http, "dan")
    cat.bet("multiplayer", 500)
    formed = cat.post("/tables/multiplayer/deal").json()
    client, service = restart(multiplayer={"currency": "EUR"})
    dan = again(client, dan)
    dan.bet("multiplayer", 500)
    refused = dan.post("/tables/multiplayer/deal")
    assert refused.status_code == 409, refused.json()
    assert refused.json()["detail"] == ("This round takes bets in USD, as the table did when it opened: bet on the "
                                        "next one.")
    assert dan.get("/tables/multiplayer").json()["slip"]["total"] == 500  # the bet stays on the slip
    clock.advance(60)
    service.tick()  # the dollar round is dealt and played out; dan's next join opens a round in euros
    view = again(client, cat).get(f"/rounds/{formed['id']}").json()
    assert view["currency"] == "USD" and view["status"] in ("playing", "settled")


def test_a_seat_that_sits_out_a_round_formed_before_the_currency_changed_is_told_its_bets_in_the_rounds(
        http: TestClient, restart: Restart, clock: Clock) -> None:
    """The event names the round's currency: the page showed the returned bets in the table's new one."""
    cat, dan = new_player(http, "cat"), new_player(http, "dan")
    for player in (cat, dan):
        player.bet("multiplayer", 500)
        player.post("/tables/multiplayer/deal")
    client, service = restart(multiplayer={"currency": "EUR"})
    cat = again(client, cat)
    cat.put("/me/limits", {"daily_loss_limit": 100})  # lowered at once: the close sits her seat out
    clock.advance(16)
    with client.websocket_connect(f"/ws/tables/multiplayer?token={cat.token}") as socket:
        assert socket.receive_json()["type"] == "hello"
        deadline, cat_id = time.monotonic() + 5, cat.player_id()
        while cat_id not in service.events.present("multiplayer") and time.monotonic() < deadline:
            time.sleep(0.01)  # the socket hears the table once its hello is sent
        assert service.tick()["dealt"] == 1  # dan's seat
        told = socket.receive_json()
        while told["type"] != "bets-returned":
            told = socket.receive_json()
    assert (told["total"], told["currency"]) == (500, "USD"), told
    assert told["reason"].startswith("Your bets sit this round out")


CLOSED = "The table 'classic-premium' is closed: it takes no new bets."


def test_a_player_reaches_their_round_at_a_table_taken_out_of_the_configuration_and_no_one_else_sees_the_table(
        http: TestClient, restart: Restart, service: Any) -> None:
    """The lobby names the round for its player, the table answers them as closed (their round, no slip, no shoe), a
    bet control there is a 409 that says so, and its socket hears them; to anyone else the table is a 404. Before,
    the page could not open the round: the table was in no lobby and a 404 to its player too."""
    ann, bob = new_player(http, "ann"), new_player(http, "bob")
    service.stacked.append(["TS", "6H", "9D", "TC", "8C"])  # 19 against 6 + 10: in play
    ann.bet("classic-premium", 500)
    round_id = ann.post("/tables/classic-premium/deal").json()["id"]
    bob.bet("classic", 500)  # bob has played elsewhere, never there
    bob.post("/tables/classic/deal")
    client, _ = restart(**{"classic-premium": None})
    ann, bob = again(client, ann), again(client, bob)
    before = ann.balance()
    lobby = ann.get("/tables").json()
    assert "classic-premium" not in [table["id"] for table in lobby["tables"]]
    [closed] = lobby["closed_tables"]
    assert (closed["id"], closed["closed"], closed["round_id"], closed["currency"]) == (
        "classic-premium", True, round_id, "USD")
    assert bob.get("/tables").json()["closed_tables"] == []
    assert client.get("/tables").json()["closed_tables"] == []  # signed out
    state = ann.get("/tables/classic-premium").json()
    assert state["table"]["closed"] and state["next_shoe"] is None and state["slip"]["total"] == 0
    view = state["round"]
    assert (view["id"], view["status"], view["currency"]) == (round_id, "playing", "USD")
    assert len(view["dealer"]["cards"]) == 1 and view["dealer"]["hidden"] == 1  # the hole card stays hidden
    assert state["balance"] == before
    assert bob.get("/tables/classic-premium").json() == {"detail": "There is no table 'classic-premium'."}
    controls = [("chip", {"chip": 500}), ("bets", {"spot": 1, "type": "main", "chip": 500}), ("deal", None),
                ("rebet", None), ("undo", None), ("double", None), ("clear", None)]
    for control, body in controls:
        refused = ann.post(f"/tables/classic-premium/{control}", body)
        assert (refused.status_code, refused.json()) == (409, {"detail": CLOSED}), control
        unknown = bob.post(f"/tables/classic-premium/{control}", body)
        assert (unknown.status_code, unknown.json()["detail"]) == (404, "There is no table 'classic-premium'.")
    assert ann.balance() == before
    with client.websocket_connect(f"/ws/tables/classic-premium?token={ann.token}") as socket:
        assert socket.receive_json()["type"] == "hello"  # the page hears its round there (the timer's Stand)
    with client.websocket_connect(f"/ws/tables/classic-premium?token={bob.token}") as socket:
        with pytest.raises(WebSocketDisconnect) as closed_socket:
            socket.receive_json()
        assert closed_socket.value.code == 4404
    settled = played_out(ann, round_id)
    assert settled["status"] == "settled" and ann.balance() == before + settled["me"]["returned"]
    state = ann.get("/tables/classic-premium").json()
    assert state["table"]["closed"] and state["round"] is None  # the page says the table is closed
    assert ann.get("/tables").json()["closed_tables"] == []
    refused = ann.post("/tables/classic-premium/rebet")
    assert (refused.status_code, refused.json()) == (409, {"detail": CLOSED})


def test_a_seat_returned_from_a_round_formed_before_the_currency_changed_is_told_in_the_rounds(
        http: TestClient, restart: Restart) -> None:
    """A self-exclusion (as a sign-out) takes the player's seat out of a forming round: what it returned names the
    round's currency, which the table's, changed since, no longer tells."""
    cat = new_player(http, "cat")
    cat.bet("multiplayer", 500)
    cat.post("/tables/multiplayer/deal")
    client, _ = restart(multiplayer={"currency": "EUR"})
    answer = again(client, cat).put("/me/limits", {"exclude_days": 1}).json()
    assert [(bets["table_id"], bets["total"], bets["currency"]) for bets in answer["returned_bets"]] == [
        ("multiplayer", 500, "USD")], answer


def test_the_operator_removes_a_table_it_made_while_it_is_played_and_makes_it_again(
        http: TestClient, restart: Restart, service: Any, clock: Clock) -> None:
    """``DELETE /admin/tables/{id}``: the table leaves the lobby at once, as one taken out of ``tables.toml`` leaves it
    at a restart. A round in play there is played out, one still taking bets is voided when its window ends, pages
    there are told, no money moves; the id may be made again with another setting. Before, an operator's table could
    be neither removed nor changed (noted by a trial of an operator)."""
    operator = Client(http, OPERATOR, "operator")
    vip = {"id": "vip", "name": "VIP", "variant": "classic", "currency": "USD", "chips": [500, 2500],
           "limits": {"main": [500, 100000]}}
    assert operator.post("/admin/tables", vip).status_code == 201
    assert operator.post("/admin/tables", {**vip, "id": "vip-crowd", "variant": "multiplayer"}).status_code == 201
    ann, bob, cat = (new_player(http, name) for name in ("ann", "bob", "cat"))
    service.stacked.append(["TS", "6H", "9D", "TC", "8C"])  # 19 against 6 + 10: in play
    ann.bet("vip", 500)
    round_id = ann.post("/tables/vip/deal").json()["id"]
    bob.bet("vip-crowd", 500)
    forming = bob.post("/tables/vip-crowd/deal").json()["id"]
    balances = {player.name: player.balance() for player in (ann, bob, cat)}
    with http.websocket_connect(f"/ws/tables/vip?token={cat.token}") as socket:
        assert socket.receive_json()["type"] == "hello"
        for who, table, status in ((ann, "vip", 403), (operator, "classic", 409), (operator, "no-such", 404)):
            refused = operator.delete(f"/admin/tables/{table}") if who is operator else who.delete("/admin/tables/vip")
            assert refused.status_code == status and refused.json()["detail"], refused.json()
        cat.bet("vip", 2500)  # held on cat's slip, never dealt
        removed = operator.delete("/admin/tables/vip")
        assert removed.status_code == 200, removed.json()
        assert (removed.json()["id"], removed.json()["closed"], removed.json()["rounds_open"]) == ("vip", True, 1)
        assert socket.receive_json() == {"table_id": "vip", "type": "table-closed"}  # the page reads it again
    assert operator.delete("/admin/tables/vip").status_code == 404  # gone already
    for odd in ("a%00b", "no%0A", "x" * 40):  # no id a table could have: PostgreSQL answered a NUL with a 500
        assert operator.delete(f"/admin/tables/{odd}").status_code == 404, odd
    assert operator.delete("/admin/tables/vip-crowd").json()["rounds_open"] == 1
    # The round still taking bets there is voided at once, nothing staked; before, it waited for its window's end,
    # and was dealt at a table made again under the id meanwhile (found by review).
    assert bob.get(f"/rounds/{forming}").json()["status"] == "void"
    remade = operator.post("/admin/tables", {**vip, "limits": {"main": [2500, 100000]}})
    assert (remade.status_code, remade.json()["detail"]) == (409, f"Round {round_id} of the table 'vip' that was "
                                                                    "taken out is still open there: make the table "
                                                                    "again once it has ended.")
    # Nor in another case: the lobby would list "VIP" beside the "vip" still open, and "vip" could not be made again
    # (an attacker's trial).
    other_case = operator.post("/admin/tables", {**vip, "id": "VIP"})
    assert (other_case.status_code, other_case.json()["detail"]) == (
        409, f"Round {round_id} of the table 'vip' that was taken out is still open there: make the table again once "
             "it has ended.")
    for player in (ann, bob, cat):
        lobby = player.get("/tables").json()
        assert not {"vip", "vip-crowd"} & {table["id"] for table in lobby["tables"]}
    assert [table["id"] for table in ann.get("/tables").json()["closed_tables"]] == ["vip"]
    assert cat.get("/tables/vip").json() == {"detail": "There is no table 'vip'."}
    assert ann.get("/tables/vip").json()["table"]["closed"]
    closed = ann.post("/tables/vip/bets", {"spot": 1, "type": "main", "chip": 500})
    assert (closed.status_code, closed.json()) == (409, {"detail": "The table 'vip' is closed: it takes no new bets."})
    settled = played_out(ann, round_id)
    assert settled["status"] == "settled" and settled["me"]["returned"] == 1000
    assert {player.name: player.balance() for player in (ann, bob, cat)} == {**balances, "ann": balances["ann"] + 1000}
    # Made again under its id, in another game: a change of an operator's table. Its old round reads as before; the
    # slip held there went with the table (before, it came back, to be staked in the new table's currency: review),
    # and the new game deals from a shoe of its own (before, from the classic table's shoe of 312 cards: review).
    again_made = operator.post("/admin/tables", {**vip, "variant": "single-deck", "currency": "GBP",
                                                 "chips": [2500], "limits": {"main": [2500, 100000]}})
    assert again_made.status_code == 201, again_made.json()
    assert again_made.json()["limits"]["main"] == [2500, 100000]
    table = cat.get("/tables/vip").json()
    assert (table["table"]["closed"], table["table"]["variant"], table["slip"]["total"]) == (False, "single-deck", 0)
    assert ann.get(f"/rounds/{round_id}").json()["me"]["returned"] == 1000
    for player in (ann, cat):
        player.bet("vip", 2500)
        dealt = player.post("/tables/vip/deal").json()
        with service.store.read() as session:
            shoe = session.execute(select(SHOES.c.cards).join(ROUNDS, ROUNDS.c.shoe_id == SHOES.c.id)
                                   .where(ROUNDS.c.id == dealt["id"])).scalar_one()
        assert (dealt["variant"], len(shoe.split())) == ("single-deck", 52), dealt["id"]


def test_a_table_removed_by_another_process_leaves_this_ones_lobby_at_its_next_tick(
        http: TestClient, restart: Restart, service: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """As ``twentyone admin remove-table`` on the server's SQLite file does (or a process whose announcement this one
    missed): the registry counted the operator's tables to notice another process's, and a removal and a creation
    together left the count as it was."""
    operator = Client(http, OPERATOR, "operator")
    table = {"id": "old", "name": "Old", "variant": "classic", "currency": "USD", "chips": [500],
             "limits": {"main": [500, 100000]}}
    assert operator.post("/admin/tables", table).status_code == 201
    assert "old" in {table["id"] for table in operator.get("/tables").json()["tables"]}
    assert operator.post("/admin/tables", {**table, "id": "remade"}).status_code == 201
    told: list[tuple[str, dict[str, Any]]] = []  # what this process tells its own pages of what others do
    deliver = service.events.deliver
    monkeypatch.setattr(service.events, "deliver", lambda table_id, event: (told.append((table_id, event)),
                                                                            deliver(table_id, event)))
    _, elsewhere = restart()  # another process on the same database
    operator_there = Caller(0, "operator", "operator")  # as twentyone admin acts
    setting = {key: value for key, value in table.items() if key != "id"}
    elsewhere.remove_table(operator_there, "old")
    elsewhere.create_table(operator_there, "new", setting)
    elsewhere.remove_table(operator_there, "remade")  # and made again at once, in euros
    elsewhere.create_table(operator_there, "remade", {**setting, "currency": "EUR"})
    if service.db.is_sqlite:  # no announcement between processes there (PostgreSQL's may have come already)
        assert "old" in service.tables() and "new" not in service.tables()  # this process has not looked yet
        # A read of the tables on a miss (a table this process does not hold) is a read too: it tells as the tick
        # does (before, it took the change in silence, and the tick then found nothing to tell: review).
        assert operator.get("/tables/no-such-table").status_code == 404
    service.tick()
    lobby = {table["id"]: table for table in operator.get("/tables").json()["tables"]}
    assert "old" not in lobby and "new" in lobby and lobby["remade"]["currency"] == "EUR"
    # The pages this process has at the tables changed elsewhere are told, once each (before, only the remover's), and
    # so are those at a table made (a page left at its closed stand-in reads it open: a trial). On PostgreSQL the
    # removal's announcement may be read before the creation's: "remade" was gone, then made.
    heard = sorted((table_id, event["type"]) for table_id, event in told)
    expected = [("new", "table-changed"), ("old", "table-closed"), ("remade", "table-changed")]
    assert heard == expected or (not service.db.is_sqlite and heard == sorted(
        [*expected, ("remade", "table-closed")])), heard


def test_a_slip_held_at_a_table_taken_out_of_tables_toml_is_not_staked_at_an_operators_table_made_under_its_id(
        http: TestClient, restart: Restart) -> None:
    """The operator's table made in its place, in euros, starts with an empty slip (found by review: the dollars
    held there were staked in euros)."""
    ann = new_player(http, "ann")
    ann.bet("classic-premium", 500)
    client, _ = restart(**{"classic-premium": None})
    ann = again(client, ann)
    euros = ann.balance("EUR")
    made = Client(client, OPERATOR, "operator").post("/admin/tables", {
        "id": "classic-premium", "name": "Premium", "variant": "classic", "currency": "EUR", "chips": [500],
        "limits": {"main": [500, 100000]}})
    assert made.status_code == 201, made.json()
    assert ann.get("/tables/classic-premium").json()["slip"]["total"] == 0
    refused = ann.post("/tables/classic-premium/deal")
    assert refused.status_code == 409 and ann.balance("EUR") == euros, refused.json()


def shoes_of(service: Any, table_id: str) -> dict[int, tuple[str | None, int, bool]]:
    """The table's shoes by id: the game each was shuffled for, its number of cards, whether it is finished."""
    with service.store.read() as session:
        rows = session.execute(select(SHOES.c.id, SHOES.c.variant, SHOES.c.cards, SHOES.c.finished)
                               .where(SHOES.c.table_id == table_id)).all()
    return {row.id: (row.variant, len(row.cards.split()), row.finished) for row in rows}


def shoe_of_round(service: Any, round_id: int) -> int:
    with service.store.read() as session:
        return int(session.execute(select(ROUNDS.c.shoe_id).where(ROUNDS.c.id == round_id)).scalar_one())


def test_a_table_whose_game_changed_in_tables_toml_deals_no_round_from_the_old_games_shoe(
        http: TestClient, restart: Restart, service: Any) -> None:
    """Before, the new game was dealt from the shoe shuffled for the old one until its cut card: here a single-deck
    round from 312 classic cards (found by review). The old game's shoe a round in play deals from is not finished
    (revealed) before that round ends, and is finished when it ends, wherever its cut card is."""
    ann, bob = new_player(http, "ann"), new_player(http, "bob")
    service.stacked.append(["TS", "6H", "9D", "TC", "8C"])  # bob's round: 19 against 6 + 10, in play
    bob.bet("classic", 500)
    in_play = bob.post("/tables/classic/deal").json()["id"]
    ann.bet("classic", 500)
    played_out(ann, ann.post("/tables/classic/deal").json()["id"])  # ann's next shoe is shuffled, for classic
    old = shoes_of(service, "classic")
    assert {variant for variant, _, _ in old.values()} == {"classic"}
    bob_shoe = shoe_of_round(service, in_play)
    assert old[bob_shoe] == ("classic", 312, False)
    client, service = restart(classic={"variant": "single-deck", "limits": {"main": (2500, 100000)}, "chips": (2500,)})
    ann, bob = again(client, ann), again(client, bob)
    # The start finished every classic shoe (ann's next one, revealed) but the one bob's round in play deals from.
    assert [shoe_id for shoe_id, (_, _, finished) in shoes_of(service, "classic").items() if not finished] \
        == [bob_shoe]
    for player in (ann, bob):  # bob's bet control during his round: the new game's first shoe is shuffled now
        assert player.get("/tables/classic").json()["table"]["variant"] == "single-deck"
        player.bet("classic", 2500)
    dealt = ann.post("/tables/classic/deal").json()
    # (Its shoe is finished already if the round settled at its deal: a random shoe.)
    assert dealt["variant"] == "single-deck" \
        and shoes_of(service, "classic")[shoe_of_round(service, dealt["id"])][:2] == ("single-deck", 52), dealt
    shoes = shoes_of(service, "classic")
    assert [shoe_id for shoe_id, (variant, _, finished) in shoes.items() if variant == "classic" and not finished] \
        == [bob_shoe]  # every other classic shoe finished; bob's, in play, still hidden
    verify = bob.get(f"/rounds/{in_play}/verify")
    assert verify.status_code == 409, verify.json()  # nothing of it is revealed mid-round
    view = played_out(bob, in_play)
    assert view["status"] == "settled" and view["variant"] == "classic" and view["me"]["returned"] == 1000
    assert shoes_of(service, "classic")[bob_shoe] == ("classic", 312, True)  # short of any cut card, finished
    assert bob.get(f"/rounds/{in_play}/verify").status_code == 200


@pytest.mark.parametrize("change", [{"variant": "multiplayer", "seats": 7, "limits": {"main": [100, 500000]}},
                                    {"seats": 1, "betting_window": 0}, None],
                         ids=["game-changed", "made-private", "taken-out"])
def test_a_shoe_with_a_cut_card_is_finished_when_its_last_round_ends_at_a_table_changed_or_taken_out(
        http: TestClient, restart: Restart, service: Any, clock: Clock, change: dict[str, Any] | None) -> None:
    """Power's shoe lasts to its cut card. A round in play when the table changed game, or was taken out, is the last
    that shoe deals: before, its settlement left the shoe unfinished, so its ``/verify`` could never reveal it. Made
    private, the table deals from its players' own shoes: the shared one is finished too (found by review)."""
    from server_helpers import dealt_shared_round

    ann, bob = new_player(http, "ann"), new_player(http, "bob")
    service.stacked.append(["KS", "6H", "8D", "QC", "7C"])  # 18 against 6 + 10 (power has no 9 or 10): in play
    in_play = dealt_shared_round(service, clock, [ann], "power")
    shoe = shoe_of_round(service, in_play)
    client, service = restart(power=change)
    ann, bob = again(client, ann), again(client, bob)
    assert played_out(ann, in_play)["me"]["returned"] == 1000
    assert shoes_of(service, "power")[shoe] == ("power", 352, True)  # far short of its cut card (264), finished
    assert ann.get(f"/rounds/{in_play}/verify").status_code == 200
    if change is not None and "variant" in change:  # the new game's first round: from a shoe of its own
        # Stacked: a random shoe settled the round at its deal one time in twenty (a dealer's blackjack), and the round
        # was not in play to be read (failed once in fresh-check). No Ace: no blackjack, the round stays in play.
        service.stacked.append(["KS", "6H", "8D", "7C", "5C"])
        dealt = dealt_shared_round(service, clock, [bob], "power")
        assert shoes_of(service, "power")[shoe_of_round(service, dealt)][:2] == ("multiplayer", 416)
    elif change is None:
        assert [finished for _, _, finished in shoes_of(service, "power").values()] == [True]  # none shuffled anew


def test_a_round_formed_before_the_tables_game_changed_is_joined_by_no_one_else_and_dealt_in_its_own_game(
        http: TestClient, restart: Restart, service: Any, clock: Clock) -> None:
    """Its seats bet on the old game, and it deals that game from the old game's shoe; a bet made on the new game does
    not join it (before, it was staked in a round of another game: found by review), and the next round is the new
    game's, from a shoe of its own."""
    from server_helpers import joined_shared_round

    ann, bob = new_player(http, "ann"), new_player(http, "bob")
    service.stacked.append(["TS", "6H", "9D", "TC", "8C"])  # no offer, no blackjack: one decision of ann's
    [joined] = joined_shared_round(service, clock, [ann], "multiplayer")
    forming = joined.json()["id"]
    clock.advance(-service.table("multiplayer").betting_window)  # the window still open at the restart
    client, service = restart(multiplayer={"variant": "power", "limits": {"main": [100, 100000]}})
    ann, bob = again(client, ann), again(client, bob)
    balance = bob.balance()
    bob.bet("multiplayer", 500)
    refused = bob.post("/tables/multiplayer/deal")
    assert (refused.status_code, refused.json()) == (409, {"detail": "This round deals Multiplayer Blackjack, as the "
                                                                     "table did when it opened: bet on the next one."})
    assert bob.balance() == balance and bob.get("/tables/multiplayer").json()["slip"]["total"] == 500
    clock.advance(service.table("multiplayer").betting_window + 1)
    service.tick()
    dealt = ann.get(f"/rounds/{forming}").json()
    assert dealt["status"] in ("playing", "settled") and dealt["variant"] == "multiplayer"
    assert shoes_of(service, "multiplayer")[shoe_of_round(service, forming)][:2] == ("multiplayer", 416)
    for _ in range(5):  # ann's decisions are left to the timer, as a player who left
        if ann.get(f"/rounds/{forming}").json()["status"] != "playing":
            break
        clock.advance(60)
        service.tick()
    assert ann.get(f"/rounds/{forming}").json()["status"] == "settled"
    bob.bet("multiplayer", 500)  # his slip was returned at the round's close: bets not in it (sheet 000)
    joined = bob.post("/tables/multiplayer/deal")
    assert joined.status_code == 200 and joined.json()["variant"] == "power", joined.json()
    clock.advance(service.table("multiplayer").betting_window + 1)
    service.tick()
    assert shoes_of(service, "multiplayer")[shoe_of_round(service, joined.json()["id"])][:2] == ("power", 352)


@pytest.mark.parametrize("change", [{"seats": 1, "betting_window": 0}, None], ids=["made-private", "taken-out"])
def test_a_used_shoe_no_table_deals_from_now_is_finished_at_the_start(
        http: TestClient, restart: Restart, service: Any, clock: Clock, change: dict[str, Any] | None) -> None:
    """Power's shoe, short of its cut card after a round, at a table made private (a private table deals from its
    players' own shoes) or taken out: finished at the start, so that the round it dealt can be verified. Before, it
    stayed unfinished for good and that round's ``/verify`` was a 409 (found by review)."""
    from server_helpers import dealt_shared_round

    ann = new_player(http, "ann")
    service.stacked.append(["KS", "6H", "8D", "QC", "7C"])  # 18 against 6 + 10: in play
    settled = played_out(ann, dealt_shared_round(service, clock, [ann], "power"))
    shoe = shoe_of_round(service, settled["id"])
    assert shoes_of(service, "power")[shoe] == ("power", 352, False)
    assert ann.get(f"/rounds/{settled['id']}/verify").status_code == 409  # the shoe deals on: nothing revealed
    client, service = restart(power=change)
    ann = again(client, ann)
    assert shoes_of(service, "power")[shoe][2] is True
    assert ann.get(f"/rounds/{settled['id']}/verify").status_code == 200


def test_a_shoe_shuffled_before_its_game_was_recorded_is_finished_at_the_start_and_the_table_plays_on(
        http: TestClient, restart: Restart, service: Any, clock: Clock) -> None:
    """A fresh shoe from before migration 0017 has no game: it fits no table, and the start finishes it, so that the
    table shuffles one of its own at the next bet. A first version read such a shoe again at every table read, with
    a statement missing its table: every read of the table and every bet control there a 500 (found by review)."""
    ann, bob = new_player(http, "ann"), new_player(http, "bob")
    bob.bet("multiplayer", 500)  # the table's next shoe is shuffled and published
    published = bob.get("/tables/multiplayer").json()["next_shoe"]["id"]
    with service.store.write() as session:
        session.execute(SHOES.update().where(SHOES.c.id == published).values(variant=None))
    client, service = restart()
    ann, bob = again(client, ann), again(client, bob)
    assert shoes_of(service, "multiplayer")[published][2] is True
    for player in (ann, bob):
        assert player.get("/tables/multiplayer").status_code == 200
    ann.bet("multiplayer", 500)
    shoe = ann.get("/tables/multiplayer").json()["next_shoe"]["id"]
    assert shoe != published and shoes_of(service, "multiplayer")[shoe] == ("multiplayer", 416, False)
    joined = ann.post("/tables/multiplayer/deal")
    assert joined.status_code == 200, joined.json()


def test_a_process_started_with_another_tables_toml_changes_every_processs_tables_at_their_next_tick(
        http: TestClient, restart: Restart, service: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every process on one database serves the tables the latest start published (a worker uvicorn restarted after
    the operator edited the file, a second ``serve`` with another file). Before, each served its own for its life:
    two floors on one database, each start's sweep finishing the other's shoes (noted by review)."""
    from twentyone.server.models import TABLES_FILES

    told: list[tuple[str, str]] = []
    deliver = service.events.deliver
    monkeypatch.setattr(service.events, "deliver", lambda table_id, event: (told.append((table_id, event["type"])),
                                                                            deliver(table_id, event)))
    single = {"variant": "single-deck", "currency": "GBP", "chips": [2500], "limits": {"main": [2500, 100000]}}
    _, elsewhere = restart(classic=single, **{"classic-premium": None})
    assert service.tables()["classic"].variant == "classic"  # nothing tells this process until its tick reads them
    service.tick()
    assert (service.tables()["classic"].variant, "classic-premium" in service.tables()) == ("single-deck", False)
    assert sorted(told) == [("classic", "table-changed"), ("classic-premium", "table-closed")]  # once each
    ann = new_player(http, "ann")
    ann.bet("classic", 2500)
    dealt = ann.post("/tables/classic/deal").json()
    assert dealt["variant"] == "single-deck"
    assert shoes_of(service, "classic")[shoe_of_round(service, dealt["id"])][:2] == ("single-deck", 52)
    restart(classic=single, **{"classic-premium": None})  # a third process with the same file: nothing to publish
    with service.store.read() as session:
        assert session.execute(select(func.count()).select_from(TABLES_FILES)).scalar_one() == 2
    # A start without a file (a process restarted with its first command line) does not put the shipped tables
    # back over a file given to a start: before, it changed the whole floor's currencies and limits (an operator's
    # trial). It serves the file's.
    _, plain = restart()
    service.tick()
    assert (service.tables()["classic"].variant, "classic-premium" in service.tables()) == ("single-deck", False)
    assert (plain.tables()["classic"].variant, "classic-premium" in plain.tables()) == ("single-deck", False)
    restart(given=True)  # the shipped file given (serve --tables .../tables.toml): every process serves it
    service.tick()
    assert (service.tables()["classic"].variant, "classic-premium" in service.tables()) == ("classic", True)
    elsewhere.tick()
    assert elsewhere.tables().keys() == service.tables().keys()
    restart()  # the shipped tables over shipped ones: nothing to keep, nothing to publish
    with service.store.read() as session:
        assert session.execute(select(func.count()).select_from(TABLES_FILES)).scalar_one() == 3


def test_serve_tables_names_the_operators_tables_toml(tmp_path: Path) -> None:
    """``serve --tables FILE`` (``TWENTYONE_TABLES``): the lobby is the file's tables, the timers a table leaves out
    its game's, and the shipped tables are not served beside it."""
    (tmp_path / "floor.toml").write_text('[vip]\nname = "VIP"\nvariant = "multiplayer"\ncurrency = "EUR"\n'
                                         'chips = [500]\nlimits = { main = [500, 100000] }\nseats = 5\n')
    settings = Settings.from_environment(f"sqlite:///{tmp_path / 'twentyone.db'}", tmp_path,
                                         tables_file=tmp_path / "floor.toml")
    assert settings.tables_given  # it replaces the tables a file gave, where the shipped ones do not
    assert not Settings.from_environment(f"sqlite:///{tmp_path / 'other.db'}", tmp_path).tables_given
    with TestClient(create_app(settings, timers=False)) as client:
        [vip] = client.get("/tables").json()["tables"]
    assert (vip["id"], vip["name"], vip["currency"], vip["seats"]) == ("vip", "VIP", "EUR", 5)
    assert (vip["decision_timeout"], vip["betting_window"]) == (15, 15)  # the multiplayer sheet's


def test_a_table_whose_timers_this_process_holds_is_removed_and_made_again_at_once(
        http: TestClient, service: Any) -> None:
    """On PostgreSQL the process that runs a table's timers holds their advisory lock for its life. Removing or making
    the table took a lock of the same name, and waited for ever (found by a trial of an operator: every table played
    since the start could be neither removed nor made again)."""
    from concurrent.futures import ThreadPoolExecutor

    from twentyone.server.cluster import table_timers

    operator = Client(http, OPERATOR, "operator")
    table = {"id": "vip", "name": "VIP", "variant": "classic", "currency": "USD", "chips": [500],
             "limits": {"main": [500, 100000]}}
    assert operator.post("/admin/tables", table).status_code == 201
    assert service.ownership.owned({table_timers("vip")}) == {table_timers("vip")}  # as its first tick takes them
    with ThreadPoolExecutor(1) as pool:
        removed = pool.submit(lambda: operator.delete("/admin/tables/vip")).result(timeout=20)
        again = pool.submit(lambda: operator.post("/admin/tables", {**table, "currency": "EUR"})).result(timeout=20)
        twice = pool.submit(lambda: operator.post("/admin/tables", table)).result(timeout=20)
    assert (removed.status_code, again.status_code) == (200, 201), (removed.text, again.text)
    assert (twice.status_code, twice.json()["detail"]) == (409, "A table 'vip' already exists.")


def test_a_table_the_latest_published_tables_toml_defines_is_not_made_by_the_operator_before_the_tick(
        http: TestClient, restart: Restart, service: Any) -> None:
    """A creation checks the id against the file published last, read in its own write, not against what this process
    read at its last tick: it made the table both the file's and the operator's, which neither a removal (the file's)
    nor a start with that file (the operator's) could then undo (found by review)."""
    vip = {"name": "VIP", "variant": "classic", "currency": "EUR", "chips": [500], "limits": {"main": [500, 100000]}}
    restart(vip=vip)  # another process's start, with a file that defines vip
    assert "vip" not in service.tables()  # this process has not read it yet
    made = Client(http, OPERATOR, "operator").post("/admin/tables", {"id": "VIP", **vip, "currency": "USD"})
    assert (made.status_code, made.json()["detail"]) == (
        409, "A table 'vip' already exists: ids differing in case alone are not told apart.")


def test_a_published_tables_toml_this_version_cannot_read_leaves_the_tables_served_and_the_timers_running(
        http: TestClient, service: Any, restart: Restart, caplog: pytest.LogCaptureFixture) -> None:
    """As a newer version's start publishes a file with a game this one does not know: before, every tick of this
    process failed on it (no window closed, no decision timed out) and a table's miss was a 500 (found by review).
    A start of this version then replaces it (its warning could not read the row it replaced, and failed the start
    after the row was written)."""
    from twentyone.server.models import TABLES_FILES

    before = service.tables()
    newer = {"blackjack-21": {"name": "Spanish 21", "variant": "spanish21", "currency": "USD", "chips": [100],
                              "limits": {"main": [100, 1000]}}}
    with service.store.write() as session:
        session.execute(TABLES_FILES.insert().values(digest="f" * 64, tables=newer, published_at=service.clock()))
    for _ in range(2):
        service.tick()  # raised TableConfigError
    assert service.tables() == before
    assert Client(http, OPERATOR, "operator").get("/tables/no-such-table").status_code == 404
    unreadable = [record for record in caplog.records if "cannot be read by this version" in record.getMessage()]
    assert len(unreadable) == 1, unreadable  # once, not at every tick
    _, elsewhere = restart()
    assert elsewhere.tables().keys() == before.keys()
    service.tick()
    assert service.tables() == before


def test_a_file_published_before_0019_is_kept_once_a_start_gives_it(http: TestClient, restart: Restart,
                                                                    service: Any) -> None:
    """A floor's file published before migration 0019 counts as the shipped tables; the docs' advice, a start given
    that same file, marks it given (the same tables: no new row), and a start without a file then keeps it. Before,
    the unchanged digest left the row as it was, and the shipped tables came back (review)."""
    from twentyone.server.models import TABLES_FILES

    single = {"variant": "single-deck", "currency": "GBP", "chips": [2500], "limits": {"main": [2500, 100000]}}
    restart(given=False, classic=single)  # as a start before 0019 published it
    restart(given=True, classic=single)
    _, plain = restart()
    with service.store.read() as session:
        rows = session.execute(select(TABLES_FILES.c.given).order_by(TABLES_FILES.c.id)).scalars().all()
    assert rows == [False, True], rows  # the shipped tables of the first start, then the file, marked given
    assert plain.tables()["classic"].variant == "single-deck"


def test_a_socket_opened_while_storage_is_busy_is_told_to_try_again_not_that_the_table_is_gone(
        http: TestClient, service: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A 503 at the socket's handshake closed it 4404, which the terminal takes for good (no such table) and stopped
    following the table over a busy moment (review). It is 1013, try again later, as for a client too slow; a table
    nobody has is still 4404."""
    ann = new_player(http, "ann")

    def busy(table_id: str, player_id: int) -> Any:
        raise Busy()

    monkeypatch.setattr(service.registry, "seen_by", busy)
    with http.websocket_connect(f"/ws/tables/classic?token={ann.token}") as socket, \
            pytest.raises(WebSocketDisconnect) as closed:
        socket.receive_json()
    assert closed.value.code == 1013
    monkeypatch.undo()
    with http.websocket_connect(f"/ws/tables/nowhere?token={ann.token}") as socket, \
            pytest.raises(WebSocketDisconnect) as closed:
        socket.receive_json()
    assert closed.value.code == 4404
