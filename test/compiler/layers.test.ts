/**
 * The compiler's boundaries: the runtime reaches the compiler only through its front door
 * (src/compiler/index.ts) and the contract (src/compiler/contract/), the contract is a leaf at run
 * time, closed lists are spelled once, and plan paths are never resolved again at run time.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? sources(p) : p.endsWith(".ts") ? [p] : [];
  });
}

/** Module specifiers of static imports and re-exports, with whether they are type-only. */
function importsOf(file: string): { spec: string; typeOnly: boolean }[] {
  const text = readFileSync(file, "utf8");
  const out: { spec: string; typeOnly: boolean }[] = [];
  for (const m of text.matchAll(/^\s*(import|export)\s+(type\s+)?(?:[^;]*?\s+from\s+)?["']([^"']+)["']/gm)) out.push({ spec: m[3]!, typeOnly: Boolean(m[2]) });
  for (const m of text.matchAll(/\bimport\(\s*["']([^"']+)["']\s*\)/g)) out.push({ spec: m[1]!, typeOnly: false });
  return out;
}

const COMPILER = resolve("src/compiler");

describe("compiler boundaries", () => {
  it("the runtime imports only the compiler's front door and its contract", () => {
    const bad: string[] = [];
    for (const file of sources("src/runtime")) {
      for (const { spec } of importsOf(file)) {
        if (!spec.startsWith(".")) continue;
        const target = relative(COMPILER, resolve(dirname(file), spec));
        if (target.startsWith("..")) continue;
        if (target !== "index.js" && !target.startsWith("contract/")) bad.push(`${file} → ${spec}`);
      }
    }
    expect(bad).toEqual([]);
  });

  it("the contract loads nothing but itself and node builtins at run time", () => {
    const bad: string[] = [];
    for (const file of sources("src/compiler/contract")) {
      for (const { spec, typeOnly } of importsOf(file)) {
        if (typeOnly || spec.startsWith("node:")) continue;
        const target = relative(resolve("src/compiler/contract"), resolve(dirname(file), spec));
        if (!spec.startsWith(".") || target.startsWith("..")) bad.push(`${file} → ${spec}`);
      }
    }
    expect(bad).toEqual([]);
  });

  it("call classes and dialects are spelled once (src/compiler/contract/vocabulary.ts)", () => {
    const spelled: string[] = [];
    for (const file of [...sources("src"), ...sources("bench")]) {
      if (file.endsWith(join("contract", "vocabulary.ts"))) continue;
      const text = readFileSync(file, "utf8");
      if (/["']main["']\s*,\s*["']subagent["']\s*,\s*["']compaction["']|["']compaction["']\s*,\s*["']subagent["']\s*,\s*["']title["']/.test(text))
        spelled.push(`${file}: call classes`);
      if (/["']anthropic-messages["']\s*,\s*["']openai-chat["']/.test(text)) spelled.push(`${file}: dialects`);
    }
    expect(spelled).toEqual([]);
  });

  it("the runtime never resolves plan paths again (the compiler made them absolute)", () => {
    const found = sources("src/runtime").filter((f) => /\bplan\.root\b|absolutize/i.test(readFileSync(f, "utf8")));
    expect(found).toEqual([]);
  });
});
