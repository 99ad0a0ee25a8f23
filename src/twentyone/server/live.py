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
one kept at an older version (another process decided since) is rebuilt. The
in-process lock only orders this process's threads; the row lock orders processes.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from twentyone.core.round import Round as Engine
from twentyone.core.shoe import Shoe
from twentyone.server.models import Round, RoundAction, RoundSeat
from twentyone.server.models import Shoe as ShoeRow
from twentyone.server.tables import hand_bets_of
from twentyone.variants import builtin_rules

KEPT = 20_000  # engines kept at most (live and recently read); the least recently used are rebuilt when needed
STRIPES = 1024  # round locks: a fixed set, so settled rounds leave nothing behind


class LiveRounds:
    def __init__(self) -> None:
        self._engines: OrderedDict[int, tuple[int, Engine]] = OrderedDict()
        self._locks = [threading.RLock() for _ in range(STRIPES)]
        self._guard = threading.Lock()

    @contextmanager
    def locked(self, round_id: int) -> Iterator[None]:
        """Hold the round: one change (or read of its engine) at a time in this process."""
        with self._locks[round_id % STRIPES]:
            yield

    def engine(self, session: Session, round_row: Round) -> Engine:
        """The round's engine as of ``round_row.version`` or later: the one in memory, or rebuilt from the log.

        A read whose snapshot is a decision behind the engine in memory takes the newer engine rather
        than replaying the whole round (at a power table of hundreds that replay is the costly part);
        a change holds the row's lock, so for it the row is never behind what this process keeps.
        """
        with self._guard:
            kept = self._engines.get(round_row.id)
            if kept is not None and kept[0] >= round_row.version:
                self._engines.move_to_end(round_row.id)
                return kept[1]
        engine = rebuild(session, round_row)
        self.keep(round_row.id, round_row.version, engine)
        return engine

    def keep(self, round_id: int, version: int, engine: Engine) -> None:
        with self._guard:
            kept = self._engines.get(round_id)
            if kept is not None and kept[0] > version:
                return  # a read of an older snapshot must not replace the newer engine a decision left
            self._engines[round_id] = (version, engine)
            self._engines.move_to_end(round_id)
            while len(self._engines) > KEPT:
                self._engines.popitem(last=False)

    def forget(self, round_id: int) -> None:
        """Drop an engine whose change did not commit, or a round voided."""
        with self._guard:
            self._engines.pop(round_id, None)


def round_actions(session: Session, round_id: int) -> list[dict[str, Any]]:
    """The round's decisions in the order they were taken: who, what, and whether a player or the timer."""
    rows = session.execute(select(RoundAction.player_id, RoundAction.action, RoundAction.source)
                           .where(RoundAction.round_id == round_id).order_by(RoundAction.seq)).all()
    return [{"player": player_id, "action": action, "source": source} for player_id, action, source in rows]


def dealt_engine(round_row: Round, shoe_cards: str, seats: list[RoundSeat]) -> Engine:
    """A round's engine with its seats' bets placed, dealt unless the round is still taking bets."""
    engine = Engine(builtin_rules(round_row.variant), Shoe.stacked(shoe_cards.split()[round_row.shoe_start:]),
                    lockstep=round_row.lockstep)
    for seat in sorted(seats, key=lambda seat: seat.position):
        engine.place_bets(str(seat.player_id), hand_bets_of(seat.bets))
    if round_row.status != "betting" and seats:
        engine.deal()
    return engine


def rebuild(session: Session, round_row: Round) -> Engine:
    """Replay a round from its record: the bets, the shoe from its first card, the actions in order."""
    shoe = session.get(ShoeRow, round_row.shoe_id)
    assert shoe is not None
    seats = list(session.scalars(select(RoundSeat).where(RoundSeat.round_id == round_row.id)).all())
    engine = dealt_engine(round_row, shoe.cards, seats)
    if round_row.status == "betting" or not seats:
        return engine
    for entry in round_actions(session, round_row.id):
        engine.act(entry["action"], str(entry["player"]))
    return engine
