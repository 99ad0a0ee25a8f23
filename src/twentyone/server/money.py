"""Amounts as players read them: minor units written in a table's currency.

The API carries integers in minor units; sentences meant for a player (refusals) write
them with the currency's symbol, and carry the numbers beside them for clients that
format money themselves.
"""

from __future__ import annotations

from typing import Any

from twentyone.core.betting import BetSlipError
from twentyone.server.context import ServiceError

SYMBOLS = {"USD": "$", "GBP": "£", "EUR": "€"}


def written(amount: int, currency: str) -> str:
    """Minor units in the currency, as a player reads them.

    >>> written(30000, "USD"), written(250000, "GBP"), written(-150, "EUR"), written(5, "CHF")
    ('$300.00', '£2,500.00', '−€1.50', '0.05 CHF')
    """
    sign = "\u2212" if amount < 0 else ""
    whole, cents = divmod(abs(amount), 100)
    number = f"{whole:,}.{cents:02d}"
    symbol = SYMBOLS.get(currency)
    return f"{sign}{symbol}{number}" if symbol else f"{sign}{number} {currency}"


def refusal(error: BetSlipError, currency: str, status: int = 409, **extra: Any) -> ServiceError:
    """A refusal about money: the sentence in the table's currency, its amounts beside it in minor units.

    >>> refusal(BetSlipError("The maximum bet is {maximum} on this spot.", maximum=30000), "USD").detail
    'The maximum bet is $300.00 on this spot.'
    """
    amounts = {**error.amounts, **extra.pop("amounts", {})}  # the sentence's, and any others worth knowing
    return ServiceError(status, error.sentence(lambda amount: written(amount, currency)), amounts=amounts,
                        currency=currency, **extra)
