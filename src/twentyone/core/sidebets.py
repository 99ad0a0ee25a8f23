"""Side bets: which paytable line a hand hits. Paytables themselves are rules data.

Each evaluator returns the name of the line hit (a key of
:data:`SIDE_BETS`' ``lines``) or ``None`` for a losing bet. :data:`SIDE_BETS` is the registry of
kinds: title, lines and their words, when each settles and how it is scored.

>>> from twentyone.core.cards import parse_cards
>>> perfect_pairs(*parse_cards(["QH", "QD"]))
'colored'
>>> twenty_one_plus_three(*parse_cards(["QH", "KH", "AH"]))
'straight_flush'
>>> hot_3(*parse_cards(["7H", "7C", "7D"]))
'seven_seven_seven'
>>> bust_it(parse_cards(["TS", "6D", "9C"]))
'bust_3'
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from twentyone.core.cards import RANKS, Card
from twentyone.core.hand import hand_value

# Rank order for poker straights: Ace low (1) and high (14), Jack 11, Queen 12, King 13.
_STRAIGHT_RANK = {rank: index + 1 for index, rank in enumerate(RANKS)}


def perfect_pairs(first: Card, second: Card) -> str | None:
    """Perfect (same suit), colored (same colour) or mixed pair of identical ranks."""
    if first.rank != second.rank:
        return None
    if first.suit == second.suit:
        return "perfect"
    if first.is_red == second.is_red:
        return "colored"
    return "mixed"


def any_pair(first: Card, second: Card) -> str | None:
    """Suited pair (identical cards) or any pair of identical ranks.

    >>> from twentyone.core.cards import parse_cards
    >>> any_pair(*parse_cards(["AS", "AS"])), any_pair(*parse_cards(["8C", "8H"])), any_pair(*parse_cards(["QC", "KC"]))
    ('suited_pair', 'any_pair', None)
    """
    if first.rank != second.rank:
        return None
    return "suited_pair" if first.suit == second.suit else "any_pair"


def is_straight(cards: Sequence[Card]) -> bool:
    """Three consecutive ranks, Ace high or low (Q-K-A and A-2-3, not K-A-2).

    Ranks are consecutive in the full deck's order: with nines and tens removed,
    8-J-Q is not a straight.

    >>> from twentyone.core.cards import parse_cards
    >>> is_straight(parse_cards(["QS", "KD", "AC"])), is_straight(parse_cards(["KS", "AD", "2C"]))
    (True, False)
    >>> is_straight(parse_cards(["8S", "JD", "QC"]))
    False
    """
    low = sorted(_STRAIGHT_RANK[card.rank] for card in cards)
    high = sorted(14 if rank == 1 else rank for rank in low)
    return any(
        len(set(ranks)) == len(ranks) and ranks[-1] - ranks[0] == len(ranks) - 1
        for ranks in (low, high)
    )


def twenty_one_plus_three(first: Card, second: Card, up: Card) -> str | None:
    """The poker hand made by the player's two cards and the dealer's up card."""
    cards = (first, second, up)
    suited = len({card.suit for card in cards}) == 1
    trips = len({card.rank for card in cards}) == 1
    if trips:
        return "suited_trips" if suited else "three_of_a_kind"
    straight = is_straight(cards)
    if straight and suited:
        return "straight_flush"
    if straight:
        return "straight"
    if suited:
        return "flush"
    return None


def hot_3(first: Card, second: Card, up: Card) -> str | None:
    """Total of the three cards (an Ace counts 1 or 11, whichever is better): 19, 20 or 21."""
    cards = (first, second, up)
    if all(card.rank == "7" for card in cards):
        return "seven_seven_seven"
    total = hand_value(cards).total
    if total == 21:
        return "suited_21" if len({card.suit for card in cards}) == 1 else "21"
    if total in (19, 20):
        return str(total)
    return None


def bust_it(dealer_cards: Sequence[Card]) -> str | None:
    """The dealer busts, and with how many cards (both initial cards count)."""
    if hand_value(dealer_cards).total <= 21:
        return None
    count = len(dealer_cards)
    return "bust_8_plus" if count >= 8 else f"bust_{count}"


class Settles(StrEnum):
    """When a side bet is decided: on the deal (player's two cards and the up card), or on the dealer's hand."""

    ON_DEAL = "deal"
    ON_DEALER = "dealer"


@dataclass(frozen=True)
class SideBetKind:
    """One kind of side bet: its title, every line it can pay (best first) and how each reads, when it
    settles, and how it is scored. Paytables (what each line pays) are rules data; this is the rest."""

    kind: str
    title: str
    lines: tuple[str, ...]
    line_titles: Mapping[str, str]
    settles: Settles
    on_deal: Callable[[Card, Card, Card], str | None] | None = None
    on_dealer: Callable[[Sequence[Card]], str | None] | None = None

    def score(self, first: Card, second: Card, up: Card, dealer: Sequence[Card] = ()) -> str | None:
        """The line hit, or None: from the deal, or from the dealer's final cards.

        >>> from twentyone.core.cards import parse_cards
        >>> SIDE_BETS["bust_it"].score(*parse_cards(["8S", "8D", "TS"]), parse_cards(["TS", "6D", "9C"]))
        'bust_3'
        """
        if self.on_deal is not None:
            return self.on_deal(first, second, up)
        assert self.on_dealer is not None
        return self.on_dealer(dealer)


_BUST_LINES = ("bust_8_plus", "bust_7", "bust_6", "bust_5", "bust_4", "bust_3")

# The one registry of side-bet kinds: engine, analysis, server and both user interfaces read it.
SIDE_BETS: dict[str, SideBetKind] = {spec.kind: spec for spec in (
    SideBetKind("perfect_pairs", "Perfect Pairs", ("perfect", "colored", "mixed"),
                # As sheets 000 and 003 spell it ("Colored Pair"): the tables read "coloured pair" (a trial).
                {"perfect": "perfect pair", "colored": "colored pair", "mixed": "mixed pair"},
                Settles.ON_DEAL, lambda first, second, _up: perfect_pairs(first, second)),
    SideBetKind("21+3", "21+3", ("suited_trips", "straight_flush", "three_of_a_kind", "straight", "flush"),
                {"suited_trips": "suited trips", "straight_flush": "straight flush",
                 "three_of_a_kind": "three of a kind", "straight": "straight", "flush": "flush"},
                Settles.ON_DEAL, twenty_one_plus_three),
    SideBetKind("any_pair", "Any Pair", ("suited_pair", "any_pair"),
                {"suited_pair": "suited pair", "any_pair": "pair"},
                Settles.ON_DEAL, lambda first, second, _up: any_pair(first, second)),
    SideBetKind("hot_3", "Hot 3", ("seven_seven_seven", "suited_21", "21", "20", "19"),
                # "total 20", not "20" alone: "Hot 3: 20, +€10.00" read as a number with no meaning (a trial)
                {"seven_seven_seven": "7-7-7", "suited_21": "suited 21", "21": "total 21", "20": "total 20",
                 "19": "total 19"},
                Settles.ON_DEAL, hot_3),
    SideBetKind("bust_it", "Bust It", _BUST_LINES,
                {line: "dealer busts with 8 or more cards" if line == "bust_8_plus"
                 else f"dealer busts with {line[-1]} cards" for line in _BUST_LINES},
                Settles.ON_DEALER, on_dealer=bust_it),
)}

# Views of the registry for code that needs only one facet of it.
DEAL_TIME_EVALUATORS: dict[str, Callable[[Card, Card, Card], str | None]] = {
    kind: spec.on_deal for kind, spec in SIDE_BETS.items() if spec.on_deal is not None}
DEALER_TIME_KINDS = frozenset(kind for kind, spec in SIDE_BETS.items() if spec.settles is Settles.ON_DEALER)
