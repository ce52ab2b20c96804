/**
 * First-call prompt size of each real harness per knob setting: the real proxy with the scripted
 * engine (examples/proxy/<harness>.yaml) and the installed harness, as test/harness/scenario.ts runs
 * them, with the knobs an Experiment would set (`harnesses[]`: systemPrompt, tools, maxTurns).
 * Prints, per harness and setting, the first main call's prompt in Qwen3 tokens (the ids the engine
 * saw) and its request body in bytes, the number of calls and whether the task got done.
 *
 *   node --import tsx bench/harness-prompts.ts [harness ...] [--dump DIR]
 *
 * --dump DIR writes each setting's first prompt, decoded, to DIR/<harness>-<setting>.txt.
 * Harnesses that are not installed (scripts/install-harnesses.sh) are skipped.
 */
import { existsSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import type { HarnessKnobValues } from "../src/compiler/contract/plan.js";
import { loadTokenizer } from "../src/runtime/model/tokenizer.js";
import { packageDir, parseNpmSpec, resolveCacheRoot } from "../src/runtime/harness/install-paths.js";
import { loadHarnessSpec } from "../test/harness/harness-spec.js";
import { runScenario } from "../test/harness/scenario.js";

/** The tools each harness's scripted policy writes hello.txt with (examples/proxy/<harness>.yaml); Codex offers its two shell tools together. */
const WRITE_TOOLS: Record<string, string[]> = {
  "claude-code": ["Write"],
  codex: ["exec_command", "write_stdin"],
  openclaw: ["write"],
  "reins-agent": ["write_file"],
};
export const SHORT_PROMPT = "Do the task with the tool you have, then reply done.";

export interface Setting {
  name: string;
  knobs: HarnessKnobValues;
}

/** Default, each knob that shrinks the prompt alone, then all of them together. */
export function settingsFor(harness: string): Setting[] {
  const declared = loadHarnessSpec(harness).knobs ?? {};
  const tools = WRITE_TOOLS[harness]!;
  const out: Setting[] = [{ name: "default", knobs: {} }];
  if (declared.systemPrompt) out.push({ name: "systemPrompt", knobs: { systemPrompt: SHORT_PROMPT } });
  if (declared.tools) out.push({ name: `tools [${tools.join(",")}]`, knobs: { tools } });
  const all: HarnessKnobValues = {};
  if (declared.systemPrompt) all.systemPrompt = SHORT_PROMPT;
  if (declared.tools) all.tools = tools;
  if (declared.maxTurns) all.maxTurns = 3;
  if (Object.keys(all).length > 1) out.push({ name: "all", knobs: all });
  return out;
}

function installed(harness: string): boolean {
  const spec = loadHarnessSpec(harness);
  if (!spec.install?.npm) return true;
  const pkg = parseNpmSpec(spec.install.npm);
  return pkg.ok && existsSync(packageDir(resolveCacheRoot(), pkg.value));
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const dumpAt = args.indexOf("--dump");
  const dump = dumpAt >= 0 ? args.splice(dumpAt, 2)[1] : undefined;
  const harnesses = args.length > 0 ? args : ["claude-code", "codex", "openclaw", "reins-agent"];
  const tokenizer = await loadTokenizer({ type: "qwen3" });
  if (dump) await mkdir(dump, { recursive: true });
  console.log("| harness | setting | first prompt (Qwen3 tokens) | request bytes | calls | task done |");
  console.log("|---|---|---:|---:|---:|---|");
  for (const harness of harnesses) {
    if (!installed(harness)) {
      console.log(`| ${harness} | (not installed) | | | | |`);
      continue;
    }
    for (const setting of settingsFor(harness)) {
      const label = `prompts-${harness}-${setting.name.replace(/[^a-z0-9]+/gi, "-")}`.replace(/-+$/, "");
      const run = await runScenario({ harness, label, adjust: (h) => ({ ...h, knobValues: setting.knobs }) });
      const first = run.records.find((r) => r.callClass === "main") ?? run.records[0];
      const tokens = first ? first.promptIds.length || first.promptTokens || 0 : 0;
      const knobs = JSON.stringify(setting.knobs);
      console.log(
        `| ${harness} | ${setting.name} | ${tokens.toLocaleString("en-US")} | ${(first?.bodyBytes ?? 0).toLocaleString("en-US")} | ${run.records.length} | ${run.hello === "hi" ? "yes" : `no (exit ${run.exit.exitCode})`} |`,
      );
      if (dump && first) await writeFile(path.join(dump, `${label}.txt`), `${knobs}\n\n${tokenizer.decode(first.promptIds)}`);
    }
  }
}

await main();
