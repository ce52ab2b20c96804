#!/usr/bin/env bash
# Pre-installs the harnesses reins ships (specs/harnesses/*.yaml with an install.npm) into the harness
# cache ($REINS_CACHE/harnesses, else ~/.cache/reins/harnesses), with the node each one needs.
# Idempotent: a completed install is reused. About 1.5 GB in all; OpenClaw alone takes ~80 s.
# Usage: scripts/install-harnesses.sh [spec.yaml ...]   (default: every spec in specs/harnesses/)
set -euo pipefail
files=()
for f in "$@"; do files+=("$(realpath "$f")"); done
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [ "${#files[@]}" -eq 0 ]; then files=(specs/harnesses/*.yaml); fi
set -- "${files[@]}"
exec node --import tsx --input-type=module -e '
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";
import { installHarness } from "./src/runtime/harness/install.ts";
let failed = 0;
for (const file of process.argv.slice(1)) {
  for (const doc of parseAllDocuments(readFileSync(file, "utf8"))) {
    const d = doc.toJS();
    if (d?.kind !== "Harness") continue;
    if (!d.spec?.install?.npm) { process.stderr.write(`${d.metadata.name}: nothing to install\n`); continue; }
    const t0 = Date.now();
    process.stderr.write(`installing ${d.metadata.name}: ${d.spec.install.npm}${d.spec.install.node ? ` (node ${d.spec.install.node})` : ""}\n`);
    const r = await installHarness(d.spec.install);
    if (r.ok) process.stderr.write(`  ok in ${((Date.now() - t0) / 1000).toFixed(1)} s: ${r.value.bin}\n`);
    else { failed++; process.stderr.write(`  ${r.problem.code}: ${r.problem.message}\n  hint: ${r.problem.hint}\n`); }
  }
}
process.exit(failed ? 1 : 0);
' "$@"
