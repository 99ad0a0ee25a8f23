// Playing cards drawn in SVG by the page itself (no images fetched): both corner indices,
// pips laid out as on a real card, a drawn court figure for J, Q and K, and a patterned back.

const SVG = "http://www.w3.org/2000/svg";
const SUITS = { S: "\u2660", H: "\u2665", D: "\u2666", C: "\u2663" };
const SUIT_NAMES = { S: "spades", H: "hearts", D: "diamonds", C: "clubs" };
const RANK_NAMES = { A: "Ace", T: "10", J: "Jack", Q: "Queen", K: "King" };

// Pip centres on a 100 x 140 card; pips below the middle are drawn upside down, as printed.
const L = 32;
const M = 50;
const R = 68;
const PIPS = {
  2: [[M, 30], [M, 110]],
  3: [[M, 30], [M, 70], [M, 110]],
  4: [[L, 30], [R, 30], [L, 110], [R, 110]],
  5: [[L, 30], [R, 30], [M, 70], [L, 110], [R, 110]],
  6: [[L, 30], [R, 30], [L, 70], [R, 70], [L, 110], [R, 110]],
  7: [[L, 30], [R, 30], [M, 50], [L, 70], [R, 70], [L, 110], [R, 110]],
  8: [[L, 30], [R, 30], [M, 50], [L, 70], [R, 70], [M, 90], [L, 110], [R, 110]],
  9: [[L, 28], [R, 28], [L, 56], [R, 56], [M, 70], [L, 84], [R, 84], [L, 112], [R, 112]],
  10: [[L, 28], [R, 28], [M, 44], [L, 56], [R, 56], [L, 84], [R, 84], [M, 96], [L, 112], [R, 112]],
};

function node(tag, attributes = {}, text = null) {
  const element = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, value);
  if (text !== null) element.textContent = text;
  return element;
}

function corner(shown, suit, colour, flipped) {
  const group = node("g", flipped ? { transform: "rotate(180 50 70)" } : {});
  group.append(
    node("text", { x: 11, y: 21, "text-anchor": "middle", "font-size": shown === "10" ? 17 : 20, "font-weight": 700,
      fill: colour, "font-family": "Georgia, serif", "letter-spacing": shown === "10" ? -2 : 0 }, shown),
    node("text", { x: 11, y: 37, "text-anchor": "middle", "font-size": 16, fill: colour }, SUITS[suit]));
  return group;
}

function pips(count, suit, colour) {
  const group = node("g", { fill: colour, "text-anchor": "middle", "font-size": 22 });
  for (const [x, y] of PIPS[count]) {
    const pip = node("text", { x, y: y + 8 }, SUITS[suit]);
    if (y > 70) pip.setAttribute("transform", `rotate(180 ${x} ${y})`);
    group.append(pip);
  }
  return group;
}

// A court card: a framed half-length figure, mirrored top and bottom like a printed court card.
function court(rank, suit, colour) {
  const robe = colour === "#c62828" ? "#c62828" : "#1f3f8f";
  const trim = "#e8b923";
  const half = node("g");
  const headwear = {
    K: node("path", { d: "M38 28 L40 16 L45 24 L50 13 L55 24 L60 16 L62 28 Z", fill: trim, stroke: "#7a5b00", "stroke-width": 1 }),
    Q: node("path", { d: "M39 28 Q50 10 61 28 Z", fill: trim, stroke: "#7a5b00", "stroke-width": 1 }),
    J: node("path", { d: "M37 28 Q50 14 63 24 L63 28 Z", fill: robe, stroke: "#222", "stroke-width": 1 }),
  }[rank];
  half.append(
    node("path", { d: "M30 70 Q30 46 50 44 Q70 46 70 70 Z", fill: robe, stroke: "#222", "stroke-width": 1.2 }),
    node("path", { d: "M44 45 L50 70 L56 45 Z", fill: trim }),
    node("circle", { cx: 50, cy: 35, r: 9, fill: "#f6d7b0", stroke: "#222", "stroke-width": 1.2 }),
    headwear,
    node("circle", { cx: 46.5, cy: 34, r: 1.1, fill: "#222" }),
    node("circle", { cx: 53.5, cy: 34, r: 1.1, fill: "#222" }),
    node("path", { d: "M46 39 Q50 41.5 54 39", stroke: "#222", "stroke-width": 1, fill: "none" }),
    rank === "K" ? node("path", { d: "M43 40 Q50 50 57 40 Q50 44 43 40 Z", fill: "#6b4a2b" }) : node("g"),
    node("text", { x: 64, y: 62, "text-anchor": "middle", "font-size": 12, fill: trim }, SUITS[suit]));
  const frame = node("g");
  frame.append(
    node("rect", { x: 24, y: 20, width: 52, height: 100, rx: 3, fill: "#fffbe8", stroke: colour, "stroke-width": 1.5 }),
    half);
  const lower = half.cloneNode(true);
  lower.setAttribute("transform", "rotate(180 50 70)");
  frame.append(lower, node("line", { x1: 24, y1: 70, x2: 76, y2: 70, stroke: colour, "stroke-width": 0.8 }));
  return frame;
}

// The back's lattice: small diamonds inside the inner frame.
function diamonds() {
  const parts = [];
  for (let y = 14; y <= 126; y += 10) {
    for (let x = 14 + ((y / 10) % 2 ? 0 : 5); x <= 86; x += 10) parts.push(`M${x} ${y - 4}L${x + 4} ${y}L${x} ${y + 4}L${x - 4} ${y}Z`);
  }
  return parts.join("");
}

/** A card written as players write it: "10♠", "A♥"; a face-down one as "?" (history and replay). */
export function cardText(code) {
  if (!code) return "?";
  const rank = code[0].toUpperCase();
  return `${rank === "T" ? "10" : rank}${SUITS[code[1].toUpperCase()] || code[1]}`;
}

/** A card as an SVG image: ``code`` is two characters (rank, suit), or null for a face-down card. */
export function cardNode(code, extraClass = "") {
  const svg = node("svg", { viewBox: "0 0 100 140", role: "img", class: `card ${extraClass}`.trim() });
  if (!code) {
    svg.classList.add("back");
    svg.setAttribute("aria-label", "Face-down card");
    svg.append(
      node("rect", { x: 1, y: 1, width: 98, height: 138, rx: 8, fill: "#fff", stroke: "#bbb" }),
      node("rect", { x: 7, y: 7, width: 86, height: 126, rx: 5, fill: "#8e1b2c" }),
      node("path", { d: diamonds(), fill: "#b8324a" }),
      node("rect", { x: 7, y: 7, width: 86, height: 126, rx: 5, fill: "none", stroke: "#e8b923", "stroke-width": 2 }),
      node("circle", { cx: 50, cy: 70, r: 16, fill: "#8e1b2c", stroke: "#e8b923", "stroke-width": 2 }),
      node("text", { x: 50, y: 76, "text-anchor": "middle", "font-size": 16, "font-weight": 700, fill: "#e8b923",
        "font-family": "Georgia, serif" }, "21"));
    return svg;
  }
  const rank = code[0].toUpperCase();
  const suit = code[1].toUpperCase();
  const red = suit === "H" || suit === "D";
  const colour = red ? "#c62828" : "#1b1b1b";
  const shown = rank === "T" ? "10" : rank;
  svg.classList.add(red ? "red" : "black");
  svg.setAttribute("aria-label", `${RANK_NAMES[rank] || rank} of ${SUIT_NAMES[suit]}`);
  svg.dataset.card = `${rank}${suit}`;
  svg.append(node("rect", { x: 1, y: 1, width: 98, height: 138, rx: 8, fill: "#fff", stroke: "#bbb" }));
  if (rank === "A") {
    svg.append(node("text", { x: 50, y: 88, "text-anchor": "middle", "font-size": 52, fill: colour }, SUITS[suit]));
  } else if ("JQK".includes(rank)) {
    svg.append(court(rank, suit, colour));
  } else {
    svg.append(pips(rank === "T" ? 10 : Number(rank), suit, colour));
  }
  svg.append(corner(shown, suit, colour, false), corner(shown, suit, colour, true));
  return svg;
}

/** The total as players say it: "7/17" for a soft total still in play, "21" for a two-card 21; a hand that is
 * finished (stood, settled) has one total, the higher: "20", never "10/20". */
export function totalText(total, soft, cards, finished = false) {
  if (cards === 2 && total === 21) return "21";
  return soft && total < 21 && !finished ? `${total - 10}/${total}` : String(total);
}
