// Shared state, the API client and small DOM helpers for the web table's modules.

export const state = {
  token: localStorage.getItem("twentyone.token"), me: null, tables: {}, table: null, socket: null, hints: null,
  maxSpot: null, timer: null, finished: null, watching: null, seen: new Map(), offerChoices: {}, watched: new Set(),
  watchedShown: 0, heard: [], satOut: new Map(),  // satOut: round id -> why this player's seat sat it out
  followed: 0,  // the latest round of this player's that this page has followed (table.js, follow)
};

export const view = () => document.getElementById("view");

// A 503 means the server was busy and changed nothing; a request whose answer never came (the connection
// dropped) may or may not have been applied. Either way the page sends the same request again, with the same
// Idempotency-Key, so the server applies it once and answers every try alike (docs/server.md, "Conventions").
const TRIES = 4;  // in all, the first included
const MOST_WAIT = 5000;  // ms: a longer Retry-After is cut to this, so a click never hangs for long

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** How long to wait before try number `tried + 1`: the answer's Retry-After (seconds), else 0.5 s, 1 s, 2 s. */
function waitBefore(tried, response) {
  const header = response ? response.headers.get("Retry-After") : null;
  const asked = header === null || header.trim() === "" ? NaN : Number(header);  // Number(null) would be 0
  const ms = Number.isFinite(asked) && asked >= 0 ? asked * 1000 : 500 * 2 ** (tried - 1);
  return Math.min(ms, MOST_WAIT);
}

// A request that got no answer at all, after its tries: the browser's own words ("Failed to fetch") told the player
// nothing. A button's request may have been applied before the line dropped; the table, read again, shows whether.
export const NO_ANSWER = "No answer from the server: check your connection.";
const NO_ANSWER_TO_A_BUTTON = `${NO_ANSWER} If you pressed a button, it may or may not have been taken: `
  + "the table shows what was.";
let noAnswerShown = false;  // the banner says so: the next answer that comes clears it

function noAnswer(method, lost) {
  const error = new Error(method === "GET" ? NO_ANSWER : NO_ANSWER_TO_A_BUTTON);
  error.noAnswer = true;
  error.cause = lost;
  return error;
}

export async function api(method, path, body) {
  const headers = { "Content-Type": "application/json" };
  const token = state.token;  // the sign-in this request is made under (showError: one since ended is no news)
  if (token) headers.Authorization = `Bearer ${token}`;
  if (method !== "GET") headers["Idempotency-Key"] = crypto.randomUUID();  // one key for every try
  // Sign-in takes no key: a lost answer there may have made an account (a second try would say the name is
  // taken, or make another guest), so only a read, or a request the key guards, is asked again after one.
  const askAgainIfLost = method === "GET" || !path.startsWith("/auth/");
  const sent = body === undefined ? undefined : JSON.stringify(body);
  for (let tried = 1; ; tried++) {
    let response;
    try {
      response = await fetch(path, { method, headers, body: sent });
    } catch (lost) {  // no answer at all
      if (tried >= TRIES || !askAgainIfLost) throw noAnswer(method, lost);
      await pause(waitBefore(tried, null));
      continue;
    }
    if (noAnswerShown) {  // the server answers again
      noAnswerShown = false;
      const banner = document.getElementById("announce");
      if (banner.textContent.startsWith(NO_ANSWER)) banner.textContent = "";
    }
    if (response.status === 503 && tried < TRIES) {
      await pause(waitBefore(tried, response));
      continue;
    }
    const data = await response.json().catch(() => ({}));
    if (!response.ok) {
      const error = new Error(data.detail || `${response.status}`);
      error.status = response.status;
      error.data = data;
      error.token = token;
      throw error;
    }
    return data;
  }
}

export function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (key === "class") { if (value) node.className = value; }
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (value === true) node.setAttribute(key, "");
    else if (value !== false && value !== null && value !== undefined) node.setAttribute(key, value);
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined && child !== false) {
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
  }
  return node;
}

/** A moment the server gave (ISO, UTC) as the page writes it: "2026-12-05 01:05 UTC". */
export const utc = (iso) => `${iso.slice(0, 16).replace("T", " ")} UTC`;

/** A moment the server gave (ISO) in the player's own time, as their device keeps it: "3:07 PM", with its date where
 * that is not today there ("Mon 7 Dec, 3:07 PM"). The server speaks UTC alone: a player in another zone had to work
 * out when "14:07 UTC" was for them (found by a trial of players). */
export function localTime(iso) {
  const moment = new Date(iso);
  const time = moment.toLocaleTimeString([], { hour: "numeric", minute: "2-digit" });
  if (moment.toDateString() === new Date().toDateString()) return time;
  return `${moment.toLocaleDateString([], { weekday: "short", day: "numeric", month: "short" })}, ${time}`;
}

/** While the player has excluded themselves from play (GET /me's limits): the line that says until when; else null.
 * Their bet controls are refused until then; a round already in play goes on. */
export function exclusionLine() {
  const until = state.me && state.me.limits && state.me.limits.excluded_until;
  if (!until || !(Date.parse(until) > Date.now())) return null;
  // In the player's own time too, as the session limit's line says it (a trial of players: UTC alone).
  return `You have excluded yourself from play until ${utc(until)}. That is ${localTime(until)} your time.`;
}

/** While the player's session time limit is reached and the break after it runs (GET /me's `session`): the line that
 * says until when; else null. Their bet controls are refused meanwhile (found by a trial: chips, spots and REBET
 * stayed, each press answered with the same 403); after the break, their next bet starts a new session. */
export function sessionOverLine() {
  const session = state.me && state.me.session;
  if (!session || !session.ends_at) return null;
  const [ends, resumes, now] = [Date.parse(session.ends_at), Date.parse(session.break_ends_at), Date.now()];
  if (!(ends < now && now < resumes)) return null;
  const limit = state.me.limits && state.me.limits.session_minutes;
  // The server's own sentence (its refusal's): before, the page said "after a break, from …" and left out how long.
  return `Your session time limit${limit ? ` of ${limit} minute${limit === 1 ? "" : "s"}` : ""} is reached: you `
    // A server before break_minutes (a rolling upgrade): the sentence without the length.
    + `can play again after a break${session.break_minutes ? ` of ${session.break_minutes} minutes` : ""}, `
    + `from ${utc(session.break_ends_at)}.${sessionResumesLocally()}`;
}

/** " That is 3:07 PM your time.": the server's sentence above is kept as it says it (UTC), and this follows it. */
function sessionResumesLocally() {
  return ` That is ${localTime(state.me.session.break_ends_at)} your time.`;
}

/** Milliseconds until the player's session reaches its time limit (null: no limit, or reached already): the page
 * takes the bet controls away then, as a press would learn from the server's refusal. */
export function sessionEndsIn() {
  const session = state.me && state.me.session;
  if (!session || !session.ends_at) return null;
  const left = Date.parse(session.ends_at) - Date.now();
  return left > 0 ? left : null;
}

/** Milliseconds until the break after the session's limit ends (null: none is running): the page gives the bet
 * controls back then. */
export function sessionBreakLeft() {
  if (!sessionOverLine()) return null;
  return Math.max(0, Date.parse(state.me.session.break_ends_at) - Date.now());
}

/** Whether `error` is the refusal of a session whose time limit is reached (the server's 403): the page then reads
 * /me again, whose `session` says until when (sessionOverLine). */
export function isSessionOver(error) {
  return error.status === 403 && /session time limit/i.test(error.message || "");
}

/** A message for the player, read out by screen readers (the banner above the table). */
export function announce(text) {
  document.getElementById("announce").textContent = text;
}

// After "No answer", the page asks the server again by itself until it answers: the answer clears the words (api),
// and the table is read (state.reconnected, table.js) to show what a button did. Before, the words stayed once the
// line was back, until something else made a request: a player who waited saw them for good (found by a trial).
const PROBE_MS = 3000;
let probing = null;

function probeSoon() {
  if (probing) return;
  probing = setTimeout(async () => {
    probing = null;
    if (!noAnswerShown || !state.token) return;
    try {
      await api("GET", "/me");
    } catch (error) {
      if (error.noAnswer) { probeSoon(); return; }
    }
    if (state.reconnected) state.reconnected();
  }, PROBE_MS);
}

export function showError(error) {
  // A request's refusal for a sign-in the page has since ended (signed out meanwhile) is no news to the player.
  if (error.status === 401 && error.token && error.token !== state.token) return;
  if (error.noAnswer) {
    // A read's "no answer" after a button's keeps the button's: whether it was taken is still to be seen.
    if (!(noAnswerShown && document.getElementById("announce").textContent.startsWith(NO_ANSWER))) announce(error.message);
    noAnswerShown = true;
    probeSoon();
    return;
  }
  announce(error.message);
}

/** A button label with its keyboard shortcut printed on it: HIT with a small "H". */
export function keyed(label, key) {
  return [label, key ? el("kbd", { "aria-hidden": "true" }, key.toUpperCase()) : null];
}

// The table is drawn anew on each event and read (table.js, renderTable). A mouse press begun on a button that is
// drawn again before the button comes up is no click to the browser: down and up fell on two elements, the first
// gone. Before, such a press on HIT while the table was read did nothing and said nothing (CI's lost click at a power
// table, on a busy machine). A press that ends on the button drawn in its place (the same data-focus) is its click;
// one that ends elsewhere is taken back, as ever. A tap needs none of this: the browser aims its click where the
// finger lifts.
let pressed = null;  // { button, key }: the button the mouse went down on
document.addEventListener("pointerdown", (event) => {
  // The main button alone, on a button that takes it: a middle or right press, or one on a disabled button (which
  // chromium reports too), is no click, redrawn or not (found by review).
  const button = event.pointerType !== "touch" && event.isPrimary && event.button === 0 && event.target.closest
    ? event.target.closest("button[data-focus]") : null;
  pressed = button && !button.disabled ? { button, key: button.dataset.focus } : null;
}, true);
document.addEventListener("pointerup", (event) => {
  const begun = pressed;
  pressed = null;
  if (!begun || begun.button.isConnected || !event.target.closest) return;  // the browser's own click follows
  const twin = event.target.closest("button[data-focus]");
  if (!twin || twin.dataset.focus !== begun.key || twin.disabled) return;
  twin.click();
  // A browser that sent its own click to the twin as well (chromium sends none, measured) would make it two: that
  // click, which follows in this same task, is stopped.
  const second = (click) => {
    if (click.isTrusted && twin.contains(click.target)) {
      click.stopImmediatePropagation();
      click.preventDefault();
    }
  };
  document.addEventListener("click", second, true);
  setTimeout(() => document.removeEventListener("click", second, true), 0);
}, true);
