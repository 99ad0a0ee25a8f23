"""Time no server process answered is no player's time to decide.

Each process's timers beat every :data:`BEAT_SECONDS` (:func:`beat`): the floor's one heartbeat row is locked,
read and set to now. A beat that finds the last one older than ``Settings.down_after_seconds`` (10 s) knows that no
process served the floor since: every process was down (a crash, a deploy), or the database was away from all of
them. Whatever the cause, no player's request could have been answered, so every open round's decision clock, and
every betting window, is moved on by the time since the last beat, less one beat's interval that the floor may have
served (:func:`given_back`): a player who had 15 of their 20 seconds left when the floor went down has 13 or more
when it is back, where before the timer stood their hand at once.

Only the downtime is given back, never the time served: a worker that crashes every few seconds beats while it is
up, so a shared table still times out its slow player (resetting every clock at each start would let a
crash-looping process hold a table open for ever). A process's own late beat is no downtime either: it was up and
answering, only slow to beat (:func:`beat`'s ``ours``). The row lock makes one beat count each downtime,
whichever process beats first. The measure is the beats': a floor down for less than ``down_after_seconds`` is
not counted, and each downtime counts a beat's interval as served, so each life of a crash-looping process costs a
clock that much at least. Like every clock of the game, it takes the processes' clocks to agree (NTP).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import bindparam, insert, select, update
from sqlalchemy.orm import Session

from twentyone.server.context import aware
from twentyone.server.models import HEARTBEAT, ROUNDS

BEAT_SECONDS = 2.0  # how often each process's timers beat

# SKIP LOCKED: a row another process holds is being beaten, so the floor is served (PostgreSQL; SQLite's writes
# are one at a time anyway). Waiting on it could hold every process's timers behind one slow beat.
LAST_BEAT = select(HEARTBEAT.c.beat_at).where(HEARTBEAT.c.id == 1).with_for_update(skip_locked=True)
HAS_ROW = select(HEARTBEAT.c.id).where(HEARTBEAT.c.id == 1)
FIRST_BEAT = insert(HEARTBEAT).values(id=1, beat_at=bindparam("now"))
BEAT = update(HEARTBEAT).where(HEARTBEAT.c.id == 1).values(beat_at=bindparam("now"))
OPEN_CLOCKS = select(ROUNDS.c.id, ROUNDS.c.table_id, ROUNDS.c.status, ROUNDS.c.decision_since,
                     ROUNDS.c.betting_closes_at).where(ROUNDS.c.status.in_(("betting", "playing")))
# Each moved only as read: a decision or a close committed meanwhile in another process (PostgreSQL reads the rounds
# without locking them) set a clock of its own, which is kept.
MOVE_DECISION_CLOCK = update(ROUNDS).where(ROUNDS.c.id == bindparam("round_id"), ROUNDS.c.status == "playing",
                                           ROUNDS.c.decision_since == bindparam("was")) \
    .values(decision_since=bindparam("moved"))
MOVE_BETTING_WINDOW = update(ROUNDS).where(ROUNDS.c.id == bindparam("round_id"), ROUNDS.c.status == "betting",
                                           ROUNDS.c.betting_closes_at == bindparam("was")) \
    .values(betting_closes_at=bindparam("moved"))


@dataclass(frozen=True)
class Downtime:
    """The floor was down from ``since`` (its last beat) to ``until``; ``rounds``: the (round id, table id) of each
    round whose clock was moved on."""

    since: datetime
    until: datetime
    rounds: tuple[tuple[int, str], ...]

    @property
    def length(self) -> timedelta:
        return self.until - self.since

    @property
    def given_back(self) -> timedelta:
        """What each clock was given back (:func:`given_back`)."""
        return given_back(self.since, self.until)


def given_back(last_beat: datetime, now: datetime) -> timedelta:
    """The time a downtime from ``last_beat`` to ``now`` gives back: all of it but one beat's interval, which the
    floor may have served after its last beat (a process killed a second after it beat answered for that second).
    Counting it served errs by at most :data:`BEAT_SECONDS` against a player, and makes every life of a crash-looping
    process cost a clock at least that much: given back whole, a process killed within 2 s of each start, restarted
    after more than 10 s, kept a player's clock frozen for good (a trial of an operator).

    >>> from datetime import UTC
    >>> given_back(datetime(2026, 12, 7, 12, 0, tzinfo=UTC), datetime(2026, 12, 7, 12, 1, tzinfo=UTC)).total_seconds()
    58.0
    """
    return max(now - last_beat - timedelta(seconds=BEAT_SECONDS), timedelta(0))


def moved_on(clock: datetime | None, last_beat: datetime, now: datetime, *, window: bool = False) -> datetime | None:
    """A round's clock after the floor was down from ``last_beat`` to ``now``; None where it stays as it is.

    A decision clock ran while nobody could answer: it moves on by what the downtime gives back (:func:`given_back`),
    never past now (a clock started in the last moments before the floor went down). A betting window still open at
    the last beat (``window``) is given as much; one already due then was the timers' to close while the floor was
    served.

    >>> from datetime import UTC
    >>> down, up = datetime(2026, 12, 7, 12, 0, 0, tzinfo=UTC), datetime(2026, 12, 7, 12, 5, 0, tzinfo=UTC)
    >>> moved_on(datetime(2026, 12, 7, 11, 59, 55, tzinfo=UTC), down, up).time()  # 5 s into a decision, 2 s served
    datetime.time(12, 4, 53)
    >>> moved_on(datetime(2026, 12, 7, 12, 0, 1, tzinfo=UTC), down, up).time()  # a second after the last beat
    datetime.time(12, 4, 59)
    >>> moved_on(up, down, up) is None  # started now: nothing to give back
    True
    >>> moved_on(datetime(2026, 12, 7, 12, 0, 10, tzinfo=UTC), down, up, window=True).time()  # closed while down
    datetime.time(12, 5, 8)
    >>> moved_on(datetime(2026, 12, 7, 11, 59, 0, tzinfo=UTC), down, up, window=True) is None  # due when served
    True
    """
    clock = aware(clock)
    if clock is None or clock >= now or (window and clock <= last_beat):
        return None
    moved = clock + given_back(last_beat, now)
    return moved if window else min(moved, now)


def beat(session: Session, now: datetime, down_after: timedelta | None, ours: datetime | None) -> Downtime | None:
    """Beat for this process in ``session``'s write transaction; where the last beat is older than ``down_after``
    (None: never), move every open round's clock on by the downtime (:func:`moved_on`) and say so.

    ``ours``: this process's own last beat, where no beat of its own has failed since. A last beat that is still
    ours is no downtime, however late this one is: the process was up, only slow to beat (a busy machine, a queue
    for SQLite's write lock), and its players were being answered. A beat that failed (the database away) or a
    process just started counts the time since the floor's last beat, whoever wrote it.
    A beat earlier than the last (another process's clock a little ahead) leaves the row as it is.
    """
    last = session.execute(LAST_BEAT).one_or_none()
    if last is None:  # held by another process's beat; or, in a database made by hand, never made
        if session.execute(HAS_ROW).one_or_none() is None:
            session.execute(FIRST_BEAT, {"now": now})
        return None
    last_beat = aware(last.beat_at)
    if last_beat is not None and now <= last_beat:
        return None
    session.execute(BEAT, {"now": now})
    if last_beat is None or down_after is None or now - last_beat <= down_after or last_beat == ours:
        return None
    clocks: list[dict[str, object]] = []
    windows: list[dict[str, object]] = []
    moved: list[tuple[int, str]] = []
    for row in session.execute(OPEN_CLOCKS):
        if row.status == "playing" and (since := moved_on(row.decision_since, last_beat, now)) is not None:
            clocks.append({"round_id": row.id, "was": row.decision_since, "moved": since})
        elif row.status == "betting" and (
                closes := moved_on(row.betting_closes_at, last_beat, now, window=True)) is not None:
            windows.append({"round_id": row.id, "was": row.betting_closes_at, "moved": closes})
        else:
            continue
        moved.append((row.id, row.table_id))
    if clocks:
        session.execute(MOVE_DECISION_CLOCK, clocks)
    if windows:
        session.execute(MOVE_BETTING_WINDOW, windows)
    return Downtime(last_beat, now, tuple(moved))
