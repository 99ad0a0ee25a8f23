// Casino chips: a colour per denomination (in whole units of the currency) and stacks on the spots.

import { chipLabel, money } from "./money.js";

// The usual casino colours: 1 white, 5 red, 25 green, 100 black, 500 purple, 1000 orange.
const COLOURS = [[100000, "orange"], [50000, "purple"], [10000, "black"], [2500, "green"], [500, "red"], [0, "white"]];

export function chipColour(amount) {
  return COLOURS.find(([floor]) => amount >= floor)[1];
}

/** The chips a bet is made of, largest first (what a dealer would stack), for the table's chip values. */
export function chipsFor(amount, chips) {
  const values = [...chips].sort((a, b) => b - a);
  const stack = [];
  let left = amount;
  for (const value of values) {
    while (left >= value && stack.length < 40) {
      stack.push(value);
      left -= value;
    }
  }
  if (left > 0) stack.push(left);  // an odd amount (a 3:2 payout, half-bet insurance) is one chip of its own
  return stack;
}

// At most five discs to a stack: eight rose above a betting circle and over the amount written under them (a player's
// trial).
export const MOST_DISCS = 5;

/** The discs a stack of `amount` draws: the largest chips first, as many as MOST_DISCS allows. Where the cap cuts
 * the stack short, the smallest chips (and an odd amount's disc) are the ones left out, so the drawn chips come as
 * near the amount as five discs can from below (for chip values that each divide the next, as a casino's do). Before,
 * the last five were drawn, the smallest: a $37.50 payout showed $5, $5, $1, $1 and a blank disc, a $50 bet one $25
 * chip, a $6 bet one $1 chip (found by a trial of players). */
export function discsFor(amount, chips) {
  return chipsFor(amount, chips).slice(0, MOST_DISCS);
}

/** A stack of chips drawn on a spot, the largest at the bottom. It never stands alone: the exact amount is written
 * beside or under every stack (the spot's amount, the hand's stake and payout, a seat's total), for the discs are
 * capped; a stack they do not add up to is marked `short` (and its title gives the amount). */
export function chipStack(amount, chips, currency, extraClass = "") {
  const wrap = document.createElement("span");
  wrap.className = `stack ${extraClass}`.trim();
  if (!amount) return wrap;
  const stack = discsFor(amount, chips);
  stack.forEach((value, index) => {
    const disc = document.createElement("span");
    disc.className = `disc chip-${chipColour(value)}`;
    disc.style.setProperty("--i", index);
    disc.setAttribute("aria-hidden", "true");
    disc.dataset.value = value;
    // A lone chip names its value. A stack's top disc named its own chip only, and the stack read as that chip: a $6
    // bet as "$1", a $50 one as "$25" (found by a trial of players); a stack of several names nothing, its colours
    // and the amount written beside it say what it holds. An odd amount's disc (a 3:2 payout, a cash out's $0.95) is
    // no chip of the table's and names nothing: a disc reading "$0.95" looked like a chip there (found by a trial).
    if (stack.length === 1 && chips.includes(value)) disc.textContent = chipLabel(value, currency);
    else if (!chips.includes(value)) disc.classList.add("odd");
    wrap.append(disc);
  });
  if (stack.reduce((sum, value) => sum + value, 0) !== amount) wrap.classList.add("short");
  wrap.dataset.amount = amount;
  wrap.title = money(amount, currency);
  wrap.style.setProperty("--n", stack.length);
  return wrap;
}
