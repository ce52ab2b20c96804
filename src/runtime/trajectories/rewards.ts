/**
 * Parse a rewards file: JSON `{"<rolloutId>": {"reward": 0.5, "task": "<task>", "harness": "<harness>"}}`,
 * with an optional integer `step` per entry (default 0). Other keys in an entry are ignored.
 * Pure: text in, a RewardTable and diagnostics (with line numbers) out.
 */
import { isMap, isScalar, LineCounter, parseDocument } from "yaml";
import type { Node } from "yaml";
import type { Diagnostic, Result } from "../../compiler/contract/diagnostics.js";
import { makeDiagnostic } from "../../compiler/contract/diagnostics.js";
import type { RewardEntry, RewardTable } from "./batch-builder.js";

const HINT = 'The rewards file maps rollout ids to entries: {"r1": {"reward": 0.5, "task": "t", "harness": "h"}}.';

export function parseRewards(text: string, file: string): Result<RewardTable> {
  const table: RewardTable = new Map();
  const diagnostics: Diagnostic[] = [];
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, uniqueKeys: true, prettyErrors: false });
  const pos = (node: Node | null | undefined, fallback = 0) => {
    const offset = node?.range?.[0] ?? fallback;
    const lp = lineCounter.linePos(offset);
    return { file, line: lp.line, column: lp.col };
  };
  if (doc.errors.length > 0) {
    for (const e of doc.errors.slice(0, 5)) {
      const lp = lineCounter.linePos(e.pos[0]);
      diagnostics.push(
        makeDiagnostic("RewardsNotJson", { file, line: lp.line, column: lp.col }, `rewards file does not parse: ${e.message.split("\n")[0]}`, HINT),
      );
    }
    return { value: table, diagnostics };
  }
  const root = doc.contents;
  if (!isMap(root)) {
    diagnostics.push(makeDiagnostic("RewardsNotObject", pos(root), "the rewards file must hold one JSON object keyed by rollout id", HINT));
    return { value: table, diagnostics };
  }
  for (const pair of root.items) {
    const keyNode = pair.key as Node | null;
    const rollout = isScalar(keyNode) ? String(keyNode.value) : "";
    const entryNode = pair.value as Node | null;
    if (!isMap(entryNode)) {
      diagnostics.push(makeDiagnostic("RewardsInvalidEntry", pos(entryNode ?? keyNode), `entry for rollout ${rollout} must be an object`, HINT));
      continue;
    }
    const field = (name: string): { node: Node | null; value: unknown } | undefined => {
      const p = entryNode.items.find((it) => isScalar(it.key) && it.key.value === name);
      if (!p) return undefined;
      const node = p.value as Node | null;
      return { node, value: isScalar(node) ? node.value : node };
    };
    const bad = (name: string, expected: string, node: Node | null) =>
      diagnostics.push(makeDiagnostic("RewardsInvalidField", pos(node ?? entryNode), `rollout ${rollout}: field \`${name}\` must be ${expected}`, HINT));
    const reward = field("reward");
    const task = field("task");
    const harness = field("harness");
    const step = field("step");
    let ok = true;
    for (const [name, f] of [
      ["reward", reward],
      ["task", task],
      ["harness", harness],
    ] as const) {
      if (!f) {
        diagnostics.push(makeDiagnostic("RewardsMissingField", pos(entryNode), `rollout ${rollout}: field \`${name}\` is missing`, HINT));
        ok = false;
      }
    }
    if (!ok) continue;
    if (typeof reward?.value !== "number" || !Number.isFinite(reward.value)) {
      bad("reward", "a finite number", reward?.node ?? null);
      ok = false;
    }
    if (typeof task?.value !== "string" || task.value === "") {
      bad("task", "a non-empty string", task?.node ?? null);
      ok = false;
    }
    if (typeof harness?.value !== "string" || harness.value === "") {
      bad("harness", "a non-empty string", harness?.node ?? null);
      ok = false;
    }
    if (step && (typeof step.value !== "number" || !Number.isInteger(step.value) || step.value < 0)) {
      bad("step", "an integer >= 0", step.node);
      ok = false;
    }
    if (!ok) continue;
    const entry: RewardEntry = { reward: reward?.value as number, task: task?.value as string, harness: harness?.value as string };
    if (step) entry.step = step.value as number;
    table.set(rollout, entry);
  }
  return { value: table, diagnostics };
}
