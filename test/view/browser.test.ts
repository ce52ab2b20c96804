/**
 * The run viewer in a real browser: Debian's chromium, headless, driven by playwright-core,
 * against `reins view`'s server over a run directory written by the run store's record writer.
 * Each view shows the numbers the run recorded (summary.json, rollouts.jsonl); a click on a
 * rollout opens its call tree and tokens; data written by the policy stays text. Screenshots of
 * each view go to test-output/view/.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadTokenizer } from "../../src/runtime/model/tokenizer.js";
import { startViewServer, type ViewHandle } from "../../src/runtime/index.js";
import { tempDir } from "../temp.js";
import { callRecord, writeRunFixture, writeSeedsFixture, type Fixture } from "./run-fixture.js";

const SHOTS = join(process.cwd(), "test-output", "view");
const HOSTILE_ID = "s9-<img src=x onerror=alert(1)>";
const HOSTILE_OUTPUT = `<img src=x onerror="alert(2)"><script>alert(3)</script>`;
const pct = (x: number) => `${(100 * x).toFixed(1)}%`;

describe("reins view in chromium", () => {
  let fixture: Fixture;
  let view: ViewHandle;
  let compareView: ViewHandle;
  let browser: Browser;
  let page: Page;
  const dialogs: string[] = [];

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    const qwen3 = await loadTokenizer({ type: "qwen3" });
    const encode = (text: string) => qwen3.encode(text);
    const random = () => 0.25;
    fixture = writeRunFixture(tempDir("reins-view-browser-"), {
      encode,
      extra: [
        {
          id: HOSTILE_ID,
          task: "write-word-yes-000",
          harness: "codex",
          step: 9,
          calls: [callRecord(HOSTILE_ID, 0, encode("<|im_start|>user\nhi<|im_end|>\n"), encode("<script>alert(4)</script>"), random)],
        },
        { id: "s9-loud-output", task: "write-word-yes-000", harness: "codex", step: 9, calls: [], stdout: HOSTILE_OUTPUT },
      ],
    });
    const second = writeRunFixture(tempDir("reins-view-browser-b-"), { encode, steps: 5 });
    view = await startViewServer({ runDirs: [fixture.dir] });
    compareView = await startViewServer({ runDirs: [fixture.dir, second.dir] });
    browser = await chromium.launch({
      executablePath: "/usr/bin/chromium",
      args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"],
    });
    page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    page.on("dialog", (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await view?.close();
    await compareView?.close();
  });

  it("opens on the overview: held-out before/after per harness, fidelity and per-task pass rates as recorded", async () => {
    await page.goto(view.url);
    await page.waitForSelector("#overview #held-out");
    const heldOut = await page.locator("#held-out").innerText();
    for (const [harness, v] of Object.entries(fixture.summary.heldOut.byHarness)) {
      expect(heldOut).toMatch(new RegExp(`${harness}\\s+${pct(v.before).replace(".", "\\.")}\\s+${pct(v.after).replace(".", "\\.")}`));
    }
    expect(await page.locator('[data-card="held-out"]').innerText()).toContain(
      `${pct(fixture.summary.heldOut.before)} → ${pct(fixture.summary.heldOut.after)}`,
    );
    expect(await page.locator("#fidelity").innerText()).toContain("4321");
    const train = page.locator('[data-phase="train"]');
    for (const task of fixture.taskNames) {
      const rows = fixture.rollouts.filter((r) => r.task === task && r.step >= 1);
      const row = train.locator("tr", { hasText: task });
      expect(await row.innerText()).toContain(pct(rows.filter((r) => r.passed).length / rows.length));
    }
    expect(await page.locator("svg.chart").count()).toBeGreaterThanOrEqual(8);
    await page.screenshot({ path: join(SHOTS, "overview.png") });
  }, 60_000);

  it("lists rollouts in a virtualized table that filters by harness and sorts by reward", async () => {
    await page.goto(`${view.url}#/rollouts`);
    await page.waitForSelector(".vrow");
    const total = fixture.rollouts.length;
    expect(await page.locator("#count").innerText()).toBe(`${total} of ${total} rollouts`);
    expect(await page.locator(".vrow").count()).toBeLessThan(total);
    await page.selectOption('select[data-filter="harness"]', "claude-code");
    const claude = fixture.rollouts.filter((r) => r.harness === "claude-code").length;
    expect(await page.locator("#count").innerText()).toBe(`${claude} of ${total} rollouts`);
    await page.selectOption('select[data-filter="reward"]', "0");
    const failed = fixture.rollouts.filter((r) => r.harness === "claude-code" && r.reward === 0).length;
    expect(await page.locator("#count").innerText()).toBe(`${failed} of ${total} rollouts`);
    await page.selectOption('select[data-filter="reward"]', "");
    await page.click('[data-sort="reward"]');
    await page.click('[data-sort="reward"]');
    const first = page.locator(".vrow").first();
    expect(await first.locator("div").nth(7).innerText()).toBe("1");
    await page.screenshot({ path: join(SHOTS, "rollouts.png") });
  }, 60_000);

  it("clicks into a rollout: its verdicts, its call tree with the dead leaf marked, its tokens and conversation", async () => {
    const withRetry = fixture.rollouts.find((r) => r.step === 1 && r.calls >= 3)!;
    await page.goto(`${view.url}#/rollouts`);
    await page.waitForSelector(".vrow");
    await page.fill('input[data-filter="task"]', withRetry.task);
    await page.selectOption('select[data-filter="step"]', "1");
    await page.selectOption('select[data-filter="harness"]', withRetry.harness);
    await page.click(`.vrow[data-id="${withRetry.id}"]`);
    await page.waitForSelector("#tokens .tok");
    expect(await page.locator("#rollout-id").innerText()).toBe(withRetry.id);
    expect(await page.locator('[data-card="reward"] .v').innerText()).toBe(String(withRetry.reward));
    expect(await page.locator("#checks").innerText()).toContain("fileEquals answer.txt");
    expect(await page.locator(".call").count()).toBe(withRetry.calls);
    expect(await page.locator(".call.dead, .call.class").count()).toBeGreaterThan(0);
    expect(await page.locator("#conversation").innerText()).toContain("into answer.txt.");
    expect(await page.locator("#tokens .tok.trained").count()).toBeGreaterThan(0);
    expect(await page.locator("#tokens .tok.context").count()).toBeGreaterThan(0);
    await page.click('.call[data-seq="0"]');
    await page.waitForSelector('.call.selected[data-seq="0"]');
    // The tree marks the call at once; its page follows from the server.
    await page.waitForSelector('#call[data-seq="0"]');
    expect(await page.locator("#call h2").innerText()).toContain("Call 0");
    await page.click('button[data-overlay="logprob"]');
    // The trainer's logprobs against the sampler's: a ratio on every trained token of the page.
    await page.click('button[data-overlay="ratio"]');
    expect(await page.locator("#trainer-note").innerText()).toMatch(/trainer vs sampler on \d+ trained tokens here/);
    expect(await page.locator("#tokens .tok.trained[data-ratio]").count()).toBe(await page.locator("#tokens .tok.trained").count());
    expect(await page.locator("#tokens .tok.context[data-ratio]").count()).toBe(0);
    // The workspace before → after.
    await page.waitForSelector("#diff .diff-file");
    expect(await page.locator("#diff .diff-file summary").innerText()).toContain("answer.txt");
    expect((await page.locator("#diff .patch .add").last().innerText()).trim()).toBe(`+${withRetry.passed ? "yes" : "no"}`);
    expect(await page.locator("#stdout").innerText()).toContain(withRetry.id);
    await page.screenshot({ path: join(SHOTS, "rollout.png"), fullPage: true });
  }, 60_000);

  it("shows a GRPO group's siblings with rewards and advantages", async () => {
    const r = fixture.rollouts.find((x) => x.step === 2)!;
    await page.goto(`${view.url}#/rollout/${encodeURIComponent(r.id)}`);
    await page.waitForSelector("#rollout");
    await page.click("text=group of");
    await page.waitForSelector("#group");
    const siblings = fixture.rollouts.filter((x) => x.step === r.step && x.task === r.task && x.harness === r.harness);
    expect(await page.locator("[data-sibling]").count()).toBe(siblings.length);
    for (const s of siblings) expect(await page.locator(`[data-sibling="${s.id}"] .v`).innerText()).toBe(String(s.reward));
    await page.screenshot({ path: join(SHOTS, "group.png") });
  }, 60_000);

  it("overlays two runs' curves and puts two rollouts of one task side by side", async () => {
    const [a, b] = fixture.rollouts.filter((x) => x.task === fixture.taskNames[0] && x.step === 1);
    await page.goto(`${compareView.url}#/compare?a=${encodeURIComponent(a.id)}&ra=0&b=${encodeURIComponent(b.id)}&rb=1`);
    await page.waitForSelector("#compare .side h3");
    expect(await page.locator('#compare text[data-series="run 1: view-fixture"]').count()).toBeGreaterThan(0);
    expect(await page.locator('#compare text[data-series="run 2: view-fixture"]').count()).toBeGreaterThan(0);
    expect(await page.locator("#compare .side").innerText()).toContain(a.id);
    await page.screenshot({ path: join(SHOTS, "compare.png"), fullPage: true });
  }, 60_000);

  it("shows a multi-seed run's seeds table, and two recipes' tables with the difference of their mean gains", async () => {
    const a = writeSeedsFixture(join(tempDir("reins-view-browser-seeds-"), "a"), [1, 2, 3], { name: "recipe-a", steps: 1, sideFiles: false });
    const b = writeSeedsFixture(join(tempDir("reins-view-browser-seeds-"), "b"), [4, 5], { name: "recipe-b", steps: 1, sideFiles: false });
    const seedsView = await startViewServer({ runDirs: [join(a[0]!.dir, ".."), join(b[0]!.dir, "..")] });
    try {
      await page.goto(seedsView.url);
      await page.waitForSelector("#seeds table#seeds-0");
      const rows = await page.locator("#seeds-0 tbody tr").allInnerTexts();
      a.forEach((f, i) =>
        expect(rows[i]).toMatch(
          new RegExp(`^${i + 1}\\s+${pct(f.summary.heldOut.before).replace(".", "\\.")}\\s+${pct(f.summary.heldOut.after).replace(".", "\\.")}`),
        ),
      );
      expect(rows.map((r) => r.split(/\s/)[0])).toEqual(["1", "2", "3", "mean", "sd", "95%"]);
      expect(await page.locator("#seeds .gain-line").innerText()).toMatch(
        /^held-out gain over 3 seeds: [+-]\d+\.\d points \(sd \d+\.\d, 95% CI \[[+-]\d+\.\d, [+-]\d+\.\d\]\); \d of 3 above 3 standard errors$/,
      );
      await page.goto(`${seedsView.url}#/compare`);
      await page.waitForSelector("#compare #seeds-difference");
      expect(await page.locator("#compare table.seeds").count()).toBe(2);
      expect(await page.locator("#seeds-difference").innerText()).toMatch(
        /held-out gain: [+-]\d+\.\d points \(Welch 95% CI \[[+-]\d+\.\d, [+-]\d+\.\d\], \d+\.\d degrees of freedom\)/,
      );
      await page.screenshot({ path: join(SHOTS, "seeds-compare.png"), fullPage: true });
    } finally {
      await seedsView.close();
    }
  }, 60_000);

  it("writes what the policy produced as text: a hostile rollout id, completion and harness output run nothing", async () => {
    await page.goto(`${view.url}#/rollout/${encodeURIComponent(HOSTILE_ID)}`);
    await page.waitForSelector("#tokens .tok");
    expect(await page.locator("#rollout-id").innerText()).toBe(HOSTILE_ID);
    expect(await page.locator("#rollout-id img").count()).toBe(0);
    expect(await page.locator("#conversation").innerText()).toContain("<script>alert(4)</script>");
    await page.goto(`${view.url}#/rollout/s9-loud-output`);
    await page.waitForSelector("#stdout");
    expect(await page.locator("#stdout").innerText()).toBe(HOSTILE_OUTPUT);
    await page.goto(`${view.url}#/rollouts`);
    await page.waitForSelector(".vrow");
    await page.fill('input[data-filter="task"]', "write-word-yes-000");
    await page.selectOption('select[data-filter="step"]', "9");
    expect(await page.locator(".vrow").first().innerText()).toContain(HOSTILE_ID);
    expect(dialogs).toEqual([]);
    expect(await page.locator("main img:not(.tree)").count()).toBe(0);
  }, 60_000);
});
