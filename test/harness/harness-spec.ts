/**
 * Test helper: reads the shipped Harness specs (specs/harnesses/<name>.yaml) and the proxy examples
 * (examples/proxy/<name>.yaml) through the compiler's own schemas and resolvers, so a spec the
 * compiler would reject fails here too.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";
import type { ResolvedHarness, ResolvedModel } from "../../src/compiler/contract/plan.js";
import { HarnessDocument } from "../../src/compiler/schema/harness.js";
import { ModelDocument } from "../../src/compiler/schema/model.js";
import { resolveHarness, resolveModel } from "../../src/compiler/resolve/defaults.js";

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const HARNESS_NAMES = ["claude-code", "codex", "openclaw", "reins-agent"] as const;
export type HarnessName = (typeof HARNESS_NAMES)[number];

export function harnessSpecFile(name: string): string {
  return path.join(REPO_ROOT, "specs/harnesses", `${name}.yaml`);
}

export function proxyExampleFile(name: string): string {
  return path.join(REPO_ROOT, "examples/proxy", `${name}.yaml`);
}

export function loadHarnessSpec(name: string): ResolvedHarness {
  const file = harnessSpecFile(name);
  const doc = HarnessDocument.parse(parse(readFileSync(file, "utf8")));
  return resolveHarness(doc.metadata.name, doc.spec, file);
}

export function loadProxyExample(name: string): ResolvedModel {
  const file = proxyExampleFile(name);
  const doc = ModelDocument.parse(parse(readFileSync(file, "utf8")));
  const { model, problems } = resolveModel(doc.metadata.name, doc.spec, file);
  if (problems.length > 0) throw new Error(`${file}: ${problems.map((p) => p.message).join("; ")}`);
  return model;
}
