/**
 * Whatever goes wrong, a user of the real `reins` process sees a catalogued code, what happened
 * and a hint — never a stack trace — and the exit code is 1; with --json, stdout is
 * `{ok: false, problems, diagnostics}`.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { isCode } from "../../src/compiler/contract/codes.js";
import { reins as launch } from "../reins-cli.js";
import { tempDir } from "../temp.js";
import { scriptedModelYaml } from "../specs.js";

const STACK_LINE = /^\s+at .+/m;
const SPEC = "test/fixtures/valid/contract.yaml";

function reins(args: string[]) {
  return launch(args, { timeout: 60_000, env: { REINS_DEBUG: "" } });
}

/** Runs the command as a person would, then with --json, and checks both. */
function expectFailure(args: string[], code: string): void {
  expect(isCode(code), `${code} is catalogued`).toBe(true);
  const human = reins(args);
  const shown = `reins ${args.join(" ")}\n${human.stderr}`;
  expect(human.code, shown).toBe(1);
  expect(human.stderr, shown).toContain(`error[${code}]`);
  expect(human.stderr, shown).toMatch(/\n\s+hint: \S/);
  expect(human.stderr, shown).not.toMatch(STACK_LINE);
  expect(human.stderr, shown).not.toContain("internal error");
  for (const m of human.stderr.matchAll(/error\[(\w+)\]/g)) expect(isCode(m[1]!), `${m[1]} is catalogued`).toBe(true);

  const json = reins([...args, "--json"]);
  expect(json.code, `--json: ${json.stderr}`).toBe(1);
  expect(json.stderr, "--json").not.toMatch(STACK_LINE);
  const out = JSON.parse(json.stdout);
  expect(out.ok).toBe(false);
  // Every failure carries `diagnostics` (the shape `validate --json` has always had); failures of
  // commands other than the checking ones (validate, render) carry `problems` too.
  expect(out.diagnostics.map((d: { code: string }) => d.code)).toContain(code);
  for (const d of out.diagnostics) expect(d.hint, d.code).toBeTruthy();
  if (args[0] !== "validate") expect(out.problems.map((p: { code: string }) => p.code)).toContain(code);
}

let dir: string;
const at = (...p: string[]) => join(dir, ...p);

/** A run directory whose plan.json holds `text`. */
function runDir(name: string, plan: string | Buffer): string {
  mkdirSync(at(name), { recursive: true });
  writeFileSync(at(name, "plan.json"), plan);
  return at(name);
}

/** A run directory with a real plan and the given rollouts.jsonl / calls.jsonl. */
function runWith(name: string, files: Record<string, string>): string {
  const d = runDir(name, readFileSync(at("plan.json")));
  for (const [f, text] of Object.entries(files)) writeFileSync(join(d, f), text);
  return d;
}

beforeAll(() => {
  dir = tempDir("reins-failures-");
  const planned = reins(["plan", SPEC, "--out", at("plan.json")]);
  expect(planned.code, planned.stderr).toBe(0);
  writeFileSync(at("random.bin"), Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 2654435761) % 251)));
  writeFileSync(at("random.bin.json"), readFileSync(at("random.bin")));
  mkdirSync(at("a-directory"));
  writeFileSync(at("model.yaml"), scriptedModelYaml({ texts: ["hello there"] }));
}, 60_000);

type Case = [what: string, args: () => string[], code: string];

function cases(title: string, list: Case[]): void {
  describe(title, () => {
    it.each(list)("%s", (_what, args, code) => expectFailure(args(), code));
  });
}

cases("a run directory that is not there", [
  ["reins run --resume of a missing directory: RunNotFound", () => ["run", "--resume", "/nonexistent/run"], "RunNotFound"],
  ["reins eval --resume of a missing directory: RunNotFound", () => ["eval", "--resume", "/nonexistent/run"], "RunNotFound"],
  ["reins eval --resume of a directory without a plan: RunNotFound", () => ["eval", "--resume", at("a-directory")], "RunNotFound"],
]);

cases("a run directory whose plan.json is damaged", [
  ["garbage bytes: RunCorrupt", () => ["run", "--resume", runDir("garbage", readFileSync(at("random.bin")))], "RunCorrupt"],
  ["truncated JSON: RunCorrupt", () => ["eval", "--resume", runDir("truncated", readFileSync(at("plan.json"), "utf8").slice(0, 200))], "RunCorrupt"],
  ["valid JSON but not a plan: RunCorrupt", () => ["run", "--resume", runDir("object", '{"hello": "world"}\n')], "RunCorrupt"],
  ["JSON null: RunCorrupt", () => ["eval", "--resume", runDir("null", "null\n")], "RunCorrupt"],
]);

cases("a resumed run whose records are damaged", [
  ["a null line in rollouts.jsonl: RunCorrupt", () => ["eval", "--resume", runWith("null-rollout", { "rollouts.jsonl": "null\n" })], "RunCorrupt"],
  [
    "a line that is not an object in calls.jsonl: RunCorrupt",
    () => ["eval", "--resume", runWith("number-call", { "rollouts.jsonl": "", "calls.jsonl": '{"rollout": "r1"}\n42\n' })],
    "RunCorrupt",
  ],
]);

cases("input files that are missing or not what they should be", [
  ...["validate", "plan", "run", "eval"].map((c): Case => [`reins ${c} of a missing spec file: FileNotFound`, () => [c, "nope.yaml"], "FileNotFound"]),
  ["a missing proxy config: FileNotFound", () => ["proxy", "--config", "missing.yaml"], "FileNotFound"],
  ["binary garbage given to reins trajectories: BinaryFile", () => ["trajectories", at("random.bin")], "BinaryFile"],
  ["reins eval of a damaged plan file: InvalidPlan", () => ["eval", at("random.bin.json")], "InvalidPlan"],
  ["reins run of JSON that is not a plan: InvalidPlan", () => ["run", "package.json"], "InvalidPlan"],
  ["reins diff of JSON that is not a plan: InvalidPlan", () => ["diff", "package.json", "package.json"], "InvalidPlan"],
  ["reins diff of binary garbage: InvalidPlan", () => ["diff", at("plan.json"), at("random.bin")], "InvalidPlan"],
  ["reins diff of a missing file: InvalidPlan", () => ["diff", at("plan.json"), at("no-such-plan.json")], "InvalidPlan"],
]);

cases("outputs that cannot be written", [
  ["reins plan --out /proc/x: OutputUnwritable", () => ["plan", SPEC, "--out", "/proc/x"], "OutputUnwritable"],
  ["reins plan --out under a directory that cannot be made: OutputUnwritable", () => ["plan", SPEC, "--out", "/proc/x/y/plan.json"], "OutputUnwritable"],
  ["reins eval --out /proc/x: OutputUnwritable", () => ["eval", SPEC, "--out", "/proc/x"], "OutputUnwritable"],
  ["reins run --out /proc/x: OutputUnwritable", () => ["run", "examples/quickstart/experiment.yaml", "--out", "/proc/x"], "OutputUnwritable"],
  ["reins run of an Evaluation: NotAnExperiment, before any run directory", () => ["run", SPEC, "--out", at("never-made")], "NotAnExperiment"],
  ["reins plan --out of a directory: OutputIsDirectory", () => ["plan", SPEC, "--out", at("a-directory")], "OutputIsDirectory"],
  ["reins proxy --record of a directory: OutputIsDirectory", () => ["proxy", "--config", at("model.yaml"), "--record", at("a-directory")], "OutputIsDirectory"],
  ["reins eval --out of a directory that holds a run: RunExists", () => ["eval", SPEC, "--out", runWith("existing", {})], "RunExists"],
]);
