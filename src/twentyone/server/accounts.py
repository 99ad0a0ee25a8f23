"""Players: sign-up, sign-in and tokens, settings, and the responsible-gaming limits checked before a stake."""

from __future__ import annotations

import hashlib
import re
import secrets
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Sequence
from datetime import datetime, timedelta
from functools import cached_property
from typing import Any, cast

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import Select, bindparam, delete, func, select, update
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from twentyone.core.betting import MAIN, BetSlipError
from twentyone.server.cluster import lock_in_transaction
from twentyone.server.config import CURRENCIES, Settings
from twentyone.server.context import (
    SESSION_BREAK,
    SESSION_BREAK_MINUTES,
    Caller,
    ServiceError,
    aware,
    in_session_break,
    iso,
    session_break_end,
    session_over_message,
)
from twentyone.server.models import GuestArrival, KnownAddress, Player, Round, RoundSeat, SignInFailure, Slip, Token
from twentyone.server.money import refusal
from twentyone.server.store import Store
from twentyone.server.tables import bet_list
from twentyone.server.wallet import Wallet, WalletError, held_balances, net_losses_since

NAME = re.compile(r"^[A-Za-z0-9_.-]{3,32}$")
GUEST_PREFIX = "guest-"  # guests' names; no registered name begins with it
# Names no player registers, in any case: seated at a shared table, "house" or "Dealer" would pass for the game's
# own (an attacker's trial registered "operator" and "house").
RESERVED_NAMES = frozenset({"house", "dealer", "operator", "admin", "administrator", "casino", "croupier",
                            "system", "support", "twentyone"})
SETTINGS_DEFAULTS = {"cash_out_visible": True, "sound": True, "hints": False}
TOKEN_CACHE = 10_000  # signed-in callers kept in memory, so a request needs no query to know who it is
# How long a caller stays known from memory: a self-exclusion set through another process is known here within this,
# at the cost of one read per signed-in caller per period.
TOKEN_TTL = timedelta(seconds=60)
SELF_EXCLUDED = "You excluded yourself from play."
SESSION_ID_LENGTH = 16  # hex digits of a token's hash that name its sign-in in events (never the token itself)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def session_id(token: str) -> str:
    """The name of a sign-in in events: the start of its token's hash, so a client learns nothing of any token.

    >>> session_id("abc")
    'ba7816bf8f01cfea'
    """
    return token_hash(token)[:SESSION_ID_LENGTH]


GUEST_WINDOW = timedelta(minutes=1)  # the window of the limit on new guests per address
_EXPIRED_ARRIVALS = (select(GuestArrival.id).where(GuestArrival.arrived_at < bindparam("cutoff"))
                     .limit(100).with_for_update(skip_locked=True))
_ARRIVALS_FROM = (select(func.count()).select_from(GuestArrival)
                  .where(GuestArrival.address == bindparam("address"), GuestArrival.arrived_at >= bindparam("cutoff")))


def admit_guest(session: Session, address: str, per_minute: int, now: datetime) -> None:
    """Count a new guest from ``address`` against the limit, in the transaction that creates it.

    The count is a table every server process writes to, so ``serve --workers N`` (or N servers
    behind a load balancer) admits ``per_minute`` guests a minute from an address, not N times
    that. On PostgreSQL an advisory lock on the address lets one of its arrivals count at a time
    (SQLite runs one write transaction at a time anyway). Expired rows are deleted on the way, a
    hundred at most and none that another transaction holds, so no arrival waits on another's.
    """
    cutoff = now - GUEST_WINDOW
    lock_in_transaction(session, f"guests:{address}")
    session.execute(delete(GuestArrival).where(GuestArrival.id.in_(_EXPIRED_ARRIVALS.scalar_subquery()))
                    .execution_options(synchronize_session=False), {"cutoff": cutoff})
    if (session.scalar(_ARRIVALS_FROM, {"address": address, "cutoff": cutoff}) or 0) >= per_minute:
        raise ServiceError(429, NEW_ACCOUNTS_REFUSED, {"Retry-After": "60"})
    session.add(GuestArrival(address=address, arrived_at=now))


NEW_ACCOUNTS_REFUSED = "Too many new accounts from this address: try again in a minute."
FAILURE_WINDOW = timedelta(minutes=15)  # how long a wrong password counts against its name and its address
# Wrong passwords in the window past which no sign-in is tried: for one name from one address; for one name from
# every address (guesses spread over many addresses); from one address, whatever the names. A name's own limit is
# per address so that one who guesses it from one address cannot lock its player out everywhere: before, ten
# guesses every 15 minutes from anywhere kept a player from signing in at all (found by a trial of an attacker).
FAILURES_PER_NAME_FROM_ADDRESS = 10
FAILURES_PER_NAME = 100
FAILURES_PER_ADDRESS = 50
# A name locked past FAILURES_PER_NAME stays open from the addresses its player signed in from (or signed up from)
# within this time: guesses spread over many addresses locked a player out everywhere, their own home included.
KNOWN_FOR = timedelta(days=90)
_FAILURES_OF_NAME = (select(func.count(), func.count().filter(SignInFailure.address == bindparam("address")))
                     .select_from(SignInFailure)
                     .where(SignInFailure.name == bindparam("name"), SignInFailure.failed_at > bindparam("cutoff")))
_FAILURES_FROM = (select(func.count()).select_from(SignInFailure)
                  .where(SignInFailure.address == bindparam("address"), SignInFailure.failed_at > bindparam("cutoff")))
_EXPIRED_FAILURES = (select(SignInFailure.id).where(SignInFailure.failed_at <= bindparam("cutoff"))
                     .limit(100).with_for_update(skip_locked=True))


def refuse_guessing(session: Session, name: str, address: str, now: datetime, player_id: int | None) -> None:
    """Refuse (429) a sign-in to a name, or from an address, that gave too many wrong passwords lately: before its
    password is hashed, so guessing costs the server a read, not a hash (:func:`count_failure`). ``player_id``: the
    player the name signs in as (:func:`signing_in_as`), whose own addresses pass a name's lockout."""
    cutoff = now - FAILURE_WINDOW
    minutes = f"{FAILURE_WINDOW.seconds // 60} minutes"
    wait = {"Retry-After": str(FAILURE_WINDOW.seconds)}
    of_name, of_name_here = session.execute(_FAILURES_OF_NAME, {"name": failure_name(name), "address": address,
                                                                "cutoff": cutoff}).one()
    if of_name_here >= FAILURES_PER_NAME_FROM_ADDRESS:
        raise ServiceError(429, f"Too many wrong passwords for this name from this address: try again in {minutes}.",
                           wait)
    if of_name >= FAILURES_PER_NAME and not (player_id is not None and _known(session, player_id, address, now)):
        raise ServiceError(429, f"Too many wrong passwords for this name: try again in {minutes}.", wait)
    if (session.scalar(_FAILURES_FROM, {"address": address, "cutoff": cutoff}) or 0) >= FAILURES_PER_ADDRESS:
        raise ServiceError(429, f"Too many wrong passwords from this address: try again in {minutes}.", wait)


_KNOWN = (select(KnownAddress.id).where(KnownAddress.player_id == bindparam("player_id"),
                                         KnownAddress.address == bindparam("address"),
                                         KnownAddress.last_at > bindparam("since")).limit(1))


def _known(session: Session, player_id: int, address: str, now: datetime) -> bool:
    """Whether the player signed in (or signed up) from ``address`` within :data:`KNOWN_FOR`. By the player, not the
    name typed: failures are counted by the name in any case, and "Ann" at her own address was locked out by a
    flood on "ann" (review)."""
    return session.scalar(_KNOWN, {"player_id": player_id, "address": address,
                                   "since": now - KNOWN_FOR}) is not None


def signing_in_as(session: Session, name: str) -> Player | None:
    """The player a sign-in of ``name`` is: in any case, as sign-ups take names (one differing from a player's only in
    case is taken), along the index on ``lower(name)`` (migration 0021). The name as written first, for two players
    who signed up in two cases before that rule. Before, "Ann" was refused at sign-up as taken by "ann" and then told
    at sign-in that her password was wrong (an integrator's trial)."""
    return session.scalars(select(Player).where(func.lower(Player.name) == name.lower())
                           .order_by(Player.name != name, Player.id).limit(1)).first()


def remember_address(session: Session, player_id: int, address: str, now: datetime) -> None:
    """Note that the player signed in (or up) from ``address`` now, in the caller's transaction (:func:`_known`)."""
    insert_of = postgresql_insert if session.get_bind().dialect.name == "postgresql" else sqlite_insert
    session.execute(insert_of(KnownAddress).values(player_id=player_id, address=address[:64], last_at=now)
                    .on_conflict_do_update(index_elements=["player_id", "address"], set_={"last_at": now}))


def failure_name(name: str) -> str:
    """A name as its wrong passwords are counted: in any case, cut to the column's width.

    >>> failure_name("Ann"), len(failure_name("x" * 100))
    ('ann', 64)
    """
    return name.lower()[:64]


def count_failure(session: Session, name: str, address: str, now: datetime) -> None:
    """A wrong password for ``name`` from ``address``: counted for :func:`refuse_guessing`; the oldest rows past the
    window go (a hundred at a time, none another transaction holds)."""
    session.execute(delete(SignInFailure).where(SignInFailure.id.in_(_EXPIRED_FAILURES.scalar_subquery()))
                    .execution_options(synchronize_session=False), {"cutoff": now - FAILURE_WINDOW})
    session.add(SignInFailure(name=failure_name(name), address=address[:64], failed_at=now))


def live_sign_in(player_id: int, now: datetime, token_days: int) -> Select[str]:
    """One of the player's sign-ins neither ended nor expired, if any. An expired token stays in the table until the
    player's next sign-in prunes it; before, the sign-out counted one as a sign-in still there, and a device signed
    out kept the player's seat and bets."""
    return select(Token.token_hash).where(Token.player_id == player_id,
                                          Token.created_at > now - timedelta(days=token_days)).limit(1)


class Accounts:
    def __init__(self, store: Store, settings: Settings, wallet: Wallet, clock: Callable[[], datetime]) -> None:
        self.store = store
        self.settings = settings
        self.wallet = wallet
        self.clock = clock
        self.hasher = PasswordHasher()
        self._callers: OrderedDict[str, tuple[Caller, datetime]] = OrderedDict()  # by token hash: who, known until
        self._callers_lock = threading.Lock()
        self._revisions = 0  # limit changes and sign-outs made by this process: a caller read before one is not kept

    # ------------------------------------------------------------ sign-in
    @cached_property
    def _decoy_hash(self) -> str:
        """What a sign-in to no such name is checked against: a hash as slow as a real one that nothing matches."""
        return self.hasher.hash(secrets.token_urlsafe(16))

    def register(self, name: str, password: str, address: str = "unknown") -> tuple[Caller, str]:
        """A new player and their token. A sign-up counts against the address's limit on new accounts, with guests
        (:func:`admit_guest`): before, anyone could make any number of funded accounts (found by a trial). A name
        that differs from a player's only in its case is taken: at a shared table it would pass for theirs."""
        if not NAME.match(name):
            raise ServiceError(422, "A name is 3 to 32 letters, digits, dots, dashes or underscores.")
        if name.lower().startswith(GUEST_PREFIX):  # a player could pass for a guest, or take a guest's next name
            raise ServiceError(422, f"Names beginning with {GUEST_PREFIX!r} are kept for guests.")
        if any(word in RESERVED_NAMES for word in re.split(r"[^a-z]+", name.lower())):  # "Dealer1", "the.house"
            raise ServiceError(422, f"The name {name!r} is kept: it would pass for the casino's own.")
        if len(password) < 8:
            raise ServiceError(422, "A password needs at least 8 characters.")
        password_hash = self.hasher.hash(password)  # slow on purpose: done before the transaction
        with self.store.write() as session:
            admit_guest(session, address[:64], self.settings.guests_per_minute, self.clock())
            lock_in_transaction(session, f"name:{name.lower()}")  # two sign-ups of one name in two cases
            taken = session.scalars(select(Player.name).where(func.lower(Player.name) == name.lower())).first()
            if taken is not None:
                raise ServiceError(409, f"The name {name!r} is taken." if taken == name else
                                   f"The name {name!r} is taken (as {taken!r}).")
            player = self._new_player(session, name, password_hash, guest=False)
            remember_address(session, player.id, address, self.clock())
            return Caller(player.id, player.name, player.role), self._issue_token(session, player)

    def guest(self, address: str) -> tuple[Caller, str]:
        """A new guest account and its token, for a client at ``address`` (429 past the address's limit)."""
        if not self.settings.demo:
            raise ServiceError(403, "Guest play is off on this server: register or sign in.")
        with self.store.write() as session:
            admit_guest(session, address[:64], self.settings.guests_per_minute, self.clock())
            player = self._new_player(session, f"{GUEST_PREFIX}{secrets.token_hex(4)}", None, guest=True)
            return Caller(player.id, player.name, player.role, True), self._issue_token(session, player)

    def _new_player(self, session: Session, name: str, password_hash: str | None, guest: bool) -> Player:
        player = Player(name=name, password_hash=password_hash, role="player", guest=guest,
                        settings=dict(SETTINGS_DEFAULTS), limits={}, created_at=self.clock())
        session.add(player)
        session.flush()
        if self.settings.demo and self.wallet.keeps_balances:
            for currency in CURRENCIES:
                self.wallet.credit(session, player.id, currency, self.settings.demo_balance)
        return player

    def _issue_token(self, session: Session, player: Player) -> str:
        token = secrets.token_urlsafe(32)
        now = self.clock()
        session.execute(delete(Token).where(Token.player_id == player.id,  # the player's expired sign-ins
                                            Token.created_at <= now - timedelta(days=self.settings.token_days)))
        session.add(Token(token_hash=token_hash(token), player_id=player.id, created_at=now))
        last_round = session.scalar(LAST_ROUND, {"player_id": player.id})
        if session_over(aware(player.session_started_at), last_round, now):
            player.session_started_at = now
        return token

    def login(self, name: str, password: str, address: str = "unknown") -> tuple[Caller, str, list[dict[str, Any]]]:
        """Sign in: the token, and the bets never dealt that this returned. A name or an address with too many wrong
        passwords lately is refused before any hash (:func:`refuse_guessing`); an unknown name costs a hash too, so
        the time taken does not tell which names exist. Before, guessing was free, and a flood of guesses slowed
        every player's requests (found by a trial)."""
        address = address[:64]
        with self.store.read() as session:
            player = signing_in_as(session, name)
            refuse_guessing(session, name, address, self.clock(), player.id if player is not None else None)
            stored_hash = player.password_hash if player is not None else None
        try:
            if player is None or stored_hash is None:
                self.hasher.verify(self._decoy_hash, password)  # as long as a real one, and never a match
                raise VerificationError()
            self.hasher.verify(stored_hash, password)
        except (VerificationError, InvalidHashError):
            with self.store.write() as session:
                count_failure(session, name, address, self.clock())
            raise ServiceError(401, "The name or password is wrong.") from None
        check_exclusion(player.limits, self.clock())
        with self.store.write() as session:
            # A good one clears its name's failures from its address: not others', or each sign-in of the player's
            # would free a guesser elsewhere to try ten more.
            session.execute(delete(SignInFailure).where(SignInFailure.name == failure_name(name),
                                                        SignInFailure.address == address))
            row = session.get(Player, player.id)
            assert row is not None
            remember_address(session, row.id, address, self.clock())
            token = self._issue_token(session, row)
            returned = return_undealt_bets(session, row.id)
            return Caller(row.id, row.name, row.role, row.guest), token, returned

    def is_operator_token(self, token: str | None) -> bool:
        """Whether ``token`` is the operator's (compared in constant time)."""
        if not token or not token.isascii():
            return False
        return secrets.compare_digest(token, self.settings.operator_token)

    def known(self, token: str | None) -> Caller | None:
        """The caller of a token this process has already seen (or the operator), from memory: no query.

        The server's event loop asks this first, so most requests reach a worker thread only once.
        """
        if not token or not token.isascii():
            return None
        if self.is_operator_token(token):
            return Caller(0, "operator", "operator")
        digest = token_hash(token)
        with self._callers_lock:
            known = self._callers.get(digest)
            if known is None or known[1] > self.clock():
                return known[0] if known is not None else None
            del self._callers[digest]  # read again: the player's limits may have changed in another process
            return None

    def authenticate(self, token: str | None, again: bool = True, operator: bool = True) -> Caller:
        """The caller of ``token``: the operator (unless ``operator`` is false: a player's token is then looked up
        whatever it is, the operator's as any other, and takes as long), a caller this process knows, or a player
        whose sign-in the database holds; else 401."""
        if not token:
            raise ServiceError(401, "Sign in first: send the bearer token from /auth/login or /auth/guest.")
        if not token.isascii():
            raise ServiceError(401, "The token is not valid: sign in again.")
        known = self.known(token) if operator or not self.is_operator_token(token) else None
        if known is not None:
            return known
        digest = token_hash(token)
        with self._callers_lock:
            revisions = self._revisions
        with self.store.read() as session:
            row = session.get(Token, digest)
            if row is None:
                raise ServiceError(401, "The token is not valid: sign in again.")
            expires = cast(datetime, aware(row.created_at)) + timedelta(days=self.settings.token_days)
            if expires <= self.clock():
                raise ServiceError(401, f"Your sign-in has expired (after {self.settings.token_days} days): "
                                        "sign in again.")
            player = session.get(Player, row.player_id)
            assert player is not None
            limits = limits_in_force(player.limits, self.clock())
            ends, break_ends = session_times(session, player, limits)
            caller = Caller(player.id, player.name, player.role, player.guest, excluded_until(player.limits),
                            ends, limits.get("session_minutes"), break_ends, limits.get("daily_loss_limit"))
        with self._callers_lock:
            stale = self._revisions != revisions  # one committed during this read: it may be this caller's, unseen
            if not stale and again:
                self._callers[digest] = (caller, min(self.clock() + TOKEN_TTL, expires))
                while len(self._callers) > TOKEN_CACHE:
                    self._callers.popitem(last=False)
        # Read once more (it begins after that change committed), then answer without remembering: a steady stream
        # of exclusions elsewhere must not keep one request reading.
        return self.authenticate(token, again=False) if stale and again else caller

    def still_signed_in(self, token: str) -> bool:
        """Whether the token's sign-in has neither ended nor expired, as the database says (not this process's
        memory): what an open WebSocket asks, when it opens and every minute after."""
        with self.store.read() as session:
            row = session.get(Token, token_hash(token))
            created = aware(row.created_at) if row is not None else None
        return created is not None and created + timedelta(days=self.settings.token_days) > self.clock()

    def sign_out(self, caller: Caller, token: str, everywhere: bool = False) -> tuple[list[str], list[dict[str, Any]]]:
        """End the sign-in of ``token`` (``everywhere``: every sign-in of its player), and, if no sign-in of the
        player is left, return their bets never dealt, as a disconnection does, and their seats in shared rounds
        still taking bets: the sign-ins ended (by :func:`session_id`) and the bets returned.

        The token is refused from then on: by this process at once, by any other once it no longer knows the caller
        from memory (:data:`TOKEN_TTL`). Before, a token stayed valid for ever, and signing out of the page only made
        the browser forget it (noted by a trial)."""
        if caller.is_operator:
            raise ServiceError(403, "The operator's token is the server's own (TWENTYONE_OPERATOR_TOKEN): it is "
                                    "changed there, not signed out.")
        digest = token_hash(token)
        with self.store.write() as session:
            tokens = select(Token.token_hash).where(Token.player_id == caller.id) if everywhere else (
                select(Token.token_hash).where(Token.token_hash == digest))
            ended = list(session.scalars(tokens))
            session.execute(delete(Token).where(Token.token_hash.in_(ended)))
            # The bets are the player's, not a device's: the last sign-in to end returns them. Before, signing out of
            # one device emptied the spots of another still at the table (found by review).
            # Seats in shared rounds still taking bets too, as a self-exclusion takes them: nothing is staked until
            # betting closes, and before, the round dealt the signed-out player in and the timer played their hand
            # (found by a trial of an operator).
            last = session.scalar(live_sign_in(caller.id, self.clock(), self.settings.token_days)) is None
            returned = leave_forming_rounds(session, caller.id) + return_undealt_bets(session, caller.id) if last \
                else []
        with self._callers_lock:
            self._revisions += 1  # a read of one of these tokens made before the delete committed is not remembered
            for ended_digest in ended:
                self._callers.pop(ended_digest, None)
        return [ended_digest[:SESSION_ID_LENGTH] for ended_digest in ended], returned

    def reconnect(self, caller: Caller) -> list[dict[str, Any]]:
        """A player is back (a new connection): bets placed but never dealt are returned."""
        with self.store.read() as session:
            if not any(slip.bets for slip in session.scalars(select(Slip).where(Slip.player_id == caller.id))):
                return []
        with self.store.write() as session:
            return return_undealt_bets(session, caller.id)

    # ---------------------------------------------------- settings, limits
    def profile(self, caller: Caller) -> dict[str, Any]:
        with self.store.read() as session:
            player = session.get(Player, caller.id)
            if player is None:
                raise ServiceError(404, "The operator has no player profile.")
            # A currency an operator's wallet refuses (it holds the player in another) is left out; its silence in any
            # is a 503 (held_balances). Before, one currency refused failed the whole answer with 409, and a page
            # could not learn who was signed in (found by an integrator's trial).
            balances = held_balances(lambda currency: self._balance_or_refusal(session, player.id, currency),
                                     CURRENCIES)
            now = self.clock()
            limits = limits_in_force(player.limits, now)
            # What the daily loss limit leaves to stake today in each currency, as a stake is checked (null without
            # a limit): the limits page said the limit and not what was left of it (a trial of players).
            limit = limits.get("daily_loss_limit")
            room = None if limit is None else {
                currency: room_under(session, player.id, int(limit), currency, now) for currency in CURRENCIES}
            return {"id": player.id, "name": player.name, "guest": player.guest, "role": player.role,
                    "settings": {**SETTINGS_DEFAULTS, **player.settings}, "limits": limits, "loss_room": room,
                    "session": session_json(*session_times(session, player, limits)), "balances": balances}

    def _balance_or_refusal(self, session: Session, player_id: int, currency: str) -> int | WalletError:
        try:
            return self.wallet.balance(session, player_id, currency)
        except WalletError as error:
            return error

    def update_settings(self, caller: Caller, changes: dict[str, bool]) -> dict[str, Any]:
        with self.store.write() as session:
            player = self._player(session, caller)
            player.settings = {**SETTINGS_DEFAULTS, **player.settings, **changes}
            return self.store.answer(session, {"settings": dict(player.settings)})

    def update_limits(self, caller: Caller, daily_loss_limit: int | None, session_minutes: int | None,
                      exclude_days: int | None, removed: Collection[str] = ()) -> dict[str, Any]:
        """Change the player's limits (:func:`changed_limits`). A self-exclusion takes effect at once: the player's
        undealt bets are returned (``returned_bets``), and their bet controls are refused from now on in this
        process, and in any other within :data:`TOKEN_TTL`; a round in play goes on. Before, an excluded player's
        bets were taken until DEAL refused them (noted by a trial)."""
        with self.store.write() as session:
            player = self._player(session, caller)
            limits = changed_limits(player.limits, self.clock(), daily_loss_limit, session_minutes, exclude_days,
                                    removed)
            body: dict[str, Any] = {"limits": limits}
            if exclude_days is not None:  # rounds first, in the order every writer locks: the round, then the rest
                body["returned_bets"] = leave_forming_rounds(session, player.id) + return_undealt_bets(session,
                                                                                                      player.id)
            player.limits = limits
            answer = self.store.answer(session, body)
        # This process knows the new limits at once (before the answer): the player's callers are read again; any
        # other process, within TOKEN_TTL.
        self._forget_callers(caller.id)
        return answer

    def _forget_callers(self, player_id: int) -> None:
        """Read the player's callers again at their next request (their limits or session changed)."""
        with self._callers_lock:
            self._revisions += 1
            for digest, (known, _) in list(self._callers.items()):
                if known.id == player_id:
                    del self._callers[digest]

    def may_bet(self, caller: Caller) -> None:
        """Refuse (403) a bet control of a player kept from play (:meth:`Caller.refuse_new_bets`, from memory); past
        a session's limit and the break after it, start the player's new session, from the database."""
        now = self.clock()
        caller.refuse_new_bets(now)
        if caller.session_ends_at is None or caller.session_ends_at >= now:
            return
        with self.store.write() as session:
            self.check_may_play(session, self._player(session, caller))  # the new session, unless another began one
        self._forget_callers(caller.id)

    @staticmethod
    def _player(session: Session, caller: Caller) -> Player:
        player = session.get(Player, caller.id)
        if player is None:
            raise ServiceError(404, "The operator has no player profile.")
        return player

    def check_may_play(self, session: Session, player: Player) -> dict[str, Any]:
        """Refuse (403) a player whom self-exclusion or the session time limit keeps from playing now,
        whatever the stake; the limits in force, for the stake's own check. Past the limit and the break after it,
        the player's new session starts now."""
        now = self.clock()
        limits = limits_in_force(player.limits, now)
        check_exclusion(limits, now)
        ends = session_ends_at(player, limits)
        if ends is None or ends >= now:
            return limits
        break_ends = session_times(session, player, limits)[1]
        if in_session_break(ends, break_ends, now):
            raise ServiceError(403, session_over_message(limits["session_minutes"], cast(datetime, break_ends)))
        if isinstance(player, Player):
            player.session_started_at = now
        else:  # a row read for a deal or a close of betting: before, it started no session, and DEAL pressed first
            # after the break played a round whose start then began another break (a trial of players)
            session.execute(update(Player).where(Player.id == player.id).values(session_started_at=now),
                            execution_options={"synchronize_session": False})
        return limits

    def check_limits(self, session: Session, player: Player, currency: str, stake: int,
                     lost: int | None = None) -> None:
        """Refuse a stake that self-exclusion, the session time limit or the daily loss limit forbids.

        ``lost``: what the player lost today, where the caller read it already (:meth:`losses_today`).
        """
        limits = self.check_may_play(session, player)
        limit = limits.get("daily_loss_limit")
        if limit is not None:
            if lost is None:
                lost = self.losses_today(session, [player], currency)[player.id]
            if lost + stake > limit:
                raise refusal(BetSlipError("This bet could take today's losses past your daily limit of {limit}.",
                                           limit=limit), currency, status=403, amounts={"lost": lost, "stake": stake})

    def losses_today(self, session: Session, players: Sequence[Player], currency: str) -> dict[int, int]:
        """What each of ``players`` who set a daily loss limit lost today, in one statement (a close of betting
        checks every seat's limit at once); the others are left out."""
        now = self.clock()
        limited = [player.id for player in players if limits_in_force(player.limits, now).get("daily_loss_limit")
                   is not None]
        return net_losses_since(session, limited, currency, now.replace(hour=0, minute=0, second=0, microsecond=0))




def session_ends_at(player: Player, limits: dict[str, Any]) -> datetime | None:
    """When the player's session reaches its time limit (``limits``: those in force), or None without a limit."""
    minutes = limits.get("session_minutes")
    started = aware(player.session_started_at)
    return started + timedelta(minutes=minutes) if minutes and started else None
# When the player's latest round began, along the index on (player_id, round_id): one row, however long the history.
LAST_ROUND = (select(Round.created_at).join(RoundSeat, RoundSeat.round_id == Round.id)
              .where(RoundSeat.player_id == bindparam("player_id")).order_by(RoundSeat.round_id.desc()).limit(1))


def session_times(session: Session, player: Player, limits: dict[str, Any]) -> tuple[datetime | None, datetime | None]:
    """When the player's session reaches its time limit, and when the break after it ends
    (:func:`~twentyone.server.context.session_break_end`, from their last round); (None, None) without a limit."""
    ends = session_ends_at(player, limits)
    if ends is None:
        return None, None
    return ends, session_break_end(ends, session.scalar(LAST_ROUND, {"player_id": player.id}))


def session_json(ends: datetime | None, break_ends: datetime | None) -> dict[str, str | int | None]:
    """The session's time limit as ``/me`` tells it: when it is (or was) reached, and when the break after it ends,
    from which play starts a new session; both null without a limit. A page hides its bet controls between the two
    (before, it learnt of the limit from the first bet refused, and could not know when play was open again).
    ``break_minutes`` is how long the break is, for a page to say it in the refusal's words without a copy of it.

    >>> from datetime import UTC
    >>> session_json(datetime(2026, 12, 2, 9, 30, tzinfo=UTC), datetime(2026, 12, 2, 10, 0, tzinfo=UTC))
    {'ends_at': '2026-12-02T09:30:00+00:00', 'break_ends_at': '2026-12-02T10:00:00+00:00', 'break_minutes': 30}
    """
    return {"ends_at": iso(ends), "break_ends_at": iso(break_ends), "break_minutes": SESSION_BREAK_MINUTES}


def session_over(started: datetime | None, last_round: datetime | None, now: datetime) -> bool:
    """Whether a sign-in at ``now`` starts a new session: the last had no round, or the player has had a break.

    Signing in again does not reset the session time limit: a session goes on across sign-ins until
    the player has played no round for :data:`SESSION_BREAK` (``last_round``: when their latest began).

    >>> from datetime import UTC
    >>> start = datetime(2026, 11, 30, 10, tzinfo=UTC)
    >>> session_over(start, start + timedelta(minutes=59), start + timedelta(minutes=61))  # limit hit, sign in again
    False
    >>> session_over(start, start + timedelta(minutes=59), start + timedelta(minutes=90))  # a 31-minute break
    True
    >>> session_over(start, None, start + timedelta(minutes=5)), session_over(None, None, start)
    (True, True)
    """
    latest = aware(last_round)  # SQLite hands back naive datetimes
    if started is None or latest is None:
        return True
    return latest < started or now - latest >= SESSION_BREAK


COOLING_OFF = timedelta(hours=24)  # a looser limit waits this long; a stricter one applies at once


def room_under(session: Session, player_id: int, limit: int, currency: str, now: datetime) -> int:
    """What a daily loss ``limit`` leaves the player to stake today in ``currency``, as a stake is checked
    (:meth:`Accounts.check_limits`: today's losses and the stake within the limit), never below 0."""
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    return max(0, limit - net_losses_since(session, [player_id], currency, midnight)[player_id])


EASED_LATER = ("daily_loss_limit", "session_minutes")  # lower is stricter for both


def limits_in_force(limits: dict[str, Any], now: datetime) -> dict[str, Any]:
    """The limits that apply at ``now``: a raise whose cooling-off is over is in force; the others stay ``pending``.

    >>> from datetime import UTC
    >>> stored = {"daily_loss_limit": 1000, "pending": {"daily_loss_limit": {"value": 5000,
    ...           "from": "2026-12-02T09:00:00+00:00"}}}
    >>> limits_in_force(stored, datetime(2026, 12, 1, 9, tzinfo=UTC))["daily_loss_limit"]
    1000
    >>> limits_in_force(stored, datetime(2026, 12, 2, 9, tzinfo=UTC))
    {'daily_loss_limit': 5000}
    """
    current = {name: value for name, value in limits.items() if name != "pending"}
    waiting = {}
    for name, change in limits.get("pending", {}).items():
        if datetime.fromisoformat(change["from"]) <= now:
            if change["value"] is None:  # a removal, in force: no limit
                current.pop(name, None)
            else:
                current[name] = change["value"]
        else:
            waiting[name] = change
    return {**current, "pending": waiting} if waiting else current


def changed_limits(limits: dict[str, Any], now: datetime, daily_loss_limit: int | None, session_minutes: int | None,
                   exclude_days: int | None, removed: Collection[str] = ()) -> dict[str, Any]:
    """A player's limits after they change them, as responsible-gaming rules have it.

    A stricter limit (lower, or one where there was none) applies at once and drops a raise
    still waiting; a looser one applies after :data:`COOLING_OFF`, so that it is not set in
    the heat of a losing session, and so does a limit ``removed`` (the loosest: before, none could be, an
    integrator's trial). Self-exclusion can be made longer, never shorter.

    >>> from datetime import UTC
    >>> now = datetime(2026, 12, 1, 9, tzinfo=UTC)
    >>> changed_limits({"daily_loss_limit": 1000}, now, 5000, None, None)
    {'daily_loss_limit': 1000, 'pending': {'daily_loss_limit': {'value': 5000, 'from': '2026-12-02T09:00:00+00:00'}}}
    >>> changed_limits(_, now, 500, 30, None)
    {'daily_loss_limit': 500, 'session_minutes': 30}
    >>> changed_limits(_, now, None, None, None, removed={"session_minutes"})["pending"]
    {'session_minutes': {'value': None, 'from': '2026-12-02T09:00:00+00:00'}}
    >>> changed_limits({"excluded_until": "2036-11-28T09:00:00+00:00"}, now, None, None, 1)
    Traceback (most recent call last):
    ...
    twentyone.server.context.ServiceError: You have excluded yourself until 2036-11-28 09:00 UTC: an exclusion ...
    """
    changed = limits_in_force(limits, now)
    waiting = dict(changed.pop("pending", {}))
    for name, value in zip(EASED_LATER, (daily_loss_limit, session_minutes), strict=True):
        if name in removed and changed.get(name) is not None:
            waiting[name] = {"value": None, "from": (now + COOLING_OFF).isoformat()}
            continue
        if value is None:
            continue
        if changed.get(name) is None or value <= changed[name]:
            changed[name] = value
            waiting.pop(name, None)
        else:
            waiting[name] = {"value": value, "from": (now + COOLING_OFF).isoformat()}
    if exclude_days is not None:
        until = now + timedelta(days=exclude_days)
        current = changed.get("excluded_until")
        if current and datetime.fromisoformat(current) > until:
            raise ServiceError(403, f"You have excluded yourself until {current[:16].replace('T', ' ')} UTC: an "
                                    "exclusion cannot be shortened.")
        changed["excluded_until"] = until.isoformat()
    return {**changed, "pending": waiting} if waiting else changed


def check_exclusion(limits: dict[str, Any], now: datetime) -> None:
    Caller(0, "", "player", excluded_until=excluded_until(limits)).refuse_if_excluded(now)


def excluded_until(limits: dict[str, Any]) -> datetime | None:
    """When a player's self-exclusion ends (None if they never set one).

    >>> excluded_until({"excluded_until": "2026-12-09T09:00:00+00:00"})
    datetime.datetime(2026, 12, 9, 9, 0, tzinfo=datetime.timezone.utc)
    >>> excluded_until({"daily_loss_limit": 500}) is None
    True
    """
    until = limits.get("excluded_until")
    return datetime.fromisoformat(until) if until else None


def leave_forming_rounds(session: Session, player_id: int) -> list[dict[str, Any]]:
    """Take the player's seats out of the shared rounds still taking bets, and say what was returned (with the
    round's id): nothing was staked yet (a seat is staked when betting closes). Before, a self-excluded player's
    seat stayed listed in the round until its close sat it out (found by review)."""
    forming = session.scalars(select(Round).where(
        Round.status == "betting",
        Round.id.in_(select(RoundSeat.round_id).where(RoundSeat.player_id == player_id))).with_for_update()).all()
    returned = []
    for round_row in forming:
        seat = session.scalars(select(RoundSeat).where(RoundSeat.round_id == round_row.id,
                                                       RoundSeat.player_id == player_id)).first()
        if seat is None:
            continue
        # Each bet on the spot it was placed on (kept with it since rounds kept it; before, its place in the seat).
        spots = [(entry.get("spot", index), entry) for index, entry in enumerate(seat.bets, start=1)]
        bets = {(spot, MAIN): entry["bet"] for spot, entry in spots}
        bets |= {(spot, name): amount for spot, entry in spots for name, amount in entry["side_bets"].items()}
        # In the round's currency, which a table changed since it formed no longer tells (found by a helper).
        returned.append({"table_id": round_row.table_id, "round_id": round_row.id, "bets": bet_list(bets),
                         "total": sum(bets.values()), "currency": round_row.currency})
        session.delete(seat)
    return returned


def return_undealt_bets(session: Session, player_id: int) -> list[dict[str, Any]]:
    """Clear every bet slip of the player's that was never dealt, and say what was returned."""
    returned = []
    for slip in session.scalars(select(Slip).where(Slip.player_id == player_id)).all():
        if slip.bets:
            returned.append({"table_id": slip.table_id, "bets": bet_list(slip.bets), "total": sum(slip.bets.values())})
            slip.bets, slip.history = {}, []
    return returned
