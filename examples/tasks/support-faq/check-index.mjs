// Hidden grader for support-faq: compares kb/index.json with the ground-truth ticket topics.
// Prints {"reward": share of topics listed exactly right, "subscores": {topic: 0|1}}.
import { readFileSync } from "node:fs";
import { join } from "node:path";

const tickets = JSON.parse(readFileSync(join(process.env.REINS_HIDDEN, "tickets.json"), "utf8"));
const topics = ["billing", "seats", "export"];
const expected = Object.fromEntries(topics.map((t) => [t, tickets.filter((k) => k.topic === t).map((k) => k.id).sort()]));

let index = {};
try {
  index = JSON.parse(readFileSync(join(process.env.REINS_WORKSPACE, "kb/index.json"), "utf8"));
} catch {
  // Missing or malformed: every topic scores 0 (the checks explain why).
}
const subscores = Object.fromEntries(topics.map((t) => [t, JSON.stringify(index?.[t]) === JSON.stringify(expected[t]) ? 1 : 0]));
const reward = topics.reduce((s, t) => s + subscores[t], 0) / topics.length;
console.log(JSON.stringify({ reward, subscores }));
