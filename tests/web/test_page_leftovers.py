"""Page defects left over from the trials, each fixed: the session time limit passing while the table is open (and a
round in play then), the bets on the slip in the break after it, REBET the balance does not cover, BALANCE after a
refusal caused elsewhere, and the header's currencies on a narrow desktop and each page opening at its top."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect
from server_helpers import OPERATOR
from web_helpers import (
    PHONE,
    LiveServer,
    bet,
    chip,
    guest_token,
    limited_guest,
    open_table,
    poster,
    shot,
    signed_in_context,
    table_page,
    watch_console,
)

DESKTOP = {"width": 1280, "height": 900}
VIEWPORTS = [pytest.param(DESKTOP, id="desktop"), pytest.param(PHONE, id="phone")]
# The server's sentence (session_over_message): before, the page said "after a break, from …".
BREAK_WORDS = re.compile(r"^Your session time limit of 1 minute is reached: you can play again after a break of "
                         r"30 minutes, from \d{4}-\d\d-\d\d \d\d:\d\d UTC\.")


def page_of(browser: Any, token: str, viewport: dict[str, int]) -> tuple[Any, list[str]]:
    page = signed_in_context(browser, token, viewport=viewport).new_page()
    page.set_default_timeout(15000)
    return page, watch_console(page)


def come_back(page: Any) -> None:
    """The page reads the table and /me again, as on coming back to its tab (a limit set on another device)."""
    page.evaluate("window.dispatchEvent(new Event('focus'))")


def close(page: Any, problems: list[str]) -> None:
    page.context.close()
    assert not problems, problems


# ------------------------------------------------------------------ 1, 2, 6. the session's limit passes
@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_the_session_limit_passing_takes_the_bet_controls_away_and_leaves_undo_and_clear(
        browser: Any, live_server: LiveServer, viewport: dict[str, int]) -> None:
    """Before, chips, spots and DEAL stayed once the limit passed, and the first press was refused (403) before the
    break's line showed; and then no control at all was left to take back the bets on the slip, which the server
    allows. Now the page sets a timer for the limit: the line shows by itself, with UNDO and CLEAR alone."""
    token, session_began = limited_guest(live_server)
    session_began(0)
    page, problems = page_of(browser, token, viewport)
    open_table(page, live_server, "classic")
    chip(page, 100)
    bet(page)
    bet(page)
    expect(page.locator("#total-bet strong")).to_have_text("$2.00")
    session_began(57)  # the limit is three seconds away
    presses: list[str] = []
    page.on("request", lambda request: presses.append(request.url) if request.method == "POST" else None)
    come_back(page)
    expect(page.locator("#bet-status")).to_have_text(BREAK_WORDS, timeout=20000)
    assert presses == [], presses  # no press refused first
    expect(page.locator("#announce")).to_have_text("")
    expect(page.locator("button.chip")).to_have_count(0)
    expect(page.locator("#deal, #rebet, #double-bets")).to_have_count(0)
    expect(page.locator("button.circle[data-spot='1']")).to_be_disabled()
    expect(page.locator("#undo")).to_be_enabled()
    expect(page.locator("#clear")).to_be_enabled()
    shot(page, f"leftover-session-break-with-bets-{viewport['width']}")
    page.locator("#undo").click()
    expect(page.locator("#total-bet strong")).to_have_text("$1.00")
    page.locator("#clear").click()
    expect(page.locator("#total-bet strong")).to_have_text("$0.00")
    expect(page.locator("#undo, #clear")).to_have_count(0)
    expect(page.locator("#bet-status")).to_have_text(BREAK_WORDS)
    expect(page.locator("#announce")).to_have_text("")
    close(page, problems)


def test_the_first_bet_after_the_break_sets_the_next_sessions_timer(browser: Any, live_server: LiveServer) -> None:
    """The break is over: the first bet starts the next session on the server, whose limit the page then learns (a
    player who bets and never deals reads /me no other way), so that its timer is set."""
    token, session_began = limited_guest(live_server)
    session_began(40 * 60)  # the limit was reached 39 minutes ago: the break ended 9 minutes ago
    page, problems = page_of(browser, token, DESKTOP)
    open_table(page, live_server, "classic")
    page.evaluate("async () => { window.dom = await import('/static/dom.js'); }")  # the page's own module
    assert page.evaluate("window.dom.sessionEndsIn()") is None
    chip(page, 100)
    bet(page)
    page.wait_for_function("window.dom.sessionEndsIn() > 50000")
    close(page, problems)


# ------------------------------------------------------------------ 5. the limit passes mid-round
@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_a_double_the_passed_session_limit_keeps_out_says_why(browser: Any, live_server: LiveServer,
                                                                viewport: dict[str, int]) -> None:
    """A pair of eights against a six: DOUBLE and SPLIT. The limit passes while the player decides: the server no
    longer takes either (they add a stake). Before, the page offered them until one was refused, and then greyed them
    with no word why; now, at the limit, it reads the round again and says why beside the buttons."""
    live_server.service.stacked.append(["8H", "6C", "8D", "TS", "2C", "3D", "4S", "5H"])
    token, session_began = limited_guest(live_server)
    session_began(0)
    post = poster(live_server, token)
    post("/tables/classic/bets", {"spot": 1, "chip": 500})
    assert {"double", "split"} <= set(post("/tables/classic/deal")["legal_actions"])
    page, problems = page_of(browser, token, viewport)
    page.goto(f"{live_server.url}/#/table/classic")
    double, split = page.locator("button[data-action='double']"), page.locator("button[data-action='split']")
    expect(double).to_be_enabled()
    expect(split).to_be_enabled()
    session_began(57)  # the limit is three seconds away
    come_back(page)
    expect(double).to_be_disabled(timeout=20000)
    why = "Your session time limit is reached: the round plays on, but no new stake is taken (DOUBLE, SPLIT)."
    expect(page.locator("#no-new-stakes")).to_have_text(f" · {why}")
    expect(page.locator("#no-new-stakes")).to_be_visible()
    expect(double).to_have_attribute("title", why)
    expect(split).to_be_disabled()
    expect(split).to_have_attribute("title", why)
    expect(page.locator("button[data-action='stand']")).to_be_enabled()  # the round plays on
    shot(page, f"leftover-session-limit-mid-round-{viewport['width']}")
    page.locator("button[data-action='stand']").click()
    expect(page.locator("#result")).to_be_visible()
    close(page, problems)


# ------------------------------------------------------------------ 3. REBET the balance does not cover
@pytest.mark.parametrize(("table", "stake", "label"), [("classic", 2500, "REBET"), ("single-deck", 10000, "SAME BET")])
def test_rebet_is_offered_only_while_the_balance_covers_it(browser: Any, live_server: LiveServer, table: str,
                                                           stake: int, label: str) -> None:
    """Before, REBET (single-deck's SAME BET) was offered whenever there were last bets, and refused "The balance does
    not cover the previous round's bets."; now the slip's ``rebet_total`` is compared with the balance."""
    live_server.service.stacked.append(["TS", "TH", "6D", "9C", "2C", "3D"])
    token, name = guest_token(live_server)
    post = poster(live_server, token)
    post(f"/tables/{table}/bets", {"spot": 1, "chip": stake})
    round_id = post(f"/tables/{table}/deal")["id"]
    post(f"/rounds/{round_id}/actions", {"action": "stand"})
    currency = "GBP" if table == "single-deck" else "USD"
    balance = httpx.get(live_server.url + "/me", headers={"Authorization": f"Bearer {token}"}).json()["balances"]
    operator = poster(live_server, OPERATOR)
    operator("/admin/debit", {"player": name, "currency": currency, "amount": balance[currency] - stake // 2})
    page, problems = page_of(browser, token, DESKTOP)
    open_table(page, live_server, table)  # half the last bets left: above the table's minimum, below REBET's
    expect(page.locator("#deal")).to_be_disabled()
    expect(page.locator("#rebet")).to_have_count(0)
    expect(page.locator("button.chip:not([disabled])").first).to_be_visible()  # the chips it covers
    operator("/admin/credit", {"player": name, "currency": currency, "amount": stake})
    come_back(page)
    expect(page.locator("#rebet")).to_contain_text(label)
    expect(page.locator("#rebet")).to_be_enabled()
    close(page, problems)


# ------------------------------------------------------------------ 4. BALANCE after a refusal caused elsewhere
def test_a_refusal_after_a_debit_elsewhere_shows_the_servers_balance(browser: Any, live_server: LiveServer) -> None:
    """$100 on the slip, then $850 taken from the balance elsewhere: x2, still lit, is refused. Before, BALANCE went on
    showing $900.00 until the next read; now the refusal's table is read again."""
    page, name, problems = table_page(browser, live_server, "classic", viewport=DESKTOP)
    chip(page, 10000)
    bet(page)
    expect(page.locator("#balance strong")).to_have_text("$900.00")
    poster(live_server, OPERATOR)("/admin/debit", {"player": name, "currency": "USD", "amount": 85000})
    page.locator("#double-bets").click()
    expect(page.locator("#announce")).to_have_text("Doubling every bet needs $200.00 but the balance is $150.00.")
    expect(page.locator("#balance strong")).to_have_text("$50.00")
    expect(page.locator("#who")).to_contain_text("$50.00 ($100.00 on the table)")
    expect(page.locator("#double-bets")).to_be_disabled()
    expect(page.locator("#announce")).to_have_text("Doubling every bet needs $200.00 but the balance is $150.00.")
    close(page, problems)


# ------------------------------------------------------------------ 7. the header's currencies
def test_every_currency_in_the_header_is_shown_whole_on_a_narrow_desktop(browser: Any,
                                                                          live_server: LiveServer) -> None:
    """Before, at 1150 px the header cut the third currency off behind an ellipsis."""
    account = {"name": "maximilian-longname", "password": "correct horse"}
    assert httpx.post(f"{live_server.url}/auth/register", json=account).status_code == 201
    token = httpx.post(f"{live_server.url}/auth/login", json=account).json()["token"]
    page, problems = page_of(browser, token, DESKTOP)
    open_table(page, live_server, "classic")
    chip(page, 2500)
    bet(page)  # the longest header: "(… on the table)" beside the dollars
    for width in (1000, 1150, 1280):
        page.set_viewport_size({"width": width, "height": 900})
        wallets = page.locator("#who .wallet")
        expect(wallets).to_have_count(3)
        expect(wallets.nth(0)).to_have_text("$975.00 ($25.00 on the table)")
        expect(wallets.nth(1)).to_have_text("£1,000.00")
        expect(wallets.nth(2)).to_have_text("€1,000.00")
        shot(page, f"leftover-header-{width}")
        boxes = page.evaluate("""() => {
          const who = document.getElementById('who');
          const box = (node) => { const r = node.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
          return { who: box(who), clipped: who.scrollWidth > who.clientWidth,
                   wallets: [...who.querySelectorAll('.wallet')].map(box) };
        }""")
        assert not boxes["clipped"], (width, boxes)
        left, top, right, bottom = boxes["who"]
        assert left >= 0 and right <= width, (width, boxes)
        for x0, y0, x1, y1 in boxes["wallets"]:
            assert left - 1 <= x0 and x1 <= right + 1 and top - 1 <= y0 and y1 <= bottom + 1, (width, boxes)
    close(page, problems)


def test_a_history_row_lists_every_stake_so_that_it_adds_up_to_staked(browser: Any, live_server: LiveServer) -> None:
    """The hands' cards alone were listed beside Staked, which counts the side bets too: a round with a $5.00 hand
    and a $1.00 Perfect Pairs said $6.00 staked beside one hand (found by a trial of players). Each stake is listed
    now, with what became of it."""
    live_server.service.stacked.append(["TS", "6H", "9D", "7C", "8C", "5S"])  # no two cards of a rank: no pair
    token, _ = guest_token(live_server)
    post = poster(live_server, token)
    post("/tables/first-person/bets", {"spot": 1, "type": "main", "chip": 500})
    post("/tables/first-person/bets", {"spot": 1, "type": "perfect_pairs", "chip": 100})
    view = post("/tables/first-person/deal")
    while view["status"] == "playing":
        view = post(f"/rounds/{view['id']}/actions", {"action": "stand" if "stand" in view["legal_actions"]
                                                      else view["legal_actions"][-1]})
    page = signed_in_context(browser, token, viewport=DESKTOP).new_page()
    page.set_default_timeout(15000)
    page.goto(live_server.url + "/#/history")
    row = page.locator("table.history tbody tr").first
    expect(row.locator("td").nth(3)).to_have_text(re.compile(
        r"^(10|[2-9AJQK])[♠♥♦♣] (10|[2-9AJQK])[♠♥♦♣] \$5\.00 \((won|lost|push)\); Perfect Pairs \$1\.00 \(lost\)$"))
    expect(row.locator("td").nth(5)).to_have_text("$6.00")
    shot(page, "leftover-history-stakes")
    page.context.close()


def test_a_history_row_of_a_round_in_play_lists_the_insurance_it_took(browser: Any, live_server: LiveServer) -> None:
    """Single deck settles insurance with the hands: while its round is in play the row listed the hand alone beside
    a Staked of hand and insurance (a trial's leftover). The insurance taken is listed, its outcome to come."""
    live_server.service.stacked.append(["TS", "AH", "9D", "7C"])  # 19 against the dealer's Ace
    token, _ = guest_token(live_server)
    post = poster(live_server, token)
    post("/tables/single-deck/bets", {"spot": 1, "type": "main", "chip": 2500})
    round_id = post("/tables/single-deck/deal")["id"]
    assert post(f"/rounds/{round_id}/actions", {"action": "insurance"})["status"] == "playing"
    page = signed_in_context(browser, token, viewport=DESKTOP).new_page()
    page.set_default_timeout(15000)
    page.goto(live_server.url + "/#/history")
    row = page.locator("table.history tbody tr").first
    expect(row.locator("td").nth(2)).to_have_text("in play")
    expect(row.locator("td").nth(3)).to_have_text("10♠ 9♦ £25.00 (…); Insurance £12.50 (…)")
    expect(row.locator("td").nth(5)).to_have_text("£37.50")
    page.context.close()


@pytest.mark.parametrize("motion", ["no-preference", "reduce"])
def test_the_decisions_wait_for_the_deal_to_land(browser: Any, live_server: LiveServer, motion: str) -> None:
    """The decisions came up while the cards were still flying in: a second D (DEAL, then DOUBLE) or a second click
    where DEAL had been took a decision on cards not yet seen (a trial's leftover). They are drawn at once, and
    pressable once the last card lies in place; a key pressed before is dropped, as the terminal drops it. With
    reduced motion too: the cards are in place at once, and D pressed twice doubled 4 rounds in 5 (a trial)."""
    live_server.service.stacked.append(["5S", "6H", "6D", "9C", "TS"])  # 11 against a 6: DOUBLE is open
    page, _, problems = table_page(browser, live_server, "classic", reduced_motion=motion)
    chip(page, 500)
    bet(page, 1)
    # Where the decisions are first drawn (an observer's callback runs before any timer of the page's): whether each
    # is pressable, and DOUBLE's key pressed then, while the cards fly in (their motion lasts about 450 ms). Done in
    # the page, so that a loaded machine's delay between the test and the browser cannot land the key afterwards.
    page.evaluate("""() => {
      const observer = new MutationObserver(() => {
        const buttons = [...document.querySelectorAll('#action-bar [data-action]')];
        if (!buttons.length) return;
        observer.disconnect();
        window.firstDrawn = buttons.map((button) => button.disabled);
        document.dispatchEvent(new KeyboardEvent('keydown', { key: 'd', bubbles: true }));
      });
      observer.observe(document.body, { childList: true, subtree: true });
    }""")
    page.keyboard.press("d")  # DEAL
    double = page.locator("button[data-action='double']")
    expect(double).to_be_enabled()
    drawn = page.evaluate("window.firstDrawn")
    assert drawn and all(drawn), drawn
    expect(page.locator("#action-bar button:focus")).to_have_count(1)  # the focus DEAL had went to the decisions
    expect(page.locator("#total-bet strong")).to_have_text("$5.00")  # the key was dropped: no double taken
    expect(page.locator(".hand.active .card")).to_have_count(2)
    page.keyboard.press("s")
    expect(page.locator("#result")).to_be_visible()
    page.context.close()
    assert not problems, problems


def test_a_page_holding_a_stale_token_at_an_address_past_the_limit_of_wrong_ones_shows_the_lobby(
        browser: Any, live_server: LiveServer) -> None:
    """Thirty wrong tokens from the player's address (someone else's guessing behind the same address): the page
    that holds a token no longer taken is answered 429 "token_refused", drops it and shows the lobby to sign in from.
    Before, it showed that line alone for the minute, with no tables and no sign-in (a trial of players)."""
    import httpx

    from twentyone.server.guards import BAD_TOKENS_PER_MINUTE

    for attempt in range(BAD_TOKENS_PER_MINUTE):
        assert httpx.get(live_server.url + "/me", headers={
            "Authorization": f"Bearer guess-{attempt:04d}-" + "x" * 20}).status_code == 401
    page = signed_in_context(browser, "stale-token-" + "x" * 20, viewport=DESKTOP).new_page()
    page.set_default_timeout(15000)
    problems = watch_console(page)
    page.goto(live_server.url + "/")
    expect(page.get_by_role("button", name=re.compile("Play as guest", re.IGNORECASE))).to_be_visible()
    expect(page.locator("#announce")).to_have_text("")
    assert page.evaluate("localStorage.getItem('twentyone.token')") is None
    assert [problem for problem in problems if "429" not in problem] == [], problems
    page.context.close()


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_a_rounds_result_is_in_view_as_it_ends_and_short_enough_on_a_phone(
        browser: Any, live_server: LiveServer, viewport: dict[str, int]) -> None:
    """Five hands with a side bet each, played to the end on a phone: the page had followed the active hand down, so
    the result banner was above the screen when the round ended, and its ten lines, one a row, pushed the felt below
    the bar (trials of players). The banner is brought into view as the round ends, and on a phone each hand's line
    is short enough to share a row; every result is in it."""
    # Five pairs for the dealer's 9: 5,5 6,6 7,7 8,8 9,9 against 9 then 8 (17); every Perfect Pairs wins.
    live_server.service.stacked.append(["5S", "6S", "7S", "8S", "9S", "9H", "5D", "6C", "7D", "8C", "9C", "8H"])
    page, _, problems = table_page(browser, live_server, "first-person", viewport)
    chip(page, 100)
    for spot in range(1, 6):
        bet(page, spot)
        bet(page, spot, "perfect_pairs")
    page.locator("#deal").click()
    for turn in range(5):
        stand = page.locator("button[data-action='stand']")
        expect(stand).to_be_enabled()
        if turn == 4 and viewport is PHONE:  # the page follows the last hand down, as a player scrolls to it
            page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
            assert page.evaluate("window.scrollY") > 0
        stand.click()
    banner = page.locator("#result")
    expect(banner).to_contain_text("Perfect Pairs (hand 5): colored pair, +$12.00")
    lines = banner.locator("li")
    expect(lines).to_have_count(10)
    expect(lines.first).to_have_text("Hand 1: Lose −$1.00")
    expect(lines.nth(4)).to_have_text("Hand 5: Win +$1.00")
    box = banner.bounding_box()
    assert box is not None and box["y"] >= -1 and box["y"] + box["height"] <= viewport["height"], box
    hand_rows = {round(line.bounding_box()["y"]) for line in lines.all()[:5]}  # type: ignore[index]
    assert len(hand_rows) <= 3, hand_rows  # two or three hands to a row, even on a phone
    if viewport is PHONE:
        shot(page, "phone-five-hands-result")
    close(page, problems)


def test_a_split_circles_hands_read_in_order_on_a_phone(browser: Any, live_server: LiveServer) -> None:
    """Five hands on a phone, the second split: its hands were stacked in one column, "Hand 2.1" alone above Hand 1
    (a trial of players). Each dealt hand now takes its own place in the rows, which read 1, 2.1, 2.2, 3, 4, 5."""
    live_server.service.stacked.append(["TS", "8S", "9S", "TD", "9H", "6H", "7S", "8D", "8C", "7D", "8H", "TC",
                                        "3C", "2C", "5C", "4C", "5D"])
    page, _, problems = table_page(browser, live_server, "first-person", PHONE)
    chip(page, 100)
    for spot in range(1, 6):
        bet(page, spot)
    page.locator("#deal").click()
    for action in ("stand", "split"):
        button = page.locator(f"button[data-action='{action}']")
        expect(button).to_be_enabled()
        button.click()
    hands = page.locator(".hands.mine .hand")
    expect(hands).to_have_count(6)
    # By row (a row's hands share their foot: the rows align them at the end), then left to right.
    placed = sorted((round(box["y"] + box["height"]), round(box["x"]), hand.locator(".owner").inner_text())
                    for hand in hands.all() if (box := hand.bounding_box()) is not None)
    assert [name for _, _, name in placed] == ["Hand 1", "Hand 2.1", "Hand 2.2", "Hand 3", "Hand 4", "Hand 5"], placed
    shot(page, "phone-split-hands-in-order")
    close(page, problems)


def test_each_page_opens_at_its_top_with_the_focus_on_it(browser: Any, live_server: LiveServer) -> None:
    """On a phone the landing page sat 36 px down (focusing the view scrolled it under the header), the lobby stayed
    there after signing in with the focus on nothing, and a page opened from a scrolled one stayed as far down."""
    context = browser.new_context(viewport=PHONE)
    page = context.new_page()
    problems = watch_console(page)
    page.goto(f"{live_server.url}/")
    expect(page.get_by_role("button", name="Play as guest")).to_be_visible()
    assert page.evaluate("scrollY") == 0
    page.get_by_role("button", name="Play as guest").click()
    expect(page.locator("#lobby-who")).to_contain_text("guest-")
    assert page.evaluate("[scrollY, document.activeElement.id]") == [0, "view"]
    assert page.evaluate("document.documentElement.scrollHeight > innerHeight")  # the lobby is longer than a phone
    page.evaluate("scrollTo(0, document.documentElement.scrollHeight)")
    page.wait_for_function("scrollY > 100")
    page.evaluate("location.hash = '#/history'")
    expect(page.get_by_role("heading", name="Game history")).to_be_visible()
    assert page.evaluate("[scrollY, document.activeElement.id]") == [0, "view"]
    context.close()
    assert not problems, problems
