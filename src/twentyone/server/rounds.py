"""The round lifecycle: deal (private tables), join and close betting (shared tables), decisions, settlement.

Each change is one short transaction under the round's lock: the decision is
applied to the live engine, appended to the round's log and its money moved,
all committed together; if anything fails before the commit the engine is
dropped and rebuilt from the log next time. A fault of the game itself (the
engine or a card reader failing) voids the round and refunds every stake;
storage trouble never does (it is :class:`~twentyone.server.context.Busy`).

Why one module: every change of a round's state (deal, join, close, decide, settle, void) takes
the same round lock, transaction and engine hand-over, and reads best side by side.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, NamedTuple, cast

from sqlalchemy import Row, bindparam, func, insert, literal_column, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from twentyone.core.betting import BetSlipError
from twentyone.core.operations import COSTLY_ACTIONS, OFFER_ANSWERS, Action, DecisionKind
from twentyone.core.round import IllegalActionError, Phase
from twentyone.core.round import Round as Engine
from twentyone.server.accounts import Accounts
from twentyone.server.cluster import LocalOwnership, TimerOwnership, betting_close, lock_in_transaction
from twentyone.server.config import TableSpec
from twentyone.server.context import Busy, Caller, ServiceError, aware
from twentyone.server.direct import Record, Result, defer, defer_read, read_record, run, save
from twentyone.server.events import Broadcaster
from twentyone.server.live import FINISHED, LiveRounds, dealt_engine
from twentyone.server.models import (
    OPEN_STATUSES,
    PLAYERS,
    ROUND_ACTIONS,
    ROUND_SEATS,
    ROUNDS,
    Player,
    Round,
    RoundSeat,
    Slip,
)
from twentyone.server.models import Shoe as ShoeRow
from twentyone.server.money import refusal
from twentyone.server.round_ids import RoundIds
from twentyone.server.store import AlreadyApplied, Store, inserted
from twentyone.server.tables import (
    Shoes,
    TableRegistry,
    bet_slip,
    bets_total,
    dealt_bets_json,
    find_slip,
    move_shoe,
    ready_bets,
    save_slip,
    slip_row,
    slip_view,
    table_json,
    take_bets,
)
from twentyone.server.views import (
    OTHERS_SHOWN,
    loss_room,
    nothing_to_decide,
    round_json,
    round_json_held,
    seat_json,
    seat_of,
    without_new_stakes,
)
from twentyone.server.wallet import SentDebit, Wallet, WalletError, as_refusal
from twentyone.variants import builtin_rules

log = logging.getLogger("twentyone.server")
OPEN = OPEN_STATUSES
# A close of betting asks an operator's wallet for the seats it has not asked for yet at most this many times before
# its transaction (seats join while it asks: a power round's thousand take seconds); later joiners are asked inside.
ASK_PASSES = 3
# The operator's button waits this long (seconds) for another close of the table, in this process or another, that
# asks every seat's debit (1,000 seats at an operator answering in 20 ms: about 3 s); another process's close is
# looked at every CLOSE_POLL seconds.
CLOSE_WAIT, CLOSE_POLL = 30.0, 0.05
ALONE_WINDOW = 3  # seconds a player alone at a shared table waits for others before the deal
DEALING_STRIPES = 1024  # locks of players' private deals (Rounds._deal_turn)
DEAL_WAIT = 3.0  # seconds a deal waits for the player's deal under way in this process, then 503 (Rounds._deal_turn)
NOBODY = 0  # a player id no account has: a round as seen by someone without a seat in it


# A decision appended to the round's log (Core: nothing reads the row back in its transaction).
LOG_ACTION = insert(ROUND_ACTIONS)


class Malfunction(Exception):
    """The game itself failed (not storage): the round is voided and its stakes refunded."""


# What players read of a malfunction. The error itself goes to the server's log with the round's id:
# its text is the program's, and could name a card that was never shown.
VOID_IN_PLAY = "malfunction in play"
VOID_AT_DEAL = "malfunction during the deal"
# A close of betting that staked no seat (void_reason): the operator's wallet refused them, or their balances or limits
# did not cover their bets; or it could not be reached (a 503: WalletTimeout, an outage) for any, or for some of them.
VOID_NONE_COVERED = "no seat could cover its bets"
VOID_WALLET_UNREACHABLE = "the operator's wallet could not be reached"
VOID_SOME_UNREACHABLE = "no seat could cover its bets or the operator's wallet could not be reached for it"


def void_reason_of(returned: Sequence[Returned]) -> str:
    """Why a close of betting that staked no seat voided its round, from why its seats sat out: an outage is told
    apart from refusals (before, an outage was "no seat could cover its bets", found by an integrator's trial).

    >>> void_reason_of([Returned(1, 500, "…", True, unreachable=True), Returned(2, 500, "…", False)])
    "the operator's wallet could not be reached"
    >>> void_reason_of([Returned(1, 500, "…", True, unreachable=True), Returned(2, 500, "…", True)])
    "no seat could cover its bets or the operator's wallet could not be reached for it"
    """
    unreachable = {entry.unreachable for entry in returned if entry.sat_out}
    if unreachable == {True}:
        return VOID_WALLET_UNREACHABLE
    return VOID_SOME_UNREACHABLE if True in unreachable else VOID_NONE_COVERED


# Built once (building a statement and its cache key costs more than SQLite takes to answer it).
_OPEN_AT_TABLE = select(Round).where(Round.table_id == bindparam("table_id"), Round.status.in_(OPEN))
OPEN_SHARED_ROUND = _OPEN_AT_TABLE.order_by(Round.id.desc()).limit(1)
OPEN_OWN_ROUND = (_OPEN_AT_TABLE.join(RoundSeat, RoundSeat.round_id == Round.id)
                  .where(RoundSeat.player_id == bindparam("player_id")).order_by(Round.id.desc()).limit(1))
# Whether the player has a round open at a private table (a deal must wait for it to end): its id, no object.
OPEN_OWN_ROUND_ID = (select(ROUNDS.c.id).join(ROUND_SEATS, ROUND_SEATS.c.round_id == ROUNDS.c.id)
                     .where(ROUNDS.c.table_id == bindparam("table_id"),
                            # The statuses written into the SQL: an IN of bound values is expanded by SQLAlchemy
                            # at every execution, and direct.run cannot run it as compiled once.
                            ROUNDS.c.status.in_([literal_column(f"'{status}'") for status in OPEN]),
                            ROUND_SEATS.c.player_id == bindparam("player_id")).limit(1))
# What a deal or a join reads of the player: the limits' checks and the seat's name, as a row.
PLAYER = (select(PLAYERS.c.id, PLAYERS.c.name, PLAYERS.c.limits, PLAYERS.c.session_started_at)
          .where(PLAYERS.c.id == bindparam("player_id")))
ROUND_FOR_UPDATE = select(Round).where(Round.id == bindparam("round_id")).with_for_update()
# A decision's round and seats, read as records (direct.Record) and written back by one UPDATE each, not by the
# ORM's unit of work: loading, changing and flushing the two cost about 390 us a decision, records about 60 us.
ROUND_RECORD = select(*ROUNDS.c).where(ROUNDS.c.id == bindparam("round_id")).with_for_update()
SEAT_RECORD = select(*ROUND_SEATS.c).where(ROUND_SEATS.c.round_id == bindparam("round_id"),
                                           ROUND_SEATS.c.player_id == bindparam("player_id"))
# A player's decision reads the round and their own seat in one statement (one round trip to PostgreSQL where it
# was two): the seat's columns prefixed; no row where there is no such round or the player has no seat in it. Both
# rows are locked. Locking the round alone is not enough on PostgreSQL: a statement that waited for the round's lock
# reads the round as the transaction it waited for left it, but a joined row it did not lock as it was when the
# statement began (a player's insurance and double at once, through two processes: the double read the seat without
# the insurance's stake). Seats are written only under their round's lock, so locking one adds no wait.
SEAT_PREFIX = "seat_"
ROUND_AND_SEAT_RECORD = (
    select(*ROUNDS.c, *[column.label(SEAT_PREFIX + column.name) for column in ROUND_SEATS.c])
    .join(ROUND_SEATS, ROUND_SEATS.c.round_id == ROUNDS.c.id)
    .where(ROUNDS.c.id == bindparam("round_id"), ROUND_SEATS.c.player_id == bindparam("player_id"))
    .with_for_update(of=[ROUNDS, ROUND_SEATS]))
BETTING_ROUND = (select(Round).where(Round.table_id == bindparam("table_id"), Round.status == "betting")
                 .with_for_update())
PLAYING_ROUND_ID = select(ROUNDS.c.id).where(ROUNDS.c.table_id == bindparam("table_id"), ROUNDS.c.status == "playing")
# A round view lists the first OTHERS_SHOWN seats in full and counts the rest, so a join past those
# changes only a count: the table hears of every CROWD_NEWS_EVERY-th such join (and of the deal), not
# of each. Told of each, 1,000 players joining a power round would be a million events to 1,000 sockets.
CROWD_NEWS_EVERY = 50
# How many seats a round has and the last position taken: one row, not a thousand positions at a power table.
SEATS_TAKEN = (select(func.count(), func.coalesce(func.max(ROUND_SEATS.c.position), 0))
               .where(ROUND_SEATS.c.round_id == bindparam("round_id")))


# A shared table's newest finished round: the newest of each finished status, each from the end of its range of
# the index on (table_id, status, id) rather than a sort of the table's history (migration 0006).
_NEWEST_WITH_STATUS = select(func.max(ROUNDS.c.id)).where(ROUNDS.c.table_id == bindparam("table_id"),
                                                            ROUNDS.c.status == bindparam("status"))


def last_finished_round(session: Session, table_id: str) -> Round | None:
    """The table's most recent round that is over (settled or void), if any."""
    newest = [run(session, _NEWEST_WITH_STATUS, {"table_id": table_id, "status": status}).scalar()
              for status in FINISHED]
    ids = [round_id for round_id in newest if round_id is not None]
    return session.get(Round, max(ids)) if ids else None


def current_round(session: Session, table: TableSpec, player_id: int) -> Round | None:
    """The round at ``table`` the player sees now: the shared table's open round, or the player's own."""
    if table.shared:
        return session.scalars(OPEN_SHARED_ROUND, {"table_id": table.id}).first()
    return session.scalars(OPEN_OWN_ROUND, {"table_id": table.id, "player_id": player_id}).first()


def new_round(table: TableSpec, shoe: ShoeRow, now: datetime, betting_closes_at: datetime | None = None,
              round_id: int | None = None) -> Round:
    """A new round at ``table`` on ``shoe``'s next card, every column given (as :func:`inserted` needs): dealt at
    once, or, with ``betting_closes_at``, taking bets until then. ``round_id``: its number, where it was taken ahead
    (:class:`~twentyone.server.round_ids.RoundIds`); else the database numbers it.

    >>> from datetime import UTC
    >>> from twentyone.server.config import shipped_tables
    >>> noon = datetime(2026, 1, 1, 12, tzinfo=UTC)
    >>> shoe = ShoeRow(id=7, position=52)
    >>> private = new_round(shipped_tables()["classic"], shoe, noon)
    >>> private.status, private.shoe_id, private.shoe_start, private.decision_since == noon
    ('playing', 7, 52, True)
    >>> new_round(shipped_tables()["multiplayer"], shoe, noon, betting_closes_at=noon).status
    'betting'
    """
    playing = betting_closes_at is None
    return Round(id=round_id, table_id=table.id, variant=table.variant, currency=table.currency,
                 status="playing" if playing else "betting",
                 shoe_id=shoe.id, shoe_start=shoe.position, actions=[], version=0, created_at=now,
                 decision_since=now if playing else None, betting_closes_at=betting_closes_at, void_reason=None,
                 lockstep=True, settled_at=None)


class Rounds:
    def __init__(self, store: Store, tables: TableRegistry, shoes: Shoes, wallet: Wallet, accounts: Accounts,
                 live: LiveRounds, events: Broadcaster, clock: Callable[[], datetime]) -> None:
        self.store = store
        self.tables = tables
        self.shoes = shoes
        self.wallet = wallet
        self.accounts = accounts
        self.live = live
        self.events = events
        self.clock = clock
        self.round_ids = RoundIds(store)  # a private deal's number, for its debit sent ahead
        # Whether an operator's debit for a private deal or a decision is sent before the transaction that records
        # its stake. On SQLite that transaction holds the write lock of the whole database, so every other player
        # waited for the operator's answer (20 players, 20 ms an answer: 28-30 rounds/s inside, 72-73 ahead). On
        # PostgreSQL it holds only the player's own rows, and the look-ahead's reads cost more than they free
        # (55 and 49 rounds/s ahead against 61 and 59 inside): the debit stays in the transaction there.
        self.debits_ahead = store.db.is_sqlite
        # A player's private deals whose debits go ahead take turns in this process (striped: nothing left behind), so
        # that a twin (a double click, a retry while the first is in flight) finds the first's answer before it sends
        # a debit of its own: before, both were sent, and the twin's rolled back; where the balance covered one stake,
        # the twin was refused meanwhile.
        self._dealing = [threading.Lock() for _ in range(DEALING_STRIPES)]
        self.fault: Callable[[str], None] = lambda stage: None  # tests inject malfunctions here
        # After each commit that may owe the operator: what that commit wrote to the outbox.
        self.deliver_outbox: Callable[[], int] = lambda: self.deliver(fresh=True)
        self._closings: dict[str, threading.Lock] = {}  # one close of betting of a table at a time (close_betting)
        # Which process's turn a close of betting is, among several on PostgreSQL (late-bound: the service's).
        self.ownership: Callable[[], TimerOwnership] = LocalOwnership
        self._closing_guard = threading.Lock()

    # ------------------------------------------------------------ private
    def deal(self, caller: Caller, table_id: str) -> dict[str, Any]:
        """DEAL: a private table deals at once; a shared one takes the bets into the round being formed."""
        table = self.tables.get(table_id)
        if table.shared:
            return self._join_shared(caller, table)
        round_id = None
        try:
            # An operator's wallet is asked for the balance before the transaction, and on SQLite debited before it
            # too (_deal_ahead: no write lock is held while it answers). The turn first: a twin that waited for it
            # asks the balance as the first's debit left it.
            with self._deal_turn(caller.id), self.wallet.balance_known(caller.id, table.currency):
                ahead = self._deal_ahead(caller, table)
                with self._owed_unless_taken(ahead), self.store.write() as session:
                    # Judged when the player's row comes back: on PostgreSQL both go in the transaction's first
                    # round trip.
                    defer_read(session, OPEN_OWN_ROUND_ID, {"table_id": table.id, "player_id": caller.id},
                               refuse_second_round)
                    player = _player(session, caller)
                    self.wallet.lock(session, caller.id, table.currency)
                    slip = slip_row(session, caller.id, table, self.clock)
                    self.accounts.check_may_play(session, player)  # an excluded player is told so, bets or none
                    balance, state, hand_bets = ready_bets(session, slip, table, self.wallet, caller.id)
                    self.accounts.check_limits(session, player, table.currency, state.total)
                    if state.total > balance:
                        raise refusal(BetSlipError("The balance of {balance} does not cover bets of {bets}.",
                                                   balance=balance, bets=state.total), table.currency)
                    shoe = self.shoes.prepared(session, table, caller.id)
                    round_row = inserted(session, new_round(table, shoe, self.clock(),
                                                            round_id=ahead.round_id if ahead else None))
                    round_id = round_row.id
                    seat = RoundSeat(round_id=round_row.id, player_id=caller.id, position=1,
                                     bets=dealt_bets_json(state, hand_bets), confirmed=True, staked=0, returned=0,
                                     balance_before=balance, balance_after=None, timed_out=0)
                    self._stake(session, table, round_row, seat, state.total,
                                self._take_ahead(session, ahead, _stake_key(round_row, seat), state.total))
                    inserted(session, seat)  # after the stake: inserted with it, not inserted and then updated
                    take_bets(slip)
                    save_slip(session, slip)
                    engine = self._deal_engine(round_row, shoe, [seat])
                    self.shoes.following(session, table, caller.id, shoe)
                    self._after_change(session, round_row, engine, table, [seat])
                    view = round_json(session, round_row, table, caller.id, engine, seats=([(seat, player.name)], 1))
                    now = self.clock()
                    body = self.store.answer(session, without_new_stakes(
                        view, caller, now, loss_room(session, caller, table.currency, now)))
            self._remember(round_row, engine)
        except (ServiceError, AlreadyApplied, IntegrityError):
            raise
        except WalletError as error:
            raise as_refusal(error) from None
        except Exception:  # the game failed before anything committed: nothing was staked
            if round_id is None:
                raise
            log.exception("round %s malfunctioned during the deal", round_id)
            raise ServiceError(500, "The round could not be dealt and nothing was staked.") from None
        self.deliver_outbox()
        self.events.publish(table.id, round_news(table, {"type": "round", "round_id": body["id"],
                                                          "status": body["status"]}, caller.id))
        return body

    @contextmanager
    def _deal_turn(self, player_id: int) -> Iterator[None]:
        """The player's turn to deal in this process, where debits go ahead of the deal's transaction: waited for
        at most :data:`DEAL_WAIT` seconds, then 503 (a slow operator's deal held every twin and retry behind it, each
        holding a request thread: found by review)."""
        if self.wallet.keeps_balances or not self.debits_ahead:
            yield
            return
        turn = self._dealing[player_id % DEALING_STRIPES]
        if not turn.acquire(timeout=DEAL_WAIT):
            raise Busy("A deal of yours is under way: send the same request again in a moment.")
        try:
            yield
        finally:
            turn.release()

    def _deal_ahead(self, caller: Caller, table: TableSpec) -> StakeAhead | None:
        """An operator's debit for the private deal the caller asks for, sent before its transaction with the round's
        number taken ahead: none where the player's bets, balance or limits will not deal (the transaction judges and
        answers), with the built-in ledger, or where debits are not sent ahead (:attr:`debits_ahead`)."""
        if self.wallet.keeps_balances or not self.debits_ahead:
            return None
        try:
            with self.store.read() as session:
                refuse_second_round(run(session, OPEN_OWN_ROUND_ID, {"table_id": table.id, "player_id": caller.id}))
                player = _player(session, caller)
                slip = find_slip(session, caller.id, table.id)
                if slip is None:
                    return None
                balance, state, _ = ready_bets(session, slip, table, self.wallet, caller.id)
                self.accounts.check_limits(session, player, table.currency, state.total)
        except (ServiceError, WalletError):
            return None
        if not 0 < state.total <= balance:
            return None
        round_id = self.round_ids.take()
        return self._send_ahead(table.currency, round_id, caller.id, state.total,
                                _stake_key_of(round_id, caller.id, 0))

    def _send_ahead(self, currency: str, round_id: int, player_id: int, amount: int, key: str) -> StakeAhead:
        """Debit ``amount`` at the operator's wallet for the stake ``key`` names, with no transaction open. A refusal,
        or no answer, is raised here: nothing is dealt or decided, and a debit that may have applied is owed its
        rollback. A request applied already (a retry) debits nothing (:meth:`Store.applied_before`)."""
        self.store.applied_before()
        sent = self.wallet.send_debits(currency, round_id, [(player_id, amount, key)])[0]
        verdict, error = sent[1]
        if verdict == "done":
            return StakeAhead(round_id, key, amount, sent)
        self.wallet.owe_debits([sent])  # unanswered: owed its rollback; refused: nothing taken, the journal lets go
        if isinstance(error, WalletError):
            raise error
        # An answer the contract does not define (a bug, a broken connection's own exception): the debit may have
        # applied, and is rolled back; the round is as it was.
        log.error("the operator's wallet answered the debit %s with %r: it is rolled back", sent[0].tx_id, error)
        raise ServiceError(500, "The wallet's answer to the stake was not understood: nothing was staked, and the "
                                "debit is rolled back.")

    def _take_ahead(self, session: Session, ahead: StakeAhead | None, key: str, amount: int) -> str | None:
        """The debit sent ahead, recorded by ``session``'s transaction for the stake ``key`` names: its id (for
        :meth:`_stake`), or None where none was sent for this stake. One sent for another (the bets or the round
        changed meanwhile) is rolled back at once, before the stake is debited in the transaction as before: the
        balance need not cover both."""
        if ahead is None or ahead.taken:
            return None
        ahead.taken = True  # from here the transaction's end settles it (wallet.after_transaction)
        if (ahead.key, ahead.amount) != (key, amount):
            self.wallet.release_debits_now(session, [ahead.sent])
            return None
        answer = self.wallet.record_debits(session, [ahead.sent])[0]
        if isinstance(answer, WalletError):  # pragma: no cover - a debit sent ahead was answered "done"
            raise answer
        return answer

    @contextmanager
    def _owed_unless_taken(self, ahead: StakeAhead | None) -> Iterator[None]:
        """A debit sent ahead that no transaction took (it failed to begin, or refused the work first) is owed a
        rollback."""
        try:
            yield
        finally:
            if ahead is not None and not ahead.taken:
                self.wallet.owe_debits([ahead.sent])

    def _deal_engine(self, round_row: Round, shoe: ShoeRow, seats: list[RoundSeat]) -> Engine:
        """The new round's engine, dealt from the shoe and seats at hand (nothing to replay yet)."""
        self.fault("deal")
        try:
            return dealt_engine(round_row, shoe.cards, seats)
        except Exception as error:
            raise Malfunction(str(error)) from error

    # ------------------------------------------------------------- shared
    def _join_shared(self, caller: Caller, table: TableSpec) -> dict[str, Any]:
        with self.wallet.balance_known(caller.id, table.currency), self.store.write() as session:
            player = _player(session, caller)
            # Locks in the order every writer takes them (round, accounts, slip, shoes), or two can deadlock: the
            # round forming (betting closes with it locked, then empties slips), the slip, then a new round's shoe.
            round_row = session.scalars(BETTING_ROUND, {"table_id": table.id}).first()
            if round_row is None and lock_in_transaction(session, f"forming:{table.id}"):
                # PostgreSQL: FOR UPDATE locks no row that is not there yet, so joins at once at a table with no round
                # forming each opened one (three at a power table of 1,000: benchmarks/power_crowd.py). Under the
                # table's lock, look again: one that opened it first has committed by then. SQLite writes one at a
                # time.
                round_row = session.scalars(BETTING_ROUND, {"table_id": table.id}).first()
            slip = slip_row(session, caller.id, table, self.clock)
            opened = round_row is None
            if round_row is None:
                if session.scalars(PLAYING_ROUND_ID, {"table_id": table.id}).first() is not None:
                    raise ServiceError(409, "A round is in play at this table: bet on the next one when it ends.")
                shoe = self.shoes.prepared(session, table, caller.id)
                window = table.betting_window
                if self._alone(session, table, caller.id):
                    window = min(window, ALONE_WINDOW)
                closes = self.clock() + timedelta(seconds=window)
                round_row = inserted(session, new_round(table, shoe, self.clock(), betting_closes_at=closes))
            if round_row.currency not in (None, table.currency):  # formed before the table's currency changed
                raise ServiceError(409, f"This round takes bets in {round_row.currency}, as the table did when it "
                                        "opened: bet on the next one.")
            if round_row.variant != table.variant:  # formed before the table's game changed: its bets are another's
                raise ServiceError(409, f"This round deals {builtin_rules(round_row.variant).name}, as the table did "
                                        "when it opened: bet on the next one.")
            if seat_of(session, round_row.id, caller.id) is not None:
                raise ServiceError(409, "Your bets are already in this round.")
            taken, last = run(session, SEATS_TAKEN, {"round_id": round_row.id}).one()
            if table.seats and taken >= table.seats:
                raise ServiceError(409, f"The table is full: {table.seats} players at most.")
            self.accounts.check_may_play(session, player)  # an excluded player is told so, bets or none
            try:
                _, state, hand_bets = ready_bets(session, slip, table, self.wallet, caller.id)
            except WalletError as error:  # the operator's refusal or silence: a 409 or a 503, nothing changed
                raise as_refusal(error) from None
            self.accounts.check_limits(session, player, table.currency, state.total)
            seat = inserted(session, RoundSeat(
                round_id=round_row.id, player_id=caller.id, position=last + 1,
                bets=dealt_bets_json(state, hand_bets), confirmed=True, staked=0, returned=0,
                balance_before=None, balance_after=None, timed_out=0))
            take_bets(slip)
            save_slip(session, slip)
            round_id = round_row.id
            body = self.store.answer(session, round_json(session, round_row, table, caller.id, None))
            # The round as anyone else at the table sees it (no seat of their own in it yet): its first join's news.
            opening = round_json(session, round_row, table, NOBODY, None) if opened else None
        seat_count = taken + 1
        if seat_count <= OTHERS_SHOWN or seat_count % CROWD_NEWS_EVERY == 0:
            # What the table's pages need to show it, so that they need not read the table on others' bets: at a
            # crowded power table a thousand pages each reading it on every join kept the server from taking bets.
            news: dict[str, Any] = {"type": "bets", "round_id": round_id, "player_id": caller.id,
                                    "seat_count": seat_count}
            if seat_count <= OTHERS_SHOWN:  # a seat every view lists
                news["seat"] = seat_json(seat, player.name)
            if opening is not None:  # the pages at the table learn of the round from this, not each by a read
                news["round"] = opening
            self.events.publish(table.id, news)
        if table.betting_window <= 0:
            try:
                self.close_betting(table.id)
            except Busy:  # the join committed: its round is dealt by the timer's next tick instead (it is due)
                log.warning("the close of %s's betting after a join was busy; left to the timer", table.id)
                return body
            return self.view_of(caller, round_id)
        return body

    def _alone(self, session: Session, table: TableSpec, player_id: int) -> bool:
        """Nobody else is at the table: no one watching it live (through any process), no one else's bets on a slip
        there."""
        if self.events.anyone_else(table.id, player_id):
            return False
        return not any(slip.bets for slip in session.scalars(select(Slip).where(Slip.table_id == table.id,
                                                                                Slip.player_id != player_id)))

    def view_of(self, caller: Caller, round_id: int) -> dict[str, Any]:
        def view(session: Session) -> dict[str, Any]:
            round_row = session.get(Round, round_id)
            assert round_row is not None
            return round_json_held(session, round_row, self.tables.of_round(round_row), caller.id, self.live)

        return self.store.read_anew(view)

    def closed_table(self, caller: Caller, table: TableSpec) -> dict[str, Any]:
        """A table taken out of the configuration as a player who played there sees it (``GET /tables/{id}``, shaped
        as :meth:`Slips.table_state` answers): its stand-in, ``closed``; their balance in its currency; an empty slip
        and no next shoe, since it takes no bets; and the round open there (theirs, at a private table), to be
        played out. The table's shoes are not read: none will deal again."""

        def read(session: Session) -> dict[str, Any]:
            current = current_round(session, table, caller.id)
            view = None
            if current is not None:
                view = round_json_held(session, current, self.tables.of_round(current), caller.id, self.live)
                now = self.clock()
                view = without_new_stakes(view, caller, now, loss_room(session, caller, view["currency"], now))
            try:
                balance = self.wallet.balance(session, caller.id, table.currency)
            except WalletError as error:  # the operator's wallet refused or did not answer: 409 or 503, not a 500
                raise as_refusal(error) from None
            return {"table": table_json(table), "balance": balance,
                    "slip": slip_view(None, bet_slip(None, table, balance)), "next_shoe": None, "round": view,
                    "last_round": None}

        with self.wallet.balance_known(caller.id, table.currency):  # an operator's wallet, asked once before the read
            return self.store.read_anew(read)

    def close_betting(self, table_id: str, due: datetime | None = None) -> int | None:
        """The betting window closed: debit every seat, deal, and return undealt bets at the table.

        ``due``: the timer's moment; a round whose window closes later (a new round formed since
        the timer judged the table due) is left to its own window.
        """
        table = self.tables.get(table_id)
        if self.wallet.keeps_balances:
            return self._close_betting(table, due, None)
        # An operator's wallet is asked for every seat's balance and debit before the transaction begins: a
        # transaction open meanwhile held the forming round's row (a join waited), and on SQLite the whole database's
        # write lock (every player's writes waited), for as long as the operator took: seconds at a power round.
        # One close of a table at a time, in this process (the timer's and the operator's button; joins at a table
        # with no window) and among processes (the timer in one, the button in another): two asking at once debit
        # every seat twice, and a player whose balance covers one stake is refused by the second debit, which may be
        # the one whose close commits.
        with self._turn_to_close(table.id, wait=due is None) as turn:
            if not turn:  # the timer's: another close of this table's betting is under way
                return None
            # A retry of the operator's request is answered from its key before anyone is debited again (the first,
            # which recorded it with its deal, has had its turn: above).
            self.store.applied_before()
            asked = AskedSeats(0, {})
            try:
                self._ask_seats_ahead(table, due, asked)
            except BaseException:  # a pass failed after an earlier one debited: those debits are owed rollbacks
                self.wallet.owe_debits(asked.untaken())
                self.deliver_outbox()
                raise
            return self._close_betting(table, due, asked)

    def _closing(self, table_id: str) -> threading.Lock:
        with self._closing_guard:
            return self._closings.setdefault(table_id, threading.Lock())

    @contextmanager
    def _turn_to_close(self, table_id: str, wait: bool) -> Iterator[bool]:
        """The turn to close ``table_id``'s betting (True), held for the block: in this process (a lock of the
        table's), then among every process on the database (``TimerOwnership.hold``: an advisory lock on PostgreSQL,
        nothing more to take on SQLite). Another close holding it: False at once for the timer's close (``wait``
        off: that close deals the round, and the tick goes on to its other tables), or waited for by the operator's
        button and a join at a table with no window, both waits together (another process's polled) for up to
        :data:`CLOSE_WAIT` seconds, then 503."""
        here, deadline = self._closing(table_id), time.monotonic() + CLOSE_WAIT
        busy = "Another close of this table's betting is under way: send the same request again in a moment."
        if not (here.acquire(timeout=CLOSE_WAIT) if wait else here.acquire(blocking=False)):
            if wait:
                raise Busy(busy)
            yield False
            return
        try:
            ownership, name = self.ownership(), betting_close(table_id)
            while not ownership.hold(name):
                if not wait:
                    yield False
                    return
                if time.monotonic() > deadline:
                    raise Busy(busy)
                time.sleep(CLOSE_POLL)
            try:
                yield True
            finally:
                ownership.let_go(name)
        finally:
            here.release()

    def _close_betting(self, table: TableSpec, due: datetime | None, asked: AskedSeats | None) -> int | None:
        round_id = None
        returned: list[Returned] = []
        voided: str | None = None  # why its transaction voided the round (told once it committed: void_reason)
        void_reason: str | None = None
        status = "void"  # the round's once betting closed, told with it
        try:
            with self.store.write() as session:
                round_row = session.scalars(select(Round).where(Round.table_id == table.id, Round.status == "betting")
                                            .with_for_update()).first()
                closes = aware(round_row.betting_closes_at) if round_row is not None else None
                if round_row is None or (due is not None and closes is not None and closes > due):
                    if asked is not None:  # closed meanwhile by another, or a new round formed: nothing to stake
                        self._release_asked(session, asked, list(asked.seats.values()))
                    # Recorded before the turn ends, as a round's is: a retry waiting for the turn finds it.
                    self.store.answer(session, close_answer(None))
                    return None
                round_id = round_row.id
                table = self.tables.of_round(round_row)  # its stakes in the currency it formed in
                dealt: list[RoundSeat] = []
                seats = every_seat = session.scalars(select(RoundSeat).where(RoundSeat.round_id == round_row.id)
                                                     .order_by(RoundSeat.position)).all()
                # What the limits need of each player, as plain rows: a thousand ORM players cost a quarter second.
                players = {row.id: row for row in session.execute(
                    select(PLAYERS.c.id, PLAYERS.c.limits, PLAYERS.c.session_started_at)
                    .where(PLAYERS.c.id.in_([seat.player_id for seat in seats])))}
                ahead = {} if asked is None else self._take_asked(session, table, round_row, seats, asked, returned)
                if asked is not None:  # an operator's wallet: the seats debited; the others sit out
                    seats = [seat for seat in seats if seat.id in ahead]
                # Every seat's account at once, in the order of their ids, as a settlement locks them: a player at two
                # tables must not leave this close and that table's settlement each holding what the other waits for.
                self.wallet.lock_all(session, [seat.player_id for seat in seats], table.currency)
                # Today's losses of every seat whose player set a daily limit, in one statement (2 round trips a seat
                # to PostgreSQL, one by one), read under the locks: no stake elsewhere can add to them meanwhile.
                # The rows have the attributes the limits read of a Player (id, limits, session start).
                lost = self.accounts.losses_today(session, cast(list[Player], list(players.values())), table.currency)
                # Each seat is written once, by the flush after the loop: left to autoflush, each stake's statements
                # flushed the seat half-changed first (on PostgreSQL, round trips for every seat).
                with session.no_autoflush:
                    for seat in seats:
                        total = bets_total(seat.bets)
                        balance, debited = ahead.get(seat.id) or (self.wallet.balance(session, seat.player_id,
                                                                                      table.currency), None)
                        if total > balance:  # spent elsewhere since: the seat sits this round out
                            self._sit_out(seat, returned, "Your balance no longer covered your bets.")
                            continue
                        try:  # checked at the join with nothing staked yet: losses or a self-exclusion since count
                            self.accounts.check_limits(session, cast(Player, players[seat.player_id]), table.currency,
                                                       total, lost.get(seat.player_id))
                        except ServiceError as refused:
                            if debited is not None:
                                self.wallet.cancel_debit(session, debited)
                            self._sit_out(seat, returned, f"Your bets sit this round out: {refused.detail}")
                            continue
                        seat.balance_before = balance
                        self._stake(session, table, round_row, seat, total, debited)
                        dealt.append(seat)
                if dealt:  # the seats that sat out leave the round the others play (its view, settlement and history)
                    for seat in set(every_seat) - set(dealt):
                        session.delete(seat)
                session.flush()
                for slip in session.scalars(select(Slip).where(Slip.table_id == table.id)).all():
                    if slip.bets:  # bets placed but never confirmed with DEAL are returned
                        returned.append(Returned(slip.player_id, sum(slip.bets.values()),
                                                 "Your bets were not in the round when betting closed: press DEAL to "
                                                 "join the next one.", False))
                        slip.bets, slip.history = {}, []
                # When its betting closed: the operator's button (or a join at a table with no window) closes it
                # before the time it was set for, which the round kept, so the operator's list showed it closing after
                # its deal (found by an operator's trial).
                closed_at, planned = self.clock(), aware(round_row.betting_closes_at)
                if planned is None or planned > closed_at:
                    round_row.betting_closes_at = closed_at
                if not dealt:
                    # Void, its seats kept: each player who joined reads the round (GET /rounds/{id}, their history),
                    # void with its reason, nothing staked. Before, they were deleted with it empty, and the round
                    # their DEAL had answered was a 404 to them (found by an integrator's trial).
                    round_row.status = "void"
                    round_row.void_reason = voided = void_reason_of(returned)
                    round_row.settled_at = self.clock()  # when it ended: the operator's report by period counts it
                    self.store.answer(session, close_answer(round_id))
                else:
                    round_row.status = "playing"
                    round_row.decision_since = self.clock()
                    shoe = session.get(ShoeRow, round_row.shoe_id)
                    assert shoe is not None
                    engine = self._deal_engine(round_row, shoe, dealt)
                    self.shoes.following(session, table, dealt[0].player_id, shoe)
                    self._after_change(session, round_row, engine, table, dealt)
                    status = round_row.status  # playing, or settled where nobody had a decision
                    # The operator's close-betting request's answer, with its deal: a retry of it that waited for this
                    # close's turn finds it (close_betting), whichever process it reached.
                    self.store.answer(session, close_answer(round_id))
            if voided is None:
                self._remember(round_row, engine)
            void_reason = voided
        except (ServiceError, AlreadyApplied, IntegrityError):
            raise
        except Exception:
            if round_id is None:
                raise
            log.exception("round %s malfunctioned during the deal", round_id)
            status = "void"
            self.void(round_id, VOID_AT_DEAL)
            # The void's transaction is its own and records no answer: the request's is kept now, before the turn
            # ends, so that a retry waiting for the turn finds it (and deals no round formed since).
            self.store.keep_answer(close_answer(round_id))
        finally:
            if asked is not None:  # debits no transaction recorded nor released (it failed first): owed rollbacks
                self.wallet.owe_debits(asked.untaken())
            self.deliver_outbox()  # at an operator's wallet, the rollbacks of debits whose seats sat out
        for player_id, total, reason, sat_out, _ in returned:  # the reason is the player's own: a limit, a balance...
            news = {"type": "bets-returned", "player_id": player_id, "total": total, "reason": reason, "private": True}
            if sat_out:  # the round its seat sat out of: the page says so where the round ends, not "you watched it"
                # A seat's bets are in its round's currency, named: the table's (a slip's) may have changed since the
                # round formed, and the page showed the bets in that one.
                news |= {"round_id": round_id, "currency": table.currency}
            self.events.publish(table.id, news)
        if void_reason is not None:  # as a void in play is told (void): the round, and why (before, nothing was)
            self.events.publish(table.id, round_news(table, {"type": "void", "round_id": round_id,
                                                             "reason": void_reason}, None))
        # With its status, as every other round event (an integrator's trial found this one without).
        self.events.publish(table.id, {"type": "round", "round_id": round_id, "status": status})
        return round_id

    # ---------------------------------------------------------- decisions
    def act(self, caller: Caller, round_id: int, action: str, source: str = "player",
            player: str | None = None, expected_version: int | None = None,
            expected_since: datetime | None = None) -> dict[str, Any]:
        """Take a decision; an illegal or out-of-turn one is answered 409 with the legal actions.

        ``player`` (the timer's use) names whose decision the operator takes. ``expected_version``:
        the timer's auto decision applies only to the round as it judged it timed out; if a decision
        (in any process) moved the round on since, it is refused; so it is if the round's clock was moved on since
        ``expected_since`` (a downtime given back).
        """
        # An operator's balance is asked before the round's lock and the transaction: neither waits on the network.
        # On SQLite so is its debit, judged and sent under the round's lock, before the transaction (_decision_ahead).
        with self._balance_ahead(caller, round_id, action), self.live.locked(round_id):
            legal: list[str] | None = None  # once known: sent with any refusal
            touched = False  # whether the engine in memory was changed, and must go if nothing commits
            moved_on = False  # whether the round moved on for everyone (see below)
            try:
                ahead = self._decision_ahead(caller, round_id, action, source)
                with self._owed_unless_taken(ahead), self.store.write() as session:
                    if caller.is_operator:
                        round_row, own = _round_record(session, round_id), None
                    else:
                        round_row, own = _round_and_seat_records(session, round_id, caller.id)
                    if round_row is None or (not caller.is_operator and own is None):
                        raise ServiceError(404, f"There is no round {round_id} of yours.")
                    table = self.tables.of_round(round_row)
                    if round_row.status != "playing":
                        raise ServiceError(409, f"Round {round_id} is {round_row.status}: no decision is pending.",
                                           legal_actions=[])
                    if (expected_version is not None and round_row.version != expected_version) or (
                            expected_since is not None and aware(round_row.decision_since) != aware(expected_since)):
                        raise ServiceError(409, f"Round {round_id} moved on: its timer starts again.",
                                           legal_actions=[])
                    engine = self.live.engine(session, round_row)
                    # The operator (the timer) acts for whoever is awaited; a player only for themselves,
                    # in turn, or at once in a common-draw game where everyone deciding chooses at the same step.
                    who = player if player is not None else (None if caller.is_operator else str(caller.id))
                    decision = engine.decision(who)
                    if decision is None:
                        raise ServiceError(409, nothing_to_decide(who, engine.rules.deal.common_draw),
                                           legal_actions=[])
                    legal = [str(a) for a in engine.legal_actions(decision.player)]
                    try:
                        engine.verify(action, decision.player)
                    except IllegalActionError as error:
                        raise ServiceError(409, error.plain, legal_actions=legal) from None
                    cost = engine.cost_of(action, decision.player)
                    costs = costs_of(engine, decision.player, legal) if cost else {}  # read by a refusal alone
                    step = engine.step
                    seat = own if own is not None and own.player_id == int(decision.player) else \
                        _seat_record(session, round_id, int(decision.player))
                    assert seat is not None
                    decider = seat.player_id
                    # A private round has the one seat: no need to read the round's seats again.
                    alone = [seat] if not table.shared else None
                    # A private round's one player: lock, check and stake before the engine moves. At a shared
                    # table the lock waits until the engine has moved (below): first an unlocked check, so that a
                    # refusal leaves the engine of a round of hundreds as it is.
                    debited = None
                    if cost:
                        if not table.shared:
                            self.wallet.lock(session, seat.player_id, table.currency)
                        self._afford(session, table, seat, action, cost, legal, source, costs=costs)
                        debited = self._take_ahead(session, ahead, _stake_key(round_row, seat), cost)
                        if not table.shared:
                            self._stake(session, table, round_row, seat, cost, debited)
                        elif debited is None:  # an operator's debit, a call over the network, before any lock
                            debited = self._debit_ahead(session, table, round_row, seat, cost)
                    self.fault("act")
                    touched = True
                    try:
                        engine.act(action, decision.player)
                    except Exception as error:
                        raise Malfunction(str(error)) from error
                    if cost and table.shared:
                        # Every account this transaction will change, locked at once in the order of their ids, as
                        # a close of betting and a settlement lock theirs: this player's, and if the decision
                        # settles the round, its winners'. Locked first alone, this player's would come before the
                        # winners' whatever its id, and a close or a settlement at another table sharing two of
                        # them could wait on this in a cycle (PostgreSQL would end one: a 503, or a retried tick).
                        # (SQLite has one writer: nothing to order, so the winners' accounts wait for their payment.)
                        paid = _paid(engine) if not self.store.db.is_sqlite else []
                        self.wallet.lock_all(session, [seat.player_id, *paid], table.currency)
                        # Spent elsewhere since? (An operator's wallet keeps its balances itself, unlocked by
                        # this: its debit refuses what the balance does not cover, so it is not asked twice.)
                        self._afford(session, table, seat, action, cost, legal, source,
                                     check_balance=self.wallet.keeps_balances, costs=costs)
                        self._stake(session, table, round_row, seat, cost, debited)
                    defer(session, LOG_ACTION, {"round_id": round_id, "seq": round_row.version,
                                                "player_id": int(decision.player), "action": str(action),
                                                "source": source})
                    if source == "timeout":  # the player is told (their round view and history: ``timed_out``)
                        seat.timed_out += 1
                    # Decisions made together (a common draw; the offers before the peek) share one clock, restarted
                    # when the round moves on a step: a clock restarted at anyone's decision would tell the others
                    # that someone acted, and give them more time.
                    moved_on = not engine.decides_together or engine.step != step
                    # News of the answer for everyone, except in a common draw, where a choice is nobody else's news;
                    # an offer answered at a multiplayer table is (before, the others' pages named that player as
                    # still deciding until the offers ended: a review).
                    told = moved_on or not engine.rules.deal.common_draw
                    if moved_on:
                        round_row.decision_since = self.clock()
                    round_row.version += 1
                    self._after_change(session, round_row, engine, table, alone, decided=seat)
                    save(session, cast(Record, round_row))  # before the view reads the round's seats
                    save(session, cast(Record, seat))
                    shown = ([(seat, caller.name)], 1) if alone and seat.player_id == caller.id else None
                    view = round_json(session, round_row, table, caller.id, engine, seats=shown)
                    now = self.clock()  # what the decider may still stake, as the next decision will be checked
                    body = self.store.answer(session, without_new_stakes(
                        view, caller, now, loss_room(session, caller, view["currency"], now)))
                self._remember(round_row, engine)
            except BaseException as error:
                if touched:  # a refusal before the decision leaves the engine as the log has it
                    self.live.forget(round_id)
                if isinstance(error, ServiceError | AlreadyApplied | IntegrityError):
                    raise
                if isinstance(error, WalletError):  # the operator's wallet refused or missed a decision's stake
                    refused = as_refusal(error)
                    if legal is not None:
                        refused.extra.setdefault("legal_actions", legal)
                    raise refused from None
                if not isinstance(error, Exception):
                    raise
                log.exception("round %s malfunctioned", round_id)
                self.void(round_id, VOID_IN_PLAY)
                return self.view_of(caller, round_id)
        self.deliver_outbox()
        if told or body["status"] != "playing":
            # In a common draw one player's choice is news to nobody else: a table of hundreds hears only
            # that the round moved on a step (a common card dealt to those waiting for it) or settled.
            news = {"type": "round", "round_id": round_id, "status": body["status"]}
            if body["status"] == "playing":  # the step's clock, which everyone shares: all a finished player's
                news["deadline"] = body["deadline"]  # page needs of a step, without reading the table
            self.events.publish(table.id, round_news(table, news, decider))
        return body

    def _decision_ahead(self, caller: Caller, round_id: int, action: str, source: str) -> StakeAhead | None:
        """An operator's debit for a player's double, split or insurance, sent before the decision's transaction:
        judged on the round as it stands (the caller holds its lock), and none where the decision will cost nothing
        or be refused (the transaction judges it again and answers), with the built-in ledger, or where debits are
        not sent ahead (:attr:`debits_ahead`)."""
        if self.wallet.keeps_balances or not self.debits_ahead or caller.is_operator or action not in COSTLY_ACTIONS:
            return None
        try:
            with self.store.read() as session:
                # The decision's own read, in one statement (its FOR UPDATE is not sent to SQLite, where this runs).
                round_row, seat = _round_and_seat_records(session, round_id, caller.id)
                if round_row is None or seat is None or round_row.status != "playing":
                    return None
                table = self.tables.of_round(round_row)
                engine = self.live.engine(session, round_row)
                decision = engine.decision(str(caller.id))
                if decision is None:
                    return None
                engine.verify(action, decision.player)
                cost = engine.cost_of(action, decision.player)
                if cost:
                    legal = [str(a) for a in engine.legal_actions(decision.player)]
                    self._afford(session, table, seat, action, cost, legal, source,
                                 costs=costs_of(engine, decision.player, legal))
        except (ServiceError, WalletError, IllegalActionError):
            return None
        if not cost:
            return None
        try:
            return self._send_ahead(table.currency, round_id, caller.id, cost, _stake_key(round_row, seat))
        except WalletError as error:  # refused or unanswered: a 409 or 503 with the legal actions, as in play
            refused = as_refusal(error)
            refused.extra.setdefault("legal_actions", legal)
            raise refused from None

    def auto_decide(self, round_id: int, version: int | None = None, since: datetime | None = None) -> int:
        """Stand for the waiting hand (decline an offer) after the timeout: the sheets' auto decision.

        Where players decide together (a common draw's step, the offers before the peek) the time-out is the
        step's, so every player still deciding at this step is stood or declines (those waiting for a card then get
        it, and a fresh clock for the next step); in players' turns it is the waiting player's: every decision of
        theirs left in the round is taken (their other hands stood), and the next player's clock starts afresh. A
        private table's round is played out whole (a shared table's lone player still has their turn after the
        offers: a review). Sheet 000: "If reconnection does not occur within 20
        minutes, the auto decision — Stand — will be performed and the game will be settled". Before, one hand was
        stood and the player's next hand had a clock of its own: a first-person round of five hands left after the
        deal settled after 100 minutes (a trial of players).
        ``version``: the round's version when the timeout was judged; a round moved on since (a
        decision here or in another process) is not timed out. ``since``: its clock's start as judged; a clock moved
        on since (the floor was down: :mod:`~twentyone.server.downtime`) is not timed out either.
        """
        timer = Caller(0, "timer", "operator")
        decided = 0
        together: bool | None = None  # whether the decisions timed out were made together (one clock, one step)
        timed_out_step = None
        timed_out_player = None
        for _ in range(10_000):  # bounded: a round has far fewer decisions than this
            with self.store.read() as session:
                round_row = session.get(Round, round_id)
                if round_row is None or round_row.status != "playing":
                    return decided
                expected = version if version is not None and not decided else round_row.version
                with self.live.locked(round_id):
                    engine = self.live.engine(session, round_row)
                    decision = engine.decision()
                    together = engine.decides_together if together is None else together
                    timed_out_step = engine.step if timed_out_step is None else timed_out_step
                    moved_on = together and engine.step != timed_out_step
                    private = not self.tables.of_round(round_row).shared
            if decision is None:
                return decided
            if moved_on and not private:
                return decided  # the step that timed out is complete: the next has its own clock
            timed_out_player = decision.player if timed_out_player is None else timed_out_player
            if not together and decision.player != timed_out_player:
                return decided  # another player's turn: their own clock
            action = Action.STAND if decision.kind == DecisionKind.PLAY else OFFER_ANSWERS[decision.kind][1]
            try:
                self.act(timer, round_id, str(action), source="timeout", player=decision.player,
                         expected_version=expected, expected_since=None if decided else since)
            except ServiceError:
                return decided
            decided += 1
        return decided

    # --------------------------------------------------------- settlement
    def _remember(self, round_row: Round, engine: Engine) -> None:
        if round_row.status == "playing":
            self.live.keep(round_row.id, round_row.version, engine)
        elif round_row.status == "settled":  # everyone at the table re-reads it now: see LiveRounds
            self.live.finish(round_row.id, engine)
        else:
            self.live.forget(round_row.id)

    def _check_limits(self, session: Session, player_id: int, currency: str, stake: int, legal: list[str],
                      costs: dict[str, int]) -> None:
        """Refuse (403, with the legal actions) a stake added mid-round that the player's limits forbid. The legal
        actions are those the limits leave, as the round's view lists them (:func:`without_new_stakes`): the refusal
        listed the refused action among them, and a client drawn from it offered it again (an attacker's trial).
        ``costs``: what each legal action would stake."""
        player = session.get(Player, player_id)
        assert player is not None
        try:
            self.accounts.check_limits(session, player, currency, stake)
        except ServiceError as error:
            amounts = error.extra.get("amounts", {})
            # Past the daily loss limit: what it leaves is the room; kept from play (an exclusion, a session's
            # limit): no new stake at all.
            room = amounts["limit"] - amounts["lost"] if "limit" in amounts and "lost" in amounts else 0
            error.extra.setdefault("legal_actions", [action for action in legal if costs.get(action, 0) <= room])
            raise

    def _balance_ahead(self, caller: Caller, round_id: int, action: str) -> AbstractContextManager[None]:
        """A decision that may cost (a double, a split, insurance) checks the player's balance: an operator's wallet is
        asked before the transaction (:meth:`Wallet.balance_known`), in the round's currency."""
        if self.wallet.keeps_balances or caller.is_operator or action not in COSTLY_ACTIONS:
            return nullcontext()
        with self.store.read() as session:
            round_row = session.execute(select(ROUNDS.c.table_id, ROUNDS.c.variant, ROUNDS.c.currency,
                                               ROUNDS.c.betting_closes_at).where(ROUNDS.c.id == round_id)).first()
        if round_row is None:
            return nullcontext()  # no such round: the decision says so
        return self.wallet.balance_known(caller.id, self.tables.of_round(round_row).currency)

    def _afford(self, session: Session, table: TableSpec, seat: RoundSeat, action: str, cost: int, legal: list[str],
                source: str, check_balance: bool = True, costs: dict[str, int] | None = None) -> None:
        """Refuse (with the legal actions) a decision's added stake that the player's limits or balance forbid
        (``check_balance=False``: the limits alone). ``costs``: what each legal action would stake."""
        if source == "player":  # a double, split or insurance is a bet: the player's limits apply
            self._check_limits(session, seat.player_id, table.currency, cost, legal, costs or {action: cost})
        if not check_balance:
            return
        balance = self.wallet.balance(session, seat.player_id, table.currency)
        if cost > balance:
            raise refusal(BetSlipError(f"{action.capitalize()} needs {{cost}} more and the balance is {{balance}}.",
                                       cost=cost, balance=balance), table.currency, legal_actions=legal)

    def _ask_seats_ahead(self, table: TableSpec, due: datetime | None, asked: AskedSeats) -> None:
        """Ask an operator's wallet for the balance of every seat of the round forming at ``table`` and debit those it
        covers, several at once and with no transaction open (the seats read first), into ``asked`` (left empty if
        no round is due). Seats that joined while the operator was asked are asked for in a next pass, up to
        :data:`ASK_PASSES`; those that join after are asked for in the close's transaction."""
        for _ in range(ASK_PASSES):
            with self.store.read() as session:
                forming = session.execute(select(ROUNDS.c.id, ROUNDS.c.betting_closes_at, ROUNDS.c.table_id,
                                                 ROUNDS.c.variant, ROUNDS.c.currency)
                                          .where(ROUNDS.c.table_id == table.id, ROUNDS.c.status == "betting")).first()
                closes = aware(forming.betting_closes_at) if forming is not None else None
                if forming is None or (due is not None and closes is not None and closes > due) or (
                        asked.round_id and asked.round_id != forming.id):
                    return  # none due; or the round asked for was closed meanwhile (its transaction says so)
                seats = session.execute(select(ROUND_SEATS.c.id, ROUND_SEATS.c.player_id, ROUND_SEATS.c.bets,
                                               ROUND_SEATS.c.staked).where(ROUND_SEATS.c.round_id == forming.id)).all()
            asked.round_id = forming.id
            new = [seat for seat in seats if seat.id not in asked.seats]
            if not new:
                return
            self._ask_for(self.tables.of_round(forming), asked, new)  # in the forming round's currency

    def _ask_for(self, table: TableSpec, asked: AskedSeats, seats: Sequence[Row[Any, Any, Any, Any]]) -> None:
        """Each seat's balance, then a debit of those it covers, several at once: added to ``asked``."""
        balances = self.wallet.balances_ahead([seat.player_id for seat in seats], table.currency)
        entries = [AskedSeat(seat.player_id, bets_total(seat.bets), balance)
                   for seat, balance in zip(seats, balances, strict=True)]
        asked.seats.update((seat.id, entry) for seat, entry in zip(seats, entries, strict=True))
        covered = [(seat, entry) for seat, entry in zip(seats, entries, strict=True)
                   if isinstance(entry.balance, int) and entry.total <= entry.balance]
        sent = self.wallet.send_debits(table.currency, asked.round_id, [
            (seat.player_id, entry.total, _stake_key_of(asked.round_id, seat.player_id, seat.staked))
            for seat, entry in covered])
        for (_seat, entry), debit in zip(covered, sent, strict=True):
            entry.sent = debit

    def _take_asked(self, session: Session, table: TableSpec, round_row: Round, seats: Sequence[RoundSeat],
                    asked: AskedSeats, returned: list[Returned]) -> dict[int, tuple[int, str]]:
        """Match what :meth:`_ask_seats_ahead` asked with the seats as the transaction finds them: the seats debited,
        by id, with the balance before and the debit's id; a seat the operator refused, or did not answer for, sits
        out (told why in ``returned``). A seat that joined since, or changed its bets, is asked now
        (:meth:`_debit_seats_ahead`: rare, a join in the moments between); a debit whose seat left, or whose bets
        changed, is rolled back with this transaction."""
        entries: dict[int, AskedSeat] = {}
        if asked.round_id == round_row.id:
            entries = dict(asked.seats)
        else:  # asked for a round closed since: none of it stakes here
            self._release_asked(session, asked, list(asked.seats.values()))
        matched: list[tuple[RoundSeat, AskedSeat]] = []
        late: list[RoundSeat] = []
        stale: list[AskedSeat] = []
        for seat in seats:
            entry = entries.pop(seat.id, None)
            if entry is not None and entry.player_id == seat.player_id and entry.total == bets_total(seat.bets):
                matched.append((seat, entry))
            else:
                late.append(seat)
                stale += [entry] if entry is not None else []
        self._release_asked(session, asked, [*stale, *entries.values()])  # bets changed; seats that left
        debited = [(seat, entry) for seat, entry in matched if entry.sent is not None]
        answers = self.wallet.record_debits(session, [cast(SentDebit, entry.sent) for _, entry in debited])
        asked.take([entry for _, entry in debited])
        taken: dict[int, tuple[int, str]] = {}
        for (seat, entry), answer in zip(debited, answers, strict=True):
            if isinstance(answer, WalletError):
                self._sit_out_for(seat, returned, answer)
            else:
                taken[seat.id] = (cast(int, entry.balance), answer)
        for seat, entry in matched:
            if entry.sent is None:  # the balance was not given, or did not cover the bets
                if isinstance(entry.balance, WalletError):
                    self._sit_out_for(seat, returned, entry.balance)
                else:
                    self._sit_out(seat, returned, "Your balance no longer covered your bets.")
        if late:
            taken.update(self._debit_seats_ahead(session, table, round_row, late, returned))
        return taken

    def _release_asked(self, session: Session, asked: AskedSeats, entries: Sequence[AskedSeat]) -> None:
        """Roll back, with this transaction, the debits of ``entries`` that no seat will stake."""
        released = [entry for entry in entries if entry.sent is not None]
        self.wallet.release_debits(session, [cast(SentDebit, entry.sent) for entry in released])
        asked.take(released)

    def _debit_seats_ahead(self, session: Session, table: TableSpec, round_row: Round, seats: Sequence[RoundSeat],
                           returned: list[Returned]) -> dict[int, tuple[int, str]]:
        """An operator's balance and debit for each seat of a close of betting, before any account is locked, several
        seats at once (``RemoteWallet.debit_all``): the seats debited, by id, with the balance before and the debit's
        id. A seat the operator refuses, or does not answer for, sits the round out alone (told why in
        ``returned``)."""
        totals = [bets_total(seat.bets) for seat in seats]
        covered: list[tuple[RoundSeat, int, int]] = []  # (seat, total, balance)
        for seat, total, balance in zip(seats, totals, self.wallet.balances_ahead(
                [seat.player_id for seat in seats], table.currency), strict=True):
            if isinstance(balance, WalletError):
                self._sit_out_for(seat, returned, balance)
            elif total > balance:
                self._sit_out(seat, returned, "Your balance no longer covered your bets.")
            else:
                covered.append((seat, total, balance))
        debits = self.wallet.debit_all_ahead(session, table.currency, round_row.id,
                                             [(seat.player_id, total, _stake_key(round_row, seat))
                                              for seat, total, _ in covered])
        debited = {}
        for (seat, _total, balance), debit in zip(covered, debits, strict=True):
            if isinstance(debit, WalletError):
                self._sit_out_for(seat, returned, debit)
            else:
                debited[seat.id] = (balance, debit)
        return debited

    @staticmethod
    def _sit_out(seat: RoundSeat, returned: list[Returned], reason: str, unreachable: bool = False) -> None:
        """The seat sits the round being closed out, its bets not staked; what they came to and ``reason`` go to its
        player (before, the total was 0, and the page said nothing of the bets: noted by a trial). It leaves the round
        if another seat is dealt (:meth:`_close_betting`); if none is, the round is void with it."""
        returned.append(Returned(seat.player_id, bets_total(seat.bets), reason, True, unreachable))

    @classmethod
    def _sit_out_for(cls, seat: RoundSeat, returned: list[Returned], error: WalletError) -> None:
        """:meth:`_sit_out` for the operator wallet's refusal of the seat, or its silence (a 503: an outage)."""
        cls._sit_out(seat, returned, f"Your bets sit this round out: {error.detail}", unreachable=error.status == 503)

    def _stake(self, session: Session, table: TableSpec, round_row: Round, seat: RoundSeat, amount: int,
               debited: str | None = None) -> None:
        """Stake ``amount`` more of the seat's player (``debited``: what :meth:`_debit_ahead` answered for it)."""
        if amount <= 0:
            return
        self.wallet.stake(session, seat.player_id, table.currency, amount, round_row.id, _stake_key(round_row, seat),
                          debited)
        seat.staked += amount

    def _debit_ahead(self, session: Session, table: TableSpec, round_row: Round, seat: RoundSeat,
                     amount: int) -> str | None:
        """An operator's debit for the seat's next stake, made before any lock is taken (``Wallet.debit_ahead``)."""
        return self.wallet.debit_ahead(session, seat.player_id, table.currency, amount, round_row.id,
                                       _stake_key(round_row, seat))

    def _after_change(self, session: Session, round_row: Round, engine: Engine, table: TableSpec,
                      seats: list[RoundSeat] | None = None, decided: RoundSeat | None = None) -> None:
        """Settle the round if the change finished it; ``seats``: all of its seats, when the caller holds them;
        ``decided``: the seat the change was made for, as the caller holds it (a record, not yet saved)."""
        if engine.phase is Phase.SETTLED:
            self._settle(session, round_row, engine, table, seats, decided)

    def _settle(self, session: Session, round_row: Round, engine: Engine, table: TableSpec,
                seats: list[RoundSeat] | None = None, decided: RoundSeat | None = None) -> None:
        """Pay every seat and close the round, in the same transaction as the last decision."""
        self.fault("settle")
        returned: dict[str, int] = {}
        for op in engine.settlements:
            returned[op.player] = returned.get(op.player, 0) + op.returned
        if seats is None:
            seats = list(session.scalars(select(RoundSeat).where(RoundSeat.round_id == round_row.id)).all())
            if decided is not None:  # the deciding seat's record, whose unsaved change the row read here lacks: it
                seats = [decided if seat.id == decided.id else seat for seat in seats]  # is saved with the result
        # The wallet's statements below would each flush the seats and the round half-changed first;
        # without that, each seat and the round are written once, at the commit.
        with session.no_autoflush:
            for seat in seats:
                seat.returned = returned.get(str(seat.player_id), 0)
            self.wallet.pay(session, table.currency, {seat.player_id: seat.returned for seat in seats}, "win",
                            round_row.id)
            after = self.wallet.balances_after(session, [seat.player_id for seat in seats], table.currency)
        for seat in seats:
            seat.balance_after = after[seat.player_id]
        round_row.status = "settled"
        round_row.settled_at = self.clock()
        round_row.decision_since = None
        retired = table.closed or round_row.variant != table.variant  # a table removed, or its game changed meanwhile
        if move_shoe(session, round_row.shoe_id, round_row.shoe_start + engine.shoe.position, retired, table.shared):
            self._next_shoe(session, table, seats, builtin_rules(table.variant).shoe.cut_card)

    def _next_shoe(self, session: Session, table: TableSpec, seats: Sequence[RoundSeat], cut_card: int | None
                   ) -> None:
        """Shuffle and commit to the next shoe as the last one finishes, in the same transaction.

        So the table shows its next shoe's commitment before the bets on it, and reading a table
        (``GET /tables/{id}``) never needs to write one. A private table's shoes are its player's.
        (After a void, and at a table's first visit, the next bet control makes it.) A table that shuffles every
        round made it at the deal (:meth:`Shoes.following`); for a round dealt before that, the next bet control.
        """
        if seats and cut_card is not None and not table.closed:  # a closed table deals no more rounds
            self.shoes.prepared(session, table, seats[0].player_id, one_finished=True)

    def void(self, round_id: int, reason: str, when: tuple[str, ...] = OPEN) -> None:
        """Malfunction voids the round: every stake of it is refunded, in one transaction. Only a round whose status
        is one of ``when`` (open, by default; ``("betting",)``: not one another process dealt meanwhile)."""
        with self.live.locked(round_id):
            self.live.forget(round_id)
            with self.store.write() as session:
                round_row = session.scalars(ROUND_FOR_UPDATE, {"round_id": round_id}).first()
                if round_row is None or round_row.status not in when:
                    return
                table = self.tables.of_round(round_row)
                seats = session.scalars(select(RoundSeat).where(RoundSeat.round_id == round_id)).all()
                players = [seat.player_id for seat in seats]
                self.wallet.pay(session, table.currency, {seat.player_id: seat.staked for seat in seats}, "void",
                                round_id)
                for seat in seats:
                    seat.returned = seat.staked
                after = self.wallet.balances_after(session, [seat.player_id for seat in seats], table.currency)
                for seat in seats:
                    seat.balance_after = after[seat.player_id]
                round_row.status = "void"
                round_row.void_reason = reason
                round_row.settled_at = self.clock()
                shoe = session.get(ShoeRow, round_row.shoe_id)
                if shoe is not None:
                    # Finished; the next is shuffled at the next bet control or deal, not here: a void must not fail.
                    shoe.finished = True
        self.deliver_outbox()  # the refunds, at an operator's wallet
        news = {"type": "void", "round_id": round_id, "reason": reason}
        owners: list[int | None] = [None] if table.shared else list(players)  # a private round's: its one player
        for player_id in owners:
            self.events.publish(table.id, round_news(table, news, player_id))

    def deliver(self, recover: bool = False, send: bool = True, fresh: bool = False) -> int:
        """Write the rollbacks owed and send the operator wallet what the outbox holds; a failure waits for the next
        tick. ``recover`` (the tick): first queue what dead processes' journals owe (:mod:`~twentyone.server.journal`);
        ``send=False``: only write (a process that does not deliver the outbox); ``fresh`` (after a request's
        commit): send only what this thread's commits wrote, and open no transaction if that is nothing."""
        if self.wallet.keeps_balances:
            return 0  # the built-in ledger has no outbox
        if fresh and not self.wallet.waiting_here():
            return 0
        try:
            return self.wallet.deliver(self.store.write_apart, self.store.read, recover, send, fresh)
        except Exception:
            log.exception("operator wallet delivery failed; retried at the next tick")
            return 0


def round_news(table: TableSpec, event: dict[str, Any], player_id: int | None) -> dict[str, Any]:
    """An event of a round at ``table``: everyone's at a shared table; at a private table the round is its player's
    alone, and so is its news (``private``: to that player's connections and the operator's). Before, everyone at a
    private table heard when each other player dealt, and when each round settled or was voided, and each of their
    pages re-read the table on it: at a table of hundreds, hundreds of reads for every round dealt (found by a
    trial).

    >>> from twentyone.server.config import shipped_tables
    >>> tables = shipped_tables()
    >>> round_news(tables["classic"], {"type": "round", "round_id": 7}, 3)
    {'type': 'round', 'round_id': 7, 'private': True, 'player_id': 3}
    >>> round_news(tables["multiplayer"], {"type": "round", "round_id": 8}, 3)
    {'type': 'round', 'round_id': 8}
    """
    if table.shared:
        return event
    return {**event, "private": True, "player_id": player_id}


def close_answer(round_id: int | None) -> dict[str, Any]:
    """The answer to the operator's close-betting request: the round it closed, or ``None`` when none was forming.

    >>> close_answer(7)
    {'round_id': 7}
    """
    return {"round_id": round_id}


def costs_of(engine: Engine, player: str, legal: list[str]) -> dict[str, int]:
    """What each of ``legal`` (the player's legal actions now) would stake, for those that stake at all."""
    return {action: engine.cost_of(action, player) for action in legal if action in COSTLY_ACTIONS}


def _stake_key(round_row: Round, seat: RoundSeat) -> str:
    """What names a seat's next stake in the operator's wallet (with a nonce there: ``RemoteWallet.debit_now``)."""
    return _stake_key_of(round_row.id, seat.player_id, seat.staked)


def _stake_key_of(round_id: int, player_id: int, staked: int) -> str:
    return f"{round_id}-{player_id}-{staked}"


@dataclass
class StakeAhead:
    """An operator's debit sent before the transaction that records its stake (a private deal, a double, a split,
    insurance): the round and stake it was sent for, and what was sent. ``taken`` once a transaction recorded or
    released it; until then it is owed a rollback if the work ends."""

    round_id: int
    key: str
    amount: int
    sent: SentDebit
    taken: bool = False


class Returned(NamedTuple):
    """Bets a close of betting gives back: whose, what they came to, and why (the player's own words); ``sat_out``: a
    seat's of the round (not a slip's bets that never joined it); ``unreachable``: it sat out because the operator's
    wallet could not be reached for it, not for a refusal."""

    player_id: int
    total: int
    reason: str
    sat_out: bool
    unreachable: bool = False


@dataclass
class AskedSeat:
    """A close's seat as an operator's wallet answered for it, before the close's transaction: its player, the total
    of its bets, the balance (or the wallet's error), and the debit sent if the balance covered the bets."""

    player_id: int
    total: int
    balance: int | WalletError
    sent: SentDebit | None = None


@dataclass
class AskedSeats:
    """What :meth:`Rounds._ask_seats_ahead` asked for the round ``round_id`` (0 before it found one), by seat id; the
    debits taken (recorded or released in the close's transaction) are no longer owed by the close (:meth:`untaken`)."""

    round_id: int
    seats: dict[int, AskedSeat]
    taken: set[int] = field(default_factory=set)  # ids of the AskedSeat objects taken

    def take(self, entries: Sequence[AskedSeat]) -> None:
        self.taken.update(id(entry) for entry in entries)

    def untaken(self) -> list[SentDebit]:
        return [entry.sent for entry in self.seats.values() if entry.sent is not None and id(entry) not in self.taken]


def _paid(engine: Engine) -> list[int]:
    """The players a settled round pays something (none while it is in play): whose accounts its settlement changes."""
    if engine.phase is not Phase.SETTLED:
        return []
    return sorted({int(op.player) for op in engine.settlements if op.returned})


def _round_record(session: Session, round_id: int) -> Round | None:
    """The round locked for a change, as a record with a round's attributes (written back by ``direct.save``)."""
    return cast(Round | None, read_record(session, ROUND_RECORD, {"round_id": round_id}, ROUNDS))


def _round_and_seat_records(session: Session, round_id: int, player_id: int) -> tuple[Round | None, RoundSeat | None]:
    """The round and the player's seat in it, both locked for a change, as records (:func:`_round_record`,
    :func:`_seat_record`), read in one statement: (None, None) where there is no such round or no such seat."""
    row = run(session, ROUND_AND_SEAT_RECORD, {"round_id": round_id, "player_id": player_id}).first()
    if row is None:
        return None, None
    values = row._asdict()
    round_row = Record(ROUNDS, {column.name: values[column.name] for column in ROUNDS.c})
    seat = Record(ROUND_SEATS, {column.name: values[SEAT_PREFIX + column.name] for column in ROUND_SEATS.c})
    return cast(Round, round_row), cast(RoundSeat, seat)


def _seat_record(session: Session, round_id: int, player_id: int) -> RoundSeat | None:
    """The player's seat in the round, as a record with a seat's attributes (written back by ``direct.save``)."""
    return cast(RoundSeat | None, read_record(session, SEAT_RECORD, {"round_id": round_id, "player_id": player_id},
                                              ROUND_SEATS))


def refuse_second_round(rows: Result) -> None:
    """A private deal's judgment of :data:`OPEN_OWN_ROUND_ID`: one round in play at a time."""
    if rows.first() is not None:
        raise ServiceError(409, "Finish the round in play before dealing another.")


def _player(session: Session, caller: Caller) -> Player:
    """The caller as a player, read only: a row with the attributes of a :class:`Player` that the limits' checks
    and the seat's name read (an ORM object, loaded at every deal, cost twice the statement)."""
    player = run(session, PLAYER, {"player_id": caller.id}).first()
    if player is None:
        raise ServiceError(403, "Only players can bet: the operator has no seat.")
    return cast(Player, player)
