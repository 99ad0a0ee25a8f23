"""Which rules the analysis models, and a refusal naming the field for any it cannot.

Every field of :class:`~twentyone.core.rules.Rules` is listed in :data:`FIELDS`
with how the main game's return treats it: ``"modelled"`` (it changes the
computed return where the rule changes the game), or a reason why it cannot
change the return of one hand dealt from a fresh shoe. A combination the
analysis does not model raises :class:`UnsupportedRules`; nothing is assumed
silently. ``tests/test_analysis_rules.py`` walks every field.

>>> from twentyone.variants import builtin_rules
>>> check_supported(builtin_rules("classic"))
>>> FIELDS["win_payout"]
'modelled'
"""

from __future__ import annotations

from twentyone.core.rules import Rules

FRESH_SHOE = "the return is for one hand dealt from a fresh shoe"
OWN_CARDS = "each hand is played on its own cards, so other hands and players do not change its return"
SEPARATE = "valued separately from the main game (rtp reports it apart)"
LABEL = "a name or a reference, not a rule of play"

FIELDS: dict[str, str] = {
    "id": LABEL,
    "name": LABEL,
    "seed": LABEL,
    "summary": LABEL,
    "published": LABEL,
    "fitted": LABEL,
    "shoe.decks": "modelled",
    "shoe.removed_ranks": "modelled",
    "shoe.reshuffle": FRESH_SHOE + " (hints take the live shoe's unseen cards)",
    "shoe.penetration": FRESH_SHOE + " (hints take the live shoe's unseen cards)",
    "dealer.hits_soft_17": "modelled",
    "dealer.peek": "modelled",
    "dealer.no_peek_blackjack_takes": "modelled",
    "deal.order": "modelled (whether a hole card is dealt; the order of the other cards does not matter)",
    "deal.common_draw": OWN_CARDS,
    "deal.hands_per_player": OWN_CARDS,
    "deal.seats": OWN_CARDS,
    "double.totals": "modelled",
    "double.multipliers": "modelled",
    "double.after_split": "modelled",
    "split.match": "modelled (two tens split, and resplit, only when their ranks match)",
    "split.max_hands": "modelled",
    "split.aces_one_card": "modelled",
    "split.resplit_aces": "modelled",
    "insurance.offered": "modelled",
    "insurance.payout": "modelled",
    "insurance.to_blackjack": "modelled",
    "insurance.even_money": "modelled",
    "surrender": "modelled",
    "blackjack_payout": "modelled",
    "win_payout": "modelled",
    "auto_stand": "standing on 21 is never worse than hitting it, so the best play is the same either way",
    "cash_out": SEPARATE + "; the main game's return is for play without cashing out",
    "side_bets": SEPARATE,
}


class UnsupportedRules(ValueError):
    """A rule the analysis cannot model; the message names the field and says why."""


def check_supported(rules: Rules) -> None:
    """Raise :class:`UnsupportedRules` when ``rules`` hold a combination the analysis does not model.

    Every combination the rules parser accepts is modelled at present, so nothing is refused;
    a rule added to :class:`~twentyone.core.rules.Rules` must be modelled or refused here.

    >>> from dataclasses import replace
    >>> from twentyone.core.rules import DealerRules, SplitRules
    >>> from twentyone.variants import builtin_rules
    >>> odd = replace(builtin_rules("single-deck"), split=SplitRules(max_hands=4, match="rank"),
    ...               dealer=DealerRules(peek="none", no_peek_blackjack_takes="original"))
    >>> check_supported(odd) is None
    True
    """
    return None
