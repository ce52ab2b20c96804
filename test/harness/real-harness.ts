/**
 * Test helper: the checks every real harness goes through. One real run (beforeAll), then:
 * the file was made, the proxy recorded the expected calls, each call's prompt continues the
 * previous call token for token (or, for a harness that rewrites history, where it diverges), and
 * nothing but the proxy was contacted.
 */
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import type { Dialect } from "../../src/compiler/contract/plan.js";
import { explainLink, linkChain, mainCalls } from "./prefix.js";
import { OUTPUT_DIR, skipHarness, skipNote, describeRun, runScenario, type ScenarioResult } from "./scenario.js";
import type { HarnessName } from "./harness-spec.js";

export interface HarnessExpectation {
  harness: HarnessName;
  dialect: Dialect;
  /** Model name the harness asks for. */
  model: string;
}

export async function writeSummary(run: ScenarioResult): Promise<void> {
  const line = { label: run.label, exitCode: run.exit.exitCode, wallMs: run.wallMs, calls: run.records.length, hello: run.hello, egress: run.egress.length };
  await writeFile(path.join(OUTPUT_DIR, `${run.label}.summary.json`), `${JSON.stringify(line)}\n`);
}

export function describeRealHarness(e: HarnessExpectation): void {
  describe.skipIf(skipHarness(e.harness))(`${e.harness}: real harness through the proxy${skipNote(e.harness)}`, () => {
    let run: ScenarioResult;
    beforeAll(async () => {
      run = await runScenario({ harness: e.harness, label: `${e.harness}-basic` });
      await writeSummary(run);
    }, 600_000);

    it("exits 0 after creating hello.txt containing hi", () => {
      expect(run.exit.exitCode, describeRun(run)).toBe(0);
      expect(run.hello, describeRun(run)).toBe("hi");
    });

    it("makes two main calls in its dialect: the write, then the final answer", () => {
      const main = mainCalls(run.records);
      expect(
        main.map((r) => r.finishReason),
        describeRun(run),
      ).toEqual(["tool_calls", "stop"]);
      for (const r of run.records) {
        expect(r.dialect).toBe(e.dialect);
        expect(r.model).toBe(e.model);
        expect(r.stream).toBe(true);
        expect(r.parse.ok).toBe(true);
        expect(r.error).toBeUndefined();
        expect(r.completionIds.length).toBe(r.completionLogprobs.length);
      }
      expect(run.records.map((r) => r.seq)).toEqual(run.records.map((_, i) => i));
    });

    it("sends each call's prompt as the previous prompt followed by the previous completion, token for token", async () => {
      const main = mainCalls(run.records);
      const links = linkChain(main);
      expect(links.length).toBeGreaterThan(0);
      for (const [i, link] of links.entries()) {
        const why = link.extends ? "" : await explainLink(main[i], main[i + 1], link);
        expect(link.extends, why).toBe(true);
        expect(link.newTokens).toBeGreaterThan(0);
        // The completion came back as stored ids, not re-tokenized text.
        expect(main[i + 1].reused, why).toContain(main[i].seq);
      }
    });

    it("contacts no host but the proxy (opt-outs on, every other host routed to a refusing recorder)", () => {
      expect(run.egress).toEqual([]);
    });
  });
}
