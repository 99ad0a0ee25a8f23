"""What stands between the network and the game: size limits on a request's head and body, a first count of an
address's new guests (the database keeps the count for every process), and a schema that tells the truth.

The OpenAPI schema is what test labs and client generators read, so it must
describe the server as it answers: every error is ``{"detail": "..."}`` (400,
401, 403, 404, 409, 413, 422, 429, 503), and a request that changes state
requires an ``Idempotency-Key``.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from twentyone.server.context import ServiceError

T = TypeVar("T")
K = TypeVar("K")

MAX_HEAD = 16 * 1024  # bytes of request line and headers, as h11's and Node's default: ours need under 1 KB
REQUEST_SECONDS = 10.0  # a request, head and body, must be whole this long after its first byte (Node: 60-300 s)

ERROR_STATUSES = {
    "400": "A header is missing or malformed (the Idempotency-Key).",
    "401": "No valid bearer token.",
    "403": "Not allowed for this caller (operator only, limits, self-exclusion).",
    "404": "No such table, round or control for this caller.",
    "409": "Refused in the game's present state; the detail says why.",
    "413": "The request body is too large.",
    "422": "A field is missing or has a wrong value.",
    "429": "Too many requests of this kind from this address.",
    "431": "The request line and headers are larger than 16 KiB.",
    "500": "An internal error, logged; the detail says whether the request may have changed anything.",
    "503": "The game is busy and changed nothing; retry after Retry-After seconds.",
}


SECURITY_HEADERS = [
    (b"x-frame-options", b"DENY"),  # no other site frames the table and steers a signed-in player's clicks
    (b"content-security-policy", b"frame-ancestors 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
]


class SecurityHeaders:
    """Every HTTP answer carries :data:`SECURITY_HEADERS`. Before, any site could frame the web table, invisible, over
    its own page: a player's token is in the page's storage, so a tricked click could deal or double (found by a trial
    of an attacker)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", ()), *SECURITY_HEADERS]
            await send(message)

        await self.app(scope, receive, with_headers)


class BodyLimit:
    """Refuse (413) a request body larger than ``limit`` bytes, before the application reads it."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.limit):
            await _too_large(send, self.limit)
            return
        seen = 0
        refused = False

        async def counted() -> Message:
            # A streamed body past the limit: answer 413 here and tell the app the client left. (Raising
            # instead would reach the framework's body parser, which turns any error into a 400.)
            nonlocal seen, refused
            message = await receive()
            if message["type"] == "http.request" and not refused:
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    refused = True
                    await _too_large(send, self.limit)
                    return {"type": "http.disconnect"}
            return message

        async def guarded(message: Message) -> None:
            if not refused:  # once the 413 is sent, the app's own answer is dropped
                await send(message)

        try:
            await self.app(scope, counted, guarded)
        except Exception:
            if not refused:
                raise


async def _too_large(send: Send, limit: int) -> None:
    body = f'{{"detail": "The request body is larger than {limit} bytes."}}'.encode()
    await send({"type": "http.response.start", "status": 413,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


class _HeadTooLarge(Exception):
    """Raised from a parser callback to stop httptools at a head already refused: httptools wraps it in an
    ``HttpParserError``, which uvicorn answers with :meth:`BoundedHead.send_400_response` (silent here)."""


class BoundedHead(HttpToolsProtocol):
    """uvicorn's HTTP/1.1 protocol (httptools) that refuses a request head past :data:`MAX_HEAD` bytes (431).

    httptools hands uvicorn each header as it arrives, and uvicorn keeps every byte of it until
    the blank line that ends the head: unbounded, a single connection sending a 200 MB
    ``Authorization`` header grew the server by 330 MB before its 401. Two counts bound it:
    the raw bytes received while a head is still incomplete (so memory stays bounded however
    slowly or quickly it comes), and the head's exact size once parsed (so a head past the
    bound is refused whether it came in one read or many). Past either, the connection is
    answered 431 and closed. A request must also be whole, head and body, within
    :data:`REQUEST_SECONDS` of its first byte: uvicorn has no such timeout, and a client
    dripping a head (slowloris) or a body a byte at a time held its connection, and the body's
    handler, for as long as it liked. A late head is answered 408; a late body, whose request
    the application is already serving, ends with the connection closed.
    ``serve`` (one process or several) runs uvicorn with it
    (``http="twentyone.server.guards:BoundedHead"``).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._raw_head = self._parsed_head = 0
        self._reading_head = True
        self._refused = False
        self._timer: asyncio.TimerHandle | None = None

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        if self._reading_head:
            if self._timer is None:  # a request begins: it has REQUEST_SECONDS to arrive whole
                self._timer = self.loop.call_later(REQUEST_SECONDS, self._too_slow)
            self._raw_head += len(data)
        super().data_received(data)
        if self._reading_head and self._raw_head > MAX_HEAD and not self._refused:
            self._refuse_head()

    def on_url(self, url: bytes) -> None:
        self._parsed_head += len(url)
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._parsed_head += len(name) + len(value) + 4  # ": " and the line's end
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._reading_head = False  # the body, if any, is BodyLimit's to bound
        if self._parsed_head > MAX_HEAD:
            self._refuse_head()
            raise _HeadTooLarge  # nothing of this request reaches the application
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._stop_timer()
        super().on_message_complete()
        self._reading_head, self._raw_head, self._parsed_head = True, 0, 0  # the next request on this connection

    def handle_websocket_upgrade(self) -> None:
        self._stop_timer()  # the connection is the WebSocket's from here: no request timeout
        super().handle_websocket_upgrade()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_timer()
        super().connection_lost(exc)

    def _stop_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _too_slow(self) -> None:
        self._timer = None
        if self._refused:
            return
        if self._reading_head:
            self._refuse(b"408 Request Timeout",
                         f"The request head did not arrive whole within {REQUEST_SECONDS:g} s.")
        else:  # the application is serving this request, and may have answered: no second answer, just close
            self._refused = True
            self.transport.close()

    def send_400_response(self, msg: str) -> None:
        """Malformed HTTP (a request line or header httptools cannot parse): uvicorn answered it in plain text, the
        one error of the API that was not ``{"detail": ...}``. After a refused head the 431 is already on its way."""
        if not self._refused:
            self._refuse(b"400 Bad Request", "The request is not valid HTTP/1.1.")

    def _refuse_head(self) -> None:
        self._refuse(b"431 Request Header Fields Too Large",
                     f"The request line and headers are larger than {MAX_HEAD} bytes.")

    def _refuse(self, status: bytes, detail: str) -> None:
        self._refused = True
        self._stop_timer()
        cycle = getattr(self, "cycle", None)
        if cycle is None or cycle.response_complete:  # else an answer is under way: just close
            body = json.dumps({"detail": detail}, separators=(",", ":")).encode()
            self.transport.write(b"HTTP/1.1 " + status + b"\r\ncontent-type: application/json"
                                 b"\r\nx-content-type-options: nosniff"
                                 b"\r\nconnection: close\r\ncontent-length: " + str(len(body)).encode()
                                 + b"\r\n\r\n" + body)
        self.transport.close()


class RateLimiter:
    """At most ``per_minute`` events per key (a client address) in any sliding minute of ``clock`` (seconds); past
    it, 429. In front of the limit on new accounts that the database counts for every process
    (``accounts.admit_guest``): a flood this process alone has seen is refused here, without a write transaction.

    >>> limiter = RateLimiter(per_minute=2)
    >>> limiter.check("1.2.3.4"); limiter.check("1.2.3.4")
    >>> limiter.check("1.2.3.4")
    Traceback (most recent call last):
    ...
    twentyone.server.context.ServiceError: Too many new accounts from this address: try again in a minute.
    """

    def __init__(self, per_minute: int, clock: Any = time.monotonic,
                 refusal: str = "Too many new accounts from this address: try again in a minute.",
                 **extra: Any) -> None:
        self.per_minute = per_minute
        self.clock = clock
        self.refusal = refusal
        self.extra = extra  # fields of the refusal's answer beside ``detail``
        self._events: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def check(self, key: str) -> None:
        """Count an event of ``key``'s, or refuse it (429) where its minute is full."""
        if not self.count(key):
            raise self.refused()

    def is_full(self, key: str) -> bool:
        """Whether ``key``'s last minute holds ``per_minute`` events."""
        with self._lock:
            return len(self._window(key)) >= self.per_minute

    def count(self, key: str) -> bool:
        """Count an event of ``key``'s where its minute is not full (one step: two threads never both take the last
        place); whether it was counted. Events past the limit are not counted, so a client that keeps trying is
        let in again a minute after its first counted event, and an address's count never outgrows the limit."""
        with self._lock:
            events = self._window(key)
            if len(events) >= self.per_minute:
                return False
            events.append(self.clock())
            return True

    def uncount(self, key: str) -> None:
        """Give back a place :meth:`count` took (the event it stood for did not happen: a token that was taken)."""
        with self._lock:
            events = self._events.get(key)
            if events:
                events.pop()

    def _window(self, key: str) -> deque[float]:
        """``key``'s events of the last minute (under the lock)."""
        now = self.clock()
        if len(self._events) > 100_000:  # forget idle addresses rather than grow without bound
            self._events = {k: v for k, v in self._events.items() if v and now - v[-1] < 60}
        events = self._events.setdefault(key, deque())
        while events and now - events[0] >= 60:
            events.popleft()
        return events

    def refused(self) -> ServiceError:
        return ServiceError(429, self.refusal, {"Retry-After": "60"}, **self.extra)


# Tokens this server does not take, sent from one address this many times in a minute, and every token that address
# sends is looked up as a player's until the minute is over: a player's is served (a random 256-bit token is not
# guessed, and a player behind the same address is not locked out), any other is refused (429), the operator's own
# included, after the same lookup, so that neither the answer nor its time tells a right guess from a wrong one. A
# player's expired token costs one. Counted in each process: N processes allow N times as many.
BAD_TOKENS_PER_MINUTE = 30


def bad_token_limiter(clock: Any = time.monotonic) -> RateLimiter:
    """The limit on tokens this server does not take, by client address (:data:`BAD_TOKENS_PER_MINUTE`).

    >>> limiter = bad_token_limiter()
    >>> all(limiter.count("1.2.3.4") for _ in range(BAD_TOKENS_PER_MINUTE))
    True
    >>> limiter.count("1.2.3.4"), limiter.is_full("1.2.3.4"), limiter.is_full("5.6.7.8")
    (False, True, False)
    >>> limiter.refused().detail, limiter.refused().extra
    ('Too many requests with a token this server does not take, from this address: try again in a minute.', \
{'token_refused': True})
    """
    # ``token_refused``: the token sent is not taken here now, whoever's it is, so a page drops it and shows the
    # lobby (a player's page holding a stale token was left with this line alone for the minute: a trial of players).
    return RateLimiter(BAD_TOKENS_PER_MINUTE, clock, "Too many requests with a token this server does not take, "
                                                     "from this address: try again in a minute.", token_refused=True)


class HashingGate:
    """Sign-ins and sign-ups hash a password (argon2, about 0.1 s of a CPU, on purpose): at most ``at_once`` of them
    run in this process at a time and ``waiting`` more wait, on the event loop and not in a worker thread; past those,
    503 with ``Retry-After``. Before, a flood of sign-ins held every worker thread hashing, and every player's
    requests waited behind them (a trial: a read's p50 went from 3 ms to 3.1 s under 25 clients guessing).

    >>> import asyncio
    >>> gate = HashingGate(at_once=1, waiting=0)
    >>> async def two_at_once():
    ...     slow = asyncio.create_task(gate.run(asyncio.sleep, 0.05))
    ...     await asyncio.sleep(0)
    ...     try:
    ...         await gate.run(asyncio.sleep, 0)
    ...     finally:
    ...         await slow
    >>> from concurrent.futures import ThreadPoolExecutor  # a loop of its own, whatever runs in this thread
    >>> ThreadPoolExecutor(1).submit(asyncio.run, two_at_once()).result()
    Traceback (most recent call last):
    ...
    twentyone.server.context.ServiceError: Too many sign-ins at once: try again in a moment.
    """

    def __init__(self, at_once: int = 1, waiting: int = 16) -> None:
        self.at_once = at_once
        self.waiting = waiting
        self._semaphore: asyncio.Semaphore | None = None  # made on the loop that first uses it
        self._queued = 0

    async def run(self, call: Callable[..., Awaitable[T]], *args: Any) -> T:
        """``await call(*args)`` in turn, or 503 at once when too many wait already."""
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(self.at_once)
        if self._semaphore.locked() and self._queued >= self.waiting:
            raise ServiceError(503, "Too many sign-ins at once: try again in a moment.", {"Retry-After": "1"})
        self._queued += 1
        try:
            await self._semaphore.acquire()
        finally:
            self._queued -= 1  # entered, or cancelled while waiting
        try:
            return await call(*args)
        finally:
            self._semaphore.release()


class SocketLimits:
    """The WebSockets open in this process, by player and by client address: past ``per_player`` or
    ``per_address``, a new one is refused. Before, one token could open thousands, each a subscriber every event of
    its table is handed to: a trial's 5,000 sockets took another player's reads from 2 ms to 131 ms (p50) and the
    process's memory up by 120 MB. The operator's sockets are not counted.

    >>> limits = SocketLimits(per_player=2, per_address=3)
    >>> limits.admit(7, "10.0.0.1"), limits.admit(7, "10.0.0.1")
    (0, 1)
    >>> limits.admit(7, "10.0.0.1")
    Traceback (most recent call last):
    ...
    twentyone.server.context.ServiceError: Too many connections of yours at once (2): close a page and try again.
    >>> limits.admit(8, "10.0.0.1")
    0
    >>> limits.admit(9, "10.0.0.1")
    Traceback (most recent call last):
    ...
    twentyone.server.context.ServiceError: Too many connections from this address at once (3): try again later.
    >>> limits.release(7, "10.0.0.1"); limits.admit(9, "10.0.0.1")
    0
    """

    def __init__(self, per_player: int = 8, per_address: int = 256) -> None:
        self.per_player = per_player
        self.per_address = per_address
        self._players: dict[int, int] = {}
        self._addresses: dict[str, int] = {}
        self._lock = threading.Lock()

    def admit(self, player: int | None, address: str) -> int:
        """Count a new socket of ``player`` (None: the operator's, not counted) from ``address``, and say how many
        other sockets the player has open in this process; or refuse it (429)."""
        if player is None:
            return 0
        with self._lock:
            others = self._players.get(player, 0)
            if others >= self.per_player:
                raise ServiceError(429, f"Too many connections of yours at once ({self.per_player}): close a page "
                                        "and try again.")
            if self._addresses.get(address, 0) >= self.per_address:
                raise ServiceError(429, f"Too many connections from this address at once ({self.per_address}): try "
                                        "again later.")
            self._players[player] = others + 1
            self._addresses[address] = self._addresses.get(address, 0) + 1
            return others

    def release(self, player: int | None, address: str) -> None:
        """A socket :meth:`admit` counted has closed."""
        if player is None:
            return
        with self._lock:
            _count_down(self._players, player)
            _count_down(self._addresses, address)


def _count_down(counts: dict[K, int], key: K) -> None:
    left = counts[key] - 1
    if left:
        counts[key] = left
    else:
        del counts[key]  # an idle player or address takes no memory


def document_errors(app: FastAPI) -> None:
    """Make ``/openapi.json`` describe the errors the server really sends, and the required key header."""

    def schema() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        spec = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
        components = spec.setdefault("components", {}).setdefault("schemas", {})
        # The fields a refusal may carry beside its sentence (docs/server.md, "Errors"): an integrator's trial found
        # them in the docs alone, the schema naming ``detail``.
        components["Error"] = {"type": "object", "required": ["detail"], "additionalProperties": True, "properties": {
            "detail": {"type": "string", "description": "One sentence, for the player."},
            "legal_actions": {"type": "array", "items": {"type": "string"},
                              "description": "A refused decision's: the decisions open now."},
            "maximum": {"type": "boolean", "description": "A bet refused past its maximum."},
            "amounts": {"type": "object", "additionalProperties": {"type": "integer"},
                        "description": "A refusal about money: the sentence's amounts, in minor units."},
            "currency": {"type": "string", "description": "The currency of ``amounts``."},
            "token_refused": {"type": "boolean",
                              "description": "The token sent is not taken here now: sign in again."}}}
        components.pop("HTTPValidationError", None)
        components.pop("ValidationError", None)
        error = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
        for path_item in spec.get("paths", {}).values():
            for operation in path_item.values():
                responses = operation.setdefault("responses", {})
                for status, description in ERROR_STATUSES.items():
                    responses[status] = {"description": description, **error}
                for parameter in operation.get("parameters", []):
                    if parameter.get("name") == "Idempotency-Key":
                        parameter["required"] = True
                        # What the store accepts: printable ASCII, its ends not spaces (HTTP strips those).
                        parameter["schema"] = {"type": "string", "minLength": 1, "maxLength": 128,
                                               "pattern": "^[\\x21-\\x7e]([\\x20-\\x7e]*[\\x21-\\x7e])?$"}
        app.openapi_schema = spec
        return spec

    app.openapi = schema  # type: ignore[method-assign]
