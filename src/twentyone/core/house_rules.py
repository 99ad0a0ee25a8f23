"""The house rules of a game as a player reads them on a casino's rule sheet: one plain sentence per rule.

A player needs the rules before doubling or splitting, and the table's PAYOUTS panel listed payouts only (found by a
trial of players). The sentences are built from :class:`~twentyone.core.rules.Rules` alone, so a rules file written
by an operator reads as truly as the five built-in games.

>>> from twentyone.core.rules import rules_from_toml
>>> for line in house_rules(rules_from_toml('id = "x"\\nname = "X"\\n[shoe]\\ndecks = 6\\n[dealer]\\npeek = "ace"')):
...     print(line)
Played with 6 decks, shuffled before every round.
The dealer draws to 16 and stands on every 17, soft 17 included.
The dealer checks for blackjack under an Ace only; under a ten or a face card, a dealer blackjack found at the end \
takes doubles and splits too.
Double on any first two cards.
No double after a split.
Split a first pair of cards of equal value, once: no resplitting.
Split aces get one card each.
A 21 made after a split is not a blackjack.
No surrender.
Insurance is offered when the dealer shows an Ace: it costs half the main bet and pays 2 to 1, and is not offered \
on a blackjack.
Blackjack pays 3 to 2; ties push.
"""

from __future__ import annotations

from twentyone.core.cards import RANKS
from twentyone.core.rules import (
    BlackjackTakes,
    DealStep,
    DoubleTotals,
    Payout,
    Peek,
    Reshuffle,
    Rules,
    SplitMatch,
    Surrender,
)

_MULTIPLY = {2: "Double", 3: "triple", 4: "quadruple"}
_TENS = ("T", "J", "Q", "K")
_TEN_WORDS = {"T": "a ten", "J": "a Jack", "Q": "a Queen", "K": "a King"}
_WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight"}


def house_rules(rules: Rules) -> list[str]:
    """The game's rules, one sentence each, in the order a rule sheet gives them: the shoe, the dealer, the players'
    choices (double, split, surrender, insurance, cash out) and what a blackjack pays.

    >>> from twentyone.core.rules import rules_from_toml
    >>> house_rules(rules_from_toml('id = "x"\\nname = "X"\\n[shoe]\\ndecks = 1\\n[deal]\\nseats = 0'))[:2]
    ['Played with 1 deck, shuffled before every round.', 'Any number of players play each round.']
    """
    return [*_table(rules), *_dealer(rules), *_doubles(rules), *_splits(rules), _surrender(rules),
            _insurance(rules), *_cash_out(rules), _payouts(rules)]


def _table(rules: Rules) -> list[str]:
    shoe = rules.shoe
    decks = f"{shoe.decks} deck{'s' if shoe.decks > 1 else ''}"
    removed = sorted(shoe.removed_ranks, key=RANKS.index)
    if removed:
        names = " and ".join("10" if rank == "T" else rank for rank in removed)
        decks += f" with every {names} removed ({shoe.composition.size} cards)"
    shuffled = ("shuffled before every round" if shoe.reshuffle == Reshuffle.EVERY_ROUND
                else f"reshuffled at a cut card {round(shoe.penetration * 100)} % of the way through the shoe")
    lines = [f"Played with {decks}, {shuffled}."]
    deal = rules.deal
    if deal.seats == 0:
        lines.append("Any number of players play each round.")
    elif deal.seats > 1:
        lines.append(f"Up to {deal.seats} players play each round.")
    if deal.hands_per_player > 1:
        lines.append(f"Bet on up to {deal.hands_per_player} hands at once.")
    if deal.common_draw:
        lines.append("Common draw: every player's hand is dealt the same first two cards, and each card a player "
                     "draws after them is the next of one sequence the players share.")
    return lines


def _dealer(rules: Rules) -> list[str]:
    dealer = rules.dealer
    draws = ("The dealer draws to 16 and hits a soft 17." if dealer.hits_soft_17
             else "The dealer draws to 16 and stands on every 17, soft 17 included.")
    takes = ("doubles and splits too" if dealer.no_peek_blackjack_takes == BlackjackTakes.ALL
             else "the original bets only: what doubles and splits added is returned")
    order = rules.deal.order
    if not rules.deal.hole_card:
        return [draws, "No hole card (the European rule): the dealer's second card is drawn after the players have "
                       f"acted, and a dealer blackjack then takes {takes}."]
    lines = [draws]
    if order.index(DealStep.DEALER_HOLE) < order.index(DealStep.DEALER_UP):
        lines.append("The dealer's first card is dealt face down, the second face up.")
    lines.append(_peek(rules, takes))
    return lines


def _peek(rules: Rules, takes: str) -> str:
    """Which up cards the dealer checks under, and what a blackjack found at the end takes under the others."""
    in_shoe = [rank for rank in _TENS if rank not in rules.shoe.removed_ranks]
    peeked = [rank for rank in in_shoe if rules.dealer.peeks_under(rank)]
    unpeeked = [rank for rank in in_shoe if rank not in peeked]
    if rules.dealer.peek == Peek.NONE:
        return f"The dealer does not check for blackjack: a dealer blackjack found at the end takes {takes}."
    if not peeked:
        checks = "The dealer checks for blackjack under an Ace only"
    elif peeked == list(_TENS):
        checks = "The dealer checks for blackjack under an Ace, a ten or a face card"
    else:  # power's: its shoe has no tens, and the sheet names the cards ("J-Q-K and Ace")
        checks = f"The dealer checks for blackjack under an Ace, {_or([_TEN_WORDS[rank] for rank in peeked])}"
    if not unpeeked:
        return f"{checks}."
    under = "a ten or a face card" if unpeeked == list(_TENS) else _or([_TEN_WORDS[rank] for rank in unpeeked])
    return f"{checks}; under {under}, a dealer blackjack found at the end takes {takes}."


def _or(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


def _doubles(rules: Rules) -> list[str]:
    double = rules.double
    names = [_MULTIPLY[m] for m in double.multipliers]
    verb = _or(names).capitalize() if names != ["Double"] else "Double"
    cards = {DoubleTotals.ANY: "any first two cards",
             DoubleTotals.NINE_TO_ELEVEN: "first two cards totalling 9, 10 or 11 only",
             DoubleTotals.TEN_OR_ELEVEN: "first two cards totalling 10 or 11 only"}[double.totals]
    after = (f"{verb} after a split too." if double.after_split
             else f"No {'double' if len(names) == 1 else _or([n.lower() for n in names])} after a split.")
    return [f"{verb} on {cards}.", after]


def _splits(rules: Rules) -> list[str]:
    split = rules.split
    pair = "cards of the same rank" if split.match == SplitMatch.RANK else "cards of equal value"
    if split.max_hands <= 1:
        return ["No splitting."]
    if split.max_hands == 2:
        times = "once: no resplitting"
    else:
        times = f"and again, up to {_WORDS.get(split.max_hands, split.max_hands)} hands"
        if not split.resplit_aces:
            times += " (aces once only)"
    lines = [f"Split a first pair of {pair}, {times}."]
    lines.append("Split aces get one card each." if split.aces_one_card
                 else "Split hands, aces included, may be hit like any other.")
    lines.append("A 21 made after a split is not a blackjack.")
    return lines


def _surrender(rules: Rules) -> str:
    if rules.surrender == Surrender.LATE:
        return "Late surrender: give up half the bet as the first decision on the first two cards."
    if rules.surrender == Surrender.EARLY:
        return "Early surrender: give up half the bet before the dealer checks for blackjack."
    return "No surrender."


def _insurance(rules: Rules) -> str:
    insurance = rules.insurance
    if not insurance.offered:
        return "No insurance." + (" A blackjack against an Ace is offered even money." if insurance.even_money else "")
    line = (f"Insurance is offered when the dealer shows an Ace: it costs half the main bet and pays "
            f"{_odds(insurance.payout)}")
    if insurance.even_money:
        return f"{line}; a blackjack is offered even money (1 to 1) instead."
    if insurance.to_blackjack:
        return f"{line}, even on a blackjack."
    return f"{line}, and is not offered on a blackjack."


def _cash_out(rules: Rules) -> list[str]:
    if not rules.cash_out.enabled:
        return []
    return ["Cash out: a hand's main bet may be given up for the amount shown, set by the hand's total and the "
            "dealer's up card; not after a double, nor on a split hand or a 21."]


def _payouts(rules: Rules) -> str:
    return f"Blackjack pays {_odds(rules.blackjack_payout)}; ties push."


def _odds(payout: Payout) -> str:
    return f"{payout.numerator} to {payout.denominator}"
