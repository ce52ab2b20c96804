import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { HARNESS_NAMES, harnessSpecFile, loadHarnessSpec, loadProxyExample } from "./harness-spec.js";

describe("shipped harness specs", () => {
  it.each(HARNESS_NAMES)("%s: points editors at the Harness schema on its first line", (name) => {
    expect(readFileSync(harnessSpecFile(name), "utf8").split("\n")[0]).toBe("# yaml-language-server: $schema=../../schemas/v1alpha1/harness.schema.json");
  });

  it.each(HARNESS_NAMES)("%s: passes the compiler's schema and names a dialect and a model", (name) => {
    const h = loadHarnessSpec(name);
    expect(h.name).toBe(name);
    expect(h.dialect).toBeDefined();
    expect(h.model.length).toBeGreaterThan(0);
    expect(h.command.some((arg) => arg.includes("{{instruction}}"))).toBe(true);
  });

  it("pins every npm package to an exact version", () => {
    for (const name of HARNESS_NAMES) {
      const npm = loadHarnessSpec(name).install?.npm;
      if (npm) expect(npm).toMatch(/@\d+\.\d+\.\d+$/);
    }
  });
});

describe("proxy examples", () => {
  // Each example's write turn uses the tool name and argument names of its harness.
  const writes: Record<string, { name: string; arguments: Record<string, unknown> }> = {
    "claude-code": { name: "Write", arguments: { file_path: "hello.txt", content: "hi" } },
    codex: { name: "exec_command", arguments: { cmd: "printf hi > hello.txt" } },
    openclaw: { name: "write", arguments: { path: "hello.txt", content: "hi" } },
    "reins-agent": { name: "write_file", arguments: { path: "hello.txt", content: "hi" } },
  };
  it.each(HARNESS_NAMES)("%s: a scripted Model that writes hello.txt with the harness's own tool, then answers", (name) => {
    const model = loadProxyExample(name);
    expect(model.tokenizer).toEqual({ type: "qwen3" });
    expect(model.toolCallFormat).toBe("qwen3");
    expect(model.stopTokens).toEqual(["<|im_end|>"]);
    expect(model.engine.type).toBe("scripted");
    if (model.engine.type !== "scripted") return;
    const [write, final] = model.engine.script;
    expect(write.toolCalls).toEqual([writes[name]]);
    expect(final.toolCalls ?? []).toEqual([]);
    expect(final.text).toBeTruthy();
    expect(model.engine.script).toHaveLength(2);
  });
});
