/**
 * Sandbox providers by type. Built-in providers load lazily (the Kubernetes client is only
 * imported when a run asks for it); others can be registered.
 */
import type { ResolvedSandbox } from "../../compiler/contract/plan.js";
import type { SandboxProvider, SandboxProviderType } from "./provider.js";
import type { KubernetesProviderOptions } from "./kubernetes/provider.js";
import type { LocalProviderOptions } from "./local/provider.js";
import type { PodmanProviderOptions } from "./podman/provider.js";

export interface ProviderOptions {
  local?: LocalProviderOptions;
  podman?: PodmanProviderOptions;
  kubernetes?: KubernetesProviderOptions;
}

export type ProviderFactory = (options: ProviderOptions) => Promise<SandboxProvider>;

const factories = new Map<string, ProviderFactory>([
  ["local", async (o) => new (await import("./local/provider.js")).LocalSandboxProvider(o.local)],
  ["podman", async (o) => new (await import("./podman/provider.js")).PodmanSandboxProvider(o.podman)],
  ["kubernetes", async (o) => new (await import("./kubernetes/provider.js")).KubernetesSandboxProvider(o.kubernetes)],
]);

export function registerSandboxProvider(type: string, factory: ProviderFactory): void {
  factories.set(type, factory);
}

export function sandboxProviderTypes(): string[] {
  return [...factories.keys()].sort();
}

/** A provider of the given type; throws for an unknown type (the compiler rejects those first). */
export async function createSandboxProvider(type: SandboxProviderType | string, options: ProviderOptions = {}): Promise<SandboxProvider> {
  const factory = factories.get(type);
  if (!factory) throw new Error(`unknown sandbox provider "${type}" (known: ${sandboxProviderTypes().join(", ")})`);
  return factory(options);
}

/** Provider options from a plan's sandbox settings (explicit options win). */
export function providerOptionsFor(sandbox: ResolvedSandbox, overrides: ProviderOptions = {}): ProviderOptions {
  const k = sandbox.kubernetes;
  return {
    local: { ...overrides.local },
    podman: { image: sandbox.image, ...overrides.podman },
    kubernetes: {
      image: sandbox.image,
      namespace: k?.namespace,
      runtimeClassName: k?.runtimeClassName,
      useSandboxClaims: k?.useSandboxClaims,
      ttlSeconds: k?.ttlSeconds,
      ...(k?.proxy?.service && k.proxy.podLabels && k.proxy.port ? { proxyPolicy: { podLabels: k.proxy.podLabels, port: k.proxy.port } } : {}),
      warmPool: sandbox.warmPool,
      // Plans written before these settings existed take the compiler's defaults.
      maxStarting: k?.maxStarting ?? 128,
      readyTimeoutMs: (k?.startTimeoutSeconds ?? 300) * 1000,
      ...(k?.createsPerSecond !== undefined ? { createsPerSecond: k.createsPerSecond, createBurst: k.createBurst } : {}),
      ...overrides.kubernetes,
    },
  };
}
