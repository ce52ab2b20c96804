/**
 * One call's record while the call runs: opened on arrival with the rollout's identity and the
 * next seq, filled in stage by stage, handed over exactly once (however the call ends).
 */
import type { Code } from "../../compiler/contract/codes.js";
import { CALL_RECORD_VERSION, type CallRecord } from "../records/index.js";
import type { DialectHandler } from "./dialects/dialect.js";
import type { Rollout } from "./rollouts.js";

export type CallErrorKind = NonNullable<CallRecord["error"]>["kind"];

export interface PendingCall {
  readonly rollout: Rollout;
  readonly record: CallRecord;
  /** "<path>:<seq>": the seed of the response, tool-call and reasoning ids. */
  readonly key: string;
  /** Hand the record over (once; later calls do nothing). */
  finish(): void;
  /** Mark the record failed without handing it over yet. */
  setError(kind: CallErrorKind, message: string, finishReason?: CallRecord["finishReason"], code?: Code): void;
}

/** Open the record of a call that just arrived; `deliver` receives it when the call is over. */
export function openCall(rollout: Rollout, dialect: DialectHandler, deliver: (rollout: Rollout, record: CallRecord) => void): PendingCall {
  const receivedMs = Date.now();
  const seq = rollout.nextSeq++;
  const record: CallRecord = {
    v: CALL_RECORD_VERSION,
    rolloutId: rollout.rolloutId,
    try: rollout.try,
    seq,
    dialect: dialect.name,
    model: "",
    stream: false,
    promptIds: [],
    completionIds: [],
    completionLogprobs: [],
    finishReason: "error",
    parse: { ok: false },
    callClass: "main",
    reused: [],
    tokenizedPromptTokens: 0,
    weightsVersion: rollout.weightsVersion ?? "",
    timings: { receivedMs, doneMs: receivedMs },
  };
  let delivered = false;
  return {
    rollout,
    record,
    key: `${rollout.path}:${seq}`,
    finish() {
      if (delivered) return;
      delivered = true;
      record.timings.doneMs = Date.now();
      deliver(rollout, record);
    },
    setError(kind, message, finishReason, code) {
      record.error = code ? { kind, message, code } : { kind, message };
      if (finishReason) record.finishReason = finishReason;
    },
  };
}
