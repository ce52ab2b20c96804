/**
 * Specs read only the project. A spec is input from whoever wrote it; reins runs as a user who
 * can read much more (often root). Every host path a spec names — `workspace.files[].from`,
 * `fromDir`, `spec.imports`, harness `mounts`, a model's `chatTemplateFile` — resolves inside the
 * project root (the directory holding the spec paths given, or --project-root DIR), symlinks
 * resolved; devices, FIFOs and kernel files are never opened; files and directories are capped;
 * code frames only ever show spec files. Each attack below ends in a diagnostic with a position,
 * and the secret it reached for is nowhere in the output or the plan.
 */
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, truncateSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { compilePlan, validateSpecs, type Diagnostic } from "../../src/compiler/index.js";
import { reins as launch } from "../reins-cli.js";
import { tempDir } from "../temp.js";

const SECRET = "root:$6$TOPSECRET-hash-of-the-host:19000:0:99999:7:::";
const REPO = resolve(".");

/** A secret outside every project: a file and a directory holding one. */
function hostSecret(): { file: string; dir: string } {
  const dir = tempDir("reins-host-secret-");
  writeFileSync(join(dir, "shadow"), `${SECRET}\n`);
  return { file: join(dir, "shadow"), dir };
}

/** A project directory with one spec file (eval.yaml) and whatever files are given. */
function project(spec: string, files: Record<string, string> = {}): string {
  const dir = tempDir("reins-project-");
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(join(dir, name, ".."), { recursive: true });
    writeFileSync(join(dir, name), content);
  }
  writeFileSync(join(dir, "eval.yaml"), spec);
  return dir;
}

/** An Evaluation of one task whose workspace is `workspace` (YAML lines under `workspace:`), and a harness with `mounts`. */
function evaluation(opts: { workspace?: string; imports?: string[]; mounts?: string[] } = {}): string {
  return `apiVersion: reins/v1alpha1
kind: Evaluation
metadata: {name: e}
spec:
${opts.imports ? `  imports: ${JSON.stringify(opts.imports)}\n` : ""}  tasks: [{name: t}]
  harnesses: [{name: h}]
---
apiVersion: reins/v1alpha1
kind: Harness
metadata: {name: h}
spec:
  command: [agent, "{{instruction}}"]
${opts.mounts ? `  mounts:\n${opts.mounts.map((m, i) => `    - {path: ${JSON.stringify(m)}, sandboxPath: /mnt/m${i}}`).join("\n")}\n` : ""}---
apiVersion: reins/v1alpha1
kind: Task
metadata: {name: t}
spec:
  instruction: read the files
  workspace:
${opts.workspace ?? "    files: [{path: a.txt, content: a}]"}
  verifier: {checks: [{fileExists: a.txt}]}
`;
}

/** The CLI as a user meets it, with a hard timeout so that a hang fails instead of stalling the suite. */
function reins(args: string[], cwd = REPO) {
  const started = Date.now();
  const r = launch(args, { cwd, timeout: 20_000 });
  return { ...r, seconds: (Date.now() - started) / 1000 };
}

function errors(ds: readonly Diagnostic[]): Diagnostic[] {
  return ds.filter((d) => d.severity === "error");
}

/** The errors about the attack itself (a task refused also leaves the Evaluation's reference to it unknown). */
function refusals(ds: readonly Diagnostic[]): Diagnostic[] {
  return errors(ds).filter((d) => d.code !== "UnknownReference");
}

/** `reins plan` of the project's eval.yaml: refused with `code` at `line`, no plan written, the secret nowhere. */
function expectPlanRefused(dir: string, code: string, extra: string[] = []) {
  const out = join(dir, "plan.json");
  const r = reins(["plan", join(dir, "eval.yaml"), "--out", out, ...extra]);
  expect(r.signal).toBeNull();
  expect(r.code).toBe(1);
  expect(r.stderr).toContain(`error[${code}]`);
  expect(r.stderr).toContain("hint:");
  expect(r.stderr).not.toMatch(/\n\s+at .*\.(ts|js):\d+/); // no stack trace
  expect(r.stderr + r.stdout).not.toContain("TOPSECRET");
  expect(existsSync(out)).toBe(false);
  return r;
}

describe("workspace from / fromDir read only the project", () => {
  it("`from: /etc/shadow` is refused with a position and a hint, and nothing lands in the plan", () => {
    const dir = project(evaluation({ workspace: "    files: [{path: a.txt, from: /etc/shadow}]" }));
    const r = compilePlan([join(dir, "eval.yaml")], { env: {} });
    expect(r.value).toBeUndefined();
    expect(refusals(r.diagnostics)).toMatchObject([{ code: "OutsideProject", line: 20, file: join(dir, "eval.yaml") }]);
    expect(refusals(r.diagnostics)[0]!.hint).toContain("--project-root");
    expectPlanRefused(dir, "OutsideProject");
  });

  it("`from:` an absolute path to a readable secret outside the project is refused", () => {
    const secret = hostSecret();
    const dir = project(evaluation({ workspace: `    files: [{path: a.txt, from: ${secret.file}}]` }));
    expectPlanRefused(dir, "OutsideProject");
  });

  it("`fromDir: /root` and `fromDir:` a directory outside the project are refused", () => {
    const secret = hostSecret();
    for (const fromDir of ["/root", secret.dir]) {
      const dir = project(evaluation({ workspace: `    fromDir: ${fromDir}` }));
      const r = compilePlan([join(dir, "eval.yaml")], { env: {} });
      expect(refusals(r.diagnostics), fromDir).toMatchObject([{ code: "OutsideProject", line: 20 }]);
      expectPlanRefused(dir, "OutsideProject");
    }
  });

  it("`from: ../../outside` climbing out of the project is refused", () => {
    const secret = hostSecret();
    const dir = project(evaluation({ workspace: "    files: [{path: a.txt, from: ../outside/shadow}]" }));
    mkdirSync(join(dir, "..", "outside"), { recursive: true });
    // The climb is refused lexically, whether or not the file exists.
    expectPlanRefused(dir, "OutsideProject");
    const deep = project(evaluation({ workspace: `    files: [{path: a.txt, from: ${"../".repeat(12)}${secret.file.slice(1)}}]` }));
    expectPlanRefused(deep, "OutsideProject");
  });

  it("a symlink inside the project that points out of it is refused (from and fromDir); symlinks inside a fromDir are not followed", () => {
    const secret = hostSecret();
    const dir = project(evaluation({ workspace: "    files: [{path: a.txt, from: link-to-shadow}]" }));
    symlinkSync(secret.file, join(dir, "link-to-shadow"));
    expectPlanRefused(dir, "OutsideProject");

    const viaDir = project(evaluation({ workspace: "    fromDir: link-to-dir" }));
    symlinkSync(secret.dir, join(viaDir, "link-to-dir"));
    expectPlanRefused(viaDir, "OutsideProject");

    const inner = project(evaluation({ workspace: "    fromDir: ws" }), { "ws/a.txt": "a\n" });
    symlinkSync(secret.file, join(inner, "ws", "stolen.txt"));
    const r = compilePlan([join(inner, "eval.yaml")], { env: {} });
    expect(errors(r.diagnostics)).toEqual([]);
    expect(r.value!.tasks[0]!.files.map((f) => f.path)).toEqual(["a.txt"]);
    expect(JSON.stringify(r.value)).not.toContain("TOPSECRET");
  });

  it("control: files, directories and symlinks that stay inside the project are read", () => {
    const dir = project(evaluation({ workspace: "    fromDir: ws\n    files: [{path: b.txt, from: data/b.txt}, {path: c.txt, from: link-to-b}]" }), {
      "ws/a.txt": "a\n",
      "data/b.txt": "b\n",
    });
    symlinkSync(join(dir, "data", "b.txt"), join(dir, "link-to-b"));
    const r = compilePlan([join(dir, "eval.yaml")], { env: {} });
    expect(errors(r.diagnostics)).toEqual([]);
    expect(r.value!.tasks[0]!.files.map((f) => [f.path, f.content])).toEqual([
      ["a.txt", "a\n"],
      ["b.txt", "b\n"],
      ["c.txt", "b\n"],
    ]);
  });

  it("--project-root widens the project on purpose: a sibling data directory is read only when the flag names a root that holds it", () => {
    const dir = tempDir("reins-project-");
    mkdirSync(join(dir, "specs"));
    mkdirSync(join(dir, "data"));
    writeFileSync(join(dir, "data", "b.txt"), "b\n");
    writeFileSync(join(dir, "specs", "eval.yaml"), evaluation({ workspace: "    files: [{path: b.txt, from: ../data/b.txt}]" }));
    const refused = reins(["plan", "specs/eval.yaml", "--json"], dir);
    expect(refused.code).toBe(1);
    expect(refusals(JSON.parse(refused.stdout).diagnostics)).toMatchObject([{ code: "OutsideProject", file: "specs/eval.yaml", line: 20 }]);
    const ok = reins(["plan", "specs/eval.yaml", "--project-root", ".", "--json"], dir);
    expect(ok.stderr).toBe("");
    expect(ok.code).toBe(0);
    const noRoot = reins(["validate", "specs/eval.yaml", "--project-root", "missing", "--json"], dir);
    expect(noRoot.code).toBe(1);
    expect(JSON.parse(noRoot.stdout).diagnostics[0].code).toBe("NoProjectRoot");
  });

  it("control: `reins init experiment --tasks DIR` beside the experiment prints next steps with the --project-root they need, and they validate", () => {
    const dir = tempDir("reins-project-");
    mkdirSync(join(dir, "mytasks"));
    execFileSync("cp", ["-r", join(REPO, "examples/tasks/log-triage"), join(dir, "mytasks", "log-triage")]);
    const init = reins(["init", "experiment", "first", "--tasks", "mytasks"], dir);
    expect(init.code, init.stderr).toBe(0);
    expect(init.stderr + init.stdout).toContain("reins validate first/experiment.yaml --project-root .");
    expect(reins(["validate", "first/experiment.yaml"], dir).code).toBe(1);
    const ok = reins(["validate", "first/experiment.yaml", "--project-root", "."], dir);
    expect(ok.code, ok.stderr).toBe(0);
  });

  it("spec files from unrelated places share no project but /, which is refused rather than opening the whole host", () => {
    const a = project(evaluation());
    // The other spec must sit under another top-level directory than the temporary project (a
    // checkout may itself live under /tmp): the checkout's fixture, or a copy of it elsewhere.
    const fixture = join(REPO, "test/fixtures/valid/contract.yaml");
    const top = (p: string) => p.split("/")[1];
    const elsewhere = top(REPO) !== top(a) ? null : mkdtempSync(join(top(a) === "var" ? homedir() : "/var/tmp", "reins-elsewhere-"));
    try {
      const other = elsewhere === null ? fixture : join(elsewhere, "contract.yaml");
      if (elsewhere !== null) copyFileSync(fixture, other);
      const r = validateSpecs([join(a, "eval.yaml"), other], { env: {} });
      expect(errors(r.diagnostics)).toMatchObject([{ code: "NoProjectRoot" }]);
    } finally {
      if (elsewhere !== null) rmSync(elsewhere, { recursive: true, force: true });
    }
  });
});

describe("imports read only the project, and code frames show only spec files", () => {
  it("`imports: [/etc/shadow]` is refused before reading: no line of it is printed", () => {
    const secret = hostSecret();
    const dir = project(evaluation({ imports: ["/etc/shadow", secret.file] }));
    const r = compilePlan([join(dir, "eval.yaml")], { env: {} });
    expect(errors(r.diagnostics).map((d) => [d.code, d.line, d.file])).toEqual([
      ["OutsideProject", 5, join(dir, "eval.yaml")],
      ["OutsideProject", 5, join(dir, "eval.yaml")],
    ]);
    const cli = expectPlanRefused(dir, "OutsideProject");
    expect(cli.stderr).not.toContain("root:");
    // The frame shown is the spec's own line.
    expect(cli.stderr).toContain(`5 |   imports: ["/etc/shadow",`);
  });

  it("a symlink inside the project that leads out of it is not imported", () => {
    const secret = hostSecret();
    const dir = project(evaluation({ imports: ["lib.yaml"] }));
    symlinkSync(secret.file, join(dir, "lib.yaml"));
    expectPlanRefused(dir, "OutsideProject");
  });

  it("a diagnostic about a file that is no spec file (not .yaml/.yml) shows no line of it", () => {
    const dir = tempDir("reins-project-");
    writeFileSync(join(dir, "notes.txt"), "password: hunter2-TOPSECRET\n");
    const r = reins(["validate", join(dir, "notes.txt")]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("error[MissingApiVersion]");
    expect(r.stderr).not.toContain("TOPSECRET");
  });

  it("control: the project's own files, directories and reins's shipped library can be imported", () => {
    const dir = project(evaluation({ imports: ["lib", join(REPO, "specs/harnesses/reins-agent.yaml")] }), {
      "lib/task.yaml": "apiVersion: reins/v1alpha1\nkind: Task\nmetadata: {name: u}\nspec:\n  instruction: x\n  verifier: {checks: [{fileExists: a.txt}]}\n",
    });
    const r = validateSpecs([join(dir, "eval.yaml")], { env: {} });
    expect(errors(r.diagnostics)).toEqual([]);
    expect(r.value.world.tasks.has("u")).toBe(true);
  });
});

describe("harness mounts show only the project", () => {
  it("mounts of /, /etc, /root, '..' or a symlink out of the project are refused", () => {
    const secret = hostSecret();
    const dir = project(evaluation({ mounts: ["/", "/etc", "/root", "..", "out"] }));
    symlinkSync(secret.dir, join(dir, "out"));
    const r = validateSpecs([join(dir, "eval.yaml")], { env: {} });
    expect(errors(r.diagnostics).map((d) => [d.code, d.line])).toEqual([
      ["OutsideProject", 14],
      ["OutsideProject", 15],
      ["OutsideProject", 16],
      ["OutsideProject", 17],
      ["OutsideProject", 18],
    ]);
    expectPlanRefused(dir, "OutsideProject");
  });

  it("control: a directory of the project is mounted, at its absolute path", () => {
    const dir = project(evaluation({ mounts: [".", "tools"] }), { "tools/solve.mjs": "" });
    const r = compilePlan([join(dir, "eval.yaml")], { env: {} });
    expect(errors(r.diagnostics)).toEqual([]);
    expect(r.value!.harnesses[0]!.mounts.map((m) => m.hostPath)).toEqual([dir, join(dir, "tools")]);
  });
});

describe("devices, FIFOs and kernel files are never opened", () => {
  /** Each command ends quickly (the subprocess has a 20 s hard limit) with exit 1 and the code. */
  function expectQuickRefusal(args: string[], code: string, cwd?: string) {
    const r = reins(["validate", "--json", ...args], cwd);
    expect(r.signal, "the command hung and was killed").toBeNull();
    expect(r.code).toBe(1);
    expect(r.seconds).toBeLessThan(15);
    const ds = JSON.parse(r.stdout).diagnostics as Diagnostic[];
    expect(ds.map((d) => d.code)).toContain(code);
    return ds;
  }

  it("`imports: [/dev/zero]` and `imports: [/]` are refused at once", () => {
    const dir = project(evaluation({ imports: ["/dev/zero", "/"] }));
    const ds = expectQuickRefusal([join(dir, "eval.yaml")], "OutsideProject");
    expect(ds.filter((d) => d.code === "OutsideProject")).toHaveLength(2);
  });

  it("a FIFO as the spec file, or as an import, is refused without blocking", () => {
    const dir = project(evaluation({ imports: ["pipe.yaml"] }));
    execFileSync("mkfifo", [join(dir, "pipe.yaml")]);
    expectQuickRefusal([join(dir, "pipe.yaml")], "NotRegularFile");
    const ds = expectQuickRefusal([join(dir, "eval.yaml")], "NotRegularFile");
    expect(ds.find((d) => d.code === "NotRegularFile")).toMatchObject({ file: join(dir, "eval.yaml"), line: 5 });
  });

  it("`from: /proc/kmsg` and `from: /dev/zero` are refused at once, even with --project-root /", () => {
    for (const from of ["/proc/kmsg", "/dev/zero"]) {
      const dir = project(evaluation({ workspace: `    files: [{path: a.txt, from: ${from}}]` }));
      expectQuickRefusal([join(dir, "eval.yaml")], "OutsideProject");
      expectQuickRefusal([join(dir, "eval.yaml"), "--project-root", "/"], "NotRegularFile");
    }
  });

  it("a FIFO or a symlink to a device inside the project is refused as a workspace file and as a mount", () => {
    const dir = project(evaluation({ workspace: "    files: [{path: a.txt, from: pipe}, {path: z.txt, from: zero}]", mounts: ["pipe"] }));
    execFileSync("mkfifo", [join(dir, "pipe")]);
    symlinkSync("/dev/zero", join(dir, "zero"));
    const ds = expectQuickRefusal([join(dir, "eval.yaml")], "NotRegularFile");
    expect(
      refusals(ds)
        .map((d) => d.code)
        .sort(),
    ).toEqual(["NotRegularFile", "NotRegularFile", "OutsideProject"]);
  });
});

describe("sizes are capped", () => {
  const MiB = 1024 * 1024;

  it("a spec file or an imported spec file over 8 MiB is refused without being read", () => {
    const dir = project(evaluation({ imports: ["big.yaml"] }), { "big.yaml": "" });
    truncateSync(join(dir, "big.yaml"), 9 * MiB);
    const r = validateSpecs([join(dir, "eval.yaml")], { env: {} });
    expect(errors(r.diagnostics).map((d) => d.code)).toEqual(["FileTooLarge"]);
    expect(errors(validateSpecs([join(dir, "big.yaml")], { env: {} }).diagnostics).map((d) => d.code)).toEqual(["FileTooLarge"]);
  });

  it("a workspace file over 16 MiB is refused", () => {
    const dir = project(evaluation({ workspace: "    files: [{path: a.txt, from: big.bin}]" }), { "big.bin": "" });
    truncateSync(join(dir, "big.bin"), 17 * MiB);
    const r = validateSpecs([join(dir, "eval.yaml")], { env: {} });
    expect(refusals(r.diagnostics)).toMatchObject([{ code: "FileTooLarge", line: 20 }]);
    expect(refusals(r.diagnostics)[0]!.hint).toContain("16 MiB");
  });

  it("a fromDir of more than 10,000 files, or of more than 64 MiB, is refused before any file is read", () => {
    const many = project(evaluation({ workspace: "    fromDir: ws" }));
    mkdirSync(join(many, "ws"));
    for (let i = 0; i <= 10_000; i++) writeFileSync(join(many, "ws", `f${i}`), "");
    expect(refusals(validateSpecs([join(many, "eval.yaml")], { env: {} }).diagnostics)).toMatchObject([{ code: "DirectoryTooLarge", line: 20 }]);

    const heavy = project(evaluation({ workspace: "    fromDir: ws" }));
    mkdirSync(join(heavy, "ws"));
    for (let i = 0; i < 5; i++) {
      writeFileSync(join(heavy, "ws", `part${i}`), "");
      truncateSync(join(heavy, "ws", `part${i}`), 15 * MiB);
    }
    expect(refusals(validateSpecs([join(heavy, "eval.yaml")], { env: {} }).diagnostics)).toMatchObject([{ code: "DirectoryTooLarge", line: 20 }]);
  });

  it("control: the plan of a project with ordinary files still holds them", () => {
    const dir = project(evaluation({ workspace: "    fromDir: ws" }), { "ws/data.csv": "a,b\n1,2\n" });
    const r = compilePlan([join(dir, "eval.yaml")], { env: {} });
    expect(errors(r.diagnostics)).toEqual([]);
    expect(readFileSync(join(dir, "ws", "data.csv"), "utf8")).toBe(r.value!.tasks[0]!.files[0]!.content);
  });
});
