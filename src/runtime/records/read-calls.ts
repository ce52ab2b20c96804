/**
 * Read a call record file (JSON lines: `reins proxy --record FILE`, a run's `calls.jsonl`, or
 * another tool's output) into CallRecords of the current version. Pure: text in, records and
 * diagnostics out; every mistake names its line and carries its catalogued code.
 *
 * Required (trajectories need them): the rollout id, seq, promptIds, completionIds and
 * completionLogprobs. Everything else is type-checked when present and otherwise defaulted:
 * `v` 2, `try` 1, `callClass` "main", `finishReason` "stop", `dialect` "openai-chat",
 * `weightsVersion` "unknown", bookkeeping fields empty. Unknown extra fields are ignored.
 * Version 1 lines name the rollout `rollout` (or `rolloutId` when the run store tagged them).
 */
import type { Result } from "../../compiler/contract/diagnostics.js";
import type { CallClass } from "../../compiler/contract/plan.js";
import { DIALECTS } from "../../compiler/contract/plan.js";
import { CALL_CLASSES, CALL_RECORD_VERSION, type CallRecord, FINISH_REASONS, type FinishReason } from "./call-record.js";
import { diagnosticOf, failField, isObject, LineProblem, needField, optionalField, type ReadOptions, readJsonLines } from "./read-lines.js";

const MAX_TOKEN_ID = 2 ** 31 - 1;
const isString = (x: unknown) => typeof x === "string";
const isNonEmptyString = (x: unknown) => typeof x === "string" && x !== "";

/** Parse JSON-lines call records. Blank lines are skipped; an empty file is a warning. */
export function parseCallRecords(text: string, file: string, options: ReadOptions = {}): Result<CallRecord[]> {
  const { items, diagnostics } = readJsonLines(text, file, "CallRecord", parseCallRecord, options);
  const records: CallRecord[] = [];
  const seen = new Map<string, number>();
  for (const { value: record, line } of items) {
    const key = JSON.stringify([record.rolloutId, record.seq]);
    const first = seen.get(key);
    if (first !== undefined) {
      diagnostics.push(
        diagnosticOf("CallRecordDuplicateSeq", { file, line }, `rollout ${record.rolloutId} has seq ${record.seq} twice (lines ${first} and ${line})`),
      );
      continue;
    }
    seen.set(key, line);
    records.push(record);
  }
  diagnostics.sort((x, y) => x.line - y.line);
  if (records.length === 0 && diagnostics.length === 0) {
    diagnostics.push(diagnosticOf("CallRecordsEmpty", { file, line: 1 }, "the file holds no call records", "warning"));
  }
  return { value: records, diagnostics };
}

/** One line's value → a current-version CallRecord, or a LineProblem. */
export function parseCallRecord(value: unknown): CallRecord {
  if (!isObject(value)) throw new LineProblem("NotObject", "the line is JSON but not an object");
  const v = value.v ?? CALL_RECORD_VERSION;
  if (v !== 1 && v !== 2) throw new LineProblem("Version", `record version ${JSON.stringify(v)} is not supported (expected 1 or 2)`);
  const rolloutId =
    v === 1 ? legacyRolloutId(value) : needField(value, "rolloutId", "rollout" in value ? ' (`rollout` is its version-1 name: mark such lines "v": 1)' : "");
  if (!isNonEmptyString(rolloutId)) failField(v === 1 && !("rolloutId" in value) ? "rollout" : "rolloutId", "a non-empty string", rolloutId);
  const seq = needField(value, "seq");
  if (typeof seq !== "number" || !Number.isInteger(seq) || seq < 0) failField("seq", "an integer >= 0", seq);
  const promptIds = tokenIds(value, "promptIds");
  const completionIds = tokenIds(value, "completionIds");
  const completionLogprobs = logprobs(value, "completionLogprobs");
  if (completionLogprobs.length !== completionIds.length) {
    throw new LineProblem("LogprobMismatch", `completionLogprobs has ${completionLogprobs.length} entries for ${completionIds.length} completion ids`);
  }
  const record: CallRecord = {
    v: CALL_RECORD_VERSION,
    rolloutId: rolloutId as string,
    try: v === 1 ? 1 : optionalField(value, "try", (x) => Number.isInteger(x) && (x as number) >= 1, "an integer >= 1", 1),
    seq,
    dialect: optionalField(value, "dialect", (x) => (DIALECTS as readonly unknown[]).includes(x), `one of ${DIALECTS.join(", ")}`, "openai-chat"),
    model: optionalField(value, "model", isString, "a string", ""),
    stream: optionalField(value, "stream", (x) => typeof x === "boolean", "a boolean", false),
    promptIds,
    completionIds,
    completionLogprobs,
    finishReason: optionalField<FinishReason>(
      value,
      "finishReason",
      (x) => (FINISH_REASONS as readonly unknown[]).includes(x),
      `one of ${FINISH_REASONS.join(", ")}`,
      "stop",
    ),
    parse: optionalField(value, "parse", (x) => isObject(x) && typeof x.ok === "boolean", "an object with a boolean `ok`", { ok: true }),
    callClass: optionalField<CallClass>(
      value,
      "callClass",
      (x) => (CALL_CLASSES as readonly unknown[]).includes(x),
      `one of ${CALL_CLASSES.join(", ")}`,
      "main",
    ),
    reused: optionalField(value, "reused", (x) => Array.isArray(x) && x.every((s) => Number.isInteger(s)), "an array of seq numbers", []),
    tokenizedPromptTokens: optionalField(value, "tokenizedPromptTokens", (x) => Number.isInteger(x), "an integer", 0),
    weightsVersion: optionalField(value, "weightsVersion", isString, "a string", "unknown"),
    timings: optionalField(
      value,
      "timings",
      (x) => isObject(x) && typeof x.receivedMs === "number" && typeof x.doneMs === "number",
      "an object with numeric receivedMs and doneMs",
      { receivedMs: 0, doneMs: 0 },
    ),
  };
  for (const field of ["promptTokens", "bodyBytes"] as const) {
    const n = value[field];
    if (n !== undefined) record[field] = optionalField(value, field, (x) => Number.isInteger(x) && (x as number) >= 0, "an integer >= 0", 0);
  }
  if (value.templateCheck !== undefined) {
    record.templateCheck = optionalField(
      value,
      "templateCheck",
      (x) => isObject(x) && typeof x.match === "boolean" && Number.isInteger(x.templateTokens),
      "an object with a boolean `match` and an integer `templateTokens`",
      { match: true, templateTokens: 0 },
    );
  }
  if ("error" in value && value.error !== undefined && value.error !== null) {
    const e = value.error;
    if (!isObject(e) || typeof e.kind !== "string" || typeof e.message !== "string") failField("error", "an object with string `kind` and `message`", e);
    record.error = e as CallRecord["error"];
  }
  return record;
}

/** Version 1: the run store's `rolloutId` tag when present, else the proxy's `rollout`. */
function legacyRolloutId(value: Record<string, unknown>): unknown {
  return "rolloutId" in value ? value.rolloutId : needField(value, "rollout");
}

function tokenIds(obj: Record<string, unknown>, field: string): number[] {
  const v = needField(obj, field);
  if (!Array.isArray(v)) failField(field, "an array of token ids", v);
  for (let i = 0; i < v.length; i++) {
    const t = v[i];
    if (typeof t !== "number" || !Number.isInteger(t) || t < 0 || t > MAX_TOKEN_ID) failField(`${field}[${i}]`, "a token id (integer >= 0)", t);
  }
  return v as number[];
}

function logprobs(obj: Record<string, unknown>, field: string): number[] {
  const v = needField(obj, field);
  if (!Array.isArray(v)) failField(field, "an array of numbers", v);
  for (let i = 0; i < v.length; i++) if (typeof v[i] !== "number" || !Number.isFinite(v[i])) failField(`${field}[${i}]`, "a finite number", v[i]);
  return v as number[];
}
