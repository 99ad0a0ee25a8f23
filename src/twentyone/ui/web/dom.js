// Shared state, the API client and small DOM helpers for the web table's modules.

export const state = {
  token: localStorage.getItem("twentyone.token"), me: null, tables: {}, table: null, socket: null, hints: null,
  maxSpot: null, timer: null, finished: null, watching: null, seen: new Map(), offerChoices: {}, watched: new Set(),
  watchedShown: 0, heard: [],
};

export const view = () => document.getElementById("view");

export async function api(method, path, body) {
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

/** A message for the player, read out by screen readers (the banner above the table). */
export function announce(text) {
  document.getElementById("announce").textContent = text;
}

export function showError(error) {
  announce(error.message);
}

/** A button label with its keyboard shortcut printed on it: HIT with a small "H". */
export function keyed(label, key) {
  return [label, key ? el("kbd", { "aria-hidden": "true" }, key.toUpperCase()) : null];
}

export function reducedMotion() {
  return window.matchMedia("(prefers-reduced-motion: reduce)").matches;
}
