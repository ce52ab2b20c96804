/** Runs every benchmark in bench/ in turn (or those named on the command line). */
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";

const only = process.argv.slice(2);
const files = readdirSync("bench")
  .filter((f) => f.endsWith(".ts") && f !== "index.ts" && !f.startsWith("_"))
  .filter((f) => only.length === 0 || only.some((o) => f.includes(o)))
  .sort();
let failed = 0;
for (const f of files) {
  console.log(`\n## ${f}`);
  const r = spawnSync(process.execPath, ["--import", "tsx", `bench/${f}`], { stdio: "inherit" });
  if (r.status !== 0) failed++;
}
process.exitCode = failed > 0 ? 1 : 0;
