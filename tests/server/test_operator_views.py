"""What the operator sees without reading the database: the money in play in the report (found by a trial of an
operator, who could see it only in SQL)."""

from __future__ import annotations

from fastapi.testclient import TestClient
from server_helpers import Client, Clock, dealt_shared_round, new_player

from twentyone.server.service import GameService

CLASSIC_WON = ["TS", "6H", "9D", "TC", "8C"]  # classic: the player's 19 stands, the dealer's 6 draws 10, 8 and busts
POWER_IN_PLAY = ["5S", "7H", "6D", "8C", "KD"]  # power, a player alone: no Ace up, the round waits for a decision


def in_play(service: GameService, http: TestClient, clock: Clock) -> tuple[dict[str, int], Client]:
    """Three rounds in play: a power round dealt (EUR, 500 staked), a classic round dealt (USD, 500 staked, left as a
    crash would leave it), and a multiplayer round still taking bets (USD, a seat that has staked nothing yet). Their
    ids by table, and the classic round's player."""
    ann, bob, cid = new_player(http, "ann"), new_player(http, "bob"), new_player(http, "cid")
    service.stacked.append(list(POWER_IN_PLAY))
    power = dealt_shared_round(service, clock, [ann], "power")
    service.stacked.append(list(CLASSIC_WON))
    bob.bet("classic", 500)
    classic = bob.post("/tables/classic/deal").json()
    assert classic["status"] == "playing", classic
    cid.bet("multiplayer", 500)
    forming = cid.post("/tables/multiplayer/deal").json()
    assert forming["status"] == "betting", forming
    return {"power": power, "classic": classic["id"], "multiplayer": forming["id"]}, bob


def test_the_report_counts_the_rounds_in_play_and_the_money_they_took(
        operator: Client, http: TestClient, service: GameService, clock: Clock) -> None:
    """Each line has ``open`` (rounds betting or playing) and ``open_staked`` (their seats' stakes, money taken and not
    settled), in its currency, and the totals sum them; before, an open round was only one more of ``rounds``. A
    period's report is of rounds that ended: it has neither."""
    rounds, bob = in_play(service, http, clock)
    report = operator.get("/admin/report").json()
    lines = {table: (line["currency"], line["rounds"], line["open"], line["open_staked"], line["staked"])
             for table, line in report["tables"].items()}
    assert lines == {"classic": ("USD", 1, 1, 500, 0), "multiplayer": ("USD", 1, 1, 0, 0),
                     "power": ("EUR", 1, 1, 500, 0)}
    assert {currency: (total["open"], total["open_staked"]) for currency, total in report["totals"].items()} == {
        "USD": (2, 500), "EUR": (1, 500)}
    assert bob.act(rounds["classic"], "stand").json()["status"] == "settled"
    classic = operator.get("/admin/report").json()["tables"]["classic"]
    assert (classic["open"], classic["open_staked"], classic["staked"], classic["returned"]) == (0, 0, 500, 1000)
    period = operator.get("/admin/report", since="2026-11-29T00:00:00Z").json()
    assert set(period["tables"]) == {"classic"} and "open" not in period["tables"]["classic"]
    assert "open_staked" not in period["totals"]["USD"]
