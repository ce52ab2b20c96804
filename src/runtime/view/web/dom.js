// DOM helpers of the run viewer. Data from the run (written by a policy under training) only ever
// enters the page as text nodes or attribute values: no innerHTML anywhere.
const SVG = "http://www.w3.org/2000/svg";

/** An element with attributes and children (strings become text nodes; null/false are skipped). */
export function el(tag, attrs, ...children) {
  return fill(document.createElement(tag), attrs, children);
}

export function svg(tag, attrs, ...children) {
  return fill(document.createElementNS(SVG, tag), attrs, children);
}

function fill(node, attrs, children) {
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") node.addEventListener(k.slice(2), v);
    else if (k === "href" && !String(v).startsWith("#") && !String(v).startsWith("/api/")) continue;
    else node.setAttribute(k, String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    node.append(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
  }
  return node;
}

/** Replace a node's children. */
export function put(node, ...children) {
  node.replaceChildren();
  for (const c of children.flat(Infinity)) if (c !== undefined && c !== null && c !== false) node.append(typeof c === "string" ? document.createTextNode(c) : c);
  return node;
}

export async function getJson(url) {
  const res = await fetch(url, { cache: "no-store" });
  if (!res.ok) throw new Error(`${url}: ${res.status}`);
  return res.json();
}

export async function getText(url) {
  const res = await fetch(url, { cache: "no-store" });
  return res.ok ? res.text() : "";
}

export const pct = (x) => (x === null || x === undefined ? "–" : `${(100 * x).toFixed(1)}%`);
export const num = (x, d = 3) => (x === null || x === undefined || Number.isNaN(x) ? "–" : Number.isInteger(x) ? String(x) : x.toFixed(d));
export const secs = (ms) => (ms === null || ms === undefined ? "–" : `${(ms / 1000).toFixed(1)} s`);

/** A hash link: #/<page>/<encoded parts>?<query>. */
export function link(page, parts = [], query = {}) {
  const q = new URLSearchParams(Object.entries(query).filter(([, v]) => v !== undefined && v !== null)).toString();
  return `#/${page}${parts.map((p) => "/" + encodeURIComponent(String(p))).join("")}${q ? "?" + q : ""}`;
}

/** A plain table: columns [{label, num?}], rows of cells (strings or nodes). */
export function table(columns, rows, attrs = {}) {
  return el("table", attrs,
    el("thead", {}, el("tr", {}, columns.map((c) => el("th", { class: c.num ? "num" : null }, c.label)))),
    el("tbody", {}, rows.map((r) => el("tr", {}, r.map((cell, i) => el("td", { class: columns[i]?.num ? "num" : null }, cell))))));
}

export function verdict(passed) {
  return el("span", { class: passed ? "pass" : "fail" }, passed ? "pass" : "fail");
}
