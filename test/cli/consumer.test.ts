/**
 * reins in a user's own repository: `npm pack` this checkout, install the tarball into a fresh git
 * repository elsewhere, then use it there as its README says: `npx reins --help`,
 * `npx reins init family demo`, the scaffolded test under `node --test`, `npx reins validate`.
 *
 * Loopback only: the install is `npm ci --offline` from the npm cache that this checkout's own
 * `npm ci` filled. The cache holds the dependency tarballs but not the registry's metadata, so the
 * consumer gets a lockfile made from this checkout's (the production part of the same tree, with
 * reins from the tarball) — what `npm install ./reins-X.tgz` resolves to, given the undici
 * override the README asks Node 20 users to add.
 */
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const run = promisify(execFile);
const REINS = resolve(import.meta.dirname, "../..");
const root = mkdtempSync(join(tmpdir(), "reins-consumer-"));
const project = join(root, "my-tasks");

/** The environment without what an enclosing `npm test` sets for its own project. */
function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^npm_/i.test(k) && k !== "INIT_CWD" && k !== "NODE_OPTIONS") env[k] = v;
  return { ...env, NO_COLOR: "1" };
}

async function sh(cwd: string, cmd: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await run(cmd, args, { cwd, env: cleanEnv(), timeout: 180_000, maxBuffer: 16 << 20 });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    return { code: typeof err.code === "number" ? err.code : -1, stdout: err.stdout ?? "", stderr: err.stderr ?? String(e) };
  }
}

/** A lockfile for a project that depends on the tarball only: this checkout's production tree. */
function consumerLockfile(tarball: string): object {
  const lock = JSON.parse(readFileSync(join(REINS, "package-lock.json"), "utf8")) as { packages: Record<string, { dev?: boolean; devOptional?: boolean }> };
  const pkg = JSON.parse(readFileSync(join(REINS, "package.json"), "utf8"));
  const integrity = `sha512-${createHash("sha512")
    .update(readFileSync(join(project, tarball)))
    .digest("base64")}`;
  const packages: Record<string, unknown> = {
    "": { name: "my-tasks", dependencies: { reins: `file:${tarball}` } },
    "node_modules/reins": {
      version: pkg.version,
      resolved: `file:${tarball}`,
      integrity,
      license: pkg.license,
      dependencies: pkg.dependencies,
      bin: pkg.bin,
      engines: pkg.engines,
    },
  };
  for (const [path, entry] of Object.entries(lock.packages)) if (path !== "" && !entry.dev && !entry.devOptional) packages[path] = entry;
  return { name: "my-tasks", lockfileVersion: 3, requires: true, packages };
}

let tarball = "";
beforeAll(async () => {
  mkdirSync(project);
  const packed = await sh(REINS, "npm", ["pack", "--json", "--pack-destination", project]);
  expect(packed.code, packed.stderr).toBe(0);
  tarball = (JSON.parse(packed.stdout) as { filename: string }[])[0]!.filename;
  expect((await sh(project, "git", ["init", "-q"])).code).toBe(0);
  writeFileSync(
    join(project, "package.json"),
    `${JSON.stringify({ name: "my-tasks", private: true, type: "module", dependencies: { reins: `file:${tarball}` }, overrides: { undici: "7.30.2" } }, null, 2)}\n`,
  );
  // As the README says: onnxruntime-node's install script would fetch CUDA libraries.
  writeFileSync(join(project, ".npmrc"), "onnxruntime-node-install=skip\n");
  writeFileSync(join(project, "package-lock.json"), `${JSON.stringify(consumerLockfile(tarball), null, 2)}\n`);
  const installed = await sh(project, "npm", ["ci", "--offline", "--no-audit", "--no-fund"]);
  expect(installed.code, installed.stderr).toBe(0);
}, 300_000);

afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("reins installed into another project", () => {
  it("ships what it runs from, and not its tests", async () => {
    const listed = await sh(project, "tar", ["-tzf", tarball]);
    const files = listed.stdout.split("\n").filter(Boolean);
    for (const f of [
      "package/bin/reins.js",
      "package/src/cli/main.ts",
      "package/src/testing/entry.mjs",
      "package/schemas/v1alpha1/any.schema.json",
      "package/specs/harnesses/reins-agent.yaml",
      "package/trainers/torch/worker.py",
      "package/examples/tasks/evaluation.yaml",
    ]) {
      expect(files).toContain(f);
    }
    expect(files.filter((f) => f.startsWith("package/test/") || f.startsWith("package/bench/") || f.includes("node_modules"))).toEqual([]);
    // The bin is a link into the installed package, and runs from there with reins's own tsx.
    expect(realpathSync(join(project, "node_modules/.bin/reins"))).toBe(join(project, "node_modules/reins/bin/reins.js"));
  });

  it("npx reins --help", async () => {
    const r = await sh(project, "npx", ["--offline", "reins", "--help"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("Usage: reins [options] [command]");
    expect(r.stdout).toMatch(/init\b.*\n(.|\n)*validate\b/);
  });

  it("npx reins init family demo writes a family whose test passes under node --test", async () => {
    const r = await sh(project, "npx", ["--offline", "reins", "init", "family", "demo"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain("created test/tasks/demo.test.mjs");
    expect(r.stderr).toContain("node --test test/tasks/demo.test.mjs");

    const family = readFileSync(join(project, "demo/family.yaml"), "utf8");
    expect(family.split("\n")[0]).toBe("# yaml-language-server: $schema=../node_modules/reins/schemas/v1alpha1/any.schema.json");
    expect(existsSync(join(project, "demo", "../node_modules/reins/schemas/v1alpha1/any.schema.json"))).toBe(true);
    const test = readFileSync(join(project, "test/tasks/demo.test.mjs"), "utf8");
    expect(test).toContain('import { describeFamily } from "reins/testing";');

    const t = await sh(project, process.execPath, ["--test", "--test-reporter=tap", "test/tasks/demo.test.mjs"]);
    expect(t.code, `${t.stdout}\n${t.stderr}`).toBe(0);
    expect(t.stdout).toMatch(/# pass 4\n/);
    expect(t.stdout).toMatch(/# fail 0\n/);
  });

  it("npx reins validate passes on the scaffold; an experiment over the shipped starter tasks plans", async () => {
    const v = await sh(project, "npx", ["--offline", "reins", "validate", "demo"]);
    expect(v.code, v.stderr).toBe(0);
    expect(v.stderr).toContain("ok: 1 document(s), 2 task(s)");

    const e = await sh(project, "npx", ["--offline", "reins", "init", "experiment", "first", "--json"]);
    expect(e.code, e.stderr).toBe(0);
    const experiment = readFileSync(join(project, "first/experiment.yaml"), "utf8");
    expect(experiment.split("\n")[0]).toBe("# yaml-language-server: $schema=../node_modules/reins/schemas/v1alpha1/any.schema.json");
    expect(experiment).toContain("\n    - ../node_modules/reins/examples/tasks/log-triage\n");
    const p = await sh(project, "npx", ["--offline", "reins", "plan", "first/evaluation.yaml", "--json"]);
    expect(p.code, p.stdout).toBe(0);
    expect(JSON.parse(p.stdout)).toMatchObject({ ok: true, kind: "Evaluation", harnesses: ["reins-agent"] });
  });

  it("the library entry points load: reins and reins/testing", async () => {
    const script =
      'const r = await import("reins"); const t = await import("reins/testing"); console.log(typeof r.compiler.compilePlan, typeof r.runtime.runEvaluation, typeof t.describeFamily, typeof t.familyChecks);';
    const r = await sh(project, process.execPath, ["--input-type=module", "-e", script]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe("function function function function");
  });
});
