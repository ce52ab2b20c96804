/**
 * What the agent made is the agent's: a final workspace past the copy limits — 200,001 files, or
 * directories 1,500 levels deep — is scored 0 with the reason, for real through `reins eval` with
 * local sandboxes. Before, the first was a verifier error and the second an infrastructure failure
 * (ENAMETOOLONG on the host): both dropped from training and held-out figures, so an agent could
 * turn any failing rollout into "no reward" by making a mess.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import { reins } from "../reins-cli.js";
import { tempDir } from "../temp.js";

const SPECS = `apiVersion: reins/v1alpha1
kind: Evaluation
metadata: {name: hoard}
spec:
  tasks: [{name: many-files}, {name: deep-dirs}]
  harnesses: [{name: hoarder}]
  sandbox: {provider: local, concurrency: 2, retries: 1, timeoutSeconds: 600}
---
apiVersion: reins/v1alpha1
kind: Harness
metadata: {name: hoarder}
spec:
  # Writes the answer, then buries it: 200,001 files, or 1,500 nested directories.
  command:
    - sh
    - -c
    - |
      echo hi > hello.txt
      case "$0" in
        *files*) mkdir d && cd d && seq 200001 | xargs touch ;;
        *deep*) i=0; while [ $i -lt 1500 ]; do mkdir dd && cd dd || exit 1; i=$((i+1)); done; echo x > leaf ;;
      esac
    - "{{instruction}}"
---
apiVersion: reins/v1alpha1
kind: Task
metadata: {name: many-files}
spec:
  instruction: many files
  verifier: {checks: [{fileEquals: {path: hello.txt, content: "hi"}}]}
  timeoutSeconds: 600
---
apiVersion: reins/v1alpha1
kind: Task
metadata: {name: deep-dirs}
spec:
  instruction: deep dirs
  verifier: {checks: [{fileEquals: {path: hello.txt, content: "hi"}}]}
  timeoutSeconds: 600
`;

it("a workspace past the copy limits is scored 0 with the reason, never dropped as an infrastructure failure", () => {
  const dir = tempDir("reins-hoard-");
  writeFileSync(join(dir, "eval.yaml"), SPECS);
  const out = join(dir, "run");
  const r = reins(["eval", join(dir, "eval.yaml"), "--out", out, "--json", "--quiet"], { timeout: 1_200_000 });
  expect(r.code, r.stderr.slice(0, 2000)).toBe(0);
  const summary = JSON.parse(r.stdout);
  expect(summary).toMatchObject({ rollouts: 2, errors: 0, meanReward: 0, infraErrors: [] });
  const rollouts = readFileSync(join(out, "rollouts.jsonl"), "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l));
  const reasons = rollouts.map((x) => {
    expect(x.status).toBe("ok");
    expect(x.reward).toBe(0);
    const [check] = x.verifier.parts.checks.results;
    expect(check.code).toBe("WorkspaceTooLarge");
    return check.reason as string;
  });
  expect(reasons.sort()).toEqual([expect.stringContaining("a path deeper than 256 directory levels"), expect.stringContaining("more than 200000 entries")]);
  for (const reason of reasons) expect(reason.length).toBeLessThan(400);
}, 1_300_000);
