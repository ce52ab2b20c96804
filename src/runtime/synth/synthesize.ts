/**
 * `reins synth`: ask the generator for each candidate, put it through the gates (generator answered,
 * schema, leak, near-duplicate, reference k/k, do-nothing fails, mutations fail, and the optional
 * difficulty band of a baseline model's pass rate), write the kept
 * families with their provenance, and verify them again from the written files. Every gate's
 * verdict is logged per candidate with its reason (synth-report.json).
 */
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { hasErrors, ReinsError, type Diagnostic, type ResolvedSynthesis } from "../../compiler/index.js";
import { requireHostedKeys } from "../engines/hosted-api.js";
import { annotate, extractYaml, familyName, uniqueName } from "./candidate.js";
import { createGenerator, GeneratorError } from "./generator.js";
import { combinations, promptFor, promptHash, type Combination } from "./prompt.js";
import { compileGates, runReplays } from "./replays.js";
import { runDifficultyGate } from "./difficulty.js";
import { doNothingGate, GATE_NAMES, mutationGate, referenceGate, type GateName, type GateResult } from "./sandbox-gates.js";
import { leakOf, nearestDuplicate } from "./static-gates.js";

export interface SynthesisOptions {
  synthesis: ResolvedSynthesis;
  outDir: string;
  env?: NodeJS.ProcessEnv;
  signal?: AbortSignal;
  log?: (line: string) => void;
}

export interface CandidateReport extends Combination {
  index: number;
  promptHash: string;
  family?: string;
  tasks?: number;
  kept: boolean;
  droppedBy?: GateName;
  gates: GateResult[];
  /** The generator's answer, kept in the report for a dropped candidate. */
  answer?: string;
}

export interface SynthesisSummary {
  synthesis: string;
  generator: string;
  candidates: number;
  kept: number;
  dropped: Partial<Record<GateName, number>>;
  reverify: { tasks: number; passed: number; minPassRate: number; ok: boolean };
  families: string[];
  outDir: string;
  report: string;
}

export async function runSynthesis(o: SynthesisOptions): Promise<SynthesisSummary> {
  const s = o.synthesis;
  const log = o.log ?? (() => {});
  if (existsSync(o.outDir) && readdirSync(o.outDir).length > 0) {
    throw new ReinsError(
      "OutDirNotEmpty",
      `${o.outDir} is not empty; reins synth writes only into a new or empty directory.`,
      "Give another --out, or empty this one yourself.",
    );
  }
  if (s.gates.difficulty) requireHostedKeys([s.gates.difficulty.model], o.env);
  const generator = createGenerator(s.generator, o.env);
  const work = mkdtempSync(join(tmpdir(), "reins-synth-"));
  const reports: CandidateReport[] = [];
  const kept: { family: string; instruction: string; file: string }[] = [];
  const taken = new Set<string>();
  try {
    const combos = combinations(s);
    for (const [index, combo] of combos.entries()) {
      if (o.signal?.aborted) break;
      const prompt = promptFor(combo);
      const report: CandidateReport = { index, ...combo, promptHash: promptHash(prompt), kept: false, gates: [] };
      reports.push(report);
      const verdict = await judgeCandidate(
        s,
        { index, combo, prompt: report.promptHash, generator: generator.label },
        () => generator.answer(index, prompt, o.signal),
        join(work, `c${index}`),
        kept,
        taken,
        report,
        o.signal,
      );
      if (verdict) {
        kept.push(verdict);
        taken.add(verdict.family);
        mkdirSync(join(o.outDir, verdict.family), { recursive: true });
        cpSync(verdict.file, join(o.outDir, verdict.family, "family.yaml"));
      }
      log(
        `candidate ${index + 1}/${combos.length}: ${report.kept ? `kept as ${report.family}` : `dropped by ${report.droppedBy}: ${report.gates.at(-1)?.reason}`}`,
      );
    }
    const reverify = await reverifyKept(s, kept, join(work, "reverify"), o.signal);
    log(`re-verified: ${reverify.passed}/${reverify.tasks} tasks passed again`);
    const dropped: Partial<Record<GateName, number>> = {};
    for (const r of reports) if (r.droppedBy) dropped[r.droppedBy] = (dropped[r.droppedBy] ?? 0) + 1;
    mkdirSync(o.outDir, { recursive: true });
    const reportFile = join(o.outDir, "synth-report.json");
    const summary: SynthesisSummary = {
      synthesis: s.name,
      generator: generator.label,
      candidates: reports.length,
      kept: kept.length,
      dropped,
      reverify,
      families: kept.map((k) => k.family),
      outDir: o.outDir,
      report: reportFile,
    };
    writeFileSync(reportFile, `${JSON.stringify({ ...summary, gates: GATE_NAMES, candidateReports: reports }, null, 2)}\n`);
    return summary;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

interface Provenance {
  index: number;
  combo: Combination;
  prompt: string;
  generator: string;
}

/** Runs the gates in order, stopping at the first that fails; the kept family's file when all pass. */
async function judgeCandidate(
  s: ResolvedSynthesis,
  p: Provenance,
  ask: () => Promise<string>,
  dir: string,
  kept: readonly { family: string; instruction: string }[],
  taken: ReadonlySet<string>,
  report: CandidateReport,
  signal?: AbortSignal,
): Promise<{ family: string; instruction: string; file: string } | undefined> {
  const gate = (g: GateResult) => {
    report.gates.push(g);
    if (!g.passed) report.droppedBy = g.gate;
    return g.passed;
  };
  let answer: string;
  try {
    answer = await ask();
  } catch (e) {
    if (!(e instanceof GeneratorError)) throw e;
    if (e.code === "GeneratorKeyMissing")
      throw new ReinsError(
        e.code,
        `The generator cannot be asked: ${e.message}.`,
        "Export the key in that variable (it is read, never written), or name another with generator.hosted.apiKeyEnv.",
      );
    gate({ gate: "generator", passed: false, reason: e.message });
    return undefined;
  }
  gate({ gate: "generator", passed: true, reason: `answered ${answer.length} characters` });
  const drop = () => {
    report.answer = answer;
    return undefined;
  };
  const yamlText = extractYaml(answer);
  const docs = parseAllDocuments(yamlText);
  const kind = Array.isArray(docs) && docs.length === 1 ? docs[0]!.get("kind") : undefined;
  if (!Array.isArray(docs) || docs.length !== 1 || kind !== "TaskFamily") {
    const why =
      !Array.isArray(docs) || docs.length !== 1
        ? `the answer holds ${Array.isArray(docs) ? docs.length : 0} YAML documents, not one TaskFamily`
        : `the answer holds a ${String(kind)}, not a TaskFamily`;
    gate({ gate: "schema", passed: false, reason: why });
    return drop();
  }
  const written = familyName(yamlText);
  const name = written === undefined ? undefined : uniqueName(written, taken);
  const text = annotate(yamlText, name, {
    "reins.dev/generator": p.generator,
    "reins.dev/prompt-hash": p.prompt,
    "reins.dev/seed": String(s.seed),
    "reins.dev/candidate": String(p.index),
    "reins.dev/persona": p.combo.persona,
    "reins.dev/scenario": p.combo.scenario,
    "reins.dev/skill": p.combo.skill,
  });
  mkdirSync(dir, { recursive: true });
  const file = join(dir, "family.yaml");
  writeFileSync(file, text);
  const difficulty = s.gates.difficulty;
  const opts = {
    dir,
    families: [name ?? "unnamed"],
    harness: s.validation.harness,
    attempts: s.validation.attempts,
    sandbox: s.validation.sandbox,
    adversaries: true,
    mutations: s.gates.mutations,
    ...(difficulty ? { baselineHarness: difficulty.harness } : {}),
    ...(signal ? { signal } : {}),
  };
  const compiled = compileGates(opts, ["family.yaml"]);
  if (!compiled.plan || hasErrors(compiled.diagnostics) || compiled.plan.tasks.length === 0) {
    gate({ gate: "schema", passed: false, reason: compiled.plan?.tasks.length === 0 ? "the family renders no tasks" : firstError(compiled.diagnostics) });
    return drop();
  }
  const plan = compiled.plan;
  report.family = name;
  report.tasks = plan.tasks.length;
  gate({ gate: "schema", passed: true, reason: `a valid TaskFamily of ${plan.tasks.length} task(s)` });
  if (s.gates.leaks) {
    const leak = plan.tasks.map(leakOf).find((l) => l !== undefined);
    if (!gate({ gate: "leak", passed: leak === undefined, reason: leak ?? "no instruction quotes an expected answer" })) return drop();
  }
  const instruction = plan.tasks[0]!.instruction;
  const dup = nearestDuplicate(instruction, kept, s.gates.nearDuplicate);
  const dupReason = dup
    ? `its instruction is ${(dup.similarity * 100).toFixed(0)}% similar to kept family ${dup.family}'s`
    : `no kept instruction is ${(s.gates.nearDuplicate * 100).toFixed(0)}% similar`;
  if (!gate({ gate: "near-duplicate", passed: !dup, reason: dupReason })) return drop();
  const replays = await runReplays(plan, opts);
  if (!gate(referenceGate(replays, s.validation.attempts))) return drop();
  if (!gate(doNothingGate(replays))) return drop();
  if (s.gates.mutations && !gate(mutationGate(replays))) return drop();
  if (difficulty && !gate(await runDifficultyGate(plan, difficulty, dir, signal))) return drop();
  report.kept = true;
  return { family: name!, instruction, file };
}

function firstError(diagnostics: readonly Diagnostic[]): string {
  const errors = diagnostics.filter((d) => d.severity === "error");
  const d = errors.find((x) => x.file.endsWith("family.yaml")) ?? errors[0];
  if (!d) return "the family does not compile";
  const where = d.file.endsWith("family.yaml") ? `family.yaml:${d.line}:${d.column}` : "its Evaluation";
  return `${where}: ${d.code}: ${d.message}`;
}

/** The kept families, compiled again from the files written and each task's reference replayed once more in fresh sandboxes. */
async function reverifyKept(
  s: ResolvedSynthesis,
  kept: readonly { family: string; file: string }[],
  dir: string,
  signal?: AbortSignal,
): Promise<SynthesisSummary["reverify"]> {
  const minPassRate = s.reverify.minPassRate;
  if (kept.length === 0) return { tasks: 0, passed: 0, minPassRate, ok: false };
  mkdirSync(dir, { recursive: true });
  const files = kept.map((k) => {
    cpSync(k.file, join(dir, `${k.family}.yaml`));
    return `${k.family}.yaml`;
  });
  const opts = {
    dir,
    families: kept.map((k) => k.family),
    harness: s.validation.harness,
    attempts: 1,
    sandbox: s.validation.sandbox,
    adversaries: false,
    ...(signal ? { signal } : {}),
  };
  const compiled = compileGates(opts, files);
  if (!compiled.plan)
    throw new ReinsError(
      "ReverifyFailed",
      `The kept families do not compile together: ${firstError(compiled.diagnostics)}.`,
      "This is a bug in the gates: report it with the synthesis spec.",
    );
  const replays = await runReplays(compiled.plan, opts);
  const passed = replays.filter((r) => r.references.length > 0 && r.references.every((x) => x.status === "ok" && x.passed)).length;
  return { tasks: replays.length, passed, minPassRate, ok: passed >= minPassRate * replays.length };
}
