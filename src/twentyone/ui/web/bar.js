// The fixed action bar: chips and bet controls, the decisions, or one question for every insurance offer.
// Each control prints its key; the keys themselves are handled at the end of this module.

import { chipColour } from "./chips.js";
import { el, exclusionLine, keyed, sessionOverLine, state, view } from "./dom.js";
import { chipLabel, money } from "./money.js";
import { deciders, otherDecider, roundCurrency, seatName, spotOf, tableInfo, timedOut } from "./round.js";

export const ACTIONS = [
  ["hit", "HIT", "h"], ["stand", "STAND", "s"], ["double", "DOUBLE", "d"], ["triple", "TRIPLE", "t"],
  ["quadruple", "QUADRUPLE", "q"], ["split", "SPLIT", "p"], ["surrender", "SURRENDER", "r"],
  ["cash-out", "CASH OUT", "c"],
];
export const OFFER_TITLES = { insurance: "Insurance", "even-money": "Even money", surrender: "Surrender" };
// A hand's box to tick among several offers: what ticking it takes.
const OFFER_TICKS = { insurance: "INSURE", "even-money": "EVEN MONEY", surrender: "SURRENDER" };

export function answers(kind) {
  const given = tableInfo().offer_answers[kind];
  return given || { accept: kind, decline: `no-${kind}` };
}

// What the bar's buttons do (given by table.js): control(path, body), decide(action), answerOffers(choice),
// controlsPending(),
// nextRound(), redraw().
let act = null;
export function wire(handlers) {
  act = handlers;
}

export function button(focus, label, key, onclick, attributes = {}) {
  return el("button", { type: "button", "data-focus": focus, "aria-keyshortcuts": key || null,
    title: key ? `${label} (${key.toUpperCase()})` : null, onclick, ...attributes }, ...keyed(label, key));
}

export function whoDecides(round) {
  const waitingFor = waitingLine(round);
  return round.me && round.me.timed_out ? `${timedOut(round.me.timed_out)} ${waitingFor}` : waitingFor;
}

function waitingLine(round) {
  const waiting = deciders(round).filter((id) => id !== state.me.id);
  // A common draw (power): the others' play is withheld until the round settles; players move in lockstep, so a
  // card chosen (round.drawing) is dealt once every player has chosen at this step.
  if (!waiting.length && round.others_withheld) {
    return round.drawing ? "Your card is dealt once every player has chosen…" : "Waiting for the other players to decide…";
  }
  if (!waiting.length) return "Dealing…";
  const names = waiting.map((id) => seatName(round, id)).filter(Boolean);
  if (waiting.length === 1 && names.length) return `${names[0]} is deciding…`;
  return `Waiting for ${waiting.length} players to decide…`;
}

export function status(text) {
  return el("div", { class: "bar-status" }, el("p", { class: "status-line" }, text, " ", el("span", { class: "timer", id: "bar-timer" })));
}

/** The chip a spot takes: the one chosen while the balance covers it, else the largest one it covers (null: none).
 * Before, a chosen chip the balance no longer covered left no chip chosen, and a spot refused it (a trial). */
export function chipInHand(slip) {
  if (slip.enabled_chips.includes(slip.chip)) return slip.chip;
  return slip.enabled_chips.length ? Math.max(...slip.enabled_chips) : null;
}

export function bettingBar(table, slip, { forming, seated, playing, canBet, excluded, full, available, broke, lossRoom }) {
  if (excluded && !seated) {  // the line, and NEW BETS to put a finished round away: no chip, no DEAL
    // Bets left on the slip (the session's limit passed with them there) may be taken back: the server takes UNDO
    // and CLEAR meanwhile, which stake nothing. Before, every control went and the bets sat there till the break's end.
    const onSlip = slip.total > 0;
    const controls = [
      state.finished ? button("next-round", "CLEAR TABLE", "n", () => act.nextRound(), { id: "next-round" }) : null,
      onSlip ? button("undo", "UNDO", "u", () => act.control("undo"), { id: "undo" }) : null,
      onSlip ? button("clear", "CLEAR", null, () => act.control("clear"), { id: "clear" }) : null,
    ].filter(Boolean);
    return el("div", { class: "betting" },
      el("p", { class: "status-line", id: "bet-status" }, excluded,
        onSlip ? " The bets on the slip are not dealt: UNDO or CLEAR takes them back." : ""),
      controls.length ? el("div", { class: "controls" }, ...controls) : null);
  }
  // What the daily loss limit leaves beyond the slip (null: no limit): a chip, x2 or REBET past it is not offered, as
  // one past the balance is not; before, they were lit and each press refused (a trial of players).
  const limited = lossRoom !== null && lossRoom !== undefined;
  const roomLeft = limited ? lossRoom - slip.total : null;
  const pastRoom = (amount) => limited && amount > roomLeft;
  let line = state.finished ? "Place your bets for the next round" : "Place your bets";
  if (forming && seated) line = "Your bets are in. Round starts in";
  else if (forming) line = "Round starts in";
  else if (playing) {
    // Who the round waits for, as the seat strip lights it (which a phone may have scrolled sideways).
    const name = otherDecider(playing);
    line = `A round is in play${name ? ` (${name} is deciding)` : ""}: bet now for the next one`;
  }
  // `broke`: the table's smallest bet, which the balance is below (table.js); the amounts named, the round forming or
  // in play unsaid (no bet of theirs joins it).
  const short = broke !== null && broke !== undefined;
  if (short) {
    line = `Your balance of ${money(available, table.currency)} is below this table's minimum bet of `
      + `${money(broke, table.currency)}: no bet can be made here.`;
  }
  const timer = forming && !short ? el("span", { class: "timer", id: "window" }) : null;
  // What the daily loss limit leaves (the table's `loss_room`), said while betting: a bet past it is refused when
  // placed. Before, the slip took any bet and DEAL refused them all (a trial of players).
  const beyond = slip.total === 0 ? "" : roomLeft >= 0 ? `, ${money(roomLeft, table.currency)} more than the bets on the slip`
    : ", less than the bets on the slip: DEAL would be refused";
  const room = canBet && !short && limited
    ? el("span", { class: "loss-room", id: "loss-room" },
      ` · Your daily loss limit leaves ${money(lossRoom, table.currency)} to stake today${beyond}.`) : null;
  const statusLine = el("p", { class: "status-line", id: "bet-status" }, line, timer ? " " : "", timer,
    full ? ` — all ${table.seats} seats are taken: bet once it is dealt` : forming && !seated && !short ? " — bet to join" : "",
    room);
  // The chosen chip is shown chosen only while the balance covers it and a bet can be made: greyed out, a gold ring
  // said it was still the one a spot would take (a player's trial).
  const inHand = chipInHand(slip);
  const chosen = (chip) => canBet && chip === inHand;
  // Why a chip is greyed out, in the server's words, on the chip itself (its title): a trial found it greyed out with
  // no word why, the reason told only when the chip in hand was refused at a spot.
  const greyed = (chip) => {
    if (!canBet) return null;
    const amount = money(chip, table.currency);
    if (!slip.enabled_chips.includes(chip)) {
      return slip.total && available !== null && available >= 0
        ? `Your bets of ${money(slip.total, table.currency)} leave ${money(available, table.currency)} of your `
          + `balance: not enough for a ${amount} chip.`
        : `The balance does not cover a ${amount} chip.`;
    }
    return pastRoom(chip) ? `Your daily loss limit leaves ${money(Math.max(roomLeft, 0), table.currency)} more to `
      + `stake today: not enough for a ${amount} chip.` : null;
  };
  const chips = el("div", { class: "chips", role: "group", "aria-label": "Chips" },
    ...table.chips.map((chip) => el("button", { type: "button", class: `chip chip-${chipColour(chip)}${chosen(chip) ? " selected" : ""}`,
      "data-chip": chip, "data-focus": `chip-${chip}`, disabled: !canBet || !slip.enabled_chips.includes(chip) || pastRoom(chip),
      "aria-pressed": chosen(chip) ? "true" : "false", "aria-label": `Chip ${money(chip, table.currency)}`,
      ...(greyed(chip) ? { title: greyed(chip) } : {}),
      onclick: () => act.control("chip", { chip }) }, chipLabel(chip, table.currency))),
    // C takes the next chip: printed as every control's key is (nothing said so: a trial of a keyboard player).
    el("kbd", { class: "chip-key", title: "C: the next chip", "aria-hidden": "true" }, "C"));
  if (seated) return el("div", { class: "betting" }, statusLine);
  const empty = slip.total === 0;
  // REBET (single-deck's SAME BET, which deals too) is offered while the balance covers what it would stake (the
  // slip's `rebet_total`): before, it was offered whenever there were last bets, and refused "The balance does not
  // cover the previous round's bets." (found by a trial). Else DEAL, disabled, with the chips. x2 is offered while
  // what is left covers the slip once more.
  const rebetCovered = (available === null || available === undefined || (slip.rebet_total || 0) <= available)
    && !(limited && (slip.rebet_total || 0) > lossRoom);
  const rebetInstead = empty && slip.can_rebet && canBet && !short && rebetCovered;
  const doubleShort = !empty && available !== null && available !== undefined && available < slip.total;
  const doublePast = !empty && pastRoom(slip.total);
  const controls = el("div", { class: "controls" },
    state.finished ? button("next-round", "NEW BETS", "n", () => act.nextRound(), { id: "next-round" }) : null,
    // UNDO stays while every seat is taken: bets on the slip then come back at the close, or may be taken back now.
    button("undo", "UNDO", "u", () => act.control("undo"), { id: "undo", disabled: empty || (!canBet && !full) }),
    // CLEAR takes every bet on the slip back at once, where UNDO takes one chip: with five spots and side bets that
    // was a press per chip (found by a trial of players). Offered while the slip holds bets, and pressable when UNDO
    // is; none once the bets are in a forming round, where UNDO is not offered either (the bar above).
    empty ? null
      : button("clear", "CLEAR", null, () => act.control("clear"), { id: "clear", disabled: !canBet && !full }),
    button("double-bets", "x2", "x", () => act.control("double"), { id: "double-bets",
      disabled: empty || !canBet || doubleShort || doublePast,
      ...(doubleShort && canBet ? { title: `x2 needs ${money(slip.total, table.currency)} more; the balance left is `
        + `${money(available, table.currency)}` } : doublePast && canBet ? { title: `x2 needs ${money(slip.total, table.currency)}`
        + ` more; your daily loss limit leaves ${money(Math.max(0, roomLeft), table.currency)} more today` } : {}) }),
    rebetInstead
      ? button("rebet", table.same_bet_deals ? "SAME BET" : "REBET", "r", () => act.control("rebet"), { id: "rebet", class: "primary" })
      : button("deal", "DEAL", "d", () => act.control("deal"), { id: "deal", class: "primary",
        disabled: empty || !canBet || Boolean(playing && table.shared) }));
  return el("div", { class: "betting" }, statusLine, chips, controls);
}

/** A table the operator took out of the configuration: nothing is bet there; once the player's round there is
 * played out, the way back to the lobby. */
export function closedBar() {
  return el("div", { class: "betting" },
    el("p", { class: "status-line", id: "bet-status" }, "This table is closed: it takes no new bets."),
    el("div", { class: "controls" },
      button("lobby", "BACK TO LOBBY", "l", () => { location.hash = "#/"; }, { id: "lobby", class: "primary" })));
}

/** The decisions on the player's hand; `dealing`: cards still in motion, every button shown and not yet pressable. */
export function decisions(round, dealing = false) {
  const currency = roundCurrency(round);  // the round's money: its stakes, offers and the balance they come from
  const showCashOut = state.me.settings.cash_out_visible;
  const ranked = state.hints ? state.hints.actions.filter((a) => a.action !== "cash-out" || showCashOut) : [];
  const hints = Object.fromEntries(ranked.map((a) => [a.action, a.ev]));
  const best = ranked.length ? ranked[0].action : null;
  // What a double (triple, quadruple) or a split would add, against what the balance holds now: the server
  // refuses one the balance cannot cover, so the button says so before it is pressed.
  const costs = round.offers.costs || {};  // the server's, from the engine: what each would take from the balance
  const me = round.me || {};
  const balance = me.balance_before === null || me.balance_before === undefined ? null : me.balance_before - me.staked;
  const shortOf = [];  // the actions the balance cannot cover, for the status line
  const keptOut = keptOutOfStakes(round);
  const keptWords = keptOut.length ? noNewStakes(keptOut.map((action) => ACTIONS.find(([a]) => a === action)[1]),
    me.loss_room, currency) : null;
  const buttons = ACTIONS.filter(([action]) => action !== "cash-out" || showCashOut).map(([action, label, key]) => {
    const legal = round.legal_actions.includes(action);
    if (!legal && ["triple", "quadruple", "surrender", "cash-out"].includes(action)) return null;
    const amount = action === "cash-out" && round.offers.cash_out !== undefined ? ` ${money(round.offers.cash_out, currency)}` : "";
    const cost = costs[action] || 0;
    const short = legal && balance !== null && cost > balance;
    if (short) shortOf.push(`${label.toLowerCase()} needs ${money(cost, currency)}`);
    const reason = short ? `${label} needs ${money(cost, currency)}; the balance is ${money(balance, currency)}`
      : keptOut.includes(action) ? keptWords : null;
    const node = button(`action-${action}`, `${label}${amount}`, key, () => act.decide(action),
      { "data-action": action, disabled: dealing || !legal || short, class: action === best ? "best" : null,
        ...(reason ? { title: reason } : {}) });
    if (action in hints) node.append(el("span", { class: "ev" }, evText(hints[action])));
    return node;
  });
  const short = shortOf.length
    ? el("span", { class: "balance-short", id: "short-of" }, ` · The balance of ${money(balance, currency)} is short: ${shortOf.join(", ")}.`)
    : null;
  const kept = keptWords ? el("span", { class: "balance-short", id: "no-new-stakes" }, ` · ${keptWords}`) : null;
  // A decision the timer took (an offer declined at a shared table, whose turns then begin) is told beside the next
  // one: before, it was told only while waiting for others and in the result (found by a trial of players).
  const late = me.timed_out ? el("span", { class: "timed-out", id: "timed-out" }, `${timedOut(me.timed_out)} `) : null;
  return el("div", { class: "decisions-wrap" },
    el("p", { class: "status-line" }, late, "Your decision ", el("span", { class: "timer", id: "bar-timer" }), short, kept),
    el("div", { class: "decisions", role: "group", "aria-label": "Decisions" }, ...buttons));
}

/** A hint's EV as the buttons print it: "EV +0.123", "EV -0.039". */
const evText = (ev) => `EV ${ev >= 0 ? "+" : ""}${ev.toFixed(3)}`;

/** The hint's EV of each answer to the offer of hand `seat`.`hand`: the server ranks every offer waiting for the
 * player (`offers`), each hand's as its own. Before, the offer's YES and NO showed no EV while the play buttons did
 * (found by a trial of players), then the pending hand's row alone had them. */
function offerHints(seat, hand, kind) {
  const hint = state.hints;
  const offer = hint && (hint.offers || []).find((o) => o.seat === seat && o.hand === hand && o.kind === kind);
  const ranked = offer ? offer.actions : hint && hint.seat === seat && hint.hand === hand ? hint.actions : null;
  if (!ranked || !ranked.length) return null;
  const evs = Object.fromEntries(ranked.map((a) => [a.action, a.ev]));
  const { accept, decline } = answers(kind);
  if (!(decline in evs)) return null;
  // YES left out of the ranking (past the daily loss limit): NO's EV is still said (before, neither: a trial).
  return { yes: accept in evs ? evs[accept] : null, no: evs[decline], best: ranked[0].action === accept ? "yes" : "no" };
}

/** The hand's actions that add a stake and that the server left out of its legal ones: it prices each one the game
 * allows (`offers.costs`), then leaves out those that add a stake while the player is kept from play (their session's
 * time limit passed mid-round, or a self-exclusion: the server's `without_new_stakes`). */
function keptOutOfStakes(round) {
  const costs = round.offers.costs || {};
  return ACTIONS.map(([action]) => action).filter((action) => action in costs && !round.legal_actions.includes(action));
}

/** Why `actions` are greyed: before, DOUBLE went grey mid-round with no word why (found by a trial). */
function noNewStakes(labels, lossRoom, currency) {
  const named = labels.join(", ");
  // The daily loss limit leaves some room (`me.loss_room`): what is left out stakes more than it (before, SPLIT was
  // lit past the limit, named best by the hint, and refused: a trial of players).
  if (!sessionOverLine() && !exclusionLine() && lossRoom !== undefined && lossRoom !== null) {
    return `Your daily loss limit leaves ${money(lossRoom, currency)} to stake today: ${named} would stake more.`;
  }
  const why = sessionOverLine() ? "Your session time limit is reached"
    : exclusionLine() ? "You have excluded yourself from play" : "Your limits keep you from play now";
  return `${why}: the round plays on, but no new stake is taken (${named}).`;
}

/** Insurance (or even money) asked once for every hand that can take it, with a choice per hand; `dealing` as in
 * :func:`decisions`. */
export function offerPanel(round, dealing = false) {
  const table = state.table.table;
  const currency = roundCurrency(round);
  const decision = round.decision;
  const pending = round.offers.pending || [{ seat: decision.seat, hand: decision.hand, kind: decision.kind,
    cost: round.offers.insurance }];
  const kinds = [...new Set(pending.map((offer) => offer.kind))];
  const title = kinds.map((kind) => OFFER_TITLES[kind]).join(" / ");
  const spot = spotOf(round);
  const rows = pending.map((offer) => {
    const key = `${offer.seat}.${offer.hand}`;
    const chosen = Boolean(state.offerChoices[key]);
    const what = offer.kind === "even-money" ? "take even money" : `${OFFER_TITLES[offer.kind].toLowerCase()}${offer.cost ? ` for ${money(offer.cost, currency)}` : ""}`;
    const name = table.shared ? "Your hand" : `Hand ${spot(offer.seat)}`;  // the circle's number (round.js, spotOf)
    const hinted = offerHints(offer.seat, offer.hand, offer.kind);
    return el("li", { class: "offer-row" },
      el("span", {}, `${name}: ${what}`),
      hinted ? el("span", { class: "ev", "data-offer-ev": key },
        `${hinted.yes === null ? "" : `${evText(hinted.yes)} yes, `}${evText(hinted.no)} no`)
        : null,
      // A box to tick, named by what it takes: it read "NO" or "YES", beside NO TO ALL and YES TO ALL, and was taken
      // for an answer of its own (a trial of players). CONFIRM answers every hand as ticked.
      el("button", { type: "button", class: chosen ? "choice on" : "choice", "data-offer": key, "data-focus": `offer-${key}`,
        // Its name begins with the word it shows ("Insure hand 2 ($0.50)"), for a voice that says what it reads; the
        // box glyphs as text, never as an emoji (U+FE0E).
        "aria-pressed": chosen ? "true" : "false",
        "aria-label": `${OFFER_TICKS[offer.kind].toLowerCase().replace(/^./, (c) => c.toUpperCase())} ${name.toLowerCase()}`
          + (offer.cost ? ` (${money(offer.cost, currency)})` : ""),
        disabled: !chosen && offerRefused(round, offer), onclick: () => {
          state.offerChoices[key] = !chosen;
          act.redraw();
        } }, `${chosen ? "\u2611\uFE0E" : "\u2610\uFE0E"} ${OFFER_TICKS[offer.kind]}`));
  });
  const single = pending.length === 1;
  // Insurance the server would refuse (past the daily loss limit, or kept from play): YES is greyed, with why. Before,
  // it was offered and refused (review).
  const accept = answers(decision.kind).accept;
  const refused = offerRefused(round, { kind: decision.kind });
  const why = refused ? noNewStakes([accept.toUpperCase()], (round.me || {}).loss_room, currency) : null;
  // One offer: its YES and NO print their EV, as the play buttons do, the better one marked; several: each hand's row
  // prints the EV its hint has (YES TO ALL and NO TO ALL answer hands whose EVs differ).
  const hinted = single ? offerHints(pending[0].seat, pending[0].hand, pending[0].kind) : null;
  const withEv = (node, which) => {
    if (!hinted) return node;
    if (hinted[which] === null) return node;
    node.append(el("span", { class: "ev" }, evText(hinted[which])));
    if (hinted.best === which) node.classList.add("best");
    return node;
  };
  return el("div", { class: "offer", role: "group", "aria-label": title },
    el("p", { class: "status-line" }, `${title}? The dealer shows an Ace. `, el("span", { class: "timer", id: "bar-timer" }),
      why ? el("span", { class: "balance-short", id: "no-new-stakes" }, ` · ${why}`) : null),
    single ? el("p", { class: "offer-one" }, rows[0].firstChild.textContent) : el("ul", { class: "offer-rows" }, ...rows),
    el("div", { class: "decisions" },
      single ? null : button("offer-confirm", "CONFIRM", "enter", () => act.answerOffers(undefined),
        { id: "offer-confirm", class: "primary", disabled: dealing }),
      withEv(button("offer-yes", single ? "YES" : "YES TO ALL", "y", () => act.answerOffers(true),
        { "data-action": accept, disabled: dealing || refused, ...(why ? { title: why } : {}) }), "yes"),
      withEv(button("offer-no", single ? "NO" : "NO TO ALL", "n", () => act.answerOffers(false),
        { "data-action": answers(decision.kind).decline, disabled: dealing }), "no")));
}

/** Whether the server would refuse taking `offer` now: one of the decision's own kind by its legal actions; one of
 * another kind (insurance beside an even money asked first) by what the player's limits leave. Before, every row
 * was judged by the legal actions of the kind asked, and a hand's insurance could not be chosen beside another's
 * even money (a trial of players). */
// Insurance on several hands is answered at once and takes from one room under the daily loss limit: a row is
// refused where its cost is past what the limit leaves once the other rows chosen YES are counted (an attacker's
// trial: three insurances each within the room were offered, and the second was refused). `offer` without a seat
// stands for every hand at once (YES TO ALL).
function offerRefused(round, offer) {
  const room = (round.me || {}).loss_room;
  const limited = room !== undefined && room !== null;
  const pending = (round.offers.pending || []).filter((o) => o.kind === "insurance");
  const every = offer.seat === undefined;
  const others = every ? pending : pending.filter((o) => (o.seat !== offer.seat || o.hand !== offer.hand)
    && state.offerChoices[`${o.seat}.${o.hand}`]);
  const cost = every ? 0 : offer.cost || 0;
  const pastRoom = limited && offer.kind === "insurance"
    && cost + others.reduce((sum, o) => sum + (o.cost || 0), 0) > room;
  if (offer.kind === round.decision.kind) return !round.legal_actions.includes(answers(offer.kind).accept) || pastRoom;
  if (offer.kind !== "insurance") return false;  // even money stakes nothing
  return Boolean(sessionOverLine() || exclusionLine()) || pastRoom;
}

// ------------------------------------------------------------------ keys
function press(selector) {
  const target = view().querySelector(selector);
  if (target && !target.disabled) {
    target.focus({ preventScroll: true });
    target.click();
    return true;
  }
  return false;
}

document.addEventListener("keydown", (event) => {
  if (!state.table || !location.hash.startsWith("#/table/") || event.ctrlKey || event.metaKey || event.altKey) return;
  if (["INPUT", "SELECT", "TEXTAREA", "SUMMARY"].includes(event.target.tagName) || event.repeat) return;
  const key = event.key.toLowerCase();
  const round = state.table.round;
  if (round && round.status === "playing" && round.legal_actions.length) {
    if (OFFER_TITLES[round.decision.kind]) {
      if (key === "y" && press("[data-focus='offer-yes']")) event.preventDefault();
      if (key === "n" && press("[data-focus='offer-no']")) event.preventDefault();
      // Enter confirms the choices, unless a button has the focus (then Enter presses that button).
      if (key === "enter" && event.target.tagName !== "BUTTON" && press("#offer-confirm")) event.preventDefault();
      return;
    }
    const match = ACTIONS.find(([action, , shortcut]) => shortcut === key && round.legal_actions.includes(action));
    if (match && press(`[data-action='${match[0]}']`)) event.preventDefault();
    return;
  }
  if (key === "d" && act.controlsPending() && (!round || round.status !== "playing")) {
    act.control("deal");  // in line after the bets still on their way; the server says if there is nothing to deal
    event.preventDefault();
    return;
  }
  const keys = { d: "#deal", r: "#rebet", u: "#undo", x: "#double-bets", n: "#next-round", l: "#lobby" };
  if (keys[key] && press(keys[key])) event.preventDefault();
  else if (/^[1-9]$/.test(key) && press(`button.circle[data-spot='${key}']`)) event.preventDefault();
  else if (key === "c") {
    const chips = [...view().querySelectorAll("button.chip:not([disabled])")];
    const at = chips.findIndex((chip) => chip.classList.contains("selected"));
    if (chips.length && press(`button.chip[data-chip='${chips[(at + 1) % chips.length].dataset.chip}']`)) event.preventDefault();
  }
});
