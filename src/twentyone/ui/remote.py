"""Terminal play at a server's table: the keys and screen of terminal play, over the server's HTTP API.

``twentyone play TABLE --server URL`` sits at a table of a running ``twentyone serve``: the server deals, keeps
the balance and the bets, settles, and records every round in the player's history, as it does for the web page.
Nothing here judges a bet or a decision: each key is the request the web page would send, and what the server
answers (the slip, the round as this player may see it, or a refusal's ``detail``) is what the screen shows. At a
shared table the player's bets join the round being formed; the client then shows the table as it moves (the
betting window, other players' turns) by reading the round again until it is this player's turn or the round is
over. A player who quits mid-round leaves it to the server's policy for a player who leaves: each open decision is
taken for them (stand, decline) when its time is up.

At a shared table the client also holds the table's WebSocket (:class:`Presence`), as the page does: the server
counts a player with one open as at the table, and its events wake the screen. The screen itself is drawn from the
HTTP reads: a terminal reads one key at a time and has nothing to draw between keys but what it waits for.
"""

from __future__ import annotations

import contextlib
import json
import queue
import re
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TextIO

import httpx
from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from twentyone.core.money import format_money
from twentyone.core.operations import COSTLY_ACTIONS
from twentyone.ui.kept_guests import KeptGuests
from twentyone.ui.terminal import (
    INSURANCE_WORDS,
    OFFER_KEYS,
    PLAY_KEYS,
    SIDE_BET_KEYS,
    amounts_in_currency,
    balance_text,
    bets_table,
    dealer_text,
    discard_typed_ahead,
    hand_cells,
    insurance_taken_text,
    is_terminal,
    key_ready,
    key_waiting,
    limits_text,
    net_text,
    pays_line,
    pays_text,
    paytable_text,
    read_keys,
    result_words,
    short_money,
    single_keys,
)
from twentyone.variants import builtin_rules

MAIN = "main"
MIN_READ_GAP = 0.2  # seconds between reads of a round while the player waits, however many events come
FOLLOW_READ = 2.0  # seconds between reads of the table, between keys, where no socket tells of its changes
FOLLOW_GAP = 1.0  # seconds between reads of the table between keys, however many events come (a crowded table's)
FOLLOW_TICK = 1.0  # seconds between redraws of a clock counting down, between keys
OTHERS_SHOWN = 4  # other players' hands listed at a shared table; the rest are counted
TRIES = 4  # a 503 or an answer that never came is sent again with the same key, as the web page does
MOST_WAIT = 5.0  # seconds: a longer Retry-After is cut to this, so a key never hangs for long
OPEN = ("betting", "playing")


class _Quit(Exception):
    """``q`` pressed while the table moved without the player."""


class _TableClosed(_Quit):
    """The operator removed the table (or took it out of ``tables.toml``) and no round of this player's is open there:
    the client says so and ends, as the web page goes back to the lobby. Before, it stayed, and answered every key
    "There is no table 'vip'." (noted by a review)."""


class ServerError(Exception):
    """The server refused a request (its ``detail``) or could not be reached: one line for the player."""

    def __init__(self, message: str, status: int | None = None, token_refused: bool = False,
                 unanswered: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.unanswered = unanswered  # no answer at all: the server could not be reached
        # The token is not taken now (a 401, or a 429 past the address's limit of wrong tokens): sign in anew.
        self.token_refused = token_refused or status == 401


@dataclass
class Api:
    """The server's HTTP API as one signed-in player calls it.

    Each request that changes state carries an ``Idempotency-Key``; a 503, or an answer that never came, is sent
    again with the same key (the server applies it once), after the answer's ``Retry-After`` (at most
    :data:`MOST_WAIT`) or 0.5, 1 and 2 s, up to :data:`TRIES` tries in all.

    >>> answers = iter([httpx.Response(503, json={"detail": "busy"}, headers={"Retry-After": "1"}),
    ...                 httpx.Response(200, json={"id": 7, "status": "playing"}),
    ...                 httpx.Response(409, json={"detail": "Place a main bet before the deal."})])
    >>> waited = []
    >>> api = Api(httpx.Client(transport=httpx.MockTransport(lambda request: next(answers)),
    ...                        base_url="http://table.example"), sleep=waited.append)
    >>> api.post("/tables/classic/deal"), waited
    ({'id': 7, 'status': 'playing'}, [1.0])
    >>> api.post("/tables/classic/deal")
    Traceback (most recent call last):
    ...
    twentyone.ui.remote.ServerError: Place a main bet before the deal.
    """

    http: httpx.Client
    token: str = ""
    sleep: Callable[[float], None] = time.sleep

    def get(self, path: str) -> Any:
        return self._send("GET", path, None)

    def post(self, path: str, body: Mapping[str, Any] | None = None) -> Any:
        return self._send("POST", path, body, key=uuid.uuid4().hex)

    def _send(self, method: str, path: str, body: Mapping[str, Any] | None, key: str | None = None) -> Any:
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        if key is not None:
            headers["Idempotency-Key"] = key
        for attempt in range(TRIES):
            wait = 0.5 * 2 ** attempt
            try:
                answer = self.http.request(method, path, json=body, headers=headers)
            except httpx.TransportError as error:
                if attempt == TRIES - 1:
                    raise ServerError(f"The server at {self.http.base_url} did not answer ({_why(error)}).",
                                      unanswered=True) from error
            else:
                if answer.status_code != 503:
                    return _answer(answer)
                if attempt == TRIES - 1:
                    raise ServerError(_detail(answer), 503)
                wait = min(_retry_after(answer, wait), MOST_WAIT)
            self.sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover: the last try returns or raises


def _why(error: Exception) -> str:
    """A transport error as a player reads it: "connection refused", not "[Errno 111] Connection refused" (a trial).

    >>> _why(httpx.ConnectError("[Errno 111] Connection refused")), _why(httpx.ReadTimeout(""))
    ('connection refused', 'ReadTimeout')
    """
    words = re.sub(r"^\[Errno -?\d+\]\s*", "", str(error)).strip()
    return (words[:1].lower() + words[1:]) if words else type(error).__name__


def _retry_after(answer: httpx.Response, otherwise: float) -> float:
    """The answer's ``Retry-After`` in seconds; ``otherwise`` where it is missing or not a number (an HTTP date).

    >>> _retry_after(httpx.Response(503, headers={"Retry-After": "2"}), 0.5)
    2.0
    >>> _retry_after(httpx.Response(503, headers={"Retry-After": "Wed, 21 Oct 2026 07:28:00 GMT"}), 0.5)
    0.5
    """
    try:
        return max(0.0, float(answer.headers.get("Retry-After", otherwise)))
    except ValueError:
        return otherwise


def _detail(answer: httpx.Response) -> str:
    """A refusal's words: its ``detail`` (a 422's first field's), else its status.

    >>> _detail(httpx.Response(422, json={"detail": [{"msg": "Field required"}]}))
    'Field required'
    >>> _detail(httpx.Response(502, text="<html>Bad Gateway</html>")), _detail(httpx.Response(409, json=[1]))
    ('The server answered 502.', 'The server answered 409.')
    """
    try:
        body = answer.json()
    except ValueError:
        body = None
    detail = body.get("detail") if isinstance(body, dict) else None
    if isinstance(detail, list):  # a 422's list of fields: the first one's words
        detail = detail[0].get("msg") if detail and isinstance(detail[0], dict) else None
    return str(detail) if detail else f"The server answered {answer.status_code}."


def _answer(answer: httpx.Response) -> Any:
    if answer.status_code >= 400:
        try:
            body = answer.json() if answer.status_code == 429 else None
        except ValueError:
            body = None
        refused = isinstance(body, dict) and body.get("token_refused") is True
        raise ServerError(_detail(answer), answer.status_code, refused)
    try:
        body = answer.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):  # a proxy's page, say: not this server's API
        raise ServerError(f"The server answered {answer.status_code} with no JSON object: is it a twentyone server?")
    return body


def sign_in(api: Api, name: str | None = None, password: str | None = None) -> dict[str, Any]:
    """Sign ``api`` in (as a new guest without a name) and return the server's answer: ``player`` (``id``,
    ``name``) and, for a login, ``returned_bets`` (bets held but never dealt, returned by the sign-in)."""
    if name is None:
        answer = api.post("/auth/guest")
    else:
        answer = api.post("/auth/login", {"name": name, "password": password or ""})
    api.token = answer["token"]
    return dict(answer)


def returned_bets_text(returned: list[dict[str, Any]], currencies: Mapping[str, str]) -> str:
    """What a sign-in returned, as the web page announces it: each table's total in its round's or table's currency.

    >>> returned_bets_text([{"table_id": "classic", "total": 500}, {"table_id": "power", "total": 100,
    ...                     "currency": "EUR"}], {"classic": "USD"})
    'Your undealt bets were returned: $5.00 at classic, €1.00 at power.'
    """
    told = [f"{format_money(int(bets['total']), bets.get('currency') or currencies.get(bets['table_id'], 'USD'))} "
            f"at {bets['table_id']}" for bets in returned]
    return f"Your undealt bets were returned: {', '.join(told)}."


class Presence:
    """The player's WebSocket to the table, as the web page holds one: while it is open the server counts the player
    at the table (a shared round's betting window runs its full length for them, not the few seconds it gives a
    player alone), and its events wake the screen (:attr:`moved`) sooner than the next read. It reconnects after a
    drop; the server's hello after a reconnection may return bets never dealt (the sheet's disconnection policy),
    which :meth:`take_returned` hands to the screen to tell. Everything runs in a daemon thread of its own.

    Open it with :meth:`opened`, before any bet: the server's hello to a player's first socket returns the bets
    never dealt, so a socket that connected after the first key took back the bet that key had placed (found by
    review: one run in four).
    """

    ENDED = (4401, 4404, 4429)  # closes that another try would only repeat: signed out, no such table, too many

    def __init__(self, url: str, table_id: str, token: str) -> None:
        address = httpx.URL(url)
        scheme = "wss" if address.scheme == "https" else "ws"
        self.url = str(address.copy_with(scheme=scheme, path=f"/ws/tables/{table_id}", query=f"token={token}".encode()))
        self.moved = threading.Event()
        self.connected = threading.Event()
        self._returned: queue.SimpleQueue[dict[str, Any]] = queue.SimpleQueue()
        self._stop = threading.Event()
        self._socket: Any = None
        self._thread = threading.Thread(target=self._run, name="twentyone-presence", daemon=True)

    @classmethod
    def opened(cls, url: str, table_id: str, token: str, seconds: float = 5.0) -> Presence | None:
        """A socket to the table, once the server has said hello on it (from then the server counts the player at
        the table and sends it every event); None (and no socket this session) if it did not within ``seconds``."""
        presence = cls(url, table_id, token).start()
        if presence.connected.wait(seconds):
            return presence
        presence.stop()
        return None

    def start(self) -> Presence:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Close the socket and let the thread go; at most about a second even when the server no longer answers."""
        self._stop.set()
        socket = self._socket
        if socket is not None:
            with contextlib.suppress(Exception):
                socket.close()
        self._thread.join(timeout=1.5)

    def has_returned(self) -> bool:
        return not self._returned.empty()

    def take_returned(self) -> list[dict[str, Any]]:
        """The bets the server returned since the last call (each table's), for the screen to tell."""
        taken = []
        while not self._returned.empty():
            taken.append(self._returned.get())
        return taken

    def _run(self) -> None:
        from websockets.exceptions import ConnectionClosed, WebSocketException
        from websockets.sync.client import connect

        pause = 1.0
        while not self._stop.is_set():
            try:
                with connect(self.url, open_timeout=5, close_timeout=1) as socket:
                    self._socket = socket
                    if self._stop.is_set():
                        return
                    for message in socket:
                        self._heard(json.loads(message))
                        pause = 1.0
            except ConnectionClosed as closed:
                if closed.rcvd is not None and closed.rcvd.code in self.ENDED:
                    return  # signed out, or the table is gone: the screen's reads say so
            except (OSError, WebSocketException, ValueError):
                pass  # the next try reconnects; the screen's reads go on meanwhile
            finally:
                self._socket = None
                self.connected.clear()
            self._stop.wait(pause)
            pause = min(pause * 2, 10.0)

    def _heard(self, event: Mapping[str, Any]) -> None:
        if event.get("type") == "hello":
            for bets in event.get("returned_bets") or []:
                self._returned.put(bets)
            self.connected.set()
        if event.get("type") == "bets-returned":  # the player's own (the server sends no one else's), with why
            self._returned.put(dict(event))
        self.moved.set()


def _rules_line(variant: str) -> str:
    """The game's rules in one line, as terminal play shows them under the bets; none for a game this client does not
    know (a newer server's)."""
    try:
        return builtin_rules(variant).summary
    except (KeyError, ValueError):
        return ""


def _clock_text(seconds: int) -> str:
    """A time left as a player reads it: seconds under a minute, else minutes and seconds.

    >>> _clock_text(14), _clock_text(1198)
    ('14 s', '19:58')
    """
    return f"{seconds} s" if seconds < 60 else f"{seconds // 60}:{seconds % 60:02d}"


def _slip_bets(slip: Mapping[str, Any]) -> dict[tuple[int, str], int]:
    """A slip's bets as the server sends them, by spot and bet type.

    >>> _slip_bets({"bets": [{"spot": 1, "type": "main", "amount": 500}]})
    {(1, 'main'): 500}
    """
    return {(int(bet["spot"]), str(bet["type"])): int(bet["amount"]) for bet in slip["bets"]}


def timer_line(times: int) -> str:
    """What the server's timer decided for a player who let the clock run out, as the page says it.

    >>> timer_line(2)
    'Time ran out: the auto decision (stand, or no to an offer) was made for you 2 times.'
    """
    return f"Time ran out: the auto decision (stand, or no to an offer) was made for you" \
           f"{f' {times} times' if times > 1 else ''}."


def waiting_text(seen: Mapping[str, Any], me: int) -> str:
    """Whom a round in play waits for, other than ``me``: every player still deciding where the offers before the
    peek are everyone's at once (the terminal named the first alone), else the one in turn; by count past three, or
    where a big table's view leaves some seats out.

    >>> seats = [{"player_id": 2, "name": "Ann"}, {"player_id": 3, "name": "Bob"}, {"player_id": 1, "name": "Me"}]
    >>> waiting_text({"deciding": [1, 2, 3], "seats": seats}, me=1)
    'Waiting for Ann and Bob'
    >>> waiting_text({"decision": {"player_id": 9, "name": "Cy"}, "seats": seats}, me=1)
    'Waiting for Cy'
    >>> waiting_text({"deciding": [1], "seats": seats}, me=1)
    'Waiting for the other players'
    """
    decision = seen.get("decision") or {}
    deciding = seen.get("deciding") or ([decision["player_id"]] if "player_id" in decision else [])
    others = [player for player in deciding if player != me]
    if not others:
        return "Waiting for the other players"
    names = {seat["player_id"]: seat["name"] for seat in seen.get("seats") or []}
    if decision.get("name"):
        names.setdefault(decision["player_id"], decision["name"])
    known = [names[player] for player in others if player in names]
    if len(known) < len(others) or len(others) > 3:
        return f"Waiting for {len(others)} players" if len(others) > 1 else "Waiting for another player"
    return "Waiting for " + (known[0] if len(known) == 1 else f"{', '.join(known[:-1])} and {known[-1]}")


def _step(seen: Mapping[str, Any]) -> tuple[Any, ...]:
    """Where a round is: its status, whose decision of what kind on which hand, and the actions open.

    >>> _step({"status": "playing", "decision": {"kind": "insurance", "player_id": 1, "seat": 1, "hand": 1},
    ...        "legal_actions": ["insurance", "no-insurance"]})
    ('playing', 'insurance', 1, 1, 1, ('insurance', 'no-insurance'))
    """
    decision = seen.get("decision") or {}
    return (seen.get("status"), decision.get("kind"), decision.get("player_id"), decision.get("seat"),
            decision.get("hand"), tuple(seen.get("legal_actions") or ()))


def _deadline_seconds(stamp: str | None, now: datetime) -> int | None:
    if not stamp:
        return None
    return max(0, round((datetime.fromisoformat(stamp) - now).total_seconds()))


@dataclass
class RemoteTable:
    """One player at one of a server's tables, in a terminal."""

    api: Api
    table_id: str
    player: dict[str, Any]
    console: Console
    poll_seconds: float = 0.5
    wait_seconds: float = 600.0  # the most one wait for the table to move (a window, others' turns) lasts
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    message: str = ""
    # The words a key got while a round was open, and the round's step then (_step): cleared once it moves on.
    said_at_step: tuple[str, tuple[Any, ...]] | None = None
    unanswered: str | None = None  # the words said of a read the server did not answer, till one answers
    selected_spot: int = 1
    rounds: int = 0
    state: dict[str, Any] = field(default_factory=dict)  # GET /tables/{id}
    round: dict[str, Any] | None = None  # the round this player is in, or the one that just ended for them
    watched: dict[str, Any] | None = None  # a shared table's round this player has no seat in
    cash_out_shown: bool = True  # the player's setting, as the web page honours it
    keyboard: TextIO | None = None  # the terminal the keys come from: q while the table moves, keys typed ahead
    presence: Presence | None = None  # the table's WebSocket, at a shared table
    table_name: str = ""  # as last read open: a table taken out since is read as a stand-in, which knows its id alone

    def __post_init__(self) -> None:
        self.refresh()
        self.cash_out_shown = bool(self.api.get("/me")["settings"]["cash_out_visible"])

    @property
    def table(self) -> dict[str, Any]:
        return dict(self.state["table"])

    @property
    def currency(self) -> str:
        return str(self.table["currency"])

    def money(self, amount: int) -> str:
        return format_money(amount, self.currency)

    def refresh(self) -> None:
        """Read the table again: balance, slip, and its round. At a shared table that round may be one this player
        has no seat in (another's, forming or in play): it is watched, and the player bets meanwhile (bets and DEAL
        join a forming round), never taken for their own."""
        try:
            self.state = self.api.get(f"/tables/{self.table_id}")
        except ServerError as error:
            if error.status == 404 and self.state:  # there when the player sat down: removed since
                raise _TableClosed(f"The table {self.table_name} was closed by the casino.") from None
            raise
        if not self.table.get("closed") or not self.table_name:  # made again under another name: the new one
            self.table_name = str(self.table["name"])
        current = self.state["round"]
        self.watched = current if current is not None and "me" not in current else None
        if current is not None and "me" in current:
            self.round = current

    # ------------------------------------------------------------ the loop
    def run(self, keys: Iterator[str]) -> None:
        """Play until ``q`` or the end of the keys; a round still open is left to the server's policy."""
        try:
            self.wait_for_turn()
            self.draw()
            self._leave_if_closed()
            for key in self._followed(keys):
                asked = self._asked()
                if not self.press(key):
                    break
                self.wait_for_turn()
                if self.keyboard is not None and self._asked() not in (None, asked):
                    discard_typed_ahead(self.keyboard)  # a new decision: only keys pressed once it shows count
                self.draw()
                self._leave_if_closed()
        except _TableClosed as closed:
            self.console.print(str(closed))
        except (KeyboardInterrupt, _Quit):
            pass
        if self.round_open():
            self.console.print("You left mid-round: the server takes each of your open decisions (stand, decline) "
                               "when its time is up, as it does for any player who leaves.")
        rounds = f"{self.rounds} round{'s' if self.rounds != 1 else ''}"
        balance = self.state.get("balance")
        held = self.money(balance) if balance is not None else "not given by the operator's wallet"
        # What is still on the table is said with it: "Balance $0.00" alone read as all lost (a terminal trial).
        staked = int(((self.round or {}).get("me") or {}).get("staked", 0)) if self.round_open() else 0
        in_play = f", and {self.money(staked)} in round {self.round['id']}, still in play," if staked and self.round \
            else ""
        self.console.print(f"Goodbye. Balance {held}{in_play} after {rounds} at {self.table_name}.")

    def _followed(self, keys: Iterator[str]) -> Iterator[str]:
        """The keys, the screen following the table before each (:meth:`_follow_until_key`)."""
        while True:
            self._follow_until_key()
            key = next(keys, None)
            if key is None:
                return
            yield key

    def _follow_until_key(self) -> None:
        """At a terminal, while the player types nothing, the screen follows the table: an event of its socket reads
        it again (once a second at most, :data:`FOLLOW_GAP`; every :data:`FOLLOW_READ` seconds without a socket),
        and a clock counting down is drawn again every second. Before, the screen stood as the last key left it: a
        round forming at a shared table, the timer's decision for the player, and the round's result showed only
        after a key (found by a terminal trial). Keys from a pipe (a script) are not waited for."""
        keyboard = self.keyboard
        if keyboard is None or not is_terminal(keyboard):
            return
        moved = self.presence.moved if self.presence is not None else None
        read_at = drawn_at = time.monotonic()
        while not key_ready(keyboard, 0.05):
            now = time.monotonic()
            due = moved.is_set() if moved is not None else now - read_at >= FOLLOW_READ
            if due and now - read_at >= FOLLOW_GAP:
                if moved is not None:
                    moved.clear()  # before the read: an event during it reads again
                read_at = now
                before = (self.round, self.watched, self.state, self.message)
                self._read_table()
                with contextlib.suppress(ServerError):  # told at the next read, or at the next key
                    self._bets_returned()
                if (self.round, self.watched, self.state, self.message) != before:
                    self.draw()
                    drawn_at = now
                    continue
            if now - drawn_at >= FOLLOW_TICK and (self.round_open() or self.watched is not None):
                self.draw()
                drawn_at = now
            self._leave_if_closed()

    def _read_table(self) -> None:
        """Read what the screen shows again: the player's round while it is open (its end is told), else the
        table (a round of others forming or in play, the balance). A server that did not answer is said until a
        read answers: before, the words stayed until the next key, long after it was back (a terminal trial)."""
        try:
            if self.round_open():
                self._read_round()
            else:
                self.refresh()
        except ServerError as error:  # the next read tries again; the screen says why it did not move
            self.message = str(error)
            self.unanswered = str(error) if error.unanswered else None
            return
        if self.unanswered is not None and self.message == self.unanswered:
            self.message = ""
        self.unanswered = None

    def _leave_if_closed(self) -> None:
        """At a table taken out, once this player's round there is over (and shown): the table takes no bets, so
        the client ends. A player reaches such a table only to finish a round (its stand-in, ``closed``)."""
        if self.table.get("closed") and not self.round_open():
            raise _TableClosed(f"The table {self.table_name} was closed by the casino: it takes no new bets.")

    def _asked(self) -> tuple[Any, ...] | None:
        """The decision asked of this player now (round, hand, kind), if any."""
        if not self.my_turn() or self.round is None:
            return None
        decision = self.round.get("decision") or {}
        return self.round["id"], decision.get("seat"), decision.get("hand"), decision.get("kind")

    def round_open(self) -> bool:
        return self.round is not None and self.round["status"] in OPEN

    def my_turn(self) -> bool:
        return self.round_open() and bool(self.round and self.round["legal_actions"])

    def wait_for_turn(self) -> None:
        """While the round this player is in moves without them (its betting window, others' turns), read it every
        :attr:`poll_seconds` and draw it, until it is their turn or it is over."""
        deadline = time.monotonic() + self.wait_seconds
        drawn = None
        while self.round_open() and not self.my_turn() and time.monotonic() < deadline:
            now = (self.round, self._status())
            if now != drawn:  # a screen a second at most while the clock runs, none while nothing moves
                self.draw()
                drawn = now
            self._pause()
            self._read_round()

    def _pause(self) -> None:
        """Wait :attr:`poll_seconds`; at a terminal, ``q`` quits meanwhile (other keys typed while the table moves
        are dropped: they were not meant for a screen the player had not seen)."""
        start = time.monotonic()
        moved = self.presence.moved if self.presence is not None else threading.Event()
        while (left := start + self.poll_seconds - time.monotonic()) > 0:
            # An event of the table's reads the round sooner, but not more than five times a second: at a crowded
            # power table every event would otherwise send every waiting terminal's read at once.
            if moved.is_set():
                if time.monotonic() - start >= MIN_READ_GAP:
                    break
                time.sleep(min(left, 0.05))
            else:
                moved.wait(min(left, 0.05))
            if self.keyboard is not None and key_waiting(self.keyboard) in ("q", "\x04"):
                raise _Quit()
        moved.clear()  # before the read: an event during it wakes the next pause

    def _read_round(self) -> None:
        assert self.round is not None
        status = self.round["status"]
        try:
            self.round = self.api.get(f"/rounds/{self.round['id']}")
            if not self.round_open():
                self._round_over()
                return
            if self.round["status"] != status:  # dealt: the stakes left the balance at the close of betting
                self.refresh()
            said = self.said_at_step
            if said is not None and said[0] == self.message and said[1] != _step(self.round):
                # What a key got at a step (refused there, a hint) is not the next one's: "Key 's' is not an action
                # here; legal: [y] insurance, [n] no-insurance." stayed over the turn where S was legal (a trial of
                # players). Other words (bets returned, say) stay until the round ends or a key is pressed.
                self.message, self.said_at_step = "", None
        except ServerError as error:  # the next read tries again; the screen says why it did not move
            self.message = str(error)

    def press(self, key: str) -> bool:
        """Handle one key; False means quit."""
        if key == "q":
            return False
        self.message = ""
        try:
            if self._bets_returned() and not self.round_open():
                return True  # the key was meant for a slip that is no longer there: the screen says so first
            told = self.message
            if self.round_open():
                self._playing_key(key)
            else:
                self._betting_key(key)
            self.message = f"{told} {self.message}".strip()
        except ServerError as error:
            self.message = amounts_in_currency(str(error), self.currency)
            if error.status not in (None, 503):  # the server answered: what it refused may have moved on
                self._catch_up()
        self.said_at_step = (self.message, _step(self.round)) \
            if self.message and self.round is not None and self.round_open() else None
        return True

    def _bets_returned(self) -> bool:
        """Bets the server returned: when the table's socket connected again (a dropped line), or at the table with
        its reason (``bets-returned``: betting closed without the player's DEAL, another sign-in's reconnection, a
        limit). The slip is read again and the screen says so, as the web page does, each table's bets in its
        currency. Before, the returned bets left the slip with no word (found by a terminal trial)."""
        if self.presence is None or not self.presence.has_returned():
            return False
        taken = self.presence.take_returned()
        told = [bets for bets in taken if "reason" in bets]
        reconnected = [bets for bets in taken if "reason" not in bets]
        words = []
        if reconnected:
            currencies = {row["id"]: row["currency"] for row in self.api.get("/tables")["tables"]}
            words.append(returned_bets_text(reconnected, currencies))
        for bets in told:
            total = int(bets.get("total") or 0)
            amount = format_money(total, bets.get("currency") or self.currency)
            words.append(f"Bets of {amount} returned. {bets['reason']}" if total else str(bets["reason"]))
        self.refresh()
        self.message = " ".join(words)
        return True

    def _catch_up(self) -> None:
        """After a refusal, read again what may have moved without this screen: a decision the server's timer took
        ("Round 4 is settled: no decision is pending."), a round dealt from the web page on the same account, a
        balance an operator credited. The refusal's words stay on screen."""
        told = self.message
        try:
            if self.round_open():
                self._read_round()
            else:
                self.refresh()
                if self.state["round"] is not None and "me" in self.state["round"]:
                    self.round = self.state["round"]  # a round of this player's begun elsewhere: played here on
        except ServerError:
            pass  # the server did not answer: the refusal said so
        # And what reading again found (none where it moved on a step, whose words it cleared):
        self.message = told if self.message in (told, "") else f"{told} {self.message}"

    def _betting_key(self, key: str) -> None:
        self.round = None  # a round that ended on screen: any key starts betting again
        slip = self.state["slip"]
        spots = int(self.table["hands_per_player"])
        path = f"/tables/{self.table_id}"
        if key.isdigit() and 1 <= int(key) <= spots:
            self.selected_spot = int(key)
            return
        if key == "c":
            chips = slip["enabled_chips"] or self.table["chips"]
            later = [chip for chip in chips if chip > slip["chip"]]
            self._slip(self.api.post(f"{path}/chip", {"chip": later[0] if later else chips[0]}))
        elif key == "b":
            self._slip(self.api.post(f"{path}/bets", {"spot": self.selected_spot, "type": MAIN}))
        elif key in self._side_keys():
            self._slip(self.api.post(f"{path}/bets", {"spot": self.selected_spot, "type": self._side_keys()[key]}))
        elif key in ("u", "x", "r"):
            before = _slip_bets(slip)
            answer = self.api.post(f"{path}/{ {'u': 'undo', 'x': 'double', 'r': 'rebet'}[key]}")
            if "id" in answer:  # single-deck's Same Bet: the rebet dealt, and its answer is the round
                self._dealt(answer)
            else:
                self._slip(answer)
                if key == "x":
                    self.message = self._capped_text(before)
        elif key == "d":
            self._dealt(self.api.post(f"{path}/deal"))
        elif key == "?" and self._sides():
            pays = (self.table.get("pays") or {}).get("side_bets") or {}  # a server before pays sends none
            self.message = " · ".join(paytable_text(self._side_title(name), pays[name],
                                                    self.table["side_bet_lines"].get(name, {}))
                                      for name in self._sides() if name in pays)
        else:
            self.message = f"Key {key!r} does nothing while betting; see the keys below."

    def _capped_text(self, before: Mapping[tuple[int, str], int]) -> str:
        """What x2 did not double: the bets it capped at their maximum (the server caps each, as the slip does).
        Before, a capped side bet was left for the player to notice (a terminal trial)."""
        after = _slip_bets(self.state["slip"])
        capped = [f"{self._bet_title(bet_type)}{f' on spot {spot}' if int(self.table['hands_per_player']) > 1 else ''}"
                  f" at {self.money(amount)}" for (spot, bet_type), amount in sorted(after.items())
                  if amount < 2 * before.get((spot, bet_type), 0)]
        return f"x2 capped at the table's maximum: {', '.join(capped)}." if capped else ""

    def _bet_title(self, bet_type: str) -> str:
        return "the main bet" if bet_type == MAIN else self._side_title(bet_type)

    def _slip(self, answer: Mapping[str, Any]) -> None:
        """A bet control's answer: the slip, and the balance it was checked against (a credit or a round played
        elsewhere since the last read shows at once; before, only a refusal, a deal or a round's end read it)."""
        self.state["slip"] = answer["slip"]
        if "balance" in answer:
            self.state["balance"] = answer["balance"]

    def _dealt(self, round_seen: dict[str, Any]) -> None:
        """A deal's answer: this player's round (a private one dealt, perhaps settled at once; a shared one forming)."""
        self.round = round_seen
        if self.round_open():
            self.refresh()  # the stake left the balance (a private table's), the slip emptied
        else:
            self._round_over()

    def _sides(self) -> list[str]:
        """The side bets this table takes: those it sets limits for, as the web page lists them."""
        return [name for name in self.table["limits"] if name != MAIN]

    def _side_title(self, name: str) -> str:
        return str(self.table["side_bet_titles"].get(name, name.replace("_", " ")))

    def _side_keys(self) -> dict[str, str]:
        return {SIDE_BET_KEYS[name]: name for name in self._sides() if name in SIDE_BET_KEYS}

    def _offer(self) -> str | None:
        """The offer this player is asked to answer (insurance, even money, early surrender), if any: the kind of
        the decision asked of them, as terminal play reads it from the engine."""
        decision = self.round.get("decision") if self.my_turn() and self.round else None
        kind = decision.get("kind") if decision else None
        return str(kind) if kind in OFFER_KEYS else None

    def _keys_now(self) -> Mapping[str, str]:
        offer = self._offer()
        keys = OFFER_KEYS[offer] if offer is not None else PLAY_KEYS  # type: ignore[index]
        return {key: str(action) for key, action in keys.items()}

    def _playing_key(self, key: str) -> None:
        assert self.round is not None
        if not self.my_turn():  # a common draw (its others withheld until it settles): everyone chooses at each step
            self.message = ("You have nothing to decide at this step: the round goes on once every player has chosen."
                            if self.round.get("others_withheld") else "It is not your turn.")
            return
        if key == "?":
            self.message = self._hint_text()
            return
        legal = self.round["legal_actions"]
        keys = self._keys_now()
        if keys.get(key) == "cash-out" and not self.cash_out_shown:
            self.message = "Cash out is hidden by your settings (the web page's Settings shows it again)."
            return
        if key not in keys or keys[key] not in legal:
            past = self._past_loss_room(keys.get(key))
            if past is not None:
                self.message = past
                return
            short_of = self._short_of()  # legal, but the balance cannot cover it: said so here too (a trial)
            choices = ", ".join(f"[{k}] {action}" + (" (the balance is short)" if action in short_of else "")
                                for k, action in keys.items()
                                if action in legal and (action != "cash-out" or self.cash_out_shown))
            self.message = f"Key {key!r} is not an action here; legal: {choices}."
            return
        self.round = self.api.post(f"/rounds/{self.round['id']}/actions", {"action": keys[key]})
        if not self.round_open():
            self._round_over()
        elif keys[key] in COSTLY_ACTIONS:  # a double, split or insurance took more from the balance
            self.refresh()

    def _round_over(self) -> None:
        """This player's round ended: its result from its own last view (the table may already hold the next round,
        another player's), then the table read again for the balance."""
        ended = self.round
        assert ended is not None
        if ended["status"] == "void":
            staked = int((ended.get("me") or {}).get("staked", 0))  # none before the deal: nothing to return
            reason = str(ended["void_reason"]).rstrip(".")  # some reasons are phrases, some sentences
            self.message = f"Round void: {reason}." + (" Every stake was returned." if staked else "")
        else:
            me = ended.get("me") or {}
            net = int(me.get("returned", 0)) - int(me.get("staked", 0))
            result = f"won {self.money(net)}" if net > 0 else f"lost {self.money(-net)}" if net < 0 else "even"
            self.rounds += 1
            # The decisions the timer took, as the page's result says them: at a shared table the result alone told
            # it (a terminal trial).
            times = int(me.get("timed_out") or 0)
            self.message = f"Round over: {result}." + (f" {timer_line(times)}" if times else "")
        self.refresh()
        self.round = ended  # shown until the next key

    def _hint_text(self) -> str:
        assert self.round is not None
        ranked = self.api.get(f"/rounds/{self.round['id']}/hint")["actions"]
        if not ranked:
            return "No hint for this offer."
        short_of = self._short_of()  # ranked by the maths, but not the balance's to pay: said so (a terminal trial)
        return "Hint (EV per unit bet): " + "  ".join(
            f"{row['action']} {row['ev']:+.3f}" + (" (the balance is short)" if row["action"] in short_of else "")
            for row in ranked)

    # ------------------------------------------------------------ drawing
    def draw(self) -> None:
        self.console.clear()
        self.console.print(self.render())

    def render(self) -> Group:
        header = Table.grid(expand=True)
        header.add_column()
        header.add_column(justify="right")
        balance = self.state.get("balance")
        header.add_row(Text(f"{self.table_name} · {self.player['name']}", style="bold green"),
                       Text(balance_text(balance, self._on_table(), self.currency) if balance is not None
                            else f"Balance not held in {self.currency}", style="bold yellow"))
        parts: list[RenderableType] = [header]
        parts += self._render_round(self.round) if self.round is not None else self._render_betting()
        # A message (a hint, a refusal) above what the table waits for, not in its place: it hid the "Decide by"
        # line, so the deadline left the screen with the first hint (a terminal trial).
        status = self._status()
        if self.message:
            parts.append(Text(self.message, style="bold cyan"))
        if status.strip() or not self.message:
            parts.append(Text(status, style="cyan" if self.message else "bold cyan"))
        parts.append(self._render_keys())
        return Group(*parts)

    def _on_table(self) -> int:
        """The player's bets not yet taken from the balance, in the table's currency: those held in a round still
        forming (staked when its betting closes), else the slip's; none while a round of theirs is in play, whose
        stakes the balance has paid."""
        current = self.state.get("round")
        if current is not None and "me" in current and current.get("currency", self.currency) == self.currency:
            if current["status"] == "playing":
                return 0
            if current["status"] == "betting":
                return sum(bet["bet"] + sum(bet["side_bets"].values()) for bet in current["me"]["bets"])
        return int(self.state["slip"]["total"])

    def _status(self) -> str:
        """What the table waits for, when it is not this player: the betting window, another player's turn; while
        the player bets, the round of others at the table."""
        now = self.clock()
        if not self.round_open():
            watched = self.watched if self.round is None else None
            if watched is None:
                return " "
            if watched["status"] == "betting":
                left = _deadline_seconds(watched.get("betting_closes_at"), now)
                closes = f" (betting closes in {left} s)" if left is not None else ""
                return f"Round {watched['id']} is taking bets{closes}: your bets and DEAL join it."
            # DEAL waits for its end (the server refuses it meanwhile): "your bets go to the next round" read as
            # though DEAL would take them there, and it was refused (a terminal trial).
            return f"Round {watched['id']} is in play without you: bet now, and DEAL once it ends."
        seen = self.round
        if seen is None:
            return " "
        if seen["status"] == "betting":
            left = _deadline_seconds(seen.get("betting_closes_at"), now)
            seats = int(seen.get("seat_count") or 1)
            bets_in = f"Bets are in ({seats} seat{'s' if seats != 1 else ''})."
            return f"{bets_in} Betting closes in {left} s." if left is not None else bets_in
        left = _deadline_seconds(seen.get("deadline"), now)
        # A decision the timer took for this player in this round is said beside the next one, as the page says it:
        # an insurance declined at the offers' time-out was told only in the result (a trial).
        times = int((seen.get("me") or {}).get("timed_out") or 0)
        timer = f"{timer_line(times)} " if times else ""
        if self.my_turn():  # the server decides for the player at this time (stand, decline)
            # A time of day, not a count: the screen is not drawn again while it waits for the key.
            by = datetime.fromisoformat(seen["deadline"]).astimezone() if seen.get("deadline") else None
            return f"{timer}Decide by {by:%H:%M:%S} ({_clock_text(left)} left when shown)." \
                if by is not None and left is not None else timer or " "
        clock = f" ({_clock_text(left)})" if left is not None else ""
        return f"{timer}{waiting_text(seen, self.player['id'])}{clock}."

    def _render_round(self, seen: Mapping[str, Any]) -> list[RenderableType]:
        dealer = dealer_text(seen["dealer"])
        shared = bool(self.table["shared"])
        table = Table(expand=True, show_edge=False, box=None, padding=(0, 1))
        for column in ("", *(("Player",) if shared else ()), "Hand", "Cards", "Total", "Stake", "Result"):
            table.add_column(column)
        decision = seen.get("decision") or {}
        mine = self.player["id"]
        # The offers before the peek are every player's at once: each one still answering is marked, where the one
        # the round names alone was (a trial of players: the mark on one, the line naming two).
        answering = set(seen.get("deciding") or ()) if decision.get("kind") not in (None, "play") else set()

        def deciding(hand: Mapping[str, Any]) -> bool:
            if answering:
                return hand["player_id"] in answering
            return bool(decision.get("player_id") == hand["player_id"] and decision.get("seat") == hand["seat"]
                        and decision.get("hand") == hand["hand"])

        # Each of the player's hands, and others' up to a few (the one deciding first): a crowded power round would
        # push the header off a 24-line screen.
        others = sorted((hand for hand in seen["hands"] if hand["player_id"] != mine), key=lambda h: not deciding(h))
        shown = [hand for hand in seen["hands"] if hand["player_id"] == mine or hand in others[:OTHERS_SHOWN]]
        for hand in shown:
            active = deciding(hand)
            cards, total, result = hand_cells(hand, self.currency)
            who = ("you" if hand["player_id"] == mine else str(hand["name"]),) if shared else ()
            table.add_row("▶" if active else "", *who,
                          f"{hand['seat']}" + (f".{hand['hand']}" if hand["from_split"] else ""),
                          cards, total, self.money(int(hand["stake"])), result, style="bold" if active else None)
        parts: list[RenderableType] = [Panel(dealer, title=f"Dealer · round {seen['id']} · {seen['status']}",
                                             border_style="green"), table]
        if len(others) > OTHERS_SHOWN:  # a line of its own: as a row it widened the Player column (a trial)
            more = len(others) - OTHERS_SHOWN
            players = len({hand["player_id"] for hand in others[OTHERS_SHOWN:]})
            parts.append(Text(f"  and {more} more hand{'s' if more != 1 else ''} of {players} other "
                              f"player{'s' if players != 1 else ''}", style="dim"))
        sides = self._side_results(seen)
        if sides:
            parts.append(Text("  ".join(sides), style="magenta"))
        if seen["status"] == "betting" and seen.get("me"):
            parts.append(Text(self._bets_in_text(seen["me"]["bets"]), style="bold"))
        return parts

    def _bets_in_text(self, bets: list[Mapping[str, Any]]) -> str:
        """The player's own bets in a round still taking bets, spot by spot: after DEAL at a shared table the slip
        is gone from the screen, and "Bets are in" said nothing of what they were (a terminal trial)."""
        spots = []
        for spot, entry in enumerate(bets, start=1):
            amounts = [f"{self.money(int(entry['bet']))} main"]
            amounts += [f"{self.money(int(amount))} {self._side_title(name)}"
                        for name, amount in entry.get("side_bets", {}).items() if amount]
            spots.append((f"spot {spot}: " if len(bets) > 1 else "") + ", ".join(amounts))
        return "Your bets: " + "; ".join(spots) + "."

    def _side_results(self, seen: Mapping[str, Any]) -> list[str]:
        mine = self.player["id"]
        lines = []
        for bet in seen.get("side_bets", []):
            if bet["player_id"] != mine:
                continue
            title = self._side_title(bet["name"])
            words = result_words(self.table["side_bet_lines"].get(bet["name"], {}), bet["result"])
            lines.append(f"{title} #{bet['seat']}: {words}, "
                         f"{net_text(int(bet['returned']) - int(bet['stake']), self.currency)}")
        for bet in seen.get("insurance_taken", []):  # a server before it sends none
            odds = (self.table.get("pays") or {}).get("insurance")  # what the game pays, where the server says
            lines.append(insurance_taken_text(int(bet["seat"]), self.money(int(bet["stake"])), odds))
        for bet in seen.get("insurance", []):
            if bet["player_id"] == mine:
                words = INSURANCE_WORDS.get(bet["result"], bet["result"])
                lines.append(f"Insurance #{bet['seat']}: {words}, "
                             f"{net_text(int(bet['returned']) - int(bet['stake']), self.currency)}")
        return lines

    def _render_betting(self) -> list[RenderableType]:
        slip, table_setting = self.state["slip"], self.table
        sides = self._sides()
        bets = _slip_bets(slip)
        table = bets_table([self._side_title(name) for name in sides])
        for spot in range(1, int(table_setting["hands_per_player"]) + 1):
            marker = "▶ " if spot == self.selected_spot else "  "
            table.add_row(marker + str(spot), *(self.money(bets.get((spot, name), 0)) for name in (MAIN, *sides)))
        limits = {name: (int(low), int(high)) for name, (low, high) in table_setting["limits"].items()}
        table.add_row("Limits", *(limits_text(*limits[name], self.currency) for name in (MAIN, *sides)), style="dim")
        pays = table_setting.get("pays")  # a server before pays sends none
        panel: RenderableType = table
        if pays:
            panel = Group(table, pays_line(str(pays["blackjack"]), [(self._side_title(name), pays_text(
                pays["side_bets"][name])) for name in sides if name in pays["side_bets"]]))
        chips = Text("Chips: ")
        for chip in table_setting["chips"]:
            style = "bold reverse" if chip == slip["chip"] else ("" if chip in slip["enabled_chips"] else "dim")
            chips.append(f" {short_money(chip, self.currency)} ", style=style)
        chips.append(f"   TOTAL BET {self.money(int(slip['total']))}", style="bold")
        title = "Place your bets" + (" · shared table" if table_setting["shared"] else "")
        return [Panel(panel, title=title, border_style="green"), chips,
                Text(_rules_line(str(table_setting["variant"])), style="dim")]

    def _render_keys(self) -> Text:
        if not self.round_open():
            side = "  ".join(f"[{key}] {self._side_title(name)}" for key, name in self._side_keys().items())
            spots = int(self.table["hands_per_player"])
            spot_keys = f"[1-{spots}] spot  " if spots > 1 else ""
            rebet = "[r] same bet (deals)" if self.table["same_bet_deals"] else "[r] rebet"
            keys = f"{spot_keys}[c] chip  [b] bet  [u] undo  [x] x2  {rebet}  [d] deal  [q] quit"
            return Text(keys + (f"\nSide bets on this spot: {side}" if side else ""), style="bold")
        if not self.my_turn():
            return Text("[q] quit (the server plays your open decisions when their time is up)", style="bold")
        assert self.round is not None
        offer = self._offer()
        legal = self.round["legal_actions"]
        if offer is not None:
            pending = [row for row in self.round.get("offers", {}).get("pending", []) if row["kind"] == offer]
            cost = int(pending[0]["cost"]) if pending else 0
            price = f" for {self.money(cost)}" if cost else ""
            seat = f" on hand {pending[0]['seat']}" if pending else ""
            return Text(f"{offer.replace('-', ' ').title()}{price}{seat}? [y]es [n]o  [?] hint  [q] quit",
                        style="bold")
        line = Text(style="bold")
        short_of = self._short_of()
        for key, action in self._keys_now().items():
            if action in legal and (action != "cash-out" or self.cash_out_shown):
                label = f"[{key}] {action}"
                cash_out = self.round.get("offers", {}).get("cash_out")
                if action == "cash-out" and cash_out is not None:
                    label += f" {self.money(int(cash_out))}"
                line.append(label, style="dim" if action in short_of else None)
                line.append("  ")
        line.append("[?] hint  [q] quit")
        if short_of:  # as the web page disables these buttons: the server would refuse them
            balance = self._balance_in_round()
            needs = ", ".join(f"{action} needs {self.money(cost)}" for action, cost in short_of.items())
            line.append(f"\nThe balance of {self.money(balance or 0)} is short: {needs}.", style="yellow")
        return line

    def _balance_in_round(self) -> int | None:
        """What the balance holds now for a decision of this round, as the web page counts it: the balance before
        the round less all it has staked so far; None for an operator's wallet that does not say."""
        me = (self.round or {}).get("me") or {}
        before = me.get("balance_before")
        return None if before is None else int(before) - int(me.get("staked", 0))

    def _past_loss_room(self, action: str | None) -> str | None:
        """Why ``action``, which adds a stake, is not among the round's legal actions where the player's daily loss
        limit left it out (the server's ``me.loss_room``); else None. Before, the key was "not an action here" with
        no word of the limit (a terminal trial)."""
        round_ = self.round or {}
        room = (round_.get("me") or {}).get("loss_room")
        offers = round_.get("offers") or {}
        cost = offers.get("insurance") if action == "insurance" else (offers.get("costs") or {}).get(action or "")
        if room is None or cost is None or int(cost) <= int(room):
            return None
        return (f"Your daily loss limit leaves {self.money(int(room))} to stake today: {action} would stake "
                f"{self.money(int(cost))}.")

    def _short_of(self) -> dict[str, int]:
        """The legal actions that add a stake (double, triple, quadruple, split) the balance cannot cover, each with
        what it needs. Before, the keys line offered them and the server refused them (a terminal trial)."""
        balance = self._balance_in_round()
        costs = ((self.round or {}).get("offers") or {}).get("costs") or {}  # the server's, from the engine
        if balance is None:
            return {}
        return {action: int(cost) for action, cost in costs.items() if int(cost) > balance}


def resume_guest(api: Api, guests: KeptGuests, url: str) -> dict[str, Any] | None:
    """Sign ``api`` in as the guest kept for ``url`` and return it as :func:`sign_in` does; None (and the kept
    token forgotten) where none is kept or the server no longer takes it (expired, signed out)."""
    token = guests.token_for(url)
    if token is None:
        return None
    api.token = token
    try:
        me = api.get("/me")
    except ServerError as error:
        if not error.token_refused:
            api.token = ""
            raise
        guests.forget(url)
        api.token = ""
        return None
    return {"player": {"id": me["id"], "name": me["name"]}, "resumed": True}


def play_at_server(url: str, table_id: str, name: str | None = None, password: str | None = None,
                   console: Console | None = None, keys: Iterator[str] | None = None,
                   http: httpx.Client | None = None, guests: KeptGuests | None = None,
                   resume: bool = True) -> RemoteTable:
    """Sign in at the server at ``url`` (without ``name``, the guest kept in ``guests`` for that server, else a new
    guest, kept there in its place once signed in; ``resume=False``: a new guest all the same), sit at ``table_id``
    and play until the player quits or the keys end; returns the table as it was left. A server that cannot be
    reached, a sign-in refused or a table it does not have raise :class:`ServerError` before anything is played."""
    with http or httpx.Client(base_url=url, timeout=30.0) as client:
        api = Api(client)
        before = guests.name_for(url) if name is None and guests is not None else None  # the guest kept till now
        try:
            signed_in = resume_guest(api, guests, url) if name is None and guests is not None and resume else None
            if signed_in is None:
                signed_in = sign_in(api, name, password)
        except ServerError as error:
            if error.status in (404, 405):  # another program answers there
                raise ServerError(f"No twentyone server answers at {url} (the sign-in was a {error.status}).",
                                  error.status) from error
            raise
        kept = _kept_words(guests, url, api.token, signed_in) if name is None and guests is not None else ""
        try:
            table = RemoteTable(api, table_id, signed_in["player"], console or Console())
        except ServerError as error:
            if error.status == 404:
                tables = ", ".join(row["id"] for row in api.get("/tables")["tables"])
                raise ServerError(f"The server has no table {table_id!r}; its tables: {tables}.", 404) from error
            raise
        if signed_in.get("returned_bets"):
            currencies = {row["id"]: row["currency"] for row in api.get("/tables")["tables"]}
            table.message = returned_bets_text(signed_in["returned_bets"], currencies)
        elif signed_in.get("resumed"):
            table.message = f"Welcome back, {signed_in['player']['name']}: the guest kept on this machine."
        elif before is not None and before != signed_in["player"]["name"]:  # said, not left to be noticed (a trial)
            now = signed_in["player"]["name"]
            table.message = (f"You play as a new guest, {now}; {before}, kept on this machine until now, is no longer."
                             if not resume else
                             f"{before}, the guest kept on this machine, is no longer known to this server (signed "
                             f"out, expired, or its records gone): you play as a new guest, {now}.")
        if keys is None:
            table.keyboard = sys.stdin
        if table.table["shared"] and http is None:  # a client of the caller's (a test's app) has no socket
            table.presence = Presence.opened(url, table_id, api.token)  # before any key: see Presence
        try:
            with single_keys() if keys is None else contextlib.nullcontext():  # from the first screen on
                table.run(keys if keys is not None else read_keys())
        finally:
            if table.presence is not None:
                table.presence.stop()
        if kept:
            table.console.print(kept)
    return table


def _kept_words(guests: KeptGuests, url: str, token: str, signed_in: Mapping[str, Any]) -> str:
    """Keep a new guest's sign-in for ``url`` and say, for the goodbye, how the player comes back to it (the
    same command); where it cannot be kept, say that instead."""
    name = str(signed_in["player"]["name"])
    if not signed_in.get("resumed"):
        try:
            guests.keep(url, token, name)
        except OSError as error:
            return f"{name} could not be kept on this machine ({error.strerror or error}): a next run is a new guest."
    return (f"{name} is kept on this machine: the same command comes back to its balance and any round left open "
            f"(--new-guest starts another in its place).")
