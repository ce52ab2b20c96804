/**
 * The one writer of record files: a record is one JSON object on one line. The proxy's
 * `--record FILE` and the run store's calls.jsonl / rollouts.jsonl are written only through here,
 * and read back with ./read-calls.ts and ./read-rollouts.ts.
 */
import { closeSync, fstatSync, ftruncateSync, openSync, writeSync } from "node:fs";
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

/** Append records to a file, whole or not at all (appendWhole; created when missing); nothing for no records. */
export function appendRecords(file: string, records: readonly RecordLine[]): void {
  if (records.length > 0) appendWhole(file, formatRecordLines(records));
}

/**
 * Append `text` to a file (a path, created when missing, or a descriptor opened for appending)
 * whole, or not at all: when a write fails part way (ENOSPC, EDQUOT), the file is cut back to the
 * size it had, so no torn line is left for a later line to follow; then the error is thrown.
 */
export function appendWhole(target: string | number, text: string): void {
  const fd = typeof target === "number" ? target : openSync(target, "a");
  let size: number | undefined;
  try {
    size = fstatSync(fd).size;
    const bytes = Buffer.from(text, "utf8");
    for (let done = 0; done < bytes.length; ) done += writeSync(fd, bytes, done, bytes.length - done);
  } catch (err) {
    if (size !== undefined) {
      try {
        ftruncateSync(fd, size);
      } catch {
        /* the error that stopped the write is the one to report */
      }
    }
    throw err;
  } finally {
    if (typeof target !== "number") closeSync(fd);
  }
}
