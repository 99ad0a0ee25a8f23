"""The round: a pure state machine from bets to settlement.

It deals in the game's own order, asks for one decision at a time
(:meth:`Round.legal_actions`), validates each action (``verify_x`` raises with
a full sentence, ``can_x`` answers yes or no, ``x`` acts), and keeps an
immutable log of operations. No clocks, no randomness, no I/O: the shoe's
order is the only chance, decided before the round starts.

Conventions every game shares (documented in ``docs/variants.md``):

* Hands act in dealing order: player by player, hand by hand.
* On a split, both new hands get their second card at once, first hand then
  second; then the first hand is played, then the second.
* In a common-draw game (power) every player has the same first two cards;
  a player's k-th drawn card is the k-th card of one common sequence, and the
  dealer draws after the longest player's use of it. Players move in lockstep,
  as at the live table: common card k is dealt only once every player still
  deciding has chosen at step k (a hit, double or split reserves the card and
  waits for it), so nobody sees a card before everyone who could take it has
  chosen. The order of choices within a step changes nothing.

>>> from twentyone.core.rules import rules_from_toml
>>> from twentyone.core.shoe import Shoe
>>> rules = rules_from_toml('id = "demo"\\nname = "Demo"\\n[shoe]\\ndecks = 8')
>>> game = Round(rules, Shoe.stacked(["TS", "6H", "TD", "TC", "7C"]))
>>> game.place_bets("you", [HandBet(1000)])
>>> _ = game.deal()
>>> [str(a) for a in game.legal_actions()]
['hit', 'stand', 'double', 'split']
>>> game.stand()
>>> game.phase, game.hands[0].outcome, game.hands[0].returned
(<Phase.SETTLED: 'settled'>, <Outcome.WIN: 'win'>, 2000)

Why one module: the round is one state machine whose steps share its private state; the
vocabulary, the operation log and what a player sees of it live in their own modules.
"""

from __future__ import annotations

import copy as _copy
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from itertools import islice

from twentyone.core.cards import Card
from twentyone.core.hand import HandValue, hand_value, is_natural
from twentyone.core.operations import (
    MULTIPLIER_OF,
    OFFER_ANSWERS,
    Action,
    ActionTaken,
    BetsPlaced,
    CardDealt,
    DealerChecked,
    DecisionKind,
    HandStatus,
    HoleCardRevealed,
    Item,
    Operation,
    Outcome,
    Settled,
)
from twentyone.core.rules import BlackjackTakes, DealStep, Rules, Surrender
from twentyone.core.shoe import Shoe
from twentyone.core.sidebets import SIDE_BETS, Settles
from twentyone.core.view import Decision, HandState, RoundView, VisibleOperation, mask_operations


class IllegalActionError(ValueError):
    """An action that the round does not allow now. The message says where, whose and what is allowed (for a log or
    a scenario's author); :attr:`plain` says the same to the player who tried it, in words (a server's or a
    terminal's refusal), without the engine's names for actions and players.

    >>> error = IllegalActionError("Cannot split at seat 1 hand 1 (player '52'): ...", "You cannot split now.")
    >>> str(error), error.plain
    ("Cannot split at seat 1 hand 1 (player '52'): ...", 'You cannot split now.')
    >>> IllegalActionError("Cannot deal: no bets have been placed.").plain
    'Cannot deal: no bets have been placed.'
    """

    def __init__(self, message: str, plain: str | None = None) -> None:
        super().__init__(message)
        self.plain = plain if plain is not None else message


# Each action as a player would say it: "You cannot take insurance now", not "Cannot insurance".
ACTION_WORDS = {
    Action.HIT: "hit", Action.STAND: "stand", Action.DOUBLE: "double down", Action.TRIPLE: "triple down",
    Action.QUADRUPLE: "quadruple down", Action.SPLIT: "split", Action.SURRENDER: "surrender",
    Action.CASH_OUT: "cash out", Action.INSURANCE: "take insurance", Action.NO_INSURANCE: "decline insurance",
    Action.EVEN_MONEY: "take even money", Action.NO_EVEN_MONEY: "decline even money",
    Action.NO_SURRENDER: "decline surrender",
}


# Each offer as a player would name it.
OFFER_NAMES = {DecisionKind.INSURANCE: "insurance", DecisionKind.EVEN_MONEY: "even money",
               DecisionKind.SURRENDER: "early surrender"}
OFFER_OF = {answer: kind for kind, answers in OFFER_ANSWERS.items() for answer in answers}


def plain_refusal(action: Action, reason: str, legal: Sequence[Action]) -> str:
    """A refused action, said to the player who tried it: what, why, and what they can do instead.

    >>> plain_refusal(Action.INSURANCE, "no insurance offer is pending", [Action.HIT, Action.STAND, Action.DOUBLE])
    'You cannot take insurance now: no insurance offer is pending. You can hit, stand or double down.'
    >>> plain_refusal(Action.HIT, "no decision of yours is pending", [])
    'You cannot hit now: no decision of yours is pending.'
    """
    return f"You cannot {ACTION_WORDS[action]} now: {reason}.{you_can(legal)}"


def you_can(legal: Sequence[Action]) -> str:
    """What a player can do now, as a sentence to follow another ("" when nothing is asked of them).

    >>> you_can([Action.INSURANCE, Action.NO_INSURANCE])
    ' You can take insurance or decline insurance.'
    >>> you_can([Action.STAND]), you_can([])
    (' You can stand.', '')
    """
    options = [ACTION_WORDS[choice] for choice in legal]
    if not options:
        return ""
    return f" You can {', '.join(options[:-1])} or {options[-1]}." if len(options) > 1 else f" You can {options[0]}."


class BetError(ValueError):
    """Bets that cannot be placed (no main bet, unknown side bet, too many hands)."""


class Phase(StrEnum):
    BETS = "bets"
    OFFERS = "offers"  # insurance, even money, early surrender
    PLAYER_TURNS = "player-turns"
    SETTLED = "settled"


@dataclass(frozen=True)
class HandBet:
    """The stakes on one betting spot: the main bet and any side bets, in minor units."""

    bet: int
    side_bets: Mapping[str, int] = field(default_factory=dict)


@dataclass
class _Hand:
    player: str
    seat: int
    bet: int
    stake: int
    cards: list[Card] = field(default_factory=list)
    from_split: bool = False
    split_aces: bool = False
    holds_original: bool = True
    # playing, stood, doubled, bust, blackjack, surrendered, cashed-out, even-money
    status: HandStatus = HandStatus.PLAYING
    outcome: Outcome | None = None
    returned: int | None = None

    @property
    def value(self) -> HandValue:
        return hand_value(self.cards)

    @property
    def is_blackjack(self) -> bool:
        return not self.from_split and is_natural(self.cards)


@dataclass
class _Spot:
    player: str
    seat: int
    bet: int
    side_bets: dict[str, int]
    hands: list[_Hand]
    insurance: int = 0
    insurance_settled: bool = False
    pending_side_bets: dict[str, int] = field(default_factory=dict)


_LIVE = (HandStatus.STOOD, HandStatus.DOUBLED, HandStatus.BLACKJACK)  # hands the dealer's total settles


def _staked_in(operations: Sequence[VisibleOperation]) -> int:
    """The money ``operations`` put on the table: bets, side bets, and what actions added (double, split...)."""
    total = 0
    for op in operations:
        if isinstance(op, BetsPlaced):
            total += op.bet
            if op.side_bets:  # most spots have none: a thousand of them, summed for each view
                total += sum(amount for _, amount in op.side_bets)
        elif isinstance(op, ActionTaken):
            total += op.amount
    return total


def _play_of(op: Operation, owners: Mapping[int, str]) -> str | None:
    """The player whose play ``op`` is (a card drawn to them, their decision, a result of theirs), or None
    for what the whole table sees (bets, the common deal, the dealer's cards); ``owners``: players by seat.

    Every result: a hand's, and an insurance's too, which tells that the player took it.
    """
    if isinstance(op, CardDealt):
        return owners[op.seat] if op.seat >= 1 else None  # -1: the common deal; 0: the dealer
    if isinstance(op, (ActionTaken, Settled)):
        return op.player
    return None


class _LogByPlayer:
    """The log sorted once into what the whole table sees and each player's own play, kept up as it grows.

    A view in a common draw leaves out every other player's play: at a table of a thousand, filtering the
    whole log for each view cost more than the rest of the request. The log only grows (appended to,
    never changed), so each operation is sorted the first time a view finds it, and a view merges the
    shared part with the viewer's own.
    """

    def __init__(self) -> None:
        self.sorted_up_to = 0
        self.shared: list[int] = []  # positions in the log
        self.own: dict[str, list[int]] = {}
        self.owners: dict[int, str] = {}  # players by seat

    def seen_by(self, log: Sequence[Operation], player: str, spots: Sequence[_Spot]) \
            -> tuple[list[Operation], list[Operation]]:
        """The log without the other players' play, and ``player``'s own play alone, both in log order."""
        for spot in spots[len(self.owners):]:  # spots are only ever added, before the deal
            self.owners[spot.seat] = spot.player
        for position in range(self.sorted_up_to, len(log)):
            owner = _play_of(log[position], self.owners)
            (self.shared if owner is None else self.own.setdefault(owner, [])).append(position)
        self.sorted_up_to = len(log)
        mine = self.own.get(player, [])
        return [log[position] for position in sorted(self.shared + mine)], [log[position] for position in mine]


def _as_dealt(hand: _Hand, common: tuple[Card, ...], value: HandValue, status: HandStatus) -> HandState:
    """Another player's (first) hand as the common deal left it: the two common cards (``value``, ``status``)
    and the main bet."""
    return HandState(hand.player, hand.seat, 1, common, value, hand.bet, hand.bet, status, False, None, None)


class Round:
    """One round of blackjack at one table, from bets to settlement."""

    def __init__(self, rules: Rules, shoe: Shoe, lockstep: bool = True) -> None:
        """A round before its bets. ``lockstep`` False replays a common-draw round recorded before
        players moved in lockstep (each drew at their own pace): the same cards and money, another order."""
        self.rules = rules
        self.shoe = shoe
        self.lockstep = lockstep
        self.phase = Phase.BETS
        self.operations: list[Operation] = []
        self.actions: list[Action] = []
        self._spots: list[_Spot] = []
        self._spots_of: dict[str, list[_Spot]] = {}  # each player's spots, in seat order
        self._players: list[str] = []
        self._dealer: list[Card] = []
        self._hole_revealed = False
        self._checked_blackjack = False
        self._offers: list[tuple[DecisionKind, _Hand]] = []
        self._common: list[Card] = []
        self._draws: dict[str, int] = {}
        # Lockstep: (common index, hand, the action that drew) for cards chosen and not yet dealt,
        # and how many each player waits for; a player waiting for a card is not deciding.
        self._reserved: list[tuple[int, _Hand, Action]] = []
        self._awaiting: dict[str, int] = {}
        self._step = 0
        self._log_by_player = _LogByPlayer()  # a common draw's views (see view)
        self._played_out = 0  # leading spots whose every hand has stopped playing (see _current_hand)

    def copy(self) -> Round:
        """An independent copy of the round: branch it to explore what each card or action leads to.

        The rules are shared (they are immutable); the shoe position, the hands and the log are not.

        >>> from twentyone.core.rules import rules_from_toml
        >>> rules = rules_from_toml('id = "demo"\\nname = "Demo"\\n[shoe]\\ndecks = 8')
        >>> game = Round(rules, Shoe.stacked(["TS", "6H", "TD", "TC", "7C"]))
        >>> game.place_bets("you", [HandBet(1000)])
        >>> _ = game.deal()
        >>> branch = game.copy()
        >>> branch.stand()
        >>> game.phase, branch.phase
        (<Phase.PLAYER_TURNS: 'player-turns'>, <Phase.SETTLED: 'settled'>)
        """
        return _copy.deepcopy(self, {id(self.rules): self.rules})

    # ----------------------------------------------------------------- bets
    def verify_place_bets(self, player: str, hand_bets: Sequence[HandBet]) -> None:
        """Raise :class:`BetError` unless ``player`` may place ``hand_bets`` now."""
        rules = self.rules
        if self.phase is not Phase.BETS:
            raise BetError(f"Bets are closed: the round is in the {self.phase} phase.")
        if not player:
            raise BetError("A player needs a name.")
        if player in self._players:
            raise BetError(f"Player {player!r} has already placed bets this round.")
        if rules.deal.seats and len(self._players) >= rules.deal.seats:
            raise BetError(f"The table is full: {rules.deal.seats} players at most.")
        if not 1 <= len(hand_bets) <= rules.deal.hands_per_player:
            raise BetError(
                f"Player {player!r} bet on {len(hand_bets)} hands; "
                f"this game allows 1 to {rules.deal.hands_per_player}."
            )
        for number, hand_bet in enumerate(hand_bets, 1):
            if not isinstance(hand_bet.bet, int) or isinstance(hand_bet.bet, bool) or hand_bet.bet < 1:
                raise BetError(
                    f"Hand {number}: the main bet must be a whole number of minor units "
                    f"of at least 1 (side bets need a main bet), got {hand_bet.bet!r}."
                )
            for name, amount in hand_bet.side_bets.items():
                if name not in rules.side_bets:
                    offered = ", ".join(rules.side_bets) or "none"
                    raise BetError(f"Hand {number}: no side bet {name!r} in this game (offered: {offered}).")
                if not isinstance(amount, int) or isinstance(amount, bool) or amount < 0:
                    raise BetError(f"Hand {number}: side bet {name!r} must be a whole amount >= 0, got {amount!r}.")

    def can_place_bets(self, player: str, hand_bets: Sequence[HandBet]) -> bool:
        try:
            self.verify_place_bets(player, hand_bets)
        except BetError:
            return False
        return True

    def place_bets(self, player: str, hand_bets: Sequence[HandBet]) -> None:
        """Seat ``player`` with a bet on each of ``hand_bets`` (one spot each)."""
        self.verify_place_bets(player, hand_bets)
        self._players.append(player)
        self._draws[player] = 0
        for hand_bet in hand_bets:
            seat = len(self._spots) + 1
            sides = {name: amount for name, amount in hand_bet.side_bets.items() if amount > 0}
            hand = _Hand(player, seat, hand_bet.bet, hand_bet.bet)
            self._spots.append(_Spot(player, seat, hand_bet.bet, sides, [hand]))
            self._spots_of.setdefault(player, []).append(self._spots[-1])
            self._log(BetsPlaced(player, seat, hand_bet.bet, tuple(sorted(sides.items()))))

    # ----------------------------------------------------------------- deal
    def verify_deal(self) -> None:
        if self.phase is not Phase.BETS:
            raise IllegalActionError(f"Cannot deal: the round is already in the {self.phase} phase.")
        if not self._spots:
            raise IllegalActionError("Cannot deal: no bets have been placed.")

    def can_deal(self) -> bool:
        return self.phase is Phase.BETS and bool(self._spots)

    def deal(self) -> tuple[Operation, ...]:
        """Deal the initial cards in the game's order, run to the first decision, return the operations added."""
        self.verify_deal()
        start = len(self.operations)
        for step in self.rules.deal.order:
            if step == DealStep.HANDS:
                self._deal_hands_card()
            elif step == DealStep.DEALER_UP:
                self._deal_dealer(face_up=True)
            else:
                self._deal_dealer(face_up=False)
        for hand in self._all_hands():
            if hand.is_blackjack:
                hand.status = HandStatus.BLACKJACK
        self._settle_deal_time_side_bets()
        self._offers = self._initial_offers()
        self.phase = Phase.OFFERS
        self._advance()
        return tuple(self.operations[start:])

    def _deal_hands_card(self) -> None:
        if self.rules.deal.common_draw:
            card = self.shoe.draw()
            self._log(CardDealt(card, seat=-1, hand=0))
            for hand in self._all_hands():
                hand.cards.append(card)
            return
        for hand in self._all_hands():
            card = self.shoe.draw()
            hand.cards.append(card)
            self._log(CardDealt(card, hand.seat, 1))

    def _deal_dealer(self, face_up: bool) -> None:
        card = self.shoe.draw()
        self._dealer.append(card)
        self._log(CardDealt(card, 0, 0, face_up))

    # ------------------------------------------------------------ queries
    @property
    def dealer_up(self) -> Card:
        """The dealer's face-up card (the first or second dealt, as the deal order says)."""
        if not self._dealer:
            raise IllegalActionError("The dealer has no cards before the deal.")
        index = self._dealer_up_index()
        return self._dealer[index]

    def _dealer_up_index(self) -> int:
        order = [step for step in self.rules.deal.order if step != DealStep.HANDS]
        return order.index(DealStep.DEALER_UP)

    @property
    def dealer_cards(self) -> tuple[Card, ...]:
        """The dealer's cards as a player sees them: the hole card only once revealed."""
        if self._hole_revealed or not self.rules.deal.hole_card:
            return tuple(self._dealer)
        return (self.dealer_up,) if self._dealer else ()

    @property
    def dealer_blackjack(self) -> bool:
        return self._hole_revealed_or_final() and is_natural(self._dealer)

    def _hole_revealed_or_final(self) -> bool:
        return self._hole_revealed or (not self.rules.deal.hole_card and len(self._dealer) >= 2)

    @property
    def hands(self) -> tuple[HandState, ...]:
        """Every hand in playing order (split hands in place of the hand they came from)."""
        return self._hands_of(None)

    def _hands_of(self, players: Collection[str] | None, as_dealt_for: str | None = None) \
            -> tuple[HandState, ...]:
        """The hands of ``players`` (None: everyone's) in playing order, each with its value worked out.

        ``as_dealt_for``: a viewer of a common draw in play, who sees every other player's hand only as the
        common deal left it (:func:`_as_dealt`), one a spot.
        """
        result: list[HandState] = []
        spots = self._spots if players is None else sorted(  # a few players' spots, not a power table's thousand
            (spot for name in players for spot in self._spots_of.get(name, ())), key=lambda spot: spot.seat)
        dealt = None
        for spot in spots:
            if as_dealt_for is not None and spot.player != as_dealt_for:
                if dealt is None:  # worked out once: every player's first two cards are the common deal's
                    common = tuple(islice((op.card for op in self.operations
                                           if isinstance(op, CardDealt) and op.seat == -1), 2))
                    natural = HandStatus.BLACKJACK if is_natural(list(common)) else HandStatus.PLAYING
                    dealt = (common, hand_value(common), natural)
                result.append(_as_dealt(spot.hands[0], *dealt))
                continue
            for number, hand in enumerate(spot.hands, 1):
                result.append(HandState(
                    hand.player, hand.seat, number, tuple(hand.cards), hand.value, hand.stake,
                    hand.bet, hand.status, hand.from_split, hand.outcome, hand.returned,
                ))
        return tuple(result)

    @property
    def players(self) -> tuple[str, ...]:
        return tuple(self._players)

    @property
    def settlements(self) -> tuple[Settled, ...]:
        return tuple(op for op in self.operations if isinstance(op, Settled))

    @property
    def staked(self) -> int:
        """Everything the players put on the table this round, in minor units."""
        return _staked_in(self.operations)

    @property
    def returned(self) -> int:
        """Everything paid back to the players (stakes included)."""
        return sum(op.returned for op in self.settlements)

    def pending_hand(self, player: str | None = None) -> HandState | None:
        """The hand whose decision is awaited (an offer or a play; ``player``'s own if named), or None."""
        decision = self.decision(player)
        if decision is None:
            return None
        return next(hand for hand in self.hands if (hand.seat, hand.hand) == (decision.seat, decision.hand))

    def view(self, player: str | None = None, among: Collection[str] | None = None) -> RoundView:
        """The round as ``player`` may see it now; every player-facing output is built from this.

        Face-down cards stay hidden until turned (in the dealer's cards and in the log), the
        shoe never shows, and only ``player`` is told their legal actions and offers.
        ``among``: the players whose hands and results the view lists (the viewer's always; None:
        everyone's), so that a table of a thousand is not worked out in full for one player.
        A common draw's view brings the round's index of its log up to date (:class:`_LogByPlayer`):
        like any change, it wants the round to itself (the server holds the round's lock).

        >>> from twentyone.core.shoe import Shoe
        >>> from twentyone.variants import builtin_rules
        >>> game = Round(builtin_rules("power"), Shoe.stacked("5S 7H 6D 8C 4C KD".split()))
        >>> game.place_bets("a", [HandBet(100)]); game.place_bets("b", [HandBet(100)])
        >>> _ = game.deal()
        >>> [hand.player for hand in game.view("a").hands], [hand.player for hand in game.view("a", ()).hands]
        (['a', 'b'], ['a'])
        """
        own = self.decision(player) if player is not None else None
        withheld = self._withholds_others(player)
        decision = own if withheld else own or self.decision()
        legal = self.legal_actions(player) if own is not None else ()
        offers: dict[str, int] = {}
        if Action.CASH_OUT in legal:
            offers["cash_out"] = self.offer_amount(Action.CASH_OUT, player)
        if Action.INSURANCE in legal:
            offers["insurance"] = self.cost_of(Action.INSURANCE, player)
        dealer = self.dealer_cards
        hidden = len(self._dealer) - len(dealer)
        hidden_at = 1 - self._dealer_up_index() if hidden else None
        listed = None if among is None else {*among, *(() if player is None else (player,))}
        if not withheld:
            settlements = self.settlements
            if listed is not None:
                settlements = tuple(op for op in settlements if op.player in listed)
            return RoundView(player, str(self.phase), dealer, hidden, self.dealer_blackjack, self._hands_of(listed),
                             settlements, mask_operations(self.operations), decision, legal, offers,
                             self.staked, self.returned, dealer_hidden_at=hidden_at)
        assert player is not None
        seen_log, own_play = self._log_by_player.seen_by(self.operations, player, self._spots)
        operations = mask_operations(seen_log)
        settlements = tuple(op for op in own_play if isinstance(op, Settled))
        hands = self._hands_of(listed, as_dealt_for=player)
        return RoundView(player, str(self.phase), dealer, hidden, self.dealer_blackjack, hands, settlements,
                         operations, decision, legal, offers, _staked_in(operations),
                         sum(op.returned for op in settlements), others_withheld=True,
                         drawing=bool(self._awaiting.get(player)), dealer_hidden_at=hidden_at)

    def _withholds_others(self, player: str | None) -> bool:
        """Whether ``player`` must not see the other players' play yet.

        In a common draw a player's k-th drawn card is everyone's k-th. Lockstep keeps every card
        from everyone until all who could take it have chosen; on top of that, until the round
        settles a player (or anyone not in the round) sees the others' hands only as dealt: no
        drawn card, decision, bust or result. What another player chose is theirs until the end
        (that a step completed says only that someone drew); and a round recorded at each player's
        own pace (``lockstep`` False), where a card another player drew could be this player's
        next, shows nothing of it.
        ``None``, the house's view (operator, audit), sees all.

        >>> from twentyone.core.shoe import Shoe
        >>> from twentyone.variants import builtin_rules
        >>> game = Round(builtin_rules("power"), Shoe.stacked("2S 5H 3D 8C 4C KD 6H".split()))
        >>> game.place_bets("a", [HandBet(100)]); game.place_bets("b", [HandBet(100)])
        >>> _ = game.deal()
        >>> _, _, _ = game.act("hit", "a"), game.act("hit", "b"), game.act("stand", "a")  # both took 4C
        >>> [[str(card) for card in hand.cards] for hand in game.view("b").hands]
        [['2S', '3D'], ['2S', '3D', '4C']]
        >>> [str(op.action) for op in game.view("b").operations if hasattr(op, "action")]
        ['hit']
        """
        return self.rules.deal.common_draw and player is not None and self.phase is not Phase.SETTLED

    def offer_amount(self, action: Action, player: str | None = None) -> int:
        """The money an offer would pay back (cash out) or cost (insurance) right now."""
        decision = self.decision(player)
        if decision is None:
            return 0
        hand = self._hand_at(decision)
        if action is Action.CASH_OUT:
            return self._cash_out_amount(hand) or 0
        if action is Action.INSURANCE:
            return self._spot_of(hand).bet // 2
        return 0

    def cost_of(self, action: Action | str, player: str | None = None, decision: Decision | None = None) -> int:
        """Money ``action`` would add to the table now (double, split, insurance), else 0; at ``decision`` (one of
        :meth:`pending_offers`: another hand's insurance) where given, else at the decision the round waits for.

        The engine does not know balances; callers check this against the wallet.
        """
        decision = decision or self.decision(player)
        if decision is None:
            return 0
        action = Action(action)
        hand = self._hand_at(decision)
        if action in MULTIPLIER_OF:
            return hand.stake * (MULTIPLIER_OF[action] - 1)
        if action is Action.SPLIT:
            return hand.bet
        if action is Action.INSURANCE:
            return self._spot_of(hand).bet // 2
        return 0

    # --------------------------------------------------------- decisions
    @property
    def decides_together(self) -> bool:
        """Whether everyone deciding now decides at once, on one clock: the offers before the peek, and every
        decision of a common draw. Otherwise (players' turns) one player decides, each decision on its own clock."""
        return self.rules.deal.common_draw or self.phase is Phase.OFFERS

    @property
    def step(self) -> int:
        """How many times the round has moved on for everyone at once: into the players' turns, and
        in a lockstep common draw each common card dealt. A common draw's one decision clock, which
        all its players share, restarts when this changes, and at no other decision.

        >>> from twentyone.core.shoe import Shoe
        >>> from twentyone.variants import builtin_rules
        >>> game = Round(builtin_rules("power"), Shoe.stacked("2S 5H 3D 8C 4C KD 6H".split()))
        >>> game.place_bets("a", [HandBet(100)]); game.place_bets("b", [HandBet(100)])
        >>> _ = game.deal(); game.step
        1
        >>> _ = game.act("hit", "a"); game.step  # b still chooses at this step
        1
        >>> _ = game.act("hit", "b"); game.step
        2
        """
        return self._step

    def pending_offers(self, player: str) -> tuple[Decision, ...]:
        """Every offer still waiting for ``player``'s answer, in the order the round asks them."""
        if self.phase is not Phase.OFFERS:
            return ()
        return tuple(Decision(kind, hand.player, hand.seat, self._number_of(hand))
                     for kind, hand in self._offers if hand.player == player)

    def decision(self, player: str | None = None) -> Decision | None:
        """The decision the round waits for, or None before the deal and after settlement.

        With ``player``, that player's own decision. The offers before the peek (insurance, even
        money, early surrender) are every player's at once, answered in any order, as at a live
        table: before, a multiplayer table asked them seat by seat, each with the whole decision
        clock, and seven players waited up to 105 s (a trial of players). In a common-draw game
        (power) every player still deciding also plays at the same step, in any order (none while
        waiting for a card chosen: see :meth:`_release`); elsewhere players play in turn, so a
        player has a play decision only when it is their turn. Without ``player``, the first
        decision in the round's order (an offer of the first seat first).
        """
        if player is not None and not self.rules.deal.common_draw and self.phase is not Phase.OFFERS:
            decision = self.decision()
            return decision if decision is not None and decision.player == player else None
        if self.phase is Phase.OFFERS:
            for kind, hand in self._offers:
                if player is None or hand.player == player:
                    return Decision(kind, hand.player, hand.seat, self._number_of(hand))
        if self.phase is Phase.PLAYER_TURNS:
            current = self._current_hand(player)
            if current is not None:
                return Decision(DecisionKind.PLAY, current.player, current.seat, self._number_of(current))
        return None

    def legal_actions(self, player: str | None = None) -> tuple[Action, ...]:
        """The actions allowed now (``player``'s, if named), in a fixed order (empty when nothing is asked)."""
        decision = self.decision(player)
        if decision is None:
            return ()
        if decision.kind != DecisionKind.PLAY:
            return OFFER_ANSWERS[decision.kind]
        hand = self._hand_at(decision)
        return tuple(action for action in self._play_actions() if self._play_refusal(hand, action) is None)

    @staticmethod
    def _play_actions() -> tuple[Action, ...]:
        return (Action.HIT, Action.STAND, Action.DOUBLE, Action.TRIPLE, Action.QUADRUPLE,
                Action.SPLIT, Action.SURRENDER, Action.CASH_OUT)

    def verify(self, action: Action | str, player: str | None = None) -> None:
        """Raise :class:`IllegalActionError` unless ``action`` is allowed now (for ``player``, if named)."""
        try:
            action = Action(action)
        except ValueError:
            raise IllegalActionError(
                f"Unknown action {action!r}; legal actions: {self._legal_text(player)}.",
                f"There is no action {str(action)[:40]!r}.{you_can(self.legal_actions(player))}",
            ) from None
        decision = self.decision(player)
        if decision is None:
            whose = f" for player {player!r}" if player is not None else ""
            raise IllegalActionError(
                f"Cannot {ACTION_WORDS[action]}: no decision is pending{whose} (phase {self.phase}).",
                plain_refusal(action, "no decision of yours is pending", ()))
        where = f"seat {decision.seat} hand {decision.hand} (player {decision.player!r})"
        if decision.kind != DecisionKind.PLAY:
            if action not in OFFER_ANSWERS[decision.kind]:
                raise IllegalActionError(
                    f"Cannot {ACTION_WORDS[action]} at {where}: the {decision.kind} offer must be answered first; "
                    f"legal actions: {self._legal_text(player)}.",
                    plain_refusal(action, self._offer_phase_refusal(decision.kind, action),
                                  self.legal_actions(player)),
                )
            return
        reason = self._play_refusal(self._hand_at(decision), action)
        if reason is not None:
            raise IllegalActionError(
                f"Cannot {ACTION_WORDS[action]} at {where}: {reason}; legal actions: {self._legal_text(player)}.",
                plain_refusal(action, reason, self.legal_actions(player)),
            )

    def can(self, action: Action | str, player: str | None = None) -> bool:
        try:
            self.verify(action, player)
        except IllegalActionError:
            return False
        return True

    def act(self, action: Action | str, player: str | None = None) -> tuple[Operation, ...]:
        """Take ``action`` for the pending decision (``player``'s, if named), run to the next one, and
        return the operations added."""
        self.verify(action, player)
        start = len(self.operations)
        action = Action(action)
        decision = self.decision(player)
        assert decision is not None
        hand = self._hand_at(decision)
        self.actions.append(action)
        if decision.kind == DecisionKind.PLAY:
            self._play(hand, action)
        else:
            self._answer_offer(decision.kind, hand, action)
        self._advance()
        return tuple(self.operations[start:])

    # One method per action; can_x where callers ask before acting (verify/can take any action).
    def can_hit(self) -> bool: return self.can(Action.HIT)
    def hit(self) -> None: self.act(Action.HIT)
    def stand(self) -> None: self.act(Action.STAND)
    def can_double(self) -> bool: return self.can(Action.DOUBLE)
    def double(self) -> None: self.act(Action.DOUBLE)
    def triple(self) -> None: self.act(Action.TRIPLE)
    def quadruple(self) -> None: self.act(Action.QUADRUPLE)
    def can_split(self) -> bool: return self.can(Action.SPLIT)
    def split(self) -> None: self.act(Action.SPLIT)
    def surrender(self) -> None: self.act(Action.SURRENDER)
    def can_cash_out(self) -> bool: return self.can(Action.CASH_OUT)
    def cash_out(self) -> None: self.act(Action.CASH_OUT)
    def insurance(self) -> None: self.act(Action.INSURANCE)
    def decline_insurance(self) -> None: self.act(Action.NO_INSURANCE)
    def even_money(self) -> None: self.act(Action.EVEN_MONEY)
    def decline_even_money(self) -> None: self.act(Action.NO_EVEN_MONEY)
    def decline_surrender(self) -> None: self.act(Action.NO_SURRENDER)

    def _legal_text(self, player: str | None = None) -> str:
        return ", ".join(self.legal_actions(player)) or "none"

    def _play_refusal(self, hand: _Hand, action: Action) -> str | None:
        """Why ``action`` is not allowed on ``hand`` now, or None if it is (the rules' own predicates decide)."""
        rules = self.rules
        value = hand.value
        cards = len(hand.cards)
        if action is Action.STAND:
            return None
        if action is Action.HIT:
            if rules.split.one_card_only(hand.split_aces):
                return "split aces receive one card each"
            return None
        if action in MULTIPLIER_OF:
            if MULTIPLIER_OF[action] in rules.double.multipliers and cards == 2 \
                    and rules.split.one_card_only(hand.split_aces):
                return "split aces receive one card each"
            return rules.double.refusal(MULTIPLIER_OF[action], cards, value.total, value.soft, hand.from_split)
        if action is Action.SPLIT:
            pair = cards == 2 and rules.split.pair(*((card.rank, card.value) for card in hand.cards))
            return rules.split.refusal(cards, pair, len(self._spot_of(hand).hands), hand.split_aces)
        if action is Action.SURRENDER:
            return rules.surrender_refusal(cards, hand.from_split)
        if action is Action.CASH_OUT:
            if not rules.cash_out.enabled:
                return "this game has no cash out"
            if hand.from_split:
                return "cash out is not offered on split hands"
            if value.total >= 21:
                return "cash out is not offered on a total of 21"
            if self._cash_out_amount(hand) is None:
                return "the cash-out table has no offer for this hand"
            return None
        return self._offer_refusal(OFFER_OF[action])

    def _offer_refusal(self, kind: DecisionKind) -> str:
        """Why an answer to a ``kind`` offer is refused in play: the game has no such offer, or none is pending."""
        # "no even money offer is pending" read as if one might come, at games that never offer it (found by a trial)
        return self._never_offered(kind) or f"no {OFFER_NAMES[kind]} offer is pending"

    def _offer_phase_refusal(self, pending: DecisionKind, action: Action) -> str:
        """Why ``action`` is refused while a ``pending`` offer waits: the game never makes the offer it answers (or
        has no surrender at all), else the offer must be answered first (found by review)."""
        kind = OFFER_OF.get(action)
        never = self._never_offered(kind) if kind is not None and kind != pending else None
        if action is Action.SURRENDER and self.rules.surrender == Surrender.NONE:
            never = "this game has no surrender"
        return never or f"the {OFFER_NAMES[pending]} offer must be answered first"

    def _never_offered(self, kind: DecisionKind) -> str | None:
        """"this game has no …" when the game never makes a ``kind`` offer, else None."""
        insurance, surrender = self.rules.insurance, self.rules.surrender
        if kind is DecisionKind.SURRENDER and surrender != Surrender.EARLY:
            return "this game has no surrender" if surrender == Surrender.NONE else "this game has no early surrender"
        has = {DecisionKind.INSURANCE: insurance.offered, DecisionKind.EVEN_MONEY: insurance.even_money,
               DecisionKind.SURRENDER: True}[kind]
        return None if has else f"this game has no {OFFER_NAMES[kind]}"

    # ------------------------------------------------------------ offers
    def _initial_offers(self) -> list[tuple[DecisionKind, _Hand]]:
        rules = self.rules
        offers: list[tuple[DecisionKind, _Hand]] = []
        hands = self._all_hands()
        if rules.surrender == Surrender.EARLY:
            offers += [(DecisionKind.SURRENDER, hand) for hand in hands if hand.status == HandStatus.PLAYING]
        if self.dealer_up.is_ace:
            for hand in hands:
                if hand.status == HandStatus.BLACKJACK:
                    if rules.insurance.even_money:
                        offers.append((DecisionKind.EVEN_MONEY, hand))
                    elif rules.insurance.offered and rules.insurance.to_blackjack and hand.bet // 2 > 0:
                        offers.append((DecisionKind.INSURANCE, hand))
                elif rules.insurance.offered and hand.bet // 2 > 0:
                    offers.append((DecisionKind.INSURANCE, hand))
        return offers

    def _answer_offer(self, kind: DecisionKind, hand: _Hand, action: Action) -> None:
        index = next(i for i, (k, h) in enumerate(self._offers) if k == kind and h is hand)
        del self._offers[index]
        spot = self._spot_of(hand)
        if action is Action.INSURANCE:
            spot.insurance = spot.bet // 2
            self._log(ActionTaken(action, hand.player, hand.seat, 1, spot.insurance))
            return
        self._log(ActionTaken(action, hand.player, hand.seat, 1))
        if action is Action.EVEN_MONEY:
            hand.status = HandStatus.EVEN_MONEY
            self._settle_hand(hand, Outcome.EVEN_MONEY, hand.stake + hand.stake)
        elif action is Action.SURRENDER:
            hand.status = HandStatus.SURRENDERED
            self._settle_hand(hand, Outcome.SURRENDER, hand.stake // 2)
            self._offers = [(kind, other) for kind, other in self._offers if other is not hand]

    # -------------------------------------------------------------- play
    def _play(self, hand: _Hand, action: Action) -> None:
        number = self._number_of(hand)
        if action is Action.STAND:
            hand.status = HandStatus.STOOD
            self._log(ActionTaken(action, hand.player, hand.seat, number))
        elif action is Action.HIT:
            self._log(ActionTaken(action, hand.player, hand.seat, number))
            self._draw_to(hand, action)
        elif action in MULTIPLIER_OF:
            extra = hand.stake * (MULTIPLIER_OF[action] - 1)
            hand.stake += extra
            self._log(ActionTaken(action, hand.player, hand.seat, number, extra))
            self._draw_to(hand, action)
        elif action is Action.SPLIT:
            self._split(hand, number)
        elif action is Action.SURRENDER:
            self._log(ActionTaken(action, hand.player, hand.seat, number))
            hand.status = HandStatus.SURRENDERED
            self._settle_hand(hand, Outcome.SURRENDER, hand.stake // 2)
        elif action is Action.CASH_OUT:
            amount = self._cash_out_amount(hand)
            assert amount is not None
            self._log(ActionTaken(action, hand.player, hand.seat, number))
            hand.status = HandStatus.CASHED_OUT
            self._settle_hand(hand, Outcome.CASH_OUT, amount)

    def _split(self, hand: _Hand, number: int) -> None:
        spot = self._spot_of(hand)
        aces = hand.cards[0].is_ace
        self._log(ActionTaken(Action.SPLIT, hand.player, hand.seat, number, hand.bet))
        first = _Hand(hand.player, hand.seat, hand.bet, hand.bet, [hand.cards[0]], True, aces, hand.holds_original)
        second = _Hand(hand.player, hand.seat, hand.bet, hand.bet, [hand.cards[1]], True, aces, False)
        index = spot.hands.index(hand)
        spot.hands[index:index + 1] = [first, second]
        for new in (first, second):
            self._draw_to(new, Action.SPLIT)

    def _took(self, hand: _Hand, cause: Action) -> None:
        """What the card drawn by ``cause`` (a hit, a double, a split) makes of ``hand``."""
        if cause in MULTIPLIER_OF:
            hand.status = HandStatus.BUST if hand.value.bust else HandStatus.DOUBLED
        elif cause is Action.SPLIT and hand.split_aces and self.rules.split.aces_one_card:
            # One card each: the hand is finished unless it may be split again. (Each split hand's
            # card is dealt before either is played, so this reads the same whichever comes first.)
            if self._play_refusal(hand, Action.SPLIT) is not None:
                hand.status = HandStatus.STOOD
        else:
            self._after_card(hand)

    def _after_card(self, hand: _Hand) -> None:
        value = hand.value
        if value.bust:
            hand.status = HandStatus.BUST
        elif self.rules.auto_stand.stands(value.total, value.soft):
            hand.status = HandStatus.STOOD

    def _draw_to(self, hand: _Hand, cause: Action) -> None:
        """Give ``hand`` its next card, drawn by ``cause``; in lockstep, reserve it until its step is complete."""
        if self.rules.deal.common_draw:
            index = self._draws[hand.player]
            self._draws[hand.player] = index + 1
            if self.lockstep:
                self._reserved.append((index, hand, cause))
                self._awaiting[hand.player] = self._awaiting.get(hand.player, 0) + 1
                return
            if index == len(self._common):
                self._common.append(self.shoe.draw())
            card = self._common[index]
        else:
            card = self.shoe.draw()
        self._give(hand, card, cause)

    def _give(self, hand: _Hand, card: Card, cause: Action) -> None:
        hand.cards.append(card)
        self._log(CardDealt(card, hand.seat, self._number_of(hand)))
        self._took(hand, cause)

    def _release(self) -> None:
        """Deal the common cards players wait for, each once nobody still deciding could take it.

        Every player deciding is at the same step (their next card would be the next common card), so a
        card is dealt when nobody is deciding: everyone has chosen at this step, or is done.

        >>> from twentyone.core.shoe import Shoe
        >>> from twentyone.variants import builtin_rules
        >>> game = Round(builtin_rules("power"), Shoe.stacked("2S 5H 3D 8C 4C KD 6H".split()))
        >>> game.place_bets("a", [HandBet(100)]); game.place_bets("b", [HandBet(100)])
        >>> _ = game.deal()
        >>> _ = game.act("hit", "a")  # a chooses a card; b has not chosen at this step yet
        >>> game.decision("a") is None, [str(card) for card in game.hands[0].cards]
        (True, ['2S', '3D'])
        >>> [str(op.card) for op in game.act("hit", "b") if hasattr(op, "card")]  # both take 4C at once
        ['4C', '4C']
        """
        while self._reserved and self._current_hand() is None:
            index = len(self._common)
            card = self.shoe.draw()
            self._common.append(card)
            self._step += 1
            taking = sorted((entry for entry in self._reserved if entry[0] == index),
                            key=lambda entry: (entry[1].seat, self._number_of(entry[1])))
            assert taking, "a reserved common card is the next one"  # reservations run on from the last dealt
            self._reserved = [entry for entry in self._reserved if entry[0] != index]
            for _, hand, cause in taking:
                self._awaiting[hand.player] -= 1
                self._give(hand, card, cause)

    def _cash_out_amount(self, hand: _Hand) -> int | None:
        """Floor of ``factor × main bet`` for a hand that may cash out, or None."""
        rules = self.rules
        if not rules.cash_out.enabled or hand.from_split or hand.stake != hand.bet:
            return None
        value = hand.value
        return rules.cash_out.offer(value.soft, value.total, self.dealer_up.value, hand.bet)

    # --------------------------------------------------------- advancing
    def _advance(self) -> None:
        """Run every automatic step until a decision is needed or the round is settled."""
        if self.phase is Phase.OFFERS:
            if self._offers:
                return
            if self._dealer_check():
                return
            self.phase = Phase.PLAYER_TURNS
            self._step += 1
        if self.phase is Phase.PLAYER_TURNS:
            self._release()
            if self._current_hand() is not None:
                return
            self._dealer_turn()
            self._settle_remaining()
            self.phase = Phase.SETTLED

    def _current_hand(self, player: str | None = None) -> _Hand | None:
        # A player's own spots only: at a power table of a thousand players, a decision must not
        # walk every hand at the table.
        # A player waiting for a common card decides nothing until it comes (their split hands included).
        if player is None:
            # Anyone's: the walk starts past the spots already played out. A hand never plays again once
            # it has stopped (a split adds a hand only to a spot still playing), so that count only grows,
            # and the thousandth decision of a power round does not walk the 999 spots played before it.
            spots = self._spots
            while self._played_out < len(spots) and all(
                    hand.status != HandStatus.PLAYING for hand in spots[self._played_out].hands):
                self._played_out += 1
            spots = spots[self._played_out:]
        else:
            spots = self._spots_of.get(player, [])
        for spot in spots:
            if self._awaiting.get(spot.player):
                continue
            for hand in spot.hands:
                if hand.status == HandStatus.PLAYING:
                    return hand
        return None

    def _dealer_check(self) -> bool:
        """Peek under the up card when the rules say so; a blackjack ends the round at once.

        Returns True when the peek found a blackjack and the round is settled.
        """
        if not self.rules.checks_for_blackjack(self.dealer_up.rank):
            return False
        blackjack = is_natural(self._dealer)
        self._checked_blackjack = True
        self._log(DealerChecked(blackjack))
        self._settle_insurance(blackjack)
        if blackjack:
            self._reveal_hole()
            self._settle_dealer_side_bets()
            self._settle_remaining()
            self.phase = Phase.SETTLED
        return blackjack

    def _dealer_turn(self) -> None:
        hands = self._all_hands()
        live = [hand for hand in hands if hand.status in _LIVE]
        dealer_bets_pending = any(spot.pending_side_bets for spot in self._spots)
        insurance_pending = any(spot.insurance and not spot.insurance_settled for spot in self._spots)
        if self.rules.deal.hole_card:
            self._reveal_hole()
        elif live or dealer_bets_pending or insurance_pending:
            self._deal_dealer(face_up=True)
        drawing = dealer_bets_pending or any(hand.status != HandStatus.BLACKJACK for hand in live)
        if len(self._dealer) >= 2 and drawing and not is_natural(self._dealer):
            while self._dealer_draws_to(hand_value(self._dealer)):
                self._deal_dealer(face_up=True)
        if len(self._dealer) >= 2:
            self._settle_insurance(is_natural(self._dealer))
        self._settle_dealer_side_bets()

    def _dealer_draws_to(self, value: HandValue) -> bool:
        return self.rules.dealer.draws(value.total, value.soft)

    def _reveal_hole(self) -> None:
        if not self._hole_revealed and len(self._dealer) >= 2:
            self._hole_revealed = True
            hole_index = 1 - self._dealer_up_index()
            self._log(HoleCardRevealed(self._dealer[hole_index]))

    # -------------------------------------------------------- settlement
    def _settle_deal_time_side_bets(self) -> None:
        up = self.dealer_up
        for spot in self._spots:
            first, second = spot.hands[0].cards[:2]
            for name, amount in spot.side_bets.items():
                kind = SIDE_BETS[self.rules.side_bets[name].kind]
                if kind.settles is Settles.ON_DEALER:
                    # A player blackjack stops the dealer drawing for that hand: the bet is returned.
                    if spot.hands[0].is_blackjack:
                        self._settle_side(spot, name, amount, Outcome.PUSH, amount)
                    else:
                        spot.pending_side_bets[name] = amount
                    continue
                self._settle_side_line(spot, name, amount, kind.score(first, second, up))

    def _settle_side_line(self, spot: _Spot, name: str, amount: int, line: str | None) -> None:
        pays = self.rules.side_bets[name].paytable.get(line or "", None)
        if line is None or pays is None:
            self._settle_side(spot, name, amount, Outcome.LOSE, 0)
        else:
            self._settle_side(spot, name, amount, line, amount * (1 + pays))

    def _settle_side(self, spot: _Spot, name: str, stake: int, result: str, returned: int) -> None:
        record = Settled(name, spot.player, spot.seat, 1, stake, result, returned)
        self._log(record)

    def _settle_dealer_side_bets(self) -> None:
        """Side bets decided by the dealer's final hand (Bust It), once it is complete."""
        up = self.dealer_up
        for spot in self._spots:
            first, second = spot.hands[0].cards[:2]
            for name, amount in list(spot.pending_side_bets.items()):
                kind = SIDE_BETS[self.rules.side_bets[name].kind]
                line = kind.score(first, second, up, self._dealer) if len(self._dealer) >= 2 else None
                self._settle_side_line(spot, name, amount, line)
                del spot.pending_side_bets[name]

    def _settle_insurance(self, dealer_blackjack: bool) -> None:
        for spot in self._spots:
            if spot.insurance and not spot.insurance_settled:
                spot.insurance_settled = True
                if dealer_blackjack:
                    returned = spot.insurance + self.rules.insurance.payout.winnings(spot.insurance)
                    self._log(Settled(Item.INSURANCE, spot.player, spot.seat, 1, spot.insurance, Outcome.WIN, returned))
                else:
                    self._log(Settled(Item.INSURANCE, spot.player, spot.seat, 1, spot.insurance, Outcome.LOSE, 0))

    def _settle_hand(self, hand: _Hand, outcome: Outcome, returned: int) -> None:
        hand.outcome = outcome
        hand.returned = returned
        self._log(Settled(Item.HAND, hand.player, hand.seat, self._number_of(hand), hand.stake, outcome, returned))

    def _settle_remaining(self) -> None:
        dealer = hand_value(self._dealer)
        dealer_blackjack = is_natural(self._dealer)
        rules = self.rules
        for hand in self._all_hands():
            if hand.outcome is not None:
                continue
            value = hand.value
            if hand.status == HandStatus.BUST:
                self._settle_hand(hand, Outcome.BUST, 0)
            elif hand.status == HandStatus.BLACKJACK:
                if dealer_blackjack:
                    self._settle_hand(hand, Outcome.PUSH, hand.stake)
                else:
                    self._settle_hand(hand, Outcome.BLACKJACK, hand.stake + rules.blackjack_payout.winnings(hand.stake))
            elif dealer_blackjack:
                kept = 0
                if not self._checked_blackjack and rules.dealer.no_peek_blackjack_takes == BlackjackTakes.ORIGINAL:
                    kept = hand.stake - (hand.bet if hand.holds_original else 0)
                self._settle_hand(hand, Outcome.LOSE, kept)
            elif dealer.bust or value.total > dealer.total:
                self._settle_hand(hand, Outcome.WIN, hand.stake + rules.win_payout.winnings(hand.stake))
            elif value.total == dealer.total:
                self._settle_hand(hand, Outcome.PUSH, hand.stake)
            else:
                self._settle_hand(hand, Outcome.LOSE, 0)

    # ----------------------------------------------------------- helpers
    def _all_hands(self) -> list[_Hand]:
        return [hand for spot in self._spots for hand in spot.hands]

    def _spot_of(self, hand: _Hand) -> _Spot:
        return self._spots[hand.seat - 1]

    def _number_of(self, hand: _Hand) -> int:
        return self._spot_of(hand).hands.index(hand) + 1

    def _hand_at(self, decision: Decision) -> _Hand:
        return self._spots[decision.seat - 1].hands[decision.hand - 1]

    def _log(self, operation: Operation) -> None:
        self.operations.append(operation)



def replay(rules: Rules, shoe: Shoe, bets: Sequence[tuple[str, Sequence[HandBet]]],
           actions: Sequence[Action | str]) -> Round:
    """Rebuild a round from its record: rules, shoe order, bets and actions in order.

    >>> from twentyone.core.rules import rules_from_toml
    >>> rules = rules_from_toml('id = "demo"\\nname = "Demo"\\n[shoe]\\ndecks = 8')
    >>> game = replay(rules, Shoe.stacked(["5S", "6H", "5D", "TC", "KC", "2C"]), [("you", [HandBet(10)])], ["double"])
    >>> game.hands[0].outcome, game.hands[0].stake, game.hands[0].returned
    (<Outcome.WIN: 'win'>, 20, 40)
    """
    game = Round(rules, shoe)
    for player, hand_bets in bets:
        game.place_bets(player, hand_bets)
    game.deal()
    for action in actions:
        game.act(action)
    return game
