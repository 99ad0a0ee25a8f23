"""The web table where an operator's wallet holds each player in one currency (found by an integrator's trial: the
page could not learn who was signed in, since ``/me`` was a 409)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_operator_wallet import ContractWallet
from playwright.sync_api import expect
from server_helpers import OPERATOR
from web_helpers import LiveServer, free_port, table_page

from twentyone.server.app import create_app
from twentyone.server.config import Settings
from twentyone.server.wallet import WalletError


class EuroWallet(ContractWallet):
    """Holds every player in EUR alone: the other currencies are refused (409)."""

    def balance(self, player: str, currency: str) -> int:
        if currency != "EUR":
            raise WalletError(f"Your casino account is held in EUR, not {currency}.")
        return super().balance(player, currency)


@pytest.fixture
def euro_server(tmp_path: Path) -> Iterator[LiveServer]:
    settings = Settings(f"sqlite:///{tmp_path / 'web.db'}", tmp_path, OPERATOR)
    server = LiveServer(create_app(settings, operator_wallet=EuroWallet()), free_port(), settings)
    server.start()
    yield server
    server.stop()


def test_a_player_held_in_euros_sees_a_dollar_table_with_no_balance(browser: Any, euro_server: LiveServer) -> None:
    """The header lists the balance the wallet holds; a dollar table says it holds none there and offers no chip to
    bet (the server refuses a bet there in the wallet's words); the euro table plays as ever. No console error on the
    way."""
    page, name, problems = table_page(browser, euro_server, "classic")
    expect(page.locator("#who")).to_have_text(f"{name} — €1,000.00")
    expect(page.locator("#balance strong")).to_have_text("not held in USD")
    expect(page.locator("button.chip:not([disabled])")).to_have_count(0)
    expect(page.locator("#deal")).to_be_disabled()
    page.goto(f"{euro_server.url}/#/table/power")
    expect(page.locator("#balance strong")).to_have_text("€1,000.00")
    expect(page.locator("button.chip:not([disabled])").first).to_be_visible()
    page.context.close()
    assert not problems, problems
