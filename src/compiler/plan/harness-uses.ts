/**
 * The harnesses an Experiment or Evaluation lists (pure): each `harnesses[]` entry with the
 * Harness it names, its knobs checked against the harness's declared knobs; a harness listed twice
 * and the per-harness counts that nothing reads are diagnostics.
 */
import { makeDiagnostic, type Diagnostic, type Result } from "../contract/diagnostics.js";
import { CODES } from "../contract/codes.js";
import type { World } from "../resolve/world.js";
import type { HarnessUseValue } from "../schema/experiment.js";
import { suggest } from "../schema/validate.js";
import { checkKnobs } from "./knobs.js";
import type { At, HarnessUseEntry, PlanTarget } from "./target.js";

export function resolveHarnessUses(world: World, target: PlanTarget, at: At): Result<HarnessUseEntry[]> {
  const uses: readonly HarnessUseValue[] = target.spec.harnesses;
  const diagnostics = [...checkUnreadCounts(target, uses, at)];
  const value = uses.map((use, i): HarnessUseEntry => {
    const e = world.harnesses.get(use.name);
    if (!e) {
      const guess = suggest(use.name, [...world.harnesses.keys()]);
      diagnostics.push(
        makeDiagnostic(
          "UnknownReference",
          at("harnesses", i, "name"),
          `No Harness named "${use.name}".${guess ? ` Did you mean "${guess}"?` : ""}`,
          CODES.UnknownReference,
        ),
      );
    } else diagnostics.push(...checkKnobs(use, e.value, (...p) => at("harnesses", i, ...p)));
    const first = uses.findIndex((o) => o.name === use.name);
    if (first < i) {
      const message = `The harness ${use.name} is listed twice (first as harnesses[${first}]); runs are keyed by harness name, so one entry would silently stand for both.`;
      diagnostics.push(
        makeDiagnostic(
          "DuplicateName",
          at("harnesses", i, "name"),
          message,
          "List each harness once; to compare two settings of one harness, give the second its own Harness document (another name).",
        ),
      );
    }
    return { use, harness: e?.value };
  });
  return { value, diagnostics };
}

/** Per-harness counts that only an SFT stage or a held-out evaluation reads. */
function checkUnreadCounts(target: PlanTarget, uses: readonly HarnessUseValue[], at: At): Diagnostic[] {
  const out: Diagnostic[] = [];
  const sft = target.kind === "Experiment" && target.spec.sft !== undefined;
  const heldOut = target.kind === "Experiment" && (target.spec.heldOut ?? []).length > 0;
  uses.forEach((h, i) => {
    if (h.sftReferences !== undefined && !sft) {
      out.push(
        makeDiagnostic(
          "FieldHasNoEffect",
          at("harnesses", i, "sftReferences"),
          "`sftReferences` does nothing: this Experiment has no `sft` stage.",
          CODES.FieldHasNoEffect,
        ),
      );
    }
    if (h.heldOutAttempts !== undefined && !heldOut) {
      out.push(
        makeDiagnostic(
          "FieldHasNoEffect",
          at("harnesses", i, "heldOutAttempts"),
          "`heldOutAttempts` does nothing: this Experiment has no `heldOut` tasks.",
          CODES.FieldHasNoEffect,
        ),
      );
    }
  });
  return out;
}
