/**
 * Rubric judges are references to Model documents: every `rubric.judge` of a Verifier, a Task
 * or a TaskFamily's template must name a Model (UnknownReference otherwise, with a did-you-mean).
 * A rubric without `judge` is graded by the policy; the plan builder states which (plan/tasks.ts).
 */
import { makeDiagnostic, type Diagnostic } from "../contract/diagnostics.js";
import { CODES } from "../contract/codes.js";
import type { ResolvedModel, ResolvedTask, ResolvedVerifier } from "../contract/plan.js";
import { suggest } from "../schema/validate.js";
import { positionAt } from "../source/yaml.js";
import type { Entry } from "./entry.js";

export function checkJudgeReferences(w: {
  verifiers: ReadonlyMap<string, Entry<ResolvedVerifier>>;
  tasks: ReadonlyMap<string, Entry<ResolvedTask>>;
  models: ReadonlyMap<string, Entry<ResolvedModel>>;
}): Diagnostic[] {
  const out: Diagnostic[] = [];
  const seen = new Set<string>();
  const check = (judge: string | undefined, doc: Entry<unknown>["doc"], path: (string | number)[]) => {
    if (judge === undefined || w.models.has(judge)) return;
    const key = `${doc.kind}/${doc.name}/${judge}`;
    if (seen.has(key)) return;
    seen.add(key);
    const guess = suggest(judge, [...w.models.keys()]);
    out.push(
      makeDiagnostic(
        "UnknownReference",
        positionAt(doc.source, path),
        `The rubric's judge names no Model: there is no Model "${judge}".${guess ? ` Did you mean "${guess}"?` : ""}`,
        CODES.UnknownReference,
      ),
    );
  };
  for (const e of w.verifiers.values()) check(e.value.rubric?.judge, e.doc, ["spec", "rubric", "judge"]);
  for (const e of w.tasks.values()) {
    const spec = e.doc.doc.spec as { verifier?: { ref?: unknown }; template?: { verifier?: { ref?: unknown } } };
    const inline = e.doc.kind === "TaskFamily" ? spec.template?.verifier : spec.verifier;
    if (!inline || typeof inline.ref === "string") continue; // a Verifier document, checked above
    const at = e.doc.kind === "TaskFamily" ? ["spec", "template", "verifier", "rubric", "judge"] : ["spec", "verifier", "rubric", "judge"];
    check(e.value.verifier.rubric?.judge, e.doc, at);
  }
  return out;
}
