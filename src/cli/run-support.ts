/** Shared by `eval` and `run`: compile, open the run store, create the sandbox provider, handle Ctrl-C. */
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { execFileSync } from "node:child_process";
import { compilePlan, type Plan } from "../compiler/index.js";
import type { Diagnostic } from "../compiler/contract/diagnostics.js";
import { RunStore } from "../runtime/store/run-store.js";
import { EXIT } from "./exit-codes.js";
import { printJson, reportDiagnostics, say } from "./io.js";
import { attachManifests } from "./manifests.js";

export interface RunCliOptions {
  out?: string;
  resume?: string;
  target?: string;
  json?: boolean;
  quiet?: boolean;
  concurrency?: string;
}

export function fail(json: boolean | undefined, code: string, message: string, hint: string, diagnostics: Diagnostic[] = []): void {
  if (json) printJson({ ok: false, diagnostics: [...diagnostics, { code, severity: "error", message, hint, file: "", line: 1, column: 1 }] });
  else {
    reportDiagnostics(diagnostics, false);
    say(`error[${code}]: ${message}\n  hint: ${hint}`);
  }
  process.exitCode = EXIT.failed;
}

/** Compile and open (or resume) the run directory. Returns undefined after reporting a problem. */
export function openRun(paths: string[], opts: RunCliOptions): { plan: Plan; store: RunStore } | undefined {
  if (paths.length === 0 && opts.resume) {
    let plan: Plan;
    try {
      plan = JSON.parse(readFileSync(resolve(opts.resume, "plan.json"), "utf8")) as Plan;
    } catch (err) {
      fail(opts.json, "RunNotFound", `${opts.resume} holds no readable plan.json (${(err as Error).message}).`, "Pass the --out directory of the run to resume.");
      return undefined;
    }
    const opened = RunStore.open(resolve(opts.resume), plan, { resume: true });
    if (!opened.store) {
      fail(opts.json, opened.problem!.code, opened.problem!.message, opened.problem!.hint);
      return undefined;
    }
    return { plan, store: opened.store };
  }
  const compiled = compilePlan(paths, opts.target ? { target: opts.target } : {});
  if (!compiled.value) {
    if (opts.json) printJson({ ok: false, diagnostics: compiled.diagnostics });
    else reportDiagnostics(compiled.diagnostics, false);
    process.exitCode = EXIT.failed;
    return undefined;
  }
  if (!opts.json) reportDiagnostics(compiled.diagnostics, false);
  const plan = attachManifests(compiled.value);
  const dir = resolve(opts.resume ?? opts.out ?? `runs/${plan.name}-${new Date().toISOString().replace(/[:.]/g, "-").slice(0, 19)}`);
  const opened = RunStore.open(dir, plan, { resume: opts.resume !== undefined, manifest: manifest() });
  if (!opened.store) {
    fail(opts.json, opened.problem!.code, opened.problem!.message, opened.problem!.hint);
    return undefined;
  }
  return { plan, store: opened.store };
}

function manifest(): Record<string, unknown> {
  let commit: string | null = null;
  let dirty: boolean | null = null;
  try {
    commit = execFileSync("git", ["rev-parse", "HEAD"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
    dirty = execFileSync("git", ["status", "--porcelain"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim() !== "";
  } catch {
    /* not a git checkout */
  }
  return { reins: "0.1.0", node: process.version, platform: `${process.platform}-${process.arch}`, git: { commit, dirty }, argv: process.argv.slice(2) };
}

/** Ctrl-C aborts the run cleanly (sandboxes destroyed, store consistent), then exits 130. */
export function interruptible(): AbortController {
  const ac = new AbortController();
  process.removeAllListeners("SIGINT");
  process.removeAllListeners("SIGTERM");
  const stop = () => {
    if (ac.signal.aborted) process.exit(EXIT.interrupted);
    say("interrupted: stopping rollouts (Ctrl-C again to quit now)…");
    ac.abort();
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
  return ac;
}
