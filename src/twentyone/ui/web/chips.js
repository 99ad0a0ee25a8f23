// Casino chips: a colour per denomination (in whole units of the currency) and stacks on the spots.

import { chipLabel } from "./money.js";

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

/** A stack of chips drawn on a spot: at most five discs shown (eight rose above a betting circle and over the amount
 * written under them: a player's trial), the amount written beside it. */
export function chipStack(amount, chips, currency, extraClass = "") {
  const wrap = document.createElement("span");
  wrap.className = `stack ${extraClass}`.trim();
  if (!amount) return wrap;
  const stack = chipsFor(amount, chips).slice(-5);  // the largest at the bottom, the odd chip on top
  stack.forEach((value, index) => {
    const disc = document.createElement("span");
    disc.className = `disc chip-${chipColour(value)}`;
    disc.style.setProperty("--i", index);
    disc.setAttribute("aria-hidden", "true");
    // The top disc names its chip; an odd amount's disc (a 3:2 payout, a cash out's $0.95) is no chip of the table's and
    // names nothing: the amount is written beside the stack, and a disc reading "$0.95" looked like a chip there
    // (found by a trial).
    if (index === stack.length - 1 && chips.includes(value)) disc.textContent = chipLabel(value, currency);
    else if (!chips.includes(value)) disc.classList.add("odd");
    wrap.append(disc);
  });
  wrap.style.setProperty("--n", stack.length);
  return wrap;
}
