/** The `reins view` line a run prints: a path the user can paste into the shell they ran reins from. */
import { describe, expect, it } from "vitest";
import { viewCommand } from "../../src/cli/view-command.js";

describe("reins view command of a run", () => {
  it("is relative inside the current directory, absolute outside it, and quoted when the shell would split it", () => {
    expect(viewCommand("/home/me/proj/runs/quickstart-2026", "/home/me/proj")).toBe("reins view runs/quickstart-2026");
    expect(viewCommand("runs/a", "/home/me/proj")).toBe("reins view runs/a");
    expect(viewCommand("/tmp/run-1", "/home/me/proj")).toBe("reins view /tmp/run-1");
    expect(viewCommand("/home/me/proj", "/home/me/proj")).toBe("reins view /home/me/proj");
    expect(viewCommand("/home/me/proj/my runs/it's", "/home/me/proj")).toBe(`reins view 'my runs/it'\\''s'`);
  });
});
