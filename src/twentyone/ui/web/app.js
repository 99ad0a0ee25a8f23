// twentyone web table: the router, the lobby, history, settings and limits; the table itself is
// in table.js (state and controls), round.js (the felt), cards.js, chips.js and money.js.

import { cardText } from "./cards.js";
import { announce, api, el, exclusionLine, localTime, sessionOverLine, showError, state, utc, view } from "./dom.js";
import { money } from "./money.js";
import { OUTCOMES, sideLine, sideTitle, spotsOf } from "./round.js";
import { closeSocket, currentTableId, leaveRound, leaveTable, openTable } from "./table.js";

// ------------------------------------------------------------- session
async function ensureMe() {
  const token = state.token;
  if (!token) return null;
  try {
    const me = await api("GET", "/me");
    // Signed out (or in anew) while it was asked: the answer is the ended sign-in's. Before, a table read's /me sent
    // just before Sign out came back after it and drew the header signed in again, with no "Play as guest" (seen
    // under load in the suite).
    if (state.token !== token) return state.me;
    state.me = me;
  } catch (error) {
    if (state.token !== token) return state.me;
    // A 429 that says the token is not taken now (an address past its limit of wrong tokens, where a player's own
    // is still served) is a token to drop too: before, the page showed that line alone, with no lobby to sign in.
    if (error.status === 401 || (error.status === 429 && error.data && error.data.token_refused)) {
      state.token = null;
      localStorage.removeItem("twentyone.token");
      state.me = null;
    } else throw error;
  }
  renderAccount();
  return state.me;
}

function renderAccount() {
  const who = document.getElementById("who");
  const out = document.getElementById("sign-out");
  if (state.me) {
    // The balances the casino's wallet holds: one it holds in no currency has none to show. At a table, its currency's
    // is the table's BALANCE (what is left to bet), with what is on the table beside it: before, the header showed
    // $1,000.00 where the table showed $975.00, $25.00 being on the slip (found by a trial).
    // Each currency's its own unbroken piece, so that the header wraps between them (style.css).
    const here = state.table && state.tableMoney;
    const parts = Object.entries(state.me.balances).map(([c, v]) => el("span", { class: "wallet", "data-currency": c },
      !here || here.currency !== c ? money(v, c)
        : [money(here.available, c), here.onTable ? el("span", { class: "on-table", id: "on-table" },
          ` (${money(here.onTable, c)} on the table)`) : null]));
    const balances = parts.flatMap((part, index) => (index ? [" · ", part] : [part])).flat();
    who.replaceChildren(...(balances.length ? [`${state.me.name} — `, ...balances] : [state.me.name]));
    out.hidden = false;
  } else {
    who.textContent = "";
    out.hidden = true;
  }
}

state.drawAccount = renderAccount;  // the table redraws the header's balance with its own (table.js)

async function signedIn(token) {
  state.token = token;
  localStorage.setItem("twentyone.token", token);
  await ensureMe();
}

// --------------------------------------------------------------- lobby
// The tables, and those a signed-in player has a round open at that the operator has since closed (no lobby lists
// them otherwise): known by id, so that history and returned bets name them too.
async function loadTables() {
  const { tables, closed_tables: closed = [], open_rounds: open = [] } = await api("GET", "/tables");
  state.tables = Object.fromEntries([...closed, ...tables].map((table) => [table.id, table]));
  return { tables, closed, open };
}

const currencyOf = (tableId) => (state.tables[tableId] || {}).currency;
// Returned bets in the currency the server names (a seat's in its round's), else their table's.
const returnedIn = (bets) => bets.currency || currencyOf(bets.table_id);
const returnedTotals = (returned) => returned.map((b) => money(b.total, returnedIn(b))).join(", ");  // "$5.00, €1.00"
const minutesText = (minutes) => (minutes === 1 ? "1 minute" : `${minutes} minutes`);

async function renderLobby() {
  const { tables, closed, open } = await loadTables();
  const root = view();
  root.replaceChildren();
  if (!state.me) {
    const error = el("p", { class: "error", role: "alert" });
    const credentials = (form) => ({ name: form.elements.name.value, password: form.elements.password.value });
    const signIn = async (event, path) => {
      event.preventDefault();
      try {
        const answer = await api("POST", path, credentials(event.target.closest("form")));
        await signedIn(answer.token);
        if (answer.returned_bets && answer.returned_bets.length) {
          announce(`Bets returned: ${returnedTotals(answer.returned_bets)}.`);
        }
        renderLobby();
        atTop();
      } catch (failure) { error.textContent = failure.message; }
    };
    root.append(el("section", { class: "panel" },
      el("h1", {}, "Blackjack tables"),
      el("p", {}, "Play at once with a demo balance, or sign in to keep your history."),
      el("button", { class: "primary", type: "button", id: "play-guest", onclick: async () => {
        try {
          const answer = await api("POST", "/auth/guest");
          await signedIn(answer.token);
          renderLobby();
          atTop();
        } catch (failure) { error.textContent = failure.message; }
      } }, "Play as guest"),
      el("form", { class: "inline", onsubmit: (event) => signIn(event, "/auth/login") },
        el("label", {}, "Name", el("input", { name: "name", autocomplete: "username", required: true })),
        el("label", {}, "Password", el("input", { name: "password", type: "password",
          autocomplete: "current-password", required: true })),
        el("button", { type: "submit" }, "Sign in"),
        el("button", { type: "button", onclick: (event) => signIn(event, "/auth/register") }, "Register")),
      error));
  }
  if (state.me) {  // on a phone the header has no room for them: the lobby says who is signed in, with what
    const balances = Object.entries(state.me.balances).map(([c, v]) => money(v, c)).join(" · ");
    root.append(el("p", { class: "phone-only", id: "lobby-who" }, balances ? `${state.me.name}: ${balances}` : state.me.name));
  }
  const excluded = exclusionLine() || sessionOverLine();  // they may still watch a table and read its history
  if (excluded) root.append(el("p", { class: "panel exclusion", id: "exclusion", role: "status" }, excluded));
  // The player's rounds still open: at tables in the lobby (a player who came back here mid-round saw no word of it:
  // a trial), and where the operator closed the table, which is in no lobby.
  const openHere = open.filter((round) => state.tables[round.table_id]);
  if (state.me && (closed.length || openHere.length)) {
    root.append(el("section", { class: "panel in-play", id: "in-play" },
      el("h2", {}, "Rounds to finish"),
      el("ul", {},
        ...openHere.map((round) => el("li", {},
          el("a", { href: `#/table/${round.table_id}`, "data-round": round.round_id },
            `Your round #${round.round_id} at ${state.tables[round.table_id].name}`),
          el("span", { class: "muted" }, round.status === "betting"
            ? " · your bets are in, dealt when betting closes."
            : " · in play: a decision of yours not made in time is made for you."))),
        ...closed.map((table) => el("li", {},
          el("a", { href: `#/table/${table.id}` }, `Your round in play at ${table.name}`),
          el("span", { class: "muted" }, " · the table is closed: play the round out there; it takes no new bets."))))));
  }
  const grid = el("div", { class: "lobby-grid" });
  for (const table of tables) {
    const limits = table.limits.main;
    grid.append(el("article", { class: `table-card ${table.theme}` },
      el("h3", {}, table.name),
      el("div", { class: "muted" }, `${table.variant} · ${table.currency}`),
      el("div", {}, `Bets ${money(limits[0], table.currency)}–${money(limits[1], table.currency)}`),
      el("div", {}, table.shared ? `${table.players} playing · ${table.seats ? `${table.seats} seats` : "unlimited players"}`
        : `${table.hands_per_player} hand${table.hands_per_player > 1 ? "s" : ""} · private round`),
      el("a", { href: `#/table/${table.id}`, class: "join", "aria-label": `Join ${table.name}` },
        state.me ? "Join table" : "")));
  }
  root.append(el("section", {}, el("h2", {}, "Tables"), grid));
}

// -------------------------------------------------------------- history
// Pages go by `before` (the round id the previous page ended above): each costs the server the same,
// and none shifts when a round is played meanwhile. `trail` holds the cursors of the pages passed.
const STATUS_WORDS = { settled: "played", void: "void (refunded)", playing: "in play" };

/** Each stake of the player's round with what became of it: the hands (their cards and stake), then each side bet and
 * insurance, so that the line adds up to the Staked column. Before, it listed the hands' cards alone, and a round
 * with a side bet staked more than the line showed (found by a trial of players). */
// Where the player had several hands, each is named by its circle as the table named it ("Hand 3: ..."), and each side
// bet and insurance by the hand it was on ("21+3 (hand 3)"): before, a round of three hands and two side bets listed
// them unnamed (a trial of players).
const PAST = { win: "won", lose: "lost" };
/** A settled hand's or insurance's result as the history and the replay say it: "won", "lost", "push", "blackjack". */
const pastOutcome = (word) => (PAST[word] || OUTCOMES[word] || word).toLowerCase();

function stakesLine(round, currency) {
  const table = state.tables[round.table_id] || {};
  const titles = table.side_bet_titles || {};
  // In the felt's words: "(colored pair)", "(cashed out)", where the engine's read "(colored)", "(cash-out)" (a trial);
  // a won or lost hand and insurance in the past, as a side bet's "(lost)" beside them (a trial read "(lose)").
  const outcome = (word) => ` (${word ? pastOutcome(word) : "…"})`;
  const sideOutcome = (side) => ` (${side.result ? sideLine(side.name, side.result, (table.side_bet_lines || {})[side.name] || {}) : "…"})`;
  const spot = spotsOf(round.hands, round.bets || []);
  const several = new Set(round.hands.map((h) => h.seat)).size > 1;
  const split = (h) => (h.from_split ? `.${h.hand}` : "");
  // A split hand as the felt names it ("Hand 3.2"), with one circle too (a review: "Hand 2" read as circle 2).
  const hand = (h) => (several || h.from_split ? `Hand ${spot(h.seat)}${split(h)}: ` : "");
  const on = (seat) => (several ? ` (hand ${spot(seat)})` : "");
  return [
    ...round.hands.map((h) => `${hand(h)}${h.cards.map(cardText).join(" ")} ${money(h.stake, currency)}${outcome(h.outcome)}`),
    ...(round.side_bets || []).map((s) => `${sideTitle(s.name, titles)}${on(s.seat)} ${money(s.stake, currency)}${sideOutcome(s)}`),
    ...(round.insurance || []).map((i) => `Insurance${on(i.seat)} ${money(i.stake, currency)}${outcome(i.result)}`),
    ...(round.insurance_taken || []).map((i) => `Insurance${on(i.seat)} ${money(i.stake, currency)}${outcome(null)}`),
  ].join("; ");
}

/** How a replay names a hand, read in the replay's order: at a private table by the circle its bet was on, as the felt
 * does ("hand 3"; once the circle is split, "hand 3.2"), where the round's seat ("seat 1 hand 1") read as another hand
 * (a trial of players); at a shared table by its player, as the felt names it ("your hand", "ann's hand 2").
 * Before, a circle's cards were numbered as split from its first card on, and a shared round's lines said "seat 3
 * hand 1" with no word of whose (a trial of players). `operations` are the replay's; `me` the viewer's name. */
function replayNamer(operations, shared, me) {
  const bets = operations.filter((op) => op.type === "bets");
  const spots = new Map(bets.filter((op) => op.spot).map((op) => [op.seat, op.spot]));
  const owners = new Map(bets.map((op) => [op.seat, op.player]));
  const split = new Set();  // the seats split so far
  return {
    // `whole`: the seat's circle as a whole (a side bet, insurance), which a split does not number.
    name(seat, hand, whole = false) {
      const splitHere = split.has(seat) && !whole;
      if (shared && owners.has(seat)) {
        const owner = owners.get(seat);
        return `${owner === me ? "your" : `${owner}'s`} hand${splitHere ? ` ${hand}` : ""}`;
      }
      if (shared || !spots.has(seat)) return `seat ${seat} hand ${hand}`;
      return `hand ${spots.get(seat)}${splitHere ? `.${hand}` : ""}`;
    },
    passed(op) { if (op.type === "action" && op.action === "split") split.add(op.seat); },
  };
}

// Action and result words as a player reads them: "no insurance", "cashed out", not the engine's "no-insurance".
const actionWords = (action) => action.replace(/-/g, " ");
const capital = (line) => line.replace(/^(hand|your|seat)/, (word) => word[0].toUpperCase() + word.slice(1));

async function renderHistory(trail = []) {
  if (!(await ensureMe())) { location.hash = "#/"; return; }
  const before = trail.length ? trail[trail.length - 1] : null;
  const data = await api("GET", before === null ? "/me/history" : `/me/history?before=${before}`);
  if (!Object.keys(state.tables).length) await loadTables();
  const root = view();
  root.replaceChildren();
  // Each cell carries its column's name: on a phone a row is drawn as a card of labelled lines (style.css).
  const HEADS = ["Round", "Table", "Status", "Your bets", "Dealer", "Staked", "Returned", "Balance after", ""];
  const cell = (index, ...content) => el("td", { "data-label": HEADS[index] || null }, ...content);
  // Each round in the currency it was played in (a table's may have changed since: the server keeps the round's).
  const currencyAt = (round) => round.currency || currencyOf(round.table_id);
  const rows = data.rounds.map((round) => el("tr", {},
    // Cards and tables as players name them ("10♠ J♠", "Classic Blackjack"), where the codes were shown ("TS JS").
    cell(0, `#${round.id}`), cell(1, (state.tables[round.table_id] || {}).name || round.table_id),
    cell(2, STATUS_WORDS[round.status] || round.status),
    cell(3, stakesLine(round, currencyAt(round))),
    cell(4, round.dealer.cards.map(cardText).join(" ")),
    cell(5, money(round.staked, currencyAt(round))),
    // Winnings an operator's wallet has not yet taken are on their way (retried until it does): said so, where the
    // balance does not show them yet.
    cell(6, money(round.returned, currencyAt(round)),
      round.owed ? el("span", { class: "owed" }, ` (${money(round.owed, currencyAt(round))} on its way to your balance)`)
        : null),
    cell(7, round.balance_after === null ? "" : money(round.balance_after, currencyAt(round))),
    cell(8, el("button", { type: "button", "data-replay": round.id,
      onclick: () => showReplay(round.id, currencyAt(round), round.table_id) }, "Replay"))));
  root.append(el("section", { class: "panel" },
    el("h1", {}, "Game history"),
    rows.length ? el("table", { class: "history" },
      el("thead", {}, el("tr", {}, ...HEADS.map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", {}, ...rows)) : el("p", {}, "No rounds yet."),
    el("div", { class: "controls" },
      el("button", { type: "button", disabled: !trail.length, onclick: () => renderHistory(trail.slice(0, -1)) },
        "Newer"),
      el("button", { type: "button", disabled: !data.has_more,
        onclick: () => renderHistory([...trail, data.next_before]) }, "Older")),
    el("div", { id: "replay" })));
}

async function showReplay(roundId, currency, tableId) {
  const target = document.getElementById("replay");
  // Side bets by the names the table gives them ("21+3"), as the felt shows them.
  const titles = (state.tables[tableId] || {}).side_bet_titles || {};
  const sideLines = (state.tables[tableId] || {}).side_bet_lines || {};
  const sideName = (name) => sideTitle(name, titles);
  try {
    const replay = await api("GET", `/rounds/${roundId}/replay`);
    // The round's own word where the server gives it: a table removed since, or made private, is not the round's.
    const shared = replay.shared ?? Boolean((state.tables[tableId] || {}).shared);
    const namer = replayNamer(replay.operations, shared, state.me && state.me.name);
    const describe = (op, where) => {
      if (op.type === "card") {
        const to = op.seat === undefined || op.seat <= 0 ? op.to : where;  // the dealer, every hand of a common draw
        return `card ${cardText(op.card)} → ${to}${op.face_up ? "" : " (face down)"}`;
      }
      // A decision the timer took when the decision time ran out says so (the sheet's auto decision); one that
      // staked more says how much ("insurance $2.50").
      if (op.type === "action") {
        const staked = op.amount > 0 ? ` ${money(op.amount, currency)}` : "";
        return `${op.player}: ${actionWords(op.action)}${staked}, ${where}${op.by === "timer" ? " (by the timer: time ran out)" : ""}`;
      }
      if (op.type === "settled") {
        const what = op.item === "hand" ? capital(where)
          : `${op.item === "insurance" ? "Insurance" : sideName(op.item)}, ${namer.name(op.seat, op.hand, true)}`;
        // In the past, as the history says it ("won", "lost"): the replay read "Hand 1: win" beside it (a trial).
        const result = op.item === "hand" || op.item === "insurance" ? pastOutcome(op.result)
          : sideLine(op.item, op.result, sideLines[op.item] || {});
        return `${what}: ${result}, returned ${money(op.returned, currency)}`;
      }
      if (op.type === "bets") {  // the side bets too: before, a replay named the main bet alone (found by a trial)
        const sides = Object.entries(op.side_bets || {}).filter(([, amount]) => amount > 0)
          .map(([name, amount]) => `${sideName(name)} ${money(amount, currency)}`);
        const at = !shared && op.spot ? `on hand ${op.spot}` : `at seat ${op.seat}`;
        return `${op.player} bets ${money(op.bet, currency)} ${at}${sides.length ? `, ${sides.join(", ")}` : ""}`;
      }
      if (op.type === "peek") return `dealer checks for blackjack: ${op.blackjack ? "blackjack" : "none"}`;
      if (op.type === "hole") return `dealer turns over ${cardText(op.card)}`;
      return op.type;
    };
    const lines = replay.operations.map((op) => {
      const line = describe(op, namer.name(op.seat, op.hand));
      namer.passed(op);  // a split numbers the circle's hands from the next line on
      return line;
    });
    const verify = el("p", { id: "verification" });
    // The count of steps says how long the list is: in a scrolling box on a phone, round #18 looked as if it ended
    // early (found by a trial). On a phone the list now grows instead (style.css).
    target.replaceChildren(el("h2", {}, `Round #${roundId}`, el("span", { class: "steps", id: "replay-steps" },
      ` · ${lines.length} step${lines.length === 1 ? "" : "s"}`)), el("ol", { class: "operations" },
      ...lines.map((line) => el("li", {}, line))),
    el("button", { type: "button", id: "verify", onclick: async () => {
      try {
        const proof = await api("GET", `/rounds/${roundId}/verify`);
        verify.textContent = proof.valid
          ? `Verified: SHA-256 ${proof.commitment} matches the revealed shoe, and this round's ${proof.drawn.length} cards came from it in order.`
          : "NOT verified: the revealed shoe does not match its commitment.";
      } catch (error) { verify.textContent = error.message; }
    } }, "Verify the shuffle"), verify);
    // Brought into view: on a phone it is drawn below ten rounds' cards, some 5,000 px down, and the press seemed to
    // do nothing (a trial of players).
    target.scrollIntoView({ block: "start" });
  } catch (error) { target.textContent = error.message; }
}

// ------------------------------------------------------ settings, limits
async function renderSettings() {
  if (!(await ensureMe())) { location.hash = "#/"; return; }
  const settings = state.me.settings;
  const labels = { cash_out_visible: "Show the CASH OUT option", sound: "Sound", hints: "Strategy hints (EV of each action)" };
  const root = view();
  root.replaceChildren(el("section", { class: "panel" }, el("h1", {}, "Settings"),
    ...Object.entries(labels).map(([key, text]) => el("label", { class: "toggle" },
      el("span", {}, el("input", { type: "checkbox", name: key, checked: settings[key], onchange: async (event) => {
        try {
          await api("PUT", "/me/settings", { [key]: event.target.checked });
          await ensureMe();
          announce("Settings saved to your profile.");
        } catch (error) { showError(error); }
      } }), ` ${text}`)))));
}

async function renderLimits() {
  if (!(await ensureMe())) { location.hash = "#/"; return; }
  if (!Object.keys(state.tables).length) await loadTables().catch(() => null);
  const limits = state.me.limits;
  // The loss limit is one amount in minor units of each currency: said in the tables' money too ("$50.00 or
  // €50.00 a day"), where "50.00" alone named no currency (a trial of players).
  const currencies = [...new Set(Object.values(state.tables).map((table) => table.currency))].sort();
  const inMoney = (amount) => (currencies.length
    ? ` a day (${currencies.map((currency) => money(amount, currency)).join(", ")})` : " a day");
  // A raise or a removal waiting out its day: " (to be raised to 50.00 at 2026-12-01 17:00 UTC)".
  const waiting = (name, text) => {
    const change = (limits.pending || {})[name];
    if (!change) return "";
    // Said as still to come: "(removed from ...)" read as done already (a trial of players).
    return change.value === null ? ` (to be removed at ${utc(change.from)})`
      : ` (to be raised to ${text(change.value)} at ${utc(change.from)})`;
  };
  // A limit set, and not already on its way out, may be removed: after 24 hours, as a raise. Before, none could be
  // (an integrator's trial): a limit set once stayed for good, however high it was raised.
  const removal = (name, words) => {
    const change = (limits.pending || {})[name];
    if (limits[name] === undefined || limits[name] === null || (change && change.value === null)) return [];
    return [" ", el("button", { type: "button", class: "inline-action", "data-remove": name, onclick: async () => {
      try {
        await api("PUT", "/me/limits", { [name]: null });
        await ensureMe();
        renderLimits();
        announce(`Limits saved. The ${words} is removed in 24 hours.`);
      } catch (error) { message.textContent = error.message; }
    } }, "Remove")];
  };
  const message = el("p", { role: "status" });
  // "Limits saved." is about the limits as saved: an edit after it clears it (before, it stayed: a trial).
  const editing = () => {
    const banner = document.getElementById("announce");
    if (banner.textContent.startsWith("Limits saved.")) announce("");
    message.textContent = "";
  };
  const root = view();
  root.replaceChildren(el("section", { class: "panel" },
    el("h1", {}, "Responsible gaming"),
    el("p", {}, "Gambling should be entertainment. Set limits that the server enforces for you; for help, contact a "
      + "support service in your country."),
    el("p", {}, "A lower limit applies at once; a higher one, or removing one, after 24 hours. Self-exclusion can "
      + "be made longer, never shorter."),
    el("ul", {},
      // The words in a span of their own, the Remove button beside them.
      el("li", {}, el("span", {}, `Daily loss limit, in each currency: ${limits.daily_loss_limit === undefined ? "none"
        : (limits.daily_loss_limit / 100).toFixed(2) + inMoney(limits.daily_loss_limit)}`
        + waiting("daily_loss_limit", (v) => (v / 100).toFixed(2))), ...removal("daily_loss_limit", "daily loss limit")),
      // What is left of it today, in each currency the casino's tables play in (GET /me's `loss_room`).
      state.me.loss_room ? el("li", { id: "loss-left" }, "Left to stake today: " + (currencies.length ? currencies
        : Object.keys(state.me.loss_room)).filter((currency) => currency in state.me.loss_room)
        .map((currency) => money(state.me.loss_room[currency], currency)).join(", ")) : null,
      el("li", {}, el("span", {}, `Session time limit: ${limits.session_minutes
        ? minutesText(limits.session_minutes) : "none"}` + waiting("session_minutes", minutesText)),
      ...removal("session_minutes", "session time limit")),
      el("li", {}, `Self-exclusion: ${limits.excluded_until
        ? `until ${utc(limits.excluded_until)} (${localTime(limits.excluded_until)} your time)` : "none"}`)),
    // The limit reached is said here too, with when play resumes: before, this page said nothing of it while every
    // table refused a bet (found by a trial of players).
    sessionOverLine() ? el("p", { class: "exclusion", id: "session-over", role: "status" }, sessionOverLine()) : null,
    el("form", { class: "inline", oninput: editing, onsubmit: async (event) => {
      event.preventDefault();
      const form = event.target;
      const body = {};
      if (form.elements.loss.value) body.daily_loss_limit = Math.round(Number(form.elements.loss.value) * 100);
      if (form.elements.minutes.value) body.session_minutes = Number(form.elements.minutes.value);
      if (form.elements.exclude.value) body.exclude_days = Number(form.elements.exclude.value);
      try {
        const answer = await api("PUT", "/me/limits", body);
        await ensureMe();
        // A self-exclusion returns the bets never dealt: said as the table says it, each in its own table's currency.
        const returned = answer.returned_bets || [];
        if (returned.length && returned.some((b) => !returnedIn(b))) await loadTables().catch(() => null);
        renderLimits();
        announce(returned.length ? `Limits saved. Your undealt bets were returned: ${returnedTotals(returned)}.`
          : "Limits saved.");
      } catch (error) { message.textContent = error.message; }
    } },
    el("label", {}, "Daily loss limit", el("input", { name: "loss", type: "number", min: "0", step: "0.01" })),
    el("label", {}, "Session minutes", el("input", { name: "minutes", type: "number", min: "1" })),
    el("label", {}, "Exclude me for days", el("input", { name: "exclude", type: "number", min: "1" })),
    el("button", { type: "submit" }, "Save limits")), message));
}

// ---------------------------------------------------------------- router
async function route() {
  announce("");
  closeSignOutQuestion();  // asked on another page: the question goes with it
  clearInterval(state.timer);
  const hash = location.hash || "#/";
  const table = currentTableId();
  const left = leaveRound(table);  // said where the player goes, once it is drawn
  if (!table) {
    leaveTable();
    document.body.className = "";
  }
  try {
    await ensureMe();
    if (table) await openTable(table, ensureMe);
    else if (hash === "#/history") await renderHistory();
    else if (hash === "#/settings") await renderSettings();
    else if (hash === "#/limits") await renderLimits();
    else await renderLobby();
    if (left) announce(left.words + (left.toPlay ? " Go back to the table to play it." : ""));
  } catch (error) { showError(error); }
  if (!table) atTop();  // a table's page places itself (renderTable)
}

/** A page opens at its top, focused for a screen reader to read from there. A plain focus() scrolled the page by the
 * header's height on a phone (the view is taller than the screen), a page opened from a scrolled one stayed as far
 * down, and after signing in the focus was left on nothing (a trial of players). */
function atTop() {
  view().focus({ preventScroll: true });
  window.scrollTo(0, 0);
}

function forgetSignIn() {
  // The browser's stored sign-in only if it is this tab's: another tab may have signed in anew meanwhile (review).
  if (localStorage.getItem("twentyone.token") === state.token) localStorage.removeItem("twentyone.token");
  state.token = null;
  state.me = null;
  leaveTable();
  if (location.hash && location.hash !== "#/") history.pushState(null, "", "#/");  // no hashchange: routed once, here
  renderAccount();
  route();
}

// A guest's sign-out is asked for again, in a banner under the header: it discards the guest's account, balance and
// history for good (a guest has no password to sign back in with). Before, one click did it (found by a trial).
// A registered player signs out at once.
function closeSignOutQuestion() {
  const asked = document.getElementById("sign-out-confirm");
  if (asked) asked.remove();
}

function askGuestSignOut() {
  closeSignOutQuestion();
  const stay = el("button", { type: "button", id: "sign-out-stay", onclick: () => {
    closeSignOutQuestion();
    document.getElementById("sign-out").focus();
  } }, "Stay signed in");
  const question = el("div", { class: "announce confirm", id: "sign-out-confirm", role: "alertdialog",
    "aria-labelledby": "sign-out-words", onkeydown: (event) => { if (event.key === "Escape") stay.click(); } },
  el("p", { id: "sign-out-words" }, "Sign out of this guest account for good? A guest cannot sign back in: its "
    + "balance and its history are lost."),
  el("div", { class: "controls" },
    el("button", { type: "button", class: "danger", id: "sign-out-confirmed", onclick: () => {
      closeSignOutQuestion();
      signOut();
    } }, "Sign out for good"),
    stay));
  document.querySelector(".topbar").after(question);
  stay.focus();
}

document.getElementById("sign-out").addEventListener("click", () => {
  if (state.me && state.me.guest) askGuestSignOut();
  else signOut();
});

async function signOut() {
  // The server ends the sign-in (its token is refused from then on) and returns bets never dealt, which the page says;
  // it forgets the token even where the server cannot be reached. The table's socket is closed first: its news of the
  // returned bets made the page read the table again under the ended sign-in, and the refusal's words for a request
  // without one ("Sign in first: send the bearer token…") stood over the lobby, the bets' notice lost (a trial).
  // A round of theirs goes on where another sign-in of the player's is left (another device; a browser closed without
  // signing out): the server returns bets only when the last one ends, so the page says which round goes on.
  const round = state.table && state.table.round;
  const guest = Boolean(state.me && state.me.guest);  // a guest cannot sign in again
  const left = leaveRound(null);
  closeSocket();
  let returned = [];
  let unreached = false;
  try {
    returned = (await api("POST", "/auth/logout")).returned_bets || [];
  } catch (error) {
    unreached = Boolean(error.noAnswer);
    if (error.status !== 401 && !unreached) console.warn("sign-out:", error.message);
  }
  forgetSignIn();
  const words = unreached ? ["The server could not be reached: the sign-in ends by itself when it expires."] : [];
  if (returned.length) {
    words.push(`Your undealt bets were returned: ${returnedTotals(returned)}.`);
  }
  if (left && !returned.some((b) => b.round_id === round.id)) {
    words.push(left.words + (left.toPlay && !guest ? " Sign in again to play it." : ""));
  }
  if (words.length) announce([unreached ? "Signed out of this browser." : "Signed out.", ...words].join(" "));
}

// A table's socket closed because this sign-in ended elsewhere ("sign out everywhere") or expired.
window.addEventListener("twentyone:signed-out", () => {
  forgetSignIn();
  announce("You were signed out: sign in again to play.");
});

window.addEventListener("hashchange", route);
route();
