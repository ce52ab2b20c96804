/**
 * Harness knobs of an Experiment or Evaluation (pure): `harnesses[]` entries may set a harness's
 * system prompt, appended system prompt, tool set and turn limit, which the harness's spec says how
 * to apply (`knobs`). A knob the spec does not declare, or a tool its `knobs.tools.names` does not
 * list, is a diagnostic at the knob's position; the values travel on the plan's harness
 * (`knobValues`), so they are part of the plan hash, and are applied when the harness is launched.
 */
import { makeDiagnostic, type Diagnostic, type SourcePosition } from "../contract/diagnostics.js";
import type { HarnessKnobValues, ResolvedHarness } from "../contract/plan.js";
import { KNOB_NAMES } from "../contract/vocabulary.js";
import { suggest } from "../schema/validate.js";

/** The knob values an entry of `harnesses[]` sets, or undefined when it sets none. */
export function knobValuesOf(use: HarnessKnobValues): HarnessKnobValues | undefined {
  const out: HarnessKnobValues = {};
  if (use.systemPrompt !== undefined) out.systemPrompt = use.systemPrompt;
  if (use.appendSystemPrompt !== undefined) out.appendSystemPrompt = use.appendSystemPrompt;
  if (use.tools !== undefined) out.tools = [...use.tools];
  if (use.maxTurns !== undefined) out.maxTurns = use.maxTurns;
  return Object.keys(out).length > 0 ? out : undefined;
}

/** Diagnostics for knobs `harness` does not declare and tools it does not list; `at` gives a knob's position. */
export function checkKnobs(values: HarnessKnobValues, harness: ResolvedHarness, at: (...p: (string | number)[]) => SourcePosition): Diagnostic[] {
  const out: Diagnostic[] = [];
  const declared = KNOB_NAMES.filter((k) => harness.knobs?.[k] !== undefined);
  for (const knob of KNOB_NAMES) {
    if (values[knob] === undefined || declared.includes(knob)) continue;
    const supported = declared.length > 0 ? `it supports ${declared.join(", ")}` : "it supports no knobs";
    out.push(
      makeDiagnostic(
        "HarnessKnobUnsupported",
        at(knob),
        `The harness ${harness.name} does not say how to apply \`${knob}\`; ${supported}.`,
        declared.length > 0
          ? `Use ${declared.join(", ")}, or declare knobs.${knob} in the harness's spec.`
          : `Remove \`${knob}\`, or declare knobs.${knob} in the harness's spec.`,
      ),
    );
  }
  const names = harness.knobs?.tools?.names;
  if (values.tools && names) {
    values.tools.forEach((tool, i) => {
      if (names.includes(tool)) return;
      const guess = suggest(tool, names);
      out.push(
        makeDiagnostic(
          "HarnessToolUnknown",
          at("tools", i),
          `The harness ${harness.name} has no tool named "${tool}".${guess ? ` Did you mean "${guess}"?` : ""}`,
          `Its tools: ${names.join(", ")}.`,
        ),
      );
    });
  }
  return out;
}

/** The harness as this use of it runs: the experiment's env over the harness's, and its knob values. */
export function applyUse(base: ResolvedHarness, use: { env?: Record<string, string> } & HarnessKnobValues): ResolvedHarness {
  let out = use.env ? { ...base, env: { ...base.env, ...use.env } } : base;
  const values = knobValuesOf(use);
  if (values) out = { ...out, knobValues: values };
  return out;
}
