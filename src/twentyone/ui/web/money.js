// Money as players read it: integers in minor units on the wire, the table's currency on screen.

const formats = new Map();

function formatter(currency) {
  if (!formats.has(currency)) {
    formats.set(currency, new Intl.NumberFormat("en-US", { style: "currency", currency, currencyDisplay: "narrowSymbol" }));
  }
  return formats.get(currency);
}

function digits(currency) {
  return currency ? formatter(currency).resolvedOptions().maximumFractionDigits : 2;
}

/** "$1,234.50" for 123450 USD; a negative amount gets a true minus sign: "−$1.00". */
export function money(amount, currency) {
  const scale = 10 ** digits(currency);
  const text = currency ? formatter(currency).format(Math.abs(amount) / scale)
    : (Math.abs(amount) / scale).toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 });
  return amount < 0 ? `\u2212${text}` : text;
}

/** A result as a change of balance: "+$4.00", "−$1.00", and "even" for nothing won or lost. */
export function signed(amount, currency) {
  if (amount === 0) return "even";
  return amount > 0 ? `+${money(amount, currency)}` : money(amount, currency);
}

/** Whole amounts fit a chip better without their cents: 2500 shows as "$25", 50000 as "$500". */
export function chipLabel(amount, currency) {
  const scale = 10 ** digits(currency);
  if (amount % scale !== 0) return money(amount, currency);
  const whole = amount / scale;
  const symbol = currency ? formatter(currency).formatToParts(0).find((part) => part.type === "currency").value : "";
  return whole >= 1000 && whole % 1000 === 0 ? `${symbol}${whole / 1000}K` : `${symbol}${whole}`;
}

/** Sum of a seat's bets (main and side bets) in minor units. */
export function betsTotal(bets) {
  return bets.reduce((sum, b) => sum + b.bet + Object.values(b.side_bets || {}).reduce((a, v) => a + v, 0), 0);
}
