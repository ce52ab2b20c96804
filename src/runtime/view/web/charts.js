// Line charts drawn as SVG elements (no chart library: a few series of at most a few hundred
// points each; every label is a text node).
import { svg, el } from "./dom.js";

const COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf", "#7f7f7f"];

/**
 * series: [{name, points: [{x, y}], dashed?}]. Returns a figure element; with no points, a note.
 */
export function lineChart(title, series, { width = 340, height = 190, yFormat: givenFormat, yMin, yMax } = {}) {
  const all = series.flatMap((s) => s.points).filter((p) => Number.isFinite(p.y));
  const root = svg("svg", { class: "chart", width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": title });
  root.append(svg("text", { x: 10, y: 16, class: "title" }, title));
  if (all.length === 0) {
    root.append(svg("text", { x: 10, y: height / 2 }, "not recorded in this run"));
    return root;
  }
  const L = 46, R = 10, T = 26, B = 34;
  const xs = all.map((p) => p.x);
  let x0 = Math.min(...xs), x1 = Math.max(...xs);
  if (x0 === x1) { x0 -= 1; x1 += 1; }
  let y0 = yMin ?? Math.min(...all.map((p) => p.y)), y1 = yMax ?? Math.max(...all.map((p) => p.y));
  if (y0 === y1) { y0 -= Math.abs(y0) * 0.1 || 1; y1 += Math.abs(y1) * 0.1 || 1; }
  const yFormat = givenFormat ?? ((v) => fmtAxis(v, y1 - y0));
  const X = (x) => L + ((x - x0) / (x1 - x0)) * (width - L - R);
  const Y = (y) => height - B - ((y - y0) / (y1 - y0)) * (height - T - B);
  root.append(svg("line", { x1: L, y1: height - B, x2: width - R, y2: height - B, stroke: "#ccc" }));
  root.append(svg("line", { x1: L, y1: T, x2: L, y2: height - B, stroke: "#ccc" }));
  for (const v of [y0, (y0 + y1) / 2, y1]) {
    root.append(svg("text", { x: L - 4, y: Y(v) + 3, "text-anchor": "end" }, yFormat(v)));
    root.append(svg("line", { x1: L, y1: Y(v), x2: width - R, y2: Y(v), stroke: "#f0f0f0" }));
  }
  for (const v of niceXs(x0, x1)) root.append(svg("text", { x: X(v), y: height - B + 12, "text-anchor": "middle" }, String(v)));
  root.append(svg("text", { x: (L + width - R) / 2, y: height - 4, "text-anchor": "middle" }, "step"));
  series.forEach((s, i) => {
    const color = s.color ?? COLORS[i % COLORS.length];
    const pts = s.points.filter((p) => Number.isFinite(p.y)).sort((a, b) => a.x - b.x);
    if (pts.length === 0) return;
    root.append(svg("polyline", { points: pts.map((p) => `${X(p.x).toFixed(1)},${Y(p.y).toFixed(1)}`).join(" "), fill: "none", stroke: color, "stroke-width": 1.6, "stroke-dasharray": s.dashed ? "4 3" : null }));
    for (const p of pts.length <= 40 ? pts : []) {
      root.append(svg("circle", { cx: X(p.x), cy: Y(p.y), r: 2.4, fill: color }, svg("title", {}, `${s.name} step ${p.x}: ${yFormat(p.y)}`)));
    }
  });
  if (series.length > 1 || series[0]?.name) {
    let lx = L + 4;
    series.forEach((s, i) => {
      const color = s.color ?? COLORS[i % COLORS.length];
      root.append(svg("rect", { x: lx, y: T - 4, width: 10, height: 3, fill: color }));
      root.append(svg("text", { x: lx + 13, y: T, "data-series": s.name }, s.name));
      lx += 20 + 6 * s.name.length;
    });
  }
  return root;
}

function niceXs(x0, x1) {
  const span = x1 - x0;
  const step = Math.max(1, Math.ceil(span / 6));
  const out = [];
  for (let v = Math.ceil(x0); v <= x1; v += step) out.push(v);
  return out;
}

/** An axis label with enough digits to tell the ticks of a `span`-wide axis apart. */
function fmtAxis(v, span) {
  const a = Math.abs(v);
  if (a === 0) return "0";
  if (a >= 1000 && span >= 100) return `${(v / 1000).toFixed(1)}k`;
  const digits = Math.max(0, Math.ceil(-Math.log10(span / 2)) + 1);
  if (digits > 6) return v.toExponential(2);
  return v.toFixed(digits);
}

export function chartRow(...charts) {
  return el("div", { class: "charts" }, charts);
}
