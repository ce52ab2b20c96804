/**
 * Manifest builders validated against the real Kubernetes schemas (kubernetes-models) plus our
 * strict unknown-field check; names and label values; the exec status protocol.
 */
import { describe, expect, it } from "vitest";
import { Pod } from "kubernetes-models/v1/Pod";
import {
  buildProxyOnlyNetworkPolicy,
  buildSandboxClaim,
  buildSandboxPod,
  buildSandboxTemplate,
  buildSandboxWarmPool,
  podName,
  rolloutLabels,
} from "../../src/runtime/sandbox/kubernetes/manifests.js";
import { buildRunOwner } from "../../src/runtime/sandbox/kubernetes/objects.js";
import { dnsName, isDnsLabel, isLabelValue, labelValue } from "../../src/runtime/sandbox/kubernetes/names.js";
import { validateManifest } from "../../src/runtime/k8s/validate.js";
import { adaptPodForPodman } from "../../src/runtime/sandbox/podman/manifest.js";
import { outcomeOfStatus, decodeChannelFrame, encodeChannelFrame } from "../../src/runtime/sandbox/kubernetes/exec-status.js";
import { statusFor } from "./mock-api-server.js";

const owner = { name: "reins-run-x-123456", uid: "6f1c1f0e-0d0b-4c3e-9c55-2b1f5a0e7a11" };
const identity = { runId: "Run 2026/11/29 #7", rolloutId: "step-0/pair-3/attempt-2", task: "greet-ada-3fa9c1", harness: "claude-code" };
const now = new Date("2026-11-29T08:00:00Z");

const all = () => ({
  owner: buildRunOwner({ runId: identity.runId, namespace: "reins", ttlSeconds: 3600, now }),
  pod: buildSandboxPod({
    identity,
    namespace: "reins",
    image: "ghcr.io/example/reins-sandbox:1",
    resources: { cpu: "500m", memoryMiB: 1024, diskMiB: 256 },
    deadlineSeconds: 1800.5,
    owner,
    runtimeClassName: "gvisor",
    env: { HOME: "/home/sandbox", OPENAI_BASE_URL: "http://proxy:8080/r/x/v1" },
    labels: { "example.com/team": "rl" },
  }),
  policy: buildProxyOnlyNetworkPolicy({
    runId: identity.runId,
    namespace: "reins",
    proxyPodLabels: { "app.kubernetes.io/name": "reins-proxy" },
    proxyPort: 8080,
    owner,
  }),
  template: buildSandboxTemplate({
    runId: identity.runId,
    namespace: "reins",
    image: "img:1",
    replicas: 4,
    resources: { cpu: "1", memoryMiB: 512, diskMiB: 128 },
    owner,
  }),
  pool: buildSandboxWarmPool({ runId: identity.runId, namespace: "reins", image: "img:1", replicas: 4, owner }),
  claim: buildSandboxClaim({ identity, namespace: "reins", ttlSeconds: 900, now, owner, warmPool: "reins-pool-x-0a1b2c" }),
});

describe("manifest builders", () => {
  it("produce objects the real schemas accept, with no unknown fields", () => {
    for (const [name, manifest] of Object.entries(all())) expect(validateManifest(manifest), name).toEqual([]);
    expect(() => new Pod(all().pod as never).validate()).not.toThrow();
  });

  it("state the sandbox's disk cap as ephemeral-storage and as each emptyDir's size limit", () => {
    const spec = all().pod.spec as { containers: { resources: Record<string, Record<string, string>> }[]; volumes: { emptyDir?: { sizeLimit?: string } }[] };
    expect(spec.containers[0].resources.limits).toEqual({ cpu: "500m", memory: "1024Mi", "ephemeral-storage": "768Mi" });
    expect(spec.volumes.map((v) => v.emptyDir?.sizeLimit)).toEqual(["256Mi", "256Mi", "256Mi"]);
  });

  it("the podman adaptation of the Pod is still a valid Pod", () => {
    const played = adaptPodForPodman(all().pod, {
      workspaceHost: "/s/ws",
      homeHost: "/s/home",
      tmpHost: "/s/tmp",
      nodeHost: "/usr/bin/node",
      proxy: { socketHost: "/s/p.sock", port: 18080 },
      extraMounts: [{ hostPath: "/cache", sandboxPath: "/opt/cache", readOnly: true }],
    });
    expect(validateManifest(played)).toEqual([]);
    expect(played.metadata.ownerReferences).toBeUndefined();
    const containers = (played.spec as { containers: { name: string }[] }).containers.map((c) => c.name);
    expect(containers).toEqual(["sandbox", "proxy-forwarder"]);
  });

  it("label, own and bound everything of a run", () => {
    const { pod, policy, claim } = all();
    const labels = pod.metadata.labels as Record<string, string>;
    expect(labels).toMatchObject({
      "app.kubernetes.io/name": "reins",
      "app.kubernetes.io/managed-by": "reins",
      "app.kubernetes.io/component": "sandbox",
      "reins.dev/harness": "claude-code",
      "reins.dev/task": "greet-ada-3fa9c1",
    });
    for (const value of Object.values(labels)) expect(isLabelValue(value), value).toBe(true);
    expect(pod.metadata.annotations?.["reins.dev/rollout-id"]).toBe(identity.rolloutId);
    for (const m of [pod, policy, claim]) expect(m.metadata.ownerReferences?.[0]).toMatchObject({ kind: "ConfigMap", uid: owner.uid });
    const spec = pod.spec as Record<string, unknown>;
    expect(spec.activeDeadlineSeconds).toBe(1801);
    expect(spec.automountServiceAccountToken).toBe(false);
    const container = (spec.containers as Record<string, unknown>[])[0];
    expect(container.securityContext).toMatchObject({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ["ALL"] } });
    expect(claim.spec).toMatchObject({ lifecycle: { shutdownTime: "2026-11-29T08:15:00Z", shutdownPolicy: "Delete" } });
    expect((policy.spec as { egress: unknown[] }).egress).toHaveLength(2);
    expect(all().owner.metadata.annotations?.["reins.dev/expires-at"]).toBe("2026-11-29T09:00:00.000Z");
  });

  it("are pure: the same input gives the same objects", () => {
    expect(all()).toEqual(all());
  });
});

describe("strict validation catches what kubernetes-models alone lets through", () => {
  it("reports a typo'd field that the schema validator accepts silently", () => {
    const pod = structuredClone(all().pod) as unknown as { spec: { containers: Record<string, unknown>[] } };
    pod.spec.containers[0].imagee = "typo";
    (pod.spec as Record<string, unknown>).restartPolcy = "Never";
    expect(() => new Pod(pod as never).validate()).not.toThrow();
    expect(validateManifest(pod as never)).toEqual([
      { path: "/spec/containers/0/imagee", message: "unknown field" },
      { path: "/spec/restartPolcy", message: "unknown field" },
    ]);
  });

  it("reports schema errors with their paths", () => {
    const pod = structuredClone(all().pod) as unknown as { spec: Record<string, unknown> };
    pod.spec.activeDeadlineSeconds = "soon";
    const issues = validateManifest(pod as never);
    expect(issues.some((i) => i.path === "/spec/activeDeadlineSeconds" && /integer/.test(i.message))).toBe(true);
  });

  it("checks agent-sandbox objects field by field, including their embedded PodSpec", () => {
    const template = structuredClone(all().template) as unknown as {
      spec: { podTemplate: { spec: { containers: Record<string, unknown>[] } }; extra?: number };
    };
    template.spec.podTemplate.spec.containers[0].commnd = ["x"];
    template.spec.extra = 1;
    expect(
      validateManifest(template as never)
        .map((i) => i.path)
        .sort(),
    ).toEqual(["/spec/extra", "/spec/podTemplate/spec/containers/0/commnd"]);
    const claim = structuredClone(all().claim) as unknown as { spec: Record<string, unknown> };
    claim.spec.warmPoolRef = { nam: "x" };
    expect(validateManifest(claim as never)).toEqual([{ path: "/spec/warmPoolRef/nam", message: "unknown field" }]);
    expect(validateManifest({ apiVersion: "v9", kind: "Thing", metadata: { name: "x" } })).toEqual([{ path: "", message: "no schema for v9 Thing" }]);
  });
});

describe("names", () => {
  it("are DNS-1123 labels of at most 63 characters, distinct for ids that sanitize alike", () => {
    const long = { runId: "R".repeat(200), rolloutId: "x/y/z" };
    for (const id of [identity, long, { runId: "-", rolloutId: "_" }, { runId: "ÄÖÜ", rolloutId: "1" }]) {
      const name = podName(id);
      expect(isDnsLabel(name), name).toBe(true);
    }
    expect(podName({ runId: "a", rolloutId: "b/c" })).not.toBe(podName({ runId: "a", rolloutId: "b_c" }));
    expect(dnsName(["reins", "run-1", "0-0-0"])).toMatch(/^reins-run-1-0-0-0-[0-9a-f]{6}$/);
    expect(podName(identity)).toBe(podName({ ...identity }));
  });

  it("keeps valid label values and makes invalid ones valid and distinct", () => {
    expect(labelValue("run-1")).toBe("run-1");
    for (const raw of ["Run 2026/11/29 #7", "x".repeat(100), "--", "a/b", "a_b."]) {
      const v = labelValue(raw);
      expect(isLabelValue(v), `${raw} -> ${v}`).toBe(true);
    }
    expect(labelValue("a/b")).not.toBe(labelValue("a b"));
    expect(rolloutLabels(identity)["reins.dev/rollout"]).toBe(labelValue(identity.rolloutId));
  });
});

describe("exec status protocol", () => {
  it("reads exit codes from the statuses an API server sends", () => {
    expect(outcomeOfStatus({ status: "Success" })).toEqual({ exitCode: 0 });
    expect(outcomeOfStatus(statusFor(3, ["sh", "-c", "exit 3"]))).toEqual({ exitCode: 3 });
    expect(
      outcomeOfStatus({
        status: "Failure",
        reason: "InternalError",
        message:
          'Internal error occurred: error executing command in container: failed to exec in container: starting container process caused: exec: "nope": executable file not found in $PATH: unknown',
      }),
    ).toMatchObject({ error: expect.stringContaining("executable file not found") });
  });

  it("frames data with a channel byte", () => {
    const frame = encodeChannelFrame(2, "err");
    expect([...frame]).toEqual([2, 101, 114, 114]);
    expect(decodeChannelFrame(frame)).toEqual({ channel: 2, payload: Buffer.from("err") });
  });
});
