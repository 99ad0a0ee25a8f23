"""A Power Blackjack round of many players: one deal, independent decisions, one settlement for all."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

from fastapi.testclient import TestClient
from server_helpers import Client, Clock, dealt_shared_round, new_guest
from sqlalchemy import func, select

from twentyone.server import live
from twentyone.server.app import create_app
from twentyone.server.config import Settings
from twentyone.server.models import LedgerEntry, RoundSeat
from twentyone.server.service import GameService
from twentyone.server.views import OTHERS_SHOWN

PLAYERS = OTHERS_SHOWN + 12  # more than a round view lists in full


@contextmanager
def counting_rebuilds() -> Iterator[list[int]]:
    """The ids of the rounds whose engines are replayed whole from the log while the block runs."""
    rebuilt: list[int] = []
    original = live.replayed  # what live.rebuild and a live engine's replay both run
    live.replayed = lambda session, row: rebuilt.append(row.id) or original(session, row)  # type: ignore[assignment]
    try:
        yield rebuilt
    finally:
        live.replayed = original


def test_a_crowded_power_round_takes_decisions_in_any_order_and_settles_everyone_once(
        http: TestClient, service: GameService, clock: Clock) -> None:
    # Players hold 5+6 = 11 against a 7 up and an 8 in the hole (15: the dealer draws).
    service.stacked.append(["5S", "7H", "6D", "8C", "4C", "KD", "2H", "3S", "QC", "2C", "2D", "3H"])
    players = []
    for _ in range(PLAYERS):
        body = http.post("/auth/guest").json()
        players.append(Client(http, body["token"], body["player"]["name"]))
    balances = {p.name: p.balance("EUR") for p in players}
    for player in players:
        player.bet("power", 500)
        assert player.post("/tables/power/deal").status_code == 200
    clock.advance(16)
    assert service.tick()["dealt"] == 1
    round_id = players[0].get("/tables/power").json()["round"]["id"]
    # The last player need not wait for the first: every player has a decision of their own at once.
    for player in reversed(players):
        view = player.get(f"/rounds/{round_id}").json()
        assert view["legal_actions"], player.name
        assert view["seat_count"] == PLAYERS and len(view["seats"]) <= OTHERS_SHOWN + 1
        assert any(hand["name"] == player.name for hand in view["hands"])  # the viewer's own hand, always
        answer = player.act(round_id, "stand").json()
        assert answer["status"] == ("settled" if player is players[0] else "playing")
    final = players[-1].get(f"/rounds/{round_id}").json()
    assert final["status"] == "settled"
    with service.db.sessions() as session:
        seats = session.scalars(select(RoundSeat).where(RoundSeat.round_id == round_id)).all()
        assert len(seats) == PLAYERS
        # Each seat paid exactly once, and the ledger still balances to zero.
        assert session.scalar(select(func.count()).select_from(LedgerEntry)
                              .where(LedgerEntry.round_id == round_id, LedgerEntry.kind == "win",
                                     LedgerEntry.amount > 0)) == sum(1 for seat in seats if seat.returned)
        assert session.scalar(select(func.sum(LedgerEntry.amount))) == 0
    # Everyone at the table re-reads the settled round (the web table does, on the settled event): from the
    # engine that settled it, not each time replayed from the log (a thousand replays at a table of a thousand).
    with counting_rebuilds() as rebuilt:
        for player in players:
            mine = player.get(f"/rounds/{round_id}").json()["me"]
            assert player.balance("EUR") == balances[player.name] - mine["staked"] + mine["returned"]
            assert mine["balance_after"] == player.balance("EUR")
    assert rebuilt == []


def test_the_timer_stands_every_player_still_deciding_at_the_step_and_the_next_step_has_its_own_clock(
        http: TestClient, service: GameService, clock: Clock) -> None:
    service.stacked.append(["5S", "7H", "6D", "8C", "4C", "KD", "2H", "3S"])
    players = [new_guest(http) for _ in range(5)]
    round_id = dealt_shared_round(service, clock, players)
    clock.advance(5)
    assert players[2].act(round_id, "hit").status_code == 200  # chosen: waits for the others at this step
    clock.advance(11)  # the step's time is up: 16 s since the deal, whatever anyone chose meanwhile
    assert service.tick()["auto"] == 4  # the four still deciding stand; the card chosen is dealt
    view = players[2].get(f"/rounds/{round_id}").json()
    own = next(hand for hand in view["hands"] if hand["player_id"] == view["decision"]["player_id"])
    assert view["status"] == "playing" and own["cards"] == ["5S", "6D", "4C"]
    assert datetime.fromisoformat(view["decision"]["deadline"]) == clock.now + timedelta(seconds=15)
    clock.advance(16)
    assert service.tick()["auto"] == 1
    view = players[2].get(f"/rounds/{round_id}").json()
    assert view["status"] == "settled" and all(hand["status"] != "playing" for hand in view["hands"])


def test_an_insurance_time_out_declines_every_offer_and_leaves_each_hand_its_own_decision(
        http: TestClient, service: GameService, clock: Clock) -> None:
    """The offers are a step of their own: their time-out declines them, and the players' turns that follow
    get a fresh clock (before, the timer went on and stood every hand at once)."""
    service.stacked.append(["5S", "AH", "6D", "8C", "4C", "KD", "2H", "3S"])
    players = [new_guest(http) for _ in range(3)]
    round_id = dealt_shared_round(service, clock, players)
    assert players[0].get(f"/rounds/{round_id}").json()["decision"]["kind"] == "insurance"
    clock.advance(16)
    assert service.tick()["auto"] == 3  # the three offers declined, and nothing more
    for player in players:
        view = player.get(f"/rounds/{round_id}").json()
        assert view["status"] == "playing" and view["decision"]["kind"] == "play", view["decision"]
        assert datetime.fromisoformat(view["decision"]["deadline"]) == clock.now + timedelta(seconds=15)


def test_a_process_that_did_not_take_a_choice_catches_up_with_the_log_instead_of_replaying_the_round(
        http: TestClient, service: GameService, clock: Clock, settings: Settings) -> None:
    """A second server process on the same database: its engine of the round is a choice behind after each
    choice taken by the first. It applies the logged choices since, not the whole round again (which at a
    table of hundreds answers slowly exactly when someone chose: a tell, and a cost)."""
    service.stacked.append(["5S", "7H", "6D", "8C", "4C", "KD", "2H", "3S"])
    ann, bob = new_guest(http), new_guest(http)
    round_id = dealt_shared_round(service, clock, [ann, bob])
    with counting_rebuilds() as rebuilt, TestClient(create_app(settings, clock=clock, timers=False)) as other_process:
        def through_other(player: Client) -> dict[str, Any]:
            return other_process.get(f"/rounds/{round_id}", headers={"Authorization": f"Bearer {player.token}"}
                                     ).json()

        assert through_other(bob)["legal_actions"] and rebuilt == [round_id]  # its first read: a replay
        for player, action in ((ann, "hit"), (bob, "hit"), (ann, "stand")):
            assert player.act(round_id, action).status_code == 200
            assert through_other(bob) == bob.get(f"/rounds/{round_id}").json()
        assert rebuilt == [round_id]  # then each choice applied from the log, none replayed


def test_hints_in_a_live_shoe_count_the_cards_already_seen(
        http: TestClient, service: GameService, clock: Clock) -> None:
    """Power deals to a cut card: the second round's hint is for the shoe less the first round's cards and
    the cards face up now, with the hole card still counted as unseen."""
    from twentyone.analysis.hints import hint
    from twentyone.core.cards import parse_card, parse_cards
    from twentyone.server.models import Round, Shoe
    from twentyone.variants import builtin_rules

    body = http.post("/auth/guest").json()
    player = Client(http, body["token"], body["player"]["name"])
    service.stacked.append(["5S", "7H", "6D", "8C", "KD", "QC", "5C", "8H", "3D", "JS"])
    for _ in range(2):
        player.bet("power", 500)
        player.post("/tables/power/deal")
        clock.advance(16)
        service.tick()
        round_id = player.get("/tables/power").json()["round"]["id"]
        if player.get(f"/rounds/{round_id}").json()["legal_actions"] and _ == 0:
            player.act(round_id, "stand")
    view = player.get(f"/rounds/{round_id}").json()
    answer = player.get(f"/rounds/{round_id}/hint").json()
    rules = builtin_rules("power")
    with service.db.sessions() as session:
        round_row = session.get(Round, round_id)
        cards = session.get(Shoe, round_row.shoe_id).cards.split()
        earlier, start = cards[:round_row.shoe_start], round_row.shoe_start
    assert start > 0  # the second round drew from the same shoe
    hole = cards[start + 3]  # power: shared card, up card, shared card, hole card
    assert hole not in [c for h in view["hands"] for c in h["cards"]] + view["dealer"]["cards"]
    unseen = list(rules.shoe.composition.cards())
    for text in [*earlier, *view["hands"][0]["cards"], *view["dealer"]["cards"]]:
        unseen.remove(parse_card(text))
    expected = hint(rules, parse_cards(view["hands"][0]["cards"]), parse_card(view["dealer"]["cards"][0]),
                    view["legal_actions"], first_decision=True, unseen=unseen)
    assert [(entry["action"], entry["ev"]) for entry in answer["actions"]] == [
        (action, value) for action, value in expected]
    fresh = hint(rules, parse_cards(view["hands"][0]["cards"]), parse_card(view["dealer"]["cards"][0]),
                 view["legal_actions"], first_decision=True)
    assert [entry["ev"] for entry in answer["actions"]] != [value for _, value in fresh]


def test_a_crowd_hears_of_each_join_it_sees_listed_and_of_every_fiftieth_after(
        http: TestClient, service: GameService, clock: Clock) -> None:
    """Told of every join, 1,000 players would be sent a million events while the round forms."""
    every = 50  # rounds.CROWD_NEWS_EVERY
    joining = 2 * every + 3  # past the listed seats, two joins that are news, and a few that are not
    players = []
    for _ in range(joining + 1):
        body = http.post("/auth/guest").json()
        players.append(Client(http, body["token"], body["player"]["name"]))
    watcher, players = players[0], players[1:]
    with http.websocket_connect(f"/ws/tables/power?token={watcher.token}") as socket:
        assert socket.receive_json()["type"] == "hello"
        for player in players:
            player.bet("power", 500)
            assert player.post("/tables/power/deal").json()["status"] == "betting"
        forming = watcher.get("/tables/power").json()["round"]
        clock.advance(16)
        assert service.tick()["dealt"] == 1
        news: list[dict] = []
        while (event := socket.receive_json())["type"] == "bets":
            news.append(event)
        # The deal: everyone re-reads the table. With the round's status, as every round event (it had none): playing,
        # or settled where the shoe dealt the dealer a blackjack.
        status = players[0].get(f"/rounds/{forming['id']}").json()["status"]
        assert event == {"type": "round", "table_id": "power", "round_id": forming["id"], "status": status}
        assert status in ("playing", "settled")
    ids = [p.player_id() for p in players]
    # Each of the seats a view lists is news; past them, only every 50th join: the 50th and the 100th.
    assert [event["player_id"] for event in news] == [*ids[:OTHERS_SHOWN], ids[every - 1], ids[2 * every - 1]]
    # Each says what a page shows of it, so that pages need not read the table: the seat as every view lists it,
    # and the count; past the listed seats, the count alone.
    assert forming["seat_count"] == joining and len(forming["seats"]) == OTHERS_SHOWN
    assert [event["seat"] for event in news[:OTHERS_SHOWN]] == forming["seats"]
    assert [event["seat_count"] for event in news] == [*range(1, OTHERS_SHOWN + 1), every, 2 * every]
    assert all("seat" not in event for event in news[OTHERS_SHOWN:])
    # The first bets of a round carry the round as someone without a seat in it sees it: the pages take it from there.
    opening = news[0]["round"]
    assert opening["id"] == forming["id"] and opening["status"] == "betting" and "me" not in opening
    assert opening["seats"] == [news[0]["seat"]] and opening["seat_count"] == 1
    assert opening["betting_closes_at"] == forming["betting_closes_at"]
    assert all("round" not in event for event in news[1:])


def test_a_step_is_told_with_its_clock_the_one_thing_a_finished_player_sees_change(
        http: TestClient, service: GameService, clock: Clock) -> None:
    """The web table reads nothing at a step for a player who has finished: the event's deadline is all it needs."""
    service.stacked.append(["5S", "7H", "6D", "8C", "2D"])  # both hold 5 + 6; the dealer 7 up: no offer
    ann, bob = new_guest(http), new_guest(http)
    round_id = dealt_shared_round(service, clock, [ann, bob])
    with http.websocket_connect(f"/ws/tables/power?token={ann.token}") as socket:
        assert socket.receive_json()["type"] == "hello"
        stood = ann.act(round_id, "stand").json()
        assert stood["status"] == "playing" and not stood["legal_actions"] and not stood["drawing"]
        stood = ann.get(f"/rounds/{round_id}").json()
        clock.advance(5)
        hit = bob.act(round_id, "hit").json()
        own = next(hand for hand in hit["hands"] if hand["player_id"] == bob.player_id())
        assert hit["status"] == "playing" and own["cards"] == ["5S", "6D", "2D"]  # the step: bob plays on
        event = socket.receive_json()
        after = ann.get(f"/rounds/{round_id}").json()
    assert (event["type"], event["round_id"], event["status"]) == ("round", round_id, "playing")
    assert event["deadline"] == after["deadline"]
    assert after["deadline"] != stood["deadline"]  # the next step's clock
    assert {**after, "deadline": None} == {**stood, "deadline": None}  # nothing else changed for ann
