"""An error no handler answers (a bug) is a 500 in the API's JSON, logged with its traceback, and its detail says
whether the request changed anything (found by an integrator's trial: a plain-text 500, the connection dropped)."""

from __future__ import annotations

import logging

import pytest
from fastapi.testclient import TestClient
from server_helpers import Client, new_guest

from twentyone.server.app import UNEXPECTED, UNEXPECTED_AFTER_A_COMMIT
from twentyone.server.service import GameService


def broken(*_args: object, **_kwargs: object) -> dict[str, object]:
    raise RuntimeError("a bug in the game")


def test_an_unexpected_error_is_a_json_500_that_is_logged(http: TestClient, service: GameService,
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    """A read that fails: nothing was changed, and the answer says so, in JSON with the security headers. The error
    goes no further than the answer (the test client raises one that reaches the server: uvicorn closed the
    connection on it)."""
    guest = new_guest(http)
    monkeypatch.setattr(service, "profile", broken)
    with caplog.at_level(logging.ERROR, logger="twentyone.server"):
        answer = guest.get("/me")
    assert answer.status_code == 500 and answer.json() == {"detail": UNEXPECTED}
    assert answer.headers["content-type"] == "application/json" and answer.headers["x-content-type-options"]
    [record] = [record for record in caplog.records if record.getMessage().startswith("unexpected error")]
    assert record.getMessage() == "unexpected error answering GET /me"
    assert record.exc_info is not None and str(record.exc_info[1]) == "a bug in the game"


def test_an_unexpected_error_after_a_commit_does_not_say_nothing_changed(http: TestClient, service: GameService,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A bet placed (committed), then a failure while it is told to the table: the answer must not say that nothing
    was changed; a retry with its key is answered as the bet went."""
    guest = new_guest(http)
    monkeypatch.setattr(service.events, "publish", broken)
    monkeypatch.setattr(service.rounds.events, "publish", broken)
    failed = guest.post("/tables/multiplayer/bets", {"spot": 1, "type": "main", "chip": 500}, key="bet-1")
    # The bet control answers without publishing; the join (DEAL) publishes its news after its commit.
    assert failed.status_code == 200
    joined = guest.post("/tables/multiplayer/deal", key="deal-1")
    assert joined.status_code == 500 and joined.json() == {"detail": UNEXPECTED_AFTER_A_COMMIT}
    monkeypatch.undo()
    again = guest.post("/tables/multiplayer/deal", key="deal-1")
    assert again.status_code == 200 and again.json()["status"] == "betting"


def test_a_players_requests_are_unchanged_by_the_last_resort(http: TestClient, guest: Client) -> None:
    """Errors with handlers keep theirs: a 404, a 422, a refusal."""
    assert http.get("/no/such/page").json() == {"detail": "Not Found"}
    assert guest.get("/rounds/0").status_code == 422
    assert guest.post("/tables/classic/deal").status_code == 409
