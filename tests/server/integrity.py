"""Ground truth for the integrity tests: what is secret at a table right now, read from the database and the engine.

A secret is a face-down card not yet turned, a card still in the shoe, or the salt
(and so the order) of a shoe that is not finished. The tests stack the top of a
shoe with distinct cards, so any of those card strings appearing in a player's
answer is a leak, exactly; and the money checks read the ledger directly.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import func, select

from twentyone.core.operations import CardDealt, HoleCardRevealed
from twentyone.core.round import HandBet
from twentyone.core.round import Round as Engine
from twentyone.core.shoe import Shoe
from twentyone.server.live import rebuild
from twentyone.server.models import Account, LedgerEntry, Round, RoundSeat
from twentyone.server.models import Shoe as ShoeRow
from twentyone.server.service import GameService
from twentyone.variants import builtin_rules

CARD = re.compile(r"(?<![A-Za-z0-9])([2-9TJQKA][SHDC])(?![A-Za-z0-9])")
# 44 distinct cards with no 9 or 10 (power's shoe has none): small ones first, so rounds last several decisions.
DISTINCT = [f"{rank}{suit}" for rank in "2345678JQKA" for suit in "SHDC"]


@dataclass
class Secrets:
    cards: set[str] = field(default_factory=set)  # face-down or undealt card strings nobody may see yet
    salts: set[str] = field(default_factory=set)  # salts of shoes not finished
    orders: list[list[str]] = field(default_factory=list)  # undealt orders of shoes not finished

    def __bool__(self) -> bool:
        return bool(self.cards or self.salts)


def strings(payload: Any) -> Iterator[str]:
    """Every string in a JSON value, keys included."""
    if isinstance(payload, str):
        yield payload
    elif isinstance(payload, dict):
        for key, value in payload.items():
            yield str(key)
            yield from strings(value)
    elif isinstance(payload, list | tuple):
        for item in payload:
            yield from strings(item)


def card_lists(payload: Any) -> Iterator[list[str]]:
    if isinstance(payload, dict):
        for value in payload.values():
            yield from card_lists(value)
    elif isinstance(payload, list):
        if payload and all(isinstance(item, str) and CARD.fullmatch(item) for item in payload):
            yield payload
        for item in payload:
            yield from card_lists(item)


def leaks(payload: Any, secrets: Secrets) -> list[str]:
    """What of ``secrets`` the payload shows: card strings, salts, a run of a shoe's undealt order."""
    found = []
    for text in strings(payload):
        for token in CARD.findall(text):
            if token in secrets.cards:
                found.append(f"card {token} in {text[:80]!r}")
        for salt in secrets.salts:
            if salt in text:
                found.append(f"salt {salt}")
    for cards in card_lists(payload):
        for order in secrets.orders:
            if len(cards) >= 6 and any(order[i:i + 6] == cards[j:j + 6] for i in range(len(order) - 5)
                                       for j in range(len(cards) - 5)):
                found.append(f"a run of the shoe's order {cards[:6]}")
    return found


def table_secrets(service: GameService, table_id: str, stacks: dict[int, int]) -> Secrets:
    """Everything secret at ``table_id`` now. ``stacks`` maps a shoe id to the length of its stacked (distinct) top:
    the undealt cards there are exact secrets; the rest of a multi-deck shoe repeats cards, so only its salt is."""
    secrets = Secrets()
    with service.db.sessions() as session:
        shoes = session.scalars(select(ShoeRow).where(ShoeRow.table_id == table_id)).all()
        for shoe in shoes:
            if shoe.finished:
                continue
            secrets.salts.add(shoe.salt)
            cards = shoe.cards.split()
            position = shoe.position
            shown: set[str] = set()
            hidden: set[str] = set()
            playing = session.scalars(select(Round).where(Round.shoe_id == shoe.id, Round.status == "playing")).first()
            if playing is not None:
                engine = rebuild(session, playing)
                position = playing.shoe_start + engine.shoe.position
                shown, hidden = visible_and_hidden(engine)
            secrets.orders.append(cards[position:])
            if shoe.id in stacks:  # distinct cards: exact secrets
                secrets.cards |= (set(cards[position:stacks[shoe.id]]) | hidden) - shown
    return secrets


def visible_and_hidden(engine: Engine) -> tuple[set[str], set[str]]:
    """The cards dealt face up (or turned since), and the face-down ones not turned: from the log, not the view."""
    revealed = any(isinstance(op, HoleCardRevealed) for op in engine.operations)
    shown: set[str] = set()
    hidden: set[str] = set()
    for op in engine.operations:
        if isinstance(op, CardDealt):
            (shown if op.face_up or revealed else hidden).add(str(op.card))
    return shown, hidden


def stack_for(variant: str, layout: list[int], up: str = "AH", hands: Iterable[list[str]] = ()) -> list[str]:
    """Distinct cards for the top of a shoe such that, dealt to ``layout`` (hands per player, in seat order), the
    dealer's up card is ``up`` and the hands get the given first cards; found by dealing the real engine."""
    rules = builtin_rules(variant)
    engine = Engine(rules, Shoe.stacked(DISTINCT))
    for number, count in enumerate(layout):
        engine.place_bets(str(number), [HandBet(100)] * count)
    engine.deal()
    dealt = [op for op in engine.operations if isinstance(op, CardDealt)]
    index = {str(card): i for i, card in enumerate(DISTINCT)}
    wanted: dict[int, str] = {}
    dealer = [index[str(op.card)] for op in dealt if op.seat == 0]
    up_index = next(index[str(op.card)] for op in dealt if op.seat == 0 and op.face_up)
    wanted[up_index] = up
    player_slots: dict[tuple[int, int], list[int]] = {}
    for op in dealt:
        if op.seat != 0:
            player_slots.setdefault((op.seat, op.hand), []).append(index[str(op.card)])
    for slots, cards in zip(player_slots.values(), hands, strict=False):
        for slot, card in zip(slots, cards, strict=False):
            wanted[slot] = card
    for slot in dealer:
        if slot != up_index:
            wanted.setdefault(slot, "7C")  # the hole card: no dealer blackjack, the round goes on
    order = list(DISTINCT)
    rest = [card for card in DISTINCT if card not in wanted.values()]
    for i in range(len(order)):
        order[i] = wanted[i] if i in wanted else rest.pop(0)
    assert len(set(order)) == len(order)
    return order[:30]


def ledger_totals(service: GameService) -> tuple[int, list[int], dict[str, int]]:
    """(sum of every ledger row, any transfer that does not sum to zero, balance of each account)."""
    with service.db.sessions() as session:
        total = int(session.scalar(select(func.coalesce(func.sum(LedgerEntry.amount), 0))) or 0)
        unbalanced = [int(amount) for _, amount in session.execute(
            select(LedgerEntry.transfer_id, func.sum(LedgerEntry.amount)).group_by(LedgerEntry.transfer_id)).all()
            if amount != 0]
        balances = {f"{owner}/{currency}": int(amount) for owner, currency, amount in session.execute(
            select(Account.owner, Account.currency, func.coalesce(func.sum(LedgerEntry.amount), 0))
            .join(LedgerEntry, LedgerEntry.account_id == Account.id, isouter=True)
            .group_by(Account.owner, Account.currency)).all()}
    return total, unbalanced, balances


def round_money(service: GameService, player_id: int, currency: str) -> tuple[int, int]:
    """(staked, returned) over every round the player sat in, in ``currency``, from the round records."""
    staked = returned = 0
    with service.db.sessions() as session:
        rows = session.execute(select(RoundSeat.staked, RoundSeat.returned, Round.table_id)
                               .join(Round, Round.id == RoundSeat.round_id)
                               .where(RoundSeat.player_id == player_id)).all()
    for seat_staked, seat_returned, table_id in rows:
        if service.table(table_id).currency == currency:
            staked += seat_staked
            returned += seat_returned
    return staked, returned
