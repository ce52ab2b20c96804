/**
 * A harness image's name is its content: the same files give the same tag, one changed byte, one
 * more file, another base image or a new recipe give a new one. The repository follows the base's
 * registry.
 */
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { containerfileOf, harnessRepository, hiddenInput, planHarnessImage, relocate } from "../../src/runtime/sandbox/images/harness-image.js";
import { digestPath } from "../../src/runtime/sandbox/images/tree-digest.js";
import { tempDir } from "../temp.js";

const BASE = "localhost/reins-sandbox:1";

function install(dir: string): string {
  mkdirSync(join(dir, "node_modules", ".bin"), { recursive: true });
  writeFileSync(join(dir, "node_modules", "cli.js"), "console.log('hi')\n");
  writeFileSync(join(dir, "node_modules", ".bin", "tool"), "#!/bin/sh\n");
  chmodSync(join(dir, "node_modules", ".bin", "tool"), 0o755);
  return dir;
}

async function tagOf(dir: string, baseId = "sha256:base"): Promise<string> {
  return planHarnessImage({ harness: "claude-code", base: BASE, baseId, inputs: [{ path: dir, digest: await digestPath(dir, { cache: false }) }] }).name;
}

describe("harness images", () => {
  it("are tagged by the content of what goes in", async () => {
    const dir = install(join(tempDir("reins-harness-image-"), "pkg@1.0.0"));
    const first = await tagOf(dir);
    expect(first).toMatch(/^localhost\/reins-harness-claude-code:[0-9a-f]{16}$/);
    expect(await tagOf(dir)).toBe(first);
    expect(await tagOf(dir, "sha256:another-base")).not.toBe(first);
    writeFileSync(join(dir, "node_modules", "cli.js"), "console.log('ho')\n");
    const changed = await tagOf(dir);
    expect(changed).not.toBe(first);
    chmodSync(join(dir, "node_modules", ".bin", "tool"), 0o644);
    expect(await tagOf(dir)).not.toBe(changed);
  });

  it("keep a complete install's digest beside its marker, and take a new one after a reinstall", async () => {
    const dir = install(join(tempDir("reins-harness-image-"), "pkg@1.0.0"));
    writeFileSync(join(dir, ".reins-install.json"), '{"installedAt":"1"}');
    const kept = await digestPath(dir, { cache: false });
    // A changed file behind a marker that did not change: the install is taken as it was.
    writeFileSync(join(dir, "node_modules", "cli.js"), "changed\n");
    expect(await digestPath(dir, { cache: false })).toBe(kept);
    writeFileSync(join(dir, ".reins-install.json"), '{"installedAt":"2"}');
    expect(await digestPath(dir, { cache: false })).not.toBe(kept);
  });

  it("live in the base image's registry and copy the files to the paths they have here", () => {
    expect(harnessRepository("localhost/reins-sandbox:1", "Claude Code")).toBe("localhost/reins-harness-claude-code");
    expect(harnessRepository("registry.example:5000/team/sandbox@sha256:abc", "codex")).toBe("registry.example:5000/team/reins-harness-codex");
    expect(harnessRepository("sandbox", "codex")).toBe("reins-harness-codex");
    const image = planHarnessImage({ harness: "codex", base: BASE, baseId: "sha256:b", inputs: [{ path: "/opt/x", digest: "sha256:1" }] });
    expect(containerfileOf(image)).toBe(
      `FROM ${BASE}\nCOPY rootfs/ /\nLABEL reins.dev/harness="codex"\nLABEL reins.dev/image-recipe="2"\nLABEL reins.dev/base-image="sha256:b"\n`,
    );
  });
  it("move files that a sandbox's own directories would hide to a place of their own, and their paths with them", () => {
    expect(hiddenInput(["/opt/reins/agent.mjs", "/root/.cache/reins/harnesses/x"])).toBeUndefined();
    expect(hiddenInput(["/opt/x", "/tmp/checkout/src/agent.mjs"])).toEqual({ path: "/tmp/checkout/src/agent.mjs", root: "/tmp" });
    expect(hiddenInput(["/home/sandbox/.npm"])).toEqual({ path: "/home/sandbox/.npm", root: "/home/sandbox" });
    expect(hiddenInput(["/workspaces/x", "/tmpfoo/x"])).toBeUndefined();
    const agent = "/tmp/checkout/src/runtime/harness/reins-agent";
    const image = planHarnessImage({
      harness: "reins-agent",
      base: BASE,
      baseId: "sha256:b",
      inputs: [
        { path: "/opt/node", digest: "sha256:1" },
        { path: agent, digest: "sha256:2" },
      ],
    });
    const moved = image.inputs.find((i) => i.path === agent)!;
    expect(moved.at).toMatch(/^\/opt\/reins\/inputs\/[0-9a-f]{12}\/reins-agent$/);
    expect(image.inputs.find((i) => i.path === "/opt/node")!.at).toBe("/opt/node");
    expect(relocate(image.inputs, `${agent}/main.mjs`)).toBe(`${moved.at}/main.mjs`);
    expect(relocate(image.inputs, agent)).toBe(moved.at);
    expect(relocate(image.inputs, "/opt/node/bin/node")).toBe("/opt/node/bin/node");
    expect(relocate(image.inputs, `${agent}-other/x`)).toBe(`${agent}-other/x`);
    // The place is part of the tag: the same files at another place are another image.
    const elsewhere = planHarnessImage({
      harness: "reins-agent",
      base: BASE,
      baseId: "sha256:b",
      inputs: [
        { path: "/opt/node", digest: "sha256:1" },
        { path: "/work/checkout/src/runtime/harness/reins-agent", digest: "sha256:2" },
      ],
    });
    expect(elsewhere.name).not.toBe(image.name);
  });
});
