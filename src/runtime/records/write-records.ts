/**
 * The one writer of record files: a record is one JSON object on one line. The proxy's
 * `--record FILE` and the run store's calls.jsonl / rollouts.jsonl are written only through here,
 * and read back with ./read-calls.ts and ./read-rollouts.ts.
 */
import { appendFileSync } from "node:fs";
import type { CallRecord } from "./call-record.js";
import type { RolloutResult } from "./rollout-result.js";

export type RecordLine = CallRecord | RolloutResult;

/** A record as its JSON line, newline included. Pure. */
export function formatRecordLine(record: RecordLine): string {
  return `${JSON.stringify(record)}\n`;
}

/** Records as consecutive JSON lines ("" for none). Pure. */
export function formatRecordLines(records: readonly RecordLine[]): string {
  return records.map(formatRecordLine).join("");
}

/** Append records to a file with one write (created when missing); nothing for no records. */
export function appendRecords(file: string, records: readonly RecordLine[]): void {
  if (records.length > 0) appendFileSync(file, formatRecordLines(records));
}
