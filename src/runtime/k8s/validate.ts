/**
 * Validation of generated manifests against the real Kubernetes schemas (kubernetes-models), plus
 * a strict unknown-field check: kubernetes-models accepts unknown fields silently, so we record
 * every property its compiled validator reads and report own keys it never looked at. Free-form
 * maps (labels, resources) are enumerated by the validator, so their keys count as read.
 * agent-sandbox objects have no published schema package: their fields are checked against the
 * v1beta1 Go types, and their embedded PodSpec against the real PodSpec schema.
 */
import { validate as validatePod } from "kubernetes-models/_schemas/IoK8sApiCoreV1Pod";
import { validate as validatePodSpec } from "kubernetes-models/_schemas/IoK8sApiCoreV1PodSpec";
import { validate as validateConfigMap } from "kubernetes-models/_schemas/IoK8sApiCoreV1ConfigMap";
import { validate as validateNetworkPolicy } from "kubernetes-models/_schemas/IoK8sApiNetworkingV1NetworkPolicy";
import { AGENT_SANDBOX_API } from "../sandbox/kubernetes/manifests.js";

export interface ManifestIssue {
  /** JSON pointer into the manifest, e.g. "/spec/containers/0/imagee". */
  path: string;
  message: string;
}

type CompiledValidator = ((data: unknown) => boolean) & { errors?: { instancePath: string; message?: string; keyword: string; params?: unknown }[] | null };

/** Runs a compiled validator on a recording proxy; returns schema errors and unknown fields. */
export function checkWithSchema(validator: (data: unknown) => boolean, value: unknown, basePath = ""): ManifestIssue[] {
  const read = new WeakMap<object, Set<string>>();
  const wrap = (v: unknown): unknown => {
    if (v === null || typeof v !== "object") return v;
    const keys = read.get(v as object) ?? new Set<string>();
    read.set(v as object, keys);
    return new Proxy(v as object, {
      get(target, key, receiver) {
        if (typeof key === "string") keys.add(key);
        return wrap(Reflect.get(target, key, receiver));
      },
      has(target, key) {
        if (typeof key === "string") keys.add(key);
        return Reflect.has(target, key);
      },
      ownKeys(target) {
        for (const k of Reflect.ownKeys(target)) if (typeof k === "string") keys.add(k);
        return Reflect.ownKeys(target);
      },
    });
  };
  const v = validator as CompiledValidator;
  const issues: ManifestIssue[] = [];
  if (!v(wrap(value))) {
    for (const e of v.errors ?? []) {
      issues.push({ path: basePath + e.instancePath, message: `${e.keyword}: ${e.message ?? JSON.stringify(e.params)}` });
    }
  }
  const visit = (node: unknown, at: string): void => {
    if (node === null || typeof node !== "object") return;
    const keys = read.get(node as object);
    if (!Array.isArray(node)) {
      for (const k of Object.keys(node)) {
        if (!keys?.has(k)) issues.push({ path: `${at}/${k}`, message: "unknown field" });
      }
    }
    for (const [k, child] of Object.entries(node)) visit(child, `${at}/${k}`);
  };
  visit(value, basePath);
  return issues;
}

/** Field trees for the agent-sandbox CRDs (from the v1beta1 Go types). */
type Shape = "string" | "integer" | "boolean" | "stringMap" | "podSpec" | "metadata" | { [field: string]: Shape } | [Shape];

const POD_METADATA: Shape = { labels: "stringMap", annotations: "stringMap" };
const TOP = (spec: Shape): Shape => ({ apiVersion: "string", kind: "string", metadata: "metadata", spec });

const AGENT_SANDBOX_SHAPES: Record<string, Shape> = {
  SandboxTemplate: TOP({
    podTemplate: { metadata: POD_METADATA, spec: "podSpec" },
    networkPolicyManagement: "string",
    envVarsInjectionPolicy: "string",
    volumeClaimTemplatesPolicy: "string",
  }),
  SandboxWarmPool: TOP({ replicas: "integer", sandboxTemplateRef: { name: "string" }, updateStrategy: { type: "string" } }),
  SandboxClaim: TOP({
    warmPoolRef: { name: "string" },
    lifecycle: { shutdownTime: "string", ttlSecondsAfterFinished: "integer", shutdownPolicy: "string" },
    additionalPodMetadata: POD_METADATA,
    safeToEvict: "string",
    env: [{ name: "string", value: "string", containerName: "string" }],
  }),
};

function checkShape(shape: Shape, value: unknown, at: string): ManifestIssue[] {
  const issues: ManifestIssue[] = [];
  if (shape === "podSpec") return checkWithSchema(validatePodSpec, value, at);
  if (shape === "metadata") {
    return checkWithSchema(validateConfigMap, { apiVersion: "v1", kind: "ConfigMap", metadata: value }).map((i) => ({
      ...i,
      path: at + i.path.replace(/^\/metadata/, ""),
    }));
  }
  if (shape === "string" || shape === "integer" || shape === "boolean") {
    const ok = shape === "integer" ? Number.isInteger(value) : typeof value === shape;
    return ok ? [] : [{ path: at, message: `must be ${shape}` }];
  }
  if (shape === "stringMap") {
    if (value === null || typeof value !== "object" || Array.isArray(value)) return [{ path: at, message: "must be a map of strings" }];
    for (const [k, v] of Object.entries(value)) if (typeof v !== "string") issues.push({ path: `${at}/${k}`, message: "must be string" });
    return issues;
  }
  if (Array.isArray(shape)) {
    if (!Array.isArray(value)) return [{ path: at, message: "must be array" }];
    value.forEach((item, i) => issues.push(...checkShape(shape[0], item, `${at}/${i}`)));
    return issues;
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) return [{ path: at, message: "must be object" }];
  for (const [k, v] of Object.entries(value)) {
    const sub = shape[k];
    if (sub === undefined) issues.push({ path: `${at}/${k}`, message: "unknown field" });
    else issues.push(...checkShape(sub, v, `${at}/${k}`));
  }
  return issues;
}

const CORE: Record<string, (data: unknown) => boolean> = {
  "v1/Pod": validatePod,
  "v1/ConfigMap": validateConfigMap,
  "networking.k8s.io/v1/NetworkPolicy": validateNetworkPolicy,
};

/** Every schema error and unknown field of a manifest this project generates, sorted by path. */
export function validateManifest(manifest: Record<string, unknown>): ManifestIssue[] {
  const apiVersion = String(manifest.apiVersion ?? "");
  const kind = String(manifest.kind ?? "");
  const core = CORE[`${apiVersion}/${kind}`];
  let issues: ManifestIssue[];
  if (core) issues = checkWithSchema(core, manifest);
  else if (apiVersion === AGENT_SANDBOX_API && AGENT_SANDBOX_SHAPES[kind]) issues = checkShape(AGENT_SANDBOX_SHAPES[kind], manifest, "");
  else issues = [{ path: "", message: `no schema for ${apiVersion} ${kind}` }];
  return issues.sort((a, b) => a.path.localeCompare(b.path) || a.message.localeCompare(b.message));
}
