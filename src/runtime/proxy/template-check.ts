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
import { renderWithTemplate, templateKey } from "./render.js";

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
export async function checkAgainstTemplate(rt: ModelRuntime, pool: TokenizePool, owner: object, req: CanonicalRequest, promptIds: readonly number[]): Promise<TemplateCheck | undefined> {
  try {
    return compareWithTemplate(promptIds, await templateIdsOf(rt, pool, owner, req));
  } catch {
    return undefined;
  }
}

/** Requests whose template ids are remembered, per model. */
const REMEMBERED = 64;
const remembered = new WeakMap<ModelRuntime, Map<string, Promise<ArrayLike<number>>>>();

/** The template's ids of a request: rendered whole and tokenized at once (remembered). */
function templateIdsOf(rt: ModelRuntime, pool: TokenizePool, owner: object, req: CanonicalRequest): Promise<ArrayLike<number>> {
  let known = remembered.get(rt);
  if (!known) remembered.set(rt, (known = new Map()));
  const key = templateKey(req);
  let ids = known.get(key);
  if (!ids) {
    const text = renderWithTemplate(rt, req);
    const made = pool.encode([text], owner).then(([encoded]) => Int32Array.from(encoded!));
    const memo = known;
    made.catch(() => memo.delete(key));
    known.set(key, (ids = made));
    if (known.size > REMEMBERED) known.delete(known.keys().next().value!);
  }
  return ids;
}
