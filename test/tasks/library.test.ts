/**
 * The starter task library (examples/tasks): six families, one per ClawGym-Bench category. Each
 * family's reference solution scores 1.0 and its mistakes score < 1.0 (see family-check.ts).
 * A family with its own test/tasks/<name>.test.ts (from `reins init family`) is tested there.
 */
import { existsSync, readdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { expect, it } from "vitest";
import { describeFamily, loadFamilyTasks } from "./family-check.js";

const ROOT = resolve(import.meta.dirname, "../../examples/tasks");
const FAMILIES = readdirSync(ROOT, { withFileTypes: true })
  .filter((d) => d.isDirectory() && existsSync(join(ROOT, d.name, "family.yaml")))
  .map((d) => d.name)
  .sort();

const CATEGORIES = [
  "productivity-collaboration",
  "systems-automation",
  "analysis-reasoning",
  "content-domain-support",
  "planning-knowledge-management",
  "software-development",
];

it("covers the six ClawGym-Bench workspace categories", () => {
  const categories = FAMILIES.map((f) => loadFamilyTasks(join(ROOT, f, "family.yaml")).tasks[0]?.category);
  for (const c of CATEGORIES) expect(categories).toContain(c);
});

for (const family of FAMILIES) {
  if (!existsSync(resolve(import.meta.dirname, `${family}.test.ts`))) describeFamily(join(ROOT, family));
}
