"""An operator changes a table's configuration (``tables.toml``) and restarts the server: bets, rounds in play and
history made under the old configuration keep their meaning. Found by a trial of an operator: a slip held from a
table of three spots was charged for three and dealt one; rounds staked in dollars settled in euros; a table
removed left its rounds' stakes out for good and every one of its players' history a 404."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import pytest
from fastapi.testclient import TestClient
from server_helpers import Client, Clock, new_player

from twentyone.server import tables as table_module
from twentyone.server.app import create_app
from twentyone.server.config import Settings, TableSpec, shipped_tables

Restart = Callable[..., tuple[TestClient, Any]]


@pytest.fixture
def restart(settings: Settings, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> Iterator[Restart]:
    """Start the server again on the same database with ``tables.toml`` changed: each table id given maps to the
    changes of its settings, or to None where the table was removed. The new server's client and service."""
    opened: list[TestClient] = []

    def restarted(**changes: dict[str, Any] | None) -> tuple[TestClient, Any]:
        def changed_tables() -> dict[str, TableSpec]:
            tables = dict(shipped_tables())
            for table_id, change in changes.items():
                if change is None:
                    del tables[table_id]
                else:
                    tables[table_id] = replace(tables[table_id], **change)
            return tables

        monkeypatch.setattr(table_module, "shipped_tables", changed_tables)
        client = TestClient(create_app(settings, clock=clock, timers=False))
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
    round_view = rebet.post("/tables/classic/deal").json()
    while round_view["status"] == "playing":
        round_view = rebet.act(round_view["id"], "stand").json()
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
