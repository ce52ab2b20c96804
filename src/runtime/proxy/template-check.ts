/**
 * The first call of a try, checked against the model's own chat template: the proxy's prompt ids
 * (header, message groups and generation prompt, each tokenized apart and joined) against the
 * template's rendering of the whole request tokenized at once. On a first call nothing is spliced
 * from stored completions, so the two must agree token for token; a difference means the
 * segmented rendering is not what the template gives (the report counts it per harness). Later
 * calls are not comparable: they carry earlier completions as sampled, which the template would
 * re-render (render.ts). Runs off the event loop while the engine generates. The template's ids
 * of a request are remembered per model (the last few requests): the first calls of a step's
 * rollouts of one task share their whole first prompt, so it is rendered and tokenized once.
 */
import type { ModelRuntime } from "../model/model-runtime.js";
import type { TokenizePool } from "../model/tokenize-pool.js";
import type { CallRecord } from "../records/index.js";
import type { CanonicalRequest } from "./canonical.js";
import { type PromptPlan, renderWithTemplate, templateKey } from "./render.js";

export type TemplateCheck = NonNullable<CallRecord["templateCheck"]>;

/** Compare prompt ids with the template's ids. */
export function compareWithTemplate(promptIds: ArrayLike<number>, templateIds: ArrayLike<number>): TemplateCheck {
  const n = Math.min(promptIds.length, templateIds.length);
  let at = 0;
  while (at < n && promptIds[at] === templateIds[at]) at++;
  const match = at === promptIds.length && at === templateIds.length;
  return match ? { match, templateTokens: templateIds.length } : { match, templateTokens: templateIds.length, at };
}

/** The check of a first call (undefined when the template cannot render the request). */
export async function checkAgainstTemplate(
  rt: ModelRuntime,
  pool: TokenizePool,
  owner: object,
  req: CanonicalRequest,
  promptIds: readonly number[],
  plan?: PromptPlan,
): Promise<TemplateCheck | undefined> {
  try {
    return compareWithTemplate(promptIds, await templateIdsOf(rt, pool, owner, req, plan));
  } catch {
    return undefined;
  }
}

/** Requests whose template ids are remembered, per model; past this many all are forgotten at once. */
const REMEMBERED = 64;

/**
 * Remembered requests by their segment keys, one map per key along the way: the plan's keys were
 * hashed once already (the segment cache), so a lookup neither joins nor hashes the whole request.
 */
interface KeyNode {
  next: Map<string, KeyNode>;
  ids?: Promise<ArrayLike<number>>;
}
const remembered = new WeakMap<ModelRuntime, { root: KeyNode; count: number }>();

/** The template's ids of a request: rendered whole and tokenized at once (remembered). */
function templateIdsOf(rt: ModelRuntime, pool: TokenizePool, owner: object, req: CanonicalRequest, plan?: PromptPlan): Promise<ArrayLike<number>> {
  let memo = remembered.get(rt);
  if (!memo || memo.count >= REMEMBERED) remembered.set(rt, (memo = { root: { next: new Map() }, count: 0 }));
  // Unspliced, the plan's keys spell the system prompt, tools and every message; otherwise the request's own key.
  const keys = plan && plan.reused.length === 0 ? plan.keys : [templateKey(req)];
  let node = memo.root;
  for (const key of keys) {
    let next = node.next.get(key);
    if (!next) node.next.set(key, (next = { next: new Map() }));
    node = next;
  }
  if (!node.ids) {
    const text = renderWithTemplate(rt, req);
    const made = pool.encode([text], owner).then(([encoded]) => Int32Array.from(encoded!));
    const leaf = node;
    made.catch(() => {
      if (leaf.ids === made) delete leaf.ids;
    });
    node.ids = made;
    memo.count++;
  }
  return node.ids;
}
