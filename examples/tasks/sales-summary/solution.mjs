#!/usr/bin/env node
// Reference solution for the sales-summary family, computed from the workspace alone.
// Usage: node solution.mjs WORKSPACE [--mistake NAME]   |   node solution.mjs --mistakes
// Each mistake is a realistic wrong answer the verifier must score below 1.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const MISTAKES = {
  "off-by-one": "skips the last order (a loop bound bug)",
  "top-by-units": "names the product that sold the most units, not the most revenue",
  "malformed-json": "writes summary.json with a trailing comma",
  "wrong-path": "writes summary.json at the workspace root instead of out/",
};

const [ws, flag, mistake] = process.argv.slice(2);
if (ws === "--mistakes") {
  console.log(JSON.stringify(MISTAKES, null, 2));
  process.exit(0);
}
if (!ws || (flag !== undefined && (flag !== "--mistake" || !(mistake in MISTAKES)))) {
  console.error(`usage: solution.mjs WORKSPACE [--mistake ${Object.keys(MISTAKES).join("|")}]`);
  process.exit(2);
}

const csvName = readdirSync(join(ws, "data")).find((f) => /^sales-.*\.csv$/.test(f));
const [header, ...lines] = readFileSync(join(ws, "data", csvName), "utf8").trim().split("\n");
const cols = header.split(",");
let rows = lines.map((l) => Object.fromEntries(l.split(",").map((v, i) => [cols[i], v])));
if (mistake === "off-by-one") rows = rows.slice(0, -1);

const round2 = (x) => Math.round(x * 100) / 100;
let total = 0;
const byRegion = {};
const byProduct = {};
const units = {};
for (const r of rows) {
  const revenue = Number(r.units) * Number(r.unit_price);
  total += revenue;
  byRegion[r.region] = (byRegion[r.region] ?? 0) + revenue;
  byProduct[r.product] = (byProduct[r.product] ?? 0) + revenue;
  units[r.product] = (units[r.product] ?? 0) + Number(r.units);
}
const best = (m) => Object.entries(m).sort((a, b) => b[1] - a[1])[0][0];
const top = mistake === "top-by-units" ? best(units) : best(byProduct);
const summary = {
  total_revenue: round2(total),
  by_region: Object.fromEntries(Object.entries(byRegion).sort().map(([k, v]) => [k, round2(v)])),
  top_product: top,
};
const leader = best(byRegion);
const laggard = Object.entries(byRegion).sort((a, b) => a[1] - b[1])[0][0];

mkdirSync(join(ws, "out"), { recursive: true });
let json = JSON.stringify(summary, null, 2);
if (mistake === "malformed-json") json = json.replace(/\n}$/, ",\n}");
writeFileSync(join(ws, mistake === "wrong-path" ? "summary.json" : "out/summary.json"), `${json}\n`);
writeFileSync(
  join(ws, "out/report.md"),
  [
    `# Sales report (${csvName.replace(/^sales-|\.csv$/g, "").toUpperCase()})`,
    "",
    `Total revenue: ${summary.total_revenue.toFixed(2)}`,
    "",
    `The top product by revenue is **${top}**.`,
    "",
    `- ${leader} leads with ${round2(byRegion[leader]).toFixed(2)} in revenue; ${laggard} lags with ${round2(byRegion[laggard]).toFixed(2)}.`,
    `- ${rows.length} orders in total.`,
    "",
  ].join("\n"),
);
