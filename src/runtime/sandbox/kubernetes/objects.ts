/**
 * Pure builders of the run-level Kubernetes objects every object of a run hangs from: its labels,
 * its owner ConfigMap and the ownerReference to it, so that deleting the owner deletes the run
 * (sandbox pods, warm pools, the trainer's Job alike).
 */
import { dnsName, labelValue } from "./names.js";

export type Manifest = Record<string, unknown> & { apiVersion: string; kind: string; metadata: ObjectMeta };

export interface ObjectMeta {
  name: string;
  namespace?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  blockOwnerDeletion?: boolean;
  controller?: boolean;
}

export function runLabels(runId: string): Record<string, string> {
  return {
    "app.kubernetes.io/name": "reins",
    "app.kubernetes.io/part-of": "reins",
    "app.kubernetes.io/managed-by": "reins",
    "app.kubernetes.io/instance": labelValue(runId),
    "reins.dev/run": labelValue(runId),
  };
}

export function ownerName(runId: string): string {
  return dnsName(["reins-run", runId]);
}

/** The run's owner object: a ConfigMap every other object of the run points to. */
export function buildRunOwner(o: { runId: string; namespace: string; ttlSeconds?: number; now?: Date }): Manifest {
  const annotations: Record<string, string> = { "reins.dev/run-id": o.runId };
  if (o.ttlSeconds !== undefined) {
    const now = o.now ?? new Date();
    annotations["reins.dev/expires-at"] = new Date(now.getTime() + o.ttlSeconds * 1000).toISOString();
  }
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: ownerName(o.runId), namespace: o.namespace, labels: { ...runLabels(o.runId), "app.kubernetes.io/component": "run" }, annotations },
    data: { runId: o.runId },
  };
}

export function ownerReference(owner: { name: string; uid: string }): OwnerReference {
  return { apiVersion: "v1", kind: "ConfigMap", name: owner.name, uid: owner.uid, blockOwnerDeletion: false, controller: false };
}

/** Metadata of an object of the run, pointing to the run's owner when there is one. */
export function ownedMetadata(metadata: ObjectMeta, owner?: { name: string; uid: string }): ObjectMeta {
  return owner ? { ...metadata, ownerReferences: [ownerReference(owner)] } : metadata;
}
