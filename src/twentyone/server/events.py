"""Live events per table, for the WebSocket: a small in-process publish/subscribe.

Request handlers run in worker threads; subscribers are asyncio queues on the
server's event loop, so publishing hands each event to the loop thread-safely.
Several server processes would put a broker (PostgreSQL LISTEN/NOTIFY) behind
this same interface (docs/server.md).
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any


class Broadcaster:
    def __init__(self) -> None:
        self._subscribers: dict[str, set[tuple[asyncio.AbstractEventLoop, asyncio.Queue[dict[str, Any]],
                                               int | None]]] = {}
        self._lock = threading.Lock()

    def subscribe(self, table_id: str, player_id: int | None = None) -> asyncio.Queue[dict[str, Any]]:
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(maxsize=256)
        with self._lock:
            self._subscribers.setdefault(table_id, set()).add((asyncio.get_running_loop(), queue, player_id))
        return queue

    def present(self, table_id: str) -> set[int]:
        """The players watching a table live (connected to this process)."""
        with self._lock:
            return {entry[2] for entry in self._subscribers.get(table_id, set()) if entry[2] is not None}

    def unsubscribe(self, table_id: str, queue: asyncio.Queue[dict[str, Any]]) -> None:
        with self._lock:
            self._subscribers[table_id] = {entry for entry in self._subscribers.get(table_id, set())
                                           if entry[1] is not queue}

    def publish(self, table_id: str, event: dict[str, Any]) -> None:
        with self._lock:
            targets = list(self._subscribers.get(table_id, set()))
        for loop, queue, _ in targets:
            loop.call_soon_threadsafe(_offer, queue, {"table_id": table_id, **event})


def _offer(queue: asyncio.Queue[dict[str, Any]], event: dict[str, Any]) -> None:
    if not queue.full():  # a client too slow to read misses events, not the server's memory
        queue.put_nowait(event)
