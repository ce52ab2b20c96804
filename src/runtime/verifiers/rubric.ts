/** The rubric part: the judge scores each item from the task, the items and the workspace files. */
import type { ResolvedVerifier } from "../../compiler/contract/plan.js";
import { decodeText } from "./checks/context.js";
import { matchGlob } from "./glob.js";
import type { Judge } from "./judge.js";
import type { CallRecord } from "../records/index.js";
import { buildJudgePrompt, JUDGE_SYSTEM, type PromptFile } from "./rubric-prompt.js";
import { parseJudgeScores } from "./rubric-parse.js";
import type { VerifierProblem } from "./run-checks.js";
import { describeReadFailure, formatBytes, type WorkspaceReader } from "./workspace.js";

export interface RubricLimits {
  maxFiles: number;
  maxFileBytes: number;
  maxTotalBytes: number;
  /** Judge calls per verification (a retry when the answer cannot be parsed). */
  maxAttempts: number;
}

export const DEFAULT_RUBRIC_LIMITS: RubricLimits = { maxFiles: 20, maxFileBytes: 16 * 1024, maxTotalBytes: 64 * 1024, maxAttempts: 2 };

export interface JudgeCall {
  seq: number;
  prompt: string;
  response?: string;
  error?: string;
  startedMs: number;
  doneMs: number;
  record?: CallRecord;
}

export interface RubricPart {
  score: number;
  judge: string;
  items: { id: string; criterion: string; weight: number; score: number }[];
  calls: JudgeCall[];
  error?: VerifierProblem;
}

/** Workspace files for the judge: matched by the rubric's globs (all files when none), bounded. */
export async function gatherRubricFiles(
  reader: WorkspaceReader,
  globs: readonly string[],
  limits: RubricLimits,
): Promise<{ files: PromptFile[]; omitted: number }> {
  const listing = await reader.list();
  const paths = globs.length === 0 ? listing.files : [...new Set(globs.flatMap((g) => matchGlob(listing.files, g)))].sort();
  const files: PromptFile[] = [];
  let budget = limits.maxTotalBytes;
  for (const path of paths.slice(0, limits.maxFiles)) {
    if (budget <= 0) {
      files.push({ path, size: 0, note: "not shown: the prompt's file budget is spent" });
      continue;
    }
    const r = await reader.readFile(path, { maxBytes: Math.min(limits.maxFileBytes, budget), prefix: true });
    if (r.kind !== "ok") {
      files.push({ path, size: 0, note: describeReadFailure(path, r) });
      continue;
    }
    // A cut may split a UTF-8 sequence: drop the partial tail before decoding.
    let bytes = r.bytes;
    if (r.truncated) while (bytes.length > 0 && (bytes[bytes.length - 1] & 0xc0) === 0x80) bytes = bytes.subarray(0, bytes.length - 1);
    if (r.truncated && bytes.length > 0 && bytes[bytes.length - 1] >= 0xc0) bytes = bytes.subarray(0, bytes.length - 1);
    const text = decodeText(path, bytes);
    if (!text.ok) {
      files.push({ path, size: r.size, note: `binary file, ${formatBytes(r.size)}, not shown` });
      continue;
    }
    budget -= bytes.length;
    files.push({ path, text: text.value, size: r.size, ...(r.truncated ? { truncated: true } : {}) });
  }
  return { files, omitted: Math.max(0, paths.length - limits.maxFiles) };
}

export async function runRubric(
  rubric: NonNullable<ResolvedVerifier["rubric"]>,
  ctx: { instruction: string; reader: WorkspaceReader; judge?: Judge; rollout?: string; limits?: Partial<RubricLimits>; signal?: AbortSignal },
): Promise<RubricPart> {
  const limits = { ...DEFAULT_RUBRIC_LIMITS, ...ctx.limits };
  const items = rubric.items.map((i) => ({ ...i, score: 0 }));
  const part: RubricPart = { score: 0, judge: rubric.judge ?? ctx.judge?.name ?? "none", items, calls: [] };
  if (!ctx.judge) {
    part.error = { code: "JudgeUnavailable", message: `no judge model is configured for this rubric${rubric.judge ? ` (it names ${rubric.judge})` : ""}` };
    return part;
  }
  const { files, omitted } = await gatherRubricFiles(ctx.reader, rubric.files, limits);
  const prompt = buildJudgePrompt({ instruction: ctx.instruction, items: rubric.items, files, omitted });
  const ids = rubric.items.map((i) => i.id);
  let lastProblem: VerifierProblem = { code: "JudgeOutputInvalid", message: "the judge was not called" };
  for (let attempt = 0; attempt < limits.maxAttempts; attempt++) {
    const call: JudgeCall = { seq: attempt, prompt, startedMs: Date.now(), doneMs: 0 };
    part.calls.push(call);
    try {
      const reply = await ctx.judge.ask({
        system: JUDGE_SYSTEM,
        prompt,
        rollout: ctx.rollout ?? "verify",
        seq: attempt,
        ...(rubric.judge ? { judge: rubric.judge } : {}),
        ...(ctx.signal ? { signal: ctx.signal } : {}),
      });
      call.response = reply.text;
      if (reply.record) call.record = reply.record;
    } catch (e) {
      call.error = (e as Error)?.message ?? String(e);
      call.doneMs = Date.now();
      lastProblem = { code: "JudgeFailed", message: `the judge call failed: ${call.error}` };
      continue;
    }
    call.doneMs = Date.now();
    const parsed = parseJudgeScores(call.response, ids);
    if (!parsed.ok) {
      lastProblem = { code: "JudgeOutputInvalid", message: parsed.reason };
      continue;
    }
    for (const it of items) it.score = parsed.scores[it.id];
    const total = items.reduce((s, i) => s + i.weight, 0);
    part.score = total > 0 ? items.reduce((s, i) => s + i.weight * i.score, 0) / total : 0;
    return part;
  }
  part.error = { ...lastProblem, message: `${lastProblem.message} (after ${limits.maxAttempts} attempt${limits.maxAttempts > 1 ? "s" : ""})` };
  return part;
}
