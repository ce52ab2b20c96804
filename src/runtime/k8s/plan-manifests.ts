/**
 * The Kubernetes objects a plan implies, for `reins plan` to show (pure, deterministic: the same
 * plan gives the same objects). Derived data, not part of the plan hash.
 *
 * - sandbox.provider kubernetes: the run's owner ConfigMap and the sandbox Pod of the plan's first
 *   rollout, as the kubernetes provider creates it (or, with useSandboxClaims, the SandboxTemplate,
 *   SandboxWarmPool and that rollout's SandboxClaim). The owner's uid is a placeholder until the
 *   run creates it; the claim carries no shutdown time (the provider sets one from the clock).
 * - sandbox.provider podman: the same Pod as the podman provider builds it before adapting it for
 *   `podman kube play` (namespace "default", no owner: there is no API server).
 * - trainer.mode kubernetes: the weights claim, the headless Service and the indexed Job
 *   (trainer-job.ts).
 * The per-rollout proxy env and the proxy-only NetworkPolicy are left out: they need the proxy's
 * address and pod labels, which only exist when a run starts.
 */
import type { Plan } from "../../compiler/contract/plan.js";
import {
  buildSandboxClaim,
  buildSandboxPod,
  buildSandboxTemplate,
  buildSandboxWarmPool,
  warmPoolName,
  type RolloutIdentity,
} from "../sandbox/kubernetes/manifests.js";
import { buildRunOwner, type Manifest } from "../sandbox/kubernetes/objects.js";
import { baseEnvironment, DEFAULT_SANDBOX_IMAGE, SANDBOX_HOME } from "../sandbox/layout.js";
import { buildTrainerObjects, OWNER_UID_PLACEHOLDER, planRunId } from "./trainer-job.js";

/** The plan's first rollout (or a stand-in when it has none), as the executor names it. */
export function exampleRollout(plan: Plan): RolloutIdentity & { timeoutSeconds: number } {
  const runId = planRunId(plan);
  const rollout = plan.steps.flatMap((s) => s.rollouts)[0];
  if (!rollout) return { runId, rolloutId: "example", timeoutSeconds: plan.sandbox.timeoutSeconds };
  const task = plan.tasks.find((t) => t.name === rollout.task);
  return {
    runId,
    rolloutId: rollout.id,
    task: rollout.task,
    harness: rollout.harness,
    timeoutSeconds: task?.timeoutSeconds ?? plan.sandbox.timeoutSeconds,
  };
}

function sandboxObjects(plan: Plan): Manifest[] {
  const s = plan.sandbox;
  if (s.provider !== "kubernetes" && s.provider !== "podman") return [];
  const { timeoutSeconds, ...identity } = exampleRollout(plan);
  const image = s.image ?? DEFAULT_SANDBOX_IMAGE;
  const env = baseEnvironment(SANDBOX_HOME);
  if (s.provider === "podman") {
    return [buildSandboxPod({ identity, namespace: "default", image, resources: s.resources, deadlineSeconds: timeoutSeconds, env })];
  }
  const namespace = s.kubernetes?.namespace ?? "default";
  const ownerObject = buildRunOwner({ runId: identity.runId, namespace });
  const owner = { name: ownerObject.metadata.name, uid: OWNER_UID_PLACEHOLDER };
  const runtimeClassName = s.kubernetes?.runtimeClassName;
  if (s.kubernetes?.useSandboxClaims) {
    const pool = { runId: identity.runId, namespace, image, replicas: s.warmPool, resources: s.resources, runtimeClassName, owner };
    return [
      ownerObject,
      buildSandboxTemplate(pool),
      buildSandboxWarmPool(pool),
      buildSandboxClaim({ identity, namespace, owner, warmPool: warmPoolName(pool), ttlSeconds: timeoutSeconds }),
    ];
  }
  return [ownerObject, buildSandboxPod({ identity, namespace, image, resources: s.resources, deadlineSeconds: timeoutSeconds, owner, runtimeClassName, env })];
}

/** Every Kubernetes object the plan implies, owner first, then sandbox, then trainer objects. */
export function planManifests(plan: Plan): Record<string, unknown>[] {
  const out: Manifest[] = sandboxObjects(plan);
  const trainer = buildTrainerObjects(plan);
  if (trainer) {
    const runId = planRunId(plan);
    const namespace = plan.sandbox.kubernetes?.namespace ?? "default";
    const hasOwner = out.some((m) => m.kind === "ConfigMap" && m.metadata.namespace === namespace);
    if (!hasOwner) out.unshift(buildRunOwner({ runId, namespace }));
    out.push(trainer.claim, trainer.service, trainer.job);
  }
  return out;
}
