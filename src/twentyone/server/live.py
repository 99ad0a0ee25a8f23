"""Live rounds in memory: each process keeps the engines of the rounds it serves; the database is the log.

An engine is rebuilt from its record (rules, shoe order, bets, actions) only when
the process does not hold it: after a restart, or when another process moved the
round on (its ``version`` no longer matches). Every change to a round happens
under that round's lock, and an engine whose transaction did not commit is
dropped, so memory never runs ahead of the log.

Several processes: a decision takes the round's row lock (``SELECT ... FOR
UPDATE``), which returns the row as last committed by any process; every
decision adds one to ``version`` in the same transaction as its log entry. So
an engine kept at the row's version has applied exactly the logged actions, and
one kept at an older version (another process decided since) applies the actions
logged since (a whole replay only if they do not apply). The in-process lock only
orders this process's threads, and is held while an engine is read as well as
changed; the row lock orders processes.

An engine is kept at the number of logged actions it has applied, never at the version of the row that asked
for it. A read takes no lock: it reads the row, then the log, each as last committed when that statement began
(``READ COMMITTED``), so a decision committed in between leaves the log one action ahead of the row. An engine
replayed from that log and kept at the row's version would have the next decision applied to it a second time.
That happened under load with two processes: a second ``hit`` given to the engine in memory, a later decision
accepted that the log could not replay, and the round voided as a malfunction.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session

from twentyone.core.round import Round as Engine
from twentyone.core.shoe import Shoe
from twentyone.server.direct import run
from twentyone.server.models import ROUND_ACTIONS, Round, RoundSeat
from twentyone.server.models import Shoe as ShoeRow
from twentyone.server.tables import hand_bets_of
from twentyone.variants import builtin_rules

KEPT = 20_000  # live engines kept at most; the least recently used are rebuilt from the log when needed again
FINISHED_KEPT = 64  # finished rounds' engines kept (a 1,000-seat one is about 2 MB): the ones just settled
FINISHED = ("settled", "void")
STRIPES = 1024  # round locks: a fixed set, so settled rounds leave nothing behind


class LiveRounds:
    """The engines of this process's rounds: live ones, and a few just finished, each under its round's lock.

    Live engines are kept up to :data:`KEPT`. A finished round's engine goes to a small cache of its
    own (:data:`FINISHED_KEPT`): every player at a table re-reads the round on its settled event (a
    thousand at a power table), and replaying it for each would be a thousand replays; but reads of
    old rounds (history, replay) must not push live engines out, so they only ever touch that cache.
    """

    def __init__(self) -> None:
        self._engines: OrderedDict[int, tuple[int, Engine]] = OrderedDict()
        self._finished: OrderedDict[int, Engine] = OrderedDict()
        self._locks = [threading.RLock() for _ in range(STRIPES)]
        self._guard = threading.Lock()

    @contextmanager
    def locked(self, round_id: int) -> Iterator[None]:
        """Hold the round: one change (or read of its engine) at a time in this process."""
        with self._locks[round_id % STRIPES]:
            yield

    @contextmanager
    def held(self, session: Session, round_row: Round) -> Iterator[Engine]:
        """The round's engine, with the round held while the caller reads it: a decision changes its engine in
        place, and a view worked out meanwhile could show a card of a change that then does not commit."""
        with self.locked(round_row.id):
            yield self.engine(session, round_row)

    def engine(self, session: Session, round_row: Round) -> Engine:
        """The round's engine as of ``round_row.version`` or later; call with the round held (:meth:`locked`).

        A read whose snapshot is a decision behind the engine in memory takes the newer engine. An
        engine behind the row (another process decided since) takes the decisions logged since, rather
        than replaying the whole round: at a power table of hundreds the replay is the costly part, and a
        process that did not take a player's choice would answer slowly just when someone chose.
        """
        if round_row.status in FINISHED:
            return self._finished_engine(session, round_row)
        with self._guard:
            kept = self._engines.get(round_row.id)
            if kept is not None:
                self._engines.move_to_end(round_row.id)
        if kept is not None and kept[0] >= round_row.version:
            return kept[1]
        found = caught_up(session, round_row, *kept) if kept is not None else None
        if found is None:
            self.forget(round_row.id)  # a catch-up that failed may have half changed the engine kept
            found = replayed(session, round_row)
        self.keep(round_row.id, *found)
        return found[1]

    def _finished_engine(self, session: Session, round_row: Round) -> Engine:
        with self._guard:
            found = self._finished.get(round_row.id)
            if found is not None:
                self._finished.move_to_end(round_row.id)
                return found
            kept = self._engines.pop(round_row.id, None)  # settled or voided by another process
        caught = caught_up(session, round_row, *kept) if kept is not None else None
        engine = caught[1] if caught is not None else rebuild(session, round_row)
        if round_row.status == "settled":  # a void round is read rarely, and may be voided mid-change
            self.finish(round_row.id, engine)
        return engine

    def current(self, round_id: int, engine: Engine) -> bool:
        """Whether ``engine`` is still this round's engine here: not dropped with a change that did not commit, nor
        replaced. Call with the round held."""
        with self._guard:
            kept = self._engines.get(round_id)
            return (kept is not None and kept[1] is engine) or self._finished.get(round_id) is engine

    def keep(self, round_id: int, version: int, engine: Engine) -> None:
        with self._guard:
            kept = self._engines.get(round_id)
            if kept is not None and kept[0] > version:
                return  # a read of an older snapshot must not replace the newer engine a decision left
            self._engines[round_id] = (version, engine)
            self._engines.move_to_end(round_id)
            while len(self._engines) > KEPT:
                self._engines.popitem(last=False)

    def finish(self, round_id: int, engine: Engine) -> None:
        """The round is settled: its engine moves to the finished rounds' cache."""
        with self._guard:
            self._engines.pop(round_id, None)
            self._finished[round_id] = engine
            self._finished.move_to_end(round_id)
            while len(self._finished) > FINISHED_KEPT:
                self._finished.popitem(last=False)

    def forget(self, round_id: int) -> None:
        """Drop an engine whose change did not commit, or a round voided."""
        with self._guard:
            self._engines.pop(round_id, None)
            self._finished.pop(round_id, None)


_ACTION = ROUND_ACTIONS.c
ACTIONS = (select(_ACTION.player_id, _ACTION.action, _ACTION.source).where(_ACTION.round_id == bindparam("round_id"))
           .order_by(_ACTION.seq))
ACTIONS_SINCE = (select(_ACTION.player_id, _ACTION.action)
                 .where(_ACTION.round_id == bindparam("round_id"), _ACTION.seq >= bindparam("seq"))
                 .order_by(_ACTION.seq))


def caught_up(session: Session, round_row: Round, version: int, engine: Engine) -> tuple[int, Engine] | None:
    """``engine``, kept at ``version`` (the actions it has applied), with every decision logged since applied, and
    the actions it has applied then; None if they do not apply. The log may hold more than ``round_row`` counts (a
    read's row is older than its read of the log), never fewer."""
    rows = run(session, ACTIONS_SINCE, {"round_id": round_row.id, "seq": version}).all()
    if len(rows) < round_row.version - version:
        return None
    try:
        for player_id, action in rows:
            engine.act(action, str(player_id))
    except Exception:  # a log this engine cannot follow: the caller replays the whole round instead
        return None
    return version + len(rows), engine


def round_actions(session: Session, round_id: int) -> list[dict[str, Any]]:
    """The round's decisions in the order they were taken: who (``player_id``, as every answer names a player by id;
    it was ``player`` beside the operations' ``player``, a name: an integrator's trial), what, and whether the player
    or the timer took it (``source``: ``player`` or ``timeout``, the log's own words)."""
    rows = run(session, ACTIONS, {"round_id": round_id}).all()
    return [{"player_id": player_id, "action": action, "source": source} for player_id, action, source in rows]


def was_dealt(round_row: Round) -> bool:
    """Whether the round's cards came out of its shoe: it is past taking bets, and not void before its deal (a close of
    betting that could stake no seat, or whose deal failed: its seats are kept, nothing was staked, and no card was
    dealt, so its view shows none; replayed, it showed the cards the shoe would have dealt, the next round's). A deal
    sets ``decision_since`` (``rounds.new_round``, ``Rounds._close_betting``), and only a settlement clears it.

    >>> from types import SimpleNamespace as Row
    >>> was_dealt(Row(status="void", decision_since=None)), was_dealt(Row(status="void", decision_since="12:00"))
    (False, True)
    """
    return round_row.status != "betting" and not (round_row.status == "void" and round_row.decision_since is None)


def dealt_engine(round_row: Round, shoe_cards: str, seats: list[RoundSeat]) -> Engine:
    """A round's engine with its seats' bets placed, dealt unless the round is still taking bets or was void before
    its deal (:func:`was_dealt`)."""
    engine = Engine(builtin_rules(round_row.variant), Shoe.stacked(shoe_cards.split()[round_row.shoe_start:]),
                    lockstep=round_row.lockstep)
    for seat in sorted(seats, key=lambda seat: seat.position):
        engine.place_bets(str(seat.player_id), hand_bets_of(seat.bets))
    if was_dealt(round_row) and seats:
        engine.deal()
    return engine


def rebuild(session: Session, round_row: Round) -> Engine:
    """Replay a round from its record: the bets, the shoe from its first card, the actions in order."""
    return replayed(session, round_row)[1]


def replayed(session: Session, round_row: Round) -> tuple[int, Engine]:
    """:func:`rebuild`, and how many logged actions the engine has applied: what to keep it at (module docstring)."""
    shoe = session.get(ShoeRow, round_row.shoe_id)
    assert shoe is not None
    seats = list(session.scalars(select(RoundSeat).where(RoundSeat.round_id == round_row.id)).all())
    engine = dealt_engine(round_row, shoe.cards, seats)
    if not was_dealt(round_row) or not seats:
        return 0, engine
    actions = round_actions(session, round_row.id)
    for entry in actions:
        engine.act(entry["action"], str(entry["player_id"]))
    return len(actions), engine
