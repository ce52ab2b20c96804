/**
 * The kubernetes provider against a real API server: scripts/test-cluster.sh starts kube-apiserver,
 * etcd, kube-controller-manager and kube-scheduler built from the Go module proxy, with kwok's
 * simulated node, whose pods run their exec'd commands in namespaces of their own. As a researcher
 * runs it, with KUBECONFIG set to the printed path:
 * - a plain Evaluation with `sandbox: {provider: kubernetes}` runs command harnesses and verifies
 *   their workspaces (the given file, the answer), and leaves no object labelled by reins behind;
 * - a harness that calls the model from its pod reaches the proxy at the address the sandbox
 *   advertises (kubernetes.proxy.address), its calls recorded, and the run's NetworkPolicy allows
 *   egress to that address and port only;
 * - a harness that kills every process it can and writes wherever it can harms no other rollout;
 * - `reins eval` killed with SIGKILL mid-run, then `--resume`: each rollout once, and nothing of the
 *   run left on the cluster afterwards.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { reinsAsync, spawnReins } from "../reins-cli.js";
import { useTestCluster } from "./test-cluster.js";

const cluster = useTestCluster();
const get = (path: string) => cluster.get(path);
const leftovers = () => cluster.leftovers();

/** `reins eval FILE --json --out RUN` on the cluster, listing `path` every 200 ms while it runs. */
async function evalWatching(file: string, run: string, path: string, seen: (items: any[]) => void) {
  let running = true;
  const watch = (async () => {
    while (running) {
      seen((await get(path)).items);
      await new Promise((r) => setTimeout(r, 200));
    }
  })();
  const r = await reinsAsync(["eval", file, "--json", "--out", run], { env: { KUBECONFIG: cluster.kubeconfig } });
  running = false;
  await watch;
  return r;
}

function evaluation(dir: string, o: { harnesses: string; tasks: string; attempts?: number; concurrency?: number }): string {
  const file = join(dir, "evaluation.yaml");
  writeFileSync(
    file,
    `${o.harnesses}---
${o.tasks}---
apiVersion: reins/v1alpha1
kind: Evaluation
metadata: {name: on-the-cluster}
spec:
  tasks: [{labels: {suite: k8s}}]
  harnesses: [${[...o.harnesses.matchAll(/name: ([a-z-]+)\}/g)].map((m) => `{name: ${m[1]}}`).join(", ")}]
  attempts: ${o.attempts ?? 1}
  sandbox: {provider: kubernetes, concurrency: ${o.concurrency ?? 4}, timeoutSeconds: 120, retries: 0}
`,
  );
  return file;
}

const harness = (name: string, script: string) => `apiVersion: reins/v1alpha1
kind: Harness
metadata: {name: ${name}}
spec:
  command: [sh, -c, '${script}', ${name}, "{{instruction}}"]
---
`;
const task = (name: string, instruction: string, checks: string, files = "") => `apiVersion: reins/v1alpha1
kind: Task
metadata: {name: ${name}, labels: {suite: k8s}}
spec:
  instruction: ${instruction}
  ${files}
  verifier: {checks: ${checks}}
---
`;

describe("a plain Evaluation on the test API server", () => {
  it("runs command harnesses in pods, verifies their workspaces, and leaves nothing behind", async () => {
    const dir = mkdtempSync(join(tmpdir(), "reins-k8s-eval-"));
    try {
      const file = evaluation(dir, {
        harnesses: harness("writer", 'cat given.txt > answer.txt && printf "%s" "$1" >> answer.txt'),
        tasks:
          task(
            "hello",
            "hello",
            '[{fileContains: {path: answer.txt, text: "given\\nhello"}}]',
            'workspace: {files: [{path: given.txt, content: "given\\n"}]}',
          ) + task("bye", "bye", "[{fileContains: {path: answer.txt, text: hello}}]", 'workspace: {files: [{path: given.txt, content: "given\\n"}]}'),
        attempts: 2,
      });
      const r = await reinsAsync(["eval", file, "--json", "--out", join(dir, "run")], { env: { KUBECONFIG: cluster.kubeconfig } });
      expect(r.code, r.stderr).toBe(0);
      const out = JSON.parse(r.stdout);
      expect(out).toMatchObject({ rollouts: 4, errors: 0, meanReward: 0.5 });
      const results = readFileSync(join(dir, "run", "rollouts.jsonl"), "utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l));
      expect(Object.fromEntries(results.map((x) => [`${x.task}-${x.attempt}`, x.reward]))).toEqual({ "hello-0": 1, "hello-1": 1, "bye-0": 0, "bye-1": 0 });
      expect(await leftovers()).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 600_000);
});

describe("a model-calling harness in a pod", () => {
  it("reaches the proxy at the advertised address; the run's NetworkPolicy allows only that", async () => {
    const dir = mkdtempSync(join(tmpdir(), "reins-k8s-proxy-"));
    try {
      const file = join(dir, "evaluation.yaml");
      writeFileSync(
        file,
        `apiVersion: reins/v1alpha1
kind: Harness
metadata: {name: curler}
spec:
  dialect: openai-chat
  command: [sh, -c, 'sleep 2; curl -sS -H "authorization: Bearer $KEY" -H "content-type: application/json" -d "{\\"model\\":\\"m\\",\\"messages\\":[{\\"role\\":\\"user\\",\\"content\\":\\"$1\\"}]}" "$BASE/v1/chat/completions" > reply.json', curler, "{{instruction}}"]
  env: {BASE: "{{baseUrl}}", KEY: "{{apiKey}}"}
---
apiVersion: reins/v1alpha1
kind: Model
metadata: {name: says-hello}
spec:
  tokenizer: {type: qwen3}
  engine: {type: scripted, script: [{text: hello from the model}]}
---
${task("ask", "say hello", "[{fileContains: {path: reply.json, text: hello from the model}}]")}apiVersion: reins/v1alpha1
kind: Evaluation
metadata: {name: through-the-proxy}
spec:
  model: {name: says-hello}
  tasks: [{name: ask}]
  harnesses: [{name: curler}]
  attempts: 2
  sandbox: {provider: kubernetes, timeoutSeconds: 120, retries: 0, kubernetes: {proxy: {address: 127.0.0.1}}}
`,
      );
      const policies: any[] = [];
      const r = await evalWatching(
        file,
        join(dir, "run"),
        "/apis/networking.k8s.io/v1/namespaces/default/networkpolicies?labelSelector=reins.dev%2Frun",
        (items) => policies.push(...items),
      );
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ rollouts: 2, errors: 0, meanReward: 1 });
      const calls = readFileSync(join(dir, "run", "calls.jsonl"), "utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l));
      expect(calls).toHaveLength(2);
      for (const c of calls) expect(c.completionIds.length).toBeGreaterThan(0);
      // The policy: no ingress, egress to 127.0.0.1/32 on the proxy's port only.
      expect(policies.length).toBeGreaterThan(0);
      const spec = policies[0].spec;
      expect(spec.policyTypes).toEqual(["Ingress", "Egress"]);
      expect(spec.egress).toHaveLength(1);
      expect(spec.egress[0].to).toEqual([{ ipBlock: { cidr: "127.0.0.1/32" } }]);
      expect(spec.egress[0].ports[0].port).toBeGreaterThan(0);
      expect(await leftovers()).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 600_000);
});

describe("rollouts on the cluster are apart", () => {
  it("a harness killing every process and one writing everywhere harm no other rollout", async () => {
    const dir = mkdtempSync(join(tmpdir(), "reins-k8s-attack-"));
    try {
      const file = evaluation(dir, {
        harnesses:
          harness(
            "killer",
            "kill -9 -1; for d in /workspace /home/sandbox /tmp /root /proc/1/root/workspace; do echo pwned > $d/pwned.txt 2>/dev/null; done; printf x > answer.txt",
          ) + harness("patient", 'sleep 3; printf "%s" "$1" > answer.txt'),
        tasks: task("answer", "hello", "[{fileContains: {path: answer.txt, text: hello}}, {fileAbsent: pwned.txt}]"),
        attempts: 2,
        concurrency: 4,
      });
      const r = await reinsAsync(["eval", file, "--json", "--out", join(dir, "run")], { env: { KUBECONFIG: cluster.kubeconfig } });
      expect(r.code, r.stderr).toBe(0);
      const results = readFileSync(join(dir, "run", "rollouts.jsonl"), "utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l));
      const byHarness = (h: string) => results.filter((x) => x.harness === h);
      // The patient rollouts ran beside the killers and passed; their workspaces got nothing of the killers'.
      expect(byHarness("patient").map((x) => [x.status, x.reward])).toEqual([
        ["ok", 1],
        ["ok", 1],
      ]);
      for (const x of byHarness("killer")) expect(x.status).toBe("ok");
      // The killers' own workspaces got their file, so they failed that check: the writes were real.
      for (const x of byHarness("killer")) expect(x.reward).toBe(0);
      expect(await leftovers()).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 600_000);
});

describe("reins-agent on the cluster", () => {
  it("runs from its harness image, named by content in every sandbox pod, and passes", async () => {
    const dir = mkdtempSync(join(tmpdir(), "reins-k8s-image-"));
    try {
      const file = join(dir, "evaluation.yaml");
      writeFileSync(
        file,
        `${readFileSync("examples/proxy/reins-agent.yaml", "utf8")}
---
${task("hello", "Create a file hello.txt containing hi", '[{fileEquals: {path: hello.txt, content: "hi"}}]')}apiVersion: reins/v1alpha1
kind: Evaluation
metadata: {name: agent-in-pods}
spec:
  model: {name: scripted-reins-agent}
  tasks: [{name: hello}]
  harnesses: [{name: reins-agent}]
  attempts: 2
  sandbox: {provider: kubernetes, timeoutSeconds: 120, retries: 0, kubernetes: {proxy: {address: 127.0.0.1}}}
`,
      );
      const images = new Map<string, string>();
      const r = await evalWatching(file, join(dir, "run"), "/api/v1/namespaces/default/pods?labelSelector=reins.dev%2Frun", (items) => {
        for (const pod of items) images.set(pod.metadata.name, pod.spec.containers[0].image);
      });
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ rollouts: 2, errors: 0, meanReward: 1 });
      expect(r.stderr).toMatch(/harness reins-agent: image localhost\/reins-harness-reins-agent:[0-9a-f]{16} \((built in [\d.]+ s|already built)\)/);
      // The rollouts' pods run the harness image; the verifiers' pods the plain sandbox image.
      const seen = [...images.values()];
      expect(seen.filter((i) => /^localhost\/reins-harness-reins-agent:[0-9a-f]{16}$/.test(i)).length).toBeGreaterThanOrEqual(2);
      expect(new Set(seen.filter((i) => i.includes("reins-harness-"))).size).toBe(1);
      expect(
        seen.every((i) => i.includes("reins-harness-") || i === "localhost/reins-sandbox:1"),
        seen.join(", "),
      ).toBe(true);
      expect(await leftovers()).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 600_000);
});

describe("reins eval killed mid-run on the cluster", () => {
  it("resumes: each rollout once, and nothing of the run left afterwards", async () => {
    const dir = mkdtempSync(join(tmpdir(), "reins-k8s-kill-"));
    try {
      const file = evaluation(dir, {
        harnesses: harness("slow", 'sleep 2; printf "%s" "$1" > answer.txt'),
        tasks: task("one", "one", "[{fileContains: {path: answer.txt, text: one}}]") + task("two", "two", "[{fileContains: {path: answer.txt, text: two}}]"),
        attempts: 4,
        concurrency: 3,
      });
      const run = join(dir, "run");
      // Its own TMPDIR: what a killed runner leaves there (its proxy sockets) goes with `dir`.
      mkdirSync(join(dir, "tmp"));
      const child = spawnReins(["eval", file, "--out", run, "--quiet"], { env: { KUBECONFIG: cluster.kubeconfig, TMPDIR: join(dir, "tmp") }, stdio: "ignore" });
      // Killed once the first rollouts finished and others are on the cluster.
      for (let i = 0; i < 600; i++) {
        await new Promise((r) => setTimeout(r, 100));
        let done = 0;
        try {
          done = readFileSync(join(run, "rollouts.jsonl"), "utf8").trim().split("\n").filter(Boolean).length;
        } catch {}
        // …and while some of its pods are up (a loaded machine may be between rollouts).
        if (done >= 2 && (await get("/api/v1/namespaces/default/pods?labelSelector=reins.dev%2Frun")).items.length > 0) break;
      }
      child.kill("SIGKILL");
      await new Promise((r) => child.once("exit", r));
      const pods = await get("/api/v1/namespaces/default/pods?labelSelector=reins.dev%2Frun");
      const before = readFileSync(join(run, "rollouts.jsonl"), "utf8").trim().split("\n").length;
      expect(before).toBeLessThan(8);
      const r = await reinsAsync(["eval", "--resume", run, "--json"], { env: { KUBECONFIG: cluster.kubeconfig } });
      expect(r.code, r.stderr).toBe(0);
      const results = readFileSync(join(run, "rollouts.jsonl"), "utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l));
      const ids = results.map((x) => x.id);
      expect(ids).toHaveLength(8);
      expect(new Set(ids).size).toBe(8);
      expect(
        results.map((x) => `${x.id} ${x.status} ${x.reward}${x.error ? ` ${x.error.code}: ${x.error.message}` : ""}`).filter((l) => !l.endsWith("ok 1")),
      ).toEqual([]);
      expect(await leftovers()).toEqual([]);
      // Pods the killed runner left were there, and went with the run's owner.
      expect(pods.items.length).toBeGreaterThan(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 600_000);
});
