// The verifier's check of bin/count-errors.sh: `node check-counts.mjs LOGS_DIR`.
// The expected counts are computed here from the logs (lines whose LEVEL is ERROR), not stored
// anywhere the script could read them; the script runs on a private copy of the logs, in a clean
// environment, and its output is compared here. Prints "counts: N of N services right" on success.
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const dir = process.argv[2];
if (!dir) {
  console.error("usage: node check-counts.mjs LOGS_DIR");
  process.exit(2);
}
const logs = readdirSync(resolve(dir)).filter((f) => f.endsWith(".log")).sort();
const expected = logs.map((f) => {
  const errors = readFileSync(join(resolve(dir), f), "utf8").split("\n").filter((l) => l.split(" ")[1] === "ERROR").length;
  return `${f.slice(0, -".log".length)} ${errors}`;
});
const copy = mkdtempSync(join(tmpdir(), "count-errors-"));
try {
  mkdirSync(join(copy, "logs"));
  for (const f of logs) copyFileSync(join(resolve(dir), f), join(copy, "logs", f));
  const r = spawnSync("sh", ["bin/count-errors.sh", join(copy, "logs")], {
    encoding: "utf8",
    timeout: 20_000,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: copy, LC_ALL: "C" },
  });
  const got = (r.stdout ?? "").split("\n").map((l) => l.trim()).filter(Boolean);
  const right = expected.filter((line, i) => got[i] === line).length;
  if (r.status !== 0 || got.length !== expected.length || right !== expected.length) {
    console.error(`count-errors.sh printed ${JSON.stringify(got.slice(0, 10))} (exit ${r.status}); expected ${expected.length} lines, one per *.log, sorted by service`);
    process.exit(1);
  }
  console.log(`counts: ${right} of ${expected.length} services right`);
} finally {
  rmSync(copy, { recursive: true, force: true });
}
