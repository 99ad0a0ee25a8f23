"""``GET /health/ready``: whether a process can serve the floor, for a load balancer. ``/health`` answered 200 while
a lock held from psql hung every request and while no table's timers ran (an operator's trial); readiness says so.

The PostgreSQL tests are skipped without ``TWENTYONE_TEST_POSTGRES_URL`` (CI sets it).
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from live import free_port
from server_helpers import OPERATOR, Clock, eventually

from twentyone.server.app import create_app
from twentyone.server.cluster import libpq_params
from twentyone.server.config import Settings
from twentyone.server.context import Busy
from twentyone.server.service import GameService

TICK = 0.2  # the timers are stale after 10 ticks: 2 s, beyond a loaded machine's pauses


@pytest.fixture
def ticking(settings: Settings) -> Iterator[TestClient]:
    """A server whose timers run, every :data:`TICK` seconds."""
    with TestClient(create_app(dataclasses.replace(settings, tick_seconds=TICK), clock=Clock())) as client:
        yield client


def ready(http: TestClient) -> tuple[int, dict[str, Any]]:
    answer = http.get("/health/ready")
    return answer.status_code, answer.json()


def not_ready(http: TestClient) -> dict[str, Any]:
    """The answer of the first probe that says not ready, within 10 s."""
    return eventually(lambda: (answer := ready(http))[0] == 503 and answer[1], 10, "not ready")  # type: ignore[no-any-return]


def test_a_server_that_serves_is_ready_and_one_without_timers_says_so(ticking: TestClient, http: TestClient) -> None:
    assert ready(ticking) == (200, {"status": "ready", "checks": {"database": "ok", "timers": "ok", "events": "ok"}})
    # A process started without timers (tests, a replica kept for reads) is ready, and says the timers are off.
    assert ready(http) == (200, {"status": "ready", "checks": {"database": "ok", "timers": "off", "events": "ok"}})
    for method in ("HEAD", "OPTIONS"):
        for path in ("/health", "/health/", "/health/ready", "/health/ready/"):
            assert http.request(method, path, follow_redirects=False).status_code == 200, (method, path)
    assert http.get("/health/ready/", follow_redirects=False).json()["status"] == "ready"
    assert http.head("/health").content == b""  # HEAD answers without a body
    # The page's address too: a load balancer's default check may be HEAD / (it was 405: every process down).
    assert [http.request(method, "/").status_code for method in ("GET", "HEAD", "OPTIONS")] == [200, 200, 200]


def test_timers_that_stopped_looking_make_the_process_not_ready_until_they_look_again(ticking: TestClient) -> None:
    """The timer loop's look fails at every tick (storage busy): after ten ticks without a look the process is not
    ready, with Retry-After, while ``/health`` still answers 200; once a look succeeds it is ready again."""
    service: GameService = ticking.app.state.service  # type: ignore[attr-defined]
    looks = service.timers_due

    def busy() -> Any:
        raise Busy()

    service.timers_due = busy  # type: ignore[method-assign]
    try:
        body = not_ready(ticking)
        assert body["checks"]["timers"].startswith("no look for ") and body["checks"]["database"] == "ok", body
        assert body["detail"].startswith("Not ready (timers: no look for ") and body["status"] == "not ready"
        assert ticking.get("/health/ready").headers["Retry-After"] == "5"
        assert ticking.get("/health").json() == {"status": "ok"}
        # A load balancer's check by HEAD or OPTIONS, or at the path with a slash, gets the same 503 (a redirect
        # there passed HAProxy's check; HEAD and OPTIONS were 405).
        for method in ("HEAD", "OPTIONS", "GET"):
            for path in ("/health/ready", "/health/ready/"):
                answer = ticking.request(method, path, follow_redirects=False)
                assert (answer.status_code, answer.headers["Retry-After"]) == (503, "5"), (method, path)
    finally:
        service.timers_due = looks  # type: ignore[method-assign]
    eventually(lambda: ready(ticking)[0] == 200, 5, "ready again")


def test_an_sqlite_write_lock_held_by_another_program_makes_the_process_not_ready(ticking: TestClient,
                                                                                  settings: Settings) -> None:
    """SQLite's write lock, held from another program (the sqlite3 shell's ``BEGIN IMMEDIATE``), made every bet and
    decision wait while readiness said 200: in WAL mode a read is not blocked by it. The check now waits in the
    writers' queue, as a bet would, and is ready once the lock is let go."""
    import sqlite3

    if not settings.database_url.startswith("sqlite"):
        pytest.skip("SQLite's write lock")
    assert ready(ticking)[0] == 200
    holder = sqlite3.connect(settings.database_url.split("///", 1)[1], isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        status, body = ready(ticking)
        assert status == 503 and body["checks"]["database"] == "no answer for 3 s", body
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    eventually(lambda: ready(ticking)[0] == 200, 10, "ready once the lock is let go")


# ------------------------------------------------------------------ PostgreSQL
def test_a_table_locked_from_psql_makes_the_process_not_ready_within_the_wait(postgres_url: str,
                                                                               tmp_path: Path) -> None:
    """The trial's stall: ``LOCK TABLE rounds`` from psql hung every request while ``/health`` said 200. Readiness
    answers within its wait (3 s) that the database does not answer, says for how long on the next probe without
    starting a second read, and is ready once the lock is let go."""
    import psycopg

    settings = Settings(postgres_url, tmp_path, OPERATOR, tick_seconds=TICK)
    with TestClient(create_app(settings, clock=Clock())) as http:
        assert ready(http)[0] == 200
        with psycopg.connect(**libpq_params(postgres_url)) as holder:
            holder.execute("LOCK TABLE rounds IN ACCESS EXCLUSIVE MODE")
            started = time.monotonic()
            status, body = ready(http)
            waited = time.monotonic() - started
            assert status == 503 and body["checks"]["database"] == "no answer for 3 s", body
            assert 2.9 < waited < 6, waited
            assert "127.0.0.1" not in str(body) and "psycopg" not in str(body)  # what failed, by name only
            assert http.get("/health").status_code == 200
            status, body = ready(http)  # the same read, still waiting
            assert status == 503 and body["checks"]["database"] in ("no answer for 6 s", "no answer for 7 s"), body
        eventually(lambda: ready(http)[0] == 200, 10, "ready once the lock is let go")


def test_timers_whose_connection_fails_and_a_listener_cut_off_make_the_process_not_ready(postgres_url: str,
                                                                                          tmp_path: Path) -> None:
    """Several processes on PostgreSQL: the pool answers, but the timers' own connection cannot be made (the trial's
    URL that libpq refused left every table without timers), then the events' listener is cut off; each makes the
    process not ready by name, and it is ready again once each is back."""
    settings = Settings(postgres_url, tmp_path, OPERATOR, tick_seconds=TICK)
    with TestClient(create_app(settings, clock=Clock())) as http:
        service: GameService = http.app.state.service  # type: ignore[attr-defined]
        ownership: Any = service.ownership
        events: Any = service.events
        eventually(lambda: ready(http)[0] == 200, 10, "ready")

        unusable = f"postgresql+psycopg://nobody@127.0.0.1:{free_port()}/nowhere"
        end_connections(postgres_url, "timers", lambda: setattr(ownership, "url", unusable))  # the next tick's fails
        body = not_ready(http)
        assert body["checks"] == {"database": "ok", "timers": "ownership connection down", "events": "ok"}, body
        ownership.url = postgres_url
        eventually(lambda: ready(http)[0] == 200, 10, "ready with the timers' connection back")

        unusable = f"postgresql+psycopg://nobody@127.0.0.1:{free_port()}/nowhere"
        end_connections(postgres_url, "listen", lambda: setattr(events, "url", unusable))
        body = not_ready(http)
        assert body["checks"]["events"] == "listener disconnected" and body["checks"]["timers"] == "ok", body
        events.url = postgres_url
        eventually(lambda: ready(http)[0] == 200, 10, "ready with the listener back")


def end_connections(url: str, purpose: str, before: Any = lambda: None) -> None:
    """End this process's connection made for ``purpose`` (its application name), as a database restart does; the
    timers' is made at their first look, which a loaded machine may run after the first ready answer (seen in a
    fresh check): it is waited for, and only then is ``before`` done (the URL made unusable). Done first, a first
    look not yet made was made with the unusable URL, and no connection came to be ended (another fresh check)."""
    import psycopg

    name = f"twentyone-{purpose} {os.getpid()}"

    def count(query: str) -> Any:
        with psycopg.connect(autocommit=True, **libpq_params(url)) as admin:
            return admin.execute(query, [name]).fetchone()

    eventually(lambda: count("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s") == (1,), 10,
               f"the {purpose} connection made")
    before()
    assert count("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = %s") == (1,)
