// Hidden grader for sprint-plan. Reads the plan the agent wrote and the true backlog (a hidden
// copy: editing the workspace backlog changes nothing here). Prints the reward and sub-scores:
//   valid: the plan parses and has 3 sprints;  complete: every item appears exactly once;
//   capacity: no sprint is over capacity and each `points` is right;
//   dependencies: every item comes strictly after what it depends on;  rule: the plan is the one
//   the stated greedy rule gives. reward = (valid + complete + capacity + dependencies + 2·rule) / 6.
import { readFileSync } from "node:fs";
import { join } from "node:path";

const backlog = JSON.parse(readFileSync(join(process.env.REINS_HIDDEN, "backlog.json"), "utf8"));
const SPRINTS = 3;
const byId = Object.fromEntries(backlog.items.map((i) => [i.id, i]));

function greedy() {
  const order = [...backlog.items].sort((a, b) => a.priority - b.priority || Number(a.id.slice(2)) - Number(b.id.slice(2)));
  const where = {};
  const left = Array(SPRINTS).fill(backlog.capacity);
  const sprints = Array.from({ length: SPRINTS }, () => []);
  const unscheduled = [];
  for (const it of order) {
    let min = 0;
    let blocked = false;
    for (const d of it.dependsOn) {
      if (where[d] === undefined) blocked = true;
      else min = Math.max(min, where[d] + 1);
    }
    let s = blocked ? SPRINTS : min;
    while (s < SPRINTS && it.points > left[s]) s++;
    if (s < SPRINTS) {
      left[s] -= it.points;
      sprints[s].push(it.id);
      where[it.id] = s;
    } else unscheduled.push(it.id);
  }
  return { sprints, unscheduled: unscheduled.sort() };
}

const scores = { valid: 0, complete: 0, capacity: 0, dependencies: 0, rule: 0 };
let plan;
try {
  plan = JSON.parse(readFileSync(join(process.env.REINS_WORKSPACE, "plan/sprints.json"), "utf8"));
} catch {
  plan = undefined;
}
if (plan && Array.isArray(plan.sprints) && plan.sprints.length === SPRINTS && Array.isArray(plan.unscheduled) && plan.sprints.every((s) => Array.isArray(s?.items))) {
  scores.valid = 1;
  const placed = plan.sprints.flatMap((s) => s.items);
  const all = [...placed, ...plan.unscheduled];
  scores.complete = all.length === backlog.items.length && new Set(all).size === all.length && all.every((id) => byId[id]) ? 1 : 0;
  scores.capacity = plan.sprints.every((s) => {
    const sum = s.items.reduce((n, id) => n + (byId[id]?.points ?? 0), 0);
    return sum <= backlog.capacity && s.points === sum;
  })
    ? 1
    : 0;
  const sprintOf = {};
  plan.sprints.forEach((s, i) => s.items.forEach((id) => (sprintOf[id] = i)));
  scores.dependencies = placed.every((id) => (byId[id]?.dependsOn ?? []).every((d) => sprintOf[d] !== undefined && sprintOf[d] < sprintOf[id])) ? 1 : 0;
  const want = greedy();
  scores.rule = JSON.stringify(plan.sprints.map((s) => s.items)) === JSON.stringify(want.sprints) && JSON.stringify(plan.unscheduled) === JSON.stringify(want.unscheduled) ? 1 : 0;
}
const reward = (scores.valid + scores.complete + scores.capacity + scores.dependencies + 2 * scores.rule) / 6;
console.log(JSON.stringify({ reward, subscores: scores }));
