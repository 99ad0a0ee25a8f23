"""Expected values of every decision, optimal and basic strategy, and the main game's return.

:class:`GameAnalysis` reads a :class:`~twentyone.core.rules.Rules` and a shoe
composition (a fresh shoe by default) and computes, exactly:

* the value of standing, hitting, doubling (x2, x3, x4), splitting (resplits
  included) and surrendering every initial hand against every up card, with
  composition-dependent play and finite-deck removal; split hands are played
  by the chosen post-split strategy, CDZ-, CDP1 or CDP (:mod:`.splits`);
* a total-dependent basic strategy derived from those values, and its exact
  return when followed;
* the return of the main bet under each, with each up card's contribution.

The dealer's peek, the European no-hole-card rule and "dealer blackjack takes
all bets / original bets only" each change the numbers and are modelled as the
rules say. docs/maths.md explains the method.

>>> from twentyone.variants import builtin_rules
>>> analysis = GameAnalysis(builtin_rules("single-deck"))
>>> ev = analysis.hand_ev((10, 6), up=10)
>>> ev.best, round(ev.actions["stand"], 4) < round(ev.actions["hit"], 4)
('hit', True)

Why one module: :class:`GameAnalysis` is one object whose stages (first decisions, later
decisions, the round's return) share its cached dealer tables; splits live in ``splits.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from math import comb

import numpy as np

from twentyone.analysis.composition import Counts, initial_deals, remove, value_counts
from twentyone.analysis.splits import SPLIT_STRATEGIES, PairSplit
from twentyone.analysis.states import FloatArray, Hand, StateSpace
from twentyone.analysis.support import check_supported
from twentyone.core.hand import value_of_counts
from twentyone.core.operations import ACTION_OF_MULTIPLIER
from twentyone.core.rules import Rules

UP_VALUES = tuple(range(1, 11))
STRATEGY_UPS = (2, 3, 4, 5, 6, 7, 8, 9, 10, 1)  # chart column order: 2..10 then Ace


# Chart letters: the first letter is the play; a trailing "s" means stand when it is not open.
ACTION_OF_CODE = {"S": "stand", "H": "hit", "D": "double", "T": "triple", "Q": "quadruple", "R": "surrender"}
CODE_OF_ACTION = {action: code for code, action in ACTION_OF_CODE.items()}


def code_action(code: str, open_actions: dict[str, float]) -> str:
    """The action a chart code takes among the open ones: its play, else hit or stand.

    >>> code_action("Ds", {"stand": 0.0, "hit": 0.0}), code_action("D", {"stand": 0.0, "hit": 0.0})
    ('stand', 'hit')
    """
    first = ACTION_OF_CODE[code[0]]
    if first in open_actions:
        return first
    return "stand" if code.endswith("s") or code == "S" else "hit"


def policy_array(policy: dict[tuple[int, bool], int]) -> np.ndarray:
    """A hit/stand policy by (total, soft) as an array indexed by ``total + 22 * soft``."""
    array = np.zeros(44, dtype=np.int8)
    for (total, soft), action in policy.items():
        array[total + 22 * int(soft)] = action
    return array


def hand_of(*values: int) -> Hand:
    """A hand as counts by value: ``hand_of(10, 6)``.

    >>> hand_of(11, 6)
    Traceback (most recent call last):
    ...
    ValueError: A card's value is 1 (Ace) to 10, got 11.
    """
    counts = [0] * 10
    for value in values:
        counts[card_value(value) - 1] += 1
    return tuple(counts)


def card_value(value: int) -> int:
    """``value`` if a card can have it (1 for an Ace to 10), else a ValueError: a value of 0 was taken as a ten, and
    11 raised an IndexError (a researcher's trial)."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or not 1 <= value <= 10:
        raise ValueError(f"A card's value is 1 (Ace) to 10, got {value!r}.")
    return int(value)


def total_of(hand: Hand) -> tuple[int, bool]:
    """Best total and softness of a hand as counts by value (:func:`twentyone.core.hand.value_of_counts`)."""
    total, soft = value_of_counts(hand)
    return total, soft


@dataclass(frozen=True)
class HandEV:
    """Expected value (per unit of the main bet) of each legal action, given what the player knows.

    Where the dealer has peeked, values are conditional on the dealer having no
    blackjack; ``dealer_blackjack`` is the chance of one before the peek.
    """

    actions: dict[str, float]
    dealer_blackjack: float
    peeked: bool

    @property
    def best(self) -> str:
        """The best play. Insurance, valued as its own bet (what it adds to the hand), is an offer answered apart and
        is never the best play: 8,8 against an Ace named it best, -0.034 above splitting's -0.385 (a researcher's
        trial; :func:`~twentyone.analysis.hints.hint_decisions` ranks it apart).

        >>> HandEV({"split": -0.385, "hit": -0.51, "insurance": -0.034}, 0.31, True).best
        'split'
        """
        plays = [action for action in self.actions if action != "insurance"] or list(self.actions)
        return max(plays, key=lambda action: self.actions[action])

    def ranked(self) -> list[tuple[str, float]]:
        """Every action best first; insurance among them on its own footing (see :attr:`best`)."""
        return sorted(self.actions.items(), key=lambda item: -item[1])


@dataclass
class UpVariant:
    """One up card value as the dealer sees it: peeked or not, and its share of that value."""

    up: int
    peeked: bool
    weight: float
    space: StateSpace
    split_spaces: dict[tuple[int, int], StateSpace] = field(default_factory=dict)
    splits: dict[int, PairSplit] = field(default_factory=dict)
    weights: FloatArray | None = None  # how often each state is dealt, for basic strategy


@dataclass(frozen=True)
class ReturnReport:
    """Return to player of the main bet (1.0 = 100 %), overall and by dealer up card."""

    optimal: float
    basic: float
    by_up_optimal: dict[int, float]
    by_up_basic: dict[int, float]


class GameAnalysis:
    """Exact analysis of one rule set from one shoe composition.

    ``split_strategy`` is how split hands are played: ``"cdp"`` (the default), ``"cdp1"`` or
    ``"cdz-"`` (docs/maths.md). Rules the analysis cannot model raise
    :class:`~twentyone.analysis.support.UnsupportedRules`.
    """

    def __init__(self, rules: Rules, counts: Counts | None = None, split_strategy: str = "cdp",
                 cash_out: bool = False) -> None:
        check_supported(rules)
        if split_strategy not in SPLIT_STRATEGIES:
            raise ValueError(f"split strategy must be one of {', '.join(SPLIT_STRATEGIES)}, got {split_strategy!r}.")
        self.rules = rules
        self.split_strategy = split_strategy
        self.win_pays = rules.win_payout.numerator / rules.win_payout.denominator
        self.counts = value_counts(rules) if counts is None else np.asarray(counts, dtype=np.int64)
        self.total_cards = int(self.counts.sum())
        self._variants: dict[int, list[UpVariant]] = {}
        self._ten_ranks = self._ten_rank_counts()
        self._continuation_cache: dict[tuple[int, bool, int, int], tuple[FloatArray, FloatArray]] = {}
        # Optimal play that also cashes out where the offer is worth more than playing on (``cash_out``): on an
        # unsplit hand never doubled, at its first decision and after each hit, as the engine offers it.
        self.cash_out = cash_out and rules.cash_out.enabled
        self._cash_out_cache: dict[int, FloatArray] = {}

    # ------------------------------------------------------------ structure
    def _ten_rank_counts(self) -> dict[str, int]:
        ranks = {rank: 0 for rank in "TJQK"}
        for card in self.rules.shoe.composition.cards():
            if card.rank in ranks:
                ranks[card.rank] += 1
        return ranks

    def _peeks(self, rank: str) -> bool:
        return self.rules.checks_for_blackjack(rank)

    def variants(self, up: int) -> list[UpVariant]:
        """The up card's peek variants (a ten-valued up card may be a T or a face card)."""
        if up not in self._variants:
            card_value(up)
            base = remove(self.counts, [up])
            if up == 10:
                groups: dict[bool, int] = {}
                for rank, count in self._ten_ranks.items():
                    groups[self._peeks(rank)] = groups.get(self._peeks(rank), 0) + count
                total = sum(groups.values())
                shares = [(peeked, count / total) for peeked, count in groups.items() if count]
            else:
                shares = [(self._peeks("A" if up == 1 else str(up)), 1.0)]
            self._variants[up] = [
                UpVariant(up, peeked, share, self.space(base, up, peeked)) for peeked, share in shares
            ]
        return self._variants[up]

    def space(self, base: Counts, variant: UpVariant | int, peeked: bool | None = None,
              must_contain: int | None = None, shared: tuple[StateSpace, int] | None = None) -> StateSpace:
        """The player's hands from ``base`` against an up card (or a variant's up card and peek).

        ``shared`` is a space whose base holds one more card of a value (see :class:`StateSpace`).
        """
        if isinstance(variant, int):
            up = variant
        else:
            up, peeked = variant.up, variant.peeked
        assert peeked is not None
        return StateSpace(base, up, self.rules.dealer.hits_soft_17, peeked, must_contain=must_contain,
                          win_pays=self.win_pays, shared=shared)

    def blackjack_loss(self, stake: float, split: bool) -> float:
        """What a dealer blackjack revealed without a peek takes from a hand of ``stake`` units.

        "Original bets only" takes the one original bet of a split spot: split hands' plans weigh it
        as half on each hand; their values charge it to the hand that holds it (:mod:`.splits`).
        """
        if self.rules.dealer.no_peek_blackjack_takes == "all":
            return stake
        return 0.5 if split else 1.0

    _blackjack_loss = blackjack_loss

    def _can_split(self, pair: int) -> bool:
        return self.rules.split.allowed(2, True, 1, False)

    def _pair_cases(self, variant: UpVariant, pair: int) -> list[tuple[float, float | None]]:
        """(chance, cards of the pair's rank) for a pair that may split; one certain case unless ranks must match.

        Two tens split only when their ranks match (``split.match = "rank"``). Every ten rank present
        holds as many cards, so given two tens, their rank matches the up card's (a ten up) or not.
        """
        if pair != 10 or self.rules.split.match == "value":
            return [(1.0, None)]
        ranks = sum(1 for count in self._ten_ranks.values() if count)
        each = float(self.counts[9]) / ranks  # cards of one ten rank in the shoe analysed
        tens = float(variant.space.base[9])  # tens left after the up card
        ways = tens * (tens - 1)
        if variant.up != 10:
            return [(ranks * each * (each - 1) / ways, each)]
        return [((each - 1) * (each - 2) / ways, each - 1), ((ranks - 1) * each * (each - 1) / ways, each)]

    # ------------------------------------------------------------- values
    def _cash_out_values(self, space: StateSpace) -> FloatArray:
        """Unnormalised value of cashing out at each state (``-inf`` where no offer is made): the offer's factor
        less the bet, times the chance of no dealer blackjack where the dealer has peeked (the offer comes after
        the peek); where not, the offer ends the hand before a blackjack can take it."""
        if id(space) not in self._cash_out_cache:
            by_key = np.full(44, -np.inf)
            for key_id in range(44):
                total, soft = key_id % 22, bool(key_id // 22)
                factor = self.rules.cash_out.exact_factor(soft, total, space.up)
                if factor is not None and total < 21:
                    by_key[key_id] = float(factor - 1)
            values = by_key[space.key_id]
            self._cash_out_cache[id(space)] = values * space.mass if space.peeked else values
        return self._cash_out_cache[id(space)]

    def _continuation(self, variant: UpVariant, space: StateSpace, split: bool,
                      policy: dict[tuple[int, bool], int] | None) -> tuple[FloatArray, FloatArray]:
        """(value, hit value) at stake 1 with only hit and stand left (and cash out, see ``cash_out``), best or by
        ``policy``."""
        loss = self._blackjack_loss(1.0, split)
        key = (variant.up, variant.peeked, id(space), id(policy) if policy is not None else 0)
        if key not in self._continuation_cache:
            per_state = None if policy is None else policy_array(policy)[space.key_id]
            leave = self._cash_out_values(space) if self.cash_out and not split and policy is None else None
            self._continuation_cache[key] = space.hit_stand(loss, per_state, leave)
        return self._continuation_cache[key]

    def play_on_values(self, variant: UpVariant) -> FloatArray:
        """The value of every hand of ``variant``'s space (stake 1, unnormalised where the dealer peeked) played on by
        hitting or standing, the better of the two, as :meth:`later_ev` values one (a hand that may no longer double
        or split; with the offer to cash out too where :attr:`cash_out` is set)."""
        best, _ = self._continuation(variant, variant.space, False, None)
        return best

    def _two_card_values(self, variant: UpVariant, space: StateSpace, state: int, split: bool,
                         policy: dict[tuple[int, bool], int] | None) -> dict[str, float]:
        """Unnormalised values of every action open on a two-card hand (no split, no offers)."""
        rules = self.rules
        _, hit = self._continuation(variant, space, split, policy)
        total, soft = int(space.total[state]), bool(space.soft[state])
        values = {"stand": float(space.stand(1.0, self._blackjack_loss(1.0, split))[state]),
                  "hit": float(hit[state])}
        if total == 21:
            return {"stand": values["stand"]}
        for multiplier in rules.double.multipliers:
            if rules.double.allowed(multiplier, 2, total, soft, split):
                name = str(ACTION_OF_MULTIPLIER[multiplier])
                values[name] = float(space.one_card(float(multiplier),
                                                    self._blackjack_loss(float(multiplier), split))[state])
        # Early surrender (an offer before the peek) is valued in _initial; as a play it is worth
        # what late surrender is, so it is listed either way.
        if rules.surrender == "early" or rules.surrender_refusal(2, split) is None:
            values["surrender"] = float(-0.5 * space.mass[state])
        if self.cash_out and not split and policy is None:  # a chart has no cash out: basic strategy plays on
            values["cash-out"] = float(self._cash_out_values(space)[state])
        return values

    def pair_split(self, variant: UpVariant, pair: int) -> PairSplit:
        """Splitting ``pair`` against one up card (peek variant): its spaces, plans and values."""
        if pair not in variant.splits:
            variant.splits[pair] = PairSplit(self, variant, pair)
        return variant.splits[pair]

    def split_space(self, variant: UpVariant, pair: int) -> StateSpace:
        """Split hands from the shoe after the first split (the other pair card removed), as CDP1 plays them."""
        return self.pair_split(variant, pair).space(1)

    def _split_value(self, variant: UpVariant, pair: int, policy: dict[tuple[int, bool], int] | None,
                     two_card_policy: dict[tuple[int, bool], str] | None, rank_count: float | None = None) -> float:
        """Unnormalised value of splitting a pair (every hand's stake together), resplits included."""
        splitter = self.pair_split(variant, pair)
        if two_card_policy is None:
            return splitter.value(self.split_strategy, rank_count=rank_count)
        assert policy is not None
        return splitter.value(chart=(policy, two_card_policy), rank_count=rank_count)

    def split_play(self, pair: int, up: int, hands: int, values: tuple[int, ...]) -> str:
        """The play the split strategy makes on a split hand (pair card first) in a spot of ``hands`` hands.

        Splitting again is not asked here: where the rules allow it, split hands always resplit.

        Examples
        --------
        >>> from twentyone.variants import builtin_rules
        >>> GameAnalysis(builtin_rules("classic")).split_play(8, 6, 2, (8, 3))
        'double'
        """
        return self.pair_split(self.variants(up)[0], pair).decide(self.split_strategy, hands, values)

    def _chart_values(self, variant: UpVariant, space: StateSpace, state: int,
                      policy: dict[tuple[int, bool], int]) -> dict[str, float]:
        """:meth:`_two_card_values` for the chart's choice among them. An early surrender comes before the peek, so
        it also escapes the dealer's blackjack: against the plays' unnormalised values (the no-blackjack case) it is
        worth -0.5 + P(blackjack). Compared as a late one, the chart surrendered hard 15-16 alone where hard 5-7 and
        12-17 surrender against an Ace, and the chart returned 0.33 points less than optimal play (an analyst's
        trial)."""
        values = self._two_card_values(variant, space, state, False, policy)
        if "surrender" in values and self.rules.surrender == "early" and variant.peeked:
            values["surrender"] = -0.5 + float(space.blackjack[state])
        return values

    @staticmethod
    def _follow(table: dict[tuple[int, bool], str], space: StateSpace, state: int, values: dict[str, float]) -> str:
        """The basic-strategy action for a two-card hand, falling back when it is not open."""
        if len(values) == 1:
            return next(iter(values))
        return code_action(table.get((int(space.total[state]), bool(space.soft[state])), "S"), values)

    # ------------------------------------------------------- initial hands
    def hand_ev(self, cards: tuple[int, int], up: int) -> HandEV:
        """EV of every action on an initial two-card hand against an up card, under optimal play.

        Parameters
        ----------
        cards : tuple of int
            The player's two card values, 1 (Ace) to 10.
        up : int
            The dealer's up card value, 1 (Ace) to 10.

        Returns
        -------
        HandEV
            Each open action's expected value per unit of the main bet (conditional on no dealer
            blackjack where the dealer has peeked), and the blackjack chance before the peek.

        Examples
        --------
        >>> from twentyone.variants import builtin_rules
        >>> ev = GameAnalysis(builtin_rules("classic")).hand_ev((5, 6), up=6)
        >>> ev.best, round(ev.actions["double"], 3)
        ('double', 0.683)
        """
        return self._initial(cards, up, None)[0]

    def later_ev(self, values: tuple[int, ...], up: int) -> HandEV:
        """EV of standing and hitting for a hand past its first decision (three or more cards).

        >>> from twentyone.variants import builtin_rules
        >>> ev = GameAnalysis(builtin_rules("classic")).later_ev((5, 3, 4), up=10)
        >>> ev.best, sorted(ev.actions)
        ('hit', ['hit', 'stand'])
        """
        def stand_and_hit(variant: UpVariant, space: StateSpace, state: int) -> dict[str, float]:
            _, hit = self._continuation(variant, space, False, None)
            stand = float(space.stand(1.0, self._blackjack_loss(1.0, False))[state])
            return {"stand": stand, "hit": float(hit[state])}

        return self._weighted_ev(values, up, "is over 21 or cannot come from this shoe", stand_and_hit)

    def split_hand_ev(self, values: tuple[int, int], up: int) -> HandEV:
        """EV of every play open on a split hand of two cards (the pair card and the one it was dealt): stand, hit,
        and the doubles and surrender the rules allow after a split; the hand's blackjack loss is a split hand's.
        Resplitting is not valued here. Before, such a hand was valued as a later hand, hit and stand alone, and a
        hint at a game that doubles after splits left the double out (a review: 5,6 against a 6 at classic).

        >>> from twentyone.variants import builtin_rules
        >>> ev = GameAnalysis(builtin_rules("classic")).split_hand_ev((5, 6), up=6)
        >>> ev.best, sorted(ev.actions)
        ('double', ['double', 'hit', 'stand'])
        """
        return self._weighted_ev(values, up, "cannot come from this shoe",
                                 lambda variant, space, state: self._two_card_values(variant, space, state, True,
                                                                                     None))

    def _weighted_ev(self, values: tuple[int, ...], up: int, impossible: str,
                     value_in: Callable[[UpVariant, StateSpace, int], dict[str, float]]) -> HandEV:
        """A hand's plays valued by ``value_in`` in each peek variant of the up card, weighted by the variants'
        chances and, where the dealer has peeked, conditioned on no dealer blackjack (``value_in`` gives the
        unconditioned values)."""
        hand = hand_of(*values)
        evs: dict[str, float] = {}
        blackjack_chance = 0.0
        peeked_any = False
        for variant in self.variants(up):
            space = variant.space
            if space.find(hand) is None:
                raise ValueError(f"A hand of values {list(values)} {impossible}.")
            state = space.state(hand)
            mass = float(space.mass[state]) if variant.peeked else 1.0
            for name, value in value_in(variant, space, state).items():
                evs[name] = evs.get(name, 0.0) + variant.weight * value / mass
            blackjack_chance += variant.weight * float(space.blackjack[state])
            peeked_any = peeked_any or variant.peeked
        return HandEV(evs, blackjack_chance, peeked_any)

    def _initial(self, cards: tuple[int, int], up: int, basic: BasicStrategy | None) -> tuple[HandEV, float]:
        """(action EVs, EV of the chosen play) for an initial hand, optimal or by ``basic``."""
        rules = self.rules
        policy = basic.hit_by_up[up] if basic is not None else None
        two_card = basic.two_card_by_up[up] if basic is not None else None
        hand = hand_of(*cards)
        total, _ = total_of(hand)
        natural = total == 21
        evs: dict[str, float] = {}
        chosen = 0.0
        blackjack_chance = 0.0
        peeked_any = False
        for variant in self.variants(up):
            space = variant.space
            state = space.state(hand)
            bj = float(space.blackjack[state])
            blackjack_chance += variant.weight * bj
            peeked_any = peeked_any or variant.peeked
            # Insurance costs half the bet and pays insurance.pays on a dealer blackjack.
            pays = rules.insurance.payout.numerator / rules.insurance.payout.denominator
            insurance = 0.5 * (pays * bj - (1.0 - bj)) if up == 1 and rules.insurance.offered else None
            if natural:
                payout = rules.blackjack_payout.numerator / rules.blackjack_payout.denominator
                values = {"stand": (1.0 - bj) * payout}
                if up == 1 and rules.insurance.even_money:
                    values["even-money"] = 1.0
                play = values["stand"] if basic is not None else max(values.values())
                insurable = rules.insurance.to_blackjack and not rules.insurance.even_money
                if basic is None and insurance is not None and insurable:
                    play += max(0.0, insurance)
            else:
                unnormalised = self._two_card_values(variant, space, state, False, policy)
                blackjack_cost = -bj if variant.peeked else 0.0

                def play_of(options: dict[str, float], insurance: float | None = insurance,
                           blackjack_cost: float = blackjack_cost) -> float:
                    if basic is None:
                        play = max(options.values()) + blackjack_cost
                        if insurance is not None:
                            play += max(0.0, insurance)
                        if rules.surrender == "early":  # offered first: a surrendered hand is not insured
                            play = max(play, -0.5)
                        return play
                    action = basic.action_for(cards, up, options)
                    if action == "surrender" and rules.surrender == "early":
                        return -0.5  # taken as the early offer, before the peek
                    return options[action] + blackjack_cost

                play = play_of(unnormalised)
                if cards[0] == cards[1] and self._can_split(cards[0]):
                    # More than one case only for tens that split when their ranks match.
                    cases = self._pair_cases(variant, cards[0])
                    play = (1.0 - sum(chance for chance, _ in cases)) * play
                    splits = 0.0
                    for chance, rank_count in cases:
                        split = float(self._split_value(variant, cards[0], policy, two_card, rank_count))
                        play += chance * play_of({**unnormalised, "split": split})
                        splits += chance * split
                    unnormalised["split"] = splits / sum(chance for chance, _ in cases)
                mass = float(space.mass[state])
                values = {name: u / mass if variant.peeked else u for name, u in unnormalised.items()}
            if insurance is not None and (not natural or rules.insurance.to_blackjack):
                values = {**values, "insurance": insurance}
            for name, value in values.items():
                evs[name] = evs.get(name, 0.0) + variant.weight * value
            chosen += variant.weight * play
        return HandEV(evs, blackjack_chance, peeked_any), chosen

    # ------------------------------------------------------------- returns
    def optimal_return(self) -> float:
        """Return to player of the main bet under optimal play alone (1.0 is 100 %): :meth:`main_return`'s
        ``optimal``, without deriving a basic strategy.

        >>> from twentyone.variants import builtin_rules
        >>> rules = builtin_rules("first-person")
        >>> playing_on, cashing_out = GameAnalysis(rules).optimal_return(), GameAnalysis(rules, cash_out=True)
        >>> round(playing_on * 100, 2), round(cashing_out.optimal_return() * 100, 2)
        (99.29, 99.29)
        """
        return 1.0 + sum(p * self._initial(cards, up, None)[1] for up, cards, p in self.deals())

    def deals(self) -> Iterable[tuple[int, tuple[int, int], float]]:
        """Every (up card, initial two cards, probability) of a single hand from this shoe."""
        return initial_deals(self.counts)

    def main_return(self, basic: BasicStrategy | None = None) -> ReturnReport:
        """Return to player of the main bet under optimal play and under basic strategy.

        Parameters
        ----------
        basic : BasicStrategy, optional
            The strategy to value; by default the one :meth:`basic_strategy` derives.

        Returns
        -------
        ReturnReport
            ``optimal`` and ``basic`` returns (1.0 is 100 %) and each up card's contribution.

        Examples
        --------
        >>> from twentyone.variants import builtin_rules
        >>> report = GameAnalysis(builtin_rules("power")).main_return()
        >>> round(report.optimal * 100, 2), report.optimal >= report.basic
        (98.8, True)
        """
        basic = basic or self.basic_strategy()
        by_up_opt: dict[int, float] = {}
        by_up_basic: dict[int, float] = {}
        for up, cards, p in self.deals():
            by_up_opt[up] = by_up_opt.get(up, 0.0) + p * self._initial(cards, up, None)[1]
            by_up_basic[up] = by_up_basic.get(up, 0.0) + p * self._initial(cards, up, basic)[1]
        return ReturnReport(1.0 + sum(by_up_opt.values()), 1.0 + sum(by_up_basic.values()), by_up_opt, by_up_basic)

    # ------------------------------------------------------- basic strategy
    def basic_strategy(self) -> BasicStrategy:
        """A total-dependent basic strategy: hit/stand by total, then two-card plays, then pairs.

        Each decision compares the actions' values summed over every hand
        composition with that total, weighted by how often it is dealt.

        Returns
        -------
        BasicStrategy
            Decisions by dealer up card: ``hit_by_up``, ``two_card_by_up`` (codes H, S, D, Ds,
            T, Q, R...) and ``pairs_by_up`` (split or not).

        Examples
        --------
        >>> from twentyone.variants import builtin_rules
        >>> strategy = GameAnalysis(builtin_rules("first-person")).basic_strategy()
        >>> strategy.two_card_by_up[6][(11, False)], strategy.pairs_by_up[10][1]
        ('D', True)
        """
        hit: dict[tuple[int, int, bool], int] = {}
        for up in UP_VALUES:
            if self.counts[up - 1] == 0:
                continue
            variants = self.variants(up)
            decided = np.zeros(44, dtype=np.int8)
            values = []
            for variant in variants:
                if variant.weights is None:
                    variant.weights = self._occurrence(variant.space)
                values.append(np.zeros(variant.space.size))
            for hard_sum in range(21, 0, -1):
                gains = np.zeros(44)
                hits = []
                for variant, value in zip(variants, values, strict=True):
                    space = variant.space
                    group = np.nonzero(space.hard == hard_sum)[0]
                    children = space.child[group]
                    child_value = np.where(children >= 0, value[np.maximum(children, 0)], -space.bust_mass[group])
                    hit_value = (space.prob[group] * child_value).sum(axis=1)
                    stand = space.stand(1.0, self._blackjack_loss(1.0, False))[group]
                    dealt = space.cards[group] >= 2
                    assert variant.weights is not None
                    weight = variant.weight * variant.weights[group] * dealt
                    gains += np.bincount(space.key_id[group], weights=weight * (hit_value - stand), minlength=44)
                    hits.append((group, hit_value, stand))
                for key_id in np.nonzero(gains)[0]:
                    total, soft = int(key_id % 22), bool(key_id // 22)
                    decided[key_id] = 1 if gains[key_id] > 0 and total < 21 else 0
                    hit[(up, total, soft)] = int(decided[key_id])
                for variant, value, (group, hit_value, stand) in zip(variants, values, hits, strict=True):
                    choose_hit = decided[variant.space.key_id[group]] == 1
                    value[group] = np.where(choose_hit, hit_value, stand)
        strategy = BasicStrategy(hit={}, two_card={}, pairs={})
        for up in UP_VALUES:
            if self.counts[up - 1] == 0:
                continue
            policy = {(t, s): a for (u, t, s), a in hit.items() if u == up}
            strategy.hit_by_up[up] = policy
            strategy.two_card_by_up[up] = self._two_card_table(up, policy)
        for up in UP_VALUES:
            if self.counts[up - 1] == 0:
                continue
            strategy.pairs_by_up[up] = self._pair_table(up, strategy)
        return strategy

    def _occurrence(self, space: StateSpace) -> FloatArray:
        """Probability that the player's first cards are exactly each state's multiset (hypergeometric)."""
        base = space.base
        n = int(base.sum())
        table = np.array([[comb(int(base[v]), m) for m in range(22)] for v in range(10)], dtype=np.float64)
        ways = np.prod(table[np.arange(10)[None, :], space.array], axis=1)
        occurrence: FloatArray = ways / np.array([comb(n, int(k)) for k in range(22)], dtype=np.float64)[space.cards]
        return occurrence

    def _two_card_table(self, up: int, policy: dict[tuple[int, bool], int]) -> dict[tuple[int, bool], str]:
        sums: dict[tuple[int, bool], dict[str, float]] = {}
        pair_only: dict[tuple[int, bool], dict[str, float]] = {}
        for variant in self.variants(up):
            space = variant.space
            for a in range(1, 11):
                for b in range(a, 11):
                    hand = hand_of(a, b)
                    if space.find(hand) is None:
                        continue
                    state = space.state(hand)
                    total, soft = int(space.total[state]), bool(space.soft[state])
                    if total == 21:
                        continue
                    values = self._chart_values(variant, space, state, policy)
                    target = pair_only if a == b else sums
                    bucket = target.setdefault((total, soft), {})
                    assert variant.weights is not None
                    w = variant.weight * float(variant.weights[state])
                    for name, value in values.items():
                        bucket[name] = bucket.get(name, 0.0) + w * value
        for key, bucket in pair_only.items():
            sums.setdefault(key, bucket)
        table: dict[tuple[int, bool], str] = {}
        for key, bucket in sums.items():
            best = max(bucket, key=lambda name: bucket[name])
            fallback = "H" if policy.get(key, 0) == 1 else "S"
            code = CODE_OF_ACTION[best]
            if code in "DTQR" and fallback == "S":
                code += "s"
            table[key] = code
        return table

    def _pair_table(self, up: int, strategy: BasicStrategy) -> dict[int, bool]:
        table: dict[int, bool] = {}
        for pair in range(1, 11):
            if not self._can_split(pair):
                continue
            gain = 0.0
            seen = False
            for variant in self.variants(up):
                space = variant.space
                hand = hand_of(pair, pair)
                if space.find(hand) is None:
                    continue
                seen = True
                state = space.state(hand)
                policy = strategy.hit_by_up[up]
                values = self._chart_values(variant, space, state, policy)
                keep = values[self._follow(strategy.two_card_by_up[up], space, state, values)]
                for chance, rank_count in self._pair_cases(variant, pair):
                    split = self._split_value(variant, pair, policy, strategy.two_card_by_up[up], rank_count)
                    gain += variant.weight * chance * (split - keep)
            if seen:
                table[pair] = gain > 0
        return table


@dataclass
class BasicStrategy:
    """Total-dependent play: hit/stand by total, two-card plays by total, and pairs to split."""

    hit: dict[tuple[int, bool], int]
    two_card: dict[tuple[int, bool], str]
    pairs: dict[int, bool]
    hit_by_up: dict[int, dict[tuple[int, bool], int]] = field(default_factory=dict)
    two_card_by_up: dict[int, dict[tuple[int, bool], str]] = field(default_factory=dict)
    pairs_by_up: dict[int, dict[int, bool]] = field(default_factory=dict)

    def action_for(self, cards: tuple[int, int], up: int, values: dict[str, float]) -> str:
        """The action this strategy takes on an initial hand, among the open ones in ``values``."""
        if cards[0] == cards[1] and "split" in values and self.pairs_by_up.get(up, {}).get(cards[0], False):
            return "split"
        hand = hand_of(*cards)
        total, soft = total_of(hand)
        return code_action(self.two_card_by_up[up].get((total, soft), "S"), values)
