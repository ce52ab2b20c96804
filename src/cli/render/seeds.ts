/**
 * The human form of a multi-seed run's summary (`reins run --seeds`): one line per seed, then the
 * held-out gain over the seeds with its spread, overall and per harness. --json prints the same
 * summary as it is.
 */
import type { Plan } from "../../compiler/index.js";
import type { OverSeeds, SeedsSummary } from "../../runtime/index.js";

/** The human summary of a multi-seed run: one line per seed, then the gain over the seeds. */
export function renderSeeds(plan: Plan, s: SeedsSummary): string {
  const pct = (v: number | null) => (v === null ? "—" : `${(v * 100).toFixed(1)}%`);
  const points = (v: number | null) => (v === null ? "—" : `${v >= 0 ? "+" : ""}${(v * 100).toFixed(1)}`);
  const seedLines = s.seeds.map((x) => {
    const h = x.heldOut;
    const se = h.gainStdErrors === null ? "" : `, ${h.gainStdErrors >= 0 ? "+" : ""}${h.gainStdErrors.toFixed(1)} standard errors`;
    return `  seed ${x.seed}: held-out ${pct(h.before)} → ${pct(h.after)} (${points(h.gain)} points${se}; ${h.n} rollouts each), ${x.steps} training steps in ${x.seconds} s — ${x.runDir}`;
  });
  const harnesses = Object.entries(s.heldOut.byHarness);
  return [
    `${plan.name}: ${s.seeds.length} seed${s.seeds.length === 1 ? "" : "s"}`,
    ...seedLines,
    gainLine("held-out gain", s.heldOut, points),
    ...(harnesses.length > 1 ? harnesses.map(([h, o]) => `  ${gainLine(h, o, points)}`) : []),
    `run directory: ${s.runDir}`,
    "",
  ].join("\n");
}

function gainLine(label: string, o: OverSeeds, points: (v: number | null) => string): string {
  const n = o.n;
  if (n === 0) return `${label}: no seed has a held-out evaluation before and after training`;
  const spread =
    o.gain.sd === null || o.gain.ci95 === null
      ? "one seed: no spread"
      : `sd ${(o.gain.sd * 100).toFixed(1)}, 95% CI [${points(o.gain.ci95[0])}, ${points(o.gain.ci95[1])}]`;
  return `${label} over ${n} seed${n === 1 ? "" : "s"}: ${points(o.gain.mean)} points (${spread}); ${o.seedsAbove3SE} of ${n} seed${n === 1 ? "" : "s"} above 3 standard errors`;
}
