"""The in-process fan-out (server/events.py): every subscriber of a table gets each event, handed to its loop once."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from twentyone.server.events import Broadcaster


def test_an_event_reaches_every_subscriber_with_one_wake_up_of_their_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """At a power table of a thousand, one hand-over to the loop per subscriber was a thousand wake-ups per event
    (4.3-4.6 ms for 1,000, pinned); one per loop, 0.43-0.45 ms. Each subscriber still gets the event, once, in order,
    and another table's subscribers none."""
    async def scenario() -> tuple[list[list[dict[str, Any]]], list[int], int]:
        loop = asyncio.get_running_loop()
        handed = 0
        original = loop.call_soon_threadsafe

        def counted(callback: Any, *args: Any) -> Any:
            nonlocal handed
            handed += getattr(callback, "__name__", "") in ("offer", "_offer_each")  # not asyncio.to_thread's own
            return original(callback, *args)

        monkeypatch.setattr(loop, "call_soon_threadsafe", counted)
        broadcaster = Broadcaster()
        power = [broadcaster.subscribe("power", player_id) for player_id in range(1, 101)]
        other = broadcaster.subscribe("classic", 500)
        await asyncio.to_thread(broadcaster.publish, "power", {"type": "round", "round_id": 1})
        await asyncio.to_thread(broadcaster.publish, "power", {"type": "settled", "round_id": 1})
        received = [[await subscription.next(), await subscription.next()] for subscription in power]
        return received, [len(other._pending)], handed

    received, other_pending, handed = asyncio.run(scenario())
    assert handed == 2  # one per event, not one per subscriber
    assert all(events == [{"table_id": "power", "type": "round", "round_id": 1},
                          {"table_id": "power", "type": "settled", "round_id": 1}] for events in received)
    assert other_pending == [0]


class Watched(Broadcaster):
    """A broadcaster that notes each table whose presence changed (where a process on PostgreSQL tells the others)."""

    def __init__(self) -> None:
        super().__init__()
        self.changes: list[str] = []

    def _presence_changed(self, table_id: str) -> None:
        self.changes.append(table_id)


def test_whom_a_process_has_at_a_table_is_counted_per_player_and_told_only_when_it_changes() -> None:
    """Presence as other processes get it: nobody, one player (by id), or two or more. Each player's sockets are
    counted, so a second tab changes nothing, nor a third player at a crowded table; the operator counts nobody."""

    async def scenario() -> list[tuple[list[str], dict[str, int | None], bool, bool]]:
        events = Watched()
        seen = []

        def step(action: Any) -> None:
            events.changes.clear()
            action()
            seen.append((list(events.changes), events.presence(), events.anyone_else("power", 1),
                         events.anyone_else("power", 9)))

        ann: list[Any] = []
        step(lambda: events.subscribe("power", None))  # the operator
        step(lambda: ann.append(events.subscribe("power", 1)))
        step(lambda: ann.append(events.subscribe("power", 1)))  # her second tab
        bob = events.subscribe("power", 2)
        events.changes.clear()
        cat = events.subscribe("power", 3)
        step(lambda: None)
        step(lambda: events.unsubscribe("power", cat))
        step(lambda: events.unsubscribe("power", bob))
        step(lambda: events.unsubscribe("power", ann[0]))
        step(lambda: events.unsubscribe("power", ann[1]))
        step(lambda: events.unsubscribe("power", ann[1]))  # gone already: nothing
        return seen

    assert asyncio.run(scenario()) == [
        ([], {}, False, False),
        (["power"], {"power": 1}, False, True),
        ([], {"power": 1}, False, True),
        ([], {"power": None}, True, True),  # cat came to a table with two already
        ([], {"power": None}, True, True),
        (["power"], {"power": 1}, False, True),
        ([], {"power": 1}, False, True),  # one of ann's two tabs
        (["power"], {}, False, False),
        ([], {}, False, False),
    ]


def test_presence_from_another_process_is_read_warily_and_in_parts() -> None:
    """What arrives on the events channel is anyone's (any database role may NOTIFY): a payload that is not ours is
    ignored, with no client dropped (before, ``[]`` and 7,000 ``[`` restarted the listener, which dropped every
    client of the process); a value that is not a player's id counts as a crowd, never as nobody. A process with
    players at thousands of tables tells them in parts, each within NOTIFY's limit, and the other hears them all."""
    from twentyone.server.cluster import EVENTS_CHANNEL, MAX_PAYLOAD, PostgresBroadcaster

    async def scenario() -> None:
        here, there = PostgresBroadcaster("postgresql://nowhere"), PostgresBroadcaster("postgresql://nowhere")
        client = there.subscribe("classic", 5)
        for payload in ("[]", "[" * 7000, "null", '"text"', '{"o": "x", "p": {"power": true, "single": "7"}}'):
            there._received(EVENTS_CHANNEL, payload)
        assert not client.dropped
        assert there.anyone_else("power", 1) and there.anyone_else("single", 7)  # true is no player 1; "7" no 7

        for number in range(1, 1001):
            here._counted(f"table-{number}", number, 1)
        told = here._presence_payloads(changed=True, leaving=False)
        assert told is not None and len(told.payloads) == 5
        assert all(len(payload.encode()) < MAX_PAYLOAD for payload in told.payloads)
        for payload in told.payloads:
            there._received(EVENTS_CHANNEL, payload)
        assert all(there.anyone_else(f"table-{number}", 0) for number in range(1, 1001))
        assert not any(there.anyone_else(f"table-{number}", number) for number in range(1, 1001))
        assert here._presence_payloads(changed=True, leaving=False) is None  # nothing new to tell

    asyncio.run(scenario())


def test_presence_is_repeated_on_time_whatever_events_wake_the_sender() -> None:
    """The sender waits for its queue only until presence is due again. Before, each event began a full wait anew,
    and repeats came up to twice ``PRESENCE_EVERY`` apart, against the 3 times after which the others forget."""
    import time

    from twentyone.server.cluster import PRESENCE_EVERY, PostgresBroadcaster

    sender = PostgresBroadcaster("postgresql://nowhere")
    assert sender._until_due() == 1.0  # never told: soon
    sender._presence_told, sender._presence_told_at = {}, time.monotonic() - 4
    assert sender._until_due() == PRESENCE_EVERY  # nobody here: nothing to repeat
    sender._presence_told = {"power": 1}
    assert sender._until_due() <= PRESENCE_EVERY - 4
