"""The engines a process keeps in memory against the log they were read from (server/live.py)."""

from __future__ import annotations

from server_helpers import Client
from test_faults import STACK  # classic: player 2S 3D, dealer 6H (hole TC); hit 2C, hit 2D, stand; the dealer busts

from twentyone.server.models import Round
from twentyone.server.service import GameService


def test_an_engine_replayed_from_a_log_ahead_of_its_row_is_not_given_a_decision_twice(service: GameService,
                                                                                      guest: Client) -> None:
    """A read takes no lock: it reads the round's row, then its log, each as committed when that statement began, so
    a decision committed in between leaves the log an action ahead of the row. The engine replayed from that log was
    kept at the row's version, and the next read applied the same decision to it again: with two processes under
    load, a second hit in memory, then a decision the log could not replay, and the round voided. Here the read is
    made with the row it would have read, and the log it would have read after."""
    service.stacked.append(STACK)
    guest.bet("classic", 500)
    round_id = guest.post("/tables/classic/deal").json()["id"]
    guest.act(round_id, "hit")
    with service.store.read() as session:
        row_before = session.get(Round, round_id)  # version 1: one hit logged
        assert row_before is not None and row_before.version == 1
        session.expunge(row_before)
    guest.act(round_id, "hit")  # the second hit commits between the read's row and its log
    service.live.forget(round_id)  # as in a process that did not take these decisions
    with service.store.read() as session, service.live.locked(round_id):
        service.live.engine(session, row_before)  # replays both hits from the log

    view = guest.get(f"/rounds/{round_id}").json()  # the row now at version 2
    assert [hand["cards"] for hand in view["hands"]] == [["2S", "3D", "2C", "2D"]]
    settled = guest.act(round_id, "stand").json()
    assert settled["status"] == "settled"
    assert settled["me"]["returned"] == 1000  # the dealer's 6H TC 9S busts: the player's 9 wins
