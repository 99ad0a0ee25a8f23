"""The wallet: a double-entry ledger in the database, or an operator's own wallet behind it.

Built-in ledger: every movement is a transfer of two ledger rows that sum to
zero (the player's account and the house's), written in the same transaction
as the round change it belongs to; a balance is the sum of an account's rows.

Operator wallet (the usual remote-game-server contract): the operator
implements :class:`OperatorWallet` (balance, debit, credit, rollback, each
carrying an idempotent transaction id). Debits are made before a stake is
recorded, retried with the same id on a timeout, and rolled back if they cannot
be confirmed or if the transaction that records the stake does not commit;
credits and rollbacks are written to an outbox (``wallet_calls``) and
delivered, and retried, after their transaction commits. A retried id never
moves money twice; a restart resumes the outbox.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import UTC, datetime
from functools import partial
from typing import Any, Protocol

from sqlalchemy import BigInteger, Connection, Row, String, bindparam, event, func, insert, select, update
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, SessionTransaction

from twentyone.core.money import MAX_AMOUNT
from twentyone.server.context import Busy, ServiceError
from twentyone.server.direct import defer, run, transaction_notes
from twentyone.server.journal import Debit, DebitJournal
from twentyone.server.models import ACCOUNTS, LEDGER, WALLET_CALLS, WALLET_MODES, Account, LedgerEntry, WalletCall

HOUSE = "house"
log = logging.getLogger("twentyone.server")
Sessions = Callable[[], AbstractContextManager[Session]]  # opens a transaction (Store.write) or a read (Store.read)


class WalletError(Exception):
    """A wallet refused or could not be reached; ``status`` is the HTTP status to answer."""

    def __init__(self, detail: str, status: int = 409) -> None:
        super().__init__(detail)
        self.detail = detail
        self.status = status


def as_refusal(error: WalletError) -> ServiceError:
    """The answer to a wallet's refusal: its status and words; an unreachable wallet (503) is :class:`Busy`,
    with ``Retry-After``, like any other storage trouble that changed nothing.

    >>> as_refusal(WalletTimeout()).headers, as_refusal(WalletError("No funds.")).status
    ({'Retry-After': '1'}, 409)
    """
    if error.status == 503:
        return Busy(error.detail)
    return ServiceError(error.status, error.detail)


def held_balances(ask: Callable[[str], int | WalletError], currencies: Iterable[str]) -> dict[str, int]:
    """The balances a wallet gives, by currency, ``ask`` asked for each in turn, less the currencies it refuses: a
    wallet that holds a player in one currency refuses the others (409), and a look at the player's balances
    (``/me``, ``/admin/players/{name}``) shows those it holds rather than failing whole. Its silence (503) in any
    currency is raised at once, :class:`Busy` as :func:`as_refusal` makes it, and the currencies after it are not
    asked: a balance left out must mean one the wallet does not hold, not one it did not give; and a wallet that does
    not answer is waited on once, not once per currency (before, ``/me`` waited out its time-outs three times).

    >>> answers = {"USD": WalletError("Held in EUR only."), "GBP": WalletTimeout(), "EUR": 1200}
    >>> asked = []
    >>> def ask(currency):
    ...     asked.append(currency)
    ...     return answers[currency]
    >>> held_balances(ask, ["USD", "EUR"])
    {'EUR': 1200}
    >>> held_balances(ask, ["USD", "GBP", "EUR"])
    Traceback (most recent call last):
    ...
    twentyone.server.context.Busy: The wallet did not answer in time.
    >>> asked  # the second look stopped at the silence: EUR was not asked again
    ['USD', 'EUR', 'USD', 'GBP']
    """
    held = {}
    for currency in currencies:
        answer = ask(currency)
        if isinstance(answer, WalletError):
            if answer.status == 503:
                raise as_refusal(answer)
            continue
        held[currency] = answer
    return held


class WalletTimeout(WalletError):
    def __init__(self, detail: str = "The wallet did not answer in time.") -> None:
        super().__init__(detail, 503)


# What a player is told when the operator's wallet gave a balance the game cannot use (RemoteWallet.balance): the log
# says what it was; the player, that it is unavailable, as for a wallet that does not answer.
UNUSABLE = "The wallet is unavailable just now: nothing was changed. Try again in a moment."


def _balance_call(player_id: int, currency: str) -> str:
    """The call, as a log names it.

    >>> _balance_call(7, "USD")
    "balance('player:7', 'USD')"
    """
    return f"balance({player_owner(player_id)!r}, {currency!r})"


def _shortened(answer: object, most: int = 60) -> str:
    """``repr(answer)``, cut to ``most`` characters for a log line (a wallet may answer with anything).

    >>> _shortened("abc"), _shortened("x" * 100, 10), _shortened(1e30)
    ("'abc'", "'xxxxxxxx…", '1e+30')
    """
    try:
        text = repr(answer[:most + 1] if isinstance(answer, str | bytes) else answer)
    except Exception:  # a repr that fails says so, rather than failing the answer
        text = f"<{type(answer).__name__} whose repr failed>"
    return text if len(text) <= most else text[:most - 1] + "…"


class OperatorWallet(Protocol):
    """What an operator's wallet service offers; every call is idempotent by ``tx_id``.

    A ``rollback`` undoes the debit of that id, and is final: a debit with an id rolled back is refused (a late copy
    of it must not take the money again). A rollback of an id the wallet never saw (a debit lost on its way, or never
    sent: the game journals a debit before it sends it) succeeds, and is remembered as such. ``WalletTimeout``: no
    answer (the call may or may not have been applied); any other ``WalletError``: refused, nothing applied.

    ``player`` is ``player:<id>``, the twentyone player's id (``/me``'s ``id``; ``POST /auth/register`` answers it,
    ``GET /admin/players/{name}`` finds it by name). A ``WalletError``'s ``detail`` is shown to the player as written
    (a refusal's 409, a seat's reason at a close of betting): words for players, nothing internal. Its ``status`` is
    answered as is; 503 means unavailable. Each call returns, or raises ``WalletTimeout``, within a few seconds: a
    player's request, a close of betting or the timer's tick waits on it, and the game sets no time-out of its own.
    The factory runs once in ``serve``'s process and, with ``--workers``, once more in each worker; calls come from
    many threads at once. ``balance`` answers an ``int`` from 0 to ``MAX_AMOUNT`` in minor units of the currency
    asked (anything else is answered as the wallet unavailable, and logged); a currency the wallet does not hold for
    the player is refused with ``WalletError`` (409), not answered in another. docs/server.md, "Operator wallet".
    """

    def balance(self, player: str, currency: str) -> int: ...
    def debit(self, player: str, currency: str, amount: int, tx_id: str, round_id: int | None) -> None: ...
    def credit(self, player: str, currency: str, amount: int, tx_id: str, round_id: int | None) -> None: ...
    def rollback(self, tx_id: str) -> None: ...


def load_operator_wallet(spec: str) -> OperatorWallet:
    """Build an operator wallet from ``module:factory`` (a class or a function taking no arguments).

    Whatever goes wrong is a ``ValueError`` of one line naming ``--wallet``, the spec and the error (its type and
    words): a module missing, one that fails to import (a syntax error, an exception at import), a factory that
    raises. ``serve`` prints it and exits with 2. Before, all but a missing module printed a 40-50 line traceback and
    exited with 1, and a factory's own ``ValueError`` printed its words alone ("error: bad config"), naming no
    wallet (found by an integrator's trial).

    >>> load_operator_wallet("no_such_module:Wallet")
    Traceback (most recent call last):
    ...
    ValueError: --wallet: cannot import 'no_such_module' (No module named 'no_such_module').
    >>> load_operator_wallet("fractions:Fraction.from_float")
    Traceback (most recent call last):
    ...
    ValueError: --wallet: 'fractions' has no callable 'Fraction.from_float'.
    >>> load_operator_wallet("operator:itemgetter")
    Traceback (most recent call last):
    ...
    ValueError: --wallet operator:itemgetter: the factory raised TypeError: itemgetter expected 1 argument, got 0.
    """
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"--wallet: write module:factory, got {spec!r}.")
    import importlib

    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ValueError(f"--wallet: cannot import {module_name!r} ({error}).") from None
    except Exception as error:  # the module's own code failed: a syntax error, an exception raised at import
        raise ValueError(f"--wallet {spec}: importing {module_name!r} raised {_one_line(error)}.") from None
    factory = getattr(module, attribute, None)
    if factory is None or not callable(factory):
        raise ValueError(f"--wallet: {module_name!r} has no callable {attribute!r}.")
    try:
        wallet = factory()
    except Exception as error:  # a wallet service it could not reach, a setting it lacks...
        raise ValueError(f"--wallet {spec}: the factory raised {_one_line(error)}.") from None
    for method in ("balance", "debit", "credit", "rollback"):
        if not callable(getattr(wallet, method, None)):
            raise ValueError(f"--wallet: {spec} lacks {method}(): see OperatorWallet in twentyone.server.wallet.")
    return wallet  # type: ignore[no-any-return]


BUILT_IN, OPERATOR = "built-in", "operator"  # where a start keeps the balances (wallet_modes.mode)
LATEST_MODE = select(WALLET_MODES.c.mode, WALLET_MODES.c.wallet, WALLET_MODES.c.started_at).order_by(
    WALLET_MODES.c.id.desc()).limit(1)


def wallet_name(wallet: object) -> str:
    """How the record of a start names an operator's wallet that came with no ``--wallet`` spec: its class.

    >>> from collections import Counter
    >>> wallet_name(Counter())
    'collections:Counter'
    """
    kind = type(wallet)
    return f"{kind.__module__}:{kind.__qualname__}"


def latest_wallet_mode(session: Session | Connection) -> Row[str, str | None, datetime] | None:
    """Where the latest start recorded kept the balances (``mode``, ``wallet``, ``started_at``); None before any."""
    return session.execute(LATEST_MODE).first()


def record_wallet_mode(sessions: Sessions, wallet: str | None, when: datetime) -> Row[str, str | None, datetime] | None:
    """Record that a start of the server keeps the balances in the operator's wallet named ``wallet``, or (None) in
    the built-in ledger, where the latest start recorded kept them elsewhere; the latest record before, or None.

    A start that keeps them where the latest record says appends nothing (another operator's wallet included: the
    mode is what the command line goes by), so the rows are the history of the changes. The starts of one database
    take turns here (SQLite's one writer; on PostgreSQL an advisory lock), so the workers of ``serve --workers N``,
    which start at once in one mode, append one row at most. A start in another mode than the latest record's is
    recorded and logged, never refused: processes still running in the old mode (one database served by two
    ``serve`` commands of different wallets, an operator's mistake) keep their balances where they did, and the
    command line goes by the latest start (``docs/server.md``, "Endpoints", on ``twentyone admin``).
    """
    from twentyone.server.cluster import lock_in_transaction

    mode = BUILT_IN if wallet is None else OPERATOR
    with sessions() as session:
        lock_in_transaction(session, "wallet-modes")
        latest = latest_wallet_mode(session)
        if latest is None or latest.mode != mode:
            session.execute(insert(WALLET_MODES).values(mode=mode, wallet=wallet, started_at=when))
    if latest is not None and latest.mode != mode:
        log.warning("the balances now live in %s; the start recorded before (%s) kept them in %s: a server process "
                    "of that start still running on this database keeps them there, and should be stopped",
                    "the built-in ledger" if wallet is None else f"the operator's wallet {wallet}",
                    latest.started_at.isoformat(" ", "seconds"), "the built-in ledger" if latest.mode == BUILT_IN else
                    f"the operator's wallet {latest.wallet or '(recorded by the upgrade)'}")
    return latest


def _one_line(error: BaseException) -> str:
    """An error's type and words on one line, for a message of one line (a syntax error's words name its file and line).

    >>> _one_line(RuntimeError("config missing:\\nWALLET_URL"))
    'RuntimeError: config missing: WALLET_URL'
    """
    words = " ".join(str(error).split())
    return f"{type(error).__name__}: {words.rstrip('.')}" if words else type(error).__name__


def now() -> datetime:
    return datetime.now(UTC)


def account(session: Session, owner: str, currency: str, lock: bool = False) -> Account:
    """The account of ``owner`` in ``currency``, created on first use; ``lock`` holds its row."""
    query = select(Account).where(Account.owner == owner, Account.currency == currency)
    if lock:
        query = query.with_for_update()
    found = session.scalars(query).first()
    if found is not None:
        return found
    try:  # two first uses at once (the house account on a fresh database): one insert wins, both go on
        with session.begin_nested():
            created = Account(owner=owner, currency=currency, version=0)
            session.add(created)
        session.info.setdefault(_CREATED, set()).add((owner, currency))
        return created
    except IntegrityError:
        found = session.scalars(query).first()
        assert found is not None
        return found


_CREATED = "twentyone.accounts_created"  # session.info: accounts this transaction created (not yet safe to cache)
ACCOUNT_ID = select(ACCOUNTS.c.id).where(ACCOUNTS.c.owner == bindparam("owner"),
                                         ACCOUNTS.c.currency == bindparam("currency"))


class AccountIds:
    """Account ids by (owner, currency), remembered once seen committed: accounts are never deleted or renumbered.

    Every stake and payment names two accounts; looking them up is two statements a transfer need not make.
    An account this very transaction created is not remembered until a later one sees it (a rollback
    would leave the id pointing at nothing).
    """

    def __init__(self) -> None:
        self._ids: dict[tuple[str, str], int] = {}

    def of(self, session: Session, owner: str, currency: str) -> int:
        known = self._ids.get((owner, currency))
        if known is not None:
            return known
        found = run(session, ACCOUNT_ID, {"owner": owner, "currency": currency}).scalar()
        if found is None:
            return account(session, owner, currency).id
        self.seen(session, owner, currency, found)
        return int(found)

    def seen(self, session: Session, owner: str, currency: str, account_id: int) -> None:
        """Remember an account's id that a statement of this transaction read (unless this transaction created it)."""
        if (owner, currency) not in session.info.get(_CREATED, ()):
            self._ids[(owner, currency)] = account_id


def pay_key(kind: str, round_id: int, player_id: int) -> str:
    """The id of a round's payment to a player in an operator's wallet: the same at every retry.

    >>> pay_key("win", 12, 7), pay_key("void", 12, 7)
    ('credit-12-7', 'void-12-7')
    """
    return f"{'credit' if kind == 'win' else kind}-{round_id}-{player_id}"


def player_owner(player_id: int) -> str:
    return f"player:{player_id}"


BALANCE = select(ACCOUNTS.c.balance).where(ACCOUNTS.c.owner == bindparam("owner"),
                                          ACCOUNTS.c.currency == bindparam("currency"))


_HELD = "twentyone.held_balances"  # transaction_notes: balances this transaction holds locked, by (player, currency)


def _hold(session: Session, player_id: int, currency: str, balance: int) -> None:
    """Note the balance a statement that locked the player's account row returned (``BUMP``, ``CREDIT``,
    ``LOCK_BALANCES``, ``CREDIT_ALL``): until the transaction ends no other transaction can change it (PostgreSQL's row
    lock; SQLite's one writer), and this one changes it only by :func:`transfer` and :func:`transfers`, which note the
    new one. So it need not be read again, and a stake on it needs no answer (:func:`transfer`). Anything new that
    writes ``accounts.balance`` must note the balance it leaves here too."""
    transaction_notes(session, _HELD)[player_id, currency] = balance


@event.listens_for(Session, "after_soft_rollback")
def _forget_held_balances(session: Session, previous_transaction: SessionTransaction) -> None:
    """A rollback to a savepoint undoes what the transaction changed since (PostgreSQL releases the row locks it took
    since, too), while the transaction goes on: the balances it noted are read, and locked, anew."""
    if previous_transaction.nested:
        transaction_notes(session, _HELD).clear()


def ledger_balance(session: Session, player_id: int, currency: str) -> int:
    """The player's balance: the sum of their ledger rows, as kept on their account by every transfer (as this
    transaction last locked or changed it, if it has)."""
    held = transaction_notes(session, _HELD).get((player_id, currency))
    if held is not None:
        return int(held)
    total = run(session, BALANCE, {"owner": player_owner(player_id), "currency": currency}).scalar()
    return int(total or 0)


BALANCES = select(ACCOUNTS.c.owner, ACCOUNTS.c.balance).where(ACCOUNTS.c.owner.in_(bindparam("owners", expanding=True)),
                                                               ACCOUNTS.c.currency == bindparam("currency"))


def ledger_balances(session: Session, player_ids: list[int], currency: str) -> dict[int, int]:
    """Several players' balances in one query (settling a round of hundreds of players): those this transaction
    holds (:func:`_hold`: the ones it locked or paid) from memory, the others read.

    One player's by :func:`ledger_balance`: the list of owners here is an expanding ``IN``, which SQLAlchemy renders
    anew at each execution, where that one runs as compiled once (``direct.run``).
    """
    held = transaction_notes(session, _HELD)
    balances = {player_id: int(held[player_id, currency]) for player_id in player_ids if (player_id, currency) in held}
    unknown = [player_id for player_id in player_ids if player_id not in balances]  # at a settlement: those not paid
    if len(unknown) == 1:
        balances[unknown[0]] = ledger_balance(session, unknown[0], currency)
    elif unknown:
        owners = {player_owner(player_id): player_id for player_id in unknown}
        balances.update(dict.fromkeys(unknown, 0))
        for owner, total in session.execute(BALANCES, {"owners": list(owners), "currency": currency}).all():
            balances[owners[owner]] = int(total or 0)
    return {player_id: balances[player_id] for player_id in player_ids}


def unreconciled_accounts(session: Session) -> list[str]:
    """Players' accounts whose kept balance differs from the sum of their ledger rows (none, ever)."""
    sums = (select(LedgerEntry.account_id, func.sum(LedgerEntry.amount).label("total"))
            .group_by(LedgerEntry.account_id).subquery())
    rows = session.execute(select(Account.owner, Account.currency)
                           .join(sums, sums.c.account_id == Account.id, isouter=True)
                           .where(Account.owner != HOUSE,
                                  Account.balance != func.coalesce(sums.c.total, 0))).all()
    return [f"{owner} {currency}" for owner, currency in rows]


def lock_player(session: Session, player_id: int, currency: str, ids: AccountIds | None = None) -> None:
    """Hold the player's account row for this transaction (PostgreSQL row lock; SQLite is serialised)."""
    owner = player_owner(player_id)
    account_id = ids.of(session, owner, currency) if ids is not None else account(session, owner, currency).id
    _hold(session, player_id, currency, run(session, BUMP, {"account_id": account_id}).scalar_one())


# Each returns the balance it leaves, which the caller then holds locked (_hold): a deal's check of the bets against
# the balance, and a round's balance after, need not read it again.
BUMP = (update(ACCOUNTS).where(ACCOUNTS.c.id == bindparam("account_id")).values(version=ACCOUNTS.c.version + 1)
        .returning(ACCOUNTS.c.balance))
CREDIT = (update(ACCOUNTS).where(ACCOUNTS.c.id == bindparam("account_id"))
          .values(balance=ACCOUNTS.c.balance + bindparam("amount")).returning(ACCOUNTS.c.balance))
# The same change to a balance this transaction holds: its result is known, so nothing waits for an answer (held back
# on PostgreSQL, it goes with the transaction's next statement: a stake after the lock costs no round trip).
CREDIT_HELD = (update(ACCOUNTS).where(ACCOUNTS.c.id == bindparam("account_id"))
               .values(balance=ACCOUNTS.c.balance + bindparam("amount")))
LEDGER_ROWS = insert(LEDGER)  # a transfer's two rows


def lock_players(session: Session, player_ids: Sequence[int], currency: str, ids: AccountIds | None = None) -> None:
    """:func:`lock_player` for each of ``player_ids``, in the order of their accounts' ids: the order a settlement's
    payments lock them in (:func:`transfers`), so that transactions holding several players' accounts (a close of
    betting, a settlement, at two tables one player sits at) never wait on each other in a cycle. On PostgreSQL one
    statement locks them all and returns their balances (a close of betting of 1,000 seats took 1,000 round trips);
    SQLite has one writer, and nothing to order."""
    ids = ids if ids is not None else AccountIds()
    wanted = {player_owner(player_id): player_id for player_id in player_ids}
    if len(wanted) > 1 and session.get_bind().dialect.name == "postgresql":
        for account_id, owner, balance in run(session, LOCK_BALANCES, {"owners": list(wanted),
                                                                       "of_currency": currency}):
            ids.seen(session, owner, currency, account_id)  # the stakes that follow name it
            _hold(session, wanted.pop(owner), currency, balance)
    for player_id in wanted.values():  # one, SQLite's, or a player with no account in the currency yet (made here)
        lock_player(session, player_id, currency, ids)


def _ledger_rows(transfer_id: str, player_account: int, house_account: int, amount: int, kind: str,
                 round_id: int | None, stamp: datetime) -> list[dict[str, object]]:
    """A transfer's two ledger rows: ``amount`` to the player's account, as much from the house's (they sum to zero).

    >>> [row["amount"] for row in _ledger_rows("t", 7, 1, 250, "win", 3, now())]
    [250, -250]
    """
    return [{"transfer_id": transfer_id, "account_id": account, "amount": moved, "kind": kind, "round_id": round_id,
             "created_at": stamp} for account, moved in ((player_account, amount), (house_account, -amount))]


def transfer(session: Session, player_id: int, currency: str, amount: int, kind: str,
             round_id: int | None, ids: AccountIds | None = None) -> str:
    """Move ``amount`` to the player (negative: from the player) against the house, as two rows."""
    transfer_id = uuid.uuid4().hex
    if amount == 0:
        return transfer_id
    ids = ids if ids is not None else AccountIds()
    player_account = ids.of(session, player_owner(player_id), currency)
    house_account = ids.of(session, HOUSE, currency)
    # Core inserts, not ORM objects: nothing reads these rows back in the transaction, and the unit of
    # work's bookkeeping costs more than the two rows do.
    defer(session, LEDGER_ROWS, _ledger_rows(transfer_id, player_account, house_account, amount, kind, round_id,
                                             now()))
    # Added in SQL: the database applies it to the latest committed balance under the row's lock, so two
    # transactions paying one player at once both count. Where this transaction holds the row locked already, it
    # alone changes the balance until it ends, so the result is known without an answer. Unlike CREDIT's answer,
    # CREDIT_HELD does not check that the row exists: the id is the one the lock found (AccountIds).
    held = transaction_notes(session, _HELD).get((player_id, currency))
    if held is not None:
        defer(session, CREDIT_HELD, {"account_id": player_account, "amount": amount})
        balance = int(held) + amount
    else:
        balance = run(session, CREDIT, {"account_id": player_account, "amount": amount}).scalar_one()
    _hold(session, player_id, currency, balance)
    return transfer_id


# PostgreSQL: a settlement's payments in two statements, whatever the number of winners (one CREDIT each was a round
# trip each: 1,000 at a power table of 1,000). The accounts are locked first, in the order of their ids, so two
# settlements sharing players (one player at two tables) cannot deadlock over them; the CREDIT then finds them
# locked. A close of betting locks its seats' accounts the same way (lock_players), and so does a costly decision (a
# double, a split) at a shared table: its player's account with the winners', where it settles the round (rounds.act).
# The lock is the one an UPDATE of the balance takes (FOR NO KEY UPDATE),
# which lets other transactions' ledger rows name these accounts meanwhile. Arrays as parameters: one statement
# text, prepared once, for any number of winners.
_OWNERS = bindparam("owners", type_=ARRAY(String))
LOCK_ACCOUNTS = (select(ACCOUNTS.c.id).where(ACCOUNTS.c.owner == func.any(_OWNERS),
                                             ACCOUNTS.c.currency == bindparam("of_currency"))
                 .order_by(ACCOUNTS.c.id).with_for_update(key_share=True))
LOCK_BALANCES = (select(ACCOUNTS.c.id, ACCOUNTS.c.owner, ACCOUNTS.c.balance)  # lock_players'
                 .where(ACCOUNTS.c.owner == func.any(_OWNERS), ACCOUNTS.c.currency == bindparam("of_currency"))
                 .order_by(ACCOUNTS.c.id).with_for_update(key_share=True))
_PAID = select(func.unnest(_OWNERS).label("owner"),
               func.unnest(bindparam("amounts", type_=ARRAY(BigInteger))).label("amount")).subquery("paid")
CREDIT_ALL = (update(ACCOUNTS).where(ACCOUNTS.c.owner == _PAID.c.owner,
                                     ACCOUNTS.c.currency == bindparam("of_currency"))
              .values(balance=ACCOUNTS.c.balance + _PAID.c.amount)
              .returning(ACCOUNTS.c.id, ACCOUNTS.c.owner, ACCOUNTS.c.balance))


def transfers(session: Session, currency: str, amounts: Mapping[int, int], kind: str, round_id: int | None,
              ids: AccountIds | None = None) -> None:
    """:func:`transfer` of ``amounts[player]`` to each player (negative: from them), all of one kind: a round's
    payments. Each is the same two ledger rows and the same change of balance as one :func:`transfer`; on
    PostgreSQL every balance changes in one statement, with the ledger rows held back to go with it (a settlement of
    1,000 winners: 2 round trips where it was 1,000). Elsewhere (SQLite answers in process) one transfer at a time.
    """
    moved = {player_id: amount for player_id, amount in amounts.items() if amount}
    ids = ids if ids is not None else AccountIds()
    if len(moved) < 2 or session.get_bind().dialect.name != "postgresql":
        for player_id, amount in moved.items():
            transfer(session, player_id, currency, amount, kind, round_id, ids)
        return
    owners = {player_owner(player_id): player_id for player_id in moved}
    defer(session, LOCK_ACCOUNTS, {"owners": list(owners), "of_currency": currency})
    changed = run(session, CREDIT_ALL, {"owners": list(owners), "amounts": list(moved.values()),
                                        "of_currency": currency}).all()
    if len(changed) != len(owners):  # every player who staked has an account: a bug, and nothing commits
        missing = sorted(set(owners) - {row.owner for row in changed})
        raise RuntimeError(f"no {currency} account for {', '.join(missing)}: the payments were not made")
    house_account = ids.of(session, HOUSE, currency)
    stamp = now()
    rows = []
    for account_id, owner, balance in changed:
        player_id = owners[owner]
        _hold(session, player_id, currency, balance)
        rows += _ledger_rows(uuid.uuid4().hex, account_id, house_account, moved[player_id], kind, round_id, stamp)
    defer(session, LEDGER_ROWS, rows)


LOSS_KINDS = ("stake", "win", "refund", "void")  # a round's money: what a loss limit counts (credits do not)
# What each player lost since a moment, in one statement however many players: a close of betting checks every seat's
# daily loss limit at once. Each listed account's sum is a subquery of its own, read along the ledger's index on
# (account, time) (migration 0010): the day's rows of that account, never the ledger's history. As one join and
# GROUP BY, PostgreSQL's planner chose a parallel scan of the whole ledger once hundreds of owners were listed
# (1,000 of 2,000 accounts over a million rows: 33 ms, growing with every round ever played); a scalar subquery is
# not flattened into a join, so its plan cannot drift that way. A player without an account in the currency, or
# without rows since, lost nothing.
_DAYS_ROWS = (select(func.coalesce(func.sum(LEDGER.c.amount), 0))
              .where(LEDGER.c.account_id == ACCOUNTS.c.id, LEDGER.c.kind.in_(LOSS_KINDS),
                     LEDGER.c.created_at >= bindparam("since"))
              .scalar_subquery())
NET_LOSSES = select(ACCOUNTS.c.owner, _DAYS_ROWS).where(ACCOUNTS.c.owner.in_(bindparam("owners", expanding=True)),
                                                        ACCOUNTS.c.currency == bindparam("currency"))


def net_losses_since(session: Session, player_ids: Sequence[int], currency: str, since: datetime) -> dict[int, int]:
    """What each player lost in rounds since ``since`` (stakes less returns; credits excluded)."""
    owners = {player_owner(player_id): player_id for player_id in player_ids}
    lost = dict.fromkeys(owners.values(), 0)
    if owners:
        for owner, total in session.execute(NET_LOSSES, {"owners": list(owners), "currency": currency,
                                                         "since": since}):
            lost[owners[owner]] = -int(total)
    return lost


# An operator's wallet is asked for at most this many debits (or balances) of one close of betting, or calls of one
# delivery from the outbox, at once.
PARALLEL = 16
RECORD_DEBIT = insert(WALLET_CALLS)  # Core: the row is never read back in its transaction
CANCEL_DEBIT = (update(WALLET_CALLS).where(WALLET_CALLS.c.tx_id == bindparam("debit"))  # not a column's name
                .values(kind="rollback", status="pending"))
_AFTER = "twentyone.after_transaction"  # transaction_notes: what to do once the transaction ends (after_transaction)


def after_transaction(session: Session, committed: Callable[[], None], rolled_back: Callable[[], None]) -> None:
    """Call ``committed`` once this transaction has committed, or ``rolled_back`` once it has ended any other way (a
    rollback, a failed ``COMMIT``, a rollback that failed itself with a lost connection, the session closed). Not
    for a savepoint's end: only the transaction's. A callback that raises is logged.

    >>> from sqlalchemy import create_engine
    >>> session, seen = Session(create_engine("sqlite://")), []
    >>> with session.begin():
    ...     after_transaction(session, lambda: seen.append("committed"), lambda: seen.append("rolled back"))
    ...     with session.begin_nested():
    ...         pass
    >>> _ = session.begin()
    >>> after_transaction(session, lambda: seen.append("committed"), lambda: seen.append("rolled back"))
    >>> session.close(); seen
    ['committed', 'rolled back']
    """
    notes = transaction_notes(session, _AFTER)
    notes.setdefault("committed", []).append(committed)
    notes.setdefault("rolled back", []).append(rolled_back)


@event.listens_for(Session, "after_commit")
def _note_the_commit(session: Session) -> None:
    if session.in_nested_transaction():  # a savepoint released: the transaction goes on
        return
    kept = session.info.get(_AFTER)
    if kept is not None and kept[0] is session.get_transaction():
        kept[1]["committed?"] = True


@event.listens_for(Session, "after_transaction_end")
def _run_after_transaction(session: Session, transaction: SessionTransaction) -> None:
    """Every way a transaction ends closes it (a failed rollback too, which skips ``after_soft_rollback``)."""
    if transaction.parent is not None:
        return
    kept = session.info.get(_AFTER)
    if kept is None or kept[0] is not transaction:
        return
    del session.info[_AFTER]
    for callback in kept[1]["committed" if kept[1].get("committed?") else "rolled back"]:
        try:
            callback()
        except Exception:
            log.exception("after a transaction's end")


# A debit sent (RemoteWallet.send_all) and what the operator answered: ("done" | "refused" | "unsure", error or None).
SentDebit = tuple[Debit, tuple[str, Exception | None]]


def _outbox_row(debit: Debit, kind: str, status: str) -> dict[str, Any]:
    """The outbox's row (``wallet_calls``) for a call about ``debit``: the debit itself or its rollback, done (one
    attempt, made) or pending (none yet)."""
    return {"tx_id": debit.tx_id, "player_id": debit.player_id, "currency": debit.currency, "kind": kind,
            "amount": debit.amount, "round_id": debit.round_id, "status": status,
            "attempts": 1 if status == "done" else 0, "last_error": None, "created_at": now()}


def _new_debit(player_id: int, currency: str, amount: int, round_id: int | None, key: str) -> Debit:
    """A debit of ``amount`` for the stake ``key`` names, with an id of its own (``debit-{key}-{nonce}``: see
    :meth:`RemoteWallet.debit_now`)."""
    return Debit(f"debit-{key}-{uuid.uuid4().hex[:12]}", player_id, currency, amount, round_id)


class RemoteWallet:
    """Drives an :class:`OperatorWallet` with retries and an outbox of calls to deliver.

    ``journal``: where each debit is recorded before it is sent (:mod:`twentyone.server.journal`), so that one a
    process killed before its stake committed is rolled back by the next; none, for tests of the wallet alone.
    """

    def __init__(self, wallet: OperatorWallet, attempts: int = 3, journal: DebitJournal | None = None) -> None:
        self.wallet = wallet
        self.attempts = attempts
        self.journal = journal
        # Rollbacks owed by transactions that did not commit, until a transaction writes them to the outbox.
        self._owed: list[Debit] = []
        self._owed_lock = threading.Lock()
        # Per thread: the outbox rows its committed transactions wrote, for it to send at once (deliver(fresh=True)).
        self._fresh = threading.local()
        # The outbox calls a delivery of this process is sending now (by tx id): another delivery leaves them to it.
        self._sending: set[str] = set()
        self._sending_lock = threading.Lock()
        # Balances the wallet gave that the game could not use, counted by kind for the log (_unusable_balance).
        self._unusable: dict[str, int] = {}
        self._unusable_lock = threading.Lock()

    def balance(self, player_id: int, currency: str) -> int:
        """The operator's balance of the player in ``currency``, a timeout retried; its refusal raised as it came.

        An answer that is not an ``int`` from 0 to :data:`MAX_AMOUNT` (``"abc"``, ``None``, ``12.5``, ``True``,
        ``-5``, ``1e30``), or an exception the contract does not define (a bug in the wallet), is logged and raised as
        the wallet being unavailable (:data:`UNUSABLE`, a 503 with ``Retry-After``): nothing is changed on it. Before,
        such an answer went on into the game: a string or ``None`` failed later as a plain-text 500 naming no wallet,
        and a float or a negative balance reached ``/me`` and a seat's ``balance_before`` (found by an integrator's
        trial).
        """
        for attempt in range(self.attempts):
            try:
                answer = self.wallet.balance(player_owner(player_id), currency)
            except WalletTimeout:
                if attempt == self.attempts - 1:
                    raise
                continue
            except WalletError:
                raise
            except Exception as error:
                kind = type(error).__name__
                self._unusable_balance(kind, f"raised {kind} in {_balance_call(player_id, currency)}", error)
                raise WalletError(UNUSABLE, 503) from None
            if isinstance(answer, int) and not isinstance(answer, bool) and 0 <= answer <= MAX_AMOUNT:
                return int(answer)  # an int subclass (an IntEnum) as the plain int it stands for
            kind = type(answer).__name__
            self._unusable_balance(kind, f"answered {_balance_call(player_id, currency)} with {kind} "
                                         f"{_shortened(answer)}, not an int from 0 to {MAX_AMOUNT}", None)
            raise WalletError(UNUSABLE, 503)
        raise WalletTimeout()  # pragma: no cover

    def _unusable_balance(self, kind: str, what: str, error: Exception | None) -> None:
        """Log a balance the wallet gave that the game cannot use, naming the wallet and what came back (``what``;
        ``kind``, the type of it; with the traceback of an exception): at the 1st, 2nd, 4th, 8th... of that kind in
        this process, as the outbox logs a refused call, since a broken wallet answers every player so (a close of
        betting asks each seat)."""
        with self._unusable_lock:
            count = self._unusable[kind] = self._unusable.get(kind, 0) + 1
        if count & (count - 1) == 0:
            wallet = f"{type(self.wallet).__module__}.{type(self.wallet).__qualname__}"
            log.error("the operator's wallet %s %s: answered as the wallet being unavailable (503), nothing changed "
                      "(%d of this kind in this process)", wallet, what, count, exc_info=error)

    def debit_now(self, session: Session, player_id: int, currency: str, amount: int, round_id: int | None,
                  key: str) -> str:
        """Debit the operator's wallet for a stake that ``session``'s transaction records; a timeout is retried with
        the same id, then owed a rollback.

        The id (``debit-{key}-{nonce}``) is new at each attempt of the work: a work that does not commit has its
        debit rolled back, and a retry of it must not show the operator an id it rolled back (nor, on SQLite, a later
        round that takes the number of a round rolled back). The debit is journaled before it is sent, and written to
        the outbox as done in the transaction of its stake: after a commit whose answer was lost, or a process's
        death, that row tells that the debit stands.
        """
        debit = _new_debit(player_id, currency, amount, round_id, key)
        if self.journal is not None:
            self.journal.note([debit])
        return self._record(session, debit, self._send(debit))

    def debit_all(self, session: Session, currency: str, round_id: int,
                  wanted: Sequence[tuple[int, int, str]]) -> list[str | WalletError]:
        """:meth:`debit_now` for each (player, amount, key) of ``wanted`` (a close's seats that joined late):
        :meth:`send_all`, then :meth:`record_all` in ``session``'s transaction."""
        return self.record_all(session, self.send_all(currency, round_id, wanted))

    def send_all(self, currency: str, round_id: int, wanted: Sequence[tuple[int, int, str]]) -> list[SentDebit]:
        """Debit each (player, amount, key) of ``wanted``, outside any transaction: journaled with one sync, sent at
        most :data:`PARALLEL` at a time. Each debit sent must then be recorded (:meth:`record_all`) or released
        (:meth:`release`) in a transaction, or owed a rollback (:meth:`owe_all`) if none comes."""
        debits = [_new_debit(player_id, currency, amount, round_id, key) for player_id, amount, key in wanted]
        if not debits:
            return []
        if self.journal is not None:
            self.journal.note(debits)
        if len(debits) == 1:  # a private deal's or a decision's: no pool of threads to start for it
            return [(debits[0], self._send(debits[0]))]
        with ThreadPoolExecutor(max_workers=min(PARALLEL, len(debits))) as pool:
            return list(zip(debits, pool.map(self._send, debits), strict=True))

    def record_all(self, session: Session, sent: Sequence[SentDebit]) -> list[str | WalletError]:
        """Record what :meth:`send_all` answered in ``session``'s transaction, in order: each the debit's id, or the
        wallet's refusal or silence (a debit that may have applied has its rollback in the outbox). Any other error
        is raised once every debit is recorded."""
        answers: list[str | WalletError] = []
        failure: Exception | None = None
        for debit, outcome in sent:
            try:
                answers.append(self._record(session, debit, outcome))
            except WalletError as error:
                answers.append(error)
            except Exception as error:  # raised below, once every debit is recorded
                failure = failure or error
        if failure is not None:
            raise failure
        return answers

    def release(self, session: Session, sent: Sequence[SentDebit]) -> None:
        """Debits :meth:`send_all` made whose stakes ``session``'s transaction will not record (the seat left, or the
        round closed elsewhere): their rollbacks go to the outbox with it, and are owed if it does not commit."""
        self._undo(sent, lambda debit: self._unsure(session, debit))

    def owe_all(self, sent: Sequence[SentDebit]) -> None:
        """Debits :meth:`send_all` made that no transaction recorded nor released: each is owed a rollback."""
        self._undo(sent, self.owe_rollback)

    def release_now(self, session: Session, sent: Sequence[SentDebit]) -> None:
        """:meth:`release`, each rollback sent at once rather than after the commit: before a debit of the same
        transaction that the player's balance must cover without these (a deal's bets changed while its debit was
        sent ahead: the debit for the bets as they stand was refused where the balance covered either debit but not
        both, found by review). A rollback the operator confirms (a timeout retried, as a debit's is) is written to the
        outbox as done with this transaction, and owed again if it does not commit: the operator applies a rollback
        once, and the outbox names every debit the operator saw either way (found by review). One it does
        not confirm goes there pending, as :meth:`release` sends it."""
        unconfirmed: list[SentDebit] = []
        for debit, outcome in sent:
            if outcome[0] == "refused":
                self._resolved([debit.tx_id])
            elif not self._roll_back_now(debit.tx_id):  # the outbox retries it after the commit
                unconfirmed.append((debit, outcome))
            else:
                after_transaction(session, partial(self._resolved, [debit.tx_id]), partial(self.owe_rollback, debit))
                defer(session, RECORD_DEBIT, _outbox_row(debit, "rollback", "done"))
        self.release(session, unconfirmed)

    def _roll_back_now(self, tx_id: str) -> bool:
        """Send a debit's rollback now, a timeout retried with the same id: whether the operator confirmed it."""
        for _ in range(self.attempts):
            try:
                self.wallet.rollback(tx_id)
            except WalletTimeout:
                continue
            except Exception:  # refused, or an answer the contract does not define
                return False
            return True
        return False

    def _undo(self, sent: Sequence[SentDebit], roll_back: Callable[[Debit], object]) -> None:
        """``roll_back`` each debit of ``sent`` that may have been taken; one the operator refused took nothing."""
        for debit, (verdict, _error) in sent:
            if verdict == "refused":
                self._resolved([debit.tx_id])
            else:
                roll_back(debit)

    def balances(self, player_ids: Sequence[int], currency: str) -> list[int | WalletError]:
        """:meth:`balance` of each player, at most :data:`PARALLEL` asked at a time: each a balance, or the error."""
        def ask(player_id: int) -> int | WalletError:
            try:
                return self.balance(player_id, currency)
            except WalletError as error:
                return error

        if not player_ids:
            return []
        with ThreadPoolExecutor(max_workers=min(PARALLEL, len(player_ids))) as pool:
            return list(pool.map(ask, player_ids))

    def _send(self, debit: Debit) -> tuple[str, Exception | None]:
        """Send ``debit``, retrying a timeout with its id: ("done", None), ("refused", the refusal: nothing was taken),
        or ("unsure", the error: it may have been taken, its answer lost). Touches no session (:meth:`debit_all` sends
        from a pool's threads)."""
        timed_out = False
        for _ in range(self.attempts):
            try:
                self.wallet.debit(player_owner(debit.player_id), debit.currency, debit.amount, debit.tx_id,
                                  debit.round_id)
            except WalletTimeout:
                timed_out = True
                continue
            except Exception as error:  # judged here, raised by _record
                # Refused: nothing was taken; unless an attempt before, unanswered, took it, or the answer is not one
                # the contract defines.
                return ("unsure" if timed_out or not isinstance(error, WalletError) else "refused"), error
            return "done", None
        return "unsure", WalletTimeout("The wallet did not confirm the stake; nothing was dealt and the stake is "
                                       "rolled back.")

    def _record(self, session: Session, debit: Debit, outcome: tuple[str, Exception | None]) -> str:
        """Record what :meth:`_send` answered in ``session``'s transaction: the debit's id, or its error raised."""
        verdict, error = outcome
        if verdict == "done":
            # Noted before the row is written: a write that fails leaves the debit owed, not forgotten.
            after_transaction(session, lambda: self._resolved([debit.tx_id]), lambda: self.owe_rollback(debit))
            defer(session, RECORD_DEBIT, _outbox_row(debit, "debit", "done"))
            return debit.tx_id
        if verdict == "refused":
            self._resolved([debit.tx_id])
        else:
            self._unsure(session, debit)
        assert error is not None
        raise error

    def send_after_commit(self, session: Session, tx_ids: Sequence[str]) -> None:
        """Have the thread that commits this transaction send these outbox rows at its next :meth:`deliver` with
        ``fresh`` (right after its commit, on the request path); the outbox's tick sends what that does not."""
        after_transaction(session, lambda: self._fresh_ids().extend(tx_ids), lambda: None)

    def _fresh_ids(self) -> list[str]:
        ids: list[str] | None = getattr(self._fresh, "ids", None)
        if ids is None:
            ids = self._fresh.ids = []
        return ids

    def _take_fresh(self) -> list[str]:
        ids, self._fresh.ids = self._fresh_ids(), []
        return ids

    def waiting_here(self) -> bool:
        """Whether this thread's commits left outbox rows for it to send, or this process owes rollbacks."""
        return bool(getattr(self._fresh, "ids", None)) or bool(self._owed)

    def _unsure(self, session: Session, debit: Debit) -> None:
        """A debit that may have reached the operator, its answer lost: its rollback goes to the outbox with this
        transaction if it commits (a seat that sits out of a close of betting), and is owed if it does not."""
        after_transaction(session, lambda: self._resolved([debit.tx_id]), lambda: self.owe_rollback(debit))
        self._queue_rollbacks(session, [debit])

    def _resolved(self, tx_ids: list[str]) -> None:
        if self.journal is not None:
            self.journal.resolved(tx_ids)

    def owe_rollback(self, debit: Debit) -> None:
        """Note a debit to roll back: written to the outbox by the next :meth:`deliver` (the next tick's, in every
        process, or the one after this process's next commit), and sent by the outbox's process."""
        with self._owed_lock:
            self._owed.append(debit)

    def _owe_again(self, owed: list[Debit]) -> None:
        with self._owed_lock:
            self._owed.extend(owed)

    def owes(self) -> bool:
        """Whether rollbacks wait to be written to the outbox (by :meth:`deliver`): owed in this process, or left in a
        dead process's journal in this data directory."""
        return bool(self._owed) or (self.journal is not None and self.journal.any_abandoned())

    def _write_owed(self, session: Session) -> None:
        """Write the rollbacks owed to the outbox: each is owed again if this transaction does not commit."""
        with self._owed_lock:
            owed, self._owed = self._owed, []
        if owed:  # noted first: a write that fails leaves them owed, not forgotten
            after_transaction(session, lambda: self._resolved([debit.tx_id for debit in owed]),
                              lambda: self._owe_again(owed))
            self._queue_rollbacks(session, owed)

    def _recover_journals(self, session: Session) -> None:
        """Queue the rollbacks of the debits dead processes' journals hold that the outbox does not know; each
        journal goes once this transaction commits."""
        if self.journal is None:
            return
        for journal in self.journal.abandoned():
            after_transaction(session, journal.settled, journal.release)
            self._queue_rollbacks(session, journal.debits)

    def _queue_rollbacks(self, session: Session, debits: Sequence[Debit]) -> None:
        """A rollback of each debit in the outbox, unless the outbox knows it: a debit recorded done committed with
        its stake (a commit whose answer was lost with the connection, or the process), and stands; a rollback is
        queued already, or is being queued by another transaction (two processes recovering the two copies a journal
        carried to a new file left behind: on PostgreSQL this one waits for that one, then adds nothing)."""
        if not debits:
            return
        dialect = session.get_bind().dialect.name
        insert_of = postgresql_insert if dialect == "postgresql" else sqlite_insert
        statement = insert_of(WALLET_CALLS).on_conflict_do_nothing(index_elements=["tx_id"])
        session.execute(statement, [_outbox_row(debit, "rollback", "pending") for debit in debits])
        self.send_after_commit(session, [debit.tx_id for debit in debits])

    def queue(self, session: Session, player_id: int, currency: str, kind: str, amount: int, tx_id: str,
              round_id: int | None) -> None:
        """Record a call to make after this transaction commits (the outbox), sent by the thread that commits it."""
        if session.scalars(select(WalletCall).where(WalletCall.tx_id == tx_id)).first() is None:
            session.add(WalletCall(tx_id=tx_id, player_id=player_id, currency=currency, kind=kind, amount=amount,
                                   round_id=round_id, status="pending", attempts=0, created_at=now()))
            self.send_after_commit(session, [tx_id])

    def deliver(self, write: Sessions, read: Sessions, recover: bool = False, send: bool = True,
                fresh: bool = False) -> int:
        """Write the rollbacks owed to the outbox, then send its pending calls; each is idempotent, so a retry after a
        crash is safe. ``write`` and ``read`` open a write transaction and a read.

        ``recover`` (the timer's tick): first the rollbacks dead processes' journals owe. ``send``: False in a
        process that does not deliver the outbox, which only writes what it owes. ``fresh`` (after a request's
        commit): only the rows this thread's commits wrote (:meth:`send_after_commit`), so that a request never
        waits on the operator for calls that are not its own (another player's credit refused for an hour: the
        outbox's tick retries it).

        No transaction is open while the operator is called: the pending rows are read, sent, and their outcomes
        written by a second, short transaction. On SQLite a write transaction holds the one write lock of the whole
        database, and a call over the network inside one held up every other player's writes for as long as the
        operator took to answer. Two deliveries of this process never send one call at once (the tick's and a
        request's: the second leaves it to the first, :meth:`_claim`). Two of different processes may, and one may send
        a call again that another has just recorded done: the operator applies it once (the contract: idempotent by
        ``tx_id``), and an outcome written after it was recorded done counts no attempt (its row is pending no
        longer).
        """
        ids = self._take_fresh()  # sent now, or by the tick: in both cases no longer this thread's to send
        if self._owed or recover:
            with write() as session:
                self._write_owed(session)
                if recover:
                    self._recover_journals(session)
            ids += self._take_fresh()  # the rollbacks just written
        if not send or (fresh and not ids):
            return 0
        pending = select(WALLET_CALLS).where(WALLET_CALLS.c.status == "pending")
        pending = pending.where(WALLET_CALLS.c.tx_id.in_(ids)) if fresh else pending
        with read() as session:
            rows = session.execute(pending.order_by(WALLET_CALLS.c.id)).all()
        calls = self._claim(rows)  # once the read ended: a read that fails at its end claims nothing
        try:
            outcomes = self._send_calls(calls)
            if outcomes:
                with write() as session:
                    for call, error in outcomes:  # a call another delivery recorded done meanwhile stays done
                        session.execute(update(WALLET_CALLS).where(WALLET_CALLS.c.tx_id == call.tx_id,
                                                                   WALLET_CALLS.c.status == "pending")
                                        .values(attempts=WALLET_CALLS.c.attempts + 1, last_error=error,
                                                status="pending" if error is not None else "done"))
        finally:  # after its outcome is written: a delivery that reads the row later reads it done
            with self._sending_lock:
                self._sending.difference_update(call.tx_id for call in calls)
        return sum(1 for _, error in outcomes if error is None)

    def _claim(self, calls: Sequence[Row[Any]]) -> list[Row[Any]]:
        """Of ``calls``, those no other delivery of this process is sending: this one's to send, until it lets go.
        Before, the tick and a request sent one call at once, each counting an attempt (and the listing of calls,
        ``GET /admin/wallet/calls``, overstated them)."""
        with self._sending_lock:
            mine = [call for call in calls if call.tx_id not in self._sending]
            self._sending.update(call.tx_id for call in mine)
        return mine

    def _send_calls(self, calls: Sequence[Row[Any]]) -> list[tuple[Row[Any], str | None]]:
        """Send ``calls``, at most :data:`PARALLEL` at once: each with what :meth:`_send_call` answered. They were sent
        one after the other, so a shared round's settlement waited for the operator to answer each winner in turn
        (1 s a credit: a table of 7 winners, 7 s), and a backlog after an outage drained one call at a time. The
        outbox holds only credits and rollbacks of debits, each of its own id and none depending on another."""
        if len(calls) <= 1:  # a private round's credit: no pool of threads to start for it
            return [(call, self._send_call(call)) for call in calls]
        with ThreadPoolExecutor(max_workers=min(PARALLEL, len(calls))) as pool:
            return list(zip(calls, pool.map(self._send_call, calls), strict=True))

    def _send_call(self, call: Row[Any]) -> str | None:
        """Send one outbox call: None once the operator took it, else why not (it stays pending)."""
        try:
            if call.kind == "credit":
                self.wallet.credit(player_owner(call.player_id), call.currency, call.amount, call.tx_id, call.round_id)
            elif call.kind == "debit":
                self.wallet.debit(player_owner(call.player_id), call.currency, call.amount, call.tx_id, call.round_id)
            else:
                self.wallet.rollback(call.tx_id)
        except WalletTimeout as error:
            return error.detail
        except Exception as error:  # refused, or an error the contract does not define: this call alone waits
            # Nothing is given up (a credit is a player's money): the call stays pending, with its last error, for the
            # next delivery and for the operator's reconciliation (GET /admin/wallet/calls); logged at its 1st, 2nd,
            # 4th, 8th... refusal.
            detail = str(getattr(error, "detail", error))[:500]
            attempt = call.attempts + 1
            if attempt & (attempt - 1) == 0:
                log.warning("operator wallet: %s %s refused at attempt %d (%s); it stays pending", call.kind,
                            call.tx_id, attempt, detail)
            return detail
        return None


class Wallet(Protocol):
    """Where players' money lives; the round logic moves money only through this.

    Two implementations: :class:`LedgerWallet` (the built-in double-entry ledger) and
    :class:`OperatorLedgerWallet` (an operator's wallet, shadowed in the ledger for reports and limits).
    Every method works inside the caller's transaction.
    """

    keeps_balances: bool  # False when balances live with an operator (no demo credits, no operator credit)

    def balance(self, session: Session, player_id: int, currency: str) -> int: ...
    def balance_known(self, player_id: int, currency: str) -> AbstractContextManager[None]:
        """Around a transaction that reads this player's balance: an operator's wallet is asked here, before it
        begins, and :meth:`balance` answers with that inside the block (until a debit of the player's), so that no
        transaction waits on the network; a refusal or a silence is raised there, where the balance is read, as if
        it were asked then (a decision's refusal carries its legal actions). The built-in ledger reads it in the
        transaction, under its lock."""
    def lock(self, session: Session, player_id: int, currency: str) -> None: ...
    def lock_all(self, session: Session, player_ids: Sequence[int], currency: str) -> None:
        """:meth:`lock` for several players, in the order every transaction that holds several takes them."""
    def debit_ahead(self, session: Session, player_id: int, currency: str, amount: int, round_id: int,
                    key: str) -> str | None:
        """Take a stake's money where balances live before :meth:`stake` records it (passed its answer as
        ``debited``): an operator's debit, a call over the network made before the caller takes its locks, owed a
        rollback if this transaction does not commit. None from the built-in ledger, whose stake is its rows."""
    def stake(self, session: Session, player_id: int, currency: str, amount: int, round_id: int, key: str,
              debited: str | None = None) -> None: ...
    def balances_ahead(self, player_ids: Sequence[int], currency: str) -> list[int | WalletError]:
        """Balances where they live, asked before the caller takes its locks: at an operator's wallet, several at once
        (a close of betting's seats), each a balance or the wallet's error. Not the built-in ledger's: read under
        the lock."""
    def debit_all_ahead(self, session: Session, currency: str, round_id: int,
                        wanted: Sequence[tuple[int, int, str]]) -> list[str | WalletError]:
        """:meth:`debit_ahead` for each (player, amount, key), several at once: each the debit's id or the error."""
    def send_debits(self, currency: str, round_id: int, wanted: Sequence[tuple[int, int, str]]) -> list[SentDebit]:
        """Debit each (player, amount, key) at an operator's wallet with no transaction open, several at once; each
        must then be recorded (:meth:`record_debits`) or released (:meth:`release_debits`) by a transaction, or owed
        a rollback (:meth:`owe_debits`). Not the built-in ledger's, whose stakes are its rows."""
    def record_debits(self, session: Session, sent: Sequence[SentDebit]) -> list[str | WalletError]:
        """Record debits :meth:`send_debits` made, for stakes this transaction records: each the debit's id, or the
        wallet's refusal or silence."""
    def release_debits(self, session: Session, sent: Sequence[SentDebit]) -> None:
        """Roll back, with this transaction, debits :meth:`send_debits` made whose stakes it will not record."""
    def release_debits_now(self, session: Session, sent: Sequence[SentDebit]) -> None:
        """:meth:`release_debits`, the rollbacks sent at once: before a debit the balance must cover without them."""
    def owe_debits(self, sent: Sequence[SentDebit]) -> None:
        """Debits :meth:`send_debits` made that no transaction recorded nor released: owed a rollback."""
    def cancel_debit(self, session: Session, tx_id: str) -> None:
        """Roll back a debit :meth:`debit_ahead` made whose stake this transaction will not record (a seat its limits
        refuse once its account is locked): with this transaction's commit, through the outbox."""
    def pay(self, session: Session, currency: str, amounts: Mapping[int, int], kind: str, round_id: int) -> None:
        """Pay each player ``amounts[player_id]`` (a round's wins or refunds); the call to an operator's wallet
        carries the id :func:`pay_key` gives (``credit-{round}-{player}`` for a win, ``void-...`` for a refund), the
        same at every retry."""
    def credit(self, session: Session, player_id: int, currency: str, amount: int) -> None:
        """Add ``amount`` to the player's balance (a demo credit, an operator's credit) or, negative, take it away (an
        operator's debit): the built-in ledger's, a transfer with the house; an operator's wallet refuses."""
    def balances_after(self, session: Session, player_ids: list[int], currency: str) -> dict[int, int | None]: ...
    def deliver(self, write: Sessions, read: Sessions, recover: bool = False, send: bool = True,
                fresh: bool = False) -> int:
        """Write the rollbacks owed to the outbox and send the operator's wallet what it holds, in transactions of its
        own (``write``, ``read``) and none open while the operator is called (``recover``: first what dead processes'
        journals owe; ``send=False``: write, and leave the sending to the outbox's process; ``fresh``: send only what
        this thread's commits wrote)."""
    def waiting_here(self) -> bool:
        """Whether this thread's commits left outbox calls for it to send, or this process owes rollbacks."""
    def close(self) -> None:
        """At a clean stop."""
    def owes(self) -> bool:
        """Whether rollbacks of debits wait to be written to the outbox (by :meth:`deliver`)."""


class LedgerWallet:
    """The built-in wallet: balances are sums of ledger rows in the game's own database."""

    keeps_balances = True

    def __init__(self) -> None:
        self.ids = AccountIds()

    def balance(self, session: Session, player_id: int, currency: str) -> int:
        return ledger_balance(session, player_id, currency)

    def balance_known(self, player_id: int, currency: str) -> AbstractContextManager[None]:
        return nullcontext()

    def lock(self, session: Session, player_id: int, currency: str) -> None:
        lock_player(session, player_id, currency, self.ids)

    def lock_all(self, session: Session, player_ids: Sequence[int], currency: str) -> None:
        lock_players(session, player_ids, currency, self.ids)

    def debit_ahead(self, session: Session, player_id: int, currency: str, amount: int, round_id: int,
                    key: str) -> str | None:
        return None

    def stake(self, session: Session, player_id: int, currency: str, amount: int, round_id: int, key: str,
              debited: str | None = None) -> None:
        transfer(session, player_id, currency, -amount, "stake", round_id, self.ids)

    def balances_ahead(self, player_ids: Sequence[int], currency: str) -> list[int | WalletError]:
        raise AssertionError("the built-in ledger's balances are read under the lock")  # pragma: no cover

    def debit_all_ahead(self, session: Session, currency: str, round_id: int,
                        wanted: Sequence[tuple[int, int, str]]) -> list[str | WalletError]:
        raise AssertionError("the built-in ledger debits nothing ahead")  # pragma: no cover

    def send_debits(self, currency: str, round_id: int, wanted: Sequence[tuple[int, int, str]]) -> list[SentDebit]:
        raise AssertionError("the built-in ledger debits nothing ahead")  # pragma: no cover

    def record_debits(self, session: Session, sent: Sequence[SentDebit]) -> list[str | WalletError]:
        raise AssertionError("the built-in ledger debits nothing ahead")  # pragma: no cover

    def release_debits(self, session: Session, sent: Sequence[SentDebit]) -> None:
        raise AssertionError("the built-in ledger debits nothing ahead")  # pragma: no cover

    def release_debits_now(self, session: Session, sent: Sequence[SentDebit]) -> None:
        raise AssertionError("the built-in ledger debits nothing ahead")  # pragma: no cover

    def owe_debits(self, sent: Sequence[SentDebit]) -> None:
        raise AssertionError("the built-in ledger debits nothing ahead")  # pragma: no cover

    def cancel_debit(self, session: Session, tx_id: str) -> None:
        raise AssertionError("the built-in ledger debits nothing ahead")  # pragma: no cover

    def pay(self, session: Session, currency: str, amounts: Mapping[int, int], kind: str, round_id: int) -> None:
        transfers(session, currency, amounts, kind, round_id, self.ids)

    def credit(self, session: Session, player_id: int, currency: str, amount: int) -> None:
        transfer(session, player_id, currency, amount, "credit" if amount > 0 else "debit", None, self.ids)

    def balances_after(self, session: Session, player_ids: list[int], currency: str) -> dict[int, int | None]:
        """Balances once this transaction's transfers count (for the round's record).

        Transfers are Core statements, applied as they run: nothing needs flushing first.
        """
        return dict(ledger_balances(session, player_ids, currency))

    def deliver(self, write: Sessions, read: Sessions, recover: bool = False, send: bool = True,
                fresh: bool = False) -> int:
        return 0

    def waiting_here(self) -> bool:
        return False

    def close(self) -> None:
        return None

    def owes(self) -> bool:
        return False


class OperatorLedgerWallet(LedgerWallet):
    """An operator's wallet: debits confirmed before the deal, credits sent from an outbox after commit.

    The ledger still records every stake and payment (reports, loss limits), but balances are the operator's.
    """

    keeps_balances = False

    def __init__(self, wallet: OperatorWallet, journal: DebitJournal | None = None) -> None:
        super().__init__()
        self.remote = RemoteWallet(wallet, journal=journal)
        # .balance: (player, currency, balance or the wallet's error) asked ahead by this thread
        self._known = threading.local()

    def balance(self, session: Session, player_id: int, currency: str) -> int:
        known: tuple[int, str, int | WalletError] | None = getattr(self._known, "balance", None)
        if known is not None and known[:2] == (player_id, currency):
            if isinstance(known[2], WalletError):
                raise known[2]
            return known[2]
        return self.remote.balance(player_id, currency)

    @contextmanager
    def balance_known(self, player_id: int, currency: str) -> Iterator[None]:
        balance: int | WalletError
        try:
            balance = self.remote.balance(player_id, currency)
        except WalletError as error:
            balance = error
        self._known.balance = (player_id, currency, balance)
        try:
            yield
        finally:
            self._known.balance = None

    def _debited(self, player_id: int) -> None:
        """The balance asked ahead is the operator's no longer."""
        known = getattr(self._known, "balance", None)
        if known is not None and known[0] == player_id:
            self._known.balance = None

    def debit_ahead(self, session: Session, player_id: int, currency: str, amount: int, round_id: int,
                    key: str) -> str | None:
        self._debited(player_id)
        return self.remote.debit_now(session, player_id, currency, amount, round_id, key)

    def stake(self, session: Session, player_id: int, currency: str, amount: int, round_id: int, key: str,
              debited: str | None = None) -> None:
        if debited is None:
            self._debited(player_id)
            self.remote.debit_now(session, player_id, currency, amount, round_id, key)
        super().stake(session, player_id, currency, amount, round_id, key)

    def balances_ahead(self, player_ids: Sequence[int], currency: str) -> list[int | WalletError]:
        return self.remote.balances(player_ids, currency)

    def debit_all_ahead(self, session: Session, currency: str, round_id: int,
                        wanted: Sequence[tuple[int, int, str]]) -> list[str | WalletError]:
        return self.remote.debit_all(session, currency, round_id, wanted)

    def send_debits(self, currency: str, round_id: int, wanted: Sequence[tuple[int, int, str]]) -> list[SentDebit]:
        return self.remote.send_all(currency, round_id, wanted)

    def record_debits(self, session: Session, sent: Sequence[SentDebit]) -> list[str | WalletError]:
        return self.remote.record_all(session, sent)

    def release_debits(self, session: Session, sent: Sequence[SentDebit]) -> None:
        self.remote.release(session, sent)

    def release_debits_now(self, session: Session, sent: Sequence[SentDebit]) -> None:
        self.remote.release_now(session, sent)

    def owe_debits(self, sent: Sequence[SentDebit]) -> None:
        self.remote.owe_all(sent)

    def cancel_debit(self, session: Session, tx_id: str) -> None:
        # Its row, written as done with the debit, becomes the rollback to send; the journal marks it resolved when
        # this commits (the rollback is in the outbox then), as it would the stake.
        defer(session, CANCEL_DEBIT, {"debit": tx_id})
        self.remote.send_after_commit(session, [tx_id])

    def pay(self, session: Session, currency: str, amounts: Mapping[int, int], kind: str, round_id: int) -> None:
        super().pay(session, currency, amounts, kind, round_id)
        for player_id, amount in amounts.items():
            if amount:
                self.remote.queue(session, player_id, currency, "credit", amount, pay_key(kind, round_id, player_id),
                                  round_id)

    def credit(self, session: Session, player_id: int, currency: str, amount: int) -> None:
        raise WalletError("Balances live in the operator's wallet on this server.")

    def balances_after(self, session: Session, player_ids: list[int], currency: str) -> dict[int, int | None]:
        return dict.fromkeys(player_ids)  # the operator's wallet knows; the game does not ask per round

    def deliver(self, write: Sessions, read: Sessions, recover: bool = False, send: bool = True,
                fresh: bool = False) -> int:
        return self.remote.deliver(write, read, recover=recover, send=send, fresh=fresh)

    def waiting_here(self) -> bool:
        return self.remote.waiting_here()

    def close(self) -> None:
        if self.remote.journal is not None:
            self.remote.journal.close()

    def owes(self) -> bool:
        return self.remote.owes()
