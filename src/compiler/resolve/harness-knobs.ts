/**
 * A Harness's `knobs` declarations (pure): each knob it declares must be applied somehow, by argv
 * (`args`), environment (`env`) or a homeFiles template that reads `knobs.<name>`; otherwise
 * setting it in an Experiment would do nothing, which is a mistake at the declaration.
 */
import type { HarnessSpec } from "../schema/harness.js";
import { KNOB_NAMES } from "../contract/vocabulary.js";

export interface KnobDeclarationProblem {
  code: "FieldHasNoEffect";
  /** Under the Harness's `spec`. */
  path: (string | number)[];
  message: string;
  hint: string;
}

export function knobDeclarationProblems(spec: HarnessSpec): KnobDeclarationProblem[] {
  const out: KnobDeclarationProblem[] = [];
  const templates = (spec.homeFiles ?? []).map((f) => f.content);
  for (const knob of KNOB_NAMES) {
    const d = spec.knobs?.[knob];
    if (!d) continue;
    const applied = (d.args?.length ?? 0) > 0 || Object.keys(d.env ?? {}).length > 0 || d.homeFiles === true;
    if (!applied) {
      out.push({
        code: "FieldHasNoEffect",
        path: ["knobs", knob],
        message: `The knob ${knob} gives no args, no env and no homeFiles: setting it would change nothing.`,
        hint: `Say how the harness applies it (args, env, or homeFiles: true with a homeFiles template reading {{knobs.${knob}}}), or remove it.`,
      });
    } else if (d.homeFiles === true && !templates.some((t) => new RegExp(`knobs\\.${knob}\\b`).test(t))) {
      out.push({
        code: "FieldHasNoEffect",
        path: ["knobs", knob, "homeFiles"],
        message: `No homeFiles template reads knobs.${knob}, so homeFiles: true applies nothing.`,
        hint: `Use {{knobs.${knob}}} in a homeFiles content (e.g. {{#if knobs.${knob}}}…{{/if}}), or remove homeFiles: true.`,
      });
    }
  }
  return out;
}
