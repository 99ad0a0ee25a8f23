"""Leftovers of a trial of players, each fixed: a hand that took even money read "21"; the history and the replay
named hands by the round's seat ("seat 1") where the felt names them by their circle ("Hand 3"), and the history did
not say which hand a side bet was on; the slip took bets past the daily loss limit, which DEAL then refused whole;
insurance asked of several hands showed the hint's EVs on the pending hand's row alone; a self-exclusion's end was
given in UTC alone, and the loss limit as an amount with no currency."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from typing import Any

import httpx
from playwright.sync_api import expect
from web_helpers import (
    LiveServer,
    bet,
    chip,
    guest_token,
    open_table,
    shot,
    signed_in_context,
    table_page,
    watch_console,
)


def deal(page: Any) -> None:
    page.locator("#deal").click()
    expect(page.locator("#action-bar [data-action], #action-bar .offer, #result:not([hidden])").first).to_be_visible()


def guest_at_classic(browser: Any, server: LiveServer, path: str, body: dict[str, Any]) -> tuple[Any, list[str]]:
    """A new guest whose ``body`` is put to ``path`` first (``/me/limits``, ``/me/settings``), at classic: (page,
    console problems)."""
    token, _ = guest_token(server)
    httpx.put(server.url + path, json=body,
              headers={"Authorization": f"Bearer {token}", "Idempotency-Key": path}).raise_for_status()
    page = signed_in_context(browser, token).new_page()
    page.set_default_timeout(15000)
    problems = watch_console(page)
    open_table(page, server, "classic")
    return page, problems


def play_out(page: Any, actions: list[str]) -> None:
    """Press each decision in turn, each once it is offered, and wait for the round's result."""
    for action in actions:
        button = page.locator(f"button[data-action='{action}']")
        expect(button).to_be_enabled()
        button.click()
    expect(page.locator("#result")).to_be_visible()


def history_and_replay(page: Any, server: LiveServer) -> tuple[Any, list[str]]:
    """The newest history row's "Your bets" cell, and the lines of its replay."""
    page.goto(server.url + "/#/history")
    bets = page.locator("td[data-label='Your bets']").first
    page.locator("button[data-replay]").first.click()
    steps = page.locator("#replay ol.operations li")
    expect(steps.first).to_be_visible()
    return bets, steps.all_inner_texts()


def close(page: Any, problems: list[str], refused: str | None = None) -> None:
    """Close the page's context; no console problem but the one refusal (a status) the test expected."""
    page.context.close()
    left = [problem for problem in problems if refused is None or f"status of {refused}" not in problem]
    assert not left, left


def test_a_blackjack_that_took_even_money_reads_blackjack(browser: Any, live_server: LiveServer) -> None:
    """Even money is offered on a blackjack alone: the hand that took it read "21" beside EVEN MONEY."""
    live_server.service.stacked.append(["AS", "AH", "KD", "7C"])  # A,K against an Ace (no blackjack under it)
    page, _, problems = table_page(browser, live_server, "classic")
    chip(page, 100)
    bet(page)
    deal(page)
    page.locator("[data-focus='offer-yes']").click()
    expect(page.locator("#result")).to_be_visible()
    expect(page.locator(".hands.mine .hand .total")).to_have_text("Blackjack")
    expect(page.locator(".hands.mine .hand .outcome")).to_have_text("EVEN MONEY +$1.00")
    close(page, problems)


def test_the_history_and_the_replay_name_hands_by_their_circles(browser: Any, live_server: LiveServer) -> None:
    """Bets on circles 2 and 4, a side bet on 4: the history names each hand and the side bet's hand as the felt does,
    and the replay says where each bet and card went by circle, not by the round's seats 1 and 2."""
    live_server.service.stacked.append(["TS", "8S", "9H", "9D", "8C", "7C"])  # 19 and 8,8 against 9,7 (16)
    page, _, problems = table_page(browser, live_server, "first-person")
    chip(page, 100)
    bet(page, 2)
    bet(page, 4)
    bet(page, 4, side="perfect_pairs")
    deal(page)
    expect(page.locator(".hands.mine .hand .owner")).to_have_text(["Hand 2", "Hand 4"])
    play_out(page, ["stand", "stand"])
    bets, lines = history_and_replay(page, live_server)
    expect(bets).to_contain_text("Hand 2: 10♠ 9♦ $1.00 (")
    expect(bets).to_contain_text("Hand 4: 8♠ 8♣ $1.00 (")
    expect(bets).to_contain_text("Perfect Pairs (hand 4) $1.00 (")
    assert any(line.endswith("bets $1.00 on hand 2") for line in lines), lines
    assert any("bets $1.00 on hand 4, Perfect Pairs $1.00" in line for line in lines), lines
    assert "card 10♠ → hand 2" in lines and "card 8♠ → hand 4" in lines, lines
    assert not [line for line in lines if "seat" in line], lines
    close(page, problems)


def test_the_slip_says_what_the_daily_loss_limit_leaves_and_refuses_a_bet_past_it(browser: Any,
                                                                                   live_server: LiveServer) -> None:
    """$3.00 a day to lose: the bar says so while betting; a third $1.00 chip is placed, a fourth refused in words,
    and the slip and the balance stay as they were."""
    page, problems = guest_at_classic(browser, live_server, "/me/limits", {"daily_loss_limit": 300})
    expect(page.locator("#loss-room")).to_have_text(" · Your daily loss limit leaves $3.00 to stake today.")
    chip(page, 100)
    for spot in (1, 2, 2):
        bet(page, spot)
    expect(page.locator("#total-bet")).to_have_text("TOTAL BET $3.00")
    page.locator("button.circle[data-spot='1']").click()
    expect(page.locator("#announce")).to_have_text(
        "Your daily loss limit leaves $3.00 to stake today: these bets would stake $4.00.")
    expect(page.locator("#total-bet")).to_have_text("TOTAL BET $3.00")
    expect(page.locator("#balance")).to_have_text("BALANCE $997.00")
    # Nothing more is offered that the limit would refuse: no chip, no x2 (before, each was lit and refused).
    expect(page.locator("#loss-room")).to_have_text(
        " · Your daily loss limit leaves $3.00 to stake today, $0.00 more than the bets on the slip.")
    for amount in (100, 500, 2500, 10000):
        expect(page.locator(f"button.chip[data-chip='{amount}']")).to_be_disabled()
    expect(page.locator("#double-bets")).to_be_disabled()
    expect(page.locator("#deal")).to_be_enabled()
    close(page, problems, refused="403")


def test_insurance_on_two_hands_shows_each_rows_own_evs(browser: Any, live_server: LiveServer) -> None:
    """Hints on, 10,9 and 9,9 against an Ace: each row prints its EVs, where the second row printed none; insurance,
    which pays on the one hole card, is worth the same at both."""
    live_server.service.stacked.append(["TS", "9H", "AH", "9D", "9C", "7C", "5S"])
    page, problems = guest_at_classic(browser, live_server, "/me/settings", {"hints": True})
    chip(page, 100)
    bet(page, 1)
    bet(page, 2)
    page.locator("#deal").click()
    evs = page.locator(".offer [data-offer-ev]")
    expect(evs).to_have_count(2)
    first, second = evs.all_inner_texts()
    assert first == second == "EV -0.036 yes, EV +0.000 no", (first, second)  # (2 x 95 - 212) / 307 / 2
    close(page, problems)


def test_a_self_exclusion_ends_in_the_players_own_time_and_the_loss_limit_is_in_the_tables_money(
        browser: Any, live_server: LiveServer) -> None:
    """A player in India (UTC+5:30) excludes themselves for 7 days: the limits page and the table say when in UTC and
    in their own time; the loss limit of 50.00 reads in the tables' money too."""
    token, _ = guest_token(live_server)
    headers = {"Authorization": f"Bearer {token}"}
    httpx.put(live_server.url + "/me/limits", json={"daily_loss_limit": 5000, "exclude_days": 7},
              headers={**headers, "Idempotency-Key": "limits"}).raise_for_status()
    limits = httpx.get(live_server.url + "/me", headers=headers).json()["limits"]
    until = datetime.fromisoformat(limits["excluded_until"])
    there = until.astimezone(timezone(timedelta(hours=5, minutes=30)))
    utc_words = f"{until:%Y-%m-%d %H:%M} UTC"
    local = rf"\w+ {there.day} \w+, 0?{there.hour}:{there:%M}"  # en-GB: "Mon 14 Dec, 23:10"
    page = signed_in_context(browser, token, timezone_id="Asia/Kolkata", locale="en-GB").new_page()
    page.set_default_timeout(15000)
    problems = watch_console(page)
    page.goto(live_server.url + "/#/limits")
    expect(page.get_by_text(re.compile(rf"Self-exclusion: until {utc_words} \({local} your time\)"))).to_be_visible()
    currencies = {table["currency"] for table in httpx.get(live_server.url + "/tables").json()["tables"]}
    amounts = {"USD": "$50.00", "EUR": "€50.00", "GBP": "£50.00"}
    assert currencies <= set(amounts), currencies
    expect(page.locator("#loss-left")).to_have_text("Left to stake today: " + ", ".join(
        amounts[currency] for currency in sorted(currencies)))
    expect(page.get_by_text("Daily loss limit, in each currency: 50.00")).to_contain_text(
        "50.00 a day (" + ", ".join(amounts[currency] for currency in sorted(currencies)) + ")")
    page.goto(live_server.url + "/#/table/classic")
    expect(page.locator("#bet-status")).to_have_text(re.compile(
        rf"^You have excluded yourself from play until {utc_words}\. That is {local} your time\.$"))
    close(page, problems)


def test_a_replay_numbers_a_split_circles_hands_from_the_split_on_in_the_felts_words(browser: Any,
                                                                                    live_server: LiveServer) -> None:
    """8,8 on circle 2 (with Perfect Pairs) is split; 10,9 on circle 3. The replay called every card of circle 2 "hand
    2.1" from its first card on, and wrote the engine's words ("no-insurance", "colored"); the history's results too
    (a trial of players)."""
    live_server.service.stacked.append(["8S", "TS", "9H", "8C", "9D", "7C", "3D", "2C"])  # 16 under the dealer's 9
    page, _, problems = table_page(browser, live_server, "first-person")
    chip(page, 100)
    bet(page, 2)
    bet(page, 2, side="perfect_pairs")
    bet(page, 3)
    deal(page)
    play_out(page, ["split", "stand", "stand", "stand"])
    bets, lines = history_and_replay(page, live_server)
    expect(bets).to_contain_text("Hand 2.1: 8♠ 3♦ $1.00 (")
    expect(bets).to_contain_text("Hand 2.2: 8♣ 2♣ $1.00 (")
    expect(bets).to_contain_text("Perfect Pairs (hand 2) $1.00 (colored pair)")
    split_at = next(index for index, line in enumerate(lines) if re.search(r": split \$1\.00, hand 2$", line))
    assert "card 8♠ → hand 2" in lines[:split_at] and "card 8♣ → hand 2" in lines[:split_at], lines
    assert "card 3♦ → hand 2.1" in lines[split_at:] and "card 2♣ → hand 2.2" in lines[split_at:], lines
    assert "Perfect Pairs, hand 2: colored pair, returned $13.00" in lines, lines
    assert any(re.fullmatch(r"Hand 3: (won|lost|push), returned \$\d+\.\d\d", line) for line in lines), lines
    assert not [line for line in lines[:split_at + 1] if "2.1" in line], lines  # the split itself: "hand 2"
    close(page, problems)


def test_a_shared_rounds_replay_names_each_hand_by_its_player(browser: Any, live_server: LiveServer) -> None:
    """Two players at multiplayer: a replay's lines said "seat 2 hand 1: push" and a player had to work out which seat
    was theirs from the bets at the top (a trial of players). They say "your hand" and "ann's hand", as the felt."""
    live_server.service.stacked.append(["TS", "9H", "7D", "TC", "8C", "9S"])  # no Ace, no blackjack: both stand
    seated = [table_page(browser, live_server, "multiplayer") for _ in range(2)]
    try:
        for page, _, _ in seated:
            chip(page, 100)
            bet(page)
            page.locator("#deal").click()
            expect(page.locator("#bet-status")).to_contain_text("Your bets are in")
        live_server.service.close_betting("multiplayer")
        for page, _, _ in seated:
            stand = page.locator("button[data-action='stand']")
            expect(stand).to_be_enabled()
            stand.click()
        (page, me, problems), other = seated[0], seated[1][1]
        expect(page.locator("#result")).to_be_visible()
        page.goto(live_server.url + "/#/history")
        page.locator("button[data-replay]").first.click()
        steps = page.locator("#replay ol.operations li")
        expect(steps.first).to_be_visible()
        lines = steps.all_inner_texts()
        assert f"{me} bets $1.00 at seat 1" in lines and f"{other} bets $1.00 at seat 2" in lines, lines
        assert [line for line in lines if line.endswith("→ your hand")] and \
            [line for line in lines if line.endswith(f"→ {other}'s hand")], lines
        assert any(re.fullmatch(r"Your hand: (won|lost|push), returned \$\d+\.\d\d", line) for line in lines), lines
        assert any(line.startswith(f"{other}'s hand: ") for line in lines), lines
        assert not [line for line in lines if "seat" in line and " bets " not in line], lines
        assert not problems, problems
    finally:
        for page, _, _ in seated:
            page.context.close()


def test_side_bets_that_wrap_leave_the_circles_on_the_tables_curve(browser: Any, live_server: LiveServer) -> None:
    """First person's five circles follow the table's curve: the ends highest, the middle lowest. A side bet's amount
    wrapped the spot's buttons onto a second line, and the spot rose out of the curve (a trial of players)."""
    page, _, problems = table_page(browser, live_server, "first-person")
    chip(page, 100)
    bet(page, 2)
    bet(page, 2, side="perfect_pairs")
    bet(page, 3)
    bet(page, 3, side="perfect_pairs")
    bet(page, 3, side="21+3")
    top = {spot: page.locator(f"button.circle[data-spot='{spot}']").bounding_box()["y"] for spot in range(1, 6)}
    assert abs(top[1] - top[5]) < 1 and abs(top[2] - top[4]) < 1, top
    assert top[1] < top[2] < top[3], top
    close(page, problems)


def test_insurance_on_two_hands_shares_what_the_loss_limit_leaves(browser: Any, live_server: LiveServer) -> None:
    """$2.50 a day to lose, $1.00 on each of two hands against an Ace: $0.50 left, one insurance of $0.50. Each row was
    offered on its own and the second refused (an attacker's trial); once one is chosen the other is not offered, and
    YES TO ALL is not."""
    live_server.service.stacked.append(["TS", "9H", "AH", "9D", "9C", "7C", "5S"])  # no blackjack under the Ace
    page, problems = guest_at_classic(browser, live_server, "/me/limits", {"daily_loss_limit": 250})
    chip(page, 100)
    bet(page, 1)
    bet(page, 2)
    page.locator("#deal").click()
    first, second = page.locator("button[data-offer='1.1']"), page.locator("button[data-offer='2.1']")
    expect(first).to_be_enabled()
    expect(second).to_be_enabled()
    expect(page.locator("[data-focus='offer-yes']")).to_be_disabled()  # both: $1.00 past the $0.50 left
    first.click()
    expect(first).to_have_attribute("aria-pressed", "true")
    expect(second).to_be_disabled()
    first.click()  # taken back: the other may be chosen instead
    expect(second).to_be_enabled()
    second.click()
    expect(first).to_be_disabled()
    page.locator("#offer-confirm").click()
    expect(page.locator("#side-results")).to_contain_text("Insurance (hand 2) lost: the dealer has no blackjack")
    close(page, problems)


def test_a_limit_is_removed_from_the_limits_page_after_a_day(browser: Any, live_server: LiveServer) -> None:
    """No request could remove a limit, nor anything on the page (an integrator's trial): each limit set has a Remove
    button, which asks for its removal, said with when it applies; a limit not set has none."""
    token, _ = guest_token(live_server)
    headers = {"Authorization": f"Bearer {token}", "Idempotency-Key": "limits"}
    httpx.put(live_server.url + "/me/limits", json={"daily_loss_limit": 5000}, headers=headers).raise_for_status()
    page = signed_in_context(browser, token).new_page()
    page.set_default_timeout(15000)
    problems = watch_console(page)
    page.goto(live_server.url + "/#/limits")
    expect(page.locator("button[data-remove]")).to_have_count(1)  # the session limit is not set: nothing to remove
    shot(page, "limits-remove")
    page.locator("button[data-remove='daily_loss_limit']").click()
    expect(page.locator("#announce")).to_have_text("Limits saved. The daily loss limit is removed in 24 hours.")
    expect(page.get_by_text("Daily loss limit, in each currency: 50.00")).to_contain_text(
        re.compile(r"\(to be removed at \d{4}-\d\d-\d\d \d\d:\d\d UTC\)$"))
    expect(page.locator("button[data-remove]")).to_have_count(0)
    pending = httpx.get(live_server.url + "/me", headers=headers).json()["limits"]["pending"]
    assert pending["daily_loss_limit"]["value"] is None
    close(page, problems)
