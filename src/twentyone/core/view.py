"""What one player may see of a round, at this moment: the only source of every player-facing output.

A :class:`RoundView` is built by :meth:`Round.view <twentyone.core.round.Round.view>`.
It holds the cards on the table as they lie (a face-down card is a
:data:`FACE_DOWN` placeholder until it is turned), the operation log with the
same cards masked, who must decide, and, for the viewer alone, the legal actions
and the amounts of any offer. The shoe's order and undealt cards are never in it.
The server's round view, replay, history and hints, its WebSocket events and
terminal play are all built from a view, never from the round itself, so what a
player may see is decided here once.

>>> from twentyone.core.round import HandBet, Round
>>> from twentyone.core.rules import rules_from_toml
>>> from twentyone.core.shoe import Shoe
>>> rules = rules_from_toml('id = "demo"\\nname = "Demo"\\n[shoe]\\ndecks = 8')
>>> game = Round(rules, Shoe.stacked(["TS", "6H", "TD", "JC", "7C"]))
>>> game.place_bets("ann", [HandBet(1000)])
>>> _ = game.deal()
>>> view = game.view("ann")
>>> [str(card) for card in view.dealer_cards], view.dealer_hidden, view.dealer_hidden_at  # the hole card 2nd
(['6H'], 1, 1)
>>> [type(op).__name__ for op in view.operations][-1]   # the hole card, masked in the log
'FaceDownCard'
>>> "JC" in repr(view)   # nowhere in the view: not the dealer's cards, not the log
False
>>> game.stand()
>>> [str(card) for card in game.view("ann").dealer_cards]
['6H', 'JC', '7C']
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from twentyone.core.cards import Card
from twentyone.core.hand import HandValue, hand_value
from twentyone.core.operations import (
    Action,
    ActionTaken,
    BetsPlaced,
    CardDealt,
    DealerChecked,
    DecisionKind,
    HandStatus,
    HoleCardRevealed,
    Operation,
    Outcome,
    Settled,
)


@dataclass(frozen=True, slots=True)
class FaceDownCard:
    """A card dealt face down, as a player sees it before it is turned: where it went, not what it is."""

    seat: int
    hand: int
    card: None = None
    face_up: bool = False


VisibleOperation = Operation | FaceDownCard
FACE_DOWN = "??"  # how a face-down card is written where a card's text is expected


class Decision(NamedTuple):
    """Who must decide what: an ``offer`` (insurance, even money, surrender) or a ``play``."""

    kind: DecisionKind
    player: str
    seat: int
    hand: int


@dataclass(frozen=True)
class HandState:
    """One hand as everyone at the table sees it (players' cards are dealt face up)."""

    player: str
    seat: int
    hand: int
    cards: tuple[Card, ...]
    value: HandValue
    stake: int
    bet: int
    status: HandStatus
    from_split: bool
    outcome: Outcome | None
    returned: int | None

    @property
    def first_decision(self) -> bool:
        """True while the hand still holds its original two cards (doubling, surrender, cash out)."""
        return len(self.cards) == 2 and not self.from_split


@dataclass(frozen=True)
class RoundView:
    """A round as ``viewer`` may see it now (``viewer`` None: a spectator, who is offered nothing)."""

    viewer: str | None
    phase: str
    dealer_cards: tuple[Card, ...]
    dealer_hidden: int
    dealer_blackjack: bool
    hands: tuple[HandState, ...]
    settlements: tuple[Settled, ...]
    operations: tuple[VisibleOperation, ...]
    decision: Decision | None
    legal_actions: tuple[Action, ...]
    offers: Mapping[str, int]
    staked: int
    returned: int
    # A common draw in play: other players' draws, decisions and results are withheld (see Round.view).
    others_withheld: bool = False
    # Lockstep: the viewer chose a card (hit, double, split) and waits for the step to complete.
    drawing: bool = False
    # Where the face-down card lies among the dealer's cards as dealt (None: none is face down). A table that deals
    # the hole card first (multiplayer) has it left of the up card: drawn there, it turns over in place, and the up
    # card does not move when it does.
    dealer_hidden_at: int | None = None

    @property
    def dealer_value(self) -> HandValue:
        """The total of the dealer's visible cards."""
        return hand_value(self.dealer_cards)

    @property
    def pending_hand(self) -> HandState | None:
        """The hand whose decision is awaited, whoever holds it."""
        if self.decision is None:
            return None
        return next(hand for hand in self.hands
                    if (hand.seat, hand.hand) == (self.decision.seat, self.decision.hand))

    @property
    def viewer_to_act(self) -> bool:
        return self.decision is not None and self.decision.player == self.viewer

    @property
    def insurance_taken(self) -> tuple[tuple[int, int], ...]:
        """The viewer's insurance taken and not yet settled, as (seat, stake): where the dealer does not peek
        (single deck's European deal) it is settled with the hands, and until then only this says the balance paid
        for it. Read only under an Ace, the one card insurance is offered under: a crowded round's operations are
        not read for it otherwise."""
        if not self.dealer_cards or self.dealer_cards[0].rank != "A":
            return ()
        settled = {op.seat for op in self.settlements if op.item == "insurance" and op.player == self.viewer}
        return tuple((op.seat, op.amount) for op in self.operations
                     if isinstance(op, ActionTaken) and op.action == Action.INSURANCE and op.player == self.viewer
                     and op.seat not in settled)


def mask_operations(operations: tuple[Operation, ...] | list[Operation]) -> tuple[VisibleOperation, ...]:
    """The log with every face-down card hidden until the log shows it turned over.

    >>> from twentyone.core.cards import parse_card
    >>> log = [CardDealt(parse_card("JC"), 0, 0, face_up=False)]
    >>> mask_operations(log)
    (FaceDownCard(seat=0, hand=0, card=None, face_up=False),)
    >>> mask_operations(log + [HoleCardRevealed(parse_card("JC"))])[0].card
    Card('JC')
    """
    revealed = any(isinstance(op, HoleCardRevealed) for op in operations)
    return tuple(
        FaceDownCard(op.seat, op.hand) if isinstance(op, CardDealt) and not op.face_up and not revealed else op
        for op in operations
    )


def hand_json(hand: HandState, names: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A hand as JSON: cards as text, its total, stake and result."""
    return {"player": (names or {}).get(hand.player, hand.player), "seat": hand.seat, "hand": hand.hand,
            "cards": [str(card) for card in hand.cards], "total": hand.value.total, "soft": hand.value.soft,
            "stake": hand.stake, "status": str(hand.status), "from_split": hand.from_split,
            "outcome": None if hand.outcome is None else str(hand.outcome), "returned": hand.returned}


def operation_json(op: VisibleOperation, names: Mapping[str, str] | None = None) -> dict[str, Any]:
    """One operation of a (masked) log as JSON; a face-down card has ``"card": null``.

    >>> from twentyone.core.cards import parse_card
    >>> operation_json(FaceDownCard(0, 0))
    {'type': 'card', 'card': None, 'to': 'dealer', 'face_up': False, 'seat': 0, 'hand': 0}
    >>> operation_json(CardDealt(parse_card("9H"), 2, 1))
    {'type': 'card', 'card': '9H', 'to': 'seat 2 hand 1', 'face_up': True, 'seat': 2, 'hand': 1}
    """
    names = names or {}
    if isinstance(op, BetsPlaced):
        return {"type": "bets", "player": names.get(op.player, op.player), "seat": op.seat, "bet": op.bet,
                "side_bets": dict(op.side_bets)}
    if isinstance(op, CardDealt | FaceDownCard):
        to = "dealer" if op.seat == 0 else ("every hand" if op.seat < 0 else f"seat {op.seat} hand {op.hand}")
        # ``seat`` and ``hand`` as the other operations give them (0 the dealer, -1 every hand of a common draw).
        return {"type": "card", "card": None if op.card is None else str(op.card), "to": to, "face_up": op.face_up,
                "seat": op.seat, "hand": op.hand}
    if isinstance(op, ActionTaken):
        return {"type": "action", "action": str(op.action), "player": names.get(op.player, op.player),
                "seat": op.seat, "hand": op.hand, "amount": op.amount}
    if isinstance(op, DealerChecked):
        return {"type": "peek", "blackjack": op.blackjack}
    if isinstance(op, HoleCardRevealed):
        return {"type": "hole", "card": str(op.card)}
    return {"type": "settled", "item": op.item, "player": names.get(op.player, op.player), "seat": op.seat,
            "hand": op.hand, "stake": op.stake, "result": op.result, "returned": op.returned}


def dealer_json(view: RoundView) -> dict[str, Any]:
    """The dealer's cards as the viewer sees them: those face up in the order dealt, and how many lie face down where.

    >>> from twentyone.core.round import HandBet, Round
    >>> from twentyone.core.shoe import Shoe
    >>> from twentyone.variants import builtin_rules
    >>> game = Round(builtin_rules("multiplayer"), Shoe.stacked(["TS", "7H", "9D", "8S", "9C"]))
    >>> game.place_bets("ann", [HandBet(100)])
    >>> _ = game.deal()  # Ann's 10, the dealer's 7 face down, Ann's 9, the dealer's 8 face up
    >>> dealer_json(game.view("ann"))
    {'cards': ['8S'], 'total': 8, 'soft': False, 'hidden': 1, 'hidden_at': 0, 'blackjack': False}
    >>> game.stand()
    >>> dealer_json(game.view("ann"))["cards"]  # turned over in place, left of the 8
    ['7H', '8S', '9C']
    """
    return {"cards": [str(card) for card in view.dealer_cards], "total": view.dealer_value.total,
            "soft": view.dealer_value.soft, "hidden": view.dealer_hidden, "hidden_at": view.dealer_hidden_at,
            "blackjack": view.dealer_blackjack}


def view_json(view: RoundView, names: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The whole view as JSON: the one serialiser behind the server's round view, replay and events."""
    decision = view.decision
    return {
        "phase": view.phase,
        "dealer": dealer_json(view),
        "hands": [hand_json(hand, names) for hand in view.hands],
        "settlements": [operation_json(op, names) for op in view.settlements],
        "operations": [operation_json(op, names) for op in view.operations],
        "decision": None if decision is None else {"kind": decision.kind, "player": decision.player,
                                                   "seat": decision.seat, "hand": decision.hand},
        "legal_actions": [str(action) for action in view.legal_actions],
        "offers": dict(view.offers),
        "staked": view.staked, "returned": view.returned,
    }


__all__ = [
    "FACE_DOWN",
    "Decision",
    "FaceDownCard",
    "HandState",
    "RoundView",
    "dealer_json",
    "mask_operations",
    "operation_json",
    "view_json",
]
