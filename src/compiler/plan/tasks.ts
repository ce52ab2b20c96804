/**
 * The tasks a plan carries (pure): those its steps use (every seed's), each as it runs — graded by
 * the judge its rubric names or else the policy, timed by the Sandbox when it sets no timeout of
 * its own, with the Experiment's or Evaluation's MCP servers before its own — and the judge Models
 * other than the policy.
 */
import { makeDiagnostic, type Diagnostic, type Result } from "../contract/diagnostics.js";
import { CODES } from "../contract/codes.js";
import type { ResolvedMcpServer, ResolvedModel, ResolvedSandbox, ResolvedTask } from "../contract/plan.js";
import type { World } from "../resolve/world.js";
import type { ScheduledSteps } from "./schedule.js";
import type { At } from "./target.js";

export interface PlanTasks {
  tasks: ResolvedTask[];
  judges: ResolvedModel[];
}

export function planTasks(
  world: World,
  scheduled: readonly ScheduledSteps[],
  c: { model: ResolvedModel | undefined; sandbox: ResolvedSandbox; mcpServers: readonly ResolvedMcpServer[]; at: At },
): Result<PlanTasks> {
  const used = new Set(scheduled.flatMap((x) => x.steps.flatMap((s) => s.rollouts.map((r) => r.task))));
  const judged = planJudges(
    [...used].map((n) => world.tasks.get(n)!.value),
    c.model,
    world,
    c.at,
  );
  // A task without its own timeoutSeconds takes the Sandbox's (the "default rollout timeout").
  const timed = judged.value.tasks.map((t) =>
    t.timeoutDefaulted && t.timeoutSeconds !== c.sandbox.timeoutSeconds ? { ...t, timeoutSeconds: c.sandbox.timeoutSeconds } : t,
  );
  // The Experiment's or Evaluation's MCP servers come first in every task's (they are in the plan hash through the tasks).
  const tasks = c.mcpServers.length > 0 ? timed.map((t) => ({ ...t, mcpServers: [...c.mcpServers, ...(t.mcpServers ?? [])] })) : timed;
  return { value: { tasks, judges: judged.value.judges }, diagnostics: judged.diagnostics };
}

/**
 * Which Model grades each rubric: the one its `judge` names, or the policy when it names none.
 * The plan's tasks carry the name in `rubric.judge` (copies; the world's tasks are left as they
 * are) and `judges` holds the judge Models other than the policy. A rubric with neither a judge
 * nor a policy to fall back on is an error (JudgeRequired).
 */
function planJudges(used: ResolvedTask[], model: ResolvedModel | undefined, world: World, at: At): Result<PlanTasks> {
  const diagnostics: Diagnostic[] = [];
  const judges = new Map<string, ResolvedModel>();
  const tasks = used.map((t) => {
    const rubric = t.verifier.rubric;
    if (!rubric) return t;
    const name = rubric.judge ?? model?.name;
    if (name === undefined) {
      diagnostics.push(
        makeDiagnostic(
          "JudgeRequired",
          at("tasks"),
          `Task "${t.name}" has a rubric that names no judge, and there is no model to grade it.`,
          CODES.JudgeRequired,
        ),
      );
      return t;
    }
    if (name !== model?.name) {
      const m = world.models.get(name)?.value;
      if (!m) return t; // reported by the world (resolve/judges.ts) as UnknownReference
      judges.set(name, m);
    }
    return rubric.judge === name ? t : { ...t, verifier: { ...t.verifier, rubric: { ...rubric, judge: name } } };
  });
  return { value: { tasks, judges: [...judges.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)) }, diagnostics };
}
