/** Which of the agent's links the verifier's sandbox gets: those that lead where the verifier itself could read. */
import { describe, expect, it } from "vitest";
import { linkIsSafe, resolveLink } from "../../src/runtime/executor/snapshot-entries.js";

const W = "/workspace";

describe("links recreated in the verifier's sandbox", () => {
  it("resolves relative, absolute and climbing links as the kernel would, following the workspace's own links", () => {
    const links = new Map([
      ["root", "/"],
      ["d/up", "../.."],
      ["loop", "loop"],
    ]);
    expect(resolveLink(`${W}/rel`, "d/sub/f.txt", links, W)).toBe(`${W}/d/sub/f.txt`);
    expect(resolveLink(`${W}/host`, "/etc/hostname", links, W)).toBe("/etc/hostname");
    expect(resolveLink(`${W}/d/sub/up`, "../../..", links, W)).toBe("/");
    expect(resolveLink(`${W}/x`, "root/proc/self/fd/3", links, W)).toBe("/proc/self/fd/3");
    expect(resolveLink(`${W}/x`, "d/up/dev/fd/3", links, W)).toBe("/dev/fd/3");
    expect(resolveLink(`${W}/x`, "loop", links, W)).toBeNull();
  });

  it("keeps links to files, host paths, / and dangling names", () => {
    const links = new Map<string, string>();
    for (const target of ["d/f.txt", "/etc/hostname", "../../..", "nowhere/missing", "/home/sandbox/.reins-verify-0/expected.txt", "/usr/bin/python3"]) {
      expect(linkIsSafe(`${W}/l`, target, links, W), target).toBe(true);
    }
  });

  it("leaves out links the reader would resolve to its own open files or devices: /proc, /dev, /sys, and climbs out of unknown host directories", () => {
    const links = new Map([["root", "/"]]);
    for (const target of [
      "/proc/self/fd/3",
      "/dev/fd/3",
      "/dev/stdin",
      "../proc/self/fd/3",
      "root/proc/self/fd/3",
      "/usr/bin/../../proc/self/fd/3",
      "/sys",
      "/proc",
    ]) {
      expect(linkIsSafe(`${W}/answer.txt`, target, links, W), target).toBe(false);
    }
  });
});
