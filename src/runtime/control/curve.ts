/** The reward curve of a run as a small standalone SVG (pure). */
export interface CurvePoint {
  step: number;
  value: number;
}

export function renderRewardCurve(series: { name: string; color: string; points: CurvePoint[] }[], title: string): string {
  const W = 640;
  const H = 320;
  const L = 48;
  const R = 16;
  const T = 36;
  const B = 40;
  const all = series.flatMap((s) => s.points);
  const maxStep = Math.max(1, ...all.map((p) => p.step));
  const x = (s: number) => L + ((W - L - R) * s) / maxStep;
  const y = (v: number) => T + (H - T - B) * (1 - Math.max(0, Math.min(1, v)));
  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="11">`);
  out.push(`<rect width="${W}" height="${H}" fill="white"/>`);
  out.push(`<text x="${L}" y="20" font-size="13" font-weight="bold">${escapeXml(title)}</text>`);
  for (const v of [0, 0.25, 0.5, 0.75, 1]) {
    out.push(`<line x1="${L}" x2="${W - R}" y1="${y(v)}" y2="${y(v)}" stroke="#e5e5e5"/>`);
    out.push(`<text x="${L - 6}" y="${y(v) + 4}" text-anchor="end" fill="#555">${v.toFixed(2)}</text>`);
  }
  const every = Math.max(1, Math.ceil(maxStep / 12));
  for (let s = 0; s <= maxStep; s += every) {
    out.push(`<text x="${x(s)}" y="${H - B + 16}" text-anchor="middle" fill="#555">${s}</text>`);
  }
  out.push(`<text x="${(L + W - R) / 2}" y="${H - 6}" text-anchor="middle" fill="#333">training step</text>`);
  series.forEach((s, i) => {
    if (s.points.length === 0) return;
    const d = s.points.map((p, j) => `${j === 0 ? "M" : "L"}${x(p.step).toFixed(1)},${y(p.value).toFixed(1)}`).join(" ");
    out.push(`<path d="${d}" fill="none" stroke="${s.color}" stroke-width="2"/>`);
    for (const p of s.points) out.push(`<circle cx="${x(p.step).toFixed(1)}" cy="${y(p.value).toFixed(1)}" r="3" fill="${s.color}"/>`);
    const lx = W - R - 170;
    out.push(`<rect x="${lx}" y="${T + 4 + i * 16}" width="10" height="10" fill="${s.color}"/>`);
    out.push(`<text x="${lx + 14}" y="${T + 13 + i * 16}">${escapeXml(s.name)}</text>`);
  });
  out.push("</svg>");
  return `${out.join("\n")}\n`;
}

function escapeXml(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}
