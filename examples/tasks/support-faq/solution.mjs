#!/usr/bin/env node
// Reference solution for the support-faq family, computed from the workspace alone.
// Usage: node solution.mjs WORKSPACE [--mistake NAME]   |   node solution.mjs --mistakes
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const MISTAKES = {
  "stale-price": "repeats the wrong Pro price a customer quoted",
  "missing-topic": "leaves out the Export section and its index entry",
  "malformed-json": "writes index.json with single quotes",
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

const facts = readFileSync(join(ws, "product/facts.yaml"), "utf8");
const num = (re) => Number(re.exec(facts)[1]);
const starter = { price: num(/Starter, priceUsdPerMonth: (\d+)/), seats: num(/Starter, priceUsdPerMonth: \d+, maxSeats: (\d+)/) };
const pro = { price: num(/Pro, priceUsdPerMonth: (\d+)/), seats: num(/Pro, priceUsdPerMonth: \d+, maxSeats: (\d+)/) };
const refundDays = num(/windowDays: (\d+)/);
const formats = /formats: \[([^\]]*)\]/.exec(facts)[1];
const refundHow = /how: "([^"]*)"/.exec(facts)[1];

const topicOf = (subject) => (/export|download/i.test(subject) ? "export" : /seat|user|team size/i.test(subject) ? "seats" : "billing");
const index = { billing: [], seats: [], export: [] };
let stale;
for (const f of readdirSync(join(ws, "tickets")).filter((f) => /^T-\d+\.md$/.test(f))) {
  const text = readFileSync(join(ws, "tickets", f), "utf8");
  index[topicOf(text.split("\n")[0])].push(f.replace(/\.md$/, ""));
  stale ??= /\$(\d+)/.exec(text)?.[1];
}
for (const k of Object.keys(index)) index[k].sort();
if (mistake === "missing-topic") delete index.export;

const proPrice = mistake === "stale-price" ? stale : pro.price;
const sections = [
  "## Billing",
  "",
  `**How much does it cost?** Starter is $${starter.price}/month and Pro is $${proPrice}/month.`,
  "",
  `**Can I get a refund?** Yes, within ${refundDays} days of payment. ${refundHow}`,
  "",
  "**Where are my invoices?** Under Settings > Billing > Invoices.",
  "",
  "## Seats",
  "",
  `**How many users can we have?** Starter allows up to ${starter.seats} seats and Pro up to ${pro.seats}. Everyone who signs in, contractors included, uses a seat.`,
  "",
];
if (mistake !== "missing-topic") {
  sections.push("## Export", "", `**How do I get my data out?** Go to Settings > Data > Export; you can download everything as ${formats}.`, "");
}
mkdirSync(join(ws, "kb"), { recursive: true });
writeFileSync(join(ws, "kb/faq.md"), ["# Frequently asked questions", "", ...sections].join("\n"));
let json = JSON.stringify(index, null, 2);
if (mistake === "malformed-json") json = json.replace(/"/g, "'");
writeFileSync(join(ws, "kb/index.json"), `${json}\n`);
