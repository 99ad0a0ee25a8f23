"""Rules: everything that makes one blackjack game differ from another, as data.

A :class:`Rules` is built from a mapping (a parsed TOML rules file) by
:func:`rules_from_mapping`; a wrong field raises :class:`RulesError` naming it.
Reading files is left to :mod:`twentyone.variants`, so this module stays pure.

>>> rules = rules_from_toml('''
... id = "tiny"
... name = "Tiny"
... [shoe]
... decks = 1
... ''')
>>> rules.shoe.decks, rules.blackjack_payout, rules.dealer.peek
(1, Payout(numerator=3, denominator=2), <Peek.ACE_TEN: 'ace-ten'>)
>>> rules_from_toml('id = "x"\\nname = "X"\\n[shoe]\\ndecks = 0')
Traceback (most recent call last):
...
twentyone.core.rules.RulesError: shoe.decks: must be an integer from 1 to 16, got 0.

Why one module: each section's dataclass sits beside its validation, so a rules file's
field, its meaning and its error message are read in one place.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from fractions import Fraction
from typing import Any, NamedTuple, TypeVar

from twentyone.core.cards import RANKS
from twentyone.core.shoe import ShoeComposition
from twentyone.core.sidebets import SIDE_BETS

_Word = TypeVar("_Word", bound=StrEnum)


class Peek(StrEnum):
    """Which up cards the dealer checks the hole card under."""

    NONE = "none"
    ACE = "ace"
    ACE_TEN = "ace-ten"
    ACE_FACE = "ace-face"


class DealStep(StrEnum):
    HANDS = "hands"
    DEALER_UP = "dealer-up"
    DEALER_HOLE = "dealer-hole"


class DoubleTotals(StrEnum):
    ANY = "any"
    NINE_TO_ELEVEN = "9-11"
    TEN_OR_ELEVEN = "10-11"


class Surrender(StrEnum):
    NONE = "none"
    LATE = "late"
    EARLY = "early"


class AutoStand(StrEnum):
    """Which 21s stand by themselves: every 21, only a soft one, or none (the player stands)."""

    TWENTY_ONE = "21"
    SOFT_21 = "soft-21"
    NONE = "none"

    def stands(self, total: int, soft: bool) -> bool:
        """Whether a hand of ``total`` (``soft`` or not) stands by itself under this rule.

        >>> AutoStand.SOFT_21.stands(21, soft=True), AutoStand.SOFT_21.stands(21, soft=False)
        (True, False)
        """
        return total == 21 and (self is AutoStand.TWENTY_ONE or (self is AutoStand.SOFT_21 and soft))


class BlackjackTakes(StrEnum):
    """What a dealer blackjack found at the end takes when there was no peek: every bet, or the original."""

    ALL = "all"
    ORIGINAL = "original"


class SplitMatch(StrEnum):
    VALUE = "value"
    RANK = "rank"


class Reshuffle(StrEnum):
    EVERY_ROUND = "every-round"
    CUT_CARD = "cut-card"


class FairValue(StrEnum):
    """The hand value behind a cash-out offer: the lowest value of playing on among every hand of the total the offer
    may be made to (no offer is worth more than playing on), or the two-card hands' average under best play, or under
    hitting and standing only."""

    LOWEST = "lowest"
    OPTIMAL = "optimal"
    HIT_STAND = "hit-stand"


# The choices of each setting, in the order rules files and messages list them.
PEEK_POLICIES: tuple[Peek, ...] = tuple(Peek)
DEAL_STEPS: tuple[DealStep, ...] = tuple(DealStep)
DOUBLE_TOTALS: tuple[DoubleTotals, ...] = tuple(DoubleTotals)
SURRENDER: tuple[Surrender, ...] = tuple(Surrender)
AUTO_STAND: tuple[AutoStand, ...] = tuple(AutoStand)
BLACKJACK_TAKES: tuple[BlackjackTakes, ...] = tuple(BlackjackTakes)
SPLIT_MATCH: tuple[SplitMatch, ...] = tuple(SplitMatch)
RESHUFFLE: tuple[Reshuffle, ...] = tuple(Reshuffle)


class RulesError(ValueError):
    """A rules file is invalid; the message starts with the dotted name of the field."""


class Payout(NamedTuple):
    """Winnings per unit staked, as ``numerator:denominator`` (3:2 for blackjack)."""

    numerator: int
    denominator: int

    def winnings(self, stake: int) -> int:
        """Winnings on ``stake`` minor units, rounded down to a whole minor unit.

        >>> Payout(3, 2).winnings(25)
        37
        """
        return stake * self.numerator // self.denominator

    def __str__(self) -> str:
        return f"{self.numerator}:{self.denominator}"


EVEN = Payout(1, 1)
TWO_TO_ONE = Payout(2, 1)
THREE_TO_TWO = Payout(3, 2)


@dataclass(frozen=True)
class ShoeRules:
    decks: int
    removed_ranks: frozenset[str] = frozenset()
    reshuffle: Reshuffle = Reshuffle.EVERY_ROUND
    penetration: float = 0.75

    @property
    def composition(self) -> ShoeComposition:
        return ShoeComposition(self.decks, self.removed_ranks)

    @property
    def cut_card(self) -> int | None:
        """Cards dealt before a reshuffle is due, or None when every round is reshuffled."""
        if self.reshuffle == Reshuffle.EVERY_ROUND:
            return None
        return int(self.composition.size * self.penetration)


@dataclass(frozen=True)
class DealerRules:
    hits_soft_17: bool = False
    peek: Peek = Peek.ACE_TEN
    no_peek_blackjack_takes: BlackjackTakes = BlackjackTakes.ALL

    def peeks_under(self, up_rank: str) -> bool:
        """Whether the dealer checks the hole card for blackjack with this up card.

        >>> DealerRules(peek="ace-face").peeks_under("T"), DealerRules(peek="ace-face").peeks_under("K")
        (False, True)
        """
        if self.peek == Peek.NONE:
            return False
        if up_rank == "A":
            return True
        if self.peek == Peek.ACE_TEN:
            return up_rank in "TJQK"
        if self.peek == Peek.ACE_FACE:
            return up_rank in "JQK"
        return False

    def draws(self, total: int, soft: bool) -> bool:
        """Whether the dealer takes another card on this total: to 16, and on a soft 17 when hitting it.

        The engine and the analysis both ask this; it is the one definition of the dealer's rule.

        >>> DealerRules().draws(16, False), DealerRules().draws(17, True)
        (True, False)
        >>> DealerRules(hits_soft_17=True).draws(17, True)
        True
        """
        return total < 17 or (total == 17 and soft and self.hits_soft_17)


@dataclass(frozen=True)
class DealRules:
    order: tuple[DealStep, ...] = (DealStep.HANDS, DealStep.DEALER_UP, DealStep.HANDS, DealStep.DEALER_HOLE)
    common_draw: bool = False
    hands_per_player: int = 1
    seats: int = 1  # players at one table; 0 means unlimited

    @property
    def hole_card(self) -> bool:
        """False for the European no-hole-card game: the dealer's second card comes last."""
        return "dealer-hole" in self.order


@dataclass(frozen=True)
class DoubleRules:
    totals: DoubleTotals = DoubleTotals.ANY
    multipliers: tuple[int, ...] = (2,)
    after_split: bool = False

    def allows_total(self, total: int, soft: bool) -> bool:
        """Whether a two-card hand of this total may be doubled.

        Restricted totals (9-11, 10-11) are the best total of the hand, so a soft
        19 (A-8) is not a 9.

        >>> DoubleRules(totals="9-11").allows_total(9, False), DoubleRules(totals="9-11").allows_total(19, True)
        (True, False)
        """
        if self.totals == "any":
            return True
        low = 9 if self.totals == "9-11" else 10
        return low <= total <= 11

    def refusal(self, multiplier: int, cards: int, total: int, soft: bool, from_split: bool) -> str | None:
        """Why a hand may not double (x2), triple (x3) or quadruple (x4) now, or None when it may.

        Split aces that take one card are refused by :meth:`SplitRules.one_card_only` first.

        >>> DoubleRules().refusal(2, 2, 11, False, from_split=True)
        'this game has no double after split'
        >>> DoubleRules(after_split=True).refusal(2, 2, 11, False, from_split=True) is None
        True
        """
        if multiplier not in self.multipliers:
            names = {2: "double", 3: "triple", 4: "quadruple"}
            return f"this game offers only {', '.join(names[m] for m in self.multipliers)}"
        if cards != 2:
            return "only the first two cards of a hand can be doubled"
        if from_split and not self.after_split:
            return "this game has no double after split"
        if not self.allows_total(total, soft):
            return f"doubling is allowed only on totals {self.totals}, not {total}"
        return None

    def allowed(self, multiplier: int, cards: int, total: int, soft: bool, from_split: bool) -> bool:
        """Whether :meth:`refusal` lets the hand double (or triple, quadruple).

        >>> DoubleRules(totals="9-11").allowed(2, 2, 12, False, from_split=False)
        False
        """
        return self.refusal(multiplier, cards, total, soft, from_split) is None


@dataclass(frozen=True)
class SplitRules:
    match: SplitMatch = SplitMatch.VALUE
    max_hands: int = 2
    aces_one_card: bool = True
    resplit_aces: bool = False

    def one_card_only(self, split_aces: bool) -> bool:
        """Whether a hand from split aces is done drawing (it may still be split again).

        >>> SplitRules().one_card_only(True), SplitRules(aces_one_card=False).one_card_only(True)
        (True, False)
        """
        return split_aces and self.aces_one_card

    def refusal(self, cards: int, pair: bool, hands: int, split_aces: bool) -> str | None:
        """Why a hand may not be split now, or None when it may.

        ``pair`` says whether its two cards match as :attr:`match` requires; ``hands`` is how
        many hands its betting spot holds now (1 before any split).

        >>> SplitRules().refusal(2, True, 2, False)
        'this game allows at most 2 hands from one spot (no resplit)'
        >>> SplitRules(max_hands=4).refusal(2, True, 2, False) is None
        True
        """
        if cards != 2:
            return "only a two-card hand can be split"
        if not pair:
            kind = "identical ranks" if self.match == SplitMatch.RANK else "cards of equal value"
            return f"only a pair of {kind} can be split"
        if hands >= self.max_hands:
            return f"this game allows at most {self.max_hands} hands from one spot (no resplit)"
        if split_aces and not self.resplit_aces:
            return "split aces cannot be split again"
        return None

    def allowed(self, cards: int, pair: bool, hands: int, split_aces: bool) -> bool:
        """Whether :meth:`refusal` lets the hand split.

        >>> SplitRules(max_hands=4).allowed(2, True, 3, split_aces=True)
        False
        """
        return self.refusal(cards, pair, hands, split_aces) is None

    def pair(self, first: tuple[str, int], second: tuple[str, int]) -> bool:
        """Whether two cards, as (rank, value), make a pair that may be split.

        >>> SplitRules().pair(("K", 10), ("T", 10)), SplitRules(match="rank").pair(("K", 10), ("T", 10))
        (True, False)
        """
        return first[0] == second[0] if self.match == SplitMatch.RANK else first[1] == second[1]


@dataclass(frozen=True)
class InsuranceRules:
    offered: bool = True
    payout: Payout = TWO_TO_ONE
    to_blackjack: bool = False  # a player blackjack may take insurance (instead of even money)
    even_money: bool = False  # a player blackjack is offered even money


@dataclass(frozen=True)
class SideBetRules:
    """One side bet: its kind (which evaluator), its paytable (line -> x to 1) and limits."""

    name: str
    kind: str
    paytable: Mapping[str, int]

    def pays(self) -> list[tuple[str, int]]:
        """Each line this side bet pays, best first, with what it pays to 1: its paytable as a player reads it.

        >>> SideBetRules("pp", "perfect_pairs", {"mixed": 6, "perfect": 25, "colored": 12}).pays()
        [('perfect', 25), ('colored', 12), ('mixed', 6)]
        """
        return [(line, self.paytable[line]) for line in SIDE_BETS[self.kind].lines if line in self.paytable]


@dataclass(frozen=True)
class CashOutRules:
    """Cash out: a factor of the main bet per (soft, total, dealer up value)."""

    enabled: bool = False
    table_name: str = ""
    source: str = ""
    factors: Mapping[tuple[bool, int, int], float] = field(default_factory=dict)
    target_return: float | None = None  # what always taking the first offer should return
    fair_value: FairValue = FairValue.LOWEST  # the hand's value behind an offer (FairValue)

    def factor(self, soft: bool, total: int, up_value: int) -> float | None:
        return self.factors.get((soft, total, up_value))

    def offer(self, soft: bool, total: int, up_value: int, bet: int) -> int | None:
        """The offer on a main bet of ``bet`` minor units: the floor of factor x bet, or None where none is made.

        Fraction of the decimal text keeps a factor such as 0.7656 exact, so the floor is the true one (in floating
        point 0.7656 x 10000 is 7655.999...: a floor of it lost a unit).

        >>> CashOutRules(enabled=True, factors={(False, 11, 6): 0.7656}).offer(False, 11, 6, 10_000)
        7656
        """
        factor = self.exact_factor(soft, total, up_value)
        return None if factor is None else int(factor * bet)

    def exact_factor(self, soft: bool, total: int, up_value: int) -> Fraction | None:
        """The factor as written in the table, exactly (the engine's floor and the analysis's values use this one).

        >>> CashOutRules(enabled=True, factors={(False, 11, 6): 0.7656}).exact_factor(False, 11, 6)
        Fraction(957, 1250)
        """
        factor = self.factor(soft, total, up_value)
        return None if factor is None else Fraction(str(factor))


@dataclass(frozen=True)
class Rules:
    """A whole game, frozen; the engine, analyser and UI all read this one object."""

    id: str
    name: str
    shoe: ShoeRules
    dealer: DealerRules = DealerRules()
    deal: DealRules = DealRules()
    double: DoubleRules = DoubleRules()
    split: SplitRules = SplitRules()
    insurance: InsuranceRules = InsuranceRules()
    surrender: Surrender = Surrender.NONE
    blackjack_payout: Payout = THREE_TO_TWO
    win_payout: Payout = EVEN
    auto_stand: AutoStand = AutoStand.TWENTY_ONE
    cash_out: CashOutRules = CashOutRules()
    side_bets: Mapping[str, SideBetRules] = field(default_factory=dict)
    seed: str = ""
    summary: str = ""
    # Returns the operator publishes (percent), kept only as references to compare computed ones with.
    published: Mapping[str, float] = field(default_factory=dict)
    # Those of them the rules were chosen to meet, where the sheet prints no paytable (or cash-out margin): their
    # agreement is by construction, not a check of the maths (an analyst's trial read it as one).
    fitted: frozenset[str] = frozenset()

    def checks_for_blackjack(self, up_rank: str) -> bool:
        """Whether the dealer looks at a hole card for blackjack before the players act, with this up card: a hole
        card dealt, and a peek under this card. The engine, the maths, the simulator and ``hint`` each asked both.

        >>> from twentyone.variants import builtin_rules
        >>> [builtin_rules(game).checks_for_blackjack("K") for game in ("classic", "multiplayer", "single-deck")]
        [False, True, False]
        """
        return self.deal.hole_card and self.dealer.peeks_under(up_rank)

    def surrender_refusal(self, cards: int, from_split: bool) -> str | None:
        """Why a hand may not surrender as a play now (late surrender), or None when it may.

        Early surrender is an offer before the dealer's check, not a play.

        >>> Rules("x", "X", ShoeRules(1), surrender="late").surrender_refusal(2, from_split=False) is None
        True
        """
        if self.surrender == "none":
            return "this game has no surrender"
        if self.surrender != "late":  # early: offered before the dealer's check, or not at all
            return "surrender is offered only before the dealer checks for blackjack"
        if cards != 2 or from_split:
            return "surrender is only allowed as the first decision on the original two cards"
        return None


# Every paytable line each side-bet kind can pay, best first (from the registry in core.sidebets).
SIDE_BET_LINES: dict[str, tuple[str, ...]] = {kind: spec.lines for kind, spec in SIDE_BETS.items()}


def _get(table: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str,
         default: Any = None) -> Any:
    name = f"{where}.{key}" if where else key
    if key not in table:
        if default is None:
            raise RulesError(f"{name}: missing.")
        return default
    value = table[key]
    if kind is int and isinstance(value, bool):
        raise RulesError(f"{name}: expected an integer, got {value!r}.")
    if not isinstance(value, kind):
        expected = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise RulesError(f"{name}: expected {expected}, got {value!r}.")
    return value


def _choice(table: Mapping[str, Any], key: str, choices: tuple[str, ...], where: str,
            default: str) -> str:
    value: str = _get(table, key, str, where, default)
    if value not in choices:
        raise RulesError(f"{where}.{key}: must be one of {', '.join(choices)}, got {value!r}.")
    return value


def _setting(table: Mapping[str, Any], key: str, words: type[_Word], where: str, default: _Word) -> _Word:
    """A setting that is one of a vocabulary's words (a :class:`StrEnum`), as that word."""
    return words(_choice(table, key, tuple(words), where, default))


_SECTION_KEYS = {
    "shoe": ("decks", "removed_ranks", "reshuffle", "penetration"),
    "dealer": ("hits_soft_17", "peek", "no_peek_blackjack_takes"),
    "deal": ("order", "common_draw", "hands_per_player", "seats"),
    "double": ("totals", "multipliers", "after_split"),
    "split": ("match", "max_hands", "aces_one_card", "resplit_aces"),
    "insurance": ("offered", "pays", "to_blackjack", "even_money"),
    "player": ("surrender", "blackjack_pays", "win_pays", "auto_stand"),
    "cash_out": ("enabled", "table", "target_return", "fair_value"),
}


def _section(data: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """A sub-table of the rules file; a misspelt key in it is an error, not a silent default."""
    value = data.get(key, {})
    if not isinstance(value, Mapping):
        raise RulesError(f"{key}: expected a table, got {value!r}.")
    for name in value:
        if key in _SECTION_KEYS and name not in _SECTION_KEYS[key]:
            raise RulesError(f"{key}.{name}: unknown field; known: {', '.join(_SECTION_KEYS[key])}.")
    return value


def _int_range(table: Mapping[str, Any], key: str, where: str, low: int, high: int,
               default: int | None = None) -> int:
    value: int = _get(table, key, int, where, default)
    if not low <= value <= high:
        raise RulesError(f"{where}.{key}: must be an integer from {low} to {high}, got {value}.")
    return value


def parse_payout(text: Any, name: str) -> Payout:
    """Parse ``"3:2"`` (or ``"6:5"``, ``"1:1"``) into a :class:`Payout`.

    >>> parse_payout("6:5", "blackjack_pays")
    Payout(numerator=6, denominator=5)
    """
    if isinstance(text, str) and text.count(":") == 1:
        left, right = text.split(":")
        if left.strip().isdigit() and right.strip().isdigit() and int(right) > 0:
            return Payout(int(left), int(right))
    raise RulesError(f"{name}: expected a payout like '3:2', got {text!r}.")


def _parse_side_bets(data: Mapping[str, Any]) -> dict[str, SideBetRules]:
    result: dict[str, SideBetRules] = {}
    for name, table in _section(data, "side_bets").items():
        where = f"side_bets.{name}"
        if not isinstance(table, Mapping):
            raise RulesError(f"{where}: expected a table, got {table!r}.")
        kind = _choice(table, "kind", tuple(SIDE_BET_LINES), where, "")
        paytable = _get(table, "paytable", Mapping, where)
        lines = SIDE_BET_LINES[kind]
        for line, pays in paytable.items():
            if line not in lines:
                raise RulesError(
                    f"{where}.paytable.{line}: not a line of {kind}; lines are {', '.join(lines)}."
                )
            if isinstance(pays, bool) or not isinstance(pays, int) or pays < 0:
                raise RulesError(f"{where}.paytable.{line}: expected a whole x-to-1 payout, got {pays!r}.")
        result[name] = SideBetRules(name, kind, dict(paytable))
    return result


def _parse_cash_out(data: Mapping[str, Any], tables: Mapping[str, Mapping[str, Any]]) -> CashOutRules:
    section = _section(data, "cash_out")
    enabled = _get(section, "enabled", bool, "cash_out", False)
    if not enabled:
        return CashOutRules()
    table_name = _get(section, "table", str, "cash_out")
    if table_name not in tables:
        raise RulesError(f"cash_out.table: no cash-out table named {table_name!r}.")
    table = tables[table_name]
    factors: dict[tuple[bool, int, int], float] = {}
    for kind in ("hard", "soft"):
        rows = _get(table, kind, Mapping, "cash_out.table")
        for total_text, row in rows.items():
            if not str(total_text).isdigit() or not isinstance(row, list) or len(row) != 10:
                raise RulesError(f"cash_out.table.{kind}.{total_text}: expected 10 factors (up 2..A).")
            for up_index, factor in enumerate(row):
                if not isinstance(factor, int | float) or factor < 0:
                    raise RulesError(f"cash_out.table.{kind}.{total_text}: bad factor {factor!r}.")
                up_value = up_index + 2 if up_index < 9 else 1  # columns 2..10 then Ace
                factors[(kind == "soft", int(total_text), up_value)] = float(factor)
    source = str(table.get("source", ""))
    target = _get(section, "target_return", (int, float), "cash_out", -1.0)
    if target != -1.0 and not 0 < target < 1.5:
        raise RulesError(f"cash_out.target_return: must be a return like 0.968, got {target}.")
    fair_value = _setting(section, "fair_value", FairValue, "cash_out", FairValue.LOWEST)
    return CashOutRules(True, table_name, source, factors, None if target == -1.0 else float(target), fair_value)


def _parse_published(data: Mapping[str, Any]) -> dict[str, float]:
    published = {}
    for name, value in _section(data, "published").items():
        if name == FITTED:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 200:
            raise RulesError(f"published.{name}: expected a percentage like 99.29, got {value!r}.")
        published[name] = float(value)
    return published


FITTED = "fitted"  # [published] fitted = [...]: the names of the published returns the rules were chosen to meet


def _parse_fitted(data: Mapping[str, Any], published: Mapping[str, float]) -> frozenset[str]:
    fitted = _section(data, "published").get(FITTED, [])
    if not isinstance(fitted, list) or not all(isinstance(name, str) for name in fitted):
        raise RulesError(f"published.{FITTED}: expected a list of published returns' names, got {fitted!r}.")
    if unknown := [name for name in fitted if name not in published]:
        raise RulesError(f"published.{FITTED}: {unknown[0]!r} is not a published return of this rules file.")
    return frozenset(fitted)


def rules_from_mapping(
    data: Mapping[str, Any], tables: Mapping[str, Mapping[str, Any]] | None = None
) -> Rules:
    """Build :class:`Rules` from a parsed rules file; ``tables`` resolves cash-out tables."""
    tables = tables or {}
    known = {"id", "name", "seed", "summary", "shoe", "dealer", "deal", "double", "split",
             "insurance", "player", "cash_out", "side_bets", "published"}
    for key in data:
        if key not in known:
            raise RulesError(f"{key}: unknown field; known fields are {', '.join(sorted(known))}.")
    shoe_t = _section(data, "shoe")
    removed = _get(shoe_t, "removed_ranks", list, "shoe", [])
    for rank in removed:
        if not isinstance(rank, str) or rank not in RANKS or len(rank) != 1:
            raise RulesError(f"shoe.removed_ranks: unknown rank {rank!r}.")
    reshuffle = _setting(shoe_t, "reshuffle", Reshuffle, "shoe", Reshuffle.EVERY_ROUND)
    penetration = _get(shoe_t, "penetration", (int, float), "shoe", 0.75)
    if not 0 < penetration < 1:
        raise RulesError(f"shoe.penetration: must be between 0 and 1, got {penetration}.")
    shoe = ShoeRules(_int_range(shoe_t, "decks", "shoe", 1, 16), frozenset(removed),
                     reshuffle, float(penetration))
    if len(shoe.removed_ranks) > 8:
        raise RulesError("shoe.removed_ranks: too many ranks removed to play blackjack.")

    dealer_t = _section(data, "dealer")
    dealer = DealerRules(
        hits_soft_17=_get(dealer_t, "hits_soft_17", bool, "dealer", False),
        peek=_setting(dealer_t, "peek", Peek, "dealer", Peek.ACE_TEN),
        no_peek_blackjack_takes=_setting(dealer_t, "no_peek_blackjack_takes", BlackjackTakes,
                                        "dealer", BlackjackTakes.ALL),
    )

    deal_t = _section(data, "deal")
    order = tuple(_get(deal_t, "order", list, "deal", ["hands", "dealer-up", "hands", "dealer-hole"]))
    for step in order:
        if step not in DEAL_STEPS:
            raise RulesError(f"deal.order: unknown step {step!r}; steps are {', '.join(DEAL_STEPS)}.")
    order = tuple(DealStep(step) for step in order)
    if order.count("hands") != 2 or order.count("dealer-up") != 1 or order.count("dealer-hole") > 1:
        raise RulesError("deal.order: needs 'hands' twice, 'dealer-up' once and 'dealer-hole' at most once.")
    deal = DealRules(
        order=order,
        common_draw=_get(deal_t, "common_draw", bool, "deal", False),
        hands_per_player=_int_range(deal_t, "hands_per_player", "deal", 1, 10, 1),
        seats=_int_range(deal_t, "seats", "deal", 0, 100, 1),
    )
    if deal.common_draw and deal.hands_per_player != 1:
        raise RulesError("deal.hands_per_player: a common-draw game gives each player one hand.")

    double_t = _section(data, "double")
    multipliers = tuple(_get(double_t, "multipliers", list, "double", [2]))
    if not multipliers or any(m not in (2, 3, 4) for m in multipliers) or len(set(multipliers)) != len(multipliers):
        raise RulesError(f"double.multipliers: a list drawn from 2, 3, 4, got {list(multipliers)}.")
    double = DoubleRules(
        totals=_setting(double_t, "totals", DoubleTotals, "double", DoubleTotals.ANY),
        multipliers=tuple(sorted(multipliers)),
        after_split=_get(double_t, "after_split", bool, "double", False),
    )

    split_t = _section(data, "split")
    split = SplitRules(
        match=_setting(split_t, "match", SplitMatch, "split", SplitMatch.VALUE),
        max_hands=_int_range(split_t, "max_hands", "split", 1, 8, 2),
        aces_one_card=_get(split_t, "aces_one_card", bool, "split", True),
        resplit_aces=_get(split_t, "resplit_aces", bool, "split", False),
    )

    insurance_t = _section(data, "insurance")
    insurance = InsuranceRules(
        offered=_get(insurance_t, "offered", bool, "insurance", True),
        payout=parse_payout(insurance_t.get("pays", "2:1"), "insurance.pays"),
        to_blackjack=_get(insurance_t, "to_blackjack", bool, "insurance", False),
        even_money=_get(insurance_t, "even_money", bool, "insurance", False),
    )

    player_t = _section(data, "player")
    rules = Rules(
        id=_get(data, "id", str, ""),
        name=_get(data, "name", str, ""),
        seed=str(data.get("seed", "")),
        summary=str(data.get("summary", "")),
        shoe=shoe,
        dealer=dealer,
        deal=deal,
        double=double,
        split=split,
        insurance=insurance,
        surrender=_setting(player_t, "surrender", Surrender, "player", Surrender.NONE),
        blackjack_payout=parse_payout(player_t.get("blackjack_pays", "3:2"), "player.blackjack_pays"),
        win_payout=parse_payout(player_t.get("win_pays", "1:1"), "player.win_pays"),
        auto_stand=_setting(player_t, "auto_stand", AutoStand, "player", AutoStand.TWENTY_ONE),
        cash_out=_parse_cash_out(data, tables),
        side_bets=_parse_side_bets(data),
        published=(published := _parse_published(data)),
        fitted=_parse_fitted(data, published),
    )
    for name in rules.published:
        if name not in ("main", "cash_out") and name not in rules.side_bets:
            raise RulesError(f"published.{name}: not the main game, cash_out or a side bet of this game.")
    return rules


def rules_from_toml(text: str, tables: Mapping[str, Mapping[str, Any]] | None = None) -> Rules:
    """Parse a TOML rules file's text; syntax errors become :class:`RulesError`."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise RulesError(f"rules file: not valid TOML ({error}).") from None
    return rules_from_mapping(data, tables)
