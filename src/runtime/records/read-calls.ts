/**
 * Parse a call record file (JSON lines, the format the proxy writes) into CallRecords.
 * Pure: text in, records and diagnostics out. Every mistake names its line.
 *
 * Required (trajectories need them): v, rollout, seq, promptIds, completionIds,
 * completionLogprobs, callClass, finishReason. The other CallRecord fields are type-checked when
 * present; `weightsVersion` defaults to "unknown", `dialect` to "openai-chat", missing
 * bookkeeping fields to empty values. Unknown extra fields are ignored (forward compatible).
 */
import type { Code } from "../../compiler/contract/codes.js";
import type { Diagnostic, Result } from "../../compiler/contract/diagnostics.js";
import { makeDiagnostic } from "../../compiler/contract/diagnostics.js";
import type { CallClass } from "../../compiler/contract/plan.js";
import { DIALECTS } from "../../compiler/contract/plan.js";
import type { CallRecord, FinishReason } from "./call-record.js";

export const CALL_CLASSES: readonly CallClass[] = ["main", "subagent", "compaction", "title", "auxiliary"];
const FINISH_REASONS: readonly FinishReason[] = ["stop", "tool_calls", "length", "error", "aborted"];
const MAX_TOKEN_ID = 2 ** 31 - 1;

class LineError {
  constructor(
    readonly code: Code,
    readonly message: string,
    readonly hint: string,
  ) {}
}

function fail(field: string, expected: string, got: unknown): never {
  const shown = JSON.stringify(got);
  const short = shown === undefined ? String(got) : shown.length > 40 ? `${shown.slice(0, 40)}…` : shown;
  throw new LineError(
    "CallRecordInvalidField",
    `field \`${field}\` must be ${expected}, got ${short}`,
    "Call record files are written by the proxy (`--record FILE`); check that the file was not edited or truncated.",
  );
}

function need(obj: Record<string, unknown>, field: string): unknown {
  if (!(field in obj)) {
    throw new LineError("CallRecordMissingField", `field \`${field}\` is missing`, "Each line must be one complete CallRecord (src/runtime/records/call-record.ts).");
  }
  return obj[field];
}

function tokenIds(obj: Record<string, unknown>, field: string): number[] {
  const v = need(obj, field);
  if (!Array.isArray(v)) fail(field, "an array of token ids", v);
  for (let i = 0; i < v.length; i++) {
    const t = v[i];
    if (typeof t !== "number" || !Number.isInteger(t) || t < 0 || t > MAX_TOKEN_ID) fail(`${field}[${i}]`, "a token id (integer >= 0)", t);
  }
  return v as number[];
}

function logprobs(obj: Record<string, unknown>, field: string): number[] {
  const v = need(obj, field);
  if (!Array.isArray(v)) fail(field, "an array of numbers", v);
  for (let i = 0; i < v.length; i++) if (typeof v[i] !== "number" || !Number.isFinite(v[i])) fail(`${field}[${i}]`, "a finite number", v[i]);
  return v as number[];
}

function optional<T>(obj: Record<string, unknown>, field: string, check: (v: unknown) => boolean, expected: string, fallback: T): T {
  if (!(field in obj)) return fallback;
  const v = obj[field];
  if (!check(v)) fail(field, expected, v);
  return v as T;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

function parseRecord(value: unknown): CallRecord {
  if (!isObject(value)) throw new LineError("CallRecordNotObject", "the line is JSON but not an object", "Each line must be one CallRecord object.");
  const v = need(value, "v");
  if (v !== 1) throw new LineError("CallRecordVersion", `record version ${JSON.stringify(v)} is not supported (expected 1)`, "Rebuild the record file with this version of reins.");
  const rollout = need(value, "rollout");
  if (typeof rollout !== "string" || rollout === "") fail("rollout", "a non-empty string", rollout);
  const seq = need(value, "seq");
  if (typeof seq !== "number" || !Number.isInteger(seq) || seq < 0) fail("seq", "an integer >= 0", seq);
  const promptIds = tokenIds(value, "promptIds");
  const completionIds = tokenIds(value, "completionIds");
  const completionLogprobs = logprobs(value, "completionLogprobs");
  if (completionLogprobs.length !== completionIds.length) {
    throw new LineError(
      "CallRecordLogprobMismatch",
      `completionLogprobs has ${completionLogprobs.length} entries for ${completionIds.length} completion ids`,
      "Each generated token needs exactly one rollout logprob.",
    );
  }
  const callClass = need(value, "callClass");
  if (typeof callClass !== "string" || !(CALL_CLASSES as readonly string[]).includes(callClass)) fail("callClass", `one of ${CALL_CLASSES.join(", ")}`, callClass);
  const finishReason = need(value, "finishReason");
  if (typeof finishReason !== "string" || !(FINISH_REASONS as readonly string[]).includes(finishReason)) fail("finishReason", `one of ${FINISH_REASONS.join(", ")}`, finishReason);
  const isString = (x: unknown) => typeof x === "string";
  const record: CallRecord = {
    v: 1,
    rollout,
    seq,
    dialect: optional(value, "dialect", (x) => (DIALECTS as readonly unknown[]).includes(x), `one of ${DIALECTS.join(", ")}`, "openai-chat"),
    model: optional(value, "model", isString, "a string", ""),
    stream: optional(value, "stream", (x) => typeof x === "boolean", "a boolean", false),
    promptIds,
    completionIds,
    completionLogprobs,
    finishReason: finishReason as FinishReason,
    parse: optional(value, "parse", (x) => isObject(x) && typeof x.ok === "boolean", "an object with a boolean `ok`", { ok: true }),
    callClass: callClass as CallClass,
    reused: optional(value, "reused", (x) => Array.isArray(x) && x.every((s) => Number.isInteger(s)), "an array of seq numbers", []),
    tokenizedPromptTokens: optional(value, "tokenizedPromptTokens", (x) => Number.isInteger(x), "an integer", 0),
    weightsVersion: optional(value, "weightsVersion", isString, "a string", "unknown"),
    timings: optional(value, "timings", (x) => isObject(x) && typeof x.receivedMs === "number" && typeof x.doneMs === "number", "an object with numeric receivedMs and doneMs", { receivedMs: 0, doneMs: 0 }),
  };
  if ("error" in value && value.error !== undefined && value.error !== null) {
    const e = value.error;
    if (!isObject(e) || typeof e.kind !== "string" || typeof e.message !== "string") fail("error", "an object with string `kind` and `message`", e);
    record.error = e as CallRecord["error"];
  }
  return record;
}

function jsonColumn(message: string): number {
  const m = /position (\d+)/.exec(message) ?? /column (\d+)/.exec(message);
  if (!m) return 1;
  return /position/.test(m[0]) ? Number(m[1]) + 1 : Number(m[1]);
}

/** Parse JSON-lines call records. Blank lines are skipped. */
export function parseCallRecords(text: string, file: string): Result<CallRecord[]> {
  const records: CallRecord[] = [];
  const diagnostics: Diagnostic[] = [];
  const seen = new Map<string, number>();
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim();
    if (line === "") continue;
    const at = { file, line: i + 1, column: 1 };
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (err) {
      const message = (err as Error).message;
      diagnostics.push(
        makeDiagnostic(
          "CallRecordNotJson",
          { ...at, column: jsonColumn(message) },
          `line is not valid JSON (${message})`,
          "A call record file has one JSON object per line, as the proxy writes it.",
        ),
      );
      continue;
    }
    try {
      const record = parseRecord(value);
      const key = JSON.stringify([record.rollout, record.seq]);
      const first = seen.get(key);
      if (first !== undefined) {
        diagnostics.push(
          makeDiagnostic(
            "CallRecordDuplicateSeq",
            at,
            `rollout ${record.rollout} has seq ${record.seq} twice (lines ${first} and ${i + 1})`,
            "Each call of a rollout has its own seq; concatenated files must not repeat a rollout.",
          ),
        );
        continue;
      }
      seen.set(key, i + 1);
      records.push(record);
    } catch (err) {
      if (!(err instanceof LineError)) throw err;
      diagnostics.push(makeDiagnostic(err.code, at, err.message, err.hint));
    }
  }
  if (records.length === 0 && diagnostics.length === 0) {
    diagnostics.push(
      makeDiagnostic("CallRecordsEmpty", { file, line: 1, column: 1 }, "the file holds no call records", "Point the command at a proxy record file (`calls.jsonl`).", "warning"),
    );
  }
  return { value: records, diagnostics };
}
