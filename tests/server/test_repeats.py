"""A line said over and over is logged once a window, with its count (``server/repeats.py``)."""

from __future__ import annotations

import logging
import threading

import pytest

from twentyone.server.repeats import MAX_LINES, RepeatedLines


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def log(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.WARNING, "twentyone.test.repeats")
    return caplog


def lines_at(clock: Clock) -> RepeatedLines:
    return RepeatedLines(logging.getLogger("twentyone.test.repeats"), window_seconds=10, clock=clock)


def test_each_line_once_then_its_repeats_counted_when_the_window_ends(log: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    lines = lines_at(clock)
    for _ in range(50):
        lines.warning("storage busy: A")
    lines.warning("storage busy: B")
    assert log.messages == ["storage busy: A", "storage busy: B"]
    clock.now += 9.9
    lines.flush()
    assert log.messages == ["storage busy: A", "storage busy: B"]  # the window is open: nothing more yet
    clock.now += 0.1
    lines.flush()
    # B came once: nothing to add for it.
    assert log.messages == ["storage busy: A", "storage busy: B", "storage busy: A (49 more times in the last 10 s)"]
    lines.flush()
    lines.warning("storage busy: A")  # a new outage: said in full again
    assert log.messages[3:] == ["storage busy: A"]


def test_a_repeat_after_the_window_tells_the_count_before_it_starts_another(log: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    lines = lines_at(clock)
    lines.warning("x")
    lines.warning("x")
    clock.now += 12
    lines.warning("x")  # no flush came between (no timer tick): the count is not lost
    assert log.messages == ["x", "x (1 more time in the last 12 s)", "x"]


def test_as_the_server_stops_every_count_is_told(log: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    lines = lines_at(clock)
    for _ in range(3):
        lines.warning("x")
    clock.now += 4
    lines.flush()
    assert log.messages == ["x"]  # its window is still open
    lines.flush(every=True)
    assert log.messages == ["x", "x (2 more times in the last 4 s)"]


def test_past_the_held_lines_each_is_logged_as_it_comes(log: pytest.LogCaptureFixture) -> None:
    lines = lines_at(Clock())
    for number in range(MAX_LINES + 3):
        lines.warning(f"line {number}")
    lines.warning("line 0")  # held: counted
    lines.warning(f"line {MAX_LINES + 1}")  # not held: logged again, never lost
    assert log.messages == [f"line {number}" for number in range(MAX_LINES + 3)] + [f"line {MAX_LINES + 1}"]


def test_repeats_from_many_threads_are_all_counted(log: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    lines = lines_at(clock)

    def say() -> None:
        for _ in range(500):
            lines.warning("busy")

    threads = [threading.Thread(target=say) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    clock.now += 10
    lines.flush()
    assert log.messages == ["busy", "busy (3999 more times in the last 10 s)"]
