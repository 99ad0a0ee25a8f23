"""The database schema (SQLAlchemy 2). Alembic migrations in ``migrations/`` create it.

Money is integers in minor units. The wallet is a double-entry ledger: every
movement is a transfer of two rows that sum to zero (a player's account and the
house's), and a balance is the sum of an account's rows.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar, cast

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    String,
    Table,
    Text,
    UniqueConstraint,
    false,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    type_annotation_map: ClassVar[dict[Any, Any]] = {dict[str, Any]: JSON, list[Any]: JSON}


class Player(Base):
    __tablename__ = "players"
    # Names are one to a player in any case: sign-ups and sign-ins compare them in lower case (migration 0021).
    __table_args__ = (Index("ix_players_name_lower", text("lower(name)")),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    password_hash: Mapped[str | None] = mapped_column(String(255), nullable=True)
    role: Mapped[str] = mapped_column(String(16), default="player")
    guest: Mapped[bool] = mapped_column(Boolean, default=False)
    settings: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    limits: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    session_started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class Token(Base):
    __tablename__ = "tokens"
    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    player_id: Mapped[int] = mapped_column(ForeignKey("players.id"), index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class Account(Base):
    __tablename__ = "accounts"
    __table_args__ = (UniqueConstraint("owner", "currency"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    owner: Mapped[str] = mapped_column(String(32))  # "player:<id>" or "house"
    currency: Mapped[str] = mapped_column(String(3))
    version: Mapped[int] = mapped_column(Integer, default=0)  # bumped by wallet.lock_player to take the row's lock
    # A player's balance, kept with every transfer so that reading it does not sum a growing ledger;
    # the ledger stays the record, and the audits check the two agree. The house's is not kept here
    # (it would make one row every transaction waits on): it is minus the sum of the players'.
    balance: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")


class LedgerEntry(Base):
    __tablename__ = "ledger"
    # A daily loss limit sums an account's rows since midnight: one range of this index (migration 0010).
    __table_args__ = (Index("ix_ledger_account_created", "account_id", "created_at"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    transfer_id: Mapped[str] = mapped_column(String(64), index=True)
    account_id: Mapped[int] = mapped_column(ForeignKey("accounts.id"))
    amount: Mapped[int] = mapped_column(BigInteger)
    kind: Mapped[str] = mapped_column(String(16))  # stake, win, refund, void, credit
    round_id: Mapped[int | None] = mapped_column(ForeignKey("rounds.id"), nullable=True, index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class TableConfig(Base):
    __tablename__ = "table_configs"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    spec: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class Shoe(Base):
    """A shuffled shoe: its order and salt stay server-side until it is finished, then are revealed."""

    __tablename__ = "shoes"
    # The next round's shoe is found among a table's (or a player's) unfinished shoes, never by reading
    # past the finished ones: a private table leaves one finished shoe per round dealt (migration 0004).
    __table_args__ = (Index("ix_shoes_table_player_finished", "table_id", "player_id", "finished"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    table_id: Mapped[str] = mapped_column(String(64))
    player_id: Mapped[int | None] = mapped_column(Integer, nullable=True)  # private tables: one stream each
    cards: Mapped[str] = mapped_column(Text)
    salt: Mapped[str] = mapped_column(String(64))
    commitment: Mapped[str] = mapped_column(String(64))
    position: Mapped[int] = mapped_column(Integer, default=0)
    cut_card: Mapped[int | None] = mapped_column(Integer, nullable=True)
    finished: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    # The game it was shuffled for (migration 0017): a table whose game changed deals no round from it. None only for
    # a shoe shuffled before 0017 that no round had dealt from, which fits no table (Shoes.retire_unfit finishes it).
    variant: Mapped[str | None] = mapped_column(String(32), nullable=True)


class Round(Base):
    __tablename__ = "rounds"
    # A table's open rounds without reading its settled ones, which grow with every round (migration 0004), and
    # its newest round of a status from the end of the index (id in it: PostgreSQL's index has no row id; 0006).
    # The rounds that ended in a period, for the operator's report, without reading the others (0009).
    # A status's rounds newest first, at any table, from the end of its range (0014: PostgreSQL's index on status
    # alone kept no order of the ids, and a page of a rare status read thousands of rounds).
    # On SQLite, a number once taken is never given again (AUTOINCREMENT, migration 0011: server/round_ids.py).
    __table_args__ = (Index("ix_rounds_table_status_id", "table_id", "status", "id"),
                      Index("ix_rounds_status_settled_at", "status", "settled_at"),
                      Index("ix_rounds_status_id", "status", "id"),
                      {"sqlite_autoincrement": True})
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    table_id: Mapped[str] = mapped_column(String(64))
    variant: Mapped[str] = mapped_column(String(32))
    # The currency its stakes are taken and paid in, whatever its table's configuration says later (migration 0013;
    # None only for a round from before it that held no money, at a table configured nowhere then).
    currency: Mapped[str | None] = mapped_column(String(3), nullable=True)
    status: Mapped[str] = mapped_column(String(16))  # betting, playing, settled, void
    shoe_id: Mapped[int] = mapped_column(ForeignKey("shoes.id"))
    shoe_start: Mapped[int] = mapped_column(Integer)
    actions: Mapped[list[Any]] = mapped_column(JSON, default=list)  # before migration 0003; now round_actions
    decision_since: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    betting_closes_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    void_reason: Mapped[str | None] = mapped_column(Text, nullable=True)
    version: Mapped[int] = mapped_column(Integer, default=0)
    # A common draw played in lockstep (every round since migration 0005); false: each player at their own pace.
    lockstep: Mapped[bool] = mapped_column(Boolean, default=True, server_default=false())
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    settled_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)  # settled or void


class RoundAction(Base):
    """One decision of a round, appended as it is taken: the round's log, in order (``seq``)."""

    __tablename__ = "round_actions"
    __table_args__ = (UniqueConstraint("round_id", "seq"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    round_id: Mapped[int] = mapped_column(ForeignKey("rounds.id"), index=True)
    seq: Mapped[int] = mapped_column(Integer)
    player_id: Mapped[int] = mapped_column(Integer)
    action: Mapped[str] = mapped_column(String(32))
    source: Mapped[str] = mapped_column(String(16))


class RoundSeat(Base):
    """One player's part in a round: their bets, what they staked and got back, balances around it."""

    __tablename__ = "round_seats"
    # A player's rounds newest first (their history), and a round's first seats in order (a power round's
    # view lists 48 of a thousand), straight from the indexes (migrations 0004 and 0006).
    __table_args__ = (UniqueConstraint("round_id", "player_id"),
                      Index("ix_round_seats_player_round", "player_id", "round_id"),
                      Index("ix_round_seats_round_position", "round_id", "position"))
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    round_id: Mapped[int] = mapped_column(ForeignKey("rounds.id"))
    player_id: Mapped[int] = mapped_column(ForeignKey("players.id"))
    position: Mapped[int] = mapped_column(Integer)
    bets: Mapped[list[Any]] = mapped_column(JSON)
    confirmed: Mapped[bool] = mapped_column(Boolean, default=False)
    staked: Mapped[int] = mapped_column(BigInteger, default=0)
    returned: Mapped[int] = mapped_column(BigInteger, default=0)
    balance_before: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    balance_after: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    # Decisions the timer took for this player (stood, or declined an offer), told to them (migration 0007).
    timed_out: Mapped[int] = mapped_column(Integer, default=0, server_default="0")


class Slip(Base):
    """Bets a player is building at a table before the deal: held, never debited."""

    __tablename__ = "slips"
    player_id: Mapped[int] = mapped_column(ForeignKey("players.id"), primary_key=True)
    table_id: Mapped[str] = mapped_column(String(64), primary_key=True, index=True)  # a shared table's slips
    bets: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    history: Mapped[list[Any]] = mapped_column(JSON, default=list)
    chip: Mapped[int] = mapped_column(Integer, default=0)
    previous: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class IdempotentRequest(Base):
    __tablename__ = "idempotency"
    player_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    key: Mapped[str] = mapped_column(String(128), primary_key=True)
    request: Mapped[str] = mapped_column(String(255))
    status_code: Mapped[int] = mapped_column(Integer)
    response: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class WalletCall(Base):
    """An operator-wallet call to make or retry (the outbox): idempotent by ``tx_id``."""

    __tablename__ = "wallet_calls"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    tx_id: Mapped[str] = mapped_column(String(64), unique=True)
    player_id: Mapped[int] = mapped_column(Integer, index=True)
    currency: Mapped[str] = mapped_column(String(3))
    # debit, credit, rollback; a debit made before its stake is recorded "done" with it (RemoteWallet.debit_now)
    kind: Mapped[str] = mapped_column(String(16))
    amount: Mapped[int] = mapped_column(BigInteger)
    round_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    # pending (until the operator answers: never given up), done
    status: Mapped[str] = mapped_column(String(16), default="pending", index=True)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    last_error: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class WalletMode(Base):
    """Where a start of the server kept the balances: ``built-in`` (the ledger) or ``operator`` (an operator's wallet,
    named by ``wallet``). A start appends a row only where it keeps them elsewhere than the latest row says, so the
    rows are the history of the changes, and the latest is where they live now: what ``twentyone admin credit`` goes
    by (migration 0015; ``wallet.record_wallet_mode``)."""

    __tablename__ = "wallet_modes"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    mode: Mapped[str] = mapped_column(String(16))  # built-in, operator
    # The operator's wallet as its start named it (--wallet's module:factory, else its class); None for the built-in
    # ledger, and for the row migration 0015 made from the calls to an operator's wallet it found.
    wallet: Mapped[str | None] = mapped_column(String(255), nullable=True)
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class TablesFile(Base):
    """A ``tables.toml`` a start of the server served (the operator's ``--tables`` file, else the shipped one), each
    table's settings as written. A start appends a row only where its file differs from the latest row's (``digest``),
    and every process on the database serves the latest: a process started with another file (a worker restarted
    after the file was edited, a second ``serve``) changes the floor's tables for all, within a tick, rather than
    dealing its own beside theirs (migration 0018; ``TableRegistry.publish``)."""

    __tablename__ = "tables_files"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    digest: Mapped[str] = mapped_column(String(64))  # sha256 of the tables as canonical JSON
    tables: Mapped[dict[str, Any]] = mapped_column(JSON)
    published_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    # A file given to the start (``--tables``, ``TWENTYONE_TABLES``), or the shipped tables: a start without a file
    # does not put the shipped tables over a file's (migration 0019).
    given: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())


class Heartbeat(Base):
    """When a server process last showed the floor was served: one row, written by each process's timers every
    :data:`~twentyone.server.downtime.BEAT_SECONDS`. A beat that finds the last one older than
    ``Settings.down_after_seconds`` knows that no process answered since, and moves every decision
    clock and betting window on by that time (migration 0020; :mod:`twentyone.server.downtime`)."""

    __tablename__ = "heartbeat"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)  # always 1, made by the migration
    beat_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)  # None: never yet


class GuestArrival(Base):
    """A guest account created from an address, kept a minute: the limit on new guests, shared by every process.

    Rows older than the limit's minute are deleted as new guests arrive; nothing else reads them.
    """

    __tablename__ = "guest_arrivals"
    __table_args__ = (Index("ix_guest_arrivals_address_at", "address", "arrived_at"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    address: Mapped[str] = mapped_column(String(64))
    arrived_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)


class SignInFailure(Base):
    """A wrong password given for a name from an address, kept :data:`~twentyone.server.accounts.FAILURE_WINDOW`:
    the limit on guessing, shared by every process. Rows past the window are deleted as new failures arrive, and a
    name's rows when its player signs in."""

    __tablename__ = "sign_in_failures"
    __table_args__ = (Index("ix_sign_in_failures_name_at", "name", "failed_at"),
                      Index("ix_sign_in_failures_address_at", "address", "failed_at"))
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(64))  # as sent, lowercased: names are unique whatever their case
    address: Mapped[str] = mapped_column(String(64))
    failed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)



class KnownAddress(Base):
    """An address a player signed in from with their password (or signed up from), and when last: a name locked by
    guesses spread over many addresses (:data:`~twentyone.server.accounts.FAILURES_PER_NAME`) is still open to its
    player from these, for :data:`~twentyone.server.accounts.KNOWN_FOR`."""

    __tablename__ = "known_addresses"
    __table_args__ = (UniqueConstraint("player_id", "address"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    player_id: Mapped[int] = mapped_column(ForeignKey("players.id"))
    address: Mapped[str] = mapped_column(String(64))
    last_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))

# The tables themselves, for the statements of the request path that read columns or write rows without ORM
# objects. A statement built on a mapped class (``update(Account)``, ``select(Account.balance)``) goes through
# the ORM's layer at every execution even when it loads no object: on SQLite here an UPDATE of one account
# cost 105 us that way and 25 us as Core, a one-column SELECT 51 us against 28 us.
ACCOUNTS = cast(Table, Account.__table__)
LEDGER = cast(Table, LedgerEntry.__table__)
PLAYERS = cast(Table, Player.__table__)
SHOES = cast(Table, Shoe.__table__)
ROUNDS = cast(Table, Round.__table__)
HEARTBEAT = cast(Table, Heartbeat.__table__)
OPEN_STATUSES = ("betting", "playing")  # a round open: taking bets (forming), or dealt and being played
ROUND_ACTIONS = cast(Table, RoundAction.__table__)
ROUND_SEATS = cast(Table, RoundSeat.__table__)
SLIPS = cast(Table, Slip.__table__)
IDEMPOTENCY = cast(Table, IdempotentRequest.__table__)
TABLE_CONFIGS = cast(Table, TableConfig.__table__)
WALLET_CALLS = cast(Table, WalletCall.__table__)
WALLET_MODES = cast(Table, WalletMode.__table__)
TABLES_FILES = cast(Table, TablesFile.__table__)
