/**
 * Records: the call and rollout record formats, their one writer and their one reader.
 * A leaf: imports only the compiler's contract types and node builtins; everything that writes
 * or reads a record (proxy, run store, executor, trajectories, the CLI) goes through here.
 */
export { CALL_CLASSES, CALL_RECORD_VERSION, FINISH_REASONS } from "./call-record.js";
export type { CallRecord, FinishReason } from "./call-record.js";
export { ROLLOUT_STATUSES } from "./rollout-result.js";
export type { RolloutResult, RolloutStatus } from "./rollout-result.js";
export { appendRecords, appendWhole, formatRecordLine, formatRecordLines } from "./write-records.js";
export type { RecordLine } from "./write-records.js";
export { parseCallRecord, parseCallRecords } from "./read-calls.js";
export { parseRolloutResult, parseRolloutResults } from "./read-rollouts.js";
export type { ReadOptions } from "./read-lines.js";
