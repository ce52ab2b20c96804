/** Sandbox providers by type, created on demand (podman and kubernetes load only when used). */
import type { ResolvedSandbox } from "../../compiler/plan/types.js";
import type { SandboxProvider } from "../sandbox/provider.js";
import { LocalSandboxProvider } from "../sandbox/local.js";

// Loaded by path so a run on the local provider never loads podman's or the Kubernetes client's code.
const PODMAN_MODULE = "../sandbox/podman.js";
const KUBERNETES_MODULE = "../sandbox/kubernetes.js";

export async function createProvider(sandbox: ResolvedSandbox, opts: { hidePaths?: string[] } = {}): Promise<SandboxProvider> {
  switch (sandbox.provider) {
    case "local":
      return new LocalSandboxProvider({ hidePaths: opts.hidePaths ?? [] });
    case "podman": {
      const mod = (await import(PODMAN_MODULE)) as { PodmanSandboxProvider: new (o?: unknown) => SandboxProvider };
      return new mod.PodmanSandboxProvider({});
    }
    case "kubernetes": {
      const mod = (await import(KUBERNETES_MODULE)) as { KubernetesSandboxProvider: new (o?: unknown) => SandboxProvider };
      return new mod.KubernetesSandboxProvider({ namespace: sandbox.kubernetes?.namespace ?? "default" });
    }
  }
}
