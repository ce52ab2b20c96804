/**
 * A Synthesis document → ResolvedSynthesis: defaults filled, the generator checked (exactly one
 * kind; a scripted generator's answer files inside the project, one per candidate). Pure but for
 * checking that the answer files exist.
 */
import { dirname } from "node:path";
import { CODES } from "../contract/codes.js";
import { makeDiagnostic, type Diagnostic, type Result } from "../contract/diagnostics.js";
import type { ResolvedModel } from "../contract/plan.js";
import type { ResolvedDifficultyGate, ResolvedGenerator, ResolvedSynthesis } from "../contract/synthesis.js";
import type { Entry } from "./entry.js";
import { suggest } from "../schema/validate.js";
import type { SynthesisSpec } from "../schema/synthesis.js";
import { locateInProject, ownDirectoryRoots } from "../source/project.js";
import { positionAt } from "../source/yaml.js";
import { resolveHostedApi } from "./hosted.js";
import type { TypedDocument } from "../schema/validate.js";

export function resolveSynthesis(doc: TypedDocument<"Synthesis">, models: ReadonlyMap<string, Entry<ResolvedModel>>): Result<ResolvedSynthesis | undefined> {
  const spec: SynthesisSpec = doc.doc.spec;
  const at = (...p: (string | number)[]) => positionAt(doc.source, ["spec", ...p]);
  const diagnostics: Diagnostic[] = [];
  let generator: ResolvedGenerator | undefined;
  const { scripted, hosted } = spec.generator;
  if ((scripted === undefined) === (hosted === undefined)) {
    diagnostics.push(
      makeDiagnostic(
        "GeneratorChoice",
        at("generator"),
        `The generator has ${scripted ? "both scripted and hosted" : "neither scripted nor hosted"}.`,
        CODES.GeneratorChoice,
      ),
    );
  } else if (scripted) {
    const answers: string[] = [];
    scripted.answers.forEach((file, i) => {
      const loc = locateInProject(doc.source.roots ?? ownDirectoryRoots(doc.source.absPath), dirname(doc.source.absPath), file);
      if (loc.ok) answers.push(loc.real);
      else
        diagnostics.push(makeDiagnostic(loc.code, at("generator", "scripted", "answers", i), `Answer file ${file} is refused: ${loc.why}.`, CODES[loc.code]));
    });
    if (scripted.answers.length < spec.count) {
      diagnostics.push(
        makeDiagnostic(
          "ScriptedAnswersTooFew",
          at("count"),
          `count is ${spec.count} but the scripted generator has ${scripted.answers.length} answer file(s).`,
          CODES.ScriptedAnswersTooFew,
        ),
      );
    }
    generator = { type: "scripted", answers };
  } else if (hosted) {
    generator = { type: "hosted", ...resolveHostedApi(hosted), maxTokens: hosted.maxTokens ?? 8192, temperature: hosted.temperature ?? 1 };
  }
  const difficulty = spec.gates?.difficulty;
  let band: ResolvedDifficultyGate | undefined;
  if (difficulty) {
    const model = models.get(difficulty.model)?.value;
    const min = difficulty.min ?? 0.1;
    const max = difficulty.max ?? 0.9;
    if (!model) {
      const guess = suggest(difficulty.model, [...models.keys()]);
      diagnostics.push(
        makeDiagnostic(
          "UnknownReference",
          at("gates", "difficulty", "model"),
          `No Model named "${difficulty.model}" for the difficulty gate's baseline.${guess ? ` Did you mean "${guess}"?` : ""}`,
          CODES.UnknownReference,
        ),
      );
    } else if (min > max) {
      diagnostics.push(
        makeDiagnostic(
          "InvalidValue",
          at("gates", "difficulty", "min"),
          `The difficulty band is empty: min ${min} is above max ${max}.`,
          "Give min ≤ max (pass rates, 0 to 1).",
        ),
      );
    } else band = { model, harness: difficulty.harness ?? spec.validation?.harness ?? "reins-agent", attempts: difficulty.attempts ?? 4, min, max };
  }
  if (!generator || diagnostics.length > 0) return { value: undefined, diagnostics };
  return {
    value: {
      name: doc.name,
      specFile: doc.source.absPath,
      personas: spec.personas,
      scenarios: spec.scenarios,
      skills: spec.skills,
      count: spec.count,
      seed: spec.seed ?? 0,
      generator,
      validation: {
        harness: spec.validation?.harness ?? "reins-agent",
        attempts: spec.validation?.attempts ?? 2,
        sandbox: (spec.validation?.sandbox as Record<string, unknown> | undefined) ?? { provider: "local", concurrency: 2 },
      },
      gates: {
        mutations: spec.gates?.mutations ?? true,
        nearDuplicate: spec.gates?.nearDuplicate ?? 0.9,
        leaks: spec.gates?.leaks ?? true,
        ...(band ? { difficulty: band } : {}),
      },
      reverify: { minPassRate: spec.reverify?.minPassRate ?? 0.9 },
    },
    diagnostics,
  };
}
