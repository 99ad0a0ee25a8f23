"""Bet controls as the sheets describe them: chips, bet spots, UNDO, x2, REBET, TOTAL BET.

A :class:`BetSlip` holds the bets a player is building before DEAL. It checks
each bet type's limits and the balance as it goes, so that what it hands to
:meth:`~twentyone.core.round.Round.place_bets` is always valid. The server and
the terminal both use it; amounts are minor units.

>>> slip = BetSlip(BetLimits({"main": (100, 30000)}), chips=(100, 500), balance=1000, spots=3)
>>> slip.select_chip(500)
>>> slip.place(1)
>>> slip.place(2)
>>> slip.total
1000
>>> slip.double_all()
Traceback (most recent call last):
...
twentyone.core.betting.BetSlipError: Doubling every bet needs 2000 but the balance is 1000.
>>> slip.undo()
>>> slip.hand_bets()
[HandBet(bet=500, side_bets={})]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from twentyone.core.round import HandBet
from twentyone.core.sidebets import SIDE_BETS

MAIN = "main"


class BetSlipError(ValueError):
    """A bet control refused; the message says why and changes nothing.

    The amounts in the sentence are kept beside it (``amounts``, minor units), so that each
    client writes them in its own currency with ``sentence``.

    >>> error = BetSlipError("The maximum bet is {maximum} on this spot.", maximum=30000)
    >>> str(error), error.amounts
    ('The maximum bet is 30000 on this spot.', {'maximum': 30000})
    >>> error.sentence(lambda amount: f"${amount / 100:,.2f}")
    'The maximum bet is $300.00 on this spot.'
    """

    def __init__(self, template: str, **amounts: int) -> None:
        self.template = template
        self.amounts = amounts
        super().__init__(self.sentence(str))

    def sentence(self, write: Callable[[int], str]) -> str:
        """The message with each amount written by ``write``."""
        if not self.amounts:
            return self.template
        return self.template.format(**{name: write(amount) for name, amount in self.amounts.items()})


@dataclass(frozen=True)
class BetLimits:
    """Minimum and maximum per bet type (``main`` and each side bet's name), minor units."""

    per_type: Mapping[str, tuple[int, int]]

    def of(self, bet_type: str) -> tuple[int, int]:
        if bet_type in self.per_type:
            return self.per_type[bet_type]
        if MAIN not in self.per_type:
            raise BetSlipError("No limits are set for the main bet.")
        return self.per_type[MAIN]


class BetSlip:
    """The bets on each spot of one player before the deal."""

    def __init__(self, limits: BetLimits, chips: Sequence[int], balance: int, spots: int,
                 side_bets: Sequence[str] = ()) -> None:
        self.limits = limits
        self.chips = tuple(sorted(chips))
        self.balance = balance
        self.spots = spots
        self.side_bet_names = tuple(side_bets)
        self.chip = self.chips[0] if self.chips else 0
        self.bets: dict[tuple[int, str], int] = {}
        self._history: list[dict[tuple[int, str], int]] = []

    @property
    def total(self) -> int:
        """TOTAL BET: everything on the table for this round."""
        return sum(self.bets.values())

    def enabled_chips(self) -> tuple[int, ...]:
        """Only chips that the balance left over can cover are enabled."""
        return tuple(chip for chip in self.chips if chip <= self.balance - self.total)

    def _short(self, amount: int, what: str) -> BetSlipError:
        """The refusal of ``amount`` (``what`` names it) that the balance left beside the slip's bets does not cover.
        Where the balance alone would, the bets on the slip are named: "does not cover a $1.00 chip" read as if the
        balance were short (an integrator's trial). A balance spent elsewhere below the slip's total is simply short.

        >>> slip = BetSlip(BetLimits({"main": (100, 10000)}), chips=(100,), balance=150, spots=1)
        >>> slip.place(1)
        >>> slip._short(100, "a {amount} chip").sentence(lambda amount: f"${amount / 100:.2f}")
        'Your bets of $1.00 leave $0.50 of your balance: not enough for a $1.00 chip.'
        >>> slip.balance = 50  # spent at another table since
        >>> slip._short(100, "another {amount}").sentence(lambda amount: f"${amount / 100:.2f}")
        'The balance does not cover another $1.00.'
        """
        if 0 < self.total <= self.balance and amount <= self.balance:
            return BetSlipError(f"Your bets of {{total}} leave {{left}} of your balance: not enough for {what}.",
                                total=self.total, left=self.balance - self.total, amount=amount)
        return BetSlipError(f"The balance does not cover {what}.", amount=amount)

    def select_chip(self, value: int) -> None:
        if value not in self.chips:
            raise BetSlipError("There is no {chip} chip at this table.", chip=value)
        if value not in self.enabled_chips():
            raise self._short(value, "a {amount} chip")
        self.chip = value

    def place(self, spot: int, bet_type: str = MAIN) -> None:
        """Add the selected chip to a bet spot, up to that bet's maximum."""
        if not 1 <= spot <= self.spots:
            raise BetSlipError(f"Spot {spot} does not exist; spots are 1 to {self.spots}.")
        if bet_type != MAIN and bet_type not in self.side_bet_names:
            raise BetSlipError(f"This table takes no side bet {bet_type!r}.")
        if bet_type != MAIN and (spot, MAIN) not in self.bets:
            raise BetSlipError("A side bet needs a main bet on the same hand first.")
        _, high = self.limits.of(bet_type)
        current = self.bets.get((spot, bet_type), 0)
        if current >= high:
            named = "bet" if bet_type == MAIN else _bet_name(bet_type)
            raise BetSlipError(f"The maximum {named} is {{maximum}} on this spot.", maximum=high)
        amount = min(self.chip, high - current)
        if amount > self.balance - self.total:
            raise self._short(amount, "another {amount}")
        self._remember()
        self.bets[(spot, bet_type)] = current + amount

    def undo(self) -> None:
        """UNDO: take back the last change to the bets."""
        if not self._history:
            raise BetSlipError("There is no bet to undo.")
        self.bets = self._history.pop()

    def clear(self) -> None:
        self._remember()
        self.bets = {}

    def double_all(self) -> None:
        """x2: double every bet, each capped at its maximum, if the balance covers doubling all. Where every bet is at
        its maximum already, x2 is refused: it would add nothing, and UNDO would then take back a step that changed
        nothing (found by a trial of a player).

        >>> slip = BetSlip(BetLimits({"main": (100, 5000)}), chips=(100,), balance=100_000, spots=2)
        >>> slip.bets = {(1, "main"): 5000, (2, "main"): 3000}
        >>> slip.double_all(); slip.bets
        {(1, 'main'): 5000, (2, 'main'): 5000}
        >>> slip.double_all()
        Traceback (most recent call last):
        ...
        twentyone.core.betting.BetSlipError: Every bet is at its maximum already: x2 adds nothing.
        """
        if not self.bets:
            raise BetSlipError("Place a bet before doubling.")
        doubled = {key: min(2 * amount, self.limits.of(key[1])[1]) for key, amount in self.bets.items()}
        if doubled == self.bets:
            raise BetSlipError("Every bet is at its maximum already: x2 adds nothing.")
        needed = sum(doubled.values())
        if needed > self.balance:
            raise BetSlipError("Doubling every bet needs {needed} but the balance is {balance}.", needed=needed,
                              balance=self.balance)
        self._remember()
        self.bets = doubled

    def rebet(self, previous: Mapping[tuple[int, str], int]) -> None:
        """REBET: repeat the previous round's bets (when the balance still covers them and the table still takes
        them: its spots and limits may have changed since)."""
        if not previous:
            raise BetSlipError("There is no previous round to repeat.")
        if sum(previous.values()) > self.balance:
            raise BetSlipError("The balance does not cover the previous round's bets.")
        for (spot, bet_type), amount in sorted(previous.items()):
            self._check_fits(previous, spot, bet_type, amount)
        self._remember()
        self.bets = dict(previous)

    def hand_bets(self) -> list[HandBet]:
        """The bets ready for the deal, spot by spot: every bet on the slip, each checked against the table as it is
        now (its spots and limits may have changed since the bet was placed), so that the hands dealt stake exactly
        :attr:`total`. Before, a spot past the table's hands was charged and never dealt (found by a trial of an
        operator who lowered a table's hands).

        >>> slip = BetSlip(BetLimits({"main": (100, 5000)}), chips=(100,), balance=10000, spots=1)
        >>> slip.bets = {(1, "main"): 300, (2, "main"): 300}  # kept from a table that had two spots
        >>> slip.hand_bets()
        Traceback (most recent call last):
        ...
        twentyone.core.betting.BetSlipError: Spot 2 does not exist at this table; spots are 1 to 1: clear the bet.
        """
        for (spot, bet_type), amount in sorted(self.bets.items()):
            self._check_fits(self.bets, spot, bet_type, amount)
        result = []
        for spot in self.dealt_spots():
            sides = {bet_type: amount for (bet_spot, bet_type), amount in self.bets.items()
                     if bet_spot == spot and bet_type != MAIN}
            result.append(HandBet(self.bets[(spot, MAIN)], sides))
        if not result:
            raise BetSlipError("Place a main bet before dealing.")
        return result

    def dealt_spots(self) -> list[int]:
        """The spots :meth:`hand_bets` deals, in its order: those with a main bet. A round's hands are its seats 1, 2,
        ... in that order; the spot each came from names it as the table's circles do ("Hand 3" for a bet on the third
        circle alone: a trial of players saw it called "Hand 1").

        >>> slip = BetSlip(BetLimits({"main": (100, 5000)}), chips=(100,), balance=10000, spots=5)
        >>> slip.bets = {(3, "main"): 100, (5, "main"): 200}
        >>> slip.dealt_spots()
        [3, 5]
        """
        return [spot for spot in range(1, self.spots + 1) if (spot, MAIN) in self.bets]

    def _check_fits(self, bets: Mapping[tuple[int, str], int], spot: int, bet_type: str, amount: int) -> None:
        """Refuse a bet of ``bets`` the table does not take as it is now: its spot, its type, its limits, a side bet
        with no main bet on its hand."""
        if not 1 <= spot <= self.spots:
            raise BetSlipError(f"Spot {spot} does not exist at this table; spots are 1 to {self.spots}: clear the bet.")
        if bet_type != MAIN and bet_type not in self.side_bet_names:
            raise BetSlipError(f"This table takes no side bet {bet_type!r}: clear the bet.")
        if bet_type != MAIN and (spot, MAIN) not in bets:
            raise BetSlipError("A side bet needs a main bet on the same hand first.")
        low, high = self.limits.of(bet_type)
        if amount < low:
            raise BetSlipError(f"The {_bet_name(bet_type)} on spot {spot} is below the minimum of {{minimum}}.",
                               minimum=low)
        if amount > high:
            raise BetSlipError(f"The {_bet_name(bet_type)} on spot {spot} is above the maximum of {{maximum}}.",
                               maximum=high)

    def _remember(self) -> None:
        self._history.append(dict(self.bets))


def _bet_name(bet_type: str) -> str:
    """How a refusal names a bet: a side bet by its title, so that a player at a side bet's maximum is not told
    about the main bet (a gap the last stop's note named).

    >>> _bet_name("main"), _bet_name("perfect_pairs")
    ('main bet', 'Perfect Pairs bet')
    """
    if bet_type == MAIN:
        return "main bet"
    return f"{SIDE_BETS[bet_type].title if bet_type in SIDE_BETS else bet_type} bet"
