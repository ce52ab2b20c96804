#!/usr/bin/env bash
# The test command (`npm test`, what CI runs): the set-up's --all lane (idempotent; installs what the
# quickstart's lane left out), then typecheck, layering, lint and format, schemas up to date, and the
# whole suite. REINS_SKIP_SETUP=1 skips the set-up step.
set -uo pipefail
cd "$(dirname "$0")/.."
mkdir -p test-output
status=0
if [ "${REINS_SKIP_SETUP:-0}" != "1" ]; then
  echo "== set-up (scripts/setup.sh --all)" >&2
  bash scripts/setup.sh --all || exit 1
fi
echo "== typecheck" >&2
npx tsc -p . --noEmit || status=1
echo "== layering (.dependency-cruiser.cjs)" >&2
npx depcruise src --config .dependency-cruiser.cjs || status=1
echo "== lint and format (biome.jsonc)" >&2
npx biome check --error-on-warnings || status=1
echo "== schemas are the generated ones" >&2
node bin/reins.js schema --out schemas --check || status=1
echo "== tests" >&2
npx vitest run --reporter=default --reporter=json --outputFile.json=test-output/vitest.json "$@" || status=1
node -e '
const r = JSON.parse(require("fs").readFileSync("test-output/vitest.json", "utf8"));
console.log(`${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests + (r.numTodoTests||0)} skipped`);
' || status=1
exit $status
