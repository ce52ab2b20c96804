/**
 * Attaches the Kubernetes objects a plan implies (sandbox Pods' template, trainer Job) using the
 * runtime's pure manifest builders. Derived data: not part of the plan hash.
 */
import type { Plan } from "../compiler/index.js";
import { planManifests } from "../runtime/k8s/plan-manifests.js";

type Builder = (plan: Plan) => Record<string, unknown>[];
const builders: Builder[] = [];

export function registerManifestBuilder(b: Builder): void {
  builders.push(b);
}

export function attachManifests(plan: Plan): Plan {
  const manifests = builders.flatMap((b) => b(plan));
  return manifests.length > 0 ? { ...plan, manifests } : plan;
}

registerManifestBuilder(planManifests);
