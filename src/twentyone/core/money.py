"""Money as players read it: integer minor units shown in a currency, and the largest amount accepted.

Amounts everywhere in the project are integers in minor units (cents, pence); this
module only formats them. Standard library only, no locale: the same text on every
machine.

>>> format_money(30000, "USD"), format_money(2500, "GBP"), format_money(-100, "EUR")
('$300.00', '£25.00', '−€1.00')
>>> format_money(400, "EUR", signed=True), format_money(-100, "USD", signed=True)
('+€4.00', '−$1.00')
"""

from __future__ import annotations

# The largest amount (minor units) a bet or a balance may be: 10**15, ten trillion
# dollars. A round multiplies a bet by at most a few hundred (splits, quadrupling,
# the longest side-bet odds), so every stake, payout and total stays far inside a
# signed 64-bit integer (9.2 * 10**18), which is what the server's ledger stores.
MAX_AMOUNT = 10**15

INT64_MAX = 2**63 - 1

_SYMBOLS = {"USD": "$", "GBP": "£", "EUR": "€", "JPY": "¥", "CAD": "CA$", "AUD": "A$"}
# ISO 4217 currencies without a minor unit: their amounts are whole units.
_NO_MINOR_UNIT = frozenset({"JPY", "KRW", "ISK", "CLP", "VND"})

MINUS = "\N{MINUS SIGN}"


def minor_units(currency: str) -> int:
    """How many minor units make one whole unit of ``currency``: 100 (cents, pence), or 1 for a currency without a
    minor unit (ISO 4217), whose amounts are whole units.

    >>> minor_units("USD"), minor_units("jpy")
    (100, 1)
    """
    return 1 if currency.upper() in _NO_MINOR_UNIT else 100


def format_money(amount_minor: int, currency: str, *, signed: bool = False) -> str:
    """``amount_minor`` (minor units) as a price in ``currency``, with thousands separators.

    A known currency takes its symbol in front; any other code follows the number.
    Negative amounts take a true minus sign; ``signed=True`` also puts ``+`` on gains.

    >>> format_money(123456, "USD"), format_money(5, "GBP"), format_money(0, "EUR")
    ('$1,234.56', '£0.05', '€0.00')
    >>> format_money(150000, "CHF"), format_money(1500, "JPY")
    ('1,500.00 CHF', '¥1,500')
    >>> format_money(0, "USD", signed=True)
    '$0.00'
    """
    code = currency.upper()
    if code in _NO_MINOR_UNIT:
        number = f"{abs(amount_minor):,}"
    else:
        whole, cents = divmod(abs(amount_minor), 100)
        number = f"{whole:,}.{cents:02d}"
    symbol = _SYMBOLS.get(code)
    text = f"{symbol}{number}" if symbol else f"{number} {code}"
    if amount_minor < 0:
        return MINUS + text
    return f"+{text}" if signed and amount_minor > 0 else text


__all__ = ["INT64_MAX", "MAX_AMOUNT", "format_money", "minor_units"]
