"""The game service: everything the API does, as transactions over the database.

A round is stored as its variant, its shoe (order and salt, server-side until
the shoe is finished), its seats' bets and its action log; the engine rebuilds
it by replay for every request, so a restart loses nothing and any round can
be shown again exactly. Money moves only through the wallet, in the same
transaction as the round change it belongs to.
"""

from __future__ import annotations

import hashlib
import logging
import re
import secrets
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from twentyone.core.betting import MAIN, BetSlip, BetSlipError
from twentyone.core.hand import hand_value
from twentyone.core.operations import Action, ActionTaken, BetsPlaced, CardDealt, DealerChecked, HoleCardRevealed
from twentyone.core.operations import Settled as SettledOp
from twentyone.core.round import HandBet, IllegalActionError, Phase
from twentyone.core.round import Round as Engine
from twentyone.core.shoe import RandomBits, Shoe, system_rng
from twentyone.server.config import Settings, TableConfigError, TableSpec, shipped_tables, table_from_mapping
from twentyone.server.db import Database
from twentyone.server.events import Broadcaster
from twentyone.server.models import IdempotentRequest, Player, Round, RoundSeat, Slip, TableConfig, Token
from twentyone.server.models import Shoe as ShoeRow
from twentyone.server.wallet import (
    OperatorWallet,
    RemoteWallet,
    WalletError,
    ledger_balance,
    lock_player,
    net_loss_since,
    transfer,
)
from twentyone.variants import builtin_rules

log = logging.getLogger("twentyone.server")
NAME = re.compile(r"^[A-Za-z0-9_.-]{3,32}$")
CURRENCIES = ("USD", "GBP", "EUR")
SETTINGS_DEFAULTS = {"cash_out_visible": True, "sound": True, "hints": False}
OFFER_DECLINE = {"insurance": Action.NO_INSURANCE, "even-money": Action.NO_EVEN_MONEY,
                 "surrender": Action.NO_SURRENDER}


class ServiceError(Exception):
    """A refused request: HTTP ``status``, a one-sentence ``detail`` and optional extra fields."""

    def __init__(self, status: int, detail: str, **extra: Any) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.extra = extra


@dataclass(frozen=True)
class Caller:
    id: int
    name: str
    role: str
    guest: bool = False


def utcnow() -> datetime:
    return datetime.now(UTC)


def aware(moment: datetime | None) -> datetime | None:
    """SQLite hands back naive datetimes; everything here is UTC."""
    if moment is None or moment.tzinfo is not None:
        return moment
    return moment.replace(tzinfo=UTC)


def commitment(salt: str, cards: list[str]) -> str:
    """SHA-256 of the salt and the shoe order, published before the deal.

    >>> commitment("00", ["AS", "KD"])[:16]  # hashlib.sha256(b"00:AS KD")
    '9392d9aca094c2ba'
    """
    return hashlib.sha256(f"{salt}:{' '.join(cards)}".encode()).hexdigest()


def _token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class GameService:
    def __init__(self, db: Database, settings: Settings, operator_wallet: OperatorWallet | None = None,
                 clock: Callable[[], datetime] = utcnow, rng: RandomBits | None = None,
                 events: Broadcaster | None = None) -> None:
        self.db = db
        self.settings = settings
        self.remote = RemoteWallet(operator_wallet) if operator_wallet is not None else None
        self.clock = clock
        self.rng = rng or system_rng()
        self.events = events or Broadcaster()
        self.hasher = PasswordHasher()
        self.fault: Callable[[str], None] = lambda stage: None  # tests inject malfunctions here
        self._request = threading.local()  # the idempotency key of the request this thread serves
        # Certification and tests stack the top of the next shoes; the rest is shuffled as usual.
        self.stacked: list[list[str]] = []

    # ------------------------------------------------------------- helpers
    @contextmanager
    def _tx(self) -> Iterator[Session]:
        """A write transaction. The first one of an idempotent request also records its key, so the
        key and the change it made commit together: a crash can never leave a change without its key."""
        with self.db.transaction() as session:
            yield session
            marker = getattr(self._request, "marker", None)
            if marker is not None:
                self._request.marker = None
                player_id, key, request = marker
                session.add(IdempotentRequest(player_id=player_id, key=key, request=request, status_code=0,
                                              response={}, created_at=self.clock()))

    def tables(self) -> dict[str, TableSpec]:
        tables = dict(shipped_tables())
        with self.db.sessions() as session:
            for row in session.scalars(select(TableConfig)).all():
                tables[row.id] = table_from_mapping(row.id, row.spec)
        return tables

    def table(self, table_id: str) -> TableSpec:
        tables = self.tables()
        if table_id not in tables:
            raise ServiceError(404, f"There is no table {table_id!r}.")
        return tables[table_id]

    def balance(self, session: Session, player_id: int, currency: str) -> int:
        if self.remote is not None:
            try:
                return self.remote.balance(player_id, currency)
            except WalletError as error:
                raise ServiceError(error.status, error.detail) from None
        return ledger_balance(session, player_id, currency)

    # ---------------------------------------------------------- accounts
    def register(self, name: str, password: str) -> tuple[Caller, str]:
        if not NAME.match(name):
            raise ServiceError(422, "A name is 3 to 32 letters, digits, dots, dashes or underscores.")
        if len(password) < 8:
            raise ServiceError(422, "A password needs at least 8 characters.")
        with self._tx() as session:
            if session.scalars(select(Player).where(Player.name == name)).first() is not None:
                raise ServiceError(409, f"The name {name!r} is taken.")
            player = Player(name=name, password_hash=self.hasher.hash(password), role="player", guest=False,
                            settings=dict(SETTINGS_DEFAULTS), limits={}, created_at=self.clock())
            session.add(player)
            session.flush()
            self._welcome(session, player)
            token = self._issue_token(session, player)
            return Caller(player.id, player.name, player.role), token

    def guest(self) -> tuple[Caller, str]:
        if not self.settings.demo:
            raise ServiceError(403, "Guest play is off on this server: register or sign in.")
        with self._tx() as session:
            player = Player(name=f"guest-{secrets.token_hex(4)}", password_hash=None, role="player", guest=True,
                            settings=dict(SETTINGS_DEFAULTS), limits={}, created_at=self.clock())
            session.add(player)
            session.flush()
            self._welcome(session, player)
            token = self._issue_token(session, player)
            return Caller(player.id, player.name, player.role, True), token

    def _welcome(self, session: Session, player: Player) -> None:
        if self.settings.demo and self.remote is None:
            for currency in CURRENCIES:
                transfer(session, player.id, currency, self.settings.demo_balance, "credit", None)

    def _issue_token(self, session: Session, player: Player) -> str:
        token = secrets.token_urlsafe(32)
        session.add(Token(token_hash=_token_hash(token), player_id=player.id, created_at=self.clock()))
        player.session_started_at = self.clock()
        return token

    def login(self, name: str, password: str) -> tuple[Caller, str, list[dict[str, Any]]]:
        with self._tx() as session:
            player = session.scalars(select(Player).where(Player.name == name)).first()
            try:
                if player is None or player.password_hash is None:
                    raise VerificationError()
                self.hasher.verify(player.password_hash, password)
            except (VerificationError, InvalidHashError):
                raise ServiceError(401, "The name or password is wrong.") from None
            self._check_exclusion(player)
            token = self._issue_token(session, player)
            returned = self._return_undealt_bets(session, player.id)
            return Caller(player.id, player.name, player.role, player.guest), token, returned

    def authenticate(self, token: str | None) -> Caller:
        if not token:
            raise ServiceError(401, "Sign in first: send the bearer token from /auth/login or /auth/guest.")
        if secrets.compare_digest(token, self.settings.operator_token):
            return Caller(0, "operator", "operator")
        with self.db.sessions() as session:
            row = session.get(Token, _token_hash(token))
            if row is None:
                raise ServiceError(401, "The token is not valid: sign in again.")
            player = session.get(Player, row.player_id)
            assert player is not None
            return Caller(player.id, player.name, player.role, player.guest)

    def reconnect(self, caller: Caller) -> list[dict[str, Any]]:
        """A player is back (a new connection): bets placed but never dealt are returned."""
        with self._tx() as session:
            return self._return_undealt_bets(session, caller.id)

    def _return_undealt_bets(self, session: Session, player_id: int) -> list[dict[str, Any]]:
        returned = []
        for slip in session.scalars(select(Slip).where(Slip.player_id == player_id)).all():
            if slip.bets:
                returned.append({"table_id": slip.table_id, "bets": slip.bets, "total": sum(slip.bets.values())})
                slip.bets, slip.history = {}, []
        return returned

    # ------------------------------------------------ settings and limits
    def profile(self, caller: Caller) -> dict[str, Any]:
        with self.db.sessions() as session:
            player = session.get(Player, caller.id)
            assert player is not None
            balances = {currency: self.balance(session, player.id, currency) for currency in CURRENCIES}
            return {"id": player.id, "name": player.name, "guest": player.guest, "role": player.role,
                    "settings": {**SETTINGS_DEFAULTS, **player.settings}, "limits": player.limits,
                    "balances": balances}

    def update_settings(self, caller: Caller, changes: dict[str, bool]) -> dict[str, Any]:
        with self._tx() as session:
            player = session.get(Player, caller.id)
            assert player is not None
            player.settings = {**SETTINGS_DEFAULTS, **player.settings, **changes}
            return dict(player.settings)

    def update_limits(self, caller: Caller, daily_loss_limit: int | None, session_minutes: int | None,
                      exclude_days: int | None) -> dict[str, Any]:
        with self._tx() as session:
            player = session.get(Player, caller.id)
            assert player is not None
            limits = dict(player.limits)
            if daily_loss_limit is not None:
                limits["daily_loss_limit"] = daily_loss_limit
            if session_minutes is not None:
                limits["session_minutes"] = session_minutes
            if exclude_days is not None:
                limits["excluded_until"] = (self.clock() + timedelta(days=exclude_days)).isoformat()
            player.limits = limits
            return limits

    def _check_exclusion(self, player: Player) -> None:
        until = player.limits.get("excluded_until")
        if until and datetime.fromisoformat(until) > self.clock():
            raise ServiceError(403, f"You have excluded yourself from play until {until[:16]} UTC.")

    def _check_limits(self, session: Session, player: Player, currency: str, stake: int) -> None:
        self._check_exclusion(player)
        minutes = player.limits.get("session_minutes")
        started = aware(player.session_started_at)
        if minutes and started and self.clock() - started > timedelta(minutes=minutes):
            raise ServiceError(403, f"Your session time limit of {minutes} minutes is reached.")
        limit = player.limits.get("daily_loss_limit")
        if limit is not None:
            day_start = self.clock().replace(hour=0, minute=0, second=0, microsecond=0)
            lost = net_loss_since(session, player.id, currency, day_start)
            if lost + stake > limit:
                raise ServiceError(403, f"This bet could take today's losses past your daily limit of {limit}.")

    # -------------------------------------------------------- idempotency
    def idempotent(self, caller: Caller, key: str | None, request: str,
                   work: Callable[[], tuple[int, dict[str, Any]]]) -> tuple[int, dict[str, Any]]:
        """Run ``work`` once per (caller, key): a retry gets the first answer back, and moves no money."""
        if key is None:
            raise ServiceError(400, "Send an Idempotency-Key header with every request that changes state.")
        if len(key) > 128:
            raise ServiceError(400, "An Idempotency-Key is at most 128 characters.")
        stored = self._stored(caller.id, key, request)
        if stored is not None:
            return stored
        self._request.marker = (caller.id, key, request)
        try:
            status, body = work()
        except IntegrityError:  # the same key committed first in a concurrent request
            stored = self._stored(caller.id, key, request)
            if stored is None:
                raise
            return stored
        finally:
            self._request.marker = None
        with self.db.transaction() as session:
            row = session.get(IdempotentRequest, (caller.id, key))
            if row is None:  # the request changed nothing (a refusal is not stored: a retry runs again)
                session.add(IdempotentRequest(player_id=caller.id, key=key, request=request, status_code=status,
                                              response=body, created_at=self.clock()))
            else:
                row.status_code, row.response = status, body
        return status, body

    def _stored(self, player_id: int, key: str, request: str) -> tuple[int, dict[str, Any]] | None:
        with self.db.sessions() as session:
            row = session.get(IdempotentRequest, (player_id, key))
            if row is None:
                return None
            if row.request != request:
                raise ServiceError(422, "This Idempotency-Key was already used for a different request.")
            if row.status_code == 0:
                raise ServiceError(409, "This request was already applied, but its answer was lost (the server "
                                        "stopped); read the current state instead of retrying.")
            return row.status_code, row.response

    # ------------------------------------------------------------- tables
    def create_table(self, caller: Caller, table_id: str, spec: dict[str, Any]) -> dict[str, Any]:
        self._operator(caller)
        if not NAME.match(table_id):
            raise ServiceError(422, "A table id is 3 to 32 letters, digits, dots, dashes or underscores.")
        try:
            table = table_from_mapping(table_id, spec)
        except TableConfigError as error:
            raise ServiceError(422, str(error)) from None
        if table_id in self.tables():
            raise ServiceError(409, f"A table {table_id!r} already exists.")
        with self._tx() as session:
            session.add(TableConfig(id=table_id, spec=dict(spec), created_at=self.clock()))
        return table.public()

    def credit(self, caller: Caller, player_name: str, currency: str, amount: int) -> dict[str, Any]:
        self._operator(caller)
        if amount <= 0:
            raise ServiceError(422, "A credit is a positive amount in minor units.")
        with self._tx() as session:
            player = session.scalars(select(Player).where(Player.name == player_name)).first()
            if player is None:
                raise ServiceError(404, f"There is no player {player_name!r}.")
            if self.remote is not None:
                raise ServiceError(409, "Balances live in the operator's wallet on this server.")
            transfer(session, player.id, currency, amount, "credit", None)
            return {"player": player.name, "currency": currency, "balance": ledger_balance(session, player.id,
                                                                                           currency)}

    def report(self, caller: Caller) -> dict[str, Any]:
        """Operator report: rounds and money by table (house result = staked - returned)."""
        self._operator(caller)
        with self.db.sessions() as session:
            rows: dict[str, dict[str, int]] = {}
            for round_row in session.scalars(select(Round)).all():
                entry = rows.setdefault(round_row.table_id, {"rounds": 0, "void": 0, "staked": 0, "returned": 0})
                entry["rounds"] += 1
                entry["void"] += round_row.status == "void"
                for seat in session.scalars(select(RoundSeat).where(RoundSeat.round_id == round_row.id)).all():
                    if round_row.status == "settled":
                        entry["staked"] += seat.staked
                        entry["returned"] += seat.returned
            for entry in rows.values():
                entry["house_result"] = entry["staked"] - entry["returned"]
            return {"tables": rows}

    @staticmethod
    def _operator(caller: Caller) -> None:
        if caller.role != "operator":
            raise ServiceError(403, "Only the operator can do this.")

    # ------------------------------------------------------------- slips
    def _slip(self, session: Session, player_id: int, table: TableSpec) -> Slip:
        slip = session.get(Slip, (player_id, table.id))
        if slip is None:
            slip = Slip(player_id=player_id, table_id=table.id, bets={}, history=[], chip=table.chips[0], previous={},
                        updated_at=self.clock())
            session.add(slip)
            session.flush()
        return slip

    def _bet_slip(self, slip: Slip, table: TableSpec, balance: int) -> BetSlip:
        rules = builtin_rules(table.variant)
        bet_slip = BetSlip(table.bet_limits, table.chips, balance, table.hands_per_player, tuple(rules.side_bets))
        bet_slip.bets = {_key(k): v for k, v in slip.bets.items()}
        bet_slip._history = [{_key(k): v for k, v in entry.items()} for entry in slip.history]
        bet_slip.chip = slip.chip
        return bet_slip

    def bet_control(self, caller: Caller, table_id: str, control: str, spot: int = 1, bet_type: str = MAIN,
                    chip: int | None = None) -> dict[str, Any]:
        """CHIP, place a chip (``bet``), UNDO, x2 (``double``), REBET, CLEAR: the sheet's bet controls."""
        table = self.table(table_id)
        with self._tx() as session:
            slip = self._slip(session, caller.id, table)
            bet_slip = self._bet_slip(slip, table, self.balance(session, caller.id, table.currency))
            try:
                if control == "chip":
                    if chip is None:
                        raise BetSlipError("Name the chip to select.")
                    bet_slip.select_chip(chip)
                elif control == "bet":
                    if chip is not None:
                        bet_slip.select_chip(chip)
                    bet_slip.place(spot, bet_type)
                elif control == "undo":
                    bet_slip.undo()
                elif control == "double":
                    bet_slip.double_all()
                elif control == "rebet":
                    bet_slip.rebet({_key(k): v for k, v in slip.previous.items()})
                elif control == "clear":
                    bet_slip.clear()
                else:
                    raise ServiceError(404, f"There is no bet control {control!r}.")
            except BetSlipError as error:
                raise ServiceError(409, str(error), maximum=_maximum(str(error))) from None
            slip.bets = {f"{s}|{t}": v for (s, t), v in bet_slip.bets.items()}
            slip.history = [{f"{s}|{t}": v for (s, t), v in entry.items()} for entry in bet_slip._history]
            slip.chip = bet_slip.chip
            slip.updated_at = self.clock()
            state = self._slip_view(slip, bet_slip)
        if control == "rebet" and table.same_bet_deals:
            return self.deal(caller, table_id)
        return {"slip": state}

    @staticmethod
    def _slip_view(slip: Slip, bet_slip: BetSlip) -> dict[str, Any]:
        return {"bets": [{"spot": s, "type": t, "amount": v} for (s, t), v in sorted(bet_slip.bets.items())],
                "total": bet_slip.total, "chip": bet_slip.chip, "enabled_chips": list(bet_slip.enabled_chips()),
                "can_rebet": bool(slip.previous)}

    def table_state(self, caller: Caller, table_id: str) -> dict[str, Any]:
        """What a player at the table sees: the table, their slip and balance, the next shoe's commitment."""
        table = self.table(table_id)
        with self._tx() as session:
            slip = self._slip(session, caller.id, table)
            balance = self.balance(session, caller.id, table.currency)
            shoe = self._prepared_shoe(session, table, caller.id)
            current = self._current_round(session, table, caller.id)
            state: dict[str, Any] = {
                "table": table.public(), "balance": balance,
                "slip": self._slip_view(slip, self._bet_slip(slip, table, balance)),
                "next_shoe": {"id": shoe.id, "commitment": shoe.commitment},
                "round": self._view(session, current, caller.id) if current is not None else None,
            }
            return state

    def _current_round(self, session: Session, table: TableSpec, player_id: int) -> Round | None:
        query = select(Round).where(Round.table_id == table.id, Round.status.in_(("betting", "playing")))
        for round_row in session.scalars(query.order_by(Round.id.desc())).all():
            if table.shared or self._seat(session, round_row.id, player_id) is not None:
                return round_row
        return None

    # ------------------------------------------------------------- shoes
    def _prepared_shoe(self, session: Session, table: TableSpec, player_id: int) -> ShoeRow:
        """The shoe the next round will use; its commitment is published before the deal."""
        owner = None if table.shared else player_id
        query = select(ShoeRow).where(ShoeRow.table_id == table.id, ShoeRow.finished.is_(False))
        query = query.where(ShoeRow.player_id.is_(None) if owner is None else ShoeRow.player_id == owner)
        shoe = session.scalars(query.order_by(ShoeRow.id.desc())).first()
        if shoe is not None and (shoe.cut_card is None or shoe.position < shoe.cut_card):
            return shoe
        if shoe is not None:
            shoe.finished = True
        rules = builtin_rules(table.variant)
        cards = [str(card) for card in Shoe.shuffled(rules.shoe.composition, self.rng).order]
        if self.stacked:
            top = self.stacked.pop(0)
            rest = list(cards)
            for card in top:
                rest.remove(card)
            cards = top + rest
        salt = secrets.token_hex(16)
        shoe = ShoeRow(table_id=table.id, player_id=owner, cards=" ".join(cards), salt=salt,
                       commitment=commitment(salt, cards), position=0, cut_card=rules.shoe.cut_card,
                       finished=False, created_at=self.clock())
        session.add(shoe)
        session.flush()
        return shoe

    # -------------------------------------------------------------- deal
    def deal(self, caller: Caller, table_id: str) -> dict[str, Any]:
        """DEAL: a private table deals at once; a shared one takes the bets into the round being formed."""
        table = self.table(table_id)
        if table.shared:
            return self._join_shared(caller, table)
        round_id = None
        try:
            with self._tx() as session:
                player = session.get(Player, caller.id)
                assert player is not None
                if self._current_round(session, table, caller.id) is not None:
                    raise ServiceError(409, "Finish the round in play before dealing another.")
                lock_player(session, caller.id, table.currency)
                slip, balance, bet_slip, hand_bets = self._ready_bets(session, player, table)
                if bet_slip.total > balance:
                    raise ServiceError(409, f"The balance of {balance} does not cover bets of {bet_slip.total}.")
                shoe = self._prepared_shoe(session, table, caller.id)
                round_row = Round(table_id=table.id, variant=table.variant, status="playing", shoe_id=shoe.id,
                                  shoe_start=shoe.position, actions=[], version=0, created_at=self.clock(),
                                  decision_since=self.clock())
                session.add(round_row)
                session.flush()
                round_id = round_row.id
                seat = RoundSeat(round_id=round_row.id, player_id=caller.id, position=1,
                                 bets=[_hand_bet_json(b) for b in hand_bets], confirmed=True, staked=0, returned=0,
                                 balance_before=balance)
                session.add(seat)
                self._debit(session, caller.id, table.currency, bet_slip.total, round_row, seat)
                slip.previous, slip.bets, slip.history = dict(slip.bets), {}, []
                self.fault("deal")
                engine = self._engine(session, round_row)
                self._after_change(session, round_row, engine, table)
                view = self._view(session, round_row, caller.id, engine)
        except ServiceError:
            raise
        except WalletError as error:
            raise ServiceError(error.status, error.detail) from None
        except Exception as error:  # a malfunction voids the round and refunds it
            if round_id is None:
                raise
            log.exception("round %s malfunctioned during the deal", round_id)
            return self._void_and_view(round_id, caller.id, f"malfunction during the deal: {error}")
        self._deliver_outbox()
        self.events.publish(table.id, {"type": "round", "round_id": view["id"], "status": view["status"]})
        return view

    def _ready_bets(self, session: Session, player: Player, table: TableSpec
                    ) -> tuple[Slip, int, BetSlip, list[HandBet]]:
        """The player's slip as bets ready for a deal: limits, minimums and responsible-gaming checks done."""
        slip = self._slip(session, player.id, table)
        balance = self.balance(session, player.id, table.currency)
        bet_slip = self._bet_slip(slip, table, balance)
        try:
            hand_bets = bet_slip.hand_bets()
        except BetSlipError as error:
            raise ServiceError(409, str(error)) from None
        self._check_limits(session, player, table.currency, bet_slip.total)
        return slip, balance, bet_slip, hand_bets

    def _debit(self, session: Session, player_id: int, currency: str, amount: int, round_row: Round,
               seat: RoundSeat) -> None:
        if amount <= 0:
            return
        if self.remote is not None:
            self.remote.debit_now(player_id, currency, amount, f"{round_row.id}-{seat.player_id}-{seat.staked}")
        transfer(session, player_id, currency, -amount, "stake", round_row.id)
        seat.staked += amount

    def _join_shared(self, caller: Caller, table: TableSpec) -> dict[str, Any]:
        with self._tx() as session:
            player = session.get(Player, caller.id)
            assert player is not None
            round_row = session.scalars(select(Round).where(Round.table_id == table.id, Round.status == "betting")
                                        .with_for_update()).first()
            if round_row is None:
                if session.scalars(select(Round).where(Round.table_id == table.id,
                                                       Round.status == "playing")).first() is not None:
                    raise ServiceError(409, "A round is in play at this table: bet on the next one when it ends.")
                shoe = self._prepared_shoe(session, table, caller.id)
                round_row = Round(table_id=table.id, variant=table.variant, status="betting", shoe_id=shoe.id,
                                  shoe_start=shoe.position, actions=[], version=0, created_at=self.clock(),
                                  betting_closes_at=self.clock() + timedelta(seconds=table.betting_window))
                session.add(round_row)
                session.flush()
            if self._seat(session, round_row.id, caller.id) is not None:
                raise ServiceError(409, "Your bets are already in this round.")
            seats = session.scalars(select(RoundSeat).where(RoundSeat.round_id == round_row.id)).all()
            if table.seats and len(seats) >= table.seats:
                raise ServiceError(409, f"The table is full: {table.seats} players at most.")
            slip, _, _, hand_bets = self._ready_bets(session, player, table)
            session.add(RoundSeat(round_id=round_row.id, player_id=caller.id, position=len(seats) + 1,
                                  bets=[_hand_bet_json(b) for b in hand_bets], confirmed=True, staked=0, returned=0))
            slip.previous, slip.bets, slip.history = dict(slip.bets), {}, []
            round_id = round_row.id
        if table.betting_window <= 0:
            self.close_betting(table.id)
        self.events.publish(table.id, {"type": "bets", "round_id": round_id})
        with self.db.sessions() as session:
            round_row = session.get(Round, round_id)
            assert round_row is not None
            return self._view(session, round_row, caller.id)

    def close_betting(self, table_id: str) -> int | None:
        """The betting window closed: debit every seat, deal, and return undealt bets at the table."""
        table = self.table(table_id)
        round_id = None
        try:
            with self._tx() as session:
                round_row = session.scalars(select(Round).where(Round.table_id == table.id, Round.status == "betting")
                                            .with_for_update()).first()
                if round_row is None:
                    return None
                round_id = round_row.id
                seats = session.scalars(select(RoundSeat).where(RoundSeat.round_id == round_row.id)
                                        .order_by(RoundSeat.position)).all()
                for seat in seats:
                    lock_player(session, seat.player_id, table.currency)
                    total = sum(b["bet"] + sum(b["side_bets"].values()) for b in seat.bets)
                    balance = self.balance(session, seat.player_id, table.currency)
                    if total > balance:  # spent elsewhere since: the seat sits this round out
                        session.delete(seat)
                        continue
                    seat.balance_before = balance
                    self._debit(session, seat.player_id, table.currency, total, round_row, seat)
                session.flush()
                for slip in session.scalars(select(Slip).where(Slip.table_id == table.id)).all():
                    slip.bets, slip.history = {}, []  # bets placed but not confirmed are returned
                remaining = session.scalars(select(RoundSeat).where(RoundSeat.round_id == round_row.id)).all()
                if not remaining:
                    round_row.status = "void"
                    round_row.void_reason = "no seat could cover its bets"
                    return round_id
                round_row.status = "playing"
                round_row.decision_since = self.clock()
                self.fault("deal")
                engine = self._engine(session, round_row)
                self._after_change(session, round_row, engine, table)
        except Exception as error:
            if round_id is None or isinstance(error, ServiceError):
                raise
            log.exception("round %s malfunctioned during the deal", round_id)
            self._void(round_id, f"malfunction during the deal: {error}")
        self.events.publish(table.id, {"type": "round", "round_id": round_id})
        return round_id

    # ------------------------------------------------------------- play
    def act(self, caller: Caller, round_id: int, action: str, source: str = "player") -> dict[str, Any]:
        """Take a decision; an illegal or out-of-turn one is answered 409 with the legal actions."""
        try:
            with self._tx() as session:
                round_row = session.scalars(select(Round).where(Round.id == round_id).with_for_update()).first()
                if round_row is None:
                    raise ServiceError(404, f"There is no round {round_id}.")
                table = self.table(round_row.table_id)
                if caller.role != "operator" and self._seat(session, round_id, caller.id) is None:
                    raise ServiceError(404, f"There is no round {round_id} of yours.")
                if round_row.status != "playing":
                    raise ServiceError(409, f"Round {round_id} is {round_row.status}: no decision is pending.",
                                       legal_actions=[])
                engine = self._engine(session, round_row)
                decision = engine.decision()
                legal = [str(a) for a in engine.legal_actions()]
                if decision is None:  # pragma: no cover - a playing round always waits for someone
                    raise ServiceError(409, "No decision is pending.", legal_actions=[])
                if caller.role != "operator" and decision.player != str(caller.id):
                    raise ServiceError(409, "It is not your turn.", legal_actions=[])
                try:
                    engine.verify(action)
                except IllegalActionError as error:
                    raise ServiceError(409, str(error), legal_actions=legal) from None
                cost = engine.cost_of(action)
                seat = self._seat(session, round_id, int(decision.player))
                assert seat is not None
                if cost:
                    lock_player(session, seat.player_id, table.currency)
                    balance = self.balance(session, seat.player_id, table.currency)
                    if cost > balance:
                        raise ServiceError(409, f"{action} needs {cost} more and the balance is {balance}.",
                                           legal_actions=legal)
                    self._debit(session, seat.player_id, table.currency, cost, round_row, seat)
                self.fault("act")
                engine.act(action)
                round_row.actions = [*round_row.actions, {"player": int(decision.player), "action": str(action),
                                                          "source": source}]
                round_row.decision_since = self.clock()
                round_row.version += 1
                self._after_change(session, round_row, engine, table)
                view = self._view(session, round_row, caller.id, engine)
        except ServiceError:
            raise
        except WalletError as error:
            raise ServiceError(error.status, error.detail) from None
        except Exception as error:
            log.exception("round %s malfunctioned", round_id)
            return self._void_and_view(round_id, caller.id, f"malfunction: {error}")
        self._deliver_outbox()
        self.events.publish(table.id, {"type": "round", "round_id": round_id, "status": view["status"]})
        return view

    def _after_change(self, session: Session, round_row: Round, engine: Engine, table: TableSpec) -> None:
        if engine.phase is Phase.SETTLED:
            self._settle(session, round_row, engine, table)

    def _settle(self, session: Session, round_row: Round, engine: Engine, table: TableSpec) -> None:
        """Pay every seat and close the round, in the same transaction as the last decision."""
        returned: dict[str, int] = {}
        for op in engine.settlements:
            returned[op.player] = returned.get(op.player, 0) + op.returned
        for seat in session.scalars(select(RoundSeat).where(RoundSeat.round_id == round_row.id)).all():
            amount = returned.get(str(seat.player_id), 0)
            seat.returned = amount
            if amount:
                transfer(session, seat.player_id, table.currency, amount, "win", round_row.id)
                if self.remote is not None:
                    RemoteWallet.queue(session, seat.player_id, table.currency, "credit", amount,
                                       f"credit-{round_row.id}-{seat.player_id}", round_row.id)
            session.flush()
            seat.balance_after = self.balance(session, seat.player_id, table.currency) if self.remote is None else None
        round_row.status = "settled"
        round_row.settled_at = self.clock()
        round_row.decision_since = None
        shoe = session.get(ShoeRow, round_row.shoe_id)
        assert shoe is not None
        shoe.position = round_row.shoe_start + engine.shoe.position
        if shoe.cut_card is None or shoe.position >= shoe.cut_card:
            shoe.finished = True

    def _void_and_view(self, round_id: int, player_id: int, reason: str) -> dict[str, Any]:
        self._void(round_id, reason)
        with self.db.sessions() as session:
            round_row = session.get(Round, round_id)
            if round_row is None:  # the deal's own transaction never committed: nothing to void
                raise ServiceError(500, "The round could not be dealt and nothing was staked.")
            return self._view(session, round_row, player_id)

    def _void(self, round_id: int, reason: str) -> None:
        """Malfunction voids the round: every stake of it is refunded, in one transaction."""
        with self._tx() as session:
            round_row = session.scalars(select(Round).where(Round.id == round_id).with_for_update()).first()
            if round_row is None or round_row.status in ("settled", "void"):
                return
            table = self.table(round_row.table_id)
            for seat in session.scalars(select(RoundSeat).where(RoundSeat.round_id == round_id)).all():
                if seat.staked:
                    transfer(session, seat.player_id, table.currency, seat.staked, "void", round_id)
                    if self.remote is not None:
                        RemoteWallet.queue(session, seat.player_id, table.currency, "credit", seat.staked,
                                           f"void-{round_id}-{seat.player_id}", round_id)
                seat.returned = seat.staked
                session.flush()
                seat.balance_after = self.balance(session, seat.player_id, table.currency) if self.remote is None \
                    else None
            round_row.status = "void"
            round_row.void_reason = reason
            round_row.settled_at = self.clock()
            shoe = session.get(ShoeRow, round_row.shoe_id)
            if shoe is not None:
                shoe.finished = True
            table_id = table.id
        self.events.publish(table_id, {"type": "void", "round_id": round_id, "reason": reason})

    # ------------------------------------------------------------ timers
    def tick(self) -> dict[str, int]:
        """Run every timer that is due: betting windows, decision timeouts (auto Stand), wallet retries."""
        now = self.clock()
        done = {"dealt": 0, "auto": 0, "delivered": 0}
        tables = self.tables()
        with self.db.sessions() as session:
            betting = session.scalars(select(Round).where(Round.status == "betting")).all()
            playing = session.scalars(select(Round).where(Round.status == "playing")).all()
        for round_row in betting:
            closes = aware(round_row.betting_closes_at)
            if closes is not None and closes <= now:
                self.close_betting(round_row.table_id)
                done["dealt"] += 1
        for round_row in playing:
            table = tables.get(round_row.table_id)
            since = aware(round_row.decision_since)
            if table is None or since is None or now - since < timedelta(seconds=table.decision_timeout):
                continue
            done["auto"] += self._auto_decide(round_row.id)
        done["delivered"] = self._deliver_outbox()
        return done

    def _auto_decide(self, round_id: int) -> int:
        """Stand for the waiting hand (decline an offer) after the timeout: the sheets' auto decision."""
        with self.db.sessions() as session:
            round_row = session.get(Round, round_id)
            if round_row is None or round_row.status != "playing":
                return 0
            engine = self._engine(session, round_row)
        decision = engine.decision()
        if decision is None:
            return 0
        action = Action.STAND if decision.kind == "play" else OFFER_DECLINE[decision.kind]
        operator = Caller(0, "timer", "operator")
        try:
            self.act(operator, round_id, str(action), source="timeout")
        except ServiceError:
            return 0
        return 1

    def _deliver_outbox(self) -> int:
        """Send the operator wallet what the outbox holds; a failure waits for the next tick."""
        if self.remote is None:
            return 0
        try:
            with self._tx() as session:
                return self.remote.deliver(session)
        except Exception:
            log.exception("operator wallet delivery failed; retried at the next tick")
            return 0

    # ---------------------------------------------------------- reading
    def round_view(self, caller: Caller, round_id: int) -> dict[str, Any]:
        with self.db.sessions() as session:
            round_row = session.get(Round, round_id)
            if round_row is None or (caller.role != "operator" and self._seat(session, round_id, caller.id) is None):
                raise ServiceError(404, f"There is no round {round_id} of yours.")
            return self._view(session, round_row, caller.id)

    def hint(self, caller: Caller, round_id: int) -> dict[str, Any]:
        """The EV of each legal action for the caller's pending decision, best first (exact maths)."""
        from twentyone.analysis.hints import hint

        with self.db.sessions() as session:
            round_row = session.get(Round, round_id)
            if round_row is None or self._seat(session, round_id, caller.id) is None:
                raise ServiceError(404, f"There is no round {round_id} of yours.")
            if round_row.status != "playing":
                raise ServiceError(409, "No decision is pending in this round.")
            engine = self._engine(session, round_row)
        decision = engine.decision()
        if decision is None or decision.player != str(caller.id):
            raise ServiceError(409, "It is not your turn.")
        hand = next(h for h in engine.hands if (h.seat, h.hand) == (decision.seat, decision.hand))
        legal = [str(action) for action in engine.legal_actions()]
        first = len(hand.cards) == 2 and not hand.from_split
        ranked = hint(engine.rules, hand.cards, engine.dealer_up, legal, first_decision=first)
        return {"round_id": round_id, "seat": decision.seat, "hand": decision.hand,
                "actions": [{"action": action, "ev": value} for action, value in ranked]}

    def seated(self) -> dict[str, int]:
        """Players in each table's open round (shared tables) or playing a round now (private ones)."""
        with self.db.sessions() as session:
            rows = session.execute(select(Round.table_id, RoundSeat.player_id).join(
                RoundSeat, RoundSeat.round_id == Round.id).where(Round.status.in_(("betting", "playing")))).all()
        counts: dict[str, set[int]] = {}
        for table_id, player_id in rows:
            counts.setdefault(table_id, set()).add(player_id)
        return {table_id: len(players) for table_id, players in counts.items()}

    def history(self, caller: Caller, page: int, size: int) -> dict[str, Any]:
        if page < 1 or not 1 <= size <= 100:
            raise ServiceError(422, "page starts at 1 and size is 1 to 100.")
        with self.db.sessions() as session:
            query = (select(Round).join(RoundSeat, RoundSeat.round_id == Round.id)
                     .where(RoundSeat.player_id == caller.id, Round.status.in_(("settled", "void", "playing")))
                     .order_by(Round.id.desc()))
            rows = session.scalars(query.offset((page - 1) * size).limit(size + 1)).all()
            items = [self._history_entry(session, row, caller.id) for row in rows[:size]]
            return {"page": page, "size": size, "has_more": len(rows) > size, "rounds": items}

    def _history_entry(self, session: Session, round_row: Round, player_id: int) -> dict[str, Any]:
        view = self._view(session, round_row, player_id)
        seat = self._seat(session, round_row.id, player_id)
        assert seat is not None
        mine = [hand for hand in view["hands"] if hand["player_id"] == player_id]
        return {"id": round_row.id, "table_id": round_row.table_id, "variant": round_row.variant,
                "status": round_row.status, "created_at": _iso(round_row.created_at),
                "settled_at": _iso(round_row.settled_at), "bets": seat.bets, "dealer": view["dealer"],
                "hands": mine, "decisions": [a["action"] for a in round_row.actions if a["player"] == player_id],
                "side_bets": [s for s in view["side_bets"] if s["player_id"] == player_id],
                "insurance": [s for s in view["insurance"] if s["player_id"] == player_id],
                "staked": seat.staked, "returned": seat.returned, "balance_before": seat.balance_before,
                "balance_after": seat.balance_after, "void_reason": round_row.void_reason}

    def replay(self, caller: Caller, round_id: int) -> dict[str, Any]:
        """The full operation log of a round: every card, decision and settlement in order."""
        with self.db.sessions() as session:
            round_row = session.get(Round, round_id)
            if round_row is None or (caller.role != "operator" and self._seat(session, round_id, caller.id) is None):
                raise ServiceError(404, f"There is no round {round_id} of yours.")
            if round_row.status == "betting":
                raise ServiceError(409, "The round has not been dealt yet.")
            engine = self._engine(session, round_row)
            names = self._names(session, round_row.id)
            return {"id": round_id, "variant": round_row.variant, "status": round_row.status,
                    "operations": [_operation_json(op, names) for op in engine.operations],
                    "actions": round_row.actions}

    def verify(self, round_id: int) -> dict[str, Any]:
        """The shuffle's proof: the committed hash, and once the shoe is finished its order and salt."""
        with self.db.sessions() as session:
            round_row = session.get(Round, round_id)
            if round_row is None:
                raise ServiceError(404, f"There is no round {round_id}.")
            shoe = session.get(ShoeRow, round_row.shoe_id)
            assert shoe is not None
            if not shoe.finished:
                raise ServiceError(409, "The shoe is still in play: its order and salt are revealed when it is "
                                        "finished.")
            cards = shoe.cards.split()
            engine = self._engine(session, round_row) if round_row.status != "betting" else None
            drawn = [str(card) for card in engine.shoe.order[:engine.shoe.position]] if engine else []
            record = {"round_id": round_id, "shoe_id": shoe.id, "commitment": shoe.commitment, "salt": shoe.salt,
                      "cards": cards, "first_card": round_row.shoe_start, "drawn": drawn}
            return {**record, "valid": verify_record(record)}

    # ------------------------------------------------------------ engine
    def _engine(self, session: Session, round_row: Round) -> Engine:
        """Rebuild the round by replaying its record: bets, the shoe from its first card, the actions."""
        shoe = session.get(ShoeRow, round_row.shoe_id)
        assert shoe is not None
        rules = builtin_rules(round_row.variant)
        engine = Engine(rules, Shoe.stacked(shoe.cards.split()[round_row.shoe_start:]))
        seats = session.scalars(select(RoundSeat).where(RoundSeat.round_id == round_row.id)
                                .order_by(RoundSeat.position)).all()
        for seat in seats:
            engine.place_bets(str(seat.player_id), [HandBet(b["bet"], dict(b["side_bets"])) for b in seat.bets])
        if round_row.status == "betting":
            return engine
        engine.deal()
        for entry in round_row.actions:
            engine.act(entry["action"])
        return engine

    @staticmethod
    def _seat(session: Session, round_id: int, player_id: int) -> RoundSeat | None:
        return session.scalars(select(RoundSeat).where(RoundSeat.round_id == round_id,
                                                       RoundSeat.player_id == player_id)).first()

    @staticmethod
    def _names(session: Session, round_id: int) -> dict[str, str]:
        rows = session.execute(select(RoundSeat.player_id, Player.name).join(Player, Player.id == RoundSeat.player_id)
                               .where(RoundSeat.round_id == round_id)).all()
        return {str(player_id): name for player_id, name in rows}

    def _view(self, session: Session, round_row: Round, player_id: int, engine: Engine | None = None
              ) -> dict[str, Any]:
        """A round as one player may see it: cards as they are revealed, their own legal actions.

        ``engine`` is the round already rebuilt by the caller, so it is not replayed twice.
        """
        table = self.table(round_row.table_id)
        names = self._names(session, round_row.id)
        shoe = session.get(ShoeRow, round_row.shoe_id)
        assert shoe is not None
        view: dict[str, Any] = {
            "id": round_row.id, "table_id": round_row.table_id, "variant": round_row.variant,
            "status": round_row.status, "commitment": shoe.commitment, "currency": table.currency,
            "void_reason": round_row.void_reason, "betting_closes_at": _iso(round_row.betting_closes_at),
            "players": [{"player_id": int(pid), "name": name} for pid, name in names.items()],
            "dealer": {"cards": [], "total": 0, "hidden": 0}, "hands": [], "side_bets": [], "insurance": [],
            "decision": None, "legal_actions": [], "offers": {},
        }
        seat = self._seat(session, round_row.id, player_id)
        if seat is not None:
            view["me"] = {"staked": seat.staked, "returned": seat.returned, "balance_before": seat.balance_before,
                          "balance_after": seat.balance_after, "bets": seat.bets}
        if round_row.status == "betting":
            return view
        engine = engine or self._engine(session, round_row)
        dealer = engine.dealer_cards
        hidden = 1 if engine.rules.deal.hole_card and round_row.status == "playing" and len(dealer) == 1 else 0
        view["dealer"] = {"cards": [str(c) for c in dealer], "total": hand_value(dealer).total,
                          "soft": hand_value(dealer).soft, "hidden": hidden,
                          "blackjack": engine.dealer_blackjack}
        view["hands"] = [
            {"player_id": int(h.player), "name": names.get(h.player, h.player), "seat": h.seat, "hand": h.hand,
             "cards": [str(c) for c in h.cards], "total": h.value.total, "soft": h.value.soft, "stake": h.stake,
             "status": h.status, "from_split": h.from_split, "outcome": h.outcome, "returned": h.returned}
            for h in engine.hands
        ]
        for op in engine.settlements:
            entry = {"player_id": int(op.player), "seat": op.seat, "stake": op.stake, "result": op.result,
                     "returned": op.returned}
            if op.item == "insurance":
                view["insurance"].append(entry)
            elif op.item != "hand":
                view["side_bets"].append({**entry, "name": op.item})
        decision = engine.decision()
        if decision is not None and round_row.status == "playing":
            since = aware(round_row.decision_since)
            deadline = since + timedelta(seconds=table.decision_timeout) if since else None
            view["decision"] = {"player_id": int(decision.player), "name": names.get(decision.player),
                                "seat": decision.seat, "hand": decision.hand, "kind": decision.kind,
                                "deadline": _iso(deadline)}
            if decision.player == str(player_id):
                view["legal_actions"] = [str(a) for a in engine.legal_actions()]
                if Action.CASH_OUT in engine.legal_actions():
                    view["offers"]["cash_out"] = engine.offer_amount(Action.CASH_OUT)
                if decision.kind == "insurance":
                    view["offers"]["insurance"] = engine.cost_of(Action.INSURANCE)
        if shoe.finished:
            view["revealed"] = {"salt": shoe.salt, "cards": shoe.cards.split(), "first_card": round_row.shoe_start}
        return view


def _key(text: str) -> tuple[int, str]:
    spot, bet_type = text.split("|", 1)
    return int(spot), bet_type


def _maximum(message: str) -> bool:
    return "maximum" in message


def _hand_bet_json(hand_bet: HandBet) -> dict[str, Any]:
    return {"bet": hand_bet.bet, "side_bets": dict(hand_bet.side_bets)}


def _iso(moment: datetime | None) -> str | None:
    moment = aware(moment)
    return moment.isoformat() if moment else None


def verify_record(record: dict[str, Any]) -> bool:
    """Check a revealed shoe: its hash is the one published before the deal, and the round's cards
    are the shoe's cards from ``first_card`` on, in order.

    >>> cards = ["AS", "KD", "7C"]
    >>> verify_record({"salt": "00", "cards": cards, "commitment": commitment("00", cards),
    ...                "first_card": 1, "drawn": ["KD", "7C"]})
    True
    """
    cards = list(record["cards"])
    first = int(record["first_card"])
    drawn = list(record["drawn"])
    return commitment(str(record["salt"]), cards) == record["commitment"] and cards[first:first + len(drawn)] == drawn


def _operation_json(op: Any, names: dict[str, str]) -> dict[str, Any]:
    if isinstance(op, BetsPlaced):
        return {"type": "bets", "player": names.get(op.player, op.player), "seat": op.seat, "bet": op.bet,
                "side_bets": dict(op.side_bets)}
    if isinstance(op, CardDealt):
        to = "dealer" if op.seat == 0 else ("every hand" if op.seat < 0 else f"seat {op.seat} hand {op.hand}")
        return {"type": "card", "card": str(op.card), "to": to, "face_up": op.face_up}
    if isinstance(op, ActionTaken):
        return {"type": "action", "action": str(op.action), "player": names.get(op.player, op.player),
                "seat": op.seat, "hand": op.hand, "amount": op.amount}
    if isinstance(op, DealerChecked):
        return {"type": "peek", "blackjack": op.blackjack}
    if isinstance(op, HoleCardRevealed):
        return {"type": "hole", "card": str(op.card)}
    if isinstance(op, SettledOp):
        return {"type": "settled", "item": op.item, "player": names.get(op.player, op.player), "seat": op.seat,
                "hand": op.hand, "stake": op.stake, "result": op.result, "returned": op.returned}
    return {"type": type(op).__name__}


__all__ = ["Caller", "GameService", "ServiceError", "commitment", "verify_record"]
