"""Helpers for the browser tests: a live server in a thread, screenshots kept as artifacts."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import uvicorn
from playwright.sync_api import expect
from server_helpers import eventually

CHROMIUM = os.environ.get("TWENTYONE_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class LiveServer:
    def __init__(self, app: Any, port: int, settings: Any = None) -> None:
        self.app = app
        self.settings = settings
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                                    timeout_graceful_shutdown=2))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def service(self) -> Any:
        return self.app.state.service

    def start(self) -> None:
        self.thread.start()
        deadline = time.time() + 30
        while not self.server.started:
            if time.time() > deadline:
                raise RuntimeError("the live server did not start")
            time.sleep(0.05)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def socket_heard(server: LiveServer, table: str, seconds: float = 15) -> None:
    """Wait until a page's socket at ``table`` is open and the server sends it the table's events.

    A test that stops the server waits for this first: uvicorn's shutdown answers a socket whose handshake is half
    done with an HTTP 500, which chromium logs as an error of the page (it failed a CI run once, the page's socket
    still connecting when the test stopped the server right after the table showed)."""
    eventually(lambda: server.service.events.present(table), seconds, f"a page's socket at {table}")


def shot(page: Any, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


DESKTOP = {"width": 1366, "height": 768}
PHONE = {"width": 390, "height": 844}


def guest_token(server: LiveServer) -> tuple[str, str]:
    """A guest signed in through the API: (token, name)."""
    import httpx

    answer = httpx.post(server.url + "/auth/guest").json()
    return answer["token"], answer["player"]["name"]


def watch_console(page: Any) -> list[str]:
    """Console errors, uncaught exceptions and failed requests of a page, collected as they happen."""
    problems: list[str] = []
    # A refusal (409: past a maximum, not covered) is an answer the page shows; chromium still logs it.
    refusal = "the server responded with a status of 409"
    page.on("console", lambda message: problems.append(message.text)
            if message.type == "error" and refusal not in message.text else None)
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.on("response", lambda response: problems.append(f"{response.status} {response.url}")
            if response.status == 404 else None)
    return problems


def signed_in_context(browser: Any, token: str, **context_options: Any) -> Any:
    """A fresh browser context whose pages start signed in with ``token`` (as the page stores it)."""
    context = browser.new_context(**context_options)
    context.add_init_script(f"localStorage.setItem('twentyone.token', {token!r})")
    return context


def table_page(browser: Any, server: LiveServer, table: str, viewport: dict[str, int] | None = None,
               **context_options: Any) -> tuple[Any, str, list[str]]:
    """A fresh browser context signed in as a new guest, at ``table``: (page, guest name, console problems)."""
    token, name = guest_token(server)
    context = signed_in_context(browser, token, viewport=viewport or DESKTOP, **context_options)
    page = context.new_page()
    page.set_default_timeout(15000)
    problems = watch_console(page)
    open_table(page, server, table)
    return page, name, problems


def open_table(page: Any, server: LiveServer, table: str) -> None:
    """Go to ``table`` and wait until it is drawn and the server holds the page's socket (its hello heard).

    The page is drawn from its first read, which may come before its socket is held (an audit: one page in four on a
    loaded machine). Until then the server counts nobody at the table (a round another player opens has the few
    seconds' window of a player alone, ALONE_WINDOW, which a test's next steps could outlast), and the hello's own
    read of the table is still to come (a test counting the page's reads would count it)."""
    reads = f"/tables/{table}"
    heard: list[Any] = []  # the hello (the server holds the socket before it), then the table's read started after it

    def frame(payload: Any) -> None:
        try:
            hello = json.loads(payload).get("type") == "hello"
        except (TypeError, ValueError, AttributeError):
            hello = False
        if hello and not heard:
            heard.append("hello")

    def request(sent: Any) -> None:
        if heard == ["hello"] and sent.method == "GET" and sent.url.endswith(reads):
            heard.append(sent)

    page.on("websocket", lambda socket: socket.on("framereceived", frame))
    page.on("request", request)
    page.goto(f"{server.url}/#/table/{table}")
    page.locator("#deal, #rebet").wait_for()
    deadline = time.monotonic() + 15
    while len(heard) < 2:
        assert time.monotonic() < deadline, f"no hello on the page's socket at {table}, or no read after it"
        page.wait_for_timeout(20)
    heard[1].response()  # the read the hello made, answered (Playwright waits for it)


def poster(server: LiveServer, token: str) -> Any:
    """POST as the player of ``token``, over HTTP, each request with a key of its own: the answer's JSON (raises on
    an error status). For a test's moves made elsewhere than the page (another device, the timer)."""
    import httpx

    keys = iter(range(1_000))

    def post(path: str, body: Any = None) -> Any:
        answer = httpx.post(server.url + path, json=body, headers={"Authorization": f"Bearer {token}",
                                                                    "Idempotency-Key": f"k{next(keys)}"})
        answer.raise_for_status()
        return answer.json()

    return post


def chip(page: Any, amount: int) -> None:
    """Choose the chip of ``amount`` in the rack, and wait until the page shows it chosen."""
    page.locator(f"button.chip[data-chip='{amount}']").click()
    expect(page.locator(f"button.chip[data-chip='{amount}']")).to_have_attribute("aria-pressed", "true")


def bet(page: Any, spot: int = 1, side: str | None = None) -> None:
    """Put the chip in hand on a spot's main bet (or its ``side`` bet), and wait until the total moves."""
    target = f"button.side[data-spot='{spot}'][data-side='{side}']" if side else f"button.circle[data-spot='{spot}']"
    before = page.locator("#total-bet").inner_text()
    page.locator(target).click()
    expect(page.locator("#total-bet")).not_to_have_text(before)


def limited_guest(server: LiveServer) -> tuple[str, Callable[[float], None]]:
    """A guest with a session time limit of a minute: (token, a function that says how many seconds ago the session
    began, the limit being reached a minute after)."""
    import httpx

    from twentyone.server.models import Player

    token, _ = guest_token(server)
    headers = {"Authorization": f"Bearer {token}"}
    assert httpx.put(server.url + "/me/limits", json={"session_minutes": 1},
                     headers={**headers, "Idempotency-Key": "limits"}).status_code == 200
    player_id = httpx.get(server.url + "/me", headers=headers).json()["id"]
    service = server.service

    def session_began(seconds_ago: float) -> None:
        with service.store.write() as session:
            session.get(Player, player_id).session_started_at = datetime.now(UTC) - timedelta(seconds=seconds_ago)
        service.accounts._callers.clear()  # the caller is read again, with the session's end

    return token, session_began
