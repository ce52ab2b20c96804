#!/usr/bin/env node
// Reference solution for the sprint-plan family, computed from the workspace alone.
// Usage: node solution.mjs WORKSPACE [--mistake NAME]   |   node solution.mjs --mistakes
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const MISTAKES = {
  "ignore-deps": "schedules items without looking at their dependencies",
  "strict-capacity": "never fills a sprint exactly (an off-by-one `<` for `<=`)",
  "malformed-json": "writes sprints.json with a comment in it",
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

// backlog.yaml is simple enough to read line by line.
const items = [];
for (const line of readFileSync(join(ws, "backlog.yaml"), "utf8").split("\n")) {
  const m = /^\s*(-\s+)?(id|title|points|priority|dependsOn):\s*(.*)$/.exec(line);
  if (!m) continue;
  if (m[1]) items.push({});
  const it = items[items.length - 1];
  const v = m[3].trim();
  it[m[2]] = m[2] === "dependsOn" ? v.replace(/[[\]]/g, "").split(",").map((s) => s.trim()).filter(Boolean) : m[2] === "points" || m[2] === "priority" ? Number(v) : v;
}
const team = readFileSync(join(ws, "team.yaml"), "utf8");
const capacity = Number(/capacityPerSprint:\s*(\d+)/.exec(team)[1]);
const count = Number(/sprints:\s*(\d+)/.exec(team)[1]);

const order = [...items].sort((a, b) => a.priority - b.priority || Number(a.id.slice(2)) - Number(b.id.slice(2)));
const where = {};
const left = Array(count).fill(capacity);
const sprints = Array.from({ length: count }, (_, i) => ({ name: `Sprint ${i + 1}`, items: [], points: 0 }));
const unscheduled = [];
const why = {};
for (const it of order) {
  let min = 0;
  let blocked = false;
  if (mistake !== "ignore-deps") {
    for (const d of it.dependsOn) {
      if (where[d] === undefined) blocked = true;
      else min = Math.max(min, where[d] + 1);
    }
  }
  const fits = (s) => (mistake === "strict-capacity" ? it.points < left[s] : it.points <= left[s]);
  let s = blocked ? count : min;
  while (s < count && !fits(s)) s++;
  if (s < count) {
    left[s] -= it.points;
    sprints[s].items.push(it.id);
    sprints[s].points += it.points;
    where[it.id] = s;
  } else {
    unscheduled.push(it.id);
    why[it.id] = blocked ? "it depends on an unscheduled item" : `its ${it.points} points fit in no remaining sprint`;
  }
}
unscheduled.sort();

mkdirSync(join(ws, "plan"), { recursive: true });
let json = JSON.stringify({ sprints, unscheduled }, null, 2);
if (mistake === "malformed-json") json = `// generated plan\n${json}`;
writeFileSync(join(ws, "plan/sprints.json"), `${json}\n`);
const title = (id) => items.find((i) => i.id === id).title;
writeFileSync(
  join(ws, "plan/README.md"),
  [
    "# Sprint plan",
    "",
    `Capacity: ${capacity} points per sprint. Items were taken by priority, then id.`,
    "",
    ...sprints.map((s) => `- **${s.name}** (${s.points}/${capacity} points): ${s.items.map((id) => `${id} ${title(id)}`).join(", ") || "nothing"}`),
    "",
    "## Not scheduled",
    "",
    ...(unscheduled.length ? unscheduled.map((id) => `- ${id} ${title(id)}: ${why[id]}.`) : ["Everything fits."]),
    "",
  ].join("\n"),
);
