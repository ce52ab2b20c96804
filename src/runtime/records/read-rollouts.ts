/**
 * Read a rollout record file (a run's `rollouts.jsonl`) into RolloutResults. Pure: text in,
 * results and diagnostics out; every mistake names its line and carries its catalogued code.
 *
 * Required: id, step, task, harness, status, reward, passed (what resume, rewards and reports
 * need). The rest is type-checked when present and otherwise defaulted (tries 1, no calls, …).
 */
import type { Result } from "../../compiler/contract/diagnostics.js";
import { failField, isObject, LineProblem, needField, optionalField, type ReadOptions, readJsonLines } from "./read-lines.js";
import { ROLLOUT_STATUSES, type RolloutResult, type RolloutStatus } from "./rollout-result.js";

const isString = (x: unknown) => typeof x === "string";
const isCount = (x: unknown) => Number.isInteger(x) && (x as number) >= 0;
const isProblem = (x: unknown) => isObject(x) && typeof x.code === "string" && typeof x.message === "string";

/** Parse JSON-lines rollout results. Blank lines are skipped. */
export function parseRolloutResults(text: string, file: string, options: ReadOptions = {}): Result<RolloutResult[]> {
  const { items, diagnostics } = readJsonLines(text, file, "RolloutRecord", parseRolloutResult, options);
  return { value: items.map((i) => i.value), diagnostics };
}

/** One line's value → a RolloutResult, or a LineProblem. */
export function parseRolloutResult(value: unknown): RolloutResult {
  if (!isObject(value)) throw new LineProblem("NotObject", "the line is JSON but not an object");
  const id = needField(value, "id");
  if (typeof id !== "string" || id === "") failField("id", "a non-empty string", id);
  const step = needField(value, "step");
  if (typeof step !== "number" || !Number.isInteger(step)) failField("step", "an integer", step);
  const task = needString(value, "task");
  const harness = needString(value, "harness");
  const status = needField(value, "status");
  if (!(ROLLOUT_STATUSES as readonly unknown[]).includes(status)) failField("status", `one of ${ROLLOUT_STATUSES.join(", ")}`, status);
  const reward = needField(value, "reward");
  if (reward !== null && (typeof reward !== "number" || !Number.isFinite(reward))) failField("reward", "a finite number or null", reward);
  const passed = needField(value, "passed");
  if (typeof passed !== "boolean") failField("passed", "a boolean", passed);
  const result: RolloutResult = {
    id,
    step,
    task,
    harness,
    pair: optionalField(value, "pair", isString, "a string", `${task}@${harness}`),
    attempt: optionalField(value, "attempt", isCount, "an integer >= 0", 0),
    category: optionalField(value, "category", isString, "a string", ""),
    status: status as RolloutStatus,
    reward,
    passed,
    tries: optionalField(value, "tries", (x) => Number.isInteger(x) && (x as number) >= 1, "an integer >= 1", 1),
    durationMs: optionalField(value, "durationMs", (x) => typeof x === "number" && x >= 0, "a number >= 0", 0),
    phases: optionalField(value, "phases", (x) => isObject(x) && Object.values(x).every((n) => typeof n === "number"), "an object of numbers", {}),
    calls: optionalField(value, "calls", isCount, "an integer >= 0", 0),
    harnessExit: optionalField(
      value,
      "harnessExit",
      (x) => x === null || (isObject(x) && typeof x.timedOut === "boolean"),
      "null or an object with a boolean `timedOut`",
      null,
    ),
    verifier: "verifier" in value ? value.verifier : null,
    retries: optionalField(value, "retries", (x) => Array.isArray(x) && x.every(isProblem), "an array of {code, message}", []),
    finishedAt: optionalField(value, "finishedAt", isString, "a string", ""),
  };
  if (value.error !== undefined) {
    if (!isProblem(value.error)) failField("error", "an object with string `code` and `message`", value.error);
    result.error = value.error as RolloutResult["error"];
  }
  if (value.weightsVersion !== undefined) {
    if (!isString(value.weightsVersion)) failField("weightsVersion", "a string", value.weightsVersion);
    result.weightsVersion = value.weightsVersion as string;
  }
  return result;
}

function needString(obj: Record<string, unknown>, field: string): string {
  const v = needField(obj, field);
  if (typeof v !== "string") failField(field, "a string", v);
  return v;
}
