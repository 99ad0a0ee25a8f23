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
from collections import Counter, deque
from collections.abc import Collection, Mapping
from typing import Any

QUEUE_LIMIT = 256  # events one client may leave unread before it is dropped
DROPPED_CODE = 1013  # WebSocket close code for a dropped client: "try again later" (reconnect and re-read)
# Why a client was dropped, the close's reason (at most 123 bytes): the client read too slowly, or events between the
# server's processes may have been lost. Before, the second was told as the first, and players who had read every
# event were told they had not (an operator's trial).
SLOW_READER = "Too many unread events: reconnect and read the table again."
EVENTS_LOST = "The server may have missed events of this table: reconnect and read the table again."


def presence_summary(watchers: Mapping[str, Collection[int]]) -> dict[str, int | None]:
    """Whom a process has at each table, from each table's players, as other processes need it to tell whether
    anyone but a given player is there: the one player's id, or ``None`` for two or more (so a crowded table's
    summary stays the same as players come and go); a table with nobody is left out.

    >>> presence_summary({"power": {3}, "classic": set(), "multiplayer": {3, 4}})
    {'power': 3, 'multiplayer': None}
    """
    return {table_id: next(iter(players)) if len(players) == 1 else None
            for table_id, players in watchers.items() if players}


class Subscription:
    """One client's queue of events; lives on the event loop that serves the client."""

    def __init__(self, loop: asyncio.AbstractEventLoop, limit: int, player_id: int | None = None) -> None:
        self.loop = loop
        self.limit = limit
        self.player_id = player_id  # who is watching (None: the operator)
        self.dropped = False
        self.drop_reason = SLOW_READER
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

    def drop(self, reason: str = SLOW_READER) -> None:
        """Give up on this client (on the loop's thread): it must reconnect and re-read."""
        if not self.dropped:
            self.drop_reason = reason
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
        # Each table's players watching through this process, with their sockets' count: whether anyone but a given
        # player is there is then a look at two keys, not a pass over a crowded power table's thousand sockets.
        self._watchers: dict[str, Counter[int]] = {}
        self._lock = threading.Lock()

    def subscribe(self, table_id: str, player_id: int | None = None) -> Subscription:
        subscription = Subscription(asyncio.get_running_loop(), self.limit, player_id)
        with self._lock:
            self._subscribers.setdefault(table_id, set()).add(subscription)
            changed = player_id is not None and self._counted(table_id, player_id, 1)
        if changed:
            self._presence_changed(table_id)
        return subscription

    def unsubscribe(self, table_id: str, subscription: Subscription) -> None:
        changed = False
        with self._lock:
            subscribers = self._subscribers.get(table_id)
            if subscribers is not None and subscription in subscribers:
                subscribers.discard(subscription)
                if not subscribers:
                    del self._subscribers[table_id]
                if subscription.player_id is not None:
                    changed = self._counted(table_id, subscription.player_id, -1)
        if changed:
            self._presence_changed(table_id)

    def _counted(self, table_id: str, player_id: int, step: int) -> bool:
        """Count a player's socket at a table in or out (the lock held); say whether the table's presence as
        :func:`presence_summary` tells it changed: a player came or went while the table had at most two."""
        watchers = self._watchers.setdefault(table_id, Counter())
        watchers[player_id] += step
        sockets = watchers[player_id]
        if sockets <= 0:
            del watchers[player_id]
        if not watchers:
            del self._watchers[table_id]
        if step > 0:  # a first socket of theirs: nobody to one, or one to two or more
            return sockets == 1 and len(watchers) <= 2
        return sockets == 0 and len(watchers) <= 1  # their last socket: one to nobody, or two to one

    def _presence_changed(self, table_id: str) -> None:
        """Called (outside the lock) when whom this process has at a table changed; other processes need to know."""

    def present(self, table_id: str) -> set[int]:
        """The players watching a table live through this process."""
        with self._lock:
            return set(self._watchers.get(table_id, ()))

    def presence(self) -> dict[str, int | None]:
        """Whom this process has at each table where anyone watches (:func:`presence_summary`)."""
        with self._lock:
            return presence_summary(self._watchers)

    def connected(self) -> bool:
        """Whether events from every process reach this one's clients: in one process, always."""
        return True

    def anyone_else(self, table_id: str, player_id: int) -> bool:
        """Whether a player other than ``player_id`` watches the table live (here: through this process).

        >>> Broadcaster().anyone_else("power", 7)
        False
        """
        with self._lock:
            watchers = self._watchers.get(table_id, ())
            return len(watchers) > 1 or (len(watchers) == 1 and player_id not in watchers)

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
            _call_soon(subscription.loop, subscription.drop, EVENTS_LOST)

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
