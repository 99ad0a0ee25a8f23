"""The game service: one façade over the parts a newcomer can read one at a time.

- :mod:`~twentyone.server.store`: transactions, storage trouble as 503, idempotent requests
- :mod:`~twentyone.server.accounts`: sign-in, tokens, settings, responsible-gaming limits
- :mod:`~twentyone.server.tables`: the table registry, bet slips, shoes
- :mod:`~twentyone.server.slips`: the bet controls and the table a player sees
- :mod:`~twentyone.server.rounds`: deal, shared betting windows, decisions, settlement, voiding
- :mod:`~twentyone.server.live`: live rounds' engines in memory, rebuilt from the log after a restart
- :mod:`~twentyone.server.views`: what players read (round, history, replay, proof, hints, reports)
- :mod:`~twentyone.server.wallet`: the ledger and the operator wallet behind one ``Wallet`` interface

A round is stored as its variant, its shoe (order and salt, server-side until the
shoe is finished), its seats' bets and its action log; money moves only through
the wallet, in the same transaction as the round change it belongs to.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from twentyone.core.commitment import commitment, verify_record
from twentyone.core.money import MAX_AMOUNT
from twentyone.core.shoe import RandomBits, system_rng
from twentyone.server.accounts import SELF_EXCLUDED, Accounts, limits_in_force, live_sign_in
from twentyone.server.cluster import OUTBOX, TABLES_CHANNEL, LocalOwnership, TimerOwnership, table_timers
from twentyone.server.config import CURRENCIES, Settings, TableSpec
from twentyone.server.context import Busy, Caller, ServiceError, aware, iso, utcnow
from twentyone.server.db import Database
from twentyone.server.downtime import Downtime
from twentyone.server.downtime import beat as beat_in
from twentyone.server.events import Broadcaster
from twentyone.server.journal import JOURNALS, DebitJournal
from twentyone.server.live import LiveRounds
from twentyone.server.models import Player, Round, RoundSeat
from twentyone.server.rounds import Rounds, round_news
from twentyone.server.slips import Slips
from twentyone.server.store import Store
from twentyone.server.tables import Shoes, TableRegistry
from twentyone.server.views import Views
from twentyone.server.wallet import (
    LedgerWallet,
    OperatorLedgerWallet,
    OperatorWallet,
    Wallet,
    WalletError,
    held_balances,
)

# Why a player's undealt bets were returned when they connected again (the disconnection policy of the sheets).
RETURNED_ON_RECONNECTION = "You connected again before they were dealt."
RETURNED_ON_SIGN_OUT = "You signed out before they were dealt."
TABLE_CLOSED = "The table was closed before this round was dealt: nothing was staked."
TABLE_GONE = {"type": "table-closed"}  # to the pages at a table taken out: they read it again
TABLE_CHANGED = {"type": "table-changed"}  # to the pages at a table removed and made again meanwhile: the same

log = logging.getLogger("twentyone.server")


class GameService:
    def __init__(self, db: Database, settings: Settings, operator_wallet: OperatorWallet | None = None,
                 clock: Callable[[], datetime] = utcnow, rng: RandomBits | None = None,
                 events: Broadcaster | None = None, ownership: TimerOwnership | None = None) -> None:
        self.db = db
        self.settings = settings
        self.clock = clock
        # This process's last beat, while none of its beats has failed since (downtime.beat's ``ours``).
        self._own_beat: datetime | None = None
        self.events = events or Broadcaster()
        # Which tables' timers run here: all of them in one process; on PostgreSQL, those whose lock we hold.
        self.ownership: TimerOwnership = ownership or LocalOwnership()
        self.wallet: Wallet = (OperatorLedgerWallet(operator_wallet, DebitJournal(settings.data_dir / JOURNALS))
                               if operator_wallet is not None else LedgerWallet())
        # The operator's wallet moves money outside our transaction: a twin must never run its work twice.
        self.store = Store(db, clock, strict_twins=operator_wallet is not None)
        self.registry = TableRegistry(self.store, clock, settings.tables)
        self.registry.on_change = self._table_changed
        self.shoes = Shoes(rng or system_rng(), clock)
        self.live = LiveRounds()
        self.accounts = Accounts(self.store, settings, self.wallet, clock)
        self.rounds = Rounds(self.store, self.registry, self.shoes, self.wallet, self.accounts, self.live,
                             self.events, clock)
        self.rounds.deliver_outbox = lambda: self._deliver_outbox()  # late-bound: tests stop delivery here
        self.rounds.ownership = lambda: self.ownership
        self.slips = Slips(self.rounds)
        self.views = Views(self.store, self.live, self.registry, clock)
        # The façade's verbs: each belongs to one part.
        self.register, self.guest = self.accounts.register, self.accounts.guest
        self.authenticate = self.accounts.authenticate
        self.profile, self.update_settings = self.accounts.profile, self.accounts.update_settings
        self.bet_control, self.table_state = self.slips.bet_control, self.slips.table_state
        self.deal, self.act, self.close_betting = self.rounds.deal, self.rounds.act, self.rounds.close_betting
        self.round_view, self.history, self.replay = self.views.round, self.views.history, self.views.replay
        self.verify, self.hint, self.seated, self.report = (self.views.verify, self.views.hint, self.views.seated,
                                                            self.views.report)
        self.wallet_calls, self.list_rounds = self.views.wallet_calls, self.views.rounds

    def login(self, name: str, password: str, address: str = "unknown") -> tuple[Caller, str, list[dict[str, Any]]]:
        """Sign in (:meth:`Accounts.login`): a new connection, whose undealt bets are returned and told
        (:meth:`reconnect`)."""
        who, token, returned = self.accounts.login(name, password, address)
        self._tell_returned(who.id, returned)
        return who, token, returned

    def reconnect(self, caller: Caller) -> list[dict[str, Any]]:
        """A player is back on a new connection (a WebSocket, ``POST /me/reconnect``): their bets never dealt are
        returned, the sheet's disconnection policy (:meth:`Accounts.reconnect`), and each table they lay on is told,
        so that a page still open there shows them gone. Before, only the new connection heard of it, and a page
        open at the other table showed the bets until DEAL answered that there were none (found by a trial)."""
        returned = self.accounts.reconnect(caller)
        self._tell_returned(caller.id, returned)
        return returned

    def sign_out(self, caller: Caller, token: str, everywhere: bool = False) -> dict[str, Any]:
        """End a sign-in (:meth:`Accounts.sign_out`). The bets it returned are told to their tables, and every table
        is told which sign-ins ended (``signed-out``, private), so that each process closes their WebSockets."""
        ended, returned = self.accounts.sign_out(caller, token, everywhere)
        self._tell_returned(caller.id, returned, RETURNED_ON_SIGN_OUT)
        for table_id in self.registry.all():
            self.events.publish(table_id, {"type": "signed-out", "player_id": caller.id, "sessions": ended,
                                           "private": True})
        return {"signed_out": len(ended), "returned_bets": returned}

    def update_limits(self, caller: Caller, daily_loss_limit: int | None, session_minutes: int | None,
                      exclude_days: int | None, removed: Collection[str] = ()) -> dict[str, Any]:
        """Change the player's limits (:meth:`Accounts.update_limits`); the bets a self-exclusion returned are told
        to the tables they lay on, so that a page open there shows them gone."""
        body = self.accounts.update_limits(caller, daily_loss_limit, session_minutes, exclude_days, removed)
        self._tell_returned(caller.id, body.get("returned_bets", []), SELF_EXCLUDED)
        return body

    def _tell_returned(self, player_id: int, returned: list[dict[str, Any]],
                       reason: str = RETURNED_ON_RECONNECTION) -> None:
        for slip in returned:  # to the player alone: at a private table no one else saw these bets
            self.events.publish(slip["table_id"], {"type": "bets-returned", "player_id": player_id,
                                                   "total": slip["total"], "reason": reason, "private": True})
            if "round_id" in slip:  # a seat gone from a forming round: everyone at the table reads it again
                self.events.publish(slip["table_id"], {"type": "round", "round_id": slip["round_id"]})

    # Tests and certification reach these through the façade.
    @property
    def stacked(self) -> list[list[str]]:
        return self.shoes.stacked

    @property
    def fault(self) -> Callable[[str], None]:
        return self.rounds.fault

    @fault.setter
    def fault(self, hook: Callable[[str], None]) -> None:
        self.rounds.fault = hook

    def tables(self) -> dict[str, TableSpec]:
        return self.registry.all()

    def table(self, table_id: str) -> TableSpec:
        return self.registry.get(table_id)

    def idempotent(self, caller: Caller, key: str | None, request: str, status: int,
                   work: Callable[[], dict[str, Any]]) -> tuple[int, dict[str, Any]]:
        return self.store.idempotent(caller, key, request, status, work)

    # ----------------------------------------------------------- operator
    def create_table(self, caller: Caller, table_id: str, spec: dict[str, Any]) -> dict[str, Any]:
        body = self.registry.create(caller, table_id, spec)
        self._announce_tables()
        return body

    def remove_table(self, caller: Caller, table_id: str) -> dict[str, Any]:
        """Take an operator's table out of the configuration (:meth:`TableRegistry.remove`). Its pages are told, and
        read it again: closed to a player with a round there, gone to the others."""
        body, forming = self.registry.remove(caller, table_id)
        for round_id in forming:  # nothing staked yet: voided now, not at its window's end (nor dealt, were the
            self.rounds.void(round_id, TABLE_CLOSED, when=("betting",))  # table made again by then: review)
        self._announce_tables()  # each other process tells its own pages when it reads the tables again
        self.events.deliver(table_id, TABLE_GONE)
        return body

    def _announce_tables(self) -> None:
        """Tell other processes on this PostgreSQL (servers, or from ``twentyone admin``) to reload their tables.

        Without it another process would find the table on a request naming it
        (the registry reloads on a miss) but leave it out of ``GET /tables``.
        """
        if self.db.is_sqlite:
            return
        try:
            with self.store.write() as session:
                session.execute(select(func.pg_notify(TABLES_CHANNEL, "{}")))
        except Exception:  # the table exists; other processes find it on their next miss
            log.warning("could not announce the new table to other processes", exc_info=True)

    def reload_tables(self) -> None:
        """Read the table registry again (another process created or removed a table)."""
        self.registry._load()

    def _table_changed(self, table_id: str, gone: bool) -> None:
        """The pages this process has at a table that a read of the tables found gone (``table-closed``) or made again
        with another setting (``table-changed``) are told, and read it again: an operator's table, or one of the
        ``tables.toml`` another process's start published. Before, a table removed
        with ``twentyone admin remove-table`` (or in another process) left its pages showing bet controls that each
        answered a 404 (found by review)."""
        self.events.deliver(table_id, TABLE_GONE if gone else TABLE_CHANGED)

    def credit(self, caller: Caller, player_name: str, currency: str, amount: int) -> dict[str, Any]:
        """The operator adds ``amount`` (minor units) to a player's balance in the built-in ledger (a demo balance)."""
        return self._change_balance(caller, player_name, currency, amount, "credit")

    def debit(self, caller: Caller, player_name: str, currency: str, amount: int) -> dict[str, Any]:
        """The operator takes ``amount`` (minor units) from a player's balance in the built-in ledger: a correction
        (a credit made in error, a balance set back), up to the balance and never below zero. Before, the operator
        could only credit (noted by a trial). Money in play is not the balance's: a stake is taken at the deal."""
        return self._change_balance(caller, player_name, currency, amount, "debit")

    def _change_balance(self, caller: Caller, player_name: str, currency: str, amount: int,
                        kind: str) -> dict[str, Any]:
        if not caller.is_operator:
            raise ServiceError(403, "Only the operator can do this.")
        if amount <= 0:
            raise ServiceError(422, f"A {kind} is a positive amount in minor units.")
        if currency not in CURRENCIES:
            raise ServiceError(422, f"Players hold balances in {', '.join(CURRENCIES)} only, not {currency!r}.")
        with self.store.write() as session:
            player = player_named(session, player_name)
            if self.wallet.keeps_balances:
                # Every amount stays far inside 64 bits (core.money), a balance too: many large credits could pass it.
                self.wallet.lock(session, player.id, currency)
                before = self.wallet.balance(session, player.id, currency)
                if kind == "credit" and before + amount > MAX_AMOUNT:
                    raise ServiceError(409, f"This credit would take the balance past {MAX_AMOUNT} minor units, the "
                                            "most an operator may credit up to.")
                if kind == "debit" and amount > before:
                    raise ServiceError(409, f"The balance is {before} minor units: a debit takes at most that.")
            try:
                self.wallet.credit(session, player.id, currency, amount if kind == "credit" else -amount)
            except WalletError as error:
                raise ServiceError(409, error.detail) from None
            balance = self.wallet.balance(session, player.id, currency)
            return self.store.answer(session, {"player": player.name, "currency": currency, "balance": balance})

    def player(self, caller: Caller, player_name: str, balances: bool = True) -> dict[str, Any]:
        """The operator's look at a player, found by name as a credit finds them (:func:`player_named`): who they are,
        their balances, their limits (those in force, and ``pending`` the raises and removals still cooling off),
        whether they are signed in now (a sign-in neither ended nor expired), and their last :data:`PLAYER_ROUNDS`
        rounds as their own history shows them (:meth:`Views.history_entries`: the player's view, no card hidden from
        them).

        Balances come from where they live: the built-in ledger, read in the same snapshot; an operator's wallet,
        asked after the read (no transaction waits on the network, and a read made again does not ask twice): a
        currency it refuses is left out, and its silence is a 503, as at ``/me``. ``balances=False`` (the command
        line, which does not call an operator's wallet): ``balances`` is null.
        """
        if not caller.is_operator:
            raise ServiceError(403, "Only the operator can do this.")
        from_ledger = balances and self.wallet.keeps_balances

        def read(session: Session) -> dict[str, Any]:
            player = player_named(session, player_name)
            now = self.clock()
            signed_in = session.scalar(live_sign_in(player.id, now, self.settings.token_days)) is not None
            rounds, _ = self.views.history_entries(session, player.id, PLAYER_ROUNDS)
            limits = limits_in_force(player.limits, now)
            return {"id": player.id, "name": player.name, "guest": player.guest, "created_at": iso(player.created_at),
                    "balances": {currency: self.wallet.balance(session, player.id, currency)
                                 for currency in CURRENCIES} if from_ledger else None,
                    "limits": {"daily_loss_limit": limits.get("daily_loss_limit"),
                               "session_minutes": limits.get("session_minutes"),
                               "excluded_until": limits.get("excluded_until"), "pending": limits.get("pending", {})},
                    "signed_in": signed_in, "rounds": rounds}

        body = self.store.read_anew(read)
        if balances and not from_ledger:
            # Those the wallet holds: a currency it refuses is left out, its silence a 503, as at /me (held_balances).
            body["balances"] = held_balances(lambda currency: self.wallet.balances_ahead([body["id"]], currency)[0],
                                             CURRENCIES)
        return body

    # ------------------------------------------------------------- timers
    def beat(self) -> Downtime | None:
        """Show the floor served now; after a downtime (no beat for longer than ``Settings.down_after_seconds``),
        give every open round's decision clock and betting window the time back, and tell the tables, whose players
        then read their clocks anew. The server's timers beat before their first look and every
        :data:`~twentyone.server.downtime.BEAT_SECONDS` (``app._timers``).
        """
        now, after = self.clock(), self.settings.down_after_seconds
        try:
            with self.store.write_apart() as session:
                down = beat_in(session, now, None if after is None else timedelta(seconds=after), self._own_beat)
        except BaseException:
            self._own_beat = None  # the database away, say: the time until a beat succeeds may be the floor's down
            raise
        self._own_beat = now
        if down is None:
            return None
        gone = f"no server process served the floor for {down.length.total_seconds():.0f} s (since {iso(down.since)})"
        if not down.rounds:  # a stop and a start with nothing open: no player's time to give back
            log.info("%s: no round's clock was running", gone)
            return down
        count = len(down.rounds)
        clocks = "1 open round's clock" if count == 1 else f"{count} open rounds' clocks"
        rounds = ", ".join(f"{table_id} round {round_id}" for round_id, table_id in down.rounds[:10])
        log.warning("%s: %s given %.0f s back (%s%s)", gone, clocks, down.given_back.total_seconds(), rounds,
                    ", ..." if count > 10 else "")
        tables = self.tables()
        private = [round_id for round_id, table_id in down.rounds if table_id in tables and not tables[table_id].shared]
        with self.store.read() as session:  # a private round's news is its player's alone (round_news)
            players = dict(session.execute(select(RoundSeat.round_id, RoundSeat.player_id)
                                           .where(RoundSeat.round_id.in_(private))).all()) if private else {}
        for round_id, table_id in down.rounds:
            table = tables.get(table_id)
            news = {"type": "round", "round_id": round_id}
            self.events.publish(table_id, news if table is None else round_news(table, news, players.get(round_id)))
        return down

    def tick(self) -> dict[str, int]:
        """Run every timer that is due, one after the other: betting windows, decision timeouts (auto Stand), wallet
        retries (:meth:`timers_due`). The server runs them apart instead (``app._timers``: each table's and the
        wallet's at once, so that none waits on another); tests and the command line tick here.
        """
        return {"dealt": 0, "auto": 0, "delivered": 0} | self._in_turn([timer for _, timer in self.timers_due()])()

    def timers_due(self) -> list[tuple[str, Callable[[], dict[str, int]]]]:
        """The timers due now, one work per table (its closes of betting, then its decisions timed out) and one for
        the operator's wallet (its retries), each keyed by the lock that owns it (:func:`table_timers`,
        :data:`OUTBOX`) and returning what it did ({"dealt": n}, {"auto": n}, {"delivered": n}).

        Only the timers this process owns (:attr:`ownership`): with several processes on one PostgreSQL, each
        table's timers run in the one process holding its advisory lock, and the wallet retries in the one holding
        the outbox's. A timer acts only on the state it judged due (the round's version, the window's closing time),
        so even a late run, or one of a former owner, cannot act twice or early.

        Why apart: one tick ran them all in turn, and an operator's wallet slow to answer one player (a close's
        debit, a settlement's credit, a retry) held up every other table's timers for as long (a credit taking
        30 s stood a multiplayer round's timed-out hand 25 s late; found by a trial of an integrator).
        """
        now = self.clock()
        with self.store.read() as session:
            behind = self.registry.behind(session)
            betting = session.execute(select(Round.id, Round.table_id, Round.betting_closes_at)
                                      .where(Round.status == "betting")).all()
            playing = session.execute(select(Round.id, Round.table_id, Round.decision_since, Round.version,
                                             Round.variant, Round.currency, Round.betting_closes_at)
                                      .where(Round.status == "playing")).all()
        if behind:
            self.reload_tables()
        tables = self.tables()
        wanted = {table_timers(row.table_id) for row in (*betting, *playing)}
        if not self.wallet.keeps_balances:
            wanted.add(OUTBOX)
        owned = self.ownership.owned(wanted)
        due: dict[str, list[Callable[[], dict[str, int]]]] = {}
        for round_id, table_id, closes in betting:
            closes = aware(closes)
            if closes is None or closes > now or table_timers(table_id) not in owned:
                continue
            due.setdefault(table_timers(table_id), []).append(self._closing(round_id, table_id, tables, now))
        for row in playing:
            # A round dealt at a table since taken out of the configuration is played out as dealt, at its game's
            # pace (TableRegistry.of_round). Before, no timer reached it and its stakes stayed out for good (found
            # by a trial of an operator).
            table = tables.get(row.table_id) or self.registry.of_round(row)
            since = aware(row.decision_since)
            if (since is None or now - since < timedelta(seconds=table.decision_timeout)
                    or table_timers(row.table_id) not in owned):
                continue
            due.setdefault(table_timers(row.table_id), []).append(self._timing_out(row.id, row.version, since))
        timers = [(key, self._in_turn(works)) for key, works in due.items()]
        if OUTBOX in owned:
            timers.append((OUTBOX, self._retry_wallet_calls))
        elif self.wallet.owes():  # rollbacks owed here, or in a dead process's journal here: written, for the owner
            timers.append((OUTBOX, self._write_owed_calls))
        return timers

    def _retry_wallet_calls(self) -> dict[str, int]:
        return {"delivered": self._deliver_outbox(recover=True)}

    def _write_owed_calls(self) -> dict[str, int]:
        self.rounds.deliver(recover=True, send=False)
        return {"delivered": 0}

    def _closing(self, round_id: int, table_id: str, tables: dict[str, TableSpec],
                 now: datetime) -> Callable[[], dict[str, int]]:
        def close() -> dict[str, int]:
            with self._alone_failing(f"the close of betting of round {round_id}"):
                if table_id not in tables:  # the table was taken out of the configuration: nothing was staked yet
                    self.rounds.void(round_id, TABLE_CLOSED, when=("betting",))  # not one dealt elsewhere since
                elif self.rounds.close_betting(table_id, due=now) is not None:
                    return {"dealt": 1}
            return {"dealt": 0}
        return close

    def _timing_out(self, round_id: int, version: int, since: datetime) -> Callable[[], dict[str, int]]:
        def decide() -> dict[str, int]:
            with self._alone_failing(f"the timer's decision in round {round_id}"):
                return {"auto": self.rounds.auto_decide(round_id, version, since)}
            return {"auto": 0}
        return decide

    @staticmethod
    def _in_turn(works: list[Callable[[], dict[str, int]]]) -> Callable[[], dict[str, int]]:
        """One table's timers, in the order they were found: its close of betting before its rounds' decisions."""
        def run() -> dict[str, int]:
            done: dict[str, int] = {}
            for work in works:
                for kind, count in work().items():
                    done[kind] = done.get(kind, 0) + count
            return done
        return run

    @staticmethod
    @contextmanager
    def _alone_failing(what: str) -> Iterator[None]:
        """One round's timer that fails is logged and the tick goes on to the others and to the operator's wallet:
        before, one round that could not be read stopped every table's timers and every wallet delivery, tick after
        tick (found by review). Busy storage still ends the tick: every round would meet it."""
        try:
            yield
        except Busy:
            raise
        except Exception:
            log.exception("%s failed; tried again at the next tick", what)

    def _deliver_outbox(self, recover: bool = False) -> int:
        """After a request's commit, what it wrote to the outbox; at the tick (``recover``) the whole outbox."""
        return self.rounds.deliver(recover=True) if recover else self.rounds.deliver(fresh=True)


PLAYER_ROUNDS = 10  # the rounds the operator's look at a player shows, newest first


def player_named(session: Session, name: str) -> Player:
    """The player of that name, as the operator's commands find one (credit, debit, the look at a player): the name
    exactly as registered, its case included (no two names differ in case alone: registration refuses it), or 404.
    A guest is found by its name (``guest-…``) too."""
    player = session.scalars(select(Player).where(Player.name == name)).first()
    if player is None:
        raise ServiceError(404, f"There is no player {name!r}.")
    return player


__all__ = ["Caller", "GameService", "ServiceError", "commitment", "verify_record"]
