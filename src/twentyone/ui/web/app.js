// twentyone web table: a plain ES module over the server's public API and WebSocket.

const SUITS = { S: "♠", H: "♥", D: "♦", C: "♣" };
const SUIT_NAMES = { S: "spades", H: "hearts", D: "diamonds", C: "clubs" };
const RANK_NAMES = { A: "Ace", T: "10", J: "Jack", Q: "Queen", K: "King" };
const ACTIONS = [
  ["hit", "HIT", "h"], ["stand", "STAND", "s"], ["double", "DOUBLE", "d"], ["triple", "TRIPLE", "t"],
  ["quadruple", "QUADRUPLE", "q"], ["split", "SPLIT", "p"], ["surrender", "SURRENDER", "r"],
  ["cash-out", "CASH OUT", "c"],
];
const OFFERS = {
  insurance: ["Insurance", "insurance", "no-insurance"],
  "even-money": ["Even money", "even-money", "no-even-money"],
  surrender: ["Surrender", "surrender", "no-surrender"],
};
const SIDE_NAMES = { perfect_pairs: "Perfect Pairs", "21+3": "21+3", any_pair: "Any Pair", hot_3: "Hot 3",
  bust_it: "Bust It" };

const state = { token: localStorage.getItem("twentyone.token"), me: null, table: null, socket: null,
  hints: null, maxSpot: null, timer: null, finished: null, watching: null };
const view = () => document.getElementById("view");

// ------------------------------------------------------------------ API
async function api(method, path, body) {
  const headers = { "Content-Type": "application/json" };
  if (state.token) headers.Authorization = `Bearer ${state.token}`;
  if (method !== "GET") headers["Idempotency-Key"] = crypto.randomUUID();
  const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const data = await response.json().catch(() => ({}));
  if (!response.ok) {
    const error = new Error(data.detail || `${response.status}`);
    error.status = response.status;
    error.data = data;
    throw error;
  }
  return data;
}

function money(amount, currency = "") {
  const sign = amount < 0 ? "-" : "";
  const value = Math.abs(amount);
  const text = `${sign}${Math.floor(value / 100).toLocaleString("en")}.${String(value % 100).padStart(2, "0")}`;
  return currency ? `${text} ${currency}` : text;
}

function chipLabel(amount) {
  // Whole amounts fit a chip better without their cents: 2500 minor units shows as "25".
  return amount % 100 === 0 ? (amount / 100).toLocaleString("en") : money(amount);
}

function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (key === "class") node.className = value;
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

function announce(text) {
  document.getElementById("announce").textContent = text;
}

function showError(error) {
  announce(error.message);
}

// ---------------------------------------------------------------- cards
function cardNode(code) {
  if (!code) return el("div", { class: "card back", role: "img", "aria-label": "Face-down card" });
  const rank = code[0];
  const suit = code[1];
  const red = suit === "H" || suit === "D";
  const label = `${RANK_NAMES[rank] || rank} of ${SUIT_NAMES[suit]}`;
  const shown = rank === "T" ? "10" : rank;
  return el("div", { class: `card${red ? " red" : ""}`, role: "img", "aria-label": label },
    el("span", { class: "rank" }, shown), el("span", { class: "suit", "aria-hidden": "true" }, SUITS[suit]));
}

function totalText(total, soft, cards) {
  if (cards === 2 && total === 21) return "21";
  return soft && total < 21 ? `${total - 10}/${total}` : String(total);
}

// ------------------------------------------------------------- session
async function ensureMe() {
  if (!state.token) return null;
  try {
    state.me = await api("GET", "/me");
  } catch (error) {
    if (error.status === 401) {
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
    const balances = Object.entries(state.me.balances).map(([c, v]) => money(v, c)).join(" · ");
    who.textContent = `${state.me.name} — ${balances}`;
    out.hidden = false;
  } else {
    who.textContent = "";
    out.hidden = true;
  }
}

async function signedIn(token) {
  state.token = token;
  localStorage.setItem("twentyone.token", token);
  await ensureMe();
}

// --------------------------------------------------------------- lobby
async function renderLobby() {
  const { tables } = await api("GET", "/tables");
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
          announce(`Bets returned: ${answer.returned_bets.map((b) => money(b.total)).join(", ")}`);
        }
        renderLobby();
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
  const grid = el("div", { class: "lobby-grid" });
  for (const table of tables) {
    const limits = table.limits.main;
    grid.append(el("article", { class: `table-card ${table.theme}` },
      el("h3", {}, table.name),
      el("div", { class: "muted" }, `${table.variant} · ${table.currency}`),
      el("div", {}, `Bets ${money(limits[0])}–${money(limits[1])} ${table.currency}`),
      el("div", {}, table.shared ? `${table.players} playing · ${table.seats ? `${table.seats} seats` : "unlimited players"}`
        : `${table.hands_per_player} hand${table.hands_per_player > 1 ? "s" : ""} · private round`),
      el("a", { href: `#/table/${table.id}`, class: "join", "aria-label": `Join ${table.name}` },
        state.me ? "Join table" : "")));
  }
  root.append(el("section", {}, el("h2", {}, "Tables"), grid));
}

// --------------------------------------------------------------- table
async function openTable(tableId) {
  if (!(await ensureMe())) {
    location.hash = "#/";
    return;
  }
  connectSocket(tableId);
  await refreshTable(tableId);
}

async function refreshTable(tableId) {
  try {
    state.table = await api("GET", `/tables/${tableId}`);
    state.hints = null;
    await ensureMe();  // the header's balances follow the table's
    // A round that ended (by this player's decision, another player's, or a timer) stays on the
    // table, results showing, until "Next round".
    if (!state.table.round && state.watching && !state.finished) {
      const ended = await api("GET", `/rounds/${state.watching}`).catch(() => null);
      if (ended && ended.table_id === tableId && (ended.status === "settled" || ended.status === "void")) {
        state.finished = ended;
        announceResults(ended);
      }
    }
    if (!state.table.round && state.finished && state.finished.table_id === tableId) {
      state.table.round = state.finished;
    }
    state.watching = state.table.round && state.table.round.status !== "settled" ? state.table.round.id : null;
    const round = state.table.round;
    if (round && round.legal_actions.length && state.me.settings.hints) {
      state.hints = await api("GET", `/rounds/${round.id}/hint`).catch(() => null);
    }
    renderTable();
  } catch (error) { showError(error); }
}

function connectSocket(tableId) {
  if (state.socket && state.socket.tableId === tableId) return;
  if (state.socket) state.socket.close();
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const socket = new WebSocket(`${scheme}://${location.host}/ws/tables/${tableId}?token=${state.token}`);
  socket.tableId = tableId;
  socket.onmessage = (message) => {
    const event = JSON.parse(message.data);
    if (event.type === "hello" && event.returned_bets && event.returned_bets.length) {
      announce(`Your undealt bets were returned: ${event.returned_bets.map((b) => money(b.total)).join(", ")}`);
    }
    if (currentTableId() === tableId && event.type !== "hello") refreshTable(tableId);
  };
  socket.onclose = () => {
    if (state.socket !== socket) return;
    state.socket = null;
    // Lost the connection while still at this table: come back, and pick the round up where it is.
    setTimeout(() => {
      if (currentTableId() === tableId && !state.socket && state.token) {
        connectSocket(tableId);
        refreshTable(tableId);
      }
    }, 2000);
  };
  state.socket = socket;
}

function currentTableId() {
  const match = location.hash.match(/^#\/table\/(.+)$/);
  return match ? decodeURIComponent(match[1]) : null;
}

async function control(path, body) {
  const tableId = state.table.table.id;
  try {
    const answer = await api("POST", `/tables/${tableId}/${path}`, body);
    state.maxSpot = null;
    if (answer.slip) state.table.slip = answer.slip;
    if (answer.id) {
      beep();
      if (answer.status === "settled" || answer.status === "void") {
        state.finished = answer;
        announceResults(answer);
      }
      await refreshTable(tableId);
      return;
    }
    renderTable();
  } catch (error) {
    if (error.data && error.data.maximum && body) state.maxSpot = { spot: body.spot, type: body.type, text: error.message };
    showError(error);
    renderTable();
  }
}

async function decide(action) {
  const round = state.table.round;
  try {
    const answer = await api("POST", `/rounds/${round.id}/actions`, { action });
    state.table.round = answer;
    if (answer.status === "settled" || answer.status === "void") {
      state.finished = answer;
      announceResults(answer);
    }
    await refreshTable(state.table.table.id);
  } catch (error) { showError(error); }
}

function announceResults(round) {
  if (round.status === "void") {
    announce(`Round void: every stake is refunded (${round.void_reason || "malfunction"}).`);
    return;
  }
  const mine = round.hands.filter((hand) => hand.player_id === state.me.id);
  const parts = mine.map((hand) => {
    const won = hand.returned - hand.stake;
    return `Hand ${hand.seat}${hand.from_split ? `.${hand.hand}` : ""}: ${hand.outcome} ${won >= 0 ? "+" : ""}${money(won)}`;
  });
  const net = (round.me ? round.me.returned - round.me.staked : 0);
  announce(`${parts.join(" · ")} — round ${net >= 0 ? "won" : "lost"} ${money(Math.abs(net))}`);
  beep(net > 0 ? 880 : 330);
}

function beep(frequency = 600) {
  if (!state.me || !state.me.settings.sound || !window.AudioContext) return;
  try {
    const context = new AudioContext();
    const oscillator = context.createOscillator();
    oscillator.frequency.value = frequency;
    oscillator.connect(context.destination);
    oscillator.start();
    oscillator.stop(context.currentTime + 0.08);
  } catch (_) { /* sound is optional */ }
}

function renderTable() {
  const { table, slip, balance, round, next_shoe: nextShoe } = state.table;
  document.body.className = `theme-${table.theme}`;
  const playing = round && (round.status === "playing" || round.status === "betting");
  const root = view();
  root.replaceChildren();
  const felt = el("section", { class: "felt", "aria-label": table.name });
  felt.append(el("div", { class: "table-head" },
    el("h2", {}, table.name),
    el("div", { class: "indicators" },
      el("span", { class: "indicator", id: "balance" }, "BALANCE ", el("strong", {}, money(balance, table.currency))),
      el("span", { class: "indicator", id: "total-bet" }, "TOTAL BET ", el("strong", {},
        money(playing && round.me ? (round.status === "betting" ? betsTotal(round.me.bets) : round.me.staked)
          : slip.total))),
      el("span", { class: "indicator timer", id: "timer" }))));
  if (round && round.status !== "betting") felt.append(renderRound(round));
  if (round && round.status === "betting") {
    felt.append(el("p", { class: "panel" }, `Bets are in. Dealing when the betting window closes. `,
      el("span", { class: "timer", id: "window" })));
  }
  if (!playing) felt.append(renderBetting(table, slip, round));
  felt.append(el("details", { class: "panel", id: "limits" },
    el("summary", {}, "BET LIMITS"),
    el("ul", {}, ...Object.entries(table.limits).map(([type, [low, high]]) =>
      el("li", {}, `${type === "main" ? "Main bet" : SIDE_NAMES[type] || type}: ${money(low)}–${money(high)} ${table.currency}`))),
    el("p", { class: "muted" }, `Next shoe SHA-256: ${nextShoe.commitment}`)));
  root.append(felt);
  startTimers(round);
}

function betsTotal(bets) {
  return bets.reduce((sum, b) => sum + b.bet + Object.values(b.side_bets).reduce((a, v) => a + v, 0), 0);
}

function renderRound(round) {
  const container = el("div", { class: "round" });
  const hidden = Array.from({ length: round.dealer.hidden }, () => null);
  container.append(el("div", { class: "dealer", "aria-label": "Dealer" },
    el("div", { class: "hand" }, el("div", { class: "owner" }, "Dealer"),
      el("div", { class: "cards" }, ...round.dealer.cards.map(cardNode), ...hidden.map(cardNode)),
      round.dealer.cards.length ? el("div", { class: "total", id: "dealer-total" },
        round.dealer.blackjack ? "Blackjack" : totalText(round.dealer.total, round.dealer.soft,
          round.dealer.cards.length)) : null)));
  const decision = round.decision;
  const hands = el("div", { class: "hands" });
  for (const hand of round.hands) {
    const active = decision && decision.seat === hand.seat && decision.hand === hand.hand;
    const mine = hand.player_id === state.me.id;
    const label = `${mine ? "Your" : `${hand.name}'s`} hand ${hand.seat}${hand.from_split ? `.${hand.hand}` : ""}`;
    const node = el("div", { class: `hand${active ? " active" : ""}`, "aria-label": label,
      "data-seat": hand.seat, "data-hand": hand.hand },
      el("div", { class: "owner" }, `${mine ? "You" : hand.name} · hand ${hand.seat}${hand.from_split ? `.${hand.hand}` : ""}`
        + ` · stake ${money(hand.stake)}`),
      el("div", { class: "cards" }, ...hand.cards.map(cardNode)),
      el("div", { class: "total" }, hand.status === "blackjack" || hand.outcome === "blackjack" ? "Blackjack"
        : totalText(hand.total, hand.soft, hand.cards.length)),
      hand.outcome ? el("div", { class: `outcome ${hand.outcome}` },
        `${hand.outcome.toUpperCase()} ${hand.returned - hand.stake >= 0 ? "+" : ""}${money(hand.returned - hand.stake)}`) : null);
    if (active && mine && round.legal_actions.length) node.append(renderDecision(round));
    else if (active && !mine) node.append(el("div", { class: "muted" }, `${hand.name} is deciding…`));
    hands.append(node);
  }
  container.append(hands);
  const sides = [...round.side_bets.map((s) => `${SIDE_NAMES[s.name] || s.name} (hand ${s.seat}): ${s.result} ${money(s.returned)}`),
    ...round.insurance.map((s) => `Insurance (hand ${s.seat}): ${s.result} ${money(s.returned)}`)];
  if (sides.length) container.append(el("p", { class: "panel", id: "side-results" }, sides.join(" · ")));
  if (round.status === "settled" || round.status === "void") {
    container.append(el("div", { class: "controls" },
      el("button", { class: "primary", type: "button", id: "next-round", onclick: () => nextRound() }, "Next round")));
    if (round.status === "void") container.append(el("p", { class: "error" }, `Void: ${round.void_reason}`));
  }
  return container;
}

function renderDecision(round) {
  const kind = round.decision.kind;
  if (OFFERS[kind]) {
    const [title, yes, no] = OFFERS[kind];
    const cost = round.offers.insurance ? ` for ${money(round.offers.insurance)}` : "";
    return el("div", { class: "offer", role: "group", "aria-label": title },
      el("p", {}, `${title}${cost}?`),
      el("div", { class: "decisions" },
        el("button", { type: "button", "data-action": yes, onclick: () => decide(yes) }, "YES (Y)"),
        el("button", { type: "button", "data-action": no, onclick: () => decide(no) }, "NO (N)")));
  }
  const showCashOut = state.me.settings.cash_out_visible;
  const ranked = state.hints ? state.hints.actions.filter((a) => a.action !== "cash-out" || showCashOut) : [];
  const hints = Object.fromEntries(ranked.map((a) => [a.action, a.ev]));
  const best = ranked.length ? ranked[0].action : null;
  const buttons = ACTIONS.filter(([action]) => action !== "cash-out" || showCashOut).map(([action, label, key]) => {
    const legal = round.legal_actions.includes(action);
    if (!legal && ["triple", "quadruple", "surrender", "cash-out"].includes(action)) return null;
    const amount = action === "cash-out" && round.offers.cash_out !== undefined ? ` ${money(round.offers.cash_out)}` : "";
    return el("button", { type: "button", "data-action": action, disabled: !legal, class: action === best ? "best" : "",
      "aria-keyshortcuts": key, title: `${label} (${key.toUpperCase()})`, onclick: () => decide(action) },
      `${label}${amount}`, action in hints ? el("span", { class: "ev" }, `EV ${hints[action] >= 0 ? "+" : ""}${hints[action].toFixed(3)}`) : null);
  });
  return el("div", { class: "decisions", role: "group", "aria-label": "Decisions" }, ...buttons);
}

function renderBetting(table, slip, round) {
  const section = el("div", { class: "betting" });
  const bets = {};
  for (const bet of slip.bets) bets[`${bet.spot}|${bet.type}`] = bet.amount;
  const sideNames = Object.keys(table.limits).filter((type) => type !== "main");
  const spots = el("div", { class: "spots" });
  for (let spot = 1; spot <= table.hands_per_player; spot += 1) {
    const main = bets[`${spot}|main`] || 0;
    const max = state.maxSpot && state.maxSpot.spot === spot ? state.maxSpot.text : "";
    spots.append(el("div", { class: "spot" },
      el("div", { class: "max", role: "alert" }, max),
      el("button", { type: "button", class: "circle", "data-spot": spot, "aria-label": `Bet on hand ${spot}, now ${money(main)}`,
        onclick: () => control("bets", { spot, type: "main" }) }, main ? money(main) : `Hand ${spot}`),
      ...sideNames.map((name) => el("button", { type: "button", class: "side", "data-spot": spot, "data-side": name,
        "aria-label": `${SIDE_NAMES[name] || name} on hand ${spot}, now ${money(bets[`${spot}|${name}`] || 0)}`,
        onclick: () => control("bets", { spot, type: name }) },
        `${SIDE_NAMES[name] || name} ${money(bets[`${spot}|${name}`] || 0)}`))));
  }
  const chips = el("div", { class: "chips", role: "group", "aria-label": "Chips" },
    ...table.chips.map((chip) => el("button", { type: "button", class: `chip${chip === slip.chip ? " selected" : ""}`,
      "data-chip": chip, disabled: !slip.enabled_chips.includes(chip), "aria-pressed": chip === slip.chip ? "true" : "false",
      "aria-label": `Chip ${money(chip)}`, onclick: () => control("chip", { chip }) }, chipLabel(chip))));
  const empty = slip.total === 0;
  const rebetInstead = empty && slip.can_rebet;
  const controls = el("div", { class: "controls" },
    el("button", { type: "button", id: "undo", disabled: empty, onclick: () => control("undo") }, "UNDO"),
    el("button", { type: "button", id: "double-bets", disabled: empty, onclick: () => control("double") }, "x2"),
    rebetInstead
      ? el("button", { type: "button", class: "primary", id: "rebet", onclick: () => control("rebet") },
        table.same_bet_deals ? "SAME BET" : "REBET")
      : el("button", { type: "button", class: "primary", id: "deal", disabled: empty, onclick: () => control("deal") },
        "DEAL NOW"));
  section.append(spots, chips, controls);
  if (round && round.status === "settled") section.prepend(el("p", { class: "muted" }, "Place your bets for the next round."));
  return section;
}

async function nextRound() {
  state.finished = null;
  state.table.round = null;
  await refreshTable(state.table.table.id);
}

function startTimers(round) {
  clearInterval(state.timer);
  const tick = () => {
    const timer = document.getElementById("timer");
    const windowNode = document.getElementById("window");
    if (round && round.decision && round.decision.deadline && timer) {
      const left = Math.max(0, Math.round((Date.parse(round.decision.deadline) - Date.now()) / 1000));
      timer.textContent = `Decision: ${left >= 60 ? `${Math.floor(left / 60)}m ` : ""}${left % 60}s`;
    } else if (timer) timer.textContent = "";
    if (round && round.betting_closes_at && windowNode) {
      const left = Math.max(0, Math.round((Date.parse(round.betting_closes_at) - Date.now()) / 1000));
      windowNode.textContent = `${left}s left`;
    }
  };
  tick();
  state.timer = setInterval(tick, 1000);
}

document.addEventListener("keydown", (event) => {
  if (!state.table || !state.table.round || event.target.tagName === "INPUT") return;
  const round = state.table.round;
  if (!round.legal_actions.length) return;
  const key = event.key.toLowerCase();
  const kind = round.decision && round.decision.kind;
  if (OFFERS[kind]) {
    if (key === "y") decide(OFFERS[kind][1]);
    if (key === "n") decide(OFFERS[kind][2]);
    return;
  }
  const match = ACTIONS.find(([action, , shortcut]) => shortcut === key && round.legal_actions.includes(action));
  if (match) decide(match[0]);
});

// -------------------------------------------------------------- history
async function renderHistory(page = 1) {
  if (!(await ensureMe())) { location.hash = "#/"; return; }
  const data = await api("GET", `/me/history?page=${page}`);
  const root = view();
  root.replaceChildren();
  const rows = data.rounds.map((round) => el("tr", {},
    el("td", {}, `#${round.id}`), el("td", {}, round.table_id), el("td", {}, round.status),
    el("td", {}, round.hands.map((h) => `${h.cards.join(" ")} (${h.outcome || "…"})`).join("; ")),
    el("td", {}, round.dealer.cards.join(" ")),
    el("td", {}, money(round.staked)), el("td", {}, money(round.returned)),
    el("td", {}, round.balance_after === null ? "" : money(round.balance_after)),
    el("td", {}, el("button", { type: "button", "data-replay": round.id, onclick: () => showReplay(round.id) }, "Replay"))));
  root.append(el("section", { class: "panel" },
    el("h1", {}, "Game history"),
    rows.length ? el("table", { class: "history" },
      el("thead", {}, el("tr", {}, ...["Round", "Table", "Status", "Your hands", "Dealer", "Staked", "Returned",
        "Balance after", ""].map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", {}, ...rows)) : el("p", {}, "No rounds yet."),
    el("div", { class: "controls" },
      el("button", { type: "button", disabled: page <= 1, onclick: () => renderHistory(page - 1) }, "Newer"),
      el("button", { type: "button", disabled: !data.has_more, onclick: () => renderHistory(page + 1) }, "Older")),
    el("div", { id: "replay" })));
}

async function showReplay(roundId) {
  const target = document.getElementById("replay");
  try {
    const replay = await api("GET", `/rounds/${roundId}/replay`);
    const lines = replay.operations.map((op) => {
      if (op.type === "card") return `card ${op.card} → ${op.to}${op.face_up ? "" : " (face down)"}`;
      if (op.type === "action") return `${op.player}: ${op.action} on hand ${op.seat}.${op.hand}`;
      if (op.type === "settled") return `${op.item} hand ${op.seat}.${op.hand}: ${op.result}, returned ${money(op.returned)}`;
      if (op.type === "bets") return `${op.player} bets ${money(op.bet)} on hand ${op.seat}`;
      if (op.type === "peek") return `dealer checks for blackjack: ${op.blackjack ? "blackjack" : "none"}`;
      if (op.type === "hole") return `dealer turns over ${op.card}`;
      return op.type;
    });
    const verify = el("p", { id: "verification" });
    target.replaceChildren(el("h2", {}, `Round #${roundId}`), el("ol", { class: "operations" },
      ...lines.map((line) => el("li", {}, line))),
    el("button", { type: "button", id: "verify", onclick: async () => {
      try {
        const proof = await api("GET", `/rounds/${roundId}/verify`);
        verify.textContent = proof.valid
          ? `Verified: SHA-256 ${proof.commitment} matches the revealed shoe, and this round's ${proof.drawn.length} cards came from it in order.`
          : "NOT verified: the revealed shoe does not match its commitment.";
      } catch (error) { verify.textContent = error.message; }
    } }, "Verify the shuffle"), verify);
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
  const limits = state.me.limits;
  const message = el("p", { role: "status" });
  const root = view();
  root.replaceChildren(el("section", { class: "panel" },
    el("h1", {}, "Responsible gaming"),
    el("p", {}, "Gambling should be entertainment. Set limits that the server enforces for you; for help, contact a "
      + "support service in your country."),
    el("ul", {},
      el("li", {}, `Daily loss limit: ${limits.daily_loss_limit === undefined ? "none" : money(limits.daily_loss_limit)}`),
      el("li", {}, `Session time limit: ${limits.session_minutes ? `${limits.session_minutes} minutes` : "none"}`),
      el("li", {}, `Self-exclusion: ${limits.excluded_until ? `until ${limits.excluded_until.slice(0, 16)} UTC` : "none"}`)),
    el("form", { class: "inline", onsubmit: async (event) => {
      event.preventDefault();
      const form = event.target;
      const body = {};
      if (form.elements.loss.value) body.daily_loss_limit = Math.round(Number(form.elements.loss.value) * 100);
      if (form.elements.minutes.value) body.session_minutes = Number(form.elements.minutes.value);
      if (form.elements.exclude.value) body.exclude_days = Number(form.elements.exclude.value);
      try {
        await api("PUT", "/me/limits", body);
        await ensureMe();
        renderLimits();
        announce("Limits saved.");
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
  clearInterval(state.timer);
  document.body.className = "";
  const hash = location.hash || "#/";
  try {
    await ensureMe();
    const table = currentTableId();
    if (table) await openTable(table);
    else if (hash === "#/history") await renderHistory();
    else if (hash === "#/settings") await renderSettings();
    else if (hash === "#/limits") await renderLimits();
    else await renderLobby();
  } catch (error) { showError(error); }
  view().focus();
}

document.getElementById("sign-out").addEventListener("click", () => {
  state.token = null;
  state.me = null;
  localStorage.removeItem("twentyone.token");
  if (state.socket) {
    const socket = state.socket;
    state.socket = null;
    socket.close();
  }
  location.hash = "#/";
  renderAccount();
  route();
});

window.addEventListener("hashchange", route);
route();
