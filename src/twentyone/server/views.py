"""What players read: a round, their history, a round's replay, the shuffle's proof, hints, reports.

Every round a player reads is built from the engine's
:meth:`~twentyone.core.round.Round.view` for that player: face-down and undealt
cards never leave the server before they are shown, and a player reads only the
rounds they sit in (save a shared table's round, which everyone at the table watches:
``Slips.table_state``). Reads take no write transaction.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

from sqlalchemy import ColumnElement, Select, bindparam, func, select, union_all
from sqlalchemy.orm import Session

from twentyone.core.cards import Card, parse_card
from twentyone.core.commitment import verify_record
from twentyone.core.operations import (
    COSTLY_ACTIONS,
    OFFER_ANSWERS,
    Action,
    BetsPlaced,
    CardDealt,
    DecisionKind,
)
from twentyone.core.round import Phase
from twentyone.core.round import Round as Engine
from twentyone.core.view import Decision, RoundView, dealer_json, hand_json, operation_json
from twentyone.server.accounts import limits_in_force, room_under
from twentyone.server.config import TableSpec
from twentyone.server.context import Caller, ServiceError, SnapshotBehind, aware, iso
from twentyone.server.direct import run
from twentyone.server.live import FINISHED, LiveRounds, round_actions, was_dealt
from twentyone.server.models import OPEN_STATUSES, PLAYERS, ROUND_SEATS, ROUNDS, Round, RoundSeat, WalletCall
from twentyone.server.models import Shoe as ShoeRow
from twentyone.server.store import Store
from twentyone.server.tables import TableRegistry, bets_total, commitment_of, revealed_of, table_json

OPEN = OPEN_STATUSES
# A player's rounds open at some tables (Views.closed_tables, Views.open_rounds), oldest first: driven from the rounds
# open at those tables (the index on table and status), each looked up in the seats by (round, player). As a join,
# SQLite drove it from the player's seats instead, a row for every round they ever played (test_history_cost).
OWN_OPEN_ROUNDS_AT = (select(ROUNDS.c.id, ROUNDS.c.table_id, ROUNDS.c.variant, ROUNDS.c.currency,
                             ROUNDS.c.betting_closes_at, ROUNDS.c.status)
                      .where(ROUNDS.c.table_id.in_(bindparam("table_ids", expanding=True)), ROUNDS.c.status.in_(OPEN),
                             select(ROUND_SEATS.c.id).where(ROUND_SEATS.c.round_id == ROUNDS.c.id,
                                                            ROUND_SEATS.c.player_id == bindparam("player_id"))
                             .exists())
                      .order_by(ROUNDS.c.id))
STATUSES = (*OPEN, *FINISHED)
OTHERS_SHOWN = 48  # other players' seats and hands sent in full; past that, counts (power seats hundreds)


# Statements built once: every decision and every round view runs them, and building a statement
# (and its cache key) costs more than SQLite takes to answer it.
SEAT = select(RoundSeat).where(RoundSeat.round_id == bindparam("round_id"),
                               RoundSeat.player_id == bindparam("player_id"))


def seat_of(session: Session, round_id: int, player_id: int) -> RoundSeat | None:
    return session.scalars(SEAT, {"round_id": round_id, "player_id": player_id}).first()


# A round view reads its seats as plain rows (no ORM objects: at a power table that is dozens a view).
_SEAT = ROUND_SEATS.c
SEAT_ROWS = (select(_SEAT.player_id, _SEAT.position, _SEAT.bets, _SEAT.staked, _SEAT.returned, _SEAT.balance_before,
                    _SEAT.balance_after, _SEAT.timed_out, PLAYERS.c.name)
             .join(PLAYERS, PLAYERS.c.id == _SEAT.player_id).order_by(_SEAT.position))
SEATS_OF = SEAT_ROWS.where(_SEAT.round_id == bindparam("round_id"))
FIRST_SEATS_OF = SEATS_OF.limit(bindparam("limit"))
SEAT_COUNT = select(func.count()).select_from(ROUND_SEATS).where(_SEAT.round_id == bindparam("round_id"))


def seats_of(session: Session, round_id: int, limit: int | None = None) -> list[tuple[Any, str]]:
    """The round's seats in order (each with the player's name): rows with the seat's columns as attributes."""
    rows = run(session, SEATS_OF, {"round_id": round_id}) if limit is None else \
        run(session, FIRST_SEATS_OF, {"round_id": round_id, "limit": limit})
    return [(row, row.name) for row in rows.all()]


def with_spots(operations: list[dict[str, Any]], logged: Collection[object],
               seats: list[tuple[Any, str]]) -> list[dict[str, Any]]:
    """``operations`` (the JSON of ``logged``) with each seat's bets saying the ``spot`` they were placed on, where
    the round kept it: a page names a player's hand by its betting circle ("Hand 3"), and a replay named it by the
    round's seat ("seat 1") alone (a trial of players). A player's seats take their bets in the order the seat's
    ``bets`` list them.

    >>> from types import SimpleNamespace as Row
    >>> logged = [BetsPlaced("7", 1, 100, ()), BetsPlaced("7", 2, 500, ()), BetsPlaced("8", 3, 100, ())]
    >>> seats = [(Row(player_id=7, bets=[{"bet": 100, "spot": 3}, {"bet": 500, "spot": 5}]), "ann"),
    ...          (Row(player_id=8, bets=[{"bet": 100}]), "bob")]  # bob's round was dealt before spots were kept
    >>> [op.get("spot") for op in with_spots([{"type": "bets"} for _ in logged], logged, seats)]
    [3, 5, None]
    """
    spots = {str(seat.player_id): iter([entry.get("spot") for entry in seat.bets]) for seat, _ in seats}
    for operation, op in zip(operations, logged, strict=True):
        if isinstance(op, BetsPlaced):
            spot = next(spots.get(op.player, iter(())), None)
            if spot is not None:
                operation["spot"] = spot
    return operations


def seat_json(seat: Any, name: str) -> dict[str, Any]:
    """A seat as every player at the table sees it: who, where, and their bets (the round's ``seats``)."""
    return {"player_id": seat.player_id, "name": name, "position": seat.position, "bets": seat.bets,
            "total": bets_total(seat.bets)}


def _seats_shown(session: Session, round_id: int, player_id: int) -> tuple[list[tuple[Any, str]], int]:
    """The first seats of the round and the viewer's own, and how many seats there are in all."""
    shown = seats_of(session, round_id, OTHERS_SHOWN + 1)
    if len(shown) <= OTHERS_SHOWN:
        return shown, len(shown)
    count = run(session, SEAT_COUNT, {"round_id": round_id}).scalar()
    shown = shown[:OTHERS_SHOWN]
    if all(seat.player_id != player_id for seat, _ in shown):
        row = session.execute(SEAT_ROWS.where(_SEAT.round_id == round_id, _SEAT.player_id == player_id)).first()
        if row is not None:
            shown.append((row, row.name))
    return shown, int(count or 0)


def round_json(session: Session, round_row: Round, table: TableSpec, player_id: int, engine: Engine | None,
               seats: tuple[list[tuple[Any, str]], int] | None = None,
               hold: Callable[[], AbstractContextManager[Any]] = nullcontext) -> dict[str, Any]:
    """A round as one player may see it: the engine's view for that player, with the table's facts around it.

    At a table of hundreds (power), other players beyond the first :data:`OTHERS_SHOWN` are counted,
    not listed: ``seat_count`` says how many there are. ``seats``: the seats shown and their count, when
    the caller has them already (a private round's one seat). ``hold``: the round's lock, held while the
    engine is read (not while the database is), for a caller that does not hold it already.
    """
    shown, seat_count = seats if seats is not None else _seats_shown(session, round_row.id, player_id)
    names = {str(seat.player_id): name for seat, name in shown}
    finished = revealed_of(session, round_row.shoe_id) if round_row.status in FINISHED else None  # a row
    view: dict[str, Any] = {
        "id": round_row.id, "table_id": round_row.table_id, "variant": round_row.variant, "status": round_row.status,
        "commitment": finished.commitment if finished is not None else commitment_of(session, round_row.shoe_id),
        "currency": table.currency,
        "void_reason": round_row.void_reason, "betting_closes_at": iso(round_row.betting_closes_at),
        "players": [{"player_id": seat.player_id, "name": name} for seat, name in shown],
        "seat_count": seat_count,
        "seats": [seat_json(seat, name) for seat, name in shown],
        "dealer": {"cards": [], "total": 0, "hidden": 0, "hidden_at": None},
        "hands": [], "side_bets": [], "insurance": [], "insurance_taken": [],
        "decision": None, "legal_actions": [], "offers": {}, "deciding": [], "others_withheld": False,
        "drawing": False, "deadline": None,
    }
    mine = next((seat for seat, _ in shown if seat.player_id == player_id), None)
    if mine is not None:
        view["me"] = {"staked": mine.staked, "returned": mine.returned, "balance_before": mine.balance_before,
                      "balance_after": mine.balance_after, "bets": mine.bets, "timed_out": mine.timed_out}
    if not was_dealt(round_row) or engine is None:  # taking bets, or void before its deal: no card to show
        return view
    with hold():
        seen = engine.view(str(player_id), among=names)  # the hands shown, not a power table's thousand
        offers = engine.pending_offers(str(player_id)) if seen.viewer_to_act and seen.decision else ()
        # What each legal action that adds a stake (double, triple, quadruple, split) would take from the balance,
        # as the wallet will be asked for it: the clients tell an action the balance cannot cover before it is sent,
        # from the engine's own figure, where each kept a copy of its rule (found by review).
        costs = {str(action): engine.cost_of(action, str(player_id)) for action in seen.legal_actions
                 if action in COSTLY_ACTIONS and action is not Action.INSURANCE} if seen.viewer_to_act else {}
        # Whose decision the table waits for: one player in turn, or everyone still deciding in a common draw,
        # where a player who has stopped deciding may have busted on a card: there only the viewer (deciding
        # here, since a withheld view has the viewer's own decision or none) is told.
        deciding = [player_id] if seen.others_withheld else [
            int(player) for player in names if engine.decision(player) is not None]
    view.update(_cards_json(seen, names, str(player_id)))
    if round_row.status == "playing":  # settled or void: every insurance is in ``insurance``, settled
        view["insurance_taken"] = [{"seat": seat, "stake": stake} for seat, stake in seen.insurance_taken]
    view["others_withheld"], view["drawing"] = seen.others_withheld, seen.drawing
    since = aware(round_row.decision_since)
    deadline = since + timedelta(seconds=table.decision_timeout) if since and round_row.status == "playing" else None
    # The round's clock, for everyone: in a common draw the step's, which all players share, so a player who
    # has chosen (or stood) sees how long the others may take; it moves only when the step does.
    view["deadline"] = iso(deadline)
    if seen.decision is not None and round_row.status == "playing":
        decision = seen.decision
        view["decision"] = {"player_id": int(decision.player), "name": names.get(decision.player),
                            "seat": decision.seat, "hand": decision.hand, "kind": str(decision.kind),
                            "deadline": iso(deadline)}
        view["legal_actions"] = [str(action) for action in seen.legal_actions]
        view["offers"] = dict(seen.offers)
        if costs:
            view["offers"]["costs"] = costs
        if seen.viewer_to_act and decision.kind != "play":  # every offer of the viewer's, answered at once
            stakes = {(hand.seat, hand.hand): hand.stake for hand in seen.hands}
            view["offers"]["pending"] = [
                {"seat": offer.seat, "hand": offer.hand, "kind": offer.kind,
                 "cost": stakes[(offer.seat, offer.hand)] // 2 if offer.kind == "insurance" else 0}
                for offer in offers]
        view["deciding"] = deciding
    if finished is not None and finished.finished:
        view["revealed"] = {"salt": finished.salt, "cards": finished.cards.split(), "first_card": round_row.shoe_start}
    return view


def round_json_held(session: Session, round_row: Round, table: TableSpec, player_id: int,
                    live: LiveRounds) -> dict[str, Any]:
    """:func:`round_json` for a caller that does not hold the round: the round is held while its engine is
    fetched (it may catch up with the log) and read, and not while the database is queried."""
    if not was_dealt(round_row):
        return round_json(session, round_row, table, player_id, None)
    with live.locked(round_row.id):
        engine = live.engine(session, round_row)
    return round_json(session, round_row, table, player_id, engine, hold=partial(_read_held, live, round_row, engine))


@contextmanager
def _read_held(live: LiveRounds, round_row: Round, engine: Engine) -> Iterator[None]:
    """The round held while ``engine``, fetched for ``round_row`` (a read's snapshot), is read; the round is
    released between the two, while the database is read. A decision may change the engine in place meanwhile: if
    it did not commit, the engine was dropped, and reading it would show cards that were never dealt (a hole card
    turned, a round still open: the decision is retried or voided); if it settled the round, the view would show
    the dealer's cards and results beside the snapshot's round in play and no money paid (seen by a trial, 3 views
    in 5,288 at crowded shared tables). Either way :class:`SnapshotBehind`: the caller reads again, anew."""
    with live.locked(round_row.id):
        if round_row.status == "playing" and (not live.current(round_row.id, engine)
                                              or engine.phase is Phase.SETTLED):
            raise SnapshotBehind()
        yield


def _cards_json(seen: RoundView, names: dict[str, str], viewer: str) -> dict[str, Any]:
    hands = [h for h in seen.hands if h.player in names or h.player == viewer]
    result: dict[str, Any] = {
        "dealer": dealer_json(seen),
        "hands": [{**hand_json(h, names), "player_id": int(h.player), "name": names.get(h.player, h.player)}
                  for h in hands],
        "side_bets": [], "insurance": [],
    }
    for op in seen.settlements:
        if op.player not in names:
            continue
        entry = {"player_id": int(op.player), "seat": op.seat, "stake": op.stake, "result": str(op.result),
                 "returned": op.returned}
        if op.item == "insurance":
            result["insurance"].append(entry)
        elif op.item != "hand":
            result["side_bets"].append({**entry, "name": op.item})
    return result


def unseen_cards(shoe: list[Card], earlier_rounds: list[Card], seen: RoundView) -> list[Card]:
    """What a live shoe still holds as this player knows it: the whole shoe less the cards of earlier
    rounds (all shown by their end) and the cards face up in this round. The hole card stays unseen.

    >>> from twentyone.core.cards import parse_cards
    >>> from twentyone.core.view import FaceDownCard
    >>> from twentyone.core.operations import CardDealt
    >>> cards = parse_cards(["AS", "KD", "7C", "7C", "2H"])
    >>> log = (CardDealt(cards[1], 1, 1), FaceDownCard(0, 0))
    >>> class Seen: operations = log
    >>> [str(c) for c in unseen_cards(cards, [cards[2]], Seen)]
    ['AS', '7C', '2H']
    """
    left = Counter(shoe)
    left.subtract(earlier_rounds)
    left.subtract(op.card for op in seen.operations if isinstance(op, CardDealt))
    return list((+left).elements())


def as_utc(moment: datetime | None, name: str) -> datetime | None:
    """An aware time in UTC, as the database stores it (SQLite keeps no offset), or a 422 naming the field.

    >>> as_utc(datetime.fromisoformat("2026-12-01T01:30:00+01:00"), "since").isoformat()
    '2026-12-01T00:30:00+00:00'
    >>> as_utc(datetime.fromisoformat("0001-01-01T00:00:00+01:00"), "until")
    Traceback (most recent call last):
    ...
    twentyone.server.context.ServiceError: until: out of range.
    """
    try:
        return moment.astimezone(UTC) if moment is not None else None
    except OverflowError:
        raise ServiceError(422, f"{name}: out of range.") from None


def without_new_stakes(view: dict[str, Any], caller: Caller, now: datetime, room: int | None = None) -> dict[str, Any]:
    """The round ``view`` as ``caller`` may play it: while they have excluded themselves, or are past their session
    time limit, the actions that add a stake (double, split, a power table's triple and quadruple) are left out of
    their legal actions, since each would be refused (403). Before, the page offered them, then said no (noted by two
    trials; the session's case by review). ``room``: what the caller's daily loss limit lets them stake still today
    (:func:`loss_room`), given to them as ``me.loss_room``; an action that adds more is left out too (a trial of
    players: a split the limit refused was lit, and the hint named it best).

    >>> until = datetime(2026, 12, 9, tzinfo=UTC)
    >>> without_new_stakes({"legal_actions": ["hit", "stand", "double"]}, Caller(7, "ann", "player",
    ...                    excluded_until=until), datetime(2026, 12, 2, tzinfo=UTC))
    {'legal_actions': ['hit', 'stand']}
    >>> view = {"legal_actions": ["hit", "stand", "double", "split"], "me": {},
    ...         "offers": {"costs": {"double": 500, "split": 2500}}}
    >>> ann = Caller(7, "ann", "player")
    >>> without_new_stakes(view, ann, datetime(2026, 12, 2, tzinfo=UTC), room=1000)["legal_actions"]
    ['hit', 'stand', 'double']
    >>> offer = {"legal_actions": ["insurance", "no-insurance"], "me": {}, "offers": {"insurance": 250}}
    >>> without_new_stakes(offer, ann, datetime(2026, 12, 2, tzinfo=UTC), room=100)["legal_actions"]
    ['no-insurance']
    """
    if room is not None and "me" in view:
        view["me"]["loss_room"] = room
    if view.get("legal_actions") and caller.kept_from_play(now):
        view["legal_actions"] = [action for action in view["legal_actions"] if action not in COSTLY_ACTIONS]
    elif view.get("legal_actions") and room is not None:
        offers = view.get("offers", {})
        costs = {**offers.get("costs", {}), "insurance": offers.get("insurance", 0)}  # insurance is a bet too (review)
        view["legal_actions"] = [action for action in view["legal_actions"] if costs.get(action, 0) <= room]
    return view


def loss_room(session: Session, caller: Caller, currency: str, now: datetime) -> int | None:
    """What ``caller`` may still stake today in ``currency`` under their daily loss limit, as a stake is checked
    (:meth:`~twentyone.server.accounts.Accounts.check_limits`: today's losses and the stake within the limit); None
    without a limit. One statement, for a caller with a limit alone."""
    if caller.daily_loss_limit is None or caller.is_operator:  # none a minute ago (the caller's memory): none asked
        return None
    # The limit in force now, as the stake's check reads it: the caller's copy is up to a minute old (review).
    limits = session.scalar(select(PLAYERS.c.limits).where(PLAYERS.c.id == caller.id))
    limit = limits_in_force(limits or {}, now).get("daily_loss_limit")
    return None if limit is None else room_under(session, caller.id, int(limit), currency, now)


def page_of_rounds(statuses: tuple[str, ...] | None, table: str | None, before: int | None,
                   limit: int) -> Select[tuple[int]]:
    """The ids of a page of rounds, newest first: ``limit`` of them below ``before``, of ``statuses`` (None: any) at
    ``table`` (None: any).

    Each status is read on its own, newest first and no further than the page: at a table along the index on
    (table_id, status, id); elsewhere along the index on (status, id) (migration 0014: PostgreSQL's index on status
    alone kept no order of the ids, and a page of a rare status read thousands of rounds); with neither, the rounds
    themselves by id. The parts are merged, so a page costs the same after a year of rounds, where one query of
    several statuses ("status IN (...) ORDER BY id") reads every round of those statuses and sorts them.

    >>> page = page_of_rounds(("settled",), "classic", 900, 21)
    >>> print(page.whereclause.compile(compile_kwargs={"literal_binds": True}))
    rounds.status = 'settled' AND rounds.table_id = 'classic' AND rounds.id < 900
    """
    rounds = ROUNDS.c

    def part(status: str | None) -> Select[tuple[int]]:
        where = [rounds.status == status] if status is not None else []
        where += [rounds.table_id == table] if table is not None else []
        where += [rounds.id < before] if before is not None else []
        return select(rounds.id).where(*where).order_by(rounds.id.desc()).limit(limit)

    if statuses is None and table is None:
        return part(None)
    parts = [part(status) for status in statuses or STATUSES]  # a table's rounds: its index leads with the status
    if len(parts) == 1:
        return parts[0]
    merged = union_all(*(select(each.subquery().c.id) for each in parts)).subquery()
    return select(merged.c.id).order_by(merged.c.id.desc()).limit(limit)


_OWED = (select(WalletCall.round_id, func.sum(WalletCall.amount))
         .where(WalletCall.status == "pending", WalletCall.kind == "credit",
                WalletCall.player_id == bindparam("player"),
                WalletCall.round_id.in_(bindparam("rounds", expanding=True)))
         .group_by(WalletCall.round_id))


def owed_to(session: Session, player_id: int, round_ids: list[int]) -> dict[int, int]:
    """What each of these rounds returned to the player that an operator's wallet has not yet taken (its credits
    still pending in the outbox, retried until it does), by round; none on the built-in ledger, which has no outbox.
    Before, a player whose winnings waited saw them returned in history and a balance without them, and nothing said
    they were on their way (found by a trial of an integrator)."""
    if not round_ids:
        return {}
    found = session.execute(_OWED, {"player": player_id, "rounds": round_ids})
    return {round_id: int(total or 0) for round_id, total in found if round_id is not None}



def with_deciders(operations: list[dict[str, Any]], actions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A replay's operations, each decision marked with who took it: ``"by": "player"`` or ``"timer"`` (the sheet's
    auto decision when the decision time ran out). The engine logs one action for each decision taken, in the order of
    the round's actions (those the viewer may see: the same filter applies to both), so the n-th action operation is
    the n-th action. Before, the replay showed a stand the timer took as the player's own (noted by a trial).
    Where the two do not match (never, by the engine's rule), nothing is marked rather than the wrong thing.

    >>> ops = [{"type": "card"}, {"type": "action", "action": "no-insurance"}, {"type": "action", "action": "stand"}]
    >>> [op.get("by") for op in with_deciders(ops, [{"source": "player"}, {"source": "timeout"}])]
    [None, 'player', 'timer']
    """
    decided = [op for op in operations if op["type"] == "action"]
    if len(decided) != len(actions):
        return operations
    for op, action in zip(decided, actions, strict=True):
        op["by"] = "timer" if action["source"] == "timeout" else "player"
    return operations

class Views:
    def __init__(self, store: Store, live: LiveRounds, tables: TableRegistry, clock: Callable[[], datetime]) -> None:
        self.store = store
        self.live = live
        self.tables = tables
        self.clock = clock

    @contextmanager
    def engine(self, session: Session, round_row: Round) -> Iterator[Engine | None]:
        """The round's engine (None while it takes bets, or void before its deal: :func:`was_dealt`), held while the
        caller reads it (``LiveRounds.held``)."""
        if not was_dealt(round_row):
            yield None
            return
        with self.live.held(session, round_row) as engine:
            yield engine

    def _round_json(self, session: Session, round_row: Round, player_id: int) -> dict[str, Any]:
        """:func:`round_json`, with the round held only while its engine is fetched and read."""
        return round_json_held(session, round_row, self.tables.of_round(round_row), player_id, self.live)

    def _mine(self, session: Session, caller: Caller, round_id: int) -> Round:
        """The round, if the caller sits in it (the operator reads every round); else 404 either way."""
        round_row = session.get(Round, round_id)
        if round_row is None or (not caller.is_operator and seat_of(session, round_id, caller.id) is None):
            raise ServiceError(404, f"There is no round {round_id} of yours.")
        return round_row

    def round(self, caller: Caller, round_id: int) -> dict[str, Any]:
        now = self.clock()

        def read(session: Session) -> tuple[dict[str, Any], int | None]:
            view = self._round_json(session, self._mine(session, caller, round_id), caller.id)
            return view, loss_room(session, caller, view["currency"], now)

        view, room = self.store.read_anew(read)
        return without_new_stakes(view, caller, now, room)

    def history(self, caller: Caller, page: int = 1, size: int = 10, before: int | None = None) -> dict[str, Any]:
        """The caller's rounds, newest first, ``size`` to a page.

        Two ways to page: ``page`` (1, 2, ...) counts rounds from the newest, so page *n* reads
        the (n-1) x size rounds before it and shifts when a round is played meanwhile; ``before``
        (the ``next_before`` of the page before) starts just below a round id, so every page costs
        the same and none shifts. Not both at once.
        """
        if page < 1 or not 1 <= size <= 100 or (before is not None and before < 1):
            raise ServiceError(422, "page starts at 1, size is 1 to 100 and before is a round id.")
        if before is not None and page != 1:
            raise ServiceError(422, "Page by page or by before, not both at once.")

        def page_of(session: Session) -> dict[str, Any]:
            items, more = self.history_entries(session, caller.id, size, before, page)
            return {"page": None if before is not None else page, "size": size, "before": before, "has_more": more,
                    "rounds": items, "next_before": items[-1]["id"] if more else None}

        return self.store.read_anew(page_of)

    def history_entries(self, session: Session, player_id: int, size: int, before: int | None = None,
                        page: int = 1) -> tuple[list[dict[str, Any]], bool]:
        """A page of the player's history as the player sees it (``/me/history``'s ``rounds``), and whether more
        follow; for a caller inside :meth:`Store.read_anew` (a round in play read from a snapshot behind it is read
        again). The operator's look at a player (``/admin/players/{name}``) shows these, the player's own view: no
        card the player may not see, whoever asks."""
        # Newest first along the index on (player_id, round_id): a page reads its own rows, not the player's whole
        # history sorted (migration 0004).
        query = (select(Round).join(RoundSeat, RoundSeat.round_id == Round.id)
                 .where(RoundSeat.player_id == player_id, Round.status.in_(("settled", "void", "playing")))
                 .order_by(RoundSeat.round_id.desc()))
        query = query.where(RoundSeat.round_id < before) if before is not None else query.offset((page - 1) * size)
        rows = session.scalars(query.limit(size + 1)).all()
        owed = owed_to(session, player_id, [row.id for row in rows[:size]])
        return ([self._history_entry(session, row, player_id, owed.get(row.id, 0)) for row in rows[:size]],
                len(rows) > size)

    def _history_entry(self, session: Session, round_row: Round, player_id: int, owed: int) -> dict[str, Any]:
        view = self._round_json(session, round_row, player_id)
        seat = seat_of(session, round_row.id, player_id)
        assert seat is not None
        return {"id": round_row.id, "table_id": round_row.table_id, "variant": round_row.variant,
                "currency": view["currency"], "status": round_row.status, "created_at": iso(round_row.created_at),
                "settled_at": iso(round_row.settled_at), "bets": seat.bets, "dealer": view["dealer"],
                "hands": [hand for hand in view["hands"] if hand["player_id"] == player_id],
                "decisions": [a["action"] for a in round_actions(session, round_row.id) if a["player_id"] == player_id],
                "side_bets": [s for s in view["side_bets"] if s["player_id"] == player_id],
                "insurance": [s for s in view["insurance"] if s["player_id"] == player_id],
                # Insurance paid for in a round still in play, not yet settled: without it the stakes listed fell
                # short of ``staked`` until the round settled (a trial's leftover).
                "insurance_taken": view["insurance_taken"],
                "staked": seat.staked, "returned": seat.returned, "balance_before": seat.balance_before,
                "balance_after": seat.balance_after, "timed_out": seat.timed_out, "owed": owed,
                "void_reason": round_row.void_reason}

    def replay(self, caller: Caller, round_id: int) -> dict[str, Any]:
        """The round's log as the caller may see it now: every card, decision and settlement in order."""
        with self.store.read() as session:
            round_row = self._mine(session, caller, round_id)
            with self.engine(session, round_row) as engine:
                if engine is None:
                    raise ServiceError(409, "The round has not been dealt yet.")
                seen = engine.view(None if caller.is_operator else str(caller.id))
            seats = seats_of(session, round_id)
            names = {str(seat.player_id): name for seat, name in seats}
            actions = round_actions(session, round_id)
            if seen.others_withheld:  # a common draw in play: the others' decisions tell of this player's cards
                actions = [action for action in actions if action["player_id"] == caller.id]
            operations = [operation_json(op, names) for op in seen.operations]
            # ``shared``: whether its bets were taken in a window (a shared table's), as the page names its hands by
            # it; the table's present setting is not the round's, and a removed table has none (a review).
            return {"id": round_id, "variant": round_row.variant, "status": round_row.status,
                    "shared": round_row.betting_closes_at is not None,
                    "operations": with_deciders(with_spots(operations, seen.operations, seats), actions),
                    "actions": actions}

    def verify(self, caller: Caller, round_id: int) -> dict[str, Any]:
        """The shuffle's proof for a round of the caller's: the commitment, and once the shoe is finished
        and the round over, its order and salt."""
        with self.store.read() as session:
            round_row = self._mine(session, caller, round_id)
            shoe = session.get(ShoeRow, round_row.shoe_id)
            assert shoe is not None
            if not shoe.finished or round_row.status not in FINISHED:
                raise ServiceError(409, "The shoe is still in play: its order and salt are revealed when it is "
                                        "finished.")
            with self.engine(session, round_row) as engine:
                drawn = [str(card) for card in engine.shoe.order[:engine.shoe.position]] if engine else []
            record = {"round_id": round_id, "shoe_id": shoe.id, "commitment": shoe.commitment, "salt": shoe.salt,
                      "cards": shoe.cards.split(), "first_card": round_row.shoe_start, "drawn": drawn}
            return {**record, "valid": verify_record(record)}

    def hint(self, caller: Caller, round_id: int) -> dict[str, Any]:
        """The EV of each legal action for the caller's pending decision, best first (exact maths)."""
        from twentyone.analysis.hints import hint, insurance_ev

        with self.store.read() as session:
            round_row = self._mine(session, caller, round_id)
            if round_row.status != "playing":
                raise ServiceError(409, "No decision is pending in this round.")
            with self.engine(session, round_row) as engine:
                assert engine is not None
                seen = engine.view(str(caller.id))
                costs = {str(action): engine.cost_of(action, str(caller.id)) for action in seen.legal_actions
                         if action in COSTLY_ACTIONS and action is not Action.INSURANCE} if seen.viewer_to_act else {}
                # Every offer waiting for the caller (insurance on each hand at once), each with its insurance's cost
                pending = [(offer, engine.cost_of(Action.INSURANCE, decision=offer)
                            if offer.kind is DecisionKind.INSURANCE else 0)
                           for offer in engine.pending_offers(str(caller.id))] if seen.viewer_to_act else []
            now = self.clock()
            room = loss_room(session, caller, self.tables.of_round(round_row).currency, now)
            rules = engine.rules  # immutable: read outside the hold
            unseen = None
            if rules.shoe.cut_card is not None:  # a live shoe: the cards the player has not seen
                shoe = session.get(ShoeRow, round_row.shoe_id)
                assert shoe is not None
                unseen = unseen_cards(rules.shoe.composition.cards(),
                                      [parse_card(text) for text in shoe.cards.split()[:round_row.shoe_start]], seen)
        hand = seen.pending_hand
        if hand is None or not seen.viewer_to_act:
            raise ServiceError(409, nothing_to_decide(str(caller.id), rules.deal.common_draw))
        assert seen.decision is not None
        up = seen.dealer_cards[0]  # while a decision waits, the one card the dealer shows
        # Ranked among the actions the player may take: not one their limits would refuse (a trial of players: a
        # split past the daily loss limit was named best).
        offers = {"costs": costs, **({"insurance": seen.offers["insurance"]} if "insurance" in seen.offers else {})}
        legal = without_new_stakes({"legal_actions": [str(a) for a in seen.legal_actions], "offers": offers},
                                   caller, now, room)["legal_actions"]
        # Each offer waiting, ranked as its own: with insurance asked of several hands at once, the page showed the
        # EVs of the pending hand's row alone (a trial of players). Insurance pays on the one hole card: it is valued
        # once, from every card of the player's hands (valued from each hand's own, it differed by hand: a review).
        cards = {(shown.seat, shown.hand): shown.cards for shown in seen.hands}
        mine = [card for shown in seen.hands if shown.player == str(caller.id) for card in shown.cards]
        try:
            ranked = hint(rules, hand.cards, up, legal, first_decision=hand.first_decision, unseen=unseen)
            insured = insurance_ev(rules, [*mine, up], unseen) if pending else 0.0
            offers_ranked: list[tuple[Decision, list[tuple[str, float]]]] = []
            for offer, cost in pending:
                answers = without_new_stakes({"legal_actions": [str(answer) for answer in OFFER_ANSWERS[offer.kind]],
                                              "offers": {"insurance": cost}}, caller, now, room)["legal_actions"]
                if offer.kind is DecisionKind.INSURANCE:
                    valued = {str(Action.INSURANCE): insured, str(Action.NO_INSURANCE): 0.0}
                    offers_ranked.append((offer, sorted(((a, valued[a]) for a in answers), key=lambda a: -a[1])))
                elif (offer.seat, offer.hand) == (seen.decision.seat, seen.decision.hand):
                    offers_ranked.append((offer, ranked))  # the pending decision's own ranking
                else:
                    offers_ranked.append((offer, hint(rules, cards[offer.seat, offer.hand], up, answers,
                                                      first_decision=True, unseen=unseen)))
            if seen.decision.kind is DecisionKind.INSURANCE:
                ranked = next((answers for offer, answers in offers_ranked if offer == seen.decision), ranked)
        except ValueError as error:  # a live shoe too short to value (a rules file's cut card past its end)
            raise ServiceError(409, str(error)) from None
        return {"round_id": round_id, "seat": seen.decision.seat, "hand": seen.decision.hand,
                "actions": [{"action": action, "ev": value} for action, value in ranked],
                "offers": [{"seat": offer.seat, "hand": offer.hand, "kind": str(offer.kind),
                            "actions": [{"action": action, "ev": value} for action, value in answers]}
                           for offer, answers in offers_ranked]}

    def seated(self) -> dict[str, int]:
        """Players in each table's open round (shared tables) or playing a round now (private ones)."""
        with self.store.read() as session:
            rows = session.execute(select(Round.table_id, func.count(func.distinct(RoundSeat.player_id)))
                                   .join(RoundSeat, RoundSeat.round_id == Round.id)
                                   .where(Round.status.in_(("betting", "playing"))).group_by(Round.table_id)).all()
        return {table_id: int(count) for table_id, count in rows}

    def closed_tables(self, caller: Caller, table_ids: Collection[str]) -> list[dict[str, Any]]:
        """Of ``table_ids`` (tables taken out of the configuration with rounds open: :meth:`seated` names them), those
        where the caller has a round open, each as its stand-in (``closed``) with their newest there (``round_id``): the
        lobby links them, since such a table is in no lobby. Before, a player whose round was in play at a table
        the operator removed could not reach it from the page (found by a trial of an operator)."""
        if caller.is_operator or not table_ids:
            return []
        with self.store.read() as session:
            rows = session.execute(OWN_OPEN_ROUNDS_AT, {"table_ids": sorted(table_ids), "player_id": caller.id}).all()
        newest = {row.table_id: row for row in rows}  # a table's page shows its newest round: one link a table
        return [{**table_json(self.tables.of_round(row)), "round_id": row.id} for row in newest.values()]

    def open_rounds(self, caller: Caller, table_ids: Collection[str]) -> list[dict[str, Any]]:
        """The caller's rounds still open at ``table_ids`` (the tables configured now), newest first: ``round_id``,
        ``table_id`` and ``status`` (``betting``: bets in a round still forming; ``playing``). The lobby lists them,
        so that a player who went back to it mid-round sees where a round of theirs goes on (a trial). Read from the
        rounds open at those tables (the index on table and status), each joined to the caller's seat: the same
        cost after any number of rounds, the player's or the table's."""
        if caller.is_operator or not table_ids:
            return []
        with self.store.read() as session:
            rows = session.execute(OWN_OPEN_ROUNDS_AT, {"table_ids": sorted(table_ids), "player_id": caller.id}).all()
        return [{"round_id": row.id, "table_id": row.table_id, "status": row.status} for row in reversed(rows)]

    def report(self, caller: Caller, since: datetime | None = None, until: datetime | None = None) -> dict[str, Any]:
        """Operator report: rounds and money by table, each line in one ``currency``, and ``totals`` by currency
        (house result = staked - returned).

        Without a period: every round the server has played, open ones included in ``rounds``, and what is in
        play now: ``open`` counts the rounds taking bets or being played, and ``open_staked`` sums their seats'
        stakes, money taken and not yet settled (a forming round's seats have staked nothing: stakes are taken when
        betting closes). With ``since`` and/or ``until`` (aware datetimes): the rounds that
        ended, settled or void, at or after ``since`` and before ``until``, read through
        the index on status and the time a round ended (migration 0009), so that one day's report
        costs the same after a year of rounds. Money counts settled rounds only: a void
        round returned every stake. A period's lines have no ``open`` nor ``open_staked``: an open round has not
        ended in any period, and a 0 there would read as nothing in play.

        A round counts in the currency its stakes were taken in (migration 0013), not its table's now: a table
        that played in two currencies (its configuration changed) has a line for each, keyed ``table/CUR``;
        one that played in one is keyed by its id alone. A round that names no currency (none of its money was
        on record before 0013) counts in its table's, or, at a table configured nowhere now, in a line whose
        currency is null, which no total takes.
        """
        if not caller.is_operator:
            raise ServiceError(403, "Only the operator can do this.")
        since, until = as_utc(since, "since"), as_utc(until, "until")
        if since and until and since >= until:
            raise ServiceError(422, "until: must come after since.")
        ended: list[ColumnElement[bool]] = [Round.status.in_(FINISHED)] if since or until else []  # the index's lead
        if since is not None:
            ended.append(Round.settled_at >= since)
        if until is not None:
            ended.append(Round.settled_at < until)
        configured = self.tables.all()
        rows: dict[tuple[str, str | None], dict[str, int]] = {}
        in_play = {"open": 0, "open_staked": 0} if not ended else {}  # a period's report is of rounds that ended
        # One statement, so one snapshot: rounds that end while the report runs are in both counts or in neither.
        with self.store.read() as session:
            for table_id, round_currency, status, count, staked, returned in session.execute(
                    select(Round.table_id, Round.currency, Round.status, func.count(func.distinct(Round.id)),
                           func.coalesce(func.sum(RoundSeat.staked), 0), func.coalesce(func.sum(RoundSeat.returned), 0))
                    .outerjoin(RoundSeat, RoundSeat.round_id == Round.id).where(*ended)
                    .group_by(Round.table_id, Round.currency, Round.status)):
                table = configured.get(table_id)
                currency = round_currency or (table.currency if table is not None else None)
                entry = rows.setdefault((table_id, currency), {"rounds": 0, "void": 0, "staked": 0, "returned": 0,
                                                               "house_result": 0, **in_play})
                entry["rounds"] += int(count)
                entry["void"] += int(count) if status == "void" else 0
                if status == "settled":  # a void round returned every stake; an open one has no result yet
                    entry["staked"] += int(staked)
                    entry["returned"] += int(returned)
                elif status in OPEN:  # what is in play now: money taken and not yet settled (a seat forming: none)
                    entry["open"] += int(count)
                    entry["open_staked"] += int(staked)
        lines_of: dict[str, int] = {}
        for table_id, _ in rows:
            lines_of[table_id] = lines_of.get(table_id, 0) + 1
        tables: dict[str, dict[str, Any]] = {}
        totals: dict[str, dict[str, int]] = {}  # by currency: money of two currencies is never added
        for (table_id, currency), entry in sorted(rows.items(), key=lambda item: (item[0][0], item[0][1] or "")):
            entry["house_result"] = entry["staked"] - entry["returned"]
            key = table_id if lines_of[table_id] == 1 else f"{table_id}/{currency or '?'}"
            tables[key] = {"table_id": table_id, "currency": currency, **entry}
            if currency is not None:
                total = totals.setdefault(currency, dict.fromkeys(entry, 0))
                for field, amount in entry.items():
                    total[field] += amount
        return {"period": {"since": iso(since), "until": iso(until)}, "tables": tables, "totals": totals}

    def rounds(self, caller: Caller, status: str | None = None, table: str | None = None, before: int | None = None,
               size: int = 20) -> dict[str, Any]:
        """The operator's list of rounds, newest first, ``size`` to a page: every round, or those of one ``status``
        (``open``: taking bets or being played) and/or one ``table``; ``before`` (the ``next_before`` of the page
        before) starts just below a round id, as ``/me/history`` pages. A round left open after a crash is found here
        (``status=open``), not only in SQL.

        Each round with its clocks and its seats' money: ``seats`` (how many), ``staked`` and ``returned`` (summed
        over them). No cards: those are in the players' views of the round. One statement, so one snapshot, which
        reads a page's rounds along the indexes (:func:`page_of_rounds`), never the whole history.
        """
        if not caller.is_operator:
            raise ServiceError(403, "Only the operator can do this.")
        if status not in (None, "open", *STATUSES) or not 1 <= size <= 100 or (before is not None and before < 1):
            raise ServiceError(422, "status is open, betting, playing, settled or void, size is 1 to 100 and before is "
                                    "a round id.")
        statuses = OPEN if status == "open" else (status,) if status is not None else None
        rounds, seats = ROUNDS.c, ROUND_SEATS.c
        configured = self.tables.all()
        with self.store.read() as session:
            # The page's ids as a condition, not a table joined: SQLite's planner, given the join and the GROUP BY,
            # walked every round in the order of the ids to meet the page's (a page's cost grew with the history).
            rows = session.execute(
                select(rounds.id, rounds.table_id, rounds.variant, rounds.currency, rounds.status, rounds.created_at,
                       rounds.settled_at, rounds.betting_closes_at, rounds.decision_since, rounds.void_reason,
                       func.count(seats.id).label("seats"), func.coalesce(func.sum(seats.staked), 0).label("staked"),
                       func.coalesce(func.sum(seats.returned), 0).label("returned"))
                .select_from(ROUNDS.outerjoin(ROUND_SEATS, seats.round_id == rounds.id))
                .where(rounds.id.in_(page_of_rounds(statuses, table, before, size + 1)))
                .group_by(rounds.id).order_by(rounds.id.desc())).all()  # by its key: PostgreSQL takes the rest
            played = bool(rows) or table is None or session.execute(
                select(rounds.id).where(rounds.table_id == table).limit(1)).first() is not None
        # A table configured nowhere and never played at: a misspelt id (?table=clasic) is a 404, where an empty page
        # read as "no rounds there" (found by an operator's trial). One taken out of the configuration still lists the
        # rounds it played. Looked up after the read's session: the registry may read the database again.
        if table is not None and not played and self.tables.find(table) is None:
            raise ServiceError(404, f"There is no table {table!r}, and no round was played at one of that id.")
        items = [{"id": row.id, "table_id": row.table_id, "variant": row.variant,
                  # A round from before migration 0013 names no currency: its table's, as the report counts it.
                  "currency": row.currency or (configured[row.table_id].currency if row.table_id in configured
                                               else None),
                  "status": row.status, "created_at": iso(row.created_at), "settled_at": iso(row.settled_at),
                  "betting_closes_at": iso(row.betting_closes_at), "decision_since": iso(row.decision_since),
                  "seats": int(row.seats), "staked": int(row.staked), "returned": int(row.returned),
                  "void_reason": row.void_reason} for row in rows[:size]]
        more = len(rows) > size
        return {"status": status, "table": table, "size": size, "before": before, "has_more": more,
                "rounds": items, "next_before": items[-1]["id"] if more else None}

    def wallet_calls(self, caller: Caller, after: int | None = None, size: int = 50) -> dict[str, Any]:
        """The calls to the operator's wallet still waiting to go through, oldest first, for the operator to watch
        and reconcile: a credit (a win, a refund) or a rollback the operator refused or has not answered. Each stays
        pending, with its last error, retried at every tick of the outbox's process; nothing is given up.

        ``pending`` counts them and sums their amounts by kind and currency; ``calls`` is one page, ``size`` of them
        from the id ``after`` (the ``next_after`` of the page before), read along the index on status. A server whose
        balances are its own ledger's makes no such call.
        """
        if not caller.is_operator:
            raise ServiceError(403, "Only the operator can do this.")
        if not 1 <= size <= 100 or (after is not None and after < 0):
            raise ServiceError(422, "size is 1 to 100 and after is a call's id.")
        pending = WalletCall.status == "pending"
        with self.store.read() as session:
            totals = session.execute(select(WalletCall.kind, WalletCall.currency, func.count(),
                                            func.coalesce(func.sum(WalletCall.amount), 0))
                                     .where(pending).group_by(WalletCall.kind, WalletCall.currency)).all()
            query = select(WalletCall).where(pending).order_by(WalletCall.id).limit(size + 1)
            rows = session.scalars(query if after is None else query.where(WalletCall.id > after)).all()
        calls = [{"id": call.id, "tx_id": call.tx_id, "kind": call.kind, "player_id": call.player_id,
                  "currency": call.currency, "amount": call.amount, "round_id": call.round_id,
                  "attempts": call.attempts, "last_error": call.last_error, "created_at": iso(call.created_at)}
                 for call in rows[:size]]
        by_kind: dict[str, dict[str, dict[str, int]]] = {}
        for kind, currency, count, amount in totals:
            by_kind.setdefault(kind, {})[currency] = {"count": int(count), "amount": int(amount)}
        return {"pending": {"count": sum(int(row[2]) for row in totals), "by_kind": by_kind},
                "calls": calls, "next_after": calls[-1]["id"] if len(rows) > size else None}


def nothing_to_decide(who: str | None, common_draw: bool) -> str:
    """Why a decision (or a hint for one) was refused when none is the caller's. In a common draw everyone chooses at
    the same step, so "not your turn" was wrong there: the player had chosen already (in another tab, say) or their
    hands were done, and the step waits for the others (found by a trial with two tabs at power).

    >>> nothing_to_decide("7", True).startswith("You have nothing to decide at this step")
    True
    >>> nothing_to_decide("7", False), nothing_to_decide(None, False)
    ('It is not your turn.', 'No decision is pending.')
    """
    if who is None:
        return "No decision is pending."
    if common_draw:
        return ("You have nothing to decide at this step: you chose already, or your hands are done. The round goes "
                "on once every player has chosen, or when the step's clock runs out.")
    return "It is not your turn."
