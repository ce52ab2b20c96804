/**
 * What a SandboxClaim's status says (pure): still pending, bound to a Ready sandbox (its name is its
 * pod's, and its pod IPs), or ended (Ready False for a reason that will not change, such as the
 * pod gone or the shutdown time passed). A claim without status, or Ready False for a passing
 * reason (the sandbox still starting), is pending.
 */

export interface ClaimObject {
  metadata?: { name?: string; uid?: string; deletionTimestamp?: unknown };
  status?: {
    conditions?: { type?: string; status?: string; reason?: string; message?: string }[];
    sandbox?: { name?: string; podIPs?: string[] };
  };
}

export type ClaimState = { phase: "pending" } | { phase: "ready"; sandbox: string; podIPs: string[] } | { phase: "ended"; reason: string; message: string };

/** Ready-False reasons after which the claim never becomes Ready. */
export const TERMINAL_REASONS: ReadonlySet<string> = new Set(["SandboxPodGone", "SandboxExpired", "WarmPoolNotFound", "TemplateNotFound", "SandboxFailed"]);

export function claimState(claim: ClaimObject): ClaimState {
  if (claim.metadata?.deletionTimestamp) return { phase: "ended", reason: "ClaimDeleted", message: "the claim is being deleted" };
  const ready = claim.status?.conditions?.find((c) => c.type === "Ready");
  const name = claim.status?.sandbox?.name;
  if (ready?.status === "True" && name) return { phase: "ready", sandbox: name, podIPs: claim.status?.sandbox?.podIPs ?? [] };
  if (ready?.status === "False" && ready.reason && TERMINAL_REASONS.has(ready.reason))
    return { phase: "ended", reason: ready.reason, message: ready.message ?? "" };
  return { phase: "pending" };
}
