"""The web table in a real browser (Debian's chromium, headless, driven by Playwright)."""

from __future__ import annotations

import contextlib
import re
import time
from typing import Any

from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
from playwright.sync_api import expect
from server_helpers import OPERATOR
from sqlalchemy import func, select
from web_helpers import (
    DESKTOP,
    LiveServer,
    eventually,
    guest_token,
    open_table,
    poster,
    shot,
    signed_in_context,
    socket_heard,
    table_page,
    watch_console,
)

from twentyone.server.app import create_app
from twentyone.server.models import Round


def guest_at(page: Any, server: LiveServer, table: str) -> None:
    page.goto(server.url + "/")
    page.get_by_role("button", name="Play as guest").click()
    expect(page.locator("#who")).to_contain_text("guest-")
    page.get_by_role("link", name=f"Join {server.service.table(table).name}", exact=True).click()
    expect(page.locator("#deal, #rebet")).to_be_visible()


def bet(page: Any, spot: int = 1, chip: str | None = None, side: str | None = None) -> None:
    if chip:
        page.locator(f"button.chip[data-chip='{chip}']").click()
        expect(page.locator(f"button.chip[data-chip='{chip}']")).to_have_attribute("aria-pressed", "true")
    target = f"button.side[data-spot='{spot}'][data-side='{side}']" if side else f"button.circle[data-spot='{spot}']"
    before = page.locator("#total-bet").inner_text()
    page.locator(target).click()
    expect(page.locator("#total-bet")).not_to_have_text(before)


def balance(page: Any) -> str:
    return page.locator("#balance strong").inner_text()


def play_out(page: Any) -> None:
    """Stand (or decline offers) until the round is settled. Bounded by time, not by a count of tries: a deal slow to
    be drawn on a loaded machine used up a dozen short waits before STAND was there (an audit). A button drawn away
    as it is clicked (its answer came) is looked for again."""
    actions = ("no-insurance", "no-even-money", "stand")
    done = page.locator("#next-round")
    moves = page.locator(", ".join(f"button[data-action='{action}']:not([disabled])" for action in actions))
    deadline = time.monotonic() + 30
    while not done.count():
        assert time.monotonic() < deadline, "the round was not settled"
        expect(done.or_(moves).first).to_be_visible()
        for action in actions:
            button = page.locator(f"button[data-action='{action}']:not([disabled])")
            if button.count():
                with contextlib.suppress(PlaywrightTimeoutError):
                    button.first.click(timeout=2000)
                page.wait_for_timeout(150)
                break


def test_lobby_guest_and_a_full_classic_round_with_history(page: Any, live_server: LiveServer) -> None:
    live_server.service.stacked.append(["TS", "6H", "9D", "TC", "8C"])
    page.goto(live_server.url + "/")
    expect(page.get_by_role("heading", name="Blackjack tables")).to_be_visible()
    shot(page, "lobby-signed-out")
    guest_at(page, live_server, "classic")
    start = balance(page)
    bet(page, 1, chip="500")
    page.locator("#deal").click()
    expect(page.locator(".hand.active")).to_be_visible()
    expect(page.locator(".dealer .card.back")).to_have_count(1)
    expect(page.locator("button[data-action='stand']")).to_be_enabled()
    expect(page.locator("button[data-action='split']")).to_be_disabled()
    shot(page, "table-mid-round")
    page.keyboard.press("s")  # STAND by keyboard
    expect(page.locator(".outcome.win")).to_contain_text("WIN +$5.00")
    expect(page.locator("#result")).to_contain_text("you won $5.00")
    assert balance(page) != start
    page.get_by_role("link", name="History").click()
    expect(page.locator("table.history tbody tr")).to_have_count(1)
    # Cards and the table as players name them (before: "TS JS (win)", "classic", "settled": noted by a trial).
    row = page.locator("table.history tbody tr").first
    expect(row.locator("td").nth(1)).to_have_text("Classic Blackjack")
    expect(row.locator("td").nth(2)).to_have_text("played")
    expect(row.locator("td").nth(3)).to_have_text(re.compile(r"^(10|[2-9AJQK])[♠♥♦♣] (10|[2-9AJQK])[♠♥♦♣]"))
    expect(row.locator("td").nth(3)).to_contain_text("$5.00 (won)")  # in the past, as a side bet's "(lost)"
    page.locator("button[data-replay]").click()
    expect(page.locator(".operations li").nth(1)).to_have_text(re.compile(r"^card (10|[2-9AJQK])[♠♥♦♣] → "))
    expect(page.locator(".operations li").first).to_contain_text("bets $5.00 on hand 1")
    expect(page.locator(".operations li").nth(5)).to_have_text(re.compile(r"^guest-\w+: stand, hand 1$"))
    expect(page.locator(".operations li").last).to_have_text("Hand 1: won, returned $10.00")
    page.locator("#verify").click()
    expect(page.locator("#verification")).to_contain_text("Verified")
    page.get_by_role("link", name="Lobby").click()
    expect(page.get_by_role("heading", name="Tables")).to_be_visible()
    shot(page, "lobby")


def test_first_person_side_bets_insurance_and_cash_out(page: Any, live_server: LiveServer) -> None:
    live_server.service.stacked.append(["8S", "AH", "8C", "9D", "5S"])
    guest_at(page, live_server, "first-person")
    bet(page, 1, chip="100")
    bet(page, 1, side="perfect_pairs")
    page.locator("#deal").click()
    expect(page.locator(".offer")).to_contain_text("insurance for $0.50")
    expect(page.locator("[data-focus='offer-no']")).to_be_enabled()  # once the cards have landed: a key before is
    # dropped
    page.keyboard.press("n")
    expect(page.locator("#side-results")).to_contain_text("Perfect Pairs: colored pair, +$12.00")
    cash_out = page.locator("button[data-action='cash-out']")
    expect(cash_out).to_contain_text("CASH OUT $")
    amount = float(re.search(r"\$(\d+\.\d\d)", cash_out.inner_text()).group(1))
    cash_out.click()
    expect(page.locator(".outcome")).to_contain_text("CASHED OUT")
    expect(page.locator("#balance strong")).to_have_text(f"${1000 - 1 - 1 + 13 + amount:,.2f}")
    expect(page.locator("#result")).to_contain_text("Perfect Pairs: colored pair, +$12.00")
    # The replay names the side bet where it was placed and where it was paid: before, "bets $1.00 at seat 1" alone,
    # and "perfect_pairs" as the code names it (found by a trial).
    page.get_by_role("link", name="History").click()
    page.locator("button[data-replay]").click()
    expect(page.locator(".operations li").first).to_have_text(
        re.compile(r"^guest-\w+ bets \$1\.00 on hand 1, Perfect Pairs \$1\.00$"))
    expect(page.locator(".operations")).to_contain_text("Perfect Pairs, hand 1: ")


def test_split_then_play_both_hands(page: Any, live_server: LiveServer) -> None:
    live_server.service.stacked.append(["8S", "6H", "8D", "TC", "3C", "2H", "KD", "9S", "TS"])
    guest_at(page, live_server, "classic")
    bet(page, 1, chip="100")
    page.locator("#deal").click()
    page.locator("button[data-action='split']").click()
    expect(page.locator(".hands .hand")).to_have_count(2)
    page.locator("button[data-action='double']").click()
    page.locator("button[data-action='stand']").click()
    expect(page.locator("#next-round")).to_be_visible()
    expect(page.locator(".outcome")).to_have_count(2)


def test_bet_controls_undo_x2_rebet_and_the_maximum_message(page: Any, live_server: LiveServer) -> None:
    guest_at(page, live_server, "classic")
    bet(page, 1, chip="10000")
    bet(page, 1)
    bet(page, 1)
    page.locator("button.circle[data-spot='1']").click()
    expect(page.locator(".spot .max").first).to_contain_text("maximum bet is $300.00")
    page.locator("#undo").click()
    expect(page.locator("#total-bet strong")).to_have_text("$200.00")
    page.locator("#undo").click()
    page.locator("#double-bets").click()
    expect(page.locator("#total-bet strong")).to_have_text("$200.00")
    page.locator("#deal").click()
    play_out(page)
    page.locator("#next-round").click()
    expect(page.locator("#rebet")).to_be_visible()
    page.locator("#rebet").click()
    expect(page.locator("#total-bet strong")).to_have_text("$200.00")
    expect(page.locator("#deal")).to_be_visible()  # REBET became DEAL NOW


def test_a_credit_made_while_betting_shows_at_the_next_chip(browser: Any, live_server: LiveServer) -> None:
    """The table's balance is the one each bet control was checked against: an operator's credit made while the
    player bets shows with the next chip placed. Before, the page showed the old balance until a deal or a reload."""
    page, name, problems = table_page(browser, live_server, "classic")
    expect(page.locator("#balance strong")).to_have_text("$1,000.00")
    poster(live_server, OPERATOR)("/admin/credit", {"player": name, "currency": "USD", "amount": 5000})
    bet(page, 1, chip="500")
    expect(page.locator("#balance strong")).to_have_text("$1,045.00")  # the credit, less the $5 on the spot
    assert not problems, problems
    page.context.close()


def test_reload_mid_round_resumes_the_same_decision(page: Any, live_server: LiveServer) -> None:
    live_server.service.stacked.append(["TS", "6H", "6D", "TC", "8C"])
    guest_at(page, live_server, "classic")
    bet(page, 1, chip="100")
    page.locator("#deal").click()
    expect(page.locator("button[data-action='hit']")).to_be_enabled()
    cards = page.locator(".hand.active .cards").inner_text()
    page.reload()
    expect(page.locator("button[data-action='hit']")).to_be_enabled()
    assert page.locator(".hand.active .cards").inner_text() == cards


def test_single_deck_same_bet_deals_and_power_triples(page: Any, live_server: LiveServer) -> None:
    live_server.service.stacked.append(["TS", "7H", "9D", "KC"])
    guest_at(page, live_server, "single-deck")
    bet(page, 1, chip="2500")
    page.locator("#deal").click()
    play_out(page)
    page.locator("#next-round").click()
    page.locator("#rebet").click()  # Same Bet repeats the bet and deals
    expect(page.locator(".hands .hand")).to_have_count(1)


def test_multiplayer_shows_other_players_and_whose_turn(page: Any, live_server: LiveServer) -> None:
    service = live_server.service
    service.stacked.append(["TS", "9S", "7H", "6S", "8S", "8D", "2C", "5C"])
    guest_at(page, live_server, "multiplayer")
    import httpx
    from fastapi.testclient import TestClient  # noqa: F401 - the other player uses the API directly

    other = httpx.post(live_server.url + "/auth/register", json={"name": "bob", "password": "correct horse"}).json()
    headers = {"Authorization": f"Bearer {other['token']}"}
    httpx.post(live_server.url + "/tables/multiplayer/bets", json={"spot": 1, "chip": 500},
               headers={**headers, "Idempotency-Key": "b1"})
    bet(page, 1, chip="100")
    page.locator("#deal").click()
    expect(page.locator("#bet-status")).to_contain_text("Your bets are in")
    httpx.post(live_server.url + "/tables/multiplayer/deal", headers={**headers, "Idempotency-Key": "b2"})
    service.close_betting("multiplayer")
    page.reload()
    expect(page.locator(".others [data-player='bob']")).to_contain_text("$5.00")
    expect(page.locator("#timer")).to_contain_text("Decision:")
    # Multiplayer deals the dealer's 7 face down, then the 8 face up: the back lies left of the 8, where the 7 turns
    # over at the end (drawn after the 8, the 7 took the 8's place and the up card seemed to change).
    dealer_cards = page.locator(".dealer .card")
    expect(dealer_cards).to_have_count(2)
    expect(dealer_cards.nth(0)).to_have_class(re.compile(r"\bback\b"))
    expect(dealer_cards.nth(1)).to_have_attribute("data-card", "8D")
    before = balance(page)
    page.locator("button[data-action='stand']").click()
    expect(page.locator(".others .seat.active[data-player='bob']")).to_contain_text("deciding…")
    expect(page.locator("#action-bar")).to_contain_text("bob is deciding")
    shot(page, "multiplayer-mid-round")
    rounds = httpx.get(live_server.url + "/me/history", headers=headers).json()["rounds"]
    httpx.post(live_server.url + f"/rounds/{rounds[0]['id']}/actions", json={"action": "stand"},
               headers={**headers, "Idempotency-Key": "b3"})
    # The WebSocket brought the settlement: 16 loses to the dealer's 17, bob's 17 pushes.
    expect(page.locator(".hands.mine .outcome")).to_have_text("LOSE −$1.00")
    expect(page.locator(".others [data-player='bob'] .outcome")).to_have_text("Push")
    expect(page.locator("#next-round")).to_be_visible()
    assert balance(page) == before
    assert [card.get_attribute("data-card") for card in dealer_cards.all()] == ["7H", "8D", "2C"]


def test_another_players_blackjack_is_named_as_it_is_dealt(page: Any, live_server: LiveServer) -> None:
    """Bob is dealt a blackjack at multiplayer: his seat reads "Blackjack" while the round is played, as the player's
    own hand does. Before, it read "21" until the round settled (found by a trial)."""
    import httpx

    live_server.service.stacked.append(["TS", "AS", "7H", "6S", "KD", "8D", "2C"])  # your 16; bob's Ace and King
    guest_at(page, live_server, "multiplayer")
    bob = httpx.post(live_server.url + "/auth/register", json={"name": "bob", "password": "correct horse"}).json()
    headers = {"Authorization": f"Bearer {bob['token']}"}
    # Bob's bet is on his slip before the page deals: a round opened by a player alone at the table has a window of
    # a few seconds (ALONE_WINDOW), which bob's DEAL could miss on a loaded machine (found by an audit).
    assert httpx.post(live_server.url + "/tables/multiplayer/bets", json={"spot": 1, "chip": 500},
                      headers={**headers, "Idempotency-Key": "b1"}).status_code == 200
    bet(page, 1, chip="100")
    page.locator("#deal").click()
    expect(page.locator("#bet-status")).to_contain_text("Your bets are in")
    assert httpx.post(live_server.url + "/tables/multiplayer/deal",
                      headers={**headers, "Idempotency-Key": "b2"}).status_code == 200
    live_server.service.close_betting("multiplayer")
    page.reload()
    expect(page.locator("#timer")).to_contain_text("Decision:")
    expect(page.locator(".others [data-player='bob'] .total")).to_have_text("Blackjack")
    expect(page.locator(".hands.mine .total")).to_have_text("16")


def test_power_common_draw_and_quadruple(page: Any, live_server: LiveServer) -> None:
    service = live_server.service
    service.stacked.append(["5S", "7H", "6D", "8C", "KC", "QS"])
    guest_at(page, live_server, "power")
    bet(page, 1, chip="100")
    page.locator("#deal").click()  # nobody else at the table: the timer deals after a few seconds (ALONE_WINDOW)
    expect(page.locator("button[data-action='quadruple']")).to_be_enabled()
    before = balance(page)
    page.locator("button[data-action='quadruple']").click()
    expect(page.locator(".hands.mine .bet-circle")).to_contain_text("€4.00")
    expect(page.locator("#next-round")).to_be_visible()
    expect(page.locator("#balance strong")).not_to_have_text(before)


def test_settings_hints_and_limits_are_saved(page: Any, live_server: LiveServer) -> None:
    live_server.service.stacked.append(["TS", "6H", "6D", "TC", "8C"])
    page.goto(live_server.url + "/")
    page.get_by_role("button", name="Play as guest").click()
    expect(page.locator("#who")).to_contain_text("guest-")
    page.get_by_role("link", name="Settings").click()
    # Each save answered before the next step: the second's words are the first's, and leaving the page at once
    # could cut its request (failed once on a busy machine).
    for setting, change in (("Strategy hints", "check"), ("Show the CASH OUT option", "uncheck")):
        with page.expect_response(lambda answer: answer.url.endswith("/me/settings")
                                  and answer.request.method == "PUT" and answer.ok):
            getattr(page.get_by_label(setting), change)()
        expect(page.locator("#announce")).to_contain_text("Settings saved")
    page.goto(live_server.url + "/#/table/first-person")
    bet(page, 1, chip="100")
    page.locator("#deal").click()
    expect(page.locator("button.best .ev")).to_be_visible()
    expect(page.locator("button[data-action='cash-out']")).to_have_count(0)
    # The suggested move with the keyboard's focus shows the focus ring, the suggestion inside it: its dashed outline
    # took the ring's place (a trial of a keyboard player).
    best = page.locator("button.best")
    expect(best).to_be_enabled()  # the cards have landed
    best.focus()
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Tab")  # by the keyboard: :focus-visible
    expect(best).to_be_focused()
    ring = best.evaluate("b => [getComputedStyle(b).outlineStyle, getComputedStyle(b).boxShadow]")
    assert ring[0] == "solid" and "inset" in ring[1], ring
    page.get_by_role("link", name="Responsible gaming").click()
    page.get_by_label("Daily loss limit").fill("50")
    page.get_by_role("button", name="Save limits").click()
    expect(page.get_by_text("Daily loss limit, in each currency: 50.00")).to_be_visible()
    page.get_by_label("Daily loss limit").fill("80")  # higher: in force only after a day
    page.get_by_role("button", name="Save limits").click()
    expect(page.get_by_text(re.compile(r"Daily loss limit, in each currency: 50\.00 a day \([^)]*\$50\.00[^)]*\) "
                                       r"\(to be raised to 80\.00 at "
                                       r"\d{4}-\d\d-\d\d \d\d:\d\d UTC\)"))).to_be_visible()
    shot(page, "limits-raise-waiting")
    page.get_by_label("Session minutes").fill("1")  # one minute, in the singular (found by a trial of an operator)
    page.get_by_role("button", name="Save limits").click()
    expect(page.get_by_text("Session time limit: 1 minute", exact=True)).to_be_visible()


def test_a_phone_sized_table_still_fits(page: Any, live_server: LiveServer) -> None:
    page.set_viewport_size({"width": 390, "height": 844})
    guest_at(page, live_server, "first-person")
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390
    shot(page, "table-phone")


def test_a_lost_connection_comes_back_to_the_same_decision(page: Any, live_server: LiveServer) -> None:
    live_server.service.stacked.append(["TS", "6H", "6D", "TC", "8C"])
    guest_at(page, live_server, "classic")
    bet(page, 1, chip="100")
    page.locator("#deal").click()
    expect(page.locator("button[data-action='hit']")).to_be_enabled()
    socket_heard(live_server, "classic")
    page.outage_from = len(page.console_problems)  # the page fixture forgives the refused retries from here
    live_server.stop()  # the connection drops: the server is gone
    restarted = LiveServer(create_app(live_server.settings), live_server.port)
    restarted.start()
    try:
        socket_heard(restarted, "classic")  # without a reload the page reconnects its table socket
        expect(page.locator("button[data-action='hit']")).to_be_enabled()
        page.locator("button[data-action='stand']").click()
        expect(page.locator("#next-round")).to_be_visible()
        # While the server was down the browser logged the refused connections of the page's retries (how many
        # depends on how long the restart took): the outage, not faults of the page; the fixture leaves them out.
    finally:
        restarted.stop()


def _deal_tries(page: Any, first_try: Any) -> list[str]:
    """Route the page's DEAL: the first try goes to ``first_try(route)``, the others to the server as they are.

    Returns the list the Idempotency-Key of every try is appended to.
    """
    keys: list[str] = []

    def handle(route: Any) -> None:
        keys.append(route.request.headers.get("idempotency-key", ""))
        page.try_times.append(time.monotonic())
        if len(keys) == 1:
            first_try(route)
        else:
            route.continue_()

    page.try_times = []
    page.route("**/tables/classic/deal", handle)
    return keys


def _forgive(page: Any, text: str) -> None:
    """Take the browser's log line about the try this test broke on purpose out of the page's problems."""
    page.console_problems[:] = [problem for problem in page.console_problems if text not in problem]


def _one_deal_of(live_server: LiveServer, start: str, page: Any, stake: int) -> None:
    """One round in the database, and the page's balance down by one stake."""
    with live_server.service.db.sessions() as session:
        assert session.scalar(select(func.count()).select_from(Round)) == 1  # one round, not one per try
    assert _cents(balance(page)) == _cents(start) - stake  # staked once


def _cents(shown: str) -> int:
    return round(float(re.sub(r"[^0-9.]", "", shown)) * 100)


def test_a_busy_answer_is_sent_again_with_the_same_key_and_deals_once(page: Any, live_server: LiveServer) -> None:
    """A 503 changed nothing: the page waits its Retry-After and sends the same request, with the same key."""
    live_server.service.stacked.append(["TS", "6H", "6D", "TC", "8C"])
    guest_at(page, live_server, "classic")
    start = balance(page)
    bet(page, 1, chip="100")
    busy = {"detail": "The game is busy and changed nothing: send the same request again in a moment."}
    keys = _deal_tries(page, lambda route: route.fulfill(status=503, headers={"Retry-After": "1"}, json=busy))
    page.locator("#deal").click()
    expect(page.locator("button[data-action='hit']")).to_be_enabled()
    assert len(keys) == 2 and keys[0] == keys[1] and keys[0], keys
    expect(page.locator("#announce")).not_to_contain_text("busy")  # the player was not told to try again
    _one_deal_of(live_server, start, page, 100)
    _forgive(page, "status of 503")


def test_a_busy_answer_without_retry_after_waits_half_a_second_before_the_next_try(
        page: Any, live_server: LiveServer) -> None:
    """A 503 from something in front of the server may carry no Retry-After: the page still waits, it does not
    fire the request again at once."""
    live_server.service.stacked.append(["TS", "6H", "6D", "TC", "8C"])
    guest_at(page, live_server, "classic")
    start = balance(page)
    bet(page, 1, chip="100")
    keys = _deal_tries(page, lambda route: route.fulfill(status=503, json={"detail": "Busy."}))
    page.locator("#deal").click()
    expect(page.locator("button[data-action='hit']")).to_be_enabled()
    assert len(keys) == 2 and keys[0] == keys[1], keys
    assert page.try_times[1] - page.try_times[0] >= 0.45, page.try_times  # 0.5 s, not at once
    _one_deal_of(live_server, start, page, 100)
    _forgive(page, "status of 503")


def test_an_answer_lost_on_the_way_is_asked_for_again_and_the_deal_is_made_once(
        page: Any, live_server: LiveServer) -> None:
    """The server dealt but the answer never reached the page: the same key again gets that deal, not a second."""
    live_server.service.stacked.append(["TS", "6H", "6D", "TC", "8C"])
    guest_at(page, live_server, "classic")
    start = balance(page)
    bet(page, 1, chip="100")

    def applied_then_lost(route: Any) -> None:
        route.fetch()  # the server deals and answers ...
        route.abort("connectionreset")  # ... and the answer is lost on the way back

    keys = _deal_tries(page, applied_then_lost)
    page.locator("#deal").click()
    expect(page.locator("button[data-action='hit']")).to_be_enabled()
    assert len(keys) == 2 and keys[0] == keys[1] and keys[0], keys
    _one_deal_of(live_server, start, page, 100)
    page.locator("button[data-action='stand']").click()
    expect(page.locator("#next-round")).to_be_visible()
    _forgive(page, "ERR_CONNECTION_RESET")


def test_history_pages_older_and_newer_by_before(browser: Any, live_server: LiveServer) -> None:
    """Twelve rounds: the page shows ten, Older the two before them, and a round played meanwhile shifts nothing."""
    import httpx

    token, _ = guest_token(live_server)
    headers = {"Authorization": f"Bearer {token}"}
    keys = iter(range(10_000))

    def play() -> int:
        def post(path: str, body: Any = None) -> Any:
            answer = httpx.post(live_server.url + path, json=body,
                                headers={**headers, "Idempotency-Key": f"k{next(keys)}"})
            answer.raise_for_status()
            return answer.json()

        post("/tables/classic/bets", {"spot": 1, "chip": 100})
        view = post("/tables/classic/deal")
        while view["status"] == "playing":
            action = "stand" if "stand" in view["legal_actions"] else view["legal_actions"][-1]
            view = post(f"/rounds/{view['id']}/actions", {"action": action})
        return int(view["id"])

    ids = [play() for _ in range(12)]
    context = browser.new_context()
    context.add_init_script(f"localStorage.setItem('twentyone.token', {token!r})")
    page = context.new_page()
    page.set_default_timeout(15000)
    try:
        page.goto(live_server.url + "/#/history")
        rows = page.locator("table.history tbody tr")
        expect(rows).to_have_count(10)
        expect(rows.first.locator("td").first).to_have_text(f"#{ids[-1]}")
        expect(page.get_by_role("button", name="Newer")).to_be_disabled()
        newest = play()  # played in another tab while this one reads its history
        page.get_by_role("button", name="Older").click()
        expect(rows).to_have_count(2)
        expect(rows.first.locator("td").first).to_have_text(f"#{ids[1]}")
        expect(page.get_by_role("button", name="Older")).to_be_disabled()
        page.get_by_role("button", name="Newer").click()
        expect(rows.first.locator("td").first).to_have_text(f"#{newest}")
        expect(rows).to_have_count(10)
    finally:
        context.close()


def test_bets_returned_on_arrival_are_told_in_their_own_tables_currency(browser: Any, live_server: LiveServer) -> None:
    token, _ = guest_token(live_server)
    poster(live_server, token)("/tables/single-deck/bets", {"spot": 1, "chip": 2500})
    context = signed_in_context(browser, token)
    page = context.new_page()
    try:
        page.goto(live_server.url + "/#/table/power")  # a euro table; the bet was in pounds
        expect(page.locator("#announce")).to_have_text("Your undealt bets were returned: £25.00.")
    finally:
        context.close()


def test_a_second_tab_leaves_the_first_tabs_bets_and_a_sign_in_elsewhere_returns_them_to_it_too(
        browser: Any, live_server: LiveServer) -> None:
    """A player's tab at power holds a bet; a second tab of theirs opens multiplayer while the first is open: not a
    return from a disconnection, so the bet stays (before, the second tab returned it, noted by two trials). A sign-in
    elsewhere is a new connection: the bet is returned, and the first tab says so and shows it gone (before, it kept
    showing the bet until DEAL answered that there was none, found by a trial)."""
    import httpx

    context = browser.new_context()
    try:
        first = context.new_page()
        live_server.service.register("ann", "correct horse")
        first.goto(live_server.url + "/")
        first.get_by_label("Name").fill("ann")
        first.get_by_label("Password").fill("correct horse")
        first.get_by_role("button", name="Sign in").click()
        expect(first.locator("#who")).to_contain_text("ann")
        first.get_by_role("link", name="Join Power Blackjack", exact=True).click()
        expect(first.locator("#deal, #rebet")).to_be_visible()
        before = balance(first)
        bet(first, 1, chip="500")
        assert balance(first) != before
        second = context.new_page()
        second.goto(live_server.url + "/#/table/multiplayer")
        expect(second.locator("#deal, #rebet")).to_be_visible()
        second.wait_for_timeout(500)
        expect(second.locator("#announce")).to_have_text("")
        expect(first.locator("#total-bet")).to_have_text("TOTAL BET €5.00")
        second.close()
        signed_in = httpx.post(live_server.url + "/auth/login", json={"name": "ann", "password": "correct horse"})
        assert signed_in.json()["returned_bets"][0]["total"] == 500, signed_in.text
        expect(first.locator("#announce")).to_have_text("Bets of €5.00 returned. You connected again before they "
                                                        "were dealt.")
        expect(first.locator("#total-bet")).to_have_text("TOTAL BET €0.00")
        expect(first.locator("#balance strong")).to_have_text(before)
        shot(first, "bet-returned-by-a-sign-in-elsewhere")
    finally:
        context.close()


def test_another_site_cannot_frame_the_table(browser: Any, live_server: LiveServer) -> None:
    """A page of another origin that frames the table gets nothing drawn in the frame (X-Frame-Options and the
    frame-ancestors policy): before, the table loaded inside it, and tricked clicks could play a signed-in player's
    money (found by a trial of an attacker)."""
    context = browser.new_context()
    try:
        page = context.new_page()
        # Refused, and why: the refusal awaited, not looked for once after a fixed wait (an audit).
        with page.expect_console_message(lambda message: "frame-ancestors" in message.text, timeout=15000):
            page.set_content(f'<iframe id="trap" src="{live_server.url}/" width="800" height="600"></iframe>')
        assert page.frame_locator("#trap").locator("button").count() == 0  # no "Play as guest", no table
    finally:
        context.close()


def test_sign_out_ends_the_sign_in_on_the_server_and_a_sign_out_elsewhere_reaches_the_page(
        browser: Any, live_server: LiveServer) -> None:
    """The page's Sign out ends its sign-in on the server (before, it only forgot the token, which stayed valid for
    ever); a sign-out everywhere made from another device closes the page's socket, and the page says so."""
    import httpx

    context = browser.new_context()
    try:
        page = context.new_page()
        guest_at(page, live_server, "power")
        token = page.evaluate("localStorage.getItem('twentyone.token')")
        page.get_by_role("button", name="Sign out").click()
        page.locator("#sign-out-confirmed").click()  # a guest is asked first: the account is lost
        expect(page.get_by_role("button", name="Play as guest")).to_be_visible()
        assert page.evaluate("localStorage.getItem('twentyone.token')") is None
        refused = httpx.get(live_server.url + "/me", headers={"Authorization": f"Bearer {token}"})
        assert refused.status_code == 401, refused.text

        guest_at(page, live_server, "power")
        token = page.evaluate("localStorage.getItem('twentyone.token')")
        ended = httpx.post(live_server.url + "/auth/logout", json={"everywhere": True},
                           headers={"Authorization": f"Bearer {token}"})
        assert ended.status_code == 200 and ended.json()["signed_out"] == 1, ended.text
        expect(page.locator("#announce")).to_have_text("You were signed out: sign in again to play.")
        expect(page.get_by_role("button", name="Play as guest")).to_be_visible()
        expect(page.locator("#who")).to_have_text("")
        shot(page, "signed-out-elsewhere")
    finally:
        context.close()


def test_a_profile_read_answered_after_sign_out_does_not_sign_the_page_in_again(browser: Any,
                                                                             live_server: LiveServer) -> None:
    """A read of /me sent before Sign out and answered after it (a table read's, under load) is the ended sign-in's:
    the page stays signed out. Before, it drew the header signed in again and the lobby without "Play as guest" (seen
    in the suite under load)."""
    context = browser.new_context()
    try:
        page = context.new_page()
        guest_at(page, live_server, "power")
        held: list[Any] = []
        # The first read of /me from here on is held; any other goes through.
        page.route(re.compile(r"/me$"), lambda route: route.continue_() if held else held.append(route))
        page.get_by_role("link", name="Lobby").click()  # its route reads /me: held here
        deadline = time.monotonic() + 15
        while not held:  # the route's handler runs while Playwright is waiting, not while Python sleeps
            assert time.monotonic() < deadline, "the lobby's read of /me was never made"
            page.wait_for_timeout(50)
        answer = held[0].fetch()  # answered by the server while the sign-in is still on
        assert answer.status == 200
        page.get_by_role("button", name="Sign out").click()
        page.locator("#sign-out-confirmed").click()  # a guest is asked first: the account is lost
        expect(page.get_by_role("button", name="Play as guest")).to_be_visible()
        held[0].fulfill(response=answer)  # the old answer arrives now
        page.wait_for_timeout(500)  # the page has taken it, had it anything to draw
        expect(page.get_by_role("button", name="Play as guest")).to_be_visible()
        expect(page.locator("#who")).to_have_text("")
    finally:
        context.close()


def test_signing_out_from_a_seat_in_a_forming_round_says_the_bets_came_back(
        browser: Any, live_server: LiveServer) -> None:
    """A player seated in a multiplayer round still taking bets signs out: the seat is given up, and the lobby says
    the bets came back. Before, the socket's news of the seat made the page read the table under the ended sign-in;
    the refusal's words for a request without one ("Sign in first: send the bearer token…") stood over the lobby,
    two 401s in the console, and the bets' notice was lost (found by a trial)."""
    other, _ = guest_token(live_server)
    poster(live_server, other)("/tables/multiplayer/bets", {"spot": 1, "chip": 500})  # not alone: a full window
    page, _, problems = table_page(browser, live_server, "multiplayer")
    try:
        bet(page, 1, chip="500")
        bet(page, 1)
        expect(page.locator("#total-bet")).to_have_text("TOTAL BET $10.00")
        page.locator("#deal").click()
        expect(page.locator("#bet-status")).to_contain_text("Your bets are in")
        page.get_by_role("button", name="Sign out").click()
        page.locator("#sign-out-confirmed").click()  # a guest is asked first: the account is lost
        expect(page.get_by_role("button", name="Play as guest")).to_be_visible()
        expect(page.locator("#announce")).to_have_text("Signed out. Your undealt bets were returned: $10.00.")
        page.wait_for_timeout(500)  # the table's news of the seat, had the page still listened
        expect(page.locator("#announce")).to_have_text("Signed out. Your undealt bets were returned: $10.00.")
        assert not problems, problems
    finally:
        page.context.close()


def seat_at_multiplayer(page: Any, server: LiveServer, token: str) -> int:
    """The page's player bets $5 at multiplayer and presses DEAL: the id of the round taking bets they are in."""
    import httpx

    bet(page, 1, chip="500")
    page.locator("#deal").click()
    expect(page.locator("#bet-status")).to_contain_text("Your bets are in")
    return int(httpx.get(f"{server.url}/tables/multiplayer", headers={"Authorization": f"Bearer {token}"}
                         ).json()["round"]["id"])


def test_signing_out_while_another_sign_in_is_left_says_which_round_goes_on(
        browser: Any, live_server: LiveServer) -> None:
    """A registered player with another sign-in left (a browser closed without signing out) signs out from a seat in
    a forming multiplayer round: the server keeps the seat (only the last sign-in to end returns bets: the other
    device may be at the table), and the page says which round goes on. Before, it said nothing, and the timer played
    the hand (found by a trial)."""
    import httpx

    account = {"name": "fay", "password": "correct horse"}
    assert httpx.post(f"{live_server.url}/auth/register", json=account).status_code == 201  # the sign-in left behind
    token = httpx.post(f"{live_server.url}/auth/login", json=account).json()["token"]
    other, _ = guest_token(live_server)
    poster(live_server, other)("/tables/multiplayer/bets", {"spot": 1, "chip": 500})  # not alone: a full window
    page = signed_in_context(browser, token, viewport=DESKTOP).new_page()
    page.set_default_timeout(15000)
    problems = watch_console(page)
    try:
        open_table(page, live_server, "multiplayer")
        seated = seat_at_multiplayer(page, live_server, token)
        page.get_by_role("button", name="Sign out").click()
        expect(page.get_by_role("button", name="Play as guest")).to_be_visible()
        expect(page.locator("#announce")).to_have_text(
            f"Signed out. Your bets at Multiplayer Blackjack are in round #{seated}, dealt when betting closes: a "
            "decision of yours not made in time is made for you. Sign in again to play it.")
        assert not problems, problems
    finally:
        page.context.close()


def test_a_round_left_for_another_table_is_named_there_and_its_result_shown_on_return(
        browser: Any, live_server: LiveServer) -> None:
    """A player seated in a multiplayer round goes to classic and plays a round there: the page says the round left
    behind goes on; it settles meanwhile; back at multiplayer its result is shown. Before, nothing said the round went
    on, and on return nothing was shown: the page looked for a missed result at the newest round of all, which was
    classic's (found by a trial)."""
    import httpx

    other, _ = guest_token(live_server)
    poster(live_server, other)("/tables/multiplayer/bets", {"spot": 1, "chip": 500})  # not alone: a full window
    page, _, problems = table_page(browser, live_server, "multiplayer")
    token = page.evaluate("localStorage.getItem('twentyone.token')")
    elsewhere = poster(live_server, token)
    try:
        left = seat_at_multiplayer(page, live_server, token)
        page.get_by_role("link", name="Lobby").click()
        expect(page.locator("#announce")).to_have_text(
            f"Your bets at Multiplayer Blackjack are in round #{left}, dealt when betting closes: a decision of yours "
            "not made in time is made for you. Go back to the table to play it.")
        # The lobby lists it, and keeps listing it (the notice above is said once): before, nothing there did.
        expect(page.locator("#in-play li")).to_have_text(
            f"Your round #{left} at Multiplayer Blackjack · your bets are in, dealt when betting closes.")
        shot(page, "lobby-with-a-round-left-open")
        page.get_by_role("link", name="Join Classic Blackjack", exact=True).click()
        bet(page, 1, chip="100")
        page.locator("#deal").click()
        play_out(page)
        live_server.service.close_betting("multiplayer")
        read = lambda: httpx.get(f"{live_server.url}/rounds/{left}",  # noqa: E731
                                 headers={"Authorization": f"Bearer {token}"}).json()
        view, deadline = read(), time.monotonic() + 15
        while view["status"] == "playing":  # played out on another device: stand, no insurance
            assert time.monotonic() < deadline, view
            if not view["legal_actions"]:
                time.sleep(0.05)
                view = read()
                continue
            choice = next(a for a in ("no-insurance", "no-even-money", "stand") if a in view["legal_actions"])
            view = elsewhere(f"/rounds/{left}/actions", {"action": choice})
        page.get_by_role("link", name="Lobby").click()
        page.get_by_role("link", name="Join Multiplayer Blackjack", exact=True).click()
        expect(page.locator("#announce")).to_have_text(f"Round #{left} was settled while you were away.")
        expect(page.locator("#result")).to_have_attribute("data-round", str(left))
        # Back at classic, whose round this browser showed as it settled: nothing is shown again as missed (one key
        # for every table had the multiplayer round's id, and classic's round was shown again: found by review).
        page.get_by_role("link", name="Lobby").click()
        page.get_by_role("link", name="Join Classic Blackjack", exact=True).click()
        expect(page.locator("#deal, #rebet").first).to_be_visible()
        page.wait_for_timeout(1000)  # the page's look for a missed result, had it one to show
        expect(page.locator("#announce")).not_to_contain_text("while you were away")
        expect(page.locator("#result")).to_be_hidden()
        assert not problems, problems
    finally:
        page.context.close()


def test_d_pressed_right_after_a_spot_deals_once_the_bet_is_in(page: Any, live_server: LiveServer) -> None:
    """The keys a regular uses without waiting for the page: a spot, then D before the bet's answer is back."""
    live_server.service.stacked.append(["TS", "6H", "9D", "TC", "8C"])
    guest_at(page, live_server, "first-person")
    page.locator("button.chip[data-chip='100']").click()
    expect(page.locator("button.chip[data-chip='100']")).to_have_attribute("aria-pressed", "true")
    page.locator("button.circle[data-spot='1']").click()
    page.keyboard.press("d")
    expect(page.locator("button[data-action='stand']")).to_be_enabled()
    expect(page.locator(".hands.mine .bet-circle")).to_contain_text("$1.00")


def test_a_round_settled_while_away_is_shown_on_return_once(browser: Any, live_server: LiveServer) -> None:

    live_server.service.stacked.append(["TS", "6H", "9D", "TC", "8C"])  # 19 stands; the dealer's 16 draws 8: busts
    token, _ = guest_token(live_server)
    post = poster(live_server, token)

    post("/tables/classic/bets", {"spot": 1, "chip": 500})
    round_id = post("/tables/classic/deal")["id"]
    post(f"/rounds/{round_id}/actions", {"action": "stand"})  # elsewhere: another device, or the timer
    context = browser.new_context()
    context.add_init_script(f"localStorage.setItem('twentyone.token', {token!r})")
    page = context.new_page()
    try:
        page.goto(live_server.url + "/#/table/classic")
        expect(page.locator("#result")).to_have_attribute("data-round", str(round_id))
        expect(page.locator("#result")).to_contain_text(f"Round #{round_id}")
        expect(page.locator("#announce")).to_have_text(f"Round #{round_id} was settled while you were away.")
        # With its cards: the player's 19, the dealer's 6 and 10 that drew an 8 and bust. Before, the felt was empty.
        expect(page.locator(".dealer .card")).to_have_count(3)
        expect(page.locator("#dealer-total")).to_have_text("24 Bust")
        expect(page.locator(".hands.mine .cards .card")).to_have_count(2)
        expect(page.locator(".hands.mine .total")).to_have_text("19")
        page.wait_for_timeout(1500)  # the cards dealt onto the felt, for the picture
        shot(page, "a-round-settled-while-away")
        page.reload()  # shown once: the next visit starts clean
        expect(page.locator("#deal, #rebet")).to_be_visible()
        expect(page.locator("#result")).to_be_hidden()
        # Said until the felt shows another round, here one dealt elsewhere (another device) while this page pressed
        # nothing (a bet control clears it anyway): before, it stayed through the next two (a trial of players).
        # The page is away while the round is played: open, it would follow the round over its socket and see it
        # settle (a fresh check saw the reload come after the events).
        live_server.service.stacked.extend([["TS", "6H", "9D", "TC", "8C"]] * 2)
        page.goto("about:blank")
        post("/tables/classic/bets", {"spot": 1, "chip": 500})
        again = post("/tables/classic/deal")["id"]
        post(f"/rounds/{again}/actions", {"action": "stand"})
        page.goto(live_server.url + "/#/table/classic")
        expect(page.locator("#announce")).to_have_text(f"Round #{again} was settled while you were away.")
        post("/tables/classic/bets", {"spot": 1, "chip": 500})
        post("/tables/classic/deal")
        expect(page.locator("button[data-action='stand']")).to_be_enabled()
        expect(page.locator("#announce")).to_have_text("")
    finally:
        context.close()


def socket_held_past_the_first_read(browser: Any, server: LiveServer, token: str,
                                    meanwhile: Any = lambda: None) -> tuple[Any, list[int]]:
    """A page of ``token``'s opened at classic whose table socket is let through to the server only once the
    table's first read is answered, and ``meanwhile`` has run (what happens in that gap): (page, its reads)."""
    page = signed_in_context(browser, token).new_page()
    page.set_default_timeout(15000)
    held: list[Any] = []
    reads: list[int] = []

    def first_read_then_socket(route: Any) -> None:
        reads.append(1)
        route.fulfill(response=route.fetch())
        if len(reads) == 1:
            meanwhile()
            held[0].connect_to_server()

    page.route_web_socket(re.compile(r"/ws/tables/classic"), lambda socket: held.append(socket))
    page.route(re.compile(r"/tables/classic$"), first_read_then_socket)
    page.goto(server.url + "/#/table/classic")
    return page, reads


def test_bets_returned_as_the_page_connects_leave_its_spots_and_balance(browser: Any, live_server: LiveServer) -> None:
    """The player's bet is on classic's slip (placed through the API, as by a page since closed); a page opening the
    table reads it while its socket connects, and the socket's hello then returns the bet. Before, the page said so
    but kept drawing the bet on the spot, TOTAL BET $5.00 and the balance without it, and DEAL answered "Place a
    main bet before dealing." (found by a trial). The socket is held here until the table's first read is answered,
    the order that showed it."""

    token, _ = guest_token(live_server)
    poster(live_server, token)("/tables/classic/bets", {"spot": 1, "chip": 500})
    # The slip as it was (the bet still on it) in the first read; then the socket connects, its hello returning it.
    page, reads = socket_held_past_the_first_read(browser, live_server, token)
    context = page.context
    try:
        expect(page.locator("#announce")).to_have_text("Your undealt bets were returned: $5.00.")
        expect(page.locator("#total-bet")).to_have_text("TOTAL BET $0.00")
        expect(page.locator("#balance strong")).to_have_text("$1,000.00")
        expect(page.locator("button.circle[data-spot='1']")).not_to_have_class(re.compile(r"has-bet"))
        expect(page.locator("#deal, #rebet")).to_be_visible()
        assert len(reads) >= 2  # read again after the hello
        shot(page, "bets-returned-as-the-page-connects")
    finally:
        context.close()


def test_a_round_dealt_elsewhere_before_the_pages_socket_is_held_is_shown_once_it_is(
        browser: Any, live_server: LiveServer) -> None:
    """The player deals at classic on another device just after this page's first read of the table is answered and
    before the server holds the page's socket: the round's event reaches no socket of this page. The page reads the
    table again at its socket's hello, and shows the round and its decisions. Before, it went on showing the empty
    table and its bet controls until something else made it read (found by an audit: one page in four was not yet
    listening when its first read was drawn, on a loaded machine). The socket is held here until that moment."""
    live_server.service.stacked.append(["TS", "6H", "9D", "TC", "8C"])  # 19 against a 6: the round waits for STAND
    token, _ = guest_token(live_server)
    elsewhere = poster(live_server, token)

    def deal_elsewhere() -> None:  # after the first read (the table with no round): its event reaches no socket
        elsewhere("/tables/classic/bets", {"spot": 1, "chip": 500})
        elsewhere("/tables/classic/deal")

    page, reads = socket_held_past_the_first_read(browser, live_server, token, meanwhile=deal_elsewhere)
    context = page.context
    try:
        expect(page.locator("button[data-action='stand']")).to_be_enabled()
        expect(page.locator(".hands.mine .total")).to_have_text("19")
        assert len(reads) >= 2  # read again after the hello
    finally:
        context.close()


class HeldSockets:
    """A page at classic whose table sockets wait to be let through to the server, and the bet controls it sent."""

    def __init__(self, browser: Any, server: LiveServer) -> None:
        token, _ = guest_token(server)
        self.page = signed_in_context(browser, token).new_page()
        self.page.set_default_timeout(15000)
        # The bet controls' wait for a hello, stretched: on a busy machine the page may take seconds to be drawn.
        self.page.add_init_script("window.twentyoneHelloWaitMs = 60000")
        self.held: list[Any] = []
        self.bets_sent: list[str] = []
        self.page.route_web_socket(re.compile(r"/ws/tables/classic"), lambda socket: self.held.append(socket))
        self.page.on("request", lambda request: self.bets_sent.append(request.url)
                     if re.search(r"/tables/classic/(chip|bets)$", request.url) else None)

    def socket_opened(self, count: int, seconds: float = 15) -> None:
        """Wait for the page's ``count``-th socket (Playwright tells of it only while the test calls it: no sleep)."""
        deadline = time.monotonic() + seconds
        while len(self.held) < count:
            assert time.monotonic() < deadline, f"the page opened {len(self.held)} sockets, not {count}"
            self.page.wait_for_timeout(100)

    def bet_five(self) -> None:
        """A chip and a spot clicked at once, before any answer; they must still be waiting a moment later."""
        self.page.locator("button.chip[data-chip='500']").click()
        self.page.locator("button.circle[data-spot='1']").click()
        self.page.wait_for_timeout(500)  # time enough for a page that does not wait to send both
        assert self.bets_sent == [], "the page bet before its socket's reconnection"

    def kept(self) -> None:
        """The bet is placed once the socket said hello, and stays: DEAL deals it."""
        page = self.page
        expect(page.locator("#total-bet")).to_have_text("TOTAL BET $5.00")
        expect(page.locator("#balance strong")).to_have_text("$995.00")
        expect(page.locator("#deal")).to_be_enabled()
        assert len(self.bets_sent) == 2
        page.locator("#deal").click()
        expect(page.locator("#action-bar [data-action], #result:not([hidden])").first).to_be_visible()
        expect(page.locator("#announce")).not_to_contain_text("returned")


def test_a_bet_placed_while_the_pages_socket_connects_is_not_returned_by_that_socket(
        browser: Any, live_server: LiveServer) -> None:
    """A new socket is a reconnection, whose hello returns bets never dealt. A player quick to bet on a page whose
    socket the server has not yet taken keeps the bet: the page sends it after the hello. Before, the bet went first,
    the socket's hello returned it at once, the slip emptied and DEAL stayed disabled (found in CI, a busy server).
    The socket is held here until the chip and the spot are clicked, the order that showed it."""
    table = HeldSockets(browser, live_server)
    try:
        table.page.goto(live_server.url + "/#/table/classic")
        expect(table.page.locator("#deal, #rebet")).to_be_visible()
        table.bet_five()
        table.held[0].connect_to_server()
        table.kept()
    finally:
        table.page.context.close()


def test_a_bet_placed_while_the_pages_line_is_down_waits_for_the_next_sockets_hello(
        browser: Any, live_server: LiveServer) -> None:
    """The page's socket is lost; the page opens another 2 s later, and that one's hello returns bets never dealt.
    A chip and a spot clicked in between are sent after that hello, and stay (found by review: the wait covered only
    a socket being opened, and bets made in the 2 s before it went first and were returned by it). A decision, which
    a return cannot touch, does not wait for a hello: the line lost again mid-round, STAND settles the round while
    the next socket is still held."""
    live_server.service.stacked.append(["TS", "6H", "9D", "TC", "8C"])  # 19 against 16, which draws 8C and busts
    table = HeldSockets(browser, live_server)

    def line_lost(page_side: Any, server_side: Any) -> None:
        socket_heard(live_server, "classic")
        server_side.close()
        page_side.close()
        eventually(lambda: not live_server.service.events.present("classic"), 15, "the lost socket gone")

    try:
        table.page.goto(live_server.url + "/#/table/classic")
        expect(table.page.locator("#deal, #rebet")).to_be_visible()
        line_lost(table.held[0], table.held[0].connect_to_server())
        table.bet_five()
        table.socket_opened(2)
        second = table.held[1].connect_to_server()
        table.kept()
        line_lost(table.held[1], second)
        table.page.locator("button[data-action='stand']").click()
        expect(table.page.locator("#result")).to_contain_text("you won $5.00")
        assert len(table.held) < 4  # the third socket, if open yet, was never let through
    finally:
        table.page.context.close()


def _excluded_line(server: LiveServer, token: str) -> re.Pattern[str]:
    import httpx

    me = httpx.get(server.url + "/me", headers={"Authorization": f"Bearer {token}"}).json()
    until = me["limits"]["excluded_until"]
    words = f"You have excluded yourself from play until {until[:16].replace('T', ' ')} UTC."
    return re.compile(rf"^{re.escape(words)} That is .+ your time\.$")  # the local time: test_hand_names_and_limits


def test_a_self_exclusion_takes_the_bet_controls_away_in_every_tab(browser: Any, live_server: LiveServer) -> None:
    """A tab at classic holds a bet; a second tab excludes the player for 7 days. The first tab hears its bet returned,
    and offers no chip, no DEAL, no spot but says until when; so do the lobby and the table in the second tab. Before,
    every control stayed and each click was refused "You have excluded yourself from play until …" (found by a
    trial)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        table = context.new_page()
        table.set_default_timeout(15000)
        guest_at(table, live_server, "classic")
        start = balance(table)
        bet(table, 1, chip="500")
        token = table.evaluate("localStorage.getItem('twentyone.token')")
        limits = context.new_page()
        limits.set_default_timeout(15000)
        limits.goto(live_server.url + "/#/limits")
        limits.get_by_label("Exclude me for days").fill("7")
        limits.get_by_role("button", name="Save limits").click()
        expect(limits.get_by_text(re.compile(r"Self-exclusion: until \d{4}-\d\d-\d\d \d\d:\d\d UTC"))).to_be_visible()
        line = _excluded_line(live_server, token)

        expect(table.locator("#announce")).to_have_text("Bets of $5.00 returned. You excluded yourself from play.")
        expect(table.locator("#bet-status")).to_have_text(line)
        expect(table.locator("#total-bet")).to_have_text("TOTAL BET $0.00")
        expect(table.locator("#balance strong")).to_have_text(start)
        expect(table.locator("button.chip")).to_have_count(0)
        expect(table.locator("#deal, #rebet, #undo, #double-bets")).to_have_count(0)
        expect(table.locator("button.circle[data-spot='1']")).to_be_disabled()
        shot(table, "excluded-table-told-by-another-tab")

        limits.get_by_role("link", name="Lobby").click()
        expect(limits.locator("#exclusion")).to_have_text(line)
        shot(limits, "excluded-lobby")
        limits.get_by_role("link", name="Join Classic Blackjack", exact=True).click()  # still allowed to watch
        expect(limits.locator("#bet-status")).to_have_text(line)
        expect(limits.locator("button.circle[data-spot='1']")).to_be_disabled()
        expect(limits.locator("button.chip")).to_have_count(0)
    finally:
        context.close()


def test_a_round_in_play_goes_on_after_a_self_exclusion_then_no_bet_is_offered(
        page: Any, live_server: LiveServer) -> None:
    """Excluded (on another device) in the middle of a round: the round's decisions stay, and once it settles the bar
    says until when the player excluded themselves instead of inviting bets."""
    import httpx

    live_server.service.stacked.append(["TS", "6H", "6D", "TC", "8C"])
    guest_at(page, live_server, "classic")
    bet(page, 1, chip="100")
    page.locator("#deal").click()
    expect(page.locator("button[data-action='hit']")).to_be_enabled()
    token = page.evaluate("localStorage.getItem('twentyone.token')")
    answer = httpx.put(live_server.url + "/me/limits", json={"exclude_days": 3},
                       headers={"Authorization": f"Bearer {token}", "Idempotency-Key": "x1"})
    assert answer.status_code == 200, answer.text
    page.locator("button[data-action='hit']").click()
    expect(page.locator(".hands.mine .cards .card")).to_have_count(3)
    play_out(page)
    expect(page.locator("#bet-status")).to_have_text(_excluded_line(live_server, token))
    expect(page.locator("#deal, #rebet")).to_have_count(0)
    shot(page, "excluded-after-the-round")


def test_excluding_on_the_limits_page_says_which_bets_were_returned(page: Any, live_server: LiveServer) -> None:
    """Bets left on power's slip (euros) and single-deck's (pounds); the player excludes themselves on the Responsible
    gaming page of the same tab. Before, it said only "Limits saved." though PUT /me/limits returned both bets."""
    import httpx

    guest_at(page, live_server, "power")
    bet(page, 1, chip="500")
    token = page.evaluate("localStorage.getItem('twentyone.token')")
    placed = httpx.post(live_server.url + "/tables/single-deck/bets", json={"spot": 1, "chip": 2500},
                        headers={"Authorization": f"Bearer {token}", "Idempotency-Key": "slip"})
    assert placed.status_code == 200, placed.text
    page.get_by_role("link", name="Responsible gaming").click()
    page.get_by_label("Exclude me for days").fill("1")
    page.get_by_role("button", name="Save limits").click()
    expect(page.locator("#announce")).to_have_text(re.compile(
        r"^Limits saved\. Your undealt bets were returned: (€5\.00, £25\.00|£25\.00, €5\.00)\.$"))
    expect(page.get_by_text(re.compile(r"Self-exclusion: until \d{4}-\d\d-\d\d \d\d:\d\d UTC"))).to_be_visible()
    shot(page, "limits-excluded-bets-returned")


def test_a_request_without_any_answer_is_said_in_words_and_cleared_by_the_next_answer(
        page: Any, live_server: LiveServer) -> None:
    """The server is down when the player picks a chip: before, the banner said the browser's "Failed to fetch", and
    kept saying it once the server was back. Now it says what happened and what to do; the table read when the
    socket comes back clears it."""
    guest_at(page, live_server, "classic")
    socket_heard(live_server, "classic")
    page.outage_from = len(page.console_problems)  # the page fixture forgives the refused retries from here
    live_server.stop()
    page.locator("button.chip[data-chip='500']").click()
    expect(page.locator("#announce")).to_have_text(
        "No answer from the server: check your connection. If you pressed a button, it may or may not have been "
        "taken: the table shows what was.", timeout=20000)  # after its four tries, 3.5 s
    shot(page, "no-answer")
    restarted = LiveServer(create_app(live_server.settings), live_server.port)
    restarted.start()
    try:
        expect(page.locator("#announce")).to_have_text("", timeout=20000)  # the socket is back, the table read
        page.locator("button.chip[data-chip='500']").click()
        expect(page.locator("button.chip[data-chip='500']")).to_have_attribute("aria-pressed", "true")
        socket_heard(restarted, "classic")  # the table read may come before its socket
    finally:
        restarted.stop()


def test_history_fits_a_phone_without_sideways_scrolling(browser: Any, live_server: LiveServer) -> None:
    """At 390 px the history table was 709 px wide and its Replay button off-screen (found by a trial): on a phone
    each round is now a card of labelled lines, at 390 and 360 px, the replay and its verification included."""

    live_server.service.stacked.append(["TS", "6H", "9D", "TC", "8C"])
    token, _ = guest_token(live_server)
    post = poster(live_server, token)

    for table in ("classic", "first-person"):
        post(f"/tables/{table}/bets", {"spot": 1, "chip": 500})
        view = post(f"/tables/{table}/deal")
        while view["status"] == "playing":
            action = "stand" if "stand" in view["legal_actions"] else view["legal_actions"][-1]
            view = post(f"/rounds/{view['id']}/actions", {"action": action})
    context = browser.new_context(viewport={"width": 390, "height": 844})
    context.add_init_script(f"localStorage.setItem('twentyone.token', {token!r})")
    page = context.new_page()
    page.set_default_timeout(15000)
    problems = watch_console(page)
    try:
        page.goto(live_server.url + "/#/history")
        expect(page.locator("table.history tbody tr")).to_have_count(2)
        for width in (390, 360):
            page.set_viewport_size({"width": width, "height": 844})
            page.wait_for_timeout(100)
            assert page.evaluate("document.documentElement.scrollWidth") <= width
            for replay in page.locator("button[data-replay]").all():
                box = replay.bounding_box()
                assert box and box["x"] >= 0 and box["x"] + box["width"] <= width, box
            expect(page.locator("table.history tbody tr").first.locator("td").nth(5)).to_have_css("display", "flex")
            shot(page, f"history-phone-{width}")
        page.locator("button[data-replay]").first.click()
        page.locator("#verify").click()
        expect(page.locator("#verification")).to_contain_text("Verified")
        assert page.evaluate("document.documentElement.scrollWidth") <= 360
        shot(page, "history-phone-replay-360")
        page.set_viewport_size({"width": 1280, "height": 800})  # a wide screen keeps the table
        expect(page.locator("table.history thead th").first).to_be_visible()
        assert not problems, problems
    finally:
        context.close()


def test_a_soft_hand_that_stood_shows_one_total_and_a_dealer_bust_is_named(page: Any, live_server: LiveServer) -> None:
    """Ace-9 reads "10/20" while it is played; stood and settled it read "10/20" still, and the dealer's 24 read "24"
    with nothing saying bust (found by a trial). Now "20" and "24 Bust"."""
    live_server.service.stacked.append(["AS", "6H", "9D", "TC", "8C"])  # A9 stands; the dealer's 16 draws 8: 24
    guest_at(page, live_server, "classic")
    bet(page, 1, chip="100")
    page.locator("#deal").click()
    expect(page.locator(".hands.mine .total")).to_have_text("10/20")
    page.locator("button[data-action='stand']").click()
    expect(page.locator("#next-round")).to_be_visible()
    expect(page.locator(".hands.mine .total")).to_have_text("20")
    expect(page.locator("#dealer-total")).to_have_text("24 Bust")
    page.wait_for_timeout(1000)  # the deal's motion over, for the picture
    shot(page, "soft-stood-dealer-bust")


def test_a_second_page_of_the_player_follows_each_round_the_first_deals(browser: Any, live_server: LiveServer) -> None:
    """One player, two pages (browser contexts) at classic: the first deals; the second shows the round in play and
    how it settled, and a blackjack, which settles as it is dealt. The server sends the round's private news to each
    of the player's sockets; the page showed a round only if a table read found it still in play, so the blackjack
    (or a round played out before the read) never reached the second page until a reload (found by a trial)."""
    live_server.service.stacked.extend([["TS", "6H", "9D", "TC", "8C"],  # 19 stands; the dealer's 16 draws 8: busts
                                        ["AS", "7H", "KD", "9C"]])  # a shoe each round: a blackjack against a 7
    token, _ = guest_token(live_server)
    pages = []
    for _ in range(2):
        page = signed_in_context(browser, token, viewport=DESKTOP).new_page()
        page.set_default_timeout(15000)
        page.console_problems = watch_console(page)
        page.goto(live_server.url + "/#/table/classic")
        expect(page.locator("#deal, #rebet")).to_be_visible()
        pages.append(page)
    first, second = pages
    try:
        bet(first, 1, chip="100")
        first.locator("#deal").click()
        expect(second.locator("button[data-action='stand']")).to_be_enabled()
        first.locator("button[data-action='stand']").click()
        expect(second.locator("#result")).to_have_attribute("data-round", "1")
        expect(second.locator(".hands.mine .outcome")).to_have_text("WIN +$1.00")
        first.locator("#next-round").click()
        bet(first, 1, chip="100")
        first.locator("#deal").click()
        expect(first.locator("#result")).to_have_attribute("data-round", "2")
        expect(second.locator("#result")).to_have_attribute("data-round", "2")
        expect(second.locator("#result")).to_contain_text("you won $1.50")
        expect(second.locator(".hands.mine .outcome")).to_have_text("BLACKJACK +$1.50")
        # Both pages end at the same balance: the guest's $1,000.00, +$1.00, +$1.50. The first page's own balance is
        # awaited, not read once: it shows the round's result from DEAL's answer and its balance from the table read
        # that follows, a moment later (CI once read it between the two).
        for page in pages:
            expect(page.locator("#balance strong")).to_have_text("$1,002.50")
    finally:
        for page in pages:
            page.context.close()
            assert not page.console_problems, page.console_problems


def test_a_chip_picked_after_a_settled_round_starts_the_next_bet(page: Any, live_server: LiveServer) -> None:
    """A round settles: its hands stay on the felt where the spots go, and the chips stay live. A chip picked then
    starts the next bet, as NEW BETS does: the spots come back with the chip in hand. Before, the chip was taken with
    nowhere to put it until NEW BETS was pressed (found by a trial). At a desktop and at 360 px."""
    live_server.service.stacked.extend([["TS", "6H", "9D", "TC", "8C"], ["TS", "7H", "9D", "TC"]])
    guest_at(page, live_server, "classic")
    for size in ("desktop", "360"):
        if size == "360":
            page.set_viewport_size({"width": 360, "height": 780})
        bet(page, 1, chip="100")
        page.locator("#deal").click()
        play_out(page)
        expect(page.locator(".hands.mine .outcome")).to_contain_text("WIN")
        expect(page.locator("button.circle")).to_have_count(0)
        expect(page.locator("button.chip[data-chip='500']")).to_be_enabled()
        page.wait_for_timeout(1000)  # the deal's motion over, for the picture
        shot(page, f"settled-chips-live-{size}")
        page.locator("button.chip[data-chip='500']").click()
        expect(page.locator("button.chip[data-chip='500']")).to_have_attribute("aria-pressed", "true")
        expect(page.locator("button.circle[data-spot='1']")).to_be_enabled()
        expect(page.locator(".hands.mine")).to_have_count(0)
        expect(page.locator("#result")).to_be_hidden()
        shot(page, f"settled-chip-picked-{size}")
        page.locator("button.circle[data-spot='1']").click()
        expect(page.locator("#total-bet strong")).to_have_text("$5.00")
        page.locator("#undo").click()
        expect(page.locator("#total-bet strong")).to_have_text("$0.00")


def test_a_busted_hand_of_the_players_says_bust_as_the_dealers_does(page: Any, live_server: LiveServer) -> None:
    """Two hands at classic: the first draws to 26 while the second is still to be played, then the dealer busts.
    The player's busted hand reads "26 Bust", marked as the dealer's "24 Bust" is, as soon as it busts and once
    settled. Before, it read "26" alone (found by a trial)."""
    live_server.service.stacked.append(["TS", "9H", "6H", "6D", "TC", "TD", "KC", "8C"])
    guest_at(page, live_server, "classic")
    bet(page, 1, chip="100")
    bet(page, 2)
    page.locator("#deal").click()
    first, second = (page.locator(f".hands.mine .hand[data-seat='{seat}'] .total") for seat in (1, 2))
    expect(first).to_have_text("16")
    page.locator("button[data-action='hit']").click()
    expect(first).to_have_text("26 Bust")
    expect(first).to_have_class(re.compile(r"\bbust\b"))
    expect(page.locator(".hand.active[data-seat='2']")).to_be_visible()  # the second hand is still to be played
    page.wait_for_timeout(1000)
    shot(page, "player-bust-mid-round-desktop")
    page.locator("button[data-action='stand']").click()
    expect(page.locator("#next-round")).to_be_visible()
    expect(page.locator("#dealer-total")).to_have_text("24 Bust")
    expect(first).to_have_text("26 Bust")
    expect(second).to_have_text("19")
    page.wait_for_timeout(1000)
    shot(page, "player-bust-settled-desktop")
    page.set_viewport_size({"width": 360, "height": 780})
    expect(first).to_have_text("26 Bust")
    shot(page, "player-bust-settled-360")


def test_history_shows_each_round_in_its_own_currency_and_at_a_table_no_longer_offered(
        browser: Any, live_server: LiveServer) -> None:
    """A round keeps the currency it was played in, and a table taken out of the configuration keeps its rounds
    readable (found by a trial of an operator): the page shows each round's own currency, where it showed the
    table's as it is now, and had none at all for a table no longer offered."""
    from sqlalchemy import update

    token, _ = guest_token(live_server)
    post = poster(live_server, token)
    played = []
    for _ in range(2):
        # 19 against a dealer's 16 who draws and busts: no offer (a random dealer's Ace asked for insurance first,
        # and the stand below was refused: a CI run failed so).
        live_server.service.stacked.append(["TS", "6H", "9D", "TC", "8C"])
        post("/tables/classic/bets", {"spot": 1, "chip": 100})
        view = post("/tables/classic/deal")
        while view["status"] == "playing":
            view = post(f"/rounds/{view['id']}/actions", {"action": "stand"})
        played.append(view["id"])
    with live_server.service.db.transaction() as session:  # as if played when the table was in euros, and one
        session.execute(update(Round).where(Round.id == played[0]).values(currency="EUR"))  # at a table since gone
        session.execute(update(Round).where(Round.id == played[1]).values(table_id="classic-retired"))
    context = signed_in_context(browser, token)
    page = context.new_page()
    page.set_default_timeout(15000)
    problems = watch_console(page)
    try:
        page.goto(live_server.url + "/#/history")
        rows = page.locator("table.history tbody tr")
        expect(rows).to_have_count(2)
        expect(rows.nth(0).locator("td").nth(1)).to_have_text("classic-retired")
        expect(rows.nth(0).locator("td").nth(5)).to_have_text("$1.00")
        expect(rows.nth(1).locator("td").nth(5)).to_have_text("€1.00")
        assert problems == []
    finally:
        context.close()


class CashierClosed:
    """An operator's wallet whose credits are refused: a player's winnings wait in the outbox."""

    def __init__(self) -> None:
        self.balances: dict[str, int] = {}

    def balance(self, player: str, currency: str) -> int:
        return self.balances.setdefault(player, 100_000)

    def debit(self, player: str, currency: str, amount: int, tx_id: str, round_id: int | None) -> None:
        self.balances[player] = self.balance(player, currency) - amount

    def credit(self, player: str, currency: str, amount: int, tx_id: str, round_id: int | None) -> None:
        from twentyone.server.wallet import WalletError

        raise WalletError("The cashier is closed for a minute.")

    def rollback(self, tx_id: str) -> None:
        return None


def test_history_says_winnings_the_operators_wallet_has_not_yet_taken_are_on_their_way(
        browser: Any, tmp_path: Any) -> None:
    """With an operator's wallet refusing credits for now, a won round's row in history says its winnings are on
    their way; before, it showed them returned beside a balance without them (found by a trial of an integrator)."""
    from web_helpers import free_port

    from twentyone.server.config import Settings

    settings = Settings(f"sqlite:///{tmp_path / 'owed.db'}", tmp_path, OPERATOR)
    server = LiveServer(create_app(settings, operator_wallet=CashierClosed()), free_port(), settings)
    server.start()
    try:
        token, _ = guest_token(server)
        post = poster(server, token)
        server.service.stacked.append(["5S", "6H", "6D", "TC", "9C", "8C"])  # a double to 20; the dealer busts
        post("/tables/classic/bets", {"spot": 1, "chip": 500})
        round_id = post("/tables/classic/deal")["id"]
        assert post(f"/rounds/{round_id}/actions", {"action": "double"})["status"] == "settled"
        context = signed_in_context(browser, token, viewport=DESKTOP)
        page = context.new_page()
        page.set_default_timeout(15000)
        problems = watch_console(page)
        try:
            page.goto(server.url + "/#/history")
            returned = page.locator("table.history tbody tr").first.locator("td[data-label='Returned']")
            expect(returned).to_have_text("$20.00 ($20.00 on its way to your balance)")
            shot(page, "history-owed")
            assert not problems, problems
        finally:
            context.close()
    finally:
        server.stop()


def test_a_press_on_a_button_the_page_draws_again_meanwhile_is_not_lost(page: Any, live_server: LiveServer) -> None:
    """The page draws the table anew on each event and read. A press begun on HIT and ended on the HIT drawn again
    under the pointer (an event between mouse down and up) was lost: the browser sends no click to a button the press
    did not begin on, so nothing happened and nothing said so (CI's failing click at a power table, on a busy
    machine). The press now completes on the button drawn in its place."""
    live_server.service.stacked.append(["TS", "6H", "2D", "TC", "3C", "9D"])  # 12, a 3: 15, a decision still
    guest_at(page, live_server, "classic")
    bet(page, 1, chip="100")
    page.locator("#deal").click()
    hit = page.locator("button[data-action='hit']")

    def press_while_drawn_again() -> None:
        """Mouse down on HIT, then the table read and drawn again (as on an event): the HIT pressed is gone."""
        expect(hit).to_be_enabled()
        page.wait_for_timeout(1100)  # the deal's own reads drawn, and past the focus read's throttle
        box = hit.bounding_box()
        assert box is not None, "HIT was drawn again while measured"
        x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
        page.mouse.move(x, y)
        page.mouse.down()
        pressed = page.evaluate_handle("([x, y]) => document.elementFromPoint(x, y).closest('button')", [x, y])
        assert pressed.evaluate("button => button.dataset.action") == "hit"
        page.evaluate("window.dispatchEvent(new Event('focus'))")  # the table read again: drawn anew
        page.wait_for_function("button => !button.isConnected", arg=pressed)
        expect(hit).to_be_enabled()

    press_while_drawn_again()
    page.mouse.up()
    expect(page.locator(".hands.mine .card")).to_have_count(3)
    page.wait_for_timeout(500)
    expect(page.locator(".hands.mine .card")).to_have_count(3)  # one press, one card
    # A press that leaves its button (dragged off, as a player takes back a press) is no click, drawn again or not.
    press_while_drawn_again()
    page.mouse.move(5, 5)
    page.mouse.up()
    page.wait_for_timeout(500)
    expect(page.locator(".hands.mine .card")).to_have_count(3)


def test_a_press_no_browser_would_count_is_not_counted_when_the_button_is_drawn_again(page: Any,
                                                                                      live_server: LiveServer) -> None:
    """The twin's click is for a main-button press begun on a button that takes it. A middle or right press, and a
    press begun on a disabled button drawn again enabled, clicked the twin (found by review)."""
    page.goto(live_server.url + "/")
    expect(page.locator("#play-guest")).to_be_visible()  # the page's modules loaded
    page.evaluate("""() => {
      window.clicks = 0;
      const holder = document.createElement('div');
      holder.style = 'position:fixed;left:100px;top:100px;z-index:9999';
      document.body.append(holder);
      window.draw = (disabled) => {
        const probe = document.createElement('button');
        probe.type = 'button'; probe.dataset.focus = 'probe'; probe.textContent = 'PROBE';
        probe.style = 'width:200px;height:60px'; probe.disabled = disabled;
        probe.onclick = () => { window.clicks += 1; };
        holder.replaceChildren(probe);
      };
      window.draw(false);
    }""")
    page.mouse.move(200, 130)
    for button, disabled_at_the_press in (("left", False), ("middle", False), ("right", False), ("left", True)):
        page.evaluate(f"window.draw({str(disabled_at_the_press).lower()})")
        page.mouse.down(button=button)
        page.evaluate("window.draw(false)")  # drawn again, enabled, under the pointer
        page.mouse.up(button=button)
    page.wait_for_timeout(200)
    assert page.evaluate("window.clicks") == 1  # the first press alone: a main-button press on a button that took it
