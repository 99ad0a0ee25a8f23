"""Tables: the registry (shipped and operator tables, held in memory), bet slips, and the shoes rounds use.

The registry is read from the database once and kept: a request never queries
for a table's definition, so no request waits on a second connection for it.
A table created or removed by the operator changes the registry of the same process at once; other
processes read the tables again when it is announced (PostgreSQL) or at their next timer tick, and
find a table made elsewhere on a miss meanwhile. The tables of ``tables.toml`` are those the latest
start published to the database (:meth:`TableRegistry.publish`), read again at each tick too: every
process on one database serves one floor.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import secrets
import threading
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from functools import cache
from typing import Any
from weakref import WeakKeyDictionary

from sqlalchemy import Insert, and_, bindparam, case, delete, func, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session
from sqlalchemy.pool import Pool

from twentyone.core.betting import MAIN, BetSlip, BetSlipError
from twentyone.core.commitment import commitment
from twentyone.core.house_rules import house_rules
from twentyone.core.operations import OFFER_ANSWERS
from twentyone.core.round import HandBet
from twentyone.core.shoe import RandomBits, ShoeComposition, needs_shuffle, shuffled
from twentyone.core.sidebets import SIDE_BETS
from twentyone.server.cluster import lock_in_transaction
from twentyone.server.config import (
    TABLE_ID_PATTERN,
    TableConfigError,
    TableSpec,
    checked_definition,
    retired_table,
    shipped_definitions,
    table_from_mapping,
    tables_from_definitions,
)
from twentyone.server.context import Caller, ServiceError
from twentyone.server.direct import defer, run, transaction_notes
from twentyone.server.models import (
    OPEN_STATUSES,
    ROUND_SEATS,
    ROUNDS,
    SHOES,
    SLIPS,
    TABLE_CONFIGS,
    TABLES_FILES,
    TableConfig,
)
from twentyone.server.models import Shoe as ShoeRow
from twentyone.server.money import refusal
from twentyone.server.store import Store, insert_returning_id
from twentyone.server.wallet import Wallet
from twentyone.variants import builtin_rules

log = logging.getLogger("twentyone.server")

# The operator's tables as a registry read them: a tick compares them with what it read (a few dozen rows). Their
# count alone told of a table made elsewhere, and missed a removal with a creation.
TABLE_ROWS = select(TABLE_CONFIGS.c.id, TABLE_CONFIGS.c.spec).order_by(TABLE_CONFIGS.c.id)
# A player's newest round at a table: what a table taken out of the configuration is to them (TableRegistry.seen_by).
NEWEST_OWN_ROUND_AT = (select(ROUNDS.c.table_id, ROUNDS.c.variant, ROUNDS.c.currency, ROUNDS.c.betting_closes_at)
                       .join(ROUND_SEATS, ROUND_SEATS.c.round_id == ROUNDS.c.id)
                       .where(ROUNDS.c.table_id == bindparam("table_id"),
                              ROUND_SEATS.c.player_id == bindparam("player_id"))
                       .order_by(ROUND_SEATS.c.round_id.desc()).limit(1))
# The tables.toml the latest start published (migration 0018): what every process serves.
LATEST_TABLES_FILE = select(TABLES_FILES.c.id, TABLES_FILES.c.digest, TABLES_FILES.c.tables,
                            TABLES_FILES.c.published_at, TABLES_FILES.c.given).order_by(
    TABLES_FILES.c.id.desc()).limit(1)
LATEST_TABLES_DIGEST = select(TABLES_FILES.c.digest).order_by(TABLES_FILES.c.id.desc()).limit(1)


TABLES_FILE_LOCK = "tables-file"  # held by a publication of tables.toml, and by a creation that checks against it


def table_id_lock(table_id: str) -> str:
    """The advisory lock a creation or a removal of an operator's table takes on its id, in any case. Not the name of
    the table's timers (:func:`~twentyone.server.cluster.table_timers`, ``table:ID``), which the process running
    them holds for its life: sharing it, every removal or creation of a table whose timers had run waited for ever
    on PostgreSQL (found by a trial of an operator).

    >>> table_id_lock("VIP")
    'table-id:vip'
    """
    return f"table-id:{table_id.lower()}"


def served_settings(definitions: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each table of a ``tables.toml`` as it is served, every setting given (a setting left out is its default), so
    that two files that serve the same tables compare equal.

    >>> from twentyone.server.config import shipped_definitions
    >>> classic = dict(shipped_definitions()["classic"])
    >>> served_settings({"classic": classic}) == served_settings({"classic": {**classic, "betting_window": 0}})
    True
    """
    return {table_id: json.loads(json.dumps(asdict(table), default=list))
            for table_id, table in tables_from_definitions(definitions).items()}


def definitions_digest(definitions: Mapping[str, Mapping[str, Any]]) -> str:
    """The fingerprint of the tables a ``tables.toml`` serves (:func:`served_settings`): the same tables give the
    same digest, whatever the file's order, comments, or settings written out at their default."""
    canonical = json.dumps(served_settings(definitions), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


# What reading a published tables.toml of another version can raise: a game or a setting this version does not know.
UNREADABLE = (TableConfigError, TypeError, ValueError, AttributeError)


def changed_tables(definitions: Mapping[str, Mapping[str, Any]], before: Mapping[str, Any]) -> list[str]:
    """The ids of the tables that ``definitions`` serve otherwise than ``before`` (the tables published last): all of
    both where this version cannot read ``before`` (another version's), which must not stop the start that replaces
    it after its row is written.

    >>> classic = {"classic": {"name": "C", "variant": "classic", "currency": "USD", "chips": [100],
    ...                        "limits": {"main": [100, 500]}}}
    >>> changed_tables(classic, {**classic, "vip": classic["classic"]}), changed_tables(classic, {"x": {"variant": 7}})
    (['vip'], ['classic', 'x'])
    """
    try:
        before_served = served_settings(before)
    except UNREADABLE:
        return sorted(definitions.keys() | before.keys())
    now = served_settings(definitions)
    return sorted(table_id for table_id in now.keys() | before_served.keys()
                  if now.get(table_id) != before_served.get(table_id))


class TableRegistry:
    def __init__(self, store: Store, clock: Callable[[], datetime],
                 defined: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        self.store = store
        self.clock = clock
        # This process's tables.toml: served until a start publishes one (a database no start of migration 0018's
        # version has served yet, read by the operator's commands).
        self.defined = shipped_definitions() if defined is None else defined
        self._tables: dict[str, TableSpec] | None = None
        self._stored: list[tuple[str, Any]] | None = None  # TABLE_ROWS when last read (None: never)
        self._digest: str | None = None  # the published tables.toml's when last read (None: none published)
        self._file_tables: dict[str, TableSpec] = {}  # the tables.toml served: its tables, and their ids
        self._file_ids: frozenset[str] = frozenset()
        self._lock = threading.Lock()
        # Told of each operator's table that a read of the tables found gone or changed since the last, whichever
        # read it was (a tick's, an announcement's, a miss's): the service tells the table's pages.
        self.on_change: Callable[[str, bool], object] = lambda table_id, gone: None

    def all(self) -> dict[str, TableSpec]:
        with self._lock:
            if self._tables is not None:
                return dict(self._tables)
        return self._load()

    def _load(self) -> dict[str, TableSpec]:
        with self.store.read() as session:
            stored = [tuple(row) for row in session.execute(TABLE_ROWS)]
            published = session.execute(LATEST_TABLES_FILE).first()
        digest = published.digest if published is not None else None
        with self._lock:
            first, before = self._tables is None, self._tables or {}
            file_tables, file_ids = self._file_tables, self._file_ids
        if first or digest != self._digest:  # a file not read yet: its tables built once, not at every read
            file_tables, file_ids = self._file_read(published)
        tables = dict(file_tables)
        for table_id, spec in stored:
            tables[table_id] = table_from_mapping(table_id, spec)
        with self._lock:
            self._tables, self._stored, self._digest = tables, stored, digest
            self._file_tables, self._file_ids = file_tables, file_ids
        if not first:  # a first read finds nothing changed
            for table_id, table in before.items():
                if tables.get(table_id) != table:  # gone, or changed since (another game, perhaps)
                    self.on_change(table_id, table_id not in tables)
            for table_id in tables.keys() - before.keys():  # made (again): a page left at its closed stand-in reads it
                self.on_change(table_id, False)
        return dict(tables)

    def _file_read(self, published: Any) -> tuple[dict[str, TableSpec], frozenset[str]]:
        """The tables of the ``tables.toml`` published (``published``, a row of :data:`LATEST_TABLES_FILE`; None:
        none yet, so this process's own). One this version cannot read (published by a newer version's start, with a
        game this one does not know) is logged, and the tables served until now are served on: before, every tick
        of every older process failed on it, so no timer ran (found by review)."""
        if published is None:  # this process's own, checked at its start
            return tables_from_definitions(self.defined), frozenset(self.defined)
        try:
            return tables_from_definitions(published.tables), frozenset(published.tables)
        except UNREADABLE as error:
            log.error("the tables.toml published at %s cannot be read by this version (%s): this process serves the "
                      "tables it served before; restart it with the version that published them",
                      published.published_at.isoformat(" ", "seconds"), error)
            if self._tables is not None:
                return self._file_tables, self._file_ids
            return tables_from_definitions(self.defined), frozenset(self.defined)

    def behind(self, session: Session) -> bool:
        """Whether the tables changed since this registry read them: read them with :meth:`_load`, after
        ``session`` (one connection at a time).

        Asked at every timer tick, so that a table another process added or removed (``twentyone admin
        create-table`` on the server's SQLite file, or a PostgreSQL process whose announcement
        this one missed), or a ``tables.toml`` another process's start published, reaches the lobby, and its timers,
        within a tick.
        """
        return ([tuple(row) for row in session.execute(TABLE_ROWS)] != self._stored
                or session.scalar(LATEST_TABLES_DIGEST) != self._digest)

    def publish(self, definitions: Mapping[str, Mapping[str, Any]], source: str = "tables.toml",
                given: bool = False) -> None:
        """Make ``definitions`` (a start's ``tables.toml``) the tables every process on the database serves: appended
        to ``tables_files`` where they differ from the latest published, which the other processes read at their next
        tick. The starts of one database take turns here (SQLite's one writer; on PostgreSQL an advisory lock), so
        the workers of ``serve --workers N``, which start at once with one file, append one row at most.

        The shipped tables (``given`` false: no ``--tables``, no ``TWENTYONE_TABLES``) replace shipped ones only:
        where the latest were a file given to a start, this process serves those and logs so. Before, a process
        restarted with its first command line put the shipped tables back on the whole floor, its currencies and
        limits included, with a warning alone (an operator's trial).

        A table the file defines that the operator made with ``POST /admin/tables`` (its id in any case) refuses the
        start (:class:`TableConfigError`): a table is the file's or the operator's, which ``twentyone admin
        remove-table`` takes out, never both."""
        digest = definitions_digest(definitions)
        with self.store.write() as session:
            lock_in_transaction(session, TABLES_FILE_LOCK)
            latest = session.execute(LATEST_TABLES_FILE).first()
            kept = latest is not None and latest.digest != digest and latest.given and not given
            made = {table_id.lower(): table_id for table_id in session.scalars(select(TableConfig.id))}
            taken = sorted(made[table_id.lower()] for table_id in definitions if table_id.lower() in made)
            if taken and not kept:
                raise TableConfigError(
                    f"{source} defines {taken[0]!r}, a table the operator made (POST /admin/tables): remove it "
                    f"with `twentyone admin remove-table {taken[0]}`, or give the file's table another id.")
            if (latest is None or latest.digest != digest) and not kept:
                session.execute(TABLES_FILES.insert().values(digest=digest, tables=dict(definitions),
                                                             published_at=self.clock(), given=given))
            elif latest is not None and given and not latest.given:  # the same tables, now given as a file: kept
                session.execute(TABLES_FILES.update().where(TABLES_FILES.c.id == latest.id).values(given=True))
        if kept:
            assert latest is not None
            log.warning("%s is not served: the start at %s was given a tables file, whose tables every process on "
                        "this database serves, this one too (give --tables FILE to change them)", source,
                        latest.published_at.isoformat(" ", "seconds"))
        elif latest is not None and latest.digest != digest:
            changed = changed_tables(definitions, latest.tables)
            log.warning("%s differs from the tables the start at %s published (%s): every server process on "
                        "this database serves these from its next tick", source, latest.published_at.isoformat(" ",
                        "seconds"), ", ".join(changed))
        self._load()

    def file_ids(self) -> frozenset[str]:
        """The ids of the tables ``tables.toml`` defines (as published), which the operator neither makes nor
        removes."""
        self.all()
        return self._file_ids

    def find(self, table_id: str) -> TableSpec | None:
        """The table of that id as configured, the registry read again on a miss (another process, or ``twentyone
        admin create-table``, may have made it since); None where there is none."""
        return self.all().get(table_id) or self._load().get(table_id)

    def get(self, table_id: str) -> TableSpec:
        table = self.find(table_id)
        if table is None:
            raise ServiceError(404, f"There is no table {table_id!r}.")
        return table

    def seen_by(self, table_id: str, player_id: int) -> TableSpec:
        """The table as a player reaches it: as configured; or, taken out of the configuration, its stand-in
        (:meth:`of_round`, ``closed``) for a player who has played a round there, so that they can finish one left
        in play and be told the table is closed. Anyone else gets the 404 of a table there is not: nothing is told of
        a table one never sat at. Before, a player whose round was in play there could not open it from the page
        (found by a trial of an operator)."""
        table = self.find(table_id)
        if table is not None:
            return table
        with self.store.read() as session:
            newest = run(session, NEWEST_OWN_ROUND_AT, {"table_id": table_id, "player_id": player_id}).first()
        if newest is None:
            raise ServiceError(404, f"There is no table {table_id!r}.")
        return self.of_round(newest)

    def of_round(self, round_row: Any) -> TableSpec:
        """The table a round was played at, as the round reads it: as configured now, in the currency the round's
        stakes were taken in (a table's currency may have changed since: migration 0013); a table configured
        nowhere now, as :func:`retired_table` stands in for it. Before, a round read its table's currency as it is
        now, and a round at a removed table could be neither read nor ended (found by a trial of an operator)."""
        table = self.find(round_row.table_id)
        if table is None:  # a shared table's rounds took bets in a window; a private one's were dealt at once
            return retired_table(round_row.table_id, round_row.variant, round_row.currency,
                                 shared=round_row.betting_closes_at is not None)
        currency = round_row.currency or table.currency
        return table if currency == table.currency else replace(table, currency=currency)

    def create(self, caller: Caller, table_id: str, spec: dict[str, Any]) -> dict[str, Any]:
        if not caller.is_operator:
            raise ServiceError(403, "Only the operator can do this.")
        try:  # "..." made a table once (an operator's trial): the id is checked as tables.toml's are
            table, spec = checked_definition(table_id, spec)
        except TableConfigError as error:
            raise ServiceError(422, str(error)) from None
        with self.store.write() as session:
            # The id taken already, or one that differs from it in case alone: one table to a player reading the lobby
            # (and to a link typed by hand), as player names are (found by an operator's trial: "Classic" beside
            # "classic"). Checked in the write, under a lock on the id in lower case (PostgreSQL; SQLite writes one at
            # a time), as a sign-up's name is: two creations at once in two cases would each miss the other. And
            # against the tables.toml published last, read under the lock its publication takes: a start publishing
            # a file with this id meanwhile would have made the table both the file's and the operator's (review).
            lock_in_transaction(session, table_id_lock(table_id))
            lock_in_transaction(session, TABLES_FILE_LOCK)
            published = session.execute(LATEST_TABLES_FILE).first()
            file_ids = (published.tables if published is not None else self.defined).keys()
            same = next((known for known in file_ids if known.lower() == table_id.lower()), None) or \
                session.scalars(select(TableConfig.id).where(func.lower(TableConfig.id) == table_id.lower())).first()
            if same is not None:
                raise ServiceError(409, f"A table {same!r} already exists" + (
                    "." if same == table_id else ": ids differing in case alone are not told apart."))
            # The id of a table taken out (removed, or out of tables.toml): its rounds left open are played out under
            # the table they were made at, and no shoe of its stays for the new one's rounds (another game's,
            # perhaps). Before, a forming round of a removed table was dealt at the table made again in its place
            # (found by review).
            # Its id in any case, as above: "CASEA" made while a round of "casea", taken out, was open showed both in
            # the lobby, and "casea" could not be made again (an attacker's trial). The rounds open are few, read along
            # the index on status; the ids are compared here.
            still_open = min(((first, known) for known, first in session.execute(
                select(ROUNDS.c.table_id, func.min(ROUNDS.c.id)).where(ROUNDS.c.status.in_(OPEN_STATUSES))
                .group_by(ROUNDS.c.table_id)) if known.lower() == table_id.lower()), default=None)
            if still_open is not None:
                raise ServiceError(409, f"Round {still_open[0]} of the table {still_open[1]!r} that was taken out is "
                                        "still open there: make the table again once it has ended.")
            session.execute(update(SHOES).where(SHOES.c.table_id == table_id, SHOES.c.finished.is_(False))
                            .values(finished=True))
            session.execute(delete(SLIPS).where(SLIPS.c.table_id == table_id))  # a table of tables.toml taken out
            session.add(TableConfig(id=table_id, spec=dict(spec), created_at=self.clock()))
            body = self.store.answer(session, table_json(table))
        self._load()  # with it, as stored (what a later read compares with, to tell its pages of a change)
        return body

    def remove(self, caller: Caller, table_id: str) -> tuple[dict[str, Any], list[int]]:
        """Take an operator's table out of the configuration (``DELETE /admin/tables/{id}``), as taking a table out
        of ``tables.toml`` does at a restart, but at once: it leaves the lobby and takes no bet; a round dealt there
        is played out as dealt, and its rounds stay readable (:meth:`of_round`). What was only held there goes with
        it: the slips (never debited), and the shoes no open round deals from (finished, so revealed: no round of a
        table made again under the id deals from them, in another game perhaps). The answer, and the rounds still
        taking bets there, for the caller to void (nothing was staked in them). Before, an operator's table could be
        neither removed nor changed (noted by a trial of an operator): a change is now a removal and a creation."""
        if not caller.is_operator:
            raise ServiceError(403, "Only the operator can do this.")
        if table_id in self.file_ids():
            raise ServiceError(409, f"The table {table_id!r} is configured in tables.toml: take it out there and "
                                    "restart the server.")
        missing = ServiceError(404, f"There is no table {table_id!r} made by the operator.")
        if not re.fullmatch(TABLE_ID_PATTERN, table_id):  # no id it could have been made with (a NUL: PostgreSQL's 500)
            raise missing
        with self.store.write() as session:
            lock_in_transaction(session, table_id_lock(table_id))  # as a creation of the id takes it
            row = session.get(TableConfig, table_id)
            if row is None:
                raise missing
            table = table_from_mapping(table_id, row.spec)
            session.delete(row)
            open_rounds = session.execute(select(ROUNDS.c.id, ROUNDS.c.status).where(
                ROUNDS.c.table_id == table_id, ROUNDS.c.status.in_(OPEN_STATUSES))).all()
            session.execute(delete(SLIPS).where(SLIPS.c.table_id == table_id))
            session.execute(update(SHOES).where(SHOES.c.table_id == table_id, SHOES.c.finished.is_(False),
                                                SHOES.c.id.not_in(_IN_PLAY)).values(finished=True),
                            {"rounds_table": table_id})
            body = self.store.answer(session, {**table_json(table), "closed": True, "rounds_open": len(open_rounds)})
        with self._lock:
            if self._tables is not None:
                self._tables.pop(table_id, None)
            if self._stored is not None:  # told here (the service): not again at this process's next read
                self._stored = [stored for stored in self._stored if stored[0] != table_id]
        return body, [round_id for round_id, status in open_rounds if status == "betting"]


@cache
def table_pays(variant: str) -> dict[str, Any]:
    """What a game pays, as its sheet's "Payouts" say it, for a page to show before a bet: blackjack, a win and
    insurance as ``"3:2"``; whether a blackjack is offered even money; each side bet's lines, best first, with what
    each pays to 1; and the range of cash out's offers, as factors of the main bet (None where the game has none).
    Read from the game's rules, the ones its rounds are settled by (once a game: callers only send it). Before, a
    player could learn what a side bet paid only from a result (found by a trial of a player).

    >>> pays = table_pays("first-person")
    >>> pays["blackjack"], pays["insurance"], pays["side_bets"]["perfect_pairs"]
    ('3:2', '2:1', [['perfect', 25], ['colored', 12], ['mixed', 6]])
    >>> [round(factor, 2) for factor in pays["cash_out"]]
    [0.42, 1.77]
    """
    rules = builtin_rules(variant)
    factors = rules.cash_out.factors.values() if rules.cash_out.enabled else ()
    return {
        "blackjack": "{}:{}".format(*rules.blackjack_payout), "win": "{}:{}".format(*rules.win_payout),
        "insurance": "{}:{}".format(*rules.insurance.payout) if rules.insurance.offered else None,
        "even_money": rules.insurance.offered and rules.insurance.even_money,
        "side_bets": {name: [list(line) for line in side.pays()] for name, side in rules.side_bets.items()},
        "cash_out": [min(factors), max(factors)] if factors else None,
    }


@cache
def rules_in_words(variant: str) -> list[str]:
    """:func:`~twentyone.core.house_rules.house_rules` of a game, worked out once: a table's read carries them."""
    return house_rules(builtin_rules(variant))


def table_json(table: TableSpec) -> dict[str, Any]:
    """A table as clients read it: its setting, and the game's words, so no client re-declares them."""
    rules = builtin_rules(table.variant)
    return {**table.public(), "pays": table_pays(table.variant),
            # The rule sheet's sentences, for the page's RULES panel (found by a trial of players: payouts alone).
            "house_rules": rules_in_words(table.variant),
            "side_bet_titles": {name: SIDE_BETS[side.kind].title for name, side in rules.side_bets.items()},
            "side_bet_lines": {name: dict(SIDE_BETS[side.kind].line_titles) for name, side in rules.side_bets.items()},
            "offer_answers": {str(kind): {"accept": str(accept), "decline": str(decline)}
                              for kind, (accept, decline) in OFFER_ANSWERS.items()}}


# ------------------------------------------------------------------ bet slips
@dataclass
class SlipRecord:
    """A player's bet slip at a table (``slips``): bets built before the deal, held, never debited.

    Read and written as a plain row by Core statements, not as an ORM object: every chip and every
    bet writes it, and the unit of work's flush of one slip cost more than its UPDATE. Keys of
    ``bets`` are ``"spot|type"``; ``history`` is the slip's earlier states, for UNDO.
    """

    player_id: int
    table_id: str
    bets: dict[str, int]
    history: list[dict[str, int]]
    chip: int
    previous: dict[str, int]
    updated_at: datetime


_SLIP = SLIPS.c
SLIP = (select(_SLIP.player_id, _SLIP.table_id, _SLIP.bets, _SLIP.history, _SLIP.chip, _SLIP.previous, _SLIP.updated_at)
        .where(_SLIP.player_id == bindparam("player_id"), _SLIP.table_id == bindparam("table_id")))
# A writer's read of the slip holds its row until the transaction ends: every writer reads the slip, changes it and
# writes all of it back, so two bet controls of one player at once (PostgreSQL runs them at once; SQLite writes one
# transaction at a time) would each write back their own change alone. The second now waits for the first's.
SLIP_FOR_UPDATE = SLIP.with_for_update()
# A slip's first use: of two at once, the second's insert waits for the first's, then does nothing (returns no row).
NEW_SLIP: dict[str, Insert] = {
    name: dialect.insert(SLIPS).on_conflict_do_nothing().returning(_SLIP.player_id)
    for name, dialect in (("postgresql", postgresql), ("sqlite", sqlite))}
SAVE_SLIP = (update(SLIPS).where(_SLIP.player_id == bindparam("slip_player"), _SLIP.table_id == bindparam("slip_table"))
             .values(bets=bindparam("bets"), history=bindparam("history"), chip=bindparam("chip"),
                     previous=bindparam("previous"), updated_at=bindparam("updated_at")))


def find_slip(session: Session, player_id: int, table_id: str, *, for_update: bool = False) -> SlipRecord | None:
    """The player's slip at the table, if they have touched its bet controls (locked ``for_update``)."""
    query = SLIP_FOR_UPDATE if for_update else SLIP
    row = run(session, query, {"player_id": player_id, "table_id": table_id}).first()
    return SlipRecord(**row._asdict()) if row is not None else None


def slip_row(session: Session, player_id: int, table: TableSpec, clock: Callable[[], datetime]) -> SlipRecord:
    """The player's slip at the table, for a writer: locked until the transaction ends, and created (empty,
    the table's smallest chip chosen) on first use."""
    slip = find_slip(session, player_id, table.id, for_update=True)
    if slip is not None:
        return slip
    fresh = SlipRecord(player_id, table.id, {}, [], table.chips[0], {}, clock())
    if run(session, NEW_SLIP[session.get_bind().dialect.name], asdict(fresh)).first() is not None:
        return fresh
    made = find_slip(session, player_id, table.id, for_update=True)  # by a twin, committed while this one waited
    if made is None:  # pragma: no cover - a row that stopped this insert is committed, or this insert had gone in
        raise RuntimeError(f"the slip of player {player_id} at {table.id!r} is neither new nor found")
    return made


def save_slip(session: Session, slip: SlipRecord) -> None:
    """Write the slip (every column, as read and changed here), in the caller's transaction."""
    defer(session, SAVE_SLIP, {"slip_player": slip.player_id, "slip_table": slip.table_id, "bets": slip.bets,
                               "history": slip.history, "chip": slip.chip, "previous": slip.previous,
                               "updated_at": slip.updated_at})


def _key(text: str) -> tuple[int, str]:
    spot, bet_type = text.split("|", 1)
    return int(spot), bet_type


def _text(bets: dict[tuple[int, str], int]) -> dict[str, int]:
    return {f"{spot}|{bet_type}": amount for (spot, bet_type), amount in bets.items()}


def bet_slip(slip: SlipRecord | None, table: TableSpec, balance: int) -> BetSlip:
    """The engine's bet slip for a stored one (or an empty one)."""
    rules = builtin_rules(table.variant)
    # The side bets a table takes are those it sets limits for, as the web page and the terminal list them. Before,
    # a table made with main limits alone showed none, yet took each of its game's at the main bet's limits.
    offered = tuple(name for name in rules.side_bets if name in table.limits)
    result = BetSlip(table.bet_limits, table.chips, balance, table.hands_per_player, offered)
    if slip is not None:
        result.bets = {_key(k): v for k, v in slip.bets.items()}
        result._history = [{_key(k): v for k, v in entry.items()} for entry in slip.history]
        result.chip = slip.chip
    return result


def bet_list(bets: Mapping[tuple[int, str], int] | Mapping[str, int]) -> list[dict[str, Any]]:
    """Bets as the API lists them everywhere (a slip, the bets a sign-in returned): by spot, then kind. Keys are
    (spot, kind) or as a slip stores them ("1|main"): returned bets were listed by those, where every other answer
    lists a bet as here (an integrator's trial).

    >>> bet_list({"2|main": 500, "1|21+3": 100})
    [{'spot': 1, 'type': '21+3', 'amount': 100}, {'spot': 2, 'type': 'main', 'amount': 500}]
    """
    keyed = {_key(key) if isinstance(key, str) else key: amount for key, amount in bets.items()}
    return [{"spot": spot, "type": kind, "amount": amount} for (spot, kind), amount in sorted(keyed.items())]


def slip_view(slip: SlipRecord | None, slip_state: BetSlip) -> dict[str, Any]:
    return {"bets": bet_list(slip_state.bets),
            "total": slip_state.total, "chip": slip_state.chip, "enabled_chips": list(slip_state.enabled_chips()),
            "can_rebet": bool(slip is not None and slip.previous),
            # What REBET would stake, so that a page can leave it out where the balance does not cover it.
            "rebet_total": sum(slip.previous.values()) if slip is not None and slip.previous else 0}


def apply_control(slip: SlipRecord, state: BetSlip, control: str, spot: int, bet_type: str, chip: int | None,
                  currency: str) -> None:
    """CHIP, place a chip (``bet``), UNDO, x2 (``double``), REBET, CLEAR: the sheet's bet controls."""
    try:
        if control == "chip":
            if chip is None:
                raise BetSlipError("Name the chip to select.")
            state.select_chip(chip)
        elif control == "bet":
            if chip is not None:
                state.select_chip(chip)
            state.place(spot, bet_type)
        elif control == "undo":
            state.undo()
        elif control == "double":
            state.double_all()
        elif control == "rebet":
            state.rebet({_key(k): v for k, v in slip.previous.items()})
        elif control == "clear":
            state.clear()
        else:
            raise ServiceError(404, f"There is no bet control {control!r}.")
    except BetSlipError as error:
        raise refusal(error, currency, maximum="maximum" in error.amounts) from None
    slip.bets = _text(state.bets)
    slip.history = [_text(entry) for entry in state._history]
    slip.chip = state.chip


def take_bets(slip: SlipRecord) -> None:
    """The slip's bets went into a round: remember them for REBET and empty the slip."""
    slip.previous, slip.bets, slip.history = dict(slip.bets), {}, []


def hand_bet_json(hand_bet: HandBet, spot: int | None = None) -> dict[str, Any]:
    """A seat's bet as its round keeps it, with the ``spot`` it was placed on where it is known (rounds dealt from
    a slip since this was written: the page names each hand by its spot)."""
    entry: dict[str, Any] = {"bet": hand_bet.bet, "side_bets": dict(hand_bet.side_bets)}
    if spot is not None:
        entry["spot"] = spot
    return entry


def dealt_bets_json(state: BetSlip, hand_bets: list[HandBet]) -> list[dict[str, Any]]:
    """The slip's bets as its deal's seat keeps them, each with its spot (:meth:`BetSlip.dealt_spots`)."""
    return [hand_bet_json(bet, spot) for bet, spot in zip(hand_bets, state.dealt_spots(), strict=True)]


def hand_bets_of(bets: list[dict[str, Any]]) -> list[HandBet]:
    return [HandBet(entry["bet"], dict(entry["side_bets"])) for entry in bets]


def bets_total(bets: list[dict[str, Any]]) -> int:
    return sum(entry["bet"] + sum(entry["side_bets"].values()) for entry in bets)


def ready_bets(session: Session, slip: SlipRecord, table: TableSpec, wallet: Wallet, player_id: int
               ) -> tuple[int, BetSlip, list[HandBet]]:
    """The player's slip as bets ready for a deal: balance and the table's minimums checked."""
    balance = wallet.balance(session, player_id, table.currency)
    state = bet_slip(slip, table, balance)
    try:
        hand_bets = state.hand_bets()
    except BetSlipError as error:
        raise refusal(error, table.currency) from None
    return balance, state, hand_bets


# --------------------------------------------------------------------- shoes
COMMITMENT = select(SHOES.c.commitment).where(SHOES.c.id == bindparam("shoe_id"))
# Rows, not ORM objects: an ORM select loads through the ORM's layer, twice the statement's cost (a private table
# reads its player's shoes at every deal and every settlement).
_UNFINISHED = select(*SHOES.c).where(SHOES.c.table_id == bindparam("table_id"), SHOES.c.finished.is_(False))
UNFINISHED_SHARED = _UNFINISHED.where(SHOES.c.player_id.is_(None)).order_by(SHOES.c.id.desc())
UNFINISHED_OWN = _UNFINISHED.where(SHOES.c.player_id == bindparam("player_id")).order_by(SHOES.c.id.desc())
# The shoes the open rounds at ``rounds_table`` deal from (a private table's: every player's), which nothing finishes
# before their round ends: finishing reveals a shoe. By the rounds' table and status, as their index has them. (Not
# ``table_id``: an update's bound name may not be a column's.)
_IN_PLAY = (select(ROUNDS.c.shoe_id)
            .where(ROUNDS.c.table_id == bindparam("rounds_table"), ROUNDS.c.status.in_(OPEN_STATUSES)))
# A shoe the next round will not use: past its cut card, replaced by a stack, or shuffled for another game.
SHOE_FINISHED = (update(SHOES).where(SHOES.c.id == bindparam("shoe_id"), SHOES.c.id.not_in(_IN_PLAY))
                 .values(finished=True))
_NEWEST = (select(SHOES.c.id, SHOES.c.commitment, SHOES.c.position, SHOES.c.cut_card, SHOES.c.variant)
           .where(SHOES.c.table_id == bindparam("table_id"), SHOES.c.finished.is_(False))
           .order_by(SHOES.c.id.desc()).limit(1))
NEWEST_SHARED = _NEWEST.where(SHOES.c.player_id.is_(None))
NEWEST_OWN = _NEWEST.where(SHOES.c.player_id == bindparam("player_id"))
NEW_SHOE = insert_returning_id(SHOES)
COMMITMENTS_KEPT = 4096  # shoes whose commitment a process remembers (a shoe serves one round or dozens)
_NEW_SHOES = "twentyone.new_shoes"  # transaction_notes: commitments of the shoes this transaction created
_MOVED_SHOES = "twentyone.moved_shoes"  # transaction_notes: the reveal columns of shoes this transaction moved on
_commitments: WeakKeyDictionary[Pool, dict[int, str]] = WeakKeyDictionary()


def _once_finished(column: Any) -> Any:
    """The column's value once the shoe is finished, NULL before: a shoe still in play never leaves the database."""
    return case((SHOES.c.finished, column)).label(column.name)


# A finished round's shoe in one read: its commitment, and its salt and cards if the shoe is finished too.
REVEALED = (select(SHOES.c.commitment, SHOES.c.finished, _once_finished(SHOES.c.salt), _once_finished(SHOES.c.cards))
            .where(SHOES.c.id == bindparam("shoe_id")))
# The shoe moves past a round's cards and is finished once past its cut card (needs_shuffle, in SQL). The answer
# is the shoe as REVEALED reads it: the settled round's view reveals it from there (see revealed_of).
SHOE_MOVED = (update(SHOES).where(SHOES.c.id == bindparam("shoe_id"))
              .values(position=bindparam("dealt"), finished=or_(SHOES.c.finished, SHOES.c.cut_card.is_(None),
                                                                bindparam("dealt") >= SHOES.c.cut_card,
                                                                bindparam("retired"),
                                                                # a shared shoe at a table now private, or the reverse
                                                                and_(SHOES.c.player_id.is_(None), bindparam("private")),
                                                                and_(SHOES.c.player_id.is_not(None),
                                                                     bindparam("shared"))))
              .returning(*REVEALED.selected_columns))


def commitment_of(session: Session, shoe_id: int) -> str:
    """The shoe's published commitment: read once per shoe, then from memory (it never changes).

    Kept per connection pool (one per database), so two servers (or tests) in one process never
    share shoe ids. A shoe this very transaction created is answered from the transaction's own
    note and not remembered: a rollback would leave its id free for another shoe.
    """
    created: dict[int, str] = transaction_notes(session, _NEW_SHOES)
    if shoe_id in created:
        return created[shoe_id]
    kept = _commitments.setdefault(session.get_bind().engine.pool, {})  # the writers' engine shares the pool
    found = kept.get(shoe_id)
    if found is None:
        found = run(session, COMMITMENT, {"shoe_id": shoe_id}).scalar_one()
        _remember(kept, shoe_id, found)
    return found


def _remember(kept: dict[int, str], shoe_id: int, commitment: str) -> None:
    if len(kept) >= COMMITMENTS_KEPT:
        kept.clear()  # the simplest bound: the few shoes in play are read once more
    kept[shoe_id] = commitment


def _remember_read(session: Session, shoe: ShoeRow) -> None:
    """Keep the commitment of a shoe read from the database, so that the round dealt from it need not read it
    again (a private table deals each round from a shoe its last one's settlement made). Not one this transaction
    made: a rollback would free its id."""
    if shoe.id not in transaction_notes(session, _NEW_SHOES):
        _remember(_commitments.setdefault(session.get_bind().engine.pool, {}), shoe.id, shoe.commitment)


def move_shoe(session: Session, shoe_id: int, dealt: int, retired: bool = False, shared: bool | None = None) -> bool:
    """Move the shoe past the cards a round dealt (``dealt``: its position after them) in one statement; whether it
    is now finished. The statement answers as :data:`REVEALED` reads (the salt and cards only if the shoe is now
    finished), noted for :func:`revealed_of`: the settled round's view reveals a finished shoe without reading it
    again. A ``retired`` shoe (its table closed, or now dealing another game) is finished wherever its cut card is:
    no round will deal from it again, and its round's ``/verify`` reveals it; so is a shoe of the other kind than
    ``shared`` says the table is now (a shared table's at a table made private, or the reverse: found by review)."""
    moved = run(session, SHOE_MOVED, {"shoe_id": shoe_id, "dealt": dealt, "retired": retired,
                                      "private": shared is False, "shared": shared is True}).one()
    transaction_notes(session, _MOVED_SHOES)[shoe_id] = moved
    return bool(moved.finished)


def revealed_of(session: Session, shoe_id: int) -> Any:
    """A finished round's shoe as :data:`REVEALED` reads it (commitment, finished, and salt and cards if it is
    finished, else None): as this transaction moved it, or read now."""
    moved = transaction_notes(session, _MOVED_SHOES).get(shoe_id)
    return moved if moved is not None else run(session, REVEALED, {"shoe_id": shoe_id}).one()


class Shoes:
    """The shoes of every table: shuffled before use, committed to by hash, revealed when finished."""

    def __init__(self, rng: RandomBits, clock: Callable[[], datetime]) -> None:
        self.rng = rng
        self.clock = clock
        # Certification and tests stack the top of the next shoes; the rest is shuffled as usual.
        self.stacked: list[list[str]] = []
        self._stacked_ids: set[int] = set()  # shoes made from the stack, which a later stack does not replace

    @staticmethod
    def retire_unfit(store: Store, tables: Mapping[str, TableSpec]) -> int:
        """At a server's start, finish every shoe that no round will deal from under ``tables`` (the configuration
        it starts with), but one a round in play deals from: a shoe of a table configured nowhere now, one shuffled
        for another game than its table's now (or for no recorded game: before migration 0017), and a shared
        table's shoe at a table now private, or the reverse. Finished, each is revealed, and the rounds it dealt
        can be verified; a round in play finishes its own when it ends (:func:`move_shoe`'s ``retired``). The number
        finished.

        Before, a shoe a configuration change left behind stayed unfinished for good, its rounds' ``/verify`` a 409,
        or dealt the new game until its cut card (found by review). Reads the tables' ids of unfinished shoes along
        their index, then each table's unfinished shoes: a start costs about one pass over that index on PostgreSQL,
        two on SQLite (0.03 s and 0.5 s at 2 million shoes, measured by review).
        """
        finished = 0
        with store.write() as session:
            table_ids = session.scalars(select(SHOES.c.table_id).where(SHOES.c.finished.is_(False)).distinct()).all()
            for table_id in table_ids:
                unfit = [SHOES.c.table_id == table_id, SHOES.c.finished.is_(False), SHOES.c.id.not_in(_IN_PLAY)]
                table = tables.get(table_id)
                if table is not None:
                    other_kind = SHOES.c.player_id.is_not(None) if table.shared else SHOES.c.player_id.is_(None)
                    unfit.append(or_(SHOES.c.variant.is_(None), SHOES.c.variant != table.variant, other_kind))
                result = session.execute(update(SHOES).where(*unfit).values(finished=True),
                                         {"rounds_table": table_id})
                finished += max(result.rowcount, 0)  # type: ignore[attr-defined]
        return finished

    @staticmethod
    def _unfinished(session: Session, table: TableSpec, player_id: int) -> list[ShoeRow]:
        """The table's (or, at a private table, the player's) shoes not yet finished, newest first.

        Each as a :class:`ShoeRow` outside the session (its values as read): set nothing on it to change the row.
        """
        query = UNFINISHED_SHARED if table.shared else UNFINISHED_OWN
        return [ShoeRow(**row._asdict()) for row in run(session, query, {"table_id": table.id, "player_id": player_id})]

    @staticmethod
    def next_published(session: Session, table: TableSpec, player_id: int) -> dict[str, Any] | None:
        """The next shoe as the table publishes it (:func:`shoe_json`), or None if it has none yet.

        Reads only the newest unfinished shoe's small columns, not its cards.
        """
        query = NEWEST_SHARED if table.shared else NEWEST_OWN
        newest = run(session, query, {"table_id": table.id, "player_id": player_id}).first()
        if newest is None or not _deals_next(newest.position, newest.cut_card) or not fits(newest, table):
            return None
        return {"id": newest.id, "commitment": newest.commitment}

    def published(self, session: Session, table: TableSpec, player_id: int) -> dict[str, Any]:
        """The next shoe as the table publishes it, shuffled now if the table has none.

        Called by the bet controls, in their write transaction: a table's first shoe (a private
        table's: its player's), and the one after a void, are committed to before the bets on it.
        """
        found = self.next_published(session, table, player_id)
        return found if found is not None else shoe_json(self.prepared(session, table, player_id))

    def _kept(self, unfinished: list[ShoeRow], table: TableSpec) -> ShoeRow | None:
        """The shoe the next round will use, of ``unfinished``, if there is one and no stack waits to replace it
        (a fresh, shuffled shoe gives way to a stack; one made from a stack does not)."""
        shoe = _usable(unfinished, table)
        if shoe is None or (self.stacked and shoe.position == 0 and shoe.id not in self._stacked_ids):
            return None
        return shoe

    def prepared(self, session: Session, table: TableSpec, player_id: int, one_finished: bool = False) -> ShoeRow:
        """The shoe the next round will use, shuffled and committed now if there is none.

        Called in write transactions only: when a shoe is finished (so that the next one's
        commitment is published before anyone bets on it), at a table's first bet control
        (:meth:`published`), and at each deal. A shoe stacked by a test or a certification
        replaces a shuffled next shoe that has not dealt a card. On PostgreSQL the table's
        (or the player's) shoes are locked before one is made, so two transactions at once
        cannot make two: after a look that found none, the lock, then a second look. With
        ``one_finished`` (the caller has just finished the shoe, so a new one is all but
        certain) the lock comes first and the shoes are read once: a round trip fewer.
        """
        owner = None if table.shared else player_id
        lock = f"shoes:{table.id}:{owner}"
        locked = one_finished and lock_in_transaction(session, lock)
        unfinished = self._unfinished(session, table, player_id)
        if (shoe := self._kept(unfinished, table)) is not None:
            _remember_read(session, shoe)
            return shoe
        if not locked and lock_in_transaction(session, lock):
            unfinished = self._unfinished(session, table, player_id)  # as the one that held the lock left them
            if (shoe := self._kept(unfinished, table)) is not None:
                _remember_read(session, shoe)
                return shoe
        # Past its cut card, replaced by a stack, or shuffled for the game the table had before a restart; one a round
        # in play deals from is finished when that round ends (move_shoe), not revealed now.
        for old in unfinished:  # one statement each: the status list expands, which no executemany may
            defer(session, SHOE_FINISHED, {"shoe_id": old.id, "rounds_table": table.id})
        return self._shuffled(session, table, owner)

    def following(self, session: Session, table: TableSpec, player_id: int, dealing: ShoeRow) -> ShoeRow | None:
        """At a table that shuffles every round, the shoe after ``dealing``, made as a round is dealt from it.

        A shoe that serves one round is still unfinished while that round is in play, and before this the table
        published it as its next shoe until the settlement made the next: a player reading the table during a round
        was shown the commitment of the cards in play, which the next round did not use (found by a trial of an
        attacker). Made here, the next shoe is the newest unfinished one, which :meth:`next_published` shows, and
        :meth:`prepared` keeps it, so nothing finishes (and ``/verify`` reveals) the shoe in play before its
        round ends. The settlement finishes that one (:func:`move_shoe`). None at a table with a cut card, whose
        next round goes on with the same shoe.

        No lock of the table's shoes: one deal at a time is dealt at a table (a private one: its player's), under
        the round's or the player's locks.
        """
        if dealing.cut_card is not None:
            return None
        owner = None if table.shared else player_id
        # Shuffled, never the next of a stack a test or a certification laid: that is for the next deal anywhere,
        # which takes it in place of this one (prepared), not for this player's next round (found by review).
        return self._shuffled(session, table, owner, stacked=False)

    def _shuffled(self, session: Session, table: TableSpec, owner: int | None, stacked: bool = True) -> ShoeRow:
        """A new shoe for the table (a private table: ``owner``'s), shuffled (or, with ``stacked``, the next of
        :attr:`stacked`), inserted and committed to by hash in this transaction."""
        rules = builtin_rules(table.variant)
        cards = shuffled(_card_names(rules.shoe.composition), self.rng)
        top = self.stacked.pop(0) if stacked and self.stacked else None
        if top is not None:
            rest = list(cards)
            for card in top:
                rest.remove(card)
            cards = top + rest
        salt = secrets.token_hex(16)
        row = {"table_id": table.id, "player_id": owner, "cards": " ".join(cards), "salt": salt,
               "commitment": commitment(salt, cards), "position": 0, "cut_card": rules.shoe.cut_card,
               "finished": False, "created_at": self.clock(), "variant": table.variant}
        # A Core insert, not an object for the unit of work to flush: a private table shuffles at every
        # round's end, and a flush of its own cost more than the insert. The object returned holds the
        # row's values as inserted, outside the session: callers read its id, position, cards and commitment.
        shoe = ShoeRow(id=run(session, NEW_SHOE, row).scalar_one(), **row)
        transaction_notes(session, _NEW_SHOES)[shoe.id] = shoe.commitment
        if top is not None:
            self._stacked_ids.add(shoe.id)
        return shoe


@cache
def _card_names(composition: ShoeComposition) -> tuple[str, ...]:
    """The shoe's cards as stored (``"AS"``), unshuffled: shuffled as they are, not as cards to name one by one."""
    return tuple(str(card) for card in composition.cards())


def shoe_json(shoe: ShoeRow) -> dict[str, Any]:
    """A shoe as a table publishes it before the deal: its id and commitment, never its cards."""
    return {"id": shoe.id, "commitment": shoe.commitment}


def _usable(unfinished: list[ShoeRow], table: TableSpec) -> ShoeRow | None:
    """The newest unfinished shoe if the next round at ``table`` may use it: shuffled for the table's game, and fresh
    or used but short of its cut card."""
    shoe = unfinished[0] if unfinished else None
    return shoe if shoe is not None and _deals_next(shoe.position, shoe.cut_card) and fits(shoe, table) else None


def fits(shoe: Any, table: TableSpec) -> bool:
    """Whether ``shoe`` (a row with its ``variant``) was shuffled for the game ``table`` deals now.

    A table whose game an operator changed deals no round from the old game's shoe: not 312 classic cards to a
    single-deck game, nor a power shoe with no tens to any other. A shoe of no recorded game (one shuffled before
    migration 0017 that no round dealt from) fits none: :meth:`Shoes.retire_unfit` finishes it at the start.

    >>> from types import SimpleNamespace as Row
    >>> from twentyone.server.config import shipped_tables
    >>> single = shipped_tables()["single-deck"]
    >>> fits(Row(variant="single-deck"), single), fits(Row(variant="classic"), single), fits(Row(variant=None), single)
    (True, False, False)
    """
    return bool(shoe.variant == table.variant)


def _deals_next(position: int, cut_card: int | None) -> bool:
    """Whether the next round may use a shoe that has dealt ``position`` cards: fresh, or short of its cut card."""
    return position == 0 or not needs_shuffle(position, cut_card)


__all__ = ["MAIN", "Shoes", "TableRegistry"]
