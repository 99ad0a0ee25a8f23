"""Page defects a trial of players found, each fixed: the house rules nowhere on the page, no hint on the insurance
offer, a lost insurance unsaid after the peek, chip stacks that misstated their amounts, results under a phone's
action bar, no CLEAR while betting, hands named by their order rather than their spot, and the session limit's time
in UTC alone."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect
from web_helpers import (
    ARTIFACTS,
    DESKTOP,
    PHONE,
    LiveServer,
    bet,
    chip,
    guest_token,
    limited_guest,
    open_table,
    shot,
    signed_in_context,
    table_page,
    watch_console,
)

from twentyone.core.house_rules import house_rules
from twentyone.variants import builtin_rules


def deal(page: Any) -> None:
    page.locator("#deal").click()
    expect(page.locator("#action-bar [data-action], #result:not([hidden])").first).to_be_visible()


def close(page: Any, problems: list[str]) -> None:
    page.context.close()
    assert not problems, problems


# ------------------------------------------------------------------ 1. the house rules
# Each game's rules as its sheet (DESIGN.md's seeds/) states them: a sentence of house_rules says each.
SHEETS = {
    "first-person": ["Played with 8 decks, shuffled before every round.", "stands on every 17, soft 17 included",
                     "checks for blackjack under an Ace only; under a ten or a face card, a dealer blackjack found at "
                     "the end takes doubles and splits too", "Double on any first two cards.",
                     "No double after a split.", "once: no resplitting", "Split aces get one card each.",
                     "No surrender.", "pays 2 to 1, even on a blackjack", "Cash out:"],
    "classic": ["Played with 6 decks", "checks for blackjack under an Ace only", "Double after a split too.",
                "once: no resplitting", "a blackjack is offered even money (1 to 1) instead"],
    "single-deck": ["Played with 1 deck, shuffled before every round.", "No hole card (the European rule)",
                    "Double on first two cards totalling 9, 10 or 11 only.", "No double after a split.",
                    "once: no resplitting", "No surrender.", "even money (1 to 1)"],
    "multiplayer": ["Played with 8 decks", "Up to 7 players", "first card is dealt face down, the second face up",
                    "No double after a split.", "Split hands, aces included, may be hit like any other."],
    "power": ["8 decks with every 9 and 10 removed (352 cards)", "Common draw:",
              "checks for blackjack under an Ace, a Jack, a Queen or a King.",
              "Double, triple or quadruple on any first two cards.", "Double, triple or quadruple after a split too.",
              "once: no resplitting", "Split aces get one card each."],
}
NOT_SAID = {"first-person": ["Double after a split too", "even money"], "single-deck": ["Double on any", "Cash out"],
            "classic": ["Cash out", "Common draw"], "power": ["Double on any first two cards.", "No double after"],
            "multiplayer": ["Split aces get one card each", "Cash out"]}


@pytest.mark.parametrize("variant", list(SHEETS))
def test_house_rules_say_what_each_games_sheet_says(variant: str) -> None:
    said = " ".join(house_rules(builtin_rules(variant)))
    for words in SHEETS[variant]:
        assert words in said, (variant, words, said)
    for words in NOT_SAID[variant]:
        assert words not in said, (variant, words, said)


@pytest.mark.parametrize(("table", "viewport"), [("first-person", DESKTOP), ("single-deck", PHONE), ("power", DESKTOP)])
def test_the_rules_panel_shows_the_games_rules_beside_the_payouts(browser: Any, live_server: LiveServer, table: str,
                                                                   viewport: dict[str, int]) -> None:
    """Before, the PAYOUTS panel listed payouts only: a player learnt that single deck doubles on 9 to 11 alone, or
    that a ten-up dealer blackjack takes doubles, from a refusal or a loss."""
    rules = house_rules(builtin_rules(live_server.service.table(table).variant))
    page, _, problems = table_page(browser, live_server, table, viewport)
    panel = page.locator("#rules")
    expect(panel.locator("summary")).to_have_text("RULES")
    expect(panel.locator("li").first).not_to_be_visible()  # collapsed, as BET LIMITS and PAYOUTS are
    panel.locator("summary").click()
    expect(panel.locator("li")).to_have_text(rules)
    assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
    page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    shot(page, f"player-trial-rules-{table}-{viewport['width']}")
    close(page, problems)


# ------------------------------------------------------------------ 2. a hint at the insurance offer
def hinted_page(browser: Any, server: LiveServer, table: str, viewport: dict[str, int]) -> tuple[Any, str, list[str]]:
    """A new guest with strategy hints on, at ``table``: (page, token, console problems)."""
    token, _ = guest_token(server)
    httpx.put(server.url + "/me/settings", json={"hints": True},
              headers={"Authorization": f"Bearer {token}", "Idempotency-Key": "hints"}).raise_for_status()
    page = signed_in_context(browser, token, viewport=viewport).new_page()
    page.set_default_timeout(15000)
    problems = watch_console(page)
    open_table(page, server, table)
    return page, token, problems


def server_hint(server: LiveServer, token: str, table: str) -> dict[str, str]:
    """The server's hint for the pending decision, each action's EV as the page prints it."""
    headers = {"Authorization": f"Bearer {token}"}
    round_id = httpx.get(f"{server.url}/tables/{table}", headers=headers).json()["round"]["id"]
    hint = httpx.get(f"{server.url}/rounds/{round_id}/hint", headers=headers).json()
    return {a["action"]: f"EV {'+' if a['ev'] >= 0 else ''}{a['ev']:.3f}" for a in hint["actions"]}


@pytest.mark.parametrize("viewport", [pytest.param(DESKTOP, id="desktop"), pytest.param(PHONE, id="phone")])
def test_the_insurance_offer_shows_the_hints_ev_on_yes_and_no(browser: Any, live_server: LiveServer,
                                                               viewport: dict[str, int]) -> None:
    """With hints on, the play buttons showed "EV +0.123" and the offer's YES and NO showed nothing, though the server
    answers the hint during the offer (found by a trial of players)."""
    live_server.service.stacked.append(["TS", "AH", "9D", "7C", "5S"])  # 19 against an Ace; no dealer blackjack
    page, token, problems = hinted_page(browser, live_server, "classic", viewport)
    chip(page, 100)
    bet(page)
    deal(page)
    expect(page.locator(".offer .offer-one")).to_have_text("Hand 1: insurance for $0.50")
    evs = server_hint(live_server, token, "classic")
    assert set(evs) == {"insurance", "no-insurance"}, evs
    expect(page.locator(".offer button[data-action='insurance'] .ev")).to_have_text(evs["insurance"])
    expect(page.locator(".offer button[data-action='no-insurance'] .ev")).to_have_text(evs["no-insurance"])
    expect(page.locator(".offer button.best")).to_have_attribute("data-action", "no-insurance")  # insurance: EV < 0
    expect(page.locator(".offer button.best")).to_be_enabled()  # the cards landed
    shot(page, f"player-trial-insurance-hint-{viewport['width']}")
    page.locator(".offer button[data-action='no-insurance']").click()
    expect(page.locator("button[data-action='stand'] .ev")).to_be_visible()  # the play's hints, as before
    close(page, problems)


def test_each_hands_insurance_row_shows_the_ev_its_hint_has(browser: Any, live_server: LiveServer) -> None:
    """Several hands: each row prints its hand's EVs from the hint's `offers` (insurance, paid on the one hole card, is
    worth the same at both; before, the second row printed none); YES TO ALL and NO TO ALL print none."""
    live_server.service.stacked.append(["TS", "5S", "AH", "9D", "6D", "7C", "TH", "5H"])
    page, token, problems = hinted_page(browser, live_server, "first-person", DESKTOP)
    chip(page, 100)
    bet(page, 1)
    bet(page, 2)
    deal(page)
    rows = page.locator(".offer .offer-row")
    expect(rows).to_have_count(2)
    evs = server_hint(live_server, token, "first-person")
    expect(rows.nth(0).locator(".ev")).to_have_text(f"{evs['insurance']} yes, {evs['no-insurance']} no")
    expect(rows.nth(1).locator(".ev")).to_have_text(f"{evs['insurance']} yes, {evs['no-insurance']} no")
    expect(page.locator(".offer .decisions .ev")).to_have_count(0)
    expect(page.locator("#offer-confirm")).to_be_enabled()
    shot(page, "player-trial-insurance-rows-hint-1366")
    close(page, problems)


# ------------------------------------------------------------------ 3. a lost insurance said after the peek
def test_insurance_lost_at_the_peek_is_said_while_the_hand_plays_on(browser: Any, live_server: LiveServer) -> None:
    """The dealer peeks under the Ace and has no blackjack: the insurance is lost there and then. Before, play went on
    silently and the loss showed only in the end result."""
    live_server.service.stacked.append(["TS", "AH", "9D", "7C", "5S"])  # 19 against an Ace, a 7 under it
    page, _, problems = table_page(browser, live_server, "classic")
    chip(page, 500)
    bet(page)
    chip(page, 100)
    bet(page)
    deal(page)
    expect(page.locator(".offer .offer-one")).to_have_text("Hand 1: insurance for $3.00")
    page.locator(".offer button[data-action='insurance']").click()
    expect(page.locator("button[data-action='stand']")).to_be_enabled()
    expect(page.locator("#side-results")).to_have_text("Insurance lost: the dealer has no blackjack, \u2212$3.00")
    shot(page, "player-trial-insurance-lost")
    page.locator("button[data-action='stand']").click()
    expect(page.locator("#result")).to_contain_text("Insurance: lost, \u2212$3.00")
    expect(page.locator("#side-results")).to_have_count(0)  # the result says it now
    close(page, problems)


# ------------------------------------------------------------------ 4. chip stacks that tell their amounts
FIRST_PERSON_CHIPS = [100, 500, 2500, 10000, 50000]


def stacks_on_the_felt(page: Any) -> list[dict[str, Any]]:
    """Every chip stack drawn: its amount, its discs' values bottom up and labels, and the text of what holds it."""
    return list(page.evaluate("""() => [...document.querySelectorAll('.felt .stack')].filter((s) => s.children.length)
        .map((stack) => ({ amount: Number(stack.dataset.amount), title: stack.title,
                           values: [...stack.children].map((disc) => Number(disc.dataset.value)),
                           labels: [...stack.children].map((disc) => disc.textContent),
                           beside: stack.parentElement.textContent }))"""))


def assert_stacks_tell_their_amounts(page: Any) -> None:
    stacks = stacks_on_the_felt(page)
    assert stacks
    for stack in stacks:
        values = stack["values"]
        assert len(values) <= 5 and values == sorted(values, reverse=True), stack  # the largest chips, at the bottom
        assert sum(values) <= stack["amount"], stack  # never more than it holds
        if len(values) < 5:
            assert sum(values) == stack["amount"], stack  # every chip drawn where the cap allows
        assert stack["title"] and stack["title"] in stack["beside"], stack  # the exact amount, written by it
        assert len(values) == 1 or set(stack["labels"]) == {""}, stack  # no one chip's value names a stack


def test_chip_stacks_draw_the_largest_chips_and_write_the_exact_amount(browser: Any, live_server: LiveServer) -> None:
    """Five discs at most: before, the last five (the smallest) were drawn, and the top one named its chip alone. A
    $37.50 payout read $5, $5, $1, $1 and a blank disc; a $6 bet a "$1" chip; and the payout's stack had no amount
    written by it."""
    page, _, problems = table_page(browser, live_server, "first-person")
    drawn = page.evaluate("""async (chips) => {
      const { chipStack } = await import('/static/chips.js');
      return [3750, 600, 5000, 2500, 150].map((amount) => [...chipStack(amount, chips, 'USD').children]
        .map((disc) => [Number(disc.dataset.value), disc.textContent]));
    }""", FIRST_PERSON_CHIPS)
    assert drawn == [[[2500, ""], [500, ""], [500, ""], [100, ""], [100, ""]],  # $37 of $37.50 in five discs
                     [[500, ""], [100, ""]], [[2500, ""], [2500, ""]], [[2500, "$25"]], [[100, ""], [50, ""]]]
    # Hand 1 a blackjack against a 9: paid $37.50 on $25; hand 2's 17 stands, and the dealer's 16 draws to 18.
    live_server.service.stacked.append(["AS", "9H", "9C", "KS", "8S", "7C", "2D"])
    chip(page, 2500)
    bet(page, 1)
    chip(page, 500)
    bet(page, 2)
    chip(page, 100)
    bet(page, 2)
    assert_stacks_tell_their_amounts(page)  # $25 on spot 1, $6 on spot 2
    expect(page.locator("button.circle[data-spot='2'] .amount")).to_have_text("$6.00")
    deal(page)
    page.locator("button[data-action='stand']").click()
    expect(page.locator(".hands.mine .outcome").first).to_have_text("BLACKJACK +$37.50")
    expect(page.locator(".hands.mine .hand").first.locator(".paid-amount")).to_have_text("+$37.50")
    assert_stacks_tell_their_amounts(page)
    page.wait_for_timeout(1000)  # the chips' motion
    shot(page, "player-trial-chip-stacks-1366")
    close(page, problems)


# ------------------------------------------------------------------ 5. a phone's results above the action bar
def test_a_phones_results_scroll_into_view_above_the_action_bar(browser: Any, live_server: LiveServer) -> None:
    """Three hands of four cards: Hand 3 wraps to a second row on a phone. Before, the page's content was padded for a
    bar of 9.5rem, shorter than the bar's own height there: Hand 3's "WIN +$25.00", scrolled into view, stayed under
    the bar, and BET LIMITS and PAYOUTS showed through it (it was translucent)."""
    live_server.service.stacked.append(["2S", "2H", "2D", "6C", "3S", "3H", "3D", "TC",  # 5s against 6 + 10
                                        "4S", "5S", "4H", "5H", "4D", "5D", "KC"])  # each hits to 14; the dealer busts
    page, _, problems = table_page(browser, live_server, "first-person", PHONE)
    chip(page, 2500)
    for spot in (1, 2, 3):
        bet(page, spot)
    deal(page)
    for hand in (1, 2, 3):
        for cards, action in ((3, "hit"), (4, "hit"), (4, "stand")):
            expect(page.locator(".hand.active")).to_have_attribute("data-seat", str(hand))
            page.locator(f"button[data-action='{action}']").click()
            expect(page.locator(f".hands.mine .hand[data-seat='{hand}'] .card")).to_have_count(cards)
    expect(page.locator("#result")).to_contain_text("Hand 3: Win +$25.00")
    outcomes = page.locator(".hands.mine .outcome")
    expect(outcomes).to_have_count(3)
    page.wait_for_timeout(700)  # the chips' motion
    for index in range(3):
        place = page.evaluate("""(index) => {
            const outcome = document.querySelectorAll('.hands.mine .outcome')[index];
            outcome.scrollIntoView({ block: 'nearest' });
            const bar = document.getElementById('action-bar').getBoundingClientRect();
            return { bottom: outcome.getBoundingClientRect().bottom, bar: bar.top };
        }""", index)
        assert place["bottom"] <= place["bar"] + 0.5, (index + 1, place)
    page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
    ends = page.evaluate("""() => ({ felt: document.querySelector('.felt').getBoundingClientRect().bottom,
        bar: document.getElementById('action-bar').getBoundingClientRect().top,
        background: getComputedStyle(document.getElementById('action-bar')).backgroundColor })""")
    assert ends["felt"] <= ends["bar"], ends  # the felt's content ends above the bar
    assert ends["background"].startswith("rgb("), ends  # opaque: nothing shows through
    page.screenshot(path=str(ARTIFACTS / "player-trial-phone-three-hands-bottom.png"))  # the screen, not the page
    close(page, problems)


# ------------------------------------------------------------------ 6. CLEAR while betting
@pytest.mark.parametrize("viewport", [pytest.param(DESKTOP, id="desktop"), pytest.param(PHONE, id="phone")])
def test_clear_takes_every_bet_on_the_slip_back_at_once(browser: Any, live_server: LiveServer,
                                                          viewport: dict[str, int]) -> None:
    """Before, the betting bar had UNDO alone: five spots and side bets took a press per chip to take back."""
    page, _, problems = table_page(browser, live_server, "first-person", viewport)
    expect(page.locator("#clear")).to_have_count(0)  # nothing on the slip
    chip(page, 500)
    for spot in (1, 2, 3):
        bet(page, spot)
    bet(page, 2, side="perfect_pairs")
    expect(page.locator("#total-bet strong")).to_have_text("$20.00")
    expect(page.locator("#clear")).to_be_enabled()
    shot(page, f"player-trial-clear-{viewport['width']}")
    page.locator("#clear").click()
    expect(page.locator("#total-bet strong")).to_have_text("$0.00")
    expect(page.locator("#clear")).to_have_count(0)
    expect(page.locator("#undo")).to_be_disabled()
    expect(page.locator("button.circle.has-bet, button.side.has-bet")).to_have_count(0)
    close(page, problems)


def test_no_clear_once_the_bets_are_in_a_forming_round(browser: Any, live_server: LiveServer) -> None:
    """A shared table: bets in the round being formed are in, and neither UNDO nor CLEAR is offered, as before."""
    page, _, problems = table_page(browser, live_server, "multiplayer")
    chip(page, 100)
    bet(page)
    expect(page.locator("#clear")).to_be_enabled()
    page.locator("#deal").click()
    expect(page.locator("#bet-status")).to_contain_text("Your bets are in")
    expect(page.locator("#clear, #undo")).to_have_count(0)
    close(page, problems)


# ------------------------------------------------------------------ 7. hands named by their spots
def test_a_hand_is_named_by_the_spot_it_was_bet_on_throughout(browser: Any, live_server: LiveServer) -> None:
    """Bets on the "Hand 2" and "Hand 4" circles: before, they were dealt as "Hand 1" and "Hand 2" (the offer's
    rows, the felt, the side bet's result and the banner), so a player could not tell which bet was which."""
    live_server.service.stacked.append(["TS", "8S", "AH", "9D", "8C", "7C"])  # 19 and 8-8 against A-7
    page, _, problems = table_page(browser, live_server, "first-person")
    chip(page, 100)
    bet(page, 2)
    bet(page, 4)
    bet(page, 4, side="perfect_pairs")
    deal(page)
    expect(page.locator(".offer .offer-row > span:first-child")).to_have_text(["Hand 2: insurance for $0.50",
                                                                              "Hand 4: insurance for $0.50"])
    page.locator("[data-focus='offer-no']").click()
    expect(page.locator(".hands.mine .hand .owner")).to_have_text(["Hand 2", "Hand 4"])
    expect(page.locator("#side-results")).to_have_text("Perfect Pairs (hand 4): colored pair, +$12.00")
    page.locator("button[data-action='stand']").click()
    expect(page.locator(".hand.active")).to_have_attribute("aria-label", "Your hand 4")
    page.locator("button[data-action='stand']").click()
    expect(page.locator("#result li")).to_have_text(["Hand 2: Win +$1.00", "Hand 4: Lose \u2212$1.00",
                                                     "Perfect Pairs (hand 4): colored pair, +$12.00"])
    expect(page.locator(".hands.mine .hand .owner")).to_have_text(["Hand 2", "Hand 4"])
    shot(page, "player-trial-hands-by-spot")
    close(page, problems)


def test_a_lone_bet_on_spot_3_is_hand_3_and_same_bet_deals_it_as_hand_3_again(browser: Any,
                                                                                   live_server: LiveServer) -> None:
    """Single deck's SAME BET deals the last round's bets again: their spots are the last round's."""
    live_server.service.stacked.append(["TS", "6H", "9D", "7C", "5C"])  # 19 against a 6, who draws to 18
    live_server.service.stacked.append(["TH", "5H", "8D"])  # 18 against a 5: a decision
    page, _, problems = table_page(browser, live_server, "single-deck", PHONE)
    chip(page, 2500)
    bet(page, 3)
    deal(page)
    expect(page.locator(".hands.mine .hand .owner")).to_have_text("Hand 3")
    page.locator("button[data-action='stand']").click()
    expect(page.locator("#result li").first).to_contain_text("Hand 3: ")
    page.locator("#rebet").click()  # SAME BET
    expect(page.locator("button[data-action='stand']")).to_be_enabled()
    expect(page.locator(".hands.mine .hand .owner")).to_have_text("Hand 3")
    close(page, problems)


# ------------------------------------------------------------------ 8. the session limit in the player's own time
def test_the_session_limit_says_when_play_resumes_in_the_players_own_time(browser: Any,
                                                                           live_server: LiveServer) -> None:
    """A player in India (UTC+5:30): before, the limit's line gave the break's end in UTC alone, and the Responsible
    gaming page did not say the limit was reached at all."""
    token, session_began = limited_guest(live_server)
    session_began(2 * 60)  # the limit of a minute was reached a minute ago: the break runs
    me = httpx.get(live_server.url + "/me", headers={"Authorization": f"Bearer {token}"}).json()
    break_ends = datetime.fromisoformat(me["session"]["break_ends_at"])
    resumes = break_ends.astimezone(timezone(timedelta(hours=5, minutes=30)))
    utc_words = break_ends.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
    local = re.compile(rf"from {utc_words}\. That is (\w+ \d+ \w+, )?0?{resumes.hour}:{resumes:%M} your time\.")
    page = signed_in_context(browser, token, viewport=PHONE, timezone_id="Asia/Kolkata", locale="en-GB").new_page()
    page.set_default_timeout(15000)
    problems = watch_console(page)
    page.goto(f"{live_server.url}/#/table/classic")  # no DEAL to wait for (open_table): the break's line instead
    expect(page.locator("#bet-status")).to_have_text(local)
    expect(page.locator("#bet-status")).to_contain_text("Your session time limit of 1 minute is reached")
    page.get_by_role("link", name="Responsible gaming").click()
    expect(page.get_by_role("heading", name="Responsible gaming")).to_be_visible()
    expect(page.locator("#session-over")).to_have_text(local)
    expect(page.locator("#session-over")).to_contain_text("Your session time limit of 1 minute is reached: you can "
                                                          "play again after a break of 30 minutes")
    shot(page, "player-trial-session-over-limits-390")
    close(page, problems)


# ------------------------------------------------------------------ the daily loss limit mid-round
def dealt_under_a_limit(browser: Any, server: LiveServer, shoe: list[str], limit: int, chip_amount: int) -> tuple[
        Any, list[str]]:
    """A guest with hints on and a daily loss limit of ``limit``, dealt ``shoe`` at classic on one ``chip_amount``
    bet: (page, console problems)."""
    server.service.stacked.append(shoe)
    page, token, problems = hinted_page(browser, server, "classic", DESKTOP)
    httpx.put(server.url + "/me/limits", json={"daily_loss_limit": limit},
              headers={"Authorization": f"Bearer {token}", "Idempotency-Key": "limit"}).raise_for_status()
    chip(page, chip_amount)
    bet(page)
    deal(page)
    return page, problems


def test_a_split_past_the_daily_loss_limit_is_greyed_with_its_reason_and_not_hinted(browser: Any,
                                                                                     live_server: LiveServer) -> None:
    """$30 a day to lose and $25 on 8,8 against a 6: SPLIT and DOUBLE were lit, SPLIT was marked best by the hint,
    and pressing it was refused (found by a trial of players). They are greyed with the limit's words, and the hint
    marks the best of what is left."""
    page, problems = dealt_under_a_limit(browser, live_server, ["8S", "6H", "8D", "TC", "3C"], 3000, 2500)
    for action in ("split", "double"):
        expect(page.locator(f"button[data-action='{action}']")).to_be_disabled()
    expect(page.locator("#no-new-stakes")).to_have_text(
        " · Your daily loss limit leaves $5.00 to stake today: DOUBLE, SPLIT would stake more.")
    expect(page.locator("button[data-action='stand']")).to_be_enabled()
    expect(page.locator("button.best")).to_have_attribute("data-action", re.compile("^(hit|stand)$"))
    shot(page, "player-trial-loss-limit-split")
    close(page, problems)


def test_insurance_past_the_daily_loss_limit_is_greyed_with_its_reason(browser: Any, live_server: LiveServer) -> None:
    """Insurance is a bet too (review): $6.00 a day to lose and $5.00 against an Ace leave $1.00, short of the $2.50
    insurance. YES is greyed with the limit's words; NO plays on."""
    page, problems = dealt_under_a_limit(browser, live_server, ["TS", "AH", "9D", "7C", "5S"], 600, 500)
    expect(page.locator("[data-focus='offer-no']")).to_be_enabled()
    expect(page.locator("[data-focus='offer-yes']")).to_be_disabled()
    expect(page.locator(".offer #no-new-stakes")).to_have_text(
        " · Your daily loss limit leaves $1.00 to stake today: INSURANCE would stake more.")
    page.locator("[data-focus='offer-no']").click()
    expect(page.locator("button[data-action='stand']")).to_be_enabled()
    close(page, problems)


def test_a_hands_insurance_can_be_chosen_beside_anothers_even_money(browser: Any, live_server: LiveServer) -> None:
    """Hand 1 a blackjack (even money), hand 2 a pair of nines (insurance), against an Ace: hand 2's choice was
    greyed, judged by the legal actions of the even money asked first (a trial of players). Each row is its own; the
    panel takes the focus on NO, where YES bought insurance on an Enter meant for DEAL."""
    live_server.service.stacked.append(["AS", "9H", "AH", "KD", "9D", "7C", "5S"])  # no blackjack under the Ace
    page, _, problems = table_page(browser, live_server, "classic")
    chip(page, 100)
    bet(page, 1)
    bet(page, 2)
    page.keyboard.press("d")
    insurance = page.locator("button[data-offer='2.1']")
    expect(insurance).to_be_enabled()
    expect(page.locator("[data-focus='offer-no']")).to_be_focused()
    insurance.click()
    expect(insurance).to_have_attribute("aria-pressed", "true")
    page.locator("#offer-confirm").click()
    # The dealer has no blackjack: hand 2's insurance is lost at the peek, and hand 2 plays on.
    expect(page.locator("#side-results")).to_contain_text("Insurance (hand 2) lost: the dealer has no blackjack")
    close(page, problems)


def test_a_replay_on_a_phone_is_brought_into_view(browser: Any, live_server: LiveServer) -> None:
    """On a phone the replay is drawn below every round's card, and pressing Replay seemed to do nothing (a trial of
    players): the page scrolls to it."""
    token, _ = guest_token(live_server)
    headers = {"Authorization": f"Bearer {token}"}
    for index in range(6):
        live_server.service.stacked.append(["TS", "6H", "9D", "TC", "8C"])
        for path, body in (("bets", {"spot": 1, "type": "main", "chip": 100}), ("deal", None)):
            httpx.post(f"{live_server.url}/tables/classic/{path}", json=body,
                       headers={**headers, "Idempotency-Key": f"r{index}{path}"}).raise_for_status()
        round_id = httpx.get(f"{live_server.url}/tables/classic", headers=headers).json()["round"]["id"]
        httpx.post(f"{live_server.url}/rounds/{round_id}/actions", json={"action": "stand"},
                   headers={**headers, "Idempotency-Key": f"r{index}stand"}).raise_for_status()
    page = signed_in_context(browser, token, viewport=PHONE).new_page()
    page.set_default_timeout(15000)
    problems = watch_console(page)
    page.goto(live_server.url + "/#/history")
    page.locator("button[data-replay]").first.click()
    expect(page.locator("#replay-steps")).to_be_visible()
    expect(page.locator("#replay h2")).to_be_in_viewport()
    close(page, problems)
