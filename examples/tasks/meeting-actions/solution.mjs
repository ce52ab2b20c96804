#!/usr/bin/env node
// Reference solution for the meeting-actions family, computed from the workspace alone.
// Usage: node solution.mjs WORKSPACE [--mistake NAME]   |   node solution.mjs --mistakes
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const MISTAKES = {
  "note-order": "keeps the items in the order of the notes instead of sorting them",
  "include-done": "also lists the completed [x] item",
  "off-by-one-date": "shifts one due date by a day (a time-zone slip)",
  "malformed-json": "leaves a trailing comma in actions.json",
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

const team = {};
for (const m of readFileSync(join(ws, "team.yaml"), "utf8").matchAll(/\{handle: (\w+), name: ([^,]+), email: ([^}]+)\}/g)) {
  team[m[1]] = { name: m[2].trim(), email: m[3].trim() };
}
const notes = readFileSync(join(ws, "notes", readdirSync(join(ws, "notes"))[0]), "utf8");
const pattern = mistake === "include-done" ? /^- \[[ x]\] (?:ACTION )?@(\w+): (.+?) \((?:due (\d{4}-\d{2}-\d{2})|done)\)$/gm : /^- \[ \] ACTION @(\w+): (.+) \(due (\d{4}-\d{2}-\d{2})\)$/gm;
const items = [...notes.matchAll(pattern)].map((m) => ({ owner: team[m[1]].name, email: team[m[1]].email, task: m[2], due: m[3] ?? "2099-01-01" }));
if (mistake !== "note-order") items.sort((a, b) => a.due.localeCompare(b.due) || a.owner.localeCompare(b.owner));
if (mistake === "off-by-one-date") {
  const d = new Date(`${items[0].due}T00:00:00Z`);
  items[0].due = new Date(d.getTime() - 86400000).toISOString().slice(0, 10);
}

mkdirSync(join(ws, "out"), { recursive: true });
let json = JSON.stringify(items, null, 2);
if (mistake === "malformed-json") json = json.replace(/}\n]$/, "},\n]");
writeFileSync(join(ws, "out/actions.json"), `${json}\n`);

const owners = [...new Set(items.map((i) => i.owner))];
const sections = owners.map((o) => {
  const mine = items.filter((i) => i.owner === o);
  return [`## ${o}`, "", `Hi ${o.split(" ")[0]}, here is what you took on:`, ...mine.map((i) => `- ${i.task} — due ${i.due}`), ""].join("\n");
});
writeFileSync(join(ws, "out/followup.md"), ["# Follow-up", "", "Thanks everyone for a productive meeting.", "", ...sections].join("\n"));
