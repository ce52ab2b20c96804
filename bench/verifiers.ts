/**
 * Verifier speed. (1) Declarative checks on a 1,000-file workspace (JSON, CSV, YAML, Markdown):
 * checks per second and total time, beside a plain read-and-parse of the same files (the floor).
 * (2) The verifier's share of rollout wall time on the starter library, with the reference
 * solution standing in for the harness (a real harness takes far longer, so this share is an
 * upper bound). Run: node --import tsx bench/verifiers.ts
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parse as parseYaml } from "yaml";
import { loadAndResolve } from "../src/compiler/index.js";
import type { ResolvedCheck } from "../src/compiler/contract/plan.js";
import { normalizeCheck } from "../src/compiler/resolve/verifier.js";
import { CheckContext } from "../src/runtime/verifiers/checks/context.js";
import { DirectoryReader } from "../src/runtime/verifiers/directory-reader.js";
import { writeResolvedFiles } from "../src/runtime/verifiers/hidden.js";
import { judgeFromFunction } from "../src/runtime/verifiers/judge.js";
import { runChecks } from "../src/runtime/verifiers/run-checks.js";
import { runVerifier } from "../src/runtime/verifiers/verify.js";

const FILES = 1000;
const ROUNDS = 5;

function buildWorkspace(dir: string): ResolvedCheck[] {
  const checks: ResolvedCheck[] = [];
  for (let i = 0; i < FILES; i++) {
    const sub = join(dir, `part-${i % 10}`);
    mkdirSync(sub, { recursive: true });
    const rel = (name: string) => `part-${i % 10}/${name}`;
    switch (i % 4) {
      case 0:
        writeFileSync(join(sub, `r${i}.json`), JSON.stringify({ id: i, total: i * 1.5, items: Array.from({ length: 20 }, (_, k) => ({ k, v: k * i })) }));
        checks.push(normalizeCheck({ jsonPath: { path: rel(`r${i}.json`), query: "$.items[3].v", equals: 3 * i } }));
        break;
      case 1:
        writeFileSync(join(sub, `t${i}.csv`), ["name,amount", ...Array.from({ length: 50 }, (_, k) => `row${k},${k * i}`)].join("\n"));
        checks.push(
          normalizeCheck({
            csv: { path: rel(`t${i}.csv`), columns: ["name", "amount"], rowCount: 50, cells: [{ where: { name: "row7" }, column: "amount", equals: 7 * i }] },
          }),
        );
        break;
      case 2:
        writeFileSync(join(sub, `c${i}.yaml`), `service: s${i}\nport: ${8000 + i}\nhosts: [a, b, c]\n`);
        checks.push(normalizeCheck({ yamlPath: { path: rel(`c${i}.yaml`), query: "$.port", equals: 8000 + i } }));
        break;
      default:
        writeFileSync(join(sub, `n${i}.md`), `# Note ${i}\n\n${"lorem ipsum dolor sit amet ".repeat(40)}\nTotal: ${i}\n`);
        checks.push(normalizeCheck({ fileMatches: { path: rel(`n${i}.md`), pattern: `^Total: ${i}$`, flags: "m" } }));
    }
  }
  checks.push(normalizeCheck({ fileCount: { glob: "**/*.json", equals: FILES / 4 } }));
  return checks;
}

/** The floor: read every file and parse it, no checks. */
function readAll(dir: string): number {
  let n = 0;
  for (const sub of readdirSync(dir)) {
    for (const f of readdirSync(join(dir, sub))) {
      const text = readFileSync(join(dir, sub, f), "utf8");
      if (f.endsWith(".json")) JSON.parse(text);
      else if (f.endsWith(".yaml")) parseYaml(text);
      n++;
    }
  }
  return n;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

async function benchChecks(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "reins-bench-verifiers-"));
  try {
    const checks = buildWorkspace(dir);
    const checkTimes: number[] = [];
    const readTimes: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      let t = performance.now();
      readAll(dir);
      readTimes.push(performance.now() - t);
      t = performance.now();
      const part = await runChecks(checks, new CheckContext(new DirectoryReader(dir)));
      checkTimes.push(performance.now() - t);
      if (part.passed !== checks.length)
        throw new Error(`bench workspace: ${checks.length - part.passed} checks failed: ${part.results.find((x) => !x.pass)?.reason}`);
    }
    const c = median(checkTimes);
    const f = median(readTimes);
    console.log(`Declarative checks on a ${FILES}-file workspace (median of ${ROUNDS} rounds)`);
    console.log("");
    console.log("  what                               time (ms)    per second");
    console.log(
      `  ${checks.length} checks (json/csv/yaml/regex)   ${c.toFixed(1).padStart(9)}   ${Math.round((checks.length / c) * 1000)
        .toString()
        .padStart(8)} checks/s`,
    );
    console.log(
      `  plain read + parse of ${FILES} files     ${f.toFixed(1).padStart(9)}   ${Math.round((FILES / f) * 1000)
        .toString()
        .padStart(8)} files/s`,
    );
    console.log("");
    console.log(`  ratio checks / plain read: ${(c / f).toFixed(2)}×   (goal: the checks well under 1 s: ${c < 1000 ? "yes" : "NO"})`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function benchShare(): Promise<void> {
  const root = resolve(import.meta.dirname, "../examples/tasks");
  const families = readdirSync(root)
    .filter((f) => existsSync(join(root, f, "family.yaml")))
    .sort();
  console.log("");
  console.log("Verifier share of rollout wall time (reference solution as the harness; an upper bound)");
  console.log("");
  console.log("  family               setup ms   solve ms   verify ms   verify share");
  let totalVerify = 0;
  let totalAll = 0;
  for (const fam of families) {
    const r = loadAndResolve([join(root, fam, "family.yaml")]);
    const task = [...r.value.world.tasks.values()][0].value;
    const answer = JSON.stringify(Object.fromEntries((task.verifier.rubric?.items ?? []).map((i) => [i.id, 1])));
    const ws = mkdtempSync(join(tmpdir(), "reins-bench-share-"));
    try {
      let t = performance.now();
      await writeResolvedFiles(ws, task.files);
      const setup = performance.now() - t;
      t = performance.now();
      execFileSync(process.execPath, [join(root, fam, "solution.mjs"), ws]);
      const solve = performance.now() - t;
      t = performance.now();
      const v = await runVerifier(task.verifier, {
        reader: new DirectoryReader(ws),
        instruction: task.instruction,
        hiddenFiles: task.hiddenFiles,
        judge: judgeFromFunction(async () => answer),
      });
      const verify = performance.now() - t;
      if (v.reward !== 1) throw new Error(`${fam}: reference solution scored ${v.reward}`);
      const all = setup + solve + verify;
      totalVerify += verify;
      totalAll += all;
      console.log(
        `  ${fam.padEnd(18)} ${setup.toFixed(1).padStart(9)} ${solve.toFixed(1).padStart(10)} ${verify.toFixed(1).padStart(11)} ${`${((verify / all) * 100).toFixed(0)}%`.padStart(14)}`,
      );
    } finally {
      rmSync(ws, { recursive: true, force: true });
    }
  }
  console.log("");
  console.log(
    `  all families: verify ${((totalVerify / totalAll) * 100).toFixed(0)}% of setup + solve + verify; families that run commands (tests, scripts) dominate it.`,
  );
}

await benchChecks();
await benchShare();
