"""Live events per table, for the WebSocket: a small publish/subscribe with a bounded queue per client.

Request handlers run in worker threads; subscribers are queues on the server's
event loop, so publishing hands each event to the loop thread-safely. Events
carry ids and statuses only (never cards): a client re-reads the round or the
table on each one, so an event is a hint to re-read, not state.

Each client's queue is bounded. A client too slow to read (its queue full) is
*dropped*, not silently skipped: its subscription says so, the WebSocket is
closed (code 1013, "try again later"), and the client reconnects and re-reads.
A client therefore either sees every event of its table or knows it must
re-read; memory per client stays bounded whatever the table's traffic.

Several processes: :class:`twentyone.server.cluster.PostgresBroadcaster` keeps
this interface and carries each event to every process by ``LISTEN/NOTIFY``.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import deque
from typing import Any

QUEUE_LIMIT = 256  # events one client may leave unread before it is dropped
DROPPED_CODE = 1013  # WebSocket close code for a dropped client: "try again later" (reconnect and re-read)


class Subscription:
    """One client's queue of events; lives on the event loop that serves the client."""

    def __init__(self, loop: asyncio.AbstractEventLoop, limit: int, player_id: int | None = None) -> None:
        self.loop = loop
        self.limit = limit
        self.player_id = player_id  # who is watching (None: the operator)
        self.dropped = False
        self._pending: deque[dict[str, Any]] = deque()
        self._ready = asyncio.Event()

    def offer(self, event: dict[str, Any]) -> None:
        """Queue an event (on the loop's thread); past the limit the client is dropped instead."""
        if self.dropped:
            return
        if len(self._pending) >= self.limit:
            self.drop()
            return
        self._pending.append(event)
        self._ready.set()

    def drop(self) -> None:
        """Give up on this client (on the loop's thread): it must reconnect and re-read."""
        self.dropped = True
        self._pending.clear()
        self._ready.set()

    async def next(self) -> dict[str, Any] | None:
        """The next event, or None once the client was dropped."""
        while not self._pending and not self.dropped:
            self._ready.clear()
            await self._ready.wait()
        return None if self.dropped else self._pending.popleft()

    async def wait_dropped(self) -> None:
        """Return once the client was dropped (even while a send to it is stuck)."""
        while not self.dropped:
            self._ready.clear()
            await self._ready.wait()


class Broadcaster:
    """The in-process fan-out: every subscriber of a table gets every event published for it."""

    def __init__(self, limit: int = QUEUE_LIMIT) -> None:
        self.limit = limit
        self._subscribers: dict[str, set[Subscription]] = {}
        self._lock = threading.Lock()

    def subscribe(self, table_id: str, player_id: int | None = None) -> Subscription:
        subscription = Subscription(asyncio.get_running_loop(), self.limit, player_id)
        with self._lock:
            self._subscribers.setdefault(table_id, set()).add(subscription)
        return subscription

    def present(self, table_id: str) -> set[int]:
        """The players watching a table live through this process."""
        with self._lock:
            return {s.player_id for s in self._subscribers.get(table_id, ()) if s.player_id is not None}

    def anyone_else(self, table_id: str, player_id: int) -> bool:
        """Whether a player other than ``player_id`` watches the table live (here: through this process).

        >>> Broadcaster().anyone_else("power", 7)
        False
        """
        return bool(self.present(table_id) - {player_id})

    def unsubscribe(self, table_id: str, subscription: Subscription) -> None:
        with self._lock:
            subscribers = self._subscribers.get(table_id)
            if subscribers is not None:
                subscribers.discard(subscription)
                if not subscribers:
                    del self._subscribers[table_id]

    def publish(self, table_id: str, event: dict[str, Any]) -> None:
        """Announce an event of ``table_id`` (after its change committed), from any thread."""
        self.deliver(table_id, event)

    def deliver(self, table_id: str, event: dict[str, Any]) -> None:
        """Hand an event to this process's subscribers of the table."""
        with self._lock:
            targets = list(self._subscribers.get(table_id, ()))
        message = {"table_id": table_id, **event}
        if event.get("private"):  # one player's own news: to that player's clients and the operator's alone
            targets = [s for s in targets if s.player_id in (None, event.get("player_id"))]
        # One hand-over per event loop (one per process in practice), not one per subscriber: each is a wake-up of the
        # loop (a write to its self-pipe), a thousand of them per event at a crowded power table.
        by_loop: dict[asyncio.AbstractEventLoop, list[Subscription]] = {}
        for subscription in targets:
            by_loop.setdefault(subscription.loop, []).append(subscription)
        for loop, subscriptions in by_loop.items():
            _call_soon(loop, _offer_each, subscriptions, message)

    def drop_all(self) -> None:
        """Drop every client of this process (events may have been missed): they reconnect and re-read."""
        with self._lock:
            targets = [s for subscribers in self._subscribers.values() for s in subscribers]
        for subscription in targets:
            _call_soon(subscription.loop, subscription.drop)

    def start(self) -> None:
        """Begin serving (nothing to start in one process)."""

    def stop(self) -> None:
        """Stop serving (nothing to stop in one process)."""


def _offer_each(subscriptions: list[Subscription], event: dict[str, Any]) -> None:
    for subscription in subscriptions:
        subscription.offer(event)


def _call_soon(loop: asyncio.AbstractEventLoop, callback: Any, *args: Any) -> None:
    with contextlib.suppress(RuntimeError):  # the loop closed (server shutting down): its clients are gone anyway
        loop.call_soon_threadsafe(callback, *args)
