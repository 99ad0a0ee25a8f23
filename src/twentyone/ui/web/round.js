// Drawing a round on the felt: the dealer, the player's own hands, the other players' seats,
// and the result summary of a finished round (tied to its id).

import { cardNode, totalText } from "./cards.js";
import { chipStack } from "./chips.js";
import { el, state } from "./dom.js";
import { betsTotal, money, signed } from "./money.js";

export const OUTCOMES = { blackjack: "Blackjack", win: "Win", push: "Push", lose: "Lose", bust: "Bust",
  "cash-out": "Cashed out", "even-money": "Even money", surrender: "Surrendered" };

export function tableInfo() {
  const table = state.table.table;
  return { side_bet_titles: {}, side_bet_lines: {}, offer_answers: {}, ...state.tables[table.id], ...table };
}

/** The currency a round's money is in: the round's own (a table's currency may have changed since it was dealt:
 * its stakes stay in the one they were taken in), else the table's. */
export function roundCurrency(round) {
  return round.currency || state.table.table.currency;
}

/** A side bet by the name its table gives it ("21+3"): the table shown, or ``titles`` given (history's replay). */
export function sideTitle(name, titles = tableInfo().side_bet_titles) {
  return titles[name] || name.replace(/_/g, " ");
}

// `lines`: the table's words for the side bet's results, where the page is not at its table (the history's).
export function sideLine(name, result, lines = tableInfo().side_bet_lines[name] || {}) {
  if (result === "lose") return "lost";
  if (result === "push") return "push";
  return lines[result] || result.replace(/_/g, " ");
}

// A card's deal (or flip) is timed from when it first appeared; a redraw meanwhile carries on with the same motion
// (a negative delay), and a card already in place is not dealt again.
const MOTION_MS = 900;
const LANDS_MS = 350;  // a card's motion from its start until it lies in place (style.css: deal-in .32s, flip .35s)

/** Milliseconds until the last card dealt lies in place (0: none is new). The decisions wait for it (table.js):
 * before, they came up while the deal was still flying in, and a second press of D (DEAL, then DOUBLE) or a second
 * click where DEAL had been took a decision on cards not yet seen (a trial). With reduced motion the cards are in
 * place at once, and the decisions still wait as long: without it, D pressed twice doubled 4 rounds in 5 (a trial). */
export function dealingFor() {
  return Math.max(0, (state.cardsLandAt || 0) - performance.now());
}

// A face-down card is drawn where it lies (``hiddenAt``, the dealer's: a table that deals the hole card first has it
// left of the up card), so that it turns over in place and the cards beside it do not move.
function cards(round, key, codes, hidden = 0, hiddenAt = null) {
  const now = performance.now();
  const backs = Array.from({ length: hidden }, () => null);
  const at = hiddenAt === null || hiddenAt === undefined ? codes.length : Math.min(hiddenAt, codes.length);
  const all = [...codes.slice(0, at), ...backs, ...codes.slice(at)];
  let fresh = 0;
  const nodes = all.map((code, index) => {
    const id = `${round.id}|${key}|${index}|${code ? "up" : "down"}`;
    if (!state.seen.has(id)) {
      const turned = code && state.seen.has(`${round.id}|${key}|${index}|down`);
      state.seen.set(id, { at: now + (turned ? 0 : fresh++ * 90), motion: turned ? "flip" : "deal-in" });
    }
    const { at, motion } = state.seen.get(id);
    const moving = now - at < MOTION_MS;
    const card = cardNode(code, moving ? motion : "");
    if (moving) {
      card.style.setProperty("--delay", `${at - now}ms`);
      state.cardsLandAt = Math.max(state.cardsLandAt || 0, at + LANDS_MS);
    }
    return card;
  });
  return el("div", { class: "cards" }, ...nodes);
}

export function dealerArea(round) {
  const dealer = round ? round.dealer : { cards: [], hidden: 0 };
  const done = round && (round.status === "settled" || round.status === "void");
  const total = round && dealer.cards.length
    ? el("div", { class: `total${dealer.total > 21 ? " bust" : ""}`, id: "dealer-total" }, dealer.blackjack ? "Blackjack"
      : dealer.total > 21 ? `${dealer.total} Bust` : totalText(dealer.total, dealer.soft, dealer.cards.length, done))
    : null;
  return el("div", { class: "dealer", "aria-label": "Dealer" },
    el("div", { class: "hand dealer-hand" }, el("div", { class: "owner" }, "Dealer"),
      round ? cards(round, "dealer", dealer.cards, dealer.hidden, dealer.hidden_at)
        : el("div", { class: "cards" }), total));
}

/** The spot number of each of the player's seats in `round`, as the betting circles are numbered: (seat) => number. */
// The server deals the spots with a main bet as seats 1, 2, ... in order, and keeps with each seat's bet the spot it
// was placed on (`me.bets[i].spot`): a bet on the "Hand 3" circle alone was labelled "Hand 1" once dealt (found by a
// trial of players). A round from before the server kept them is numbered in order.
export function spotOf(round) {
  return spotsOf(round.hands.filter((hand) => hand.player_id === state.me.id), (round.me && round.me.bets) || []);
}

/** As `spotOf`, from one player's `hands` and their seat's `bets` (a history entry's). */
export function spotsOf(hands, bets) {
  const seats = [...new Set(hands.map((hand) => hand.seat))].sort((a, b) => a - b);
  return (seat) => {
    const index = seats.indexOf(seat);
    return (bets[index] && bets[index].spot) || index + 1;
  };
}

/** A split hand is numbered after the spot it came from at a private table of several spots ("Hand 1.2": spot 1,
 * its second hand); at a shared table, where a player has one spot, by itself ("Your hand 2", "ann's hand 2").
 * Before, a shared table's read "Your hand.2" (found by a trial of a shared table). */
function handLabel(hand, index, mine, shared) {
  if (shared) {
    const split = hand.from_split ? ` ${hand.hand}` : "";
    return mine ? `Your hand${split}` : `${hand.name}'s hand${split}`;
  }
  return `Hand ${index}${hand.from_split ? `.${hand.hand}` : ""}`;
}

/** The player's own hands, big, each over its chip stack; the active one is lit. */
export function myHands(round, decisionNode) {
  const table = state.table.table;
  const currency = roundCurrency(round);
  const mine = round.hands.filter((hand) => hand.player_id === state.me.id);
  const seats = [...new Set(mine.map((hand) => hand.seat))];
  const finished = round.status === "settled" || round.status === "void";
  const settle = finished && state.settledShown !== round.id;
  const spot = spotOf(round);
  return el("div", { class: "hands mine", "data-count": seats.length }, ...seats.map((seat) => {
    const hands = mine.filter((hand) => hand.seat === seat);
    return el("div", { class: "spot dealt" }, ...hands.map((hand) => {
      const decision = round.decision;
      const active = decision && decision.seat === hand.seat && decision.hand === hand.hand && !finished;
      const label = handLabel(hand, spot(seat), true, table.shared);
      const won = hand.returned - hand.stake;
      return el("div", { class: `hand${active ? " active" : ""}`, "aria-label": label.replace(/^Hand/, "Your hand"),
        "data-seat": hand.seat, "data-hand": hand.hand },
      el("div", { class: "owner" }, label),
      cards(round, `${hand.seat}.${hand.hand}`, hand.cards),
      el("div", { class: totalClass(hand) }, handTotal(hand)),
      // Each stack over its amount: a payout's stack had no amount written by it, and its capped discs misstated it
      // (found by a trial of players: a $37.50 payout read as about $12.50).
      el("div", { class: "bet-circle" },
        el("div", { class: "stacks" },
          el("div", { class: "stack-col" },
            chipStack(hand.stake, table.chips, currency, finished && won < 0 ? (settle ? "collected" : "gone") : ""),
            el("span", { class: "amount" }, money(hand.stake, currency))),
          finished && won > 0 ? el("div", { class: "stack-col" },
            chipStack(won, table.chips, currency, settle ? "paid" : ""),
            el("span", { class: "paid-amount" }, `+${money(won, currency)}`)) : null)),
      hand.outcome ? el("div", { class: `outcome ${hand.outcome}` },
        `${(OUTCOMES[hand.outcome] || hand.outcome).toUpperCase()} ${signed(won, currency)}`) : null,
      active && decisionNode ? decisionNode : null);
    }));
  }));
}

// A hand's total as the table reads it: a blackjack is named as soon as it is dealt, the player's own and the others'
// alike (the others' read "21" until the round settled); a hand no longer played (stood, settled) has one total; a
// bust is named as the dealer's is, "26 Bust", as soon as it busts (before, the player's read "26" alone: a trial).
// Even money is only offered on a blackjack, and a hand that took it is one ("21" before: a trial of players).
const BLACKJACKS = new Set(["blackjack", "even-money"]);
function handTotal(hand) {
  return BLACKJACKS.has(hand.status) || BLACKJACKS.has(hand.outcome) ? "Blackjack"
    : hand.total > 21 ? `${hand.total} Bust`
      : totalText(hand.total, hand.soft, hand.cards.length,
        Boolean(hand.outcome) || Boolean(hand.status && hand.status !== "playing"));
}

const totalClass = (hand) => `total${hand.total > 21 ? " bust" : ""}`;

/** A seat's hand's result beside its total, unless the total says it already: a blackjack paid read "Blackjack
 * Blackjack" in the strip, a bust "24 Bust Bust" (found by a trial). */
function outcomeBesides(hand) {
  const words = OUTCOMES[hand.outcome] || hand.outcome;
  return hand.outcome && !handTotal(hand).endsWith(words) ? el("span", { class: `outcome ${hand.outcome}` }, words) : null;
}

/**
 * The other players at a shared table: a compact strip of seats, each with its bet and, once dealt,
 * its cards, total and result; the seat whose turn it is is lit.
 */
export function othersStrip(round) {
  const table = state.table.table;
  if (!table.shared || !round) return null;
  const currency = roundCurrency(round);
  const seats = (round.seats || round.players.map((p, i) => ({ ...p, position: i + 1, bets: [], total: 0 })));
  const others = seats.filter((seat) => seat.player_id !== state.me.id);
  const deciding = round.status === "playing" ? deciders(round) : [];
  const strip = el("ul", { class: "others", "aria-label": "Other players" }, ...others.map((seat) => {
    const hands = round.hands.filter((hand) => hand.player_id === seat.player_id);
    const turn = deciding.includes(seat.player_id);
    // The bets, and what doubles and splits added once the hands are shown (a withheld hand shows its bet).
    const main = (seat.bets || []).reduce((sum, bet) => sum + bet.bet, 0);
    const added = hands.length ? Math.max(0, hands.reduce((sum, hand) => sum + hand.stake, 0) - main) : 0;
    const total = (seat.total ?? betsTotal(seat.bets || [])) + added;
    return el("li", { class: `seat${turn ? " active" : ""}`, "data-player": seat.name },
      el("div", { class: "name" }, seat.name),
      el("div", { class: "seat-bet" }, chipStack(total, table.chips, currency, "mini"), money(total, currency)),
      ...hands.map((hand) => el("div", { class: "mini-hand" },
        cards(round, `${hand.seat}.${hand.hand}`, hand.cards),
        el("span", { class: totalClass(hand) }, handTotal(hand)),
        outcomeBesides(hand))),
      turn ? el("div", { class: "turn" }, "deciding…") : null);
  }));
  const count = round.seat_count ?? seats.length;
  if (count > seats.length) strip.append(el("li", { class: "seat more" }, `and ${count - seats.length} more`));
  return el("div", { class: "others-wrap" },
    el("div", { class: "players-count", id: "players-count" },
      `${count} player${count === 1 ? "" : "s"} in this round${table.seats ? ` · ${table.seats} seats` : ""}`
      + (round.others_withheld && count > 1 ? " · their draws are shown when the round settles" : "")),
    others.length ? strip : null);
}

/** How a seat's bets are named beside their hand where the player has several, as the felt numbers the hands:
 * " (hand 2)"; "" with one. `round`'s hands of the player's (by seat) give the numbers. */
export function handNamer(round) {
  const seats = [...new Set(round.hands.filter((hand) => hand.player_id === state.me.id).map((hand) => hand.seat))];
  const spot = spotOf(round);
  return (seat) => (seats.length > 1 ? ` (hand ${spot(seat)})` : "");
}

/** A side bet's result in words with what it won or lost, in its round's currency: "Bust It: dealer busts with 4
 * cards, +€4.00". */
export function sideResult(side, currency, spot = () => "") {
  return `${sideTitle(side.name)}${spot(side.seat)}: ${sideLine(side.name, side.result)}, `
    + `${signed(side.returned - side.stake, currency)}`;
}

/** The players the table waits for: one in turn, or everyone still deciding in a common draw (power). */
export function deciders(round) {
  if (round.deciding) return round.deciding;
  return round.decision ? [round.decision.player_id] : [];
}

/** A seated player's name, or null (a round without seats, a player not among them). */
export function seatName(round, playerId) {
  return ((round.seats || []).find((seat) => seat.player_id === playerId) || {}).name || null;
}

/** The one other player the round waits for, by name; null where it waits for this player, for several, or none. */
export function otherDecider(round) {
  const waiting = deciders(round).filter((id) => id !== state.me.id);
  return waiting.length === 1 ? seatName(round, waiting[0]) : null;
}

/** A round this player only watched (a shared table's): how the dealer's hand ended; the felt shows everyone's. */
function watchedSummary(round) {
  const { total, blackjack } = round.dealer;
  const dealer = blackjack ? "The dealer has Blackjack." : total > 21 ? `The dealer busts with ${total}.`
    : `The dealer's hand: ${total}.`;
  const satOut = state.satOut.get(round.id);
  const you = satOut ? `You sat this round out: your bets of ${money(satOut.total, satOut.currency)} were returned. `
    + satOut.reason.replace(/^Your bets sit this round out: /, "") : "You watched this round: bet to play the next.";
  return { title: `Round #${round.id} is over`, items: [dealer, you], net: 0 };
}

/** The sheet's auto decision, taken for a player whose clock ran out: said in the bar and in the result. */
export function timedOut(times) {
  return `Time ran out: the auto decision (Stand, or no to an offer) was made for you${times > 1 ? ` ${times} times` : ""}.`;
}

/** The result of a finished round, item by item, in the round's currency: the banner tied to its id. */
export function resultSummary(round) {
  const currency = round.currency;
  if (round.status === "void") {
    // A round voided before its deal took no stake: "refunded" would say otherwise (noted by a trial).
    const reason = round.void_reason || "A malfunction voids all pays and plays.";
    const staked = round.me ? round.me.staked > 0 : round.hands.length > 0;  // a watcher: stakes if it was dealt
    return { title: `Round #${round.id} void`, items: staked ? ["Every stake is refunded.", reason] : [reason], net: 0 };
  }
  if (!round.me) return watchedSummary(round);
  const mine = round.hands.filter((hand) => hand.player_id === state.me.id);
  const spotNumber = spotOf(round);
  const shared = state.table && state.table.table.shared;
  const items = mine.map((hand) => {
    const label = handLabel(hand, spotNumber(hand.seat), true, shared);
    return `${label}: ${OUTCOMES[hand.outcome] || hand.outcome} ${signed(hand.returned - hand.stake, currency)}`;
  });
  const spot = handNamer(round);
  for (const side of round.side_bets.filter((s) => s.player_id === state.me.id)) items.push(sideResult(side, currency, spot));
  for (const cover of round.insurance.filter((s) => s.player_id === state.me.id)) {
    items.push(`Insurance${spot(cover.seat)}: ${cover.result === "win" ? "paid 2:1" : "lost"}, `
      + `${signed(cover.returned - cover.stake, currency)}`);
  }
  if (round.me && round.me.timed_out) items.push(timedOut(round.me.timed_out));
  const net = round.me ? round.me.returned - round.me.staked : 0;
  const verdict = net > 0 ? `you won ${money(net, currency)}` : net < 0 ? `you lost ${money(-net, currency)}` : "even";
  return { title: `Round #${round.id}: ${verdict}`, items, net };
}
