"""Rules and a strategy as the flat integer arrays the compiled kernel reads.

One :class:`~twentyone.core.rules.Rules` object feeds the engine, the analyser and,
through :func:`compile_game`, the simulator: nothing about a game is written twice.

>>> from twentyone.variants import builtin_rules
>>> game = compile_game(builtin_rules("power"), SimOptions(hands=2, side_bets=("bust_it",)))
>>> int(game.params[kernel.P_CARDS]), int(game.params[kernel.P_SPOTS]), int(game.params[kernel.P_PLAYERS])
(352, 1, 2)
>>> game.side_names, game.line_names[0]
(('bust_it',), ('bust_8_plus', 'bust_7', 'bust_6', 'bust_5', 'bust_4', 'bust_3'))
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from twentyone.core.cards import RANKS, SUITS, Card
from twentyone.core.money import INT64_MAX
from twentyone.core.rules import PEEK_POLICIES, SIDE_BET_LINES, DealStep, Rules
from twentyone.sim import kernel

IntArray = npt.NDArray[np.int64]
SIDE_KINDS = {"perfect_pairs": kernel.PERFECT_PAIRS, "21+3": kernel.TWENTY_ONE_PLUS_THREE,
              "any_pair": kernel.ANY_PAIR, "hot_3": kernel.HOT_3, "bust_it": kernel.BUST_IT}
DEAL_STEP_CODES = {"hands": 0, "dealer-up": 1, "dealer-hole": 2}
CASH_OUT_SCALE = 1_000_000  # cash-out factors are read as whole millionths, so floor(factor x bet) is exact
MAX_SPOTS = 10


class SimulationError(ValueError):
    """Options the simulator cannot run with; the message says which and why."""


@dataclass(frozen=True)
class SimOptions:
    """What the simulated player does besides the strategy table, and how much is staked.

    ``hands`` is the number of betting spots (several players, one hand each, in a game
    that gives each player one hand); ``side_bets`` the side bets placed on every spot.
    """

    hands: int = 1
    side_bets: tuple[str, ...] = ()
    insurance: bool = False  # take insurance whenever offered
    even_money: bool = False  # take even money whenever offered
    cash_out: bool = False  # take the first cash-out offer (first-person)
    bet: int = 10_000  # minor units: even, so 3:2 and half-bet insurance are exact
    side_stake: int = 10_000
    fresh_shoe: bool = False  # reshuffle every round even where the rules deal to a cut card


@dataclass(frozen=True)
class KernelGame:
    """A rules file plus options, compiled: parameter vector, shoe, side-bet and cash-out tables."""

    rules: Rules
    options: SimOptions
    params: IntArray
    fresh_deck: npt.NDArray[np.int16]
    side_kind: IntArray
    side_pay: IntArray
    cash_out: IntArray
    side_names: tuple[str, ...] = ()
    line_names: tuple[tuple[str, ...], ...] = field(default=())


def card_code(card: Card) -> int:
    """The kernel's integer for a card: ``rank * 4 + suit``.

    >>> card_code(Card("A", "S")), card_code(Card("K", "C"))
    (0, 51)
    """
    return RANKS.index(card.rank) * 4 + SUITS.index(card.suit)


def code_card(code: int) -> Card:
    """The card of a kernel integer (inverse of :func:`card_code`).

    >>> str(code_card(37))
    'TH'
    """
    return Card(RANKS[code // 4], SUITS[code % 4])


def _cash_out_table(rules: Rules) -> IntArray:
    table = np.full((2, 22, 11), -1, dtype=np.int64)
    for (soft, total, up), factor in rules.cash_out.factors.items():
        scaled = Fraction(str(factor)) * CASH_OUT_SCALE
        if scaled.denominator != 1:
            raise SimulationError(f"cash-out factor {factor} has more than 6 decimals; the simulator reads millionths.")
        if 0 <= total < 22:
            table[int(soft), total, up] = int(scaled)
    return table


def most_returned(rules: Rules, options: SimOptions) -> int:
    """A bound on what one round can return, in minor units: every hand split to the most and staked at the greatest
    multiple, paid the best of the game's payouts, and each side bet its best line. Above 64 bits the kernel's sums
    wrapped round without a word (a researcher's trial: a 10^15:1 blackjack simulated a negative return); the
    replay refuses such a round, from the round itself.

    >>> from twentyone.variants import builtin_rules
    >>> most_returned(builtin_rules("classic"), SimOptions()) < 10**6
    True
    """
    best = max(Fraction(*rules.blackjack_payout), Fraction(*rules.win_payout), Fraction(*rules.insurance.payout))
    most_cash_out = max(rules.cash_out.factors.values(), default=0.0)
    per_hand = options.bet * max(rules.double.multipliers, default=1) * max(1 + best, Fraction(most_cash_out))
    hands = options.hands * rules.split.max_hands
    sides = sum(options.side_stake * (1 + max(rules.side_bets[name].paytable.values(), default=0))
                for name in options.side_bets)
    return math.ceil(hands * per_hand) + options.hands * sides


def compile_game(rules: Rules, options: SimOptions) -> KernelGame:
    """The kernel's view of ``rules`` played with ``options``; bad options raise :class:`SimulationError`."""
    if not 1 <= options.hands <= MAX_SPOTS:
        raise SimulationError(f"--hands must be from 1 to {MAX_SPOTS}, got {options.hands}.")
    for name in options.side_bets:
        if name not in rules.side_bets:
            offered = ", ".join(rules.side_bets) or "none"
            raise SimulationError(f"no side bet {name!r} in {rules.id} (offered: {offered}).")
    if options.cash_out and not rules.cash_out.enabled:
        raise SimulationError(f"{rules.id} has no cash out.")
    common = rules.deal.common_draw
    seats_needed = options.hands
    if rules.deal.seats and seats_needed > rules.deal.seats * rules.deal.hands_per_player:
        raise SimulationError(
            f"{rules.id} seats {rules.deal.seats} player(s) with {rules.deal.hands_per_player} hand(s) each; "
            f"--hands {options.hands} is too many.")
    if options.bet < 2 or options.bet % 2:
        raise SimulationError("the main bet must be an even number of minor units.")
    if (most := most_returned(rules, options)) > INT64_MAX:
        raise SimulationError(f"a round of {rules.id} can return up to {most}, past {INT64_MAX}, the most the "
                              "kernel's 64-bit amounts hold: lower the payouts (or the bets).")
    params = np.zeros(kernel.P_SIZE, dtype=np.int64)
    composition = rules.shoe.composition
    deck = np.array([card_code(card) for card in composition.cards()], dtype=np.int16)
    cut = rules.shoe.cut_card
    # A generous bound on the cards one round can use: seven a hand and eight for the deal and dealer.
    needed = (1 if common else options.hands) * rules.split.max_hands * 7 + 8
    left = len(deck) - (cut if cut is not None and not options.fresh_shoe else 0)
    if needed > left:
        raise SimulationError(f"{options.hands} hand(s) may need {needed} cards, more than the {left} "
                              f"a round of {rules.id} can count on; play fewer hands.")
    params[kernel.P_CARDS] = len(deck)
    params[kernel.P_CUT] = -1 if cut is None or options.fresh_shoe else cut
    params[kernel.P_H17] = rules.dealer.hits_soft_17
    params[kernel.P_PEEK] = PEEK_POLICIES.index(rules.dealer.peek)
    params[kernel.P_TAKES_ORIGINAL] = rules.dealer.no_peek_blackjack_takes == "original"
    params[kernel.P_ORDER_LEN] = len(rules.deal.order)
    for i, step in enumerate(rules.deal.order):
        params[kernel.P_ORDER + i] = DEAL_STEP_CODES[step]
    params[kernel.P_COMMON] = common
    params[kernel.P_DOUBLE_TOTALS] = ("any", "9-11", "10-11").index(rules.double.totals)
    params[kernel.P_DOUBLE_MASK] = sum(1 << m for m in rules.double.multipliers)
    params[kernel.P_DAS] = rules.double.after_split
    params[kernel.P_SPLIT_RANK] = rules.split.match == "rank"
    params[kernel.P_MAX_HANDS] = rules.split.max_hands
    params[kernel.P_ACES_ONE] = rules.split.aces_one_card
    params[kernel.P_RESPLIT_ACES] = rules.split.resplit_aces
    params[kernel.P_INS_OFFERED] = rules.insurance.offered
    params[kernel.P_INS_NUM], params[kernel.P_INS_DEN] = rules.insurance.payout
    params[kernel.P_INS_TO_BJ] = rules.insurance.to_blackjack
    params[kernel.P_EVEN_MONEY] = rules.insurance.even_money
    params[kernel.P_SURRENDER] = ("none", "late", "early").index(rules.surrender)
    params[kernel.P_BJ_NUM], params[kernel.P_BJ_DEN] = rules.blackjack_payout
    params[kernel.P_WIN_NUM], params[kernel.P_WIN_DEN] = rules.win_payout
    params[kernel.P_AUTO_STAND] = ("21", "soft-21", "none").index(rules.auto_stand)
    params[kernel.P_CASH_OUT] = rules.cash_out.enabled
    params[kernel.P_HOLE] = rules.deal.hole_card
    dealer_steps = [step for step in rules.deal.order if step != DealStep.HANDS]
    params[kernel.P_UP_INDEX] = dealer_steps.index(DealStep.DEALER_UP)
    # Common draw: every player gets the same cards, so identical players play identically;
    # the kernel plays one spot and scales the money by the number of players.
    params[kernel.P_SPOTS] = 1 if common else options.hands
    params[kernel.P_PLAYERS] = options.hands if common else 1
    params[kernel.P_BET] = options.bet
    params[kernel.P_TAKE_INSURANCE] = options.insurance
    params[kernel.P_TAKE_EVEN_MONEY] = options.even_money
    params[kernel.P_TAKE_CASH_OUT] = options.cash_out
    params[kernel.P_SIDE_STAKE] = options.side_stake
    names = tuple(options.side_bets)
    side_kind = np.array([SIDE_KINDS[rules.side_bets[name].kind] for name in names], dtype=np.int64)
    side_pay = np.full((max(len(names), 1), kernel.LINE_SLOTS), -1, dtype=np.int64)
    lines = []
    for i, name in enumerate(names):
        side = rules.side_bets[name]
        kind_lines = SIDE_BET_LINES[side.kind]
        lines.append(kind_lines)
        for j, line in enumerate(kind_lines):
            side_pay[i, j] = side.paytable.get(line, -1)
    return KernelGame(rules, options, params, deck, side_kind, side_pay[: len(names)] if names else side_pay[:0],
                      _cash_out_table(rules), names, tuple(lines))
