// The table page: state from the server, the requests a player makes, and the felt drawn from them.

import { OFFER_TITLES, answers, bettingBar, chipInHand, closedBar, decisions, offerPanel, status, whoDecides, wire }
  from "./bar.js";
import { chipStack } from "./chips.js";
import {
  announce, api, el, exclusionLine, isSessionOver, keyed, sessionBreakLeft, sessionEndsIn, sessionOverLine, showError,
  state, view,
} from "./dom.js";
import { betsTotal, money, signed } from "./money.js";
import {
  dealerArea, dealingFor, handNamer, myHands, otherDecider, othersStrip,
  resultSummary, roundCurrency, sideResult, sideTitle,
} from "./round.js";

const ended = (round) => round && (round.status === "settled" || round.status === "void");

export function currentTableId() {
  const match = location.hash.match(/^#\/table\/(.+)$/);
  return match ? decodeURIComponent(match[1]) : null;
}

// Requests go one after the other, in the order the player made them (a quick chip-then-spot is two clicks kept).
let queue = Promise.resolve();
function serial(work) {
  queue = queue.then(work, work);
  return queue;
}

// A table event re-reads the table after the player's own requests, never in the middle of one; events that
// arrive together are read once.
let refreshQueued = false;
function refreshSoon(tableId) {
  if (refreshQueued) return;
  refreshQueued = true;
  serial(async () => {
    refreshQueued = false;
    await refreshTable(tableId);
  });
}

// Another tab or device of this player's changes what this page shows without a table event: bets on the slip, or a
// choice at a common-draw step (which is news to nobody). So the page reads the table again whenever it comes back into
// view or takes the focus. Before, a second tab went on showing a slip the server no longer held, and HIT and STAND
// for a step already chosen in the other tab (found by a trial with two tabs).
// A return raises both events, one after the other: one read serves them (each made its own, found by review).
let returnReadAt = 0;
function readAgainOnReturn() {
  const tableId = currentTableId();
  if (!tableId || !state.table || state.table.table.id !== tableId || document.visibilityState !== "visible"
      || Date.now() - returnReadAt < 1000) return;
  returnReadAt = Date.now();
  refreshSoon(tableId);
}
window.addEventListener("focus", readAgainOnReturn);
document.addEventListener("visibilitychange", readAgainOnReturn);

// A refused decision's words belong to the step it was refused at: the round's next step, or its end, clears them.
// Before, a second tab's refused STAND stayed over the table after the round had settled (found by a trial). Both
// sides of the comparison are the round as shown (a read with what was heard since), and a step heard without a read
// (finishedStep) clears them too.
let refusal = null;  // { text, step }: the words shown and the step they were said at
const stepOf = (round) => (round
  ? [round.id, round.status, round.deadline || (round.decision && round.decision.deadline), round.legal_actions].join("|")
  : "");

function clearRefusalIfMovedOn(round) {
  if (!refusal || stepOf(round) === refusal.step) return;
  if (document.getElementById("announce").textContent === refusal.text) announce("");
  refusal = null;
}

// Words about the table as it was (bets a reconnection returned) are cleared by the next round the felt shows: before,
// "Your undealt bets were returned: $1.00." after a reload stayed through the next round and its result (a trial).
let notice = null;  // { text, at }: the words, and the round the felt showed when they were said (0: none)

function sayUntilNextRound(text, shownId = undefined) {
  announce(text);
  // Without `shownId`, the felt's round is taken at its next drawing: the read may still be coming.
  notice = { text, at: shownId };
}

function clearNoticeIfNextRound(shownId) {
  if (!notice) return;
  if (notice.at === undefined) notice.at = shownId;
  if (shownId === notice.at) return;
  if (document.getElementById("announce").textContent === notice.text) announce("");
  notice = null;
}

// ------------------------------------------------------------------ state from the server
export async function openTable(tableId, ensureMe) {
  if (!state.me) {
    location.hash = "#/";
    return;
  }
  const entering = !state.table || state.table.table.id !== tableId;
  if (entering) {
    state.finished = null;  // a table change clears the last round and its result
    state.watching = null;
    state.followed = 0;
    state.watched = new Set();  // shared rounds this page saw in play, and the last one shown to it as watched
    state.heard = [];  // bets and steps heard over the socket, kept until a table read has them (othersBets)
    state.watchedShown = 0;
    state.seen = new Map();
    showResult(null);
  }
  state.ensureMe = ensureMe;
  if (!Object.keys(state.tables).length) {
    const { tables } = await api("GET", "/tables");
    state.tables = Object.fromEntries(tables.map((table) => [table.id, table]));
  }
  connectSocket(tableId);
  await refreshTable(tableId);
  if (entering) await showMissedResult(tableId);
}

const MISSED_FOR_MS = 60 * 60 * 1000;  // a result missed within the hour is shown on return; older ones are history
// The last round whose result this browser showed at a table, and a round the player left going on there (for its
// result on return). By table: one key for all let a result seen at one table hide another's missed one (review).
const shownKey = (tableId) => `twentyone.shown.${state.me.id}.${tableId}`;
const leftKey = (tableId) => `twentyone.left.${state.me.id}.${tableId}`;

/** The missed round to show at a table, if any: the player's newest round (page closed, connection lost: the timer
 * stood for them), or one they left going on there for another table, whose rounds are the newest since. */
async function missedRound(tableId) {
  const last = (await api("GET", "/me/history?size=1")).rounds[0];
  if (last && last.table_id === tableId) {
    const recent = last.status === "settled" && last.settled_at && Date.now() - Date.parse(last.settled_at) <= MISSED_FOR_MS;
    return recent ? last.id : null;
  }
  // Left for another table (found by a trial: its result was never shown, the newest round being the other table's).
  const left = JSON.parse(localStorage.getItem(leftKey(tableId)) || "null");
  return left && Date.now() - left.at <= MISSED_FOR_MS ? left.id : null;
}

/** A round of the player's that settled while they were away is shown when they come back to its table, once. */
async function showMissedResult(tableId) {
  // This table's state alone: the hello's read may still be coming, with the last table's state still held (review).
  const playingHere = () => Boolean(state.table && state.table.table.id === tableId && state.table.round
    && state.table.round.status === "playing");
  if (playingHere()) return;
  try {
    const id = await missedRound(tableId);
    if (id === null || localStorage.getItem(shownKey(tableId)) === String(id)) return;
    const missed = await api("GET", `/rounds/${id}`);
    if (ended(missed)) localStorage.removeItem(leftKey(tableId));
    if (missed.status !== "settled" || currentTableId() !== tableId || playingHere()) {
      return;  // still in play (shown when it ends), void, or the player went on meanwhile (another table, a deal)
    }
    finish(missed, { quiet: true });  // no beep on opening a page: nothing the player did (and a browser refuses it)
    // Its cards with its result: the felt shows the finished round only when drawn again (before, the banner named
    // the result over an empty felt until some later event redrew it; found by a trial of a shared table).
    if (state.table && state.table.table.id === tableId) renderTable();
    // Until the felt shows another round: before, it stayed through the next two rounds (a trial of players).
    sayUntilNextRound(`Round #${id} was settled while you were away.`, id);
  } catch { /* only a courtesy: the table itself is shown */ }
}

let latest = 0;
let shownRead = 0;  // the read whose answer the page shows

// A player's bets on the round being formed come with what the page shows of them (their seat, among the first
// ones every view lists, and the count; the first bets of a round, the round itself), so the page adds them itself
// rather than read the table: at a power table of a thousand, every page reading it on every join kept the server
// from taking the bets. Each is kept until a table read that started after it, which has it; a read that started
// before would drop it again.
function othersBets(event) {
  if (event.seat_count === undefined || !state.table) return false;
  const tableId = state.table.table.id;
  if (state.me && event.player_id === state.me.id) {
    // This player's own bets: the page that placed them reads the round after its DEAL's answer, which the event
    // can overtake; after that read (requests go one after the other), only a page still without them reads it.
    serial(async () => {
      const now = state.table && state.table.round;
      if (currentTableId() === tableId && !(now && now.id === event.round_id && now.me)) await refreshTable(tableId);
    });
    return true;
  }
  const round = state.table.round;
  // Held: the page has the round, or has heard it opened and not drawn it yet (its requests go one at a time).
  const held = (round && round.status === "betting" && round.id === event.round_id)
    || state.heard.some((heard) => heard.round && heard.roundId === event.round_id);
  const opens = event.round && (!round || round.id < event.round_id);
  if (!held && !opens) return false;
  state.heard.push({ roundId: event.round_id, round: event.round || null, seat: event.seat || null,
    count: event.seat_count, readsBefore: latest });
  serial(async () => {
    if (!state.table || state.table.round !== round) return;  // a read since has the round as it is
    state.table.round = withHeard(round, shownRead);
    renderTable();
  });
  return true;
}

// A common draw's step done, told to a player who has finished (stood, or busted: no decision left, no card coming).
// Their round shows nothing new but the step's clock, which the event carries: at a power table most of a thousand
// pages would otherwise read the table at every step. One who has answered the insurance offers and waits for the
// others has a hand still in play: the step's end gives them their decision, which only a read shows (before, their
// page kept waiting and the timer stood for them: found by a trial).
function finishedStep(event) {
  const round = state.table && state.table.round;
  if (event.status !== "playing" || event.deadline === undefined || !round || round.id !== event.round_id
      || round.status !== "playing" || !round.others_withheld || !round.me || round.legal_actions.length
      || round.drawing || round.hands.some((hand) => hand.player_id === state.me.id && hand.status === "playing")) {
    return false;
  }
  state.heard.push({ roundId: event.round_id, deadline: event.deadline, readsBefore: latest });
  round.deadline = event.deadline;
  clearRefusalIfMovedOn(round);
  startTimers(round);
  return true;
}

/** The round read (or held), with what was heard of it since that read started. */
function withHeard(round, read) {
  state.heard = state.heard.filter((heard) => heard.readsBefore >= read);
  for (const heard of state.heard) {
    if (heard.round && (!round || round.id < heard.roundId)) round = structuredClone(heard.round);
  }
  if (!round) return round;
  for (const { roundId, seat, count, deadline } of state.heard) {
    if (roundId !== round.id) continue;
    if (deadline !== undefined && round.status === "playing") round.deadline = deadline;  // a step since
    if (round.status !== "betting") continue;
    if (seat && !round.seats.some((s) => s.player_id === seat.player_id)) round.seats.push(seat);
    if (count !== undefined) round.seat_count = Math.max(round.seat_count ?? round.seats.length, count);
  }
  if (round.status === "betting") round.seats.sort((a, b) => a.position - b.position);
  return round;
}

export async function refreshTable(tableId) {
  const mine = ++latest;
  try {
    const data = await api("GET", `/tables/${tableId}`);
    const round = data.round;
    if (round && round.me) follow(round.id);
    // The round this player was in has left the table: it ended, so its result is shown.
    if (state.watching && (!round || round.id !== state.watching)) {
      const last = await api("GET", `/rounds/${state.watching}`).catch(() => null);
      if (!last || ended(last)) state.watching = null;
      if (ended(last)) finish(last);
    }
    // A shared round settles the moment its last decision is taken: one who only watched it (on this page) is shown
    // how it ended, once (the server sends it for a minute while no round is in play), until the next is dealt.
    if (round && round.status === "playing") state.watched.add(round.id);
    const watched = data.last_round;
    if (watched && state.watched.has(watched.id) && watched.id > state.watchedShown && !(round && round.me)
        && !state.watching) {
      state.watchedShown = watched.id;
      state.finished = watched;
      showResult(watched);
    }
    if (round && state.finished && round.id > state.finished.id && (round.status === "playing" || round.me)) {
      clearFinished();
    }
    if (mine !== latest || currentTableId() !== tableId) return;  // a newer refresh is on its way
    // A table closed while this page showed it keeps the name the page showed: its stand-in knows its id alone
    // ("vip (closed)" where the player sat at "VIP": noted by a trial).
    if (data.table.closed && state.table && state.table.table.id === tableId) data.table.name = state.table.table.name;
    state.table = data;
    shownRead = mine;
    data.round = withHeard(round, mine);
    clearRefusalIfMovedOn(data.round);
    state.hints = null;
    if (round && round.legal_actions.length && state.me.settings.hints) {
      state.hints = await api("GET", `/rounds/${round.id}/hint`).catch(() => null);
      if (mine !== latest) return;
    }
    renderTable();
    // The header's balances follow the table's; a self-exclusion or a session limit set elsewhere (another tab,
    // another device) is learnt here too, and the bet controls are drawn again with it (and its timer set).
    if (state.ensureMe) {
      const kept = keptFromPlay();
      state.ensureMe().then(() => {
        if (keptFromPlay() !== kept && state.table && currentTableId() === tableId) renderTable();
      }).catch(() => { /* the table is shown; the header waits for the next read */ });
    }
  } catch (error) {
    if (error.status === 404 && currentTableId() === tableId) {
      tableGone(tableId, error.message);
      return;
    }
    showError(error);
  }
}

// A table the operator removed (its table-closed event) is gone to a player who never played there: the page goes
// back to the lobby and says so. Before, it kept the felt and its bet controls, each answered "There is no table".
// One who has a round there is shown the table closed instead (the server's stand-in), and plays it out.
let closedHeard = null;  // the table whose table-closed event this page heard

function tableGone(tableId, why) {
  const name = state.table && state.table.table.id === tableId ? state.table.table.name : tableId;
  const words = closedHeard === tableId ? `The table ${name} was closed by the casino.` : why;
  window.addEventListener("hashchange", () => announce(words), { once: true });  // after the lobby's own reset
  location.hash = "#/";
}

/** A round of this player's that the page follows: read until it ends, then its result is shown (refreshTable). */
function follow(roundId) {
  state.watching = roundId;
  state.followed = Math.max(state.followed, roundId);
}

function finish(round, { quiet = false } = {}) {
  state.followed = Math.max(state.followed, round.id);
  if (state.finished && state.finished.id === round.id) return;
  if (round.table_id) localStorage.setItem(shownKey(round.table_id), String(round.id));
  state.finished = round;
  state.watching = null;
  showResult(round);
  if (!quiet) beep(round.me && round.me.returned > round.me.staked ? 880 : 330);
}

function clearFinished() {
  state.finished = null;
  showResult(null);
}

/** The result banner: it always names the round it belongs to, and is cleared with it. */
function showResult(round) {
  const banner = document.getElementById("result");
  if (!round) {
    banner.replaceChildren();
    banner.hidden = true;
    delete banner.dataset.round;
    return;
  }
  const { title, items, net } = resultSummary(round);
  const fresh = banner.dataset.round !== String(round.id);
  banner.hidden = false;
  banner.dataset.round = round.id;
  banner.className = `result ${net > 0 ? "won" : net < 0 ? "lost" : "even"}`;
  banner.replaceChildren(el("strong", {}, title), el("ul", {}, ...items.map((item) => el("li", {}, item))));
  // The player's own round's result is brought into view as it ends, at its table: on a phone the page had followed
  // the active hand down, and the banner above it was out of sight when the round ended (a trial of players). A round
  // only watched is left where the player is (betting, say), and so is any other page.
  if (fresh && round.me && currentTableId() === round.table_id && banner.getBoundingClientRect().top < 0) {
    banner.scrollIntoView({ block: "start" });
  }
}

const SIGNED_OUT = 4401;  // the server closed the socket because its sign-in ended
// How long bet controls wait for the next socket's hello (a proxy without WebSockets never sends one). A test may
// stretch it (window.twentyoneHelloWaitMs) where a busy machine takes seconds to draw the page.
const HELLO_WAIT_MS = Number(window.twentyoneHelloWaitMs) || 5000;

// Every new socket of the player's is a reconnection: before its hello the server returns their bets never dealt
// (the sheet's disconnection policy). So a bet control waits for the hello of a socket being opened, or of the next
// one after a lost line, and cannot be taken back by this page's own connection. Before, on a busy server, a quick
// chip and spot went in before the socket's reconnection, which returned them at once: the slip emptied and DEAL
// stayed disabled (found in CI). Decisions and reads do not wait: a return touches only bets not dealt.
let helloGate = null;

function awaitHello() {
  const until = Date.now() + HELLO_WAIT_MS;
  if (helloGate) {
    helloGate.until = Math.max(helloGate.until, until);
    return;
  }
  let open;
  const opened = new Promise((resolve) => { open = resolve; });
  helloGate = { opened, open, until };
}

function helloHeard() {
  if (helloGate) helloGate.open();
  helloGate = null;
}

const CONNECTING = "Connecting to the table…";

/** Resolves once the awaited hello came, or after HELLO_WAIT_MS at most (at once when none is awaited). A line that
 * stays down (the server unreachable: each new socket fails in turn) holds each control that long, no longer: it is
 * then sent, and its own failure says what happened. A wait that lasts is said. */
async function helloWaited() {
  const gate = helloGate;
  if (!gate) return;
  const latest = Date.now() + HELLO_WAIT_MS;
  const said = setTimeout(() => announce(CONNECTING), 500);
  let left;
  try {
    while (helloGate === gate && (left = Math.min(gate.until, latest) - Date.now()) > 0) {
      await Promise.race([gate.opened, new Promise((resolve) => { setTimeout(resolve, left); })]);
    }
  } finally {
    clearTimeout(said);
  }
  if (helloGate === gate && gate.until <= Date.now()) helloGate = null;
  if (document.getElementById("announce").textContent === CONNECTING) announce("");
}

function connectSocket(tableId) {
  if (state.socket && state.socket.tableId === tableId) return;
  if (state.socket) state.socket.close();
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const socket = new WebSocket(`${scheme}://${location.host}/ws/tables/${tableId}?token=${state.token}`);
  socket.tableId = tableId;
  awaitHello();
  socket.onmessage = (message) => {
    const event = JSON.parse(message.data);
    if (event.type === "hello" && state.socket === socket) {
      socket.heard = true;
      helloHeard();
      // The table is read again once the socket is heard: the server sends each event to the sockets it holds when
      // the event happens, and the read made on entering the table (or on reconnecting) may have been answered before
      // this socket was held. An event between the two (a round opened or dealt by another player, another page's
      // deal) was lost, and the page showed the table as it was until something else made it read (an audit: one
      // page in four was not yet listening when its first read was drawn, on a loaded machine).
      if (currentTableId() === tableId) refreshSoon(tableId);
    }
    const currency = state.table ? state.table.table.currency : undefined;
    if (event.type === "hello" && event.returned_bets && event.returned_bets.length) {
      // Each in the currency of the table it was on, which need not be this one.
      const returned = event.returned_bets.map((b) => money(b.total, b.currency || (state.tables[b.table_id] || {}).currency));
      // The table is read again (above): one read while the socket connected would show the bets still on the spots
      // and the balance without them (DEAL then finds no bet).
      sayUntilNextRound(`Your undealt bets were returned: ${returned.join(", ")}.`);
    }
    if (event.type === "bets-returned" && state.me && event.player_id === state.me.id) {
      // A seat's bets are in its round's currency, which the event names (the table's may have changed since).
      const returnedIn = event.currency || currency;
      announce(event.total ? `Bets of ${money(event.total, returnedIn)} returned. ${event.reason}` : event.reason);
      // A seat that sat a round out at its close: where that round ends, the page says so, not "you watched it".
      if (event.round_id) {
        state.satOut.set(event.round_id, { total: event.total, reason: event.reason, currency: returnedIn });
        if (state.watching === event.round_id) state.watching = null;  // no seat of ours in it now: nothing to read
      }
    }
    if (currentTableId() !== tableId || event.type === "hello") return;
    if (event.type === "table-closed") closedHeard = tableId;
    // A private table's round of this player's that another page of theirs dealt (another tab, another device): this
    // page follows it as its own. Before, it showed the round only if a table read found it still in play, so one
    // dealt and settled at once (a blackjack), or played out before the read, was never shown here (found by a trial).
    if ((event.type === "round" || event.type === "void") && event.private && state.me
        && event.player_id === state.me.id && event.round_id > state.followed) follow(event.round_id);
    if (event.type === "bets" && othersBets(event)) return;
    if (event.type === "round" && finishedStep(event)) return;
    refreshSoon(tableId);
  };
  socket.onclose = (closed) => {
    if (state.socket !== socket) return;
    state.socket = null;
    if (closed.code === SIGNED_OUT) {  // this sign-in ended (signed out everywhere, or expired): not a lost line
      helloHeard();  // none is coming
      window.dispatchEvent(new CustomEvent("twentyone:signed-out", { detail: closed.reason }));
      return;
    }
    awaitHello();  // a bet made before the next socket's hello would be returned by it
    // A socket that closed without its hello (a proxy that lets none through, a server going down) tells nothing:
    // the table is read now, as it is after every failed try. One that had said hello leaves the read to the next
    // socket's hello: before, a reconnection read the table twice, and after a restart a power table's thousand
    // pages did so at once (review).
    if (!socket.heard && currentTableId() === tableId) refreshSoon(tableId);
    // Lost the connection while still at this table: come back, and pick the round up where it is. Spread over a
    // second: a server restarting loses every page's socket at the same moment.
    setTimeout(() => {
      if (currentTableId() === tableId && !state.socket && state.token) connectSocket(tableId);
    }, 2000 + Math.random() * 1000);
  };
  state.socket = socket;
}

/** The player leaves the table (for another, the lobby, or by signing out) while a round of theirs there goes on:
 * the round is remembered, for its result on return (:func:`showMissedResult`), and what becomes of it is said:
 * `{ words, toPlay }`, toPlay where a decision of theirs may still come. Null where no round of theirs goes on.
 * Before, nothing said so: the round was dealt, the timer stood for them, and the page they went to was silent, and
 * on return its result was not shown (found by a trial). */
export function leaveRound(nextTableId) {
  const at = state.table;
  const round = at && at.round;
  if (!round || !round.me || ended(round) || at.table.id === nextTableId || !state.me) return null;
  localStorage.setItem(leftKey(at.table.id), JSON.stringify({ id: round.id, at: Date.now() }));
  const name = at.table.name;
  if (round.status === "betting") {
    return { words: `Your bets at ${name} are in round #${round.id}, dealt when betting closes: a decision of yours `
      + "not made in time is made for you.", toPlay: true };
  }
  const toPlay = round.legal_actions.length > 0
    || round.hands.some((hand) => hand.player_id === state.me.id && hand.status === "playing");
  return toPlay
    ? { words: `Your round #${round.id} at ${name} goes on without you: a decision of yours not made in time is made `
      + "for you.", toPlay }
    : { words: `Your round #${round.id} at ${name} is being played out: its result is shown when you come back to the `
      + "table.", toPlay };
}

/** The table's socket closed: no more of its news (and no read it would make) reaches the page. */
export function closeSocket() {
  if (state.socket) {
    const socket = state.socket;
    state.socket = null;
    socket.close();
  }
}

export function leaveTable() {
  closeSocket();
  state.table = null;
  clearFinished();
}

// ------------------------------------------------------------------ requests
// Bet controls sent and not yet answered: a DEAL pressed meanwhile (D right after a spot) goes in line behind them
// rather than being lost on a button drawn before their answers.
let controlsInFlight = 0;
function control(path, body) {
  controlsInFlight += 1;
  return serial(async () => {
    await helloWaited();
    return controlNow(path, body);
  }).finally(() => { controlsInFlight -= 1; });
}

/** What keeps the player from play, as /me says: a change redraws the bet controls (and sets the session's timer). */
function keptFromPlay() {
  const session = (state.me && state.me.session) || {};
  return [exclusionLine(), sessionOverLine(), session.ends_at, session.break_ends_at].join("|");
}

// Each control, decision and offer answer looks for the table first: a felt still drawn while the page leaves the
// table (signing out: the lobby is drawn a moment later) has no table under it, and a click threw (review).
async function controlNow(path, body) {
  if (!state.table) return;
  const tableId = state.table.table.id;
  try {
    // A chip picked up after a round of the player's settled starts the next bet, as NEW BETS does: their hands
    // make way for the spots, the chip in hand. Before, the chip was taken with no spot to put it on until NEW BETS
    // was pressed (found by a trial). A round they only watched leaves the spots drawn: its result stays.
    if (path !== "chip" || ownFinished()) clearFinished();
    // A spot's maximum is said until the next bet action, taken or refused: before, a refusal of another kind left
    // it over spot 1 while the banner said something else (found by a trial).
    state.maxSpot = null;
    if (path === "bets") await pickCoveredChip(tableId);
    const answer = await api("POST", `/tables/${tableId}/${path}`, body);
    if (path !== "undo" && path !== "clear") learnTheNewSession();  // those two stake nothing: no session starts
    announce("");
    if (answer.slip) state.table.slip = answer.slip;
    if ("balance" in answer) state.table.balance = answer.balance;  // a credit made meanwhile shows at once
    if (answer.next_shoe) state.table.next_shoe = answer.next_shoe;  // a table's first is shuffled at its first control
    if (answer.id) {
      beep();
      follow(answer.id);
      state.seen = new Map();
      if (ended(answer)) finish(answer);
      await refreshTable(tableId);
      return;
    }
    renderTable();
  } catch (error) {
    if (error.data && error.data.maximum && body) state.maxSpot = { spot: body.spot, text: error.message };
    if (isSessionOver(error) && state.ensureMe) {  // said once, in the bar, which offers no bet control until the
      await state.ensureMe().catch(() => null);    // break ends (GET /me's session)
      if (sessionOverLine()) {
        announce("");
        renderTable();
        return;
      }  // the page's clock or /me disagrees with the server's refusal: its words are shown as they came (a review)
    }
    showError(error);
    // Refused (a self-exclusion made on another device, say): what the player may do is read again.
    if (error.status === 403 && state.ensureMe) await state.ensureMe().catch(() => null);
    // Refused in the table's present state: the balance may have moved elsewhere (a credit or a debit, a round at
    // another table), which a refusal such as "Doubling every bet needs £2,000.00 but the balance is £1,000.00."
    // tells of; the table is read again, so BALANCE is the server's. Before, the old one stayed until the next read
    // (found by a trial). The words stay: a read clears none.
    // A 403 too: a bet past the daily loss limit's room says what it leaves now, and the bar reads it again.
    if ((error.status === 409 || error.status === 403) && state.table && state.table.table.id === tableId) {
      await refreshTable(tableId);
      return;
    }
    renderTable();
  }
}

// The session's two moments, on one timer while the table shows. At its time limit the bet controls go and the
// break's line shows: before, they stayed, and the first press after it was refused (403) and only then said so
// (found by a trial). At the break's end they come back.
let sessionTimer = null;
const LONGEST_TIMER = 2 ** 31 - 1;  // ms: a browser fires a longer setTimeout at once

function setSessionTimer() {
  clearTimeout(sessionTimer);
  const breakLeft = sessionBreakLeft();
  if (breakLeft !== null) {
    sessionTimer = setTimeout(() => { if (state.table) renderTable(); }, breakLeft + 1000);
    return;
  }
  const limitIn = sessionEndsIn();
  if (limitIn !== null && limitIn + 1000 < LONGEST_TIMER) {
    sessionTimer = setTimeout(sessionLimitReached, limitIn + 1000);
  }
}

/** A bet control taken after the break starts the player's next session on the server: /me, read once, says when it
 * reaches the limit, for its timer (no DEAL may come to read it). */
function learnTheNewSession() {
  const session = state.me && state.me.session;
  if (!session || !session.ends_at || Date.parse(session.ends_at) > Date.now() || sessionOverLine()) return;
  if (state.ensureMe) state.ensureMe().then(() => { if (state.table) setSessionTimer(); }).catch(() => null);
}

/** The session's limit has passed: /me is read (the break's end is the server's, from the player's last round), and
 * the table, whose round in play no longer offers an action that adds a stake (the server's `without_new_stakes`). */
async function sessionLimitReached() {
  const tableId = currentTableId();
  if (!tableId || !state.table || state.table.table.id !== tableId) return;
  if (state.ensureMe) await state.ensureMe().catch(() => null);
  if (currentTableId() === tableId) refreshSoon(tableId);
}

/** The chip the bar shows chosen goes on the spot: where the balance no longer covers the server's chosen chip, the
 * bar shows the largest one it covers (bar.js, chipInHand), which is chosen first. Before, no chip looked chosen and a
 * spot answered "The balance does not cover another $500.00." (found by a trial). */
async function pickCoveredChip(tableId) {
  const slip = state.table && state.table.slip;
  const chip = slip ? chipInHand(slip) : null;
  if (chip === null || chip === slip.chip) return;
  const answer = await api("POST", `/tables/${tableId}/chip`, { chip });
  if (answer.slip && state.table) state.table.slip = answer.slip;
}

/** Whether the felt shows a finished round of the player's own hands, where the betting spots go. */
function ownFinished() {
  return Boolean(state.finished && state.me && state.finished.hands.some((hand) => hand.player_id === state.me.id));
}

function decide(action) {
  return serial(async () => {
    const round = state.table && state.table.round;
    if (!round || !round.legal_actions.includes(action)) return;
    const tableId = state.table.table.id;
    try {
      const answer = await api("POST", `/rounds/${round.id}/actions`, { action });
      if (state.table && state.table.table.id === tableId) state.table.round = answer;
      if (ended(answer)) finish(answer);
      await refreshTable(tableId);
    } catch (error) {
      showError(error);
      if ((error.status !== 409 && error.status !== 403) || !state.table) return;
      // Refused because the round is not where this page thought (chosen in another tab, the clock ran out; a 403:
      // the session's limit passed, and a double or a split adds a stake no more): the round is read again, so its
      // buttons are the ones it takes now, and the words stay until it moves on.
      if (error.status === 403 && state.ensureMe) await state.ensureMe().catch(() => null);
      await refreshTable(tableId);
      refusal = { text: error.message, step: stepOf(state.table && state.table.round) };
    }
  });
}

/** Answer every pending offer of this player at once: each hand as chosen (decline where not chosen). */
function answerOffers(choice) {
  return serial(() => answerOffersNow(choice));
}

async function answerOffersNow(choice) {
  if (!state.table) return;
  const tableId = state.table.table.id;
  let round = state.table.round;
  try {
    while (round && round.decision && OFFER_TITLES[round.decision.kind] && round.legal_actions.length) {
      const { seat, hand, kind } = round.decision;
      const yes = choice === undefined ? state.offerChoices[`${seat}.${hand}`] : choice;
      const { accept, decline } = answers(kind);
      round = await api("POST", `/rounds/${round.id}/actions`, { action: yes ? accept : decline });
    }
    state.offerChoices = {};
    if (ended(round)) finish(round);
  } catch (error) { showError(error); }
  await refreshTable(tableId);
}

function nextRound() {
  clearFinished();
  renderTable();
}

// The server answers again after "No answer" (dom.js): the table is read, to show what a button did meanwhile.
state.reconnected = () => {
  const tableId = currentTableId();
  if (tableId && state.table && state.table.table.id === tableId) refreshSoon(tableId);
};

wire({ control, decide, answerOffers, nextRound, redraw: () => renderTable(),
  controlsPending: () => controlsInFlight > 0 });

// ------------------------------------------------------------------ drawing
export function renderTable() {
  if (!state.table) return;  // the page left the table (a key or a timer after it): the next view is on its way
  const { table, slip, balance, round: current, next_shoe: nextShoe } = state.table;
  const focused = document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.focus : null;
  document.body.className = `theme-${table.theme} at-table`;
  const forming = current && current.status === "betting" ? current : null;
  // The round being formed deals from the next shoe: its commitment is the one to show (the page may hold the round
  // from an event, and the shoe it read before that).
  const shoeCommitment = (forming && forming.commitment) || (nextShoe && nextShoe.commitment);
  const playing = current && current.status === "playing" ? current : null;
  const shown = playing || state.finished;
  clearNoticeIfNextRound(shown ? shown.id : 0);
  const seatedForming = forming && forming.me;
  const inPlay = playing && playing.me;
  // Excluded from play: no bet control is offered (the server refuses each); a round in play goes on.
  const excluded = exclusionLine() || sessionOverLine();
  setSessionTimer();
  // A round taking bets whose every seat is taken (multiplayer's seven): no bet of this player's joins it, and bets
  // on the slip come back when it closes. The page says so and takes none; before, it said "bet to join" with DEAL
  // lit, DEAL was refused "The table is full", and the bets came back at the close (found by a trial).
  const full = Boolean(forming && !seatedForming && table.seats
    && (forming.seat_count ?? forming.seats.length) >= table.seats);
  const canBet = !table.closed && !excluded && !seatedForming && !inPlay && !(playing && !table.shared) && !full;
  // A round's money is in the round's currency, which a table whose currency changed since no longer has; the slip
  // and the balance are the table's, for the next round. Bets held in a forming round of another currency are not
  // taken from this balance.
  const betCurrency = seatedForming ? roundCurrency(forming) : inPlay ? roundCurrency(playing) : table.currency;
  const totalBet = seatedForming ? betsTotal(forming.me.bets) : inPlay ? playing.me.staked : slip.total;
  const onTable = inPlay || betCurrency !== table.currency ? 0 : totalBet;
  const available = balance === null ? null : balance - onTable;
  // The header's balance in this currency is the table's, and says what is on the table (app.js, renderAccount):
  // before, it showed $1,000.00 where the table showed $975.00 with $25.00 on the slip (found by a trial).
  state.tableMoney = available === null ? null : { currency: table.currency, available, onTable };
  if (state.drawAccount) state.drawAccount();
  // Too little to bet at all: under the table's smallest bet (its main minimum, or its smallest chip where that is
  // larger) with nothing on the slip. The bar says so and nothing is offered; before, REBET stayed lit and the spots
  // looked open, and each answered "The balance does not cover…" (found by a trial).
  const minimum = Math.max(table.limits.main[0], Math.min(...table.chips));
  const broke = Boolean(canBet && !seatedForming && slip.total === 0 && available !== null && available < minimum
    && betCurrency === table.currency);

  const felt = el("section", { class: `felt${table.shared ? " shared" : ""}`, "aria-label": table.name },
    el("div", { class: "table-head" },
      el("h2", {}, table.closed ? `${table.name} (closed)` : table.name),
      el("div", { class: "indicators" },
        // No balance (null): the casino's wallet holds none of this player's in the table's currency; a bet is refused
        // in its words.
        el("span", { class: "indicator", id: "balance" }, "BALANCE ",
          el("strong", {}, balance === null ? "not held in " + table.currency : money(balance - onTable, table.currency))),
        el("span", { class: "indicator", id: "total-bet" }, "TOTAL BET ", el("strong", {}, money(totalBet, betCurrency))),
        el("span", { class: "indicator timer", id: "timer" }))),
    dealerArea(shown),
    el("div", { class: "arc", "aria-hidden": "true" }, arcText(table.pays)),
    othersStrip(forming || shown));
  const decisionHere = playing && playing.legal_actions.length && !OFFER_TITLES[playing.decision.kind];
  if (shown && shown.hands.some((hand) => hand.player_id === state.me.id)) {
    felt.append(myHands(shown, null));
    const currency = roundCurrency(shown);
    // Each names its hand where the player has several, as the felt numbers them (before, "Perfect Pairs: lost · 21+3:
    // lost" with bets on hands 1 and 5: found by a trial); the result banner names them alike (round.js).
    const spot = handNamer(shown);
    // Side bets settled at the deal, and insurance taken and not yet settled (a game without the dealer's peek settles
    // it with the hands: until then nothing said what the balance had paid for).
    const early = [...shown.side_bets.filter((side) => side.player_id === state.me.id).map((side) => sideResult(side, currency, spot)),
      ...(shown.insurance_taken || []).map((cover) => `Insurance${spot(cover.seat)} taken: ${money(cover.stake, currency)}`
        + (table.pays && table.pays.insurance ? `, paid ${odds(table.pays.insurance)} on a dealer blackjack` : "")),
      ...insuranceLost(shown, currency, spot)];
    if (!ended(shown) && early.length) {
      felt.append(el("p", { class: "side-results", id: "side-results" }, early.join(" · ")));
    }
    if (ended(shown)) state.settledShown = shown.id;
  } else if (!table.closed && (!playing || table.shared)) {  // a closed table takes no bets: no spots
    felt.append(spots(table, slip, canBet && !broke, seatedForming ? forming.me.bets : null, betCurrency));
  }
  if (!table.closed) felt.append(el("details", { class: "panel limits", id: "limits" },
    el("summary", {}, "BET LIMITS"),
    el("ul", {}, ...Object.entries(table.limits).map(([type, [low, high]]) =>
      el("li", {}, `${type === "main" ? "Main bet" : sideTitle(type)}: ${money(low, table.currency)}–${money(high, table.currency)}`))),
    el("p", { class: "muted" }, shoeCommitment ? `Next shoe SHA-256: ${shoeCommitment}`
      : "Next shoe: shuffled, and its SHA-256 shown here, with the first bet.")),
    payouts(table), houseRules(table));

  let bar;
  // A decision waits for the cards in motion (the felt above has just been drawn) to land (round.js, dealingFor).
  const dealing = playing && playing.legal_actions.length ? dealingFor() : 0;
  if (playing && playing.legal_actions.length && OFFER_TITLES[playing.decision.kind]) bar = offerPanel(playing, dealing > 0);
  else if (decisionHere) bar = decisions(playing, dealing > 0);
  else if (inPlay || (playing && !table.shared)) bar = status(whoDecides(playing));
  else if (table.closed) bar = closedBar();
  else {
    bar = bettingBar(table, slip, { forming, seated: seatedForming, playing, canBet, excluded, full, available,
      broke: broke ? minimum : null, lossRoom: state.table.loss_room });
  }
  const actionBar = el("nav", { class: "action-bar", "aria-label": "Actions", id: "action-bar" }, bar);
  view().replaceChildren(felt, actionBar);
  fitBar(actionBar);
  clearTimeout(state.landedTimer);
  if (dealing > 0) {  // drawn again, pressable, once the cards have landed; the focus goes to the decisions then
    state.focusAfterDeal = focused || state.focusAfterDeal;
    state.landedTimer = setTimeout(() => { if (state.table) renderTable(); }, dealing + 20);
  } else {
    restoreFocus(focused || state.focusAfterDeal);
    state.focusAfterDeal = null;
  }
  // On a small screen the hand waiting for a decision is brought into view, beside the dealer.
  const active = view().querySelector(".hand.active");
  if (active) active.scrollIntoView({ block: "nearest" });
  // The seat the round waits for is brought into the strip of other seats, which scrolls sideways on a small screen
  // (before, it could be out of sight there: found by a trial on a phone). Sideways only: the page stays put.
  const strip = view().querySelector(".others");
  const deciding = strip && strip.querySelector(".seat.active");
  if (deciding) {
    const [shown, seat] = [strip.getBoundingClientRect(), deciding.getBoundingClientRect()];
    if (seat.left < shown.left) strip.scrollLeft -= shown.left - seat.left;
    else if (seat.right > shown.right) strip.scrollLeft += seat.right - shown.right;
  }
  startTimers(current);
}

// The fixed action bar's height, measured: the page's content ends above it (main's padding-bottom, style.css) and
// an element scrolled into view stops above it (html's scroll-padding-bottom), both from --bar-h. A fixed guess of
// 9.5rem on a phone was short of the bar's 10.3rem there (chips, then NEW BETS, UNDO, x2 and REBET on two lines):
// after a three-hand round Hand 3's "WIN +$25.00" lay under the bar (found by a trial of players).
const barSize = window.ResizeObserver ? new ResizeObserver((entries) => {
  const bar = entries[entries.length - 1].target;
  if (bar.isConnected) document.documentElement.style.setProperty("--bar-h", `${bar.getBoundingClientRect().height}px`);
}) : null;

function fitBar(bar) {
  if (!barSize) return;
  barSize.disconnect();
  barSize.observe(bar);
}

/** Insurance the dealer's peek settled as lost, while the hands play on: before, play went on silently and the loss
 * showed only in the end result (found by a trial of players). The round's `insurance` holds the settled ones. */
function insuranceLost(round, currency, spot) {
  return (round.insurance || []).filter((cover) => cover.player_id === state.me.id && cover.result !== "win")
    .map((cover) => `Insurance${spot(cover.seat)} lost: the dealer has no blackjack, `
      + `${signed(cover.returned - cover.stake, currency)}`);
}

/** A payout as words: "3:2" → "3 to 2". */
const odds = (ratio) => ratio.replace(":", " to ");

/** The PAYOUTS panel: what the game pays (the sheet's "Payouts"), and each side bet this table takes, line by line,
 * as the server settles them (GET /tables/{id}'s `pays`). */
function payouts(table) {
  const pays = table.pays;
  const main = [`Blackjack pays ${odds(pays.blackjack)}.`, `A winning hand pays ${odds(pays.win)}.`];
  if (pays.insurance) main.push(`Insurance pays ${odds(pays.insurance)}${pays.even_money ? "; a blackjack is offered even money" : ""}.`);
  if (pays.cash_out) main.push(`Cash out pays ${pays.cash_out.map((factor) => factor.toFixed(2)).join("–")} times the main bet, by the hand and the dealer's up card.`);
  const sides = Object.keys(table.limits).filter((name) => name !== "main" && pays.side_bets[name]);
  return el("details", { class: "panel limits payouts", id: "payouts" },
    el("summary", {}, "PAYOUTS"),
    el("ul", {}, ...main.map((line) => el("li", {}, line))),
    ...sides.map((name) => el("div", { class: "paytable" },
      el("h3", {}, sideTitle(name)),
      el("table", {}, el("tbody", {}, ...pays.side_bets[name].map(([line, pays]) =>
        el("tr", {}, el("td", {}, (table.side_bet_lines[name] || {})[line] || line), el("td", {}, `${pays} to 1`))))))));
}

/** The RULES panel: the game's rules as its sheet gives them, one sentence each (GET /tables' `house_rules`): a player
 * needs them before doubling or splitting, and the page listed payouts only (found by a trial of players). */
function houseRules(table) {
  const lines = table.house_rules || [];
  if (!lines.length) return null;  // a server before house_rules (a rolling upgrade)
  return el("details", { class: "panel limits rules", id: "rules" },
    el("summary", {}, "RULES"),
    el("ul", {}, ...lines.map((line) => el("li", {}, line))));
}

/** The words printed on the felt: what blackjack and insurance pay at this game (`pays` holds only "N:M" ratios). */
function arcText(pays) {
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("viewBox", "0 0 600 70");
  svg.innerHTML = '<path id="arc-path" d="M40 10 Q300 110 560 10" fill="none"/>'
    + `<text><textPath href="#arc-path" startOffset="50%" text-anchor="middle">BLACKJACK PAYS ${odds(pays.blackjack).toUpperCase()}`
    + `${pays.insurance ? ` · INSURANCE PAYS ${odds(pays.insurance).toUpperCase()}` : ""}</textPath></text>`;
  return svg;
}

/** The betting spots: the slip's bets, or the player's bets in the round being formed (`seatedBets`), in
 * `currency`. */
function spots(table, slip, canBet, seatedBets, currency) {
  const bets = {};
  for (const b of slip.bets) bets[`${b.spot}|${b.type}`] = b.amount;
  if (seatedBets) {
    seatedBets.forEach((b, i) => {
      bets[`${i + 1}|main`] = b.bet;
      for (const [name, amount] of Object.entries(b.side_bets)) bets[`${i + 1}|${name}`] = amount;
    });
  }
  const sideNames = Object.keys(table.limits).filter((type) => type !== "main");
  const row = el("div", { class: "hands spots", "data-count": table.hands_per_player });
  for (let spot = 1; spot <= table.hands_per_player; spot += 1) {
    const main = bets[`${spot}|main`] || 0;
    const max = state.maxSpot && state.maxSpot.spot === spot ? state.maxSpot.text : "";
    const label = table.hands_per_player > 1 ? `Hand ${spot}` : "Your bet";
    row.append(el("div", { class: "spot" },
      el("div", { class: "max", role: "alert" }, max),
      el("button", { type: "button", class: `circle${main ? " has-bet" : ""}`, "data-spot": spot, "data-focus": `spot-${spot}`,
        disabled: !canBet, "aria-label": `Bet on hand ${spot}, now ${money(main, currency)}`,
        "aria-keyshortcuts": table.hands_per_player > 1 ? String(spot) : null,
        onclick: () => control("bets", { spot, type: "main" }) },
      main ? chipStack(main, table.chips, currency) : null,
      // Its key printed as every control's is (the number keys took the circles, and nothing said so: a trial).
      el("span", { class: "label" }, ...keyed(el("span", { class: "amount" }, main ? money(main, currency) : label),
        table.hands_per_player > 1 && !main ? String(spot) : null))),  // an empty circle's: an amount needs the room
      sideNames.length ? el("div", { class: "sides" }, ...sideNames.map((name) => {
        const amount = bets[`${spot}|${name}`] || 0;
        return el("button", { type: "button", class: `side${amount ? " has-bet" : ""}`, "data-spot": spot, "data-side": name,
          "data-focus": `side-${spot}-${name}`, disabled: !canBet,
          "aria-label": `${sideTitle(name)} on hand ${spot}, now ${money(amount, currency)}`,
          onclick: () => control("bets", { spot, type: name }) },
        el("span", { class: "side-name" }, sideTitle(name)), el("span", { class: "side-amount" }, amount ? money(amount, currency) : ""));
      })) : null));
  }
  return row;
}

function restoreFocus(key) {
  if (!key) return;
  const same = view().querySelector(`[data-focus="${key}"]:not([disabled])`);
  // An offer's panel takes the focus on NO: on YES, an Enter or a space meant for DEAL bought insurance (a trial).
  const fallback = view().querySelector("[data-focus='offer-no']:not([disabled])")
    || view().querySelector(".action-bar button:not([disabled])");
  (same || fallback)?.focus({ preventScroll: true });
}

function startTimers(round) {
  clearInterval(state.timer);
  const tick = () => {
    const left = (moment) => Math.max(0, Math.round((Date.parse(moment) - Date.now()) / 1000));
    // The decision's clock, or the round's while this player waits for the others (a common draw's step).
    const deadline = round && ((round.decision && round.decision.deadline) || round.deadline);
    const decisionLeft = deadline ? left(deadline) : null;
    const text = decisionLeft === null ? "" : `${decisionLeft >= 60 ? `${Math.floor(decisionLeft / 60)}m ` : ""}${decisionLeft % 60}s`;
    // Another player's clock is named theirs (before, "Decision: 13s" read as the watcher's own: found by a trial).
    const decider = round && round.status === "playing" && !(round.legal_actions || []).length ? otherDecider(round) : null;
    // Nobody named and nothing for this player to decide: several players choose at once (a common draw's step, which
    // a watcher or a player who chose waits out). Before, that read "Decision: 12s", as if the clock were theirs.
    const others = round && round.status === "playing" && !(round.legal_actions || []).length;
    const whose = decider ? `${decider} decides` : others ? "Players decide" : "Decision";
    for (const id of ["timer", "bar-timer"]) {
      const node = document.getElementById(id);
      if (node) node.textContent = text && id === "timer" ? `${whose}: ${text}` : text;
    }
    const windowNode = document.getElementById("window");
    if (round && round.betting_closes_at && windowNode) windowNode.textContent = `${left(round.betting_closes_at)} s`;
  };
  tick();
  state.timer = setInterval(tick, 500);
}

// One audio context for the page's beeps: one made for each beep was never closed, and a browser holds only a few.
let audio = null;

export function beep(frequency = 600) {
  if (!state.me || !state.me.settings.sound || !window.AudioContext) return;
  try {
    audio = audio || new AudioContext();
    // A context the browser holds suspended (no gesture yet) would queue the beep to sound later, with the next one.
    if (audio.state === "suspended") audio.resume();
    if (audio.state !== "running") return;
    const context = audio;
    const oscillator = context.createOscillator();
    oscillator.frequency.value = frequency;
    oscillator.connect(context.destination);
    oscillator.start();
    oscillator.stop(context.currentTime + 0.08);
  } catch (_) { /* sound is optional */ }
}

