/** The sandbox provider a plan asks for, with the plan's settings (the run directory hidden from sandboxes). */
import type { ResolvedSandbox } from "../../compiler/contract/plan.js";
import type { SandboxProvider } from "../sandbox/provider.js";
import { createSandboxProvider, providerOptionsFor } from "../sandbox/registry.js";

export async function createProvider(sandbox: ResolvedSandbox, opts: { hidePaths?: string[] } = {}): Promise<SandboxProvider> {
  return createSandboxProvider(sandbox.provider, providerOptionsFor(sandbox, { local: { hidePaths: opts.hidePaths ?? [] } }));
}
