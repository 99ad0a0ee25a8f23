"""Time no server process served the floor is given back to the players deciding (``server/downtime.py``).

A trial of a terminal player found a server down while they decided used up their clock: after the restart the
timer stood their hand at once. Each process's timers now beat; a beat after a downtime moves every open round's
clock on by it. Time served is never given back, so a worker that keeps crashing cannot hold a table open.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from server_helpers import Client, Clock, dealt_shared_round, eventually, joined_shared_round, new_guest
from sqlalchemy import select

from twentyone.server.app import create_app
from twentyone.server.cluster import table_timers
from twentyone.server.config import Settings
from twentyone.server.context import Busy, aware
from twentyone.server.downtime import BEAT_SECONDS
from twentyone.server.models import HEARTBEAT
from twentyone.server.service import GameService

# The player 10 and 8 (18) against the dealer's 7: a decision waits, no offer before it.
EIGHTEEN_AGAINST_SEVEN = ["TS", "7D", "8S", "9C"]


def deadline(player: Client, round_id: int) -> datetime:
    return datetime.fromisoformat(player.get(f"/rounds/{round_id}").json()["deadline"])


def last_beat(service: GameService) -> datetime | None:
    with service.store.read() as session:
        return aware(session.execute(select(HEARTBEAT.c.beat_at)).scalar_one())


def served(service: GameService, clock: Clock, seconds: float) -> None:
    """The floor served for ``seconds``: a beat every :data:`BEAT_SECONDS`, as each process's timers beat."""
    for _ in range(int(seconds / BEAT_SECONDS)):
        clock.advance(BEAT_SECONDS)
        assert service.beat() is None  # never a downtime while beaten
    clock.advance(seconds % BEAT_SECONDS)


def dealt_classic(guest: Client, service: GameService) -> int:
    service.stacked.append(EIGHTEEN_AGAINST_SEVEN)
    guest.bet("classic", 500)
    round_id = int(guest.post("/tables/classic/deal").json()["id"])
    assert guest.get(f"/rounds/{round_id}").json()["status"] == "playing"
    return round_id


def restarted(settings: Settings, clock: Clock) -> GameService:
    """A server process started on the same database: every process that served before is gone (so it takes no
    advisory lock for its timers: the gone ones would still hold theirs here)."""
    return create_app(settings, clock=clock, timers=False, cluster=False).state.service  # type: ignore[no-any-return]


def test_a_decision_clock_stands_still_while_no_process_serves_the_floor(
        guest: Client, service: GameService, settings: Settings, clock: Clock,
        caplog: pytest.LogCaptureFixture) -> None:
    round_id = dealt_classic(guest, service)
    timeout = service.table("classic").decision_timeout
    assert service.beat() is None  # the floor's first beat: nothing to give back
    served(service, clock, 100)
    before = deadline(guest, round_id)
    clock.advance(3600)  # every process down for an hour, past the 20-minute clock
    later = restarted(settings, clock)
    with caplog.at_level("INFO", "twentyone.server"):
        down = later.beat()
    assert [record.getMessage() for record in caplog.records if "served the floor" in record.getMessage()] == [
        "no server process served the floor for 3600 s (since 2026-11-29T12:01:40+00:00): 1 open round's clock given "
        f"3598 s back (classic round {round_id})"]
    assert down is not None and down.length == timedelta(seconds=3600) and down.rounds == ((round_id, "classic"),)
    # All of it but a beat's interval, which the floor may have served after its last beat.
    assert deadline(guest, round_id) == before + timedelta(seconds=3600 - BEAT_SECONDS)
    assert later.tick()["auto"] == 0  # before: the hand stood at the first tick
    served(later, clock, timeout - 100 - 3 * BEAT_SECONDS)  # the 100 s used before the downtime count, and 2 s
    assert later.tick()["auto"] == 0 and guest.get(f"/rounds/{round_id}").json()["status"] == "playing"
    served(later, clock, 3 * BEAT_SECONDS)
    assert later.tick()["auto"] == 1
    assert guest.get(f"/rounds/{round_id}").json()["status"] == "settled"


def test_a_clock_started_after_the_last_beat_starts_again_when_the_floor_is_back(
        guest: Client, service: GameService, settings: Settings, clock: Clock) -> None:
    """A decision in the last second before the floor went down, which no beat followed (a review): its clock
    started after the last beat, and was stood at the first tick after the restart."""
    service.beat()
    clock.advance(1)
    round_id = dealt_classic(guest, service)
    clock.advance(3600)
    later = restarted(settings, clock)
    assert later.beat() is not None
    # It ran 1 s before the last beat's interval ended: that second is counted as served, no more.
    assert deadline(guest, round_id) == clock.now - timedelta(seconds=1) + timedelta(
        seconds=service.table("classic").decision_timeout)
    assert later.tick()["auto"] == 0


def test_time_served_is_never_given_back_so_a_worker_crashing_every_few_seconds_still_times_out(
        guest: Client, service: GameService, settings: Settings, clock: Clock) -> None:
    """Resetting the clocks at every start would let a process that crashes every few seconds (each start a beat)
    keep a table's slow player from ever timing out. Two processes beat in turn here, each just under the
    heartbeat's limit after the other."""
    round_id = dealt_classic(guest, service)
    timeout = service.table("classic").decision_timeout
    other = restarted(settings, clock)
    service.beat()
    assert settings.down_after_seconds is not None
    gap = settings.down_after_seconds - 1
    for turn in range(int(timeout // gap) + 1):
        clock.advance(gap)
        assert (other if turn % 2 == 0 else service).beat() is None
    assert service.tick()["auto"] == 1
    assert guest.get(f"/rounds/{round_id}").json()["status"] == "settled"


def test_a_process_killed_within_a_beat_of_each_start_still_times_a_player_out(
        http: TestClient, service: GameService, settings: Settings, clock: Clock) -> None:
    """Each life of a crash-looping process costs the clock a beat's interval at least: given back whole, a process
    killed 1.2 s after each start and restarted 11 s later kept a multiplayer player's 15 s clock frozen for good (a
    trial of an operator, with real processes)."""
    service.stacked.append(["9S", "6H", "7D", "TC", "2S", "2H", "2D", "2C", "3S", "3H"])  # the hand stays in play
    player = new_guest(http)
    round_id = dealt_shared_round(service, clock, [player], "multiplayer")
    timeout = service.table("multiplayer").decision_timeout
    lives = 0
    while player.get(f"/rounds/{round_id}").json()["status"] == "playing":
        life = restarted(settings, clock)
        life.beat()
        life.tick()
        clock.advance(1.2)  # killed
        clock.advance(11)  # restarted after more than the heartbeat's 10 s
        lives += 1
        # The first life's beat is the floor's first (nothing to count); each after it costs a beat's interval.
        assert lives <= timeout / BEAT_SECONDS + 2, "the clock never runs out"
    assert lives >= timeout / BEAT_SECONDS  # and no life cost more than that


def test_a_process_late_to_beat_is_no_downtime_unless_its_beats_failed(
        guest: Client, service: GameService, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    """A process slow to beat (a busy machine, a queue for SQLite's write lock) was up, answering its players: its
    own late beat gives nothing back (a review found a stall of 10 s taken for downtime). A beat that failed (the
    database away) is counted from the floor's last beat once one succeeds."""
    round_id = dealt_classic(guest, service)
    service.beat()
    clock.advance(60)
    assert service.beat() is None
    before = deadline(guest, round_id)

    def away() -> Any:
        raise Busy()

    with monkeypatch.context() as patched:
        patched.setattr(service.store, "write_apart", away)
        with pytest.raises(Busy):
            service.beat()
    clock.advance(60)
    down = service.beat()
    assert down is not None and down.length == timedelta(seconds=60)
    assert deadline(guest, round_id) == before + timedelta(seconds=60 - BEAT_SECONDS)


def test_a_timer_that_judged_a_round_due_before_its_clock_moved_on_does_not_act(
        guest: Client, service: GameService, settings: Settings, clock: Clock) -> None:
    """A tick's look and its timers are apart (its threads): a beat in between that gives a downtime back leaves the
    round's version as it was, so the auto decision also carries the clock's start it judged due."""
    round_id = dealt_classic(guest, service)
    service.beat()
    clock.advance(service.table("classic").decision_timeout + 60)
    due = service.timers_due()
    assert [key for key, _ in due] == [table_timers("classic")]
    assert restarted(settings, clock).beat() is not None  # the floor had been down: the clock moves after the look
    assert [timer() for _, timer in due] == [{"auto": 0}]
    assert guest.get(f"/rounds/{round_id}").json()["status"] == "playing"


def test_a_private_rounds_clock_moved_on_is_told_to_its_player_alone(
        guest: Client, service: GameService, settings: Settings, clock: Clock,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Every page at a private table heard every round's news and re-read the table (round_news): a review."""
    round_id = dealt_classic(guest, service)
    service.beat()
    clock.advance(60)
    later = restarted(settings, clock)
    told: list[tuple[str, dict[str, Any]]] = []
    monkeypatch.setattr(later.events, "publish", lambda table_id, event: told.append((table_id, event)))
    assert later.beat() is not None
    assert told == [("classic", {"type": "round", "round_id": round_id, "private": True,
                                 "player_id": guest.player_id()})]


def test_a_betting_window_open_when_the_floor_went_down_keeps_its_time(
        http: TestClient, service: GameService, settings: Settings, clock: Clock) -> None:
    players = [new_guest(http) for _ in range(2)]
    window = service.table("multiplayer").betting_window
    players[0].bet("multiplayer", 500)
    players[0].post("/tables/multiplayer/deal")
    service.beat()
    closes = datetime.fromisoformat(players[0].get("/tables/multiplayer").json()["round"]["betting_closes_at"])
    clock.advance(window + 30)  # down past the window's end
    later = restarted(settings, clock)
    down = later.beat()
    assert down is not None and len(down.rounds) == 1
    assert later.tick()["dealt"] == 0  # before: dealt at the first tick, the second player left out
    forming = players[1].get("/tables/multiplayer").json()["round"]
    given = timedelta(seconds=window + 30 - BEAT_SECONDS)
    assert datetime.fromisoformat(forming["betting_closes_at"]) == closes + given
    players[1].bet("multiplayer", 500)
    assert players[1].post("/tables/multiplayer/deal").status_code == 200
    clock.advance(window)
    assert later.tick()["dealt"] == 1
    assert len(players[1].get(f"/rounds/{forming['id']}").json()["seats"]) == 2


def test_a_window_that_was_due_while_the_floor_was_served_is_not_reopened(
        http: TestClient, service: GameService, settings: Settings, clock: Clock) -> None:
    players = [new_guest(http) for _ in range(1)]
    joined_shared_round(service, clock, players, "multiplayer")  # the window ran out, nobody closed it yet
    service.beat()
    clock.advance(60)
    later = restarted(settings, clock)
    down = later.beat()
    assert down is not None and down.rounds == ()
    assert later.tick()["dealt"] == 1


def test_a_restart_after_the_floor_was_down_gives_the_clock_back_before_its_first_tick(
        settings: Settings) -> None:
    """The server's own timers: a process serves and beats, every process stops, and one starts again an hour later
    (a clock the test moves). Its timers beat before their first look, so the hand is not stood at once."""
    clock = Clock()
    fast = dataclasses.replace(settings, tick_seconds=0.05)
    with TestClient(create_app(fast, clock=clock)) as http:
        service: GameService = http.app.state.service  # type: ignore[attr-defined]
        guest = new_guest(http)
        round_id = dealt_classic(guest, service)
        eventually(lambda: last_beat(service) == clock.now, 10, "the first beat")
        before = deadline(guest, round_id)
    clock.advance(3600)
    app = create_app(fast, clock=clock)
    service = app.state.service
    looks: list[list[str]] = []  # what each of the timers' looks found due
    look = service.timers_due

    def looked() -> list[Any]:
        due = look()
        looks.append([key for key, _ in due])
        return due

    service.timers_due = looked
    with TestClient(app) as http:
        guest = Client(http, guest.token, guest.name)
        eventually(lambda: len(looks) >= 5, 10, "the timers' looks")
        assert looks[:5] == [[]] * 5  # before, the first look found the hand an hour past its clock, and stood it
        assert deadline(guest, round_id) == before + timedelta(seconds=3600 - BEAT_SECONDS)
        view = guest.get(f"/rounds/{round_id}").json()
        assert view["status"] == "playing" and view["me"]["timed_out"] == 0


def test_after_a_beat_storage_refused_no_timer_looks_until_a_beat_gives_the_time_back(
        settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    """The database away from a running process for an hour: its beats are refused, and so would its looks be. When
    it is back, the first look must come after a beat that gives the hour back, or it stands the hand at once."""
    clock = Clock()
    app = create_app(dataclasses.replace(settings, tick_seconds=0.05), clock=clock)
    service: GameService = app.state.service
    looks: list[list[str]] = []
    look = service.timers_due

    def looked() -> list[Any]:
        due = look()
        looks.append([key for key, _ in due])
        return due

    service.timers_due = looked  # type: ignore[method-assign]
    refused: list[int] = []
    write_apart = service.store.write_apart

    def away() -> Any:
        refused.append(1)
        raise Busy()

    with TestClient(app) as http:
        guest = new_guest(http)
        round_id = dealt_classic(guest, service)
        eventually(lambda: last_beat(service) == clock.now and len(looks) > 2, 10, "beats and looks")
        before = deadline(guest, round_id)
        monkeypatch.setattr(service.store, "write_apart", away)
        eventually(lambda: len(refused) >= 1, 10, "a beat refused")
        clock.advance(3600)  # the database is away for an hour
        eventually(lambda: len(refused) >= 3, 10, "more beats refused")
        seen = len(looks)
        monkeypatch.setattr(service.store, "write_apart", write_apart)  # the database is back
        eventually(lambda: len(looks) >= seen + 3, 10, "looks again")
        assert looks[seen:] == [[]] * (len(looks) - seen)  # none found the hand an hour past its clock
        assert deadline(guest, round_id) == before + timedelta(seconds=3600 - BEAT_SECONDS)
        assert guest.get(f"/rounds/{round_id}").json()["status"] == "playing"
