/**
 * What a plan's sandbox and its harnesses must agree on: how pods reach the proxy, and how each
 * harness's files (its install, node, reins-agent, its mounts) reach a sandbox of that provider.
 */
import { CODES } from "../contract/codes.js";
import { makeDiagnostic, type Diagnostic } from "../contract/diagnostics.js";
import type { ResolvedHarness, ResolvedSandbox } from "../contract/plan.js";
import type { SourcePosition } from "../contract/problem.js";

type At = (...p: (string | number)[]) => SourcePosition;

/**
 * A kubernetes sandbox's proxy settings: exactly one of address and service, a port with service,
 * and some setting at all when a harness calls a model (otherwise its pods have no way to the proxy).
 */
export function checkPodProxy(sandbox: ResolvedSandbox, modelHarness: string | undefined, at: (...p: (string | number)[]) => SourcePosition): Diagnostic[] {
  if (sandbox.provider !== "kubernetes") return [];
  const proxy = sandbox.kubernetes?.proxy;
  const out: Diagnostic[] = [];
  if (!proxy) {
    if (modelHarness) {
      const message = `The harness ${modelHarness} calls a model, but the kubernetes sandbox does not say how its pods reach the proxy.`;
      out.push(makeDiagnostic("ProxyUnreachable", at("kubernetes"), message, CODES.ProxyUnreachable));
    }
    return out;
  }
  if ((proxy.address === undefined) === (proxy.service === undefined)) {
    out.push(
      makeDiagnostic(
        "ProxyUnreachable",
        at("kubernetes", "proxy"),
        `kubernetes.proxy has ${proxy.address ? "both address and service" : "neither address nor service"}.`,
        CODES.ProxyUnreachable,
      ),
    );
  } else if (proxy.service !== undefined && proxy.port === undefined) {
    out.push(
      makeDiagnostic(
        "ProxyUnreachable",
        at("kubernetes", "proxy", "service"),
        `kubernetes.proxy.service ${proxy.service} has no port: pods would not know where to connect.`,
        "Give kubernetes.proxy.port, the port the Service forwards to reins' proxy.",
      ),
    );
  }
  return out;
}

/**
 * Harness files and providers: a local sandbox runs harnesses from this machine's files (never from
 * an image, and runs no image itself); a pod sees none of this machine's files (no mounts: the
 * harness comes in an image).
 */
export function checkHarnessFiles(
  sandbox: ResolvedSandbox,
  harnesses: readonly { harness?: ResolvedHarness }[],
  atSandbox: At,
  atHarness: (i: number) => SourcePosition,
): Diagnostic[] {
  const out: Diagnostic[] = [];
  const image = sandbox.harnessFiles === "image";
  if (sandbox.provider === "local" && image) {
    out.push(
      makeDiagnostic(
        "InvalidValue",
        atSandbox("harnessFiles"),
        "A local sandbox runs harnesses from this machine's files; it has no image to build them into.",
        "Remove harnessFiles, or use provider: podman.",
      ),
    );
  }
  if (sandbox.provider === "local" && sandbox.image !== undefined) {
    const message = `A local sandbox shows this machine's own system directories (bubblewrap) and runs no image: image ${sandbox.image} would do nothing.`;
    out.push(makeDiagnostic("InvalidValue", atSandbox("image"), message, "Remove image, or use provider: podman or kubernetes to run the sandbox from it."));
  }
  if (sandbox.provider === "kubernetes" && !image) {
    out.push(
      makeDiagnostic(
        "InvalidValue",
        atSandbox("harnessFiles"),
        "Pods cannot mount this machine's files: on kubernetes a harness's files come in its image.",
        "Remove harnessFiles (kubernetes builds harness images), or use provider: podman.",
      ),
    );
  }
  harnesses.forEach(({ harness }, i) => {
    if (!harness) return;
    if (harness.install?.image && sandbox.provider === "local") {
      out.push(
        makeDiagnostic(
          "HarnessNeedsImage",
          atHarness(i),
          `The harness ${harness.name} runs from the image ${harness.install.image}, and a local sandbox runs no image.`,
          CODES.HarnessNeedsImage,
        ),
      );
    }
    if (harness.mounts.length > 0 && sandbox.provider === "kubernetes") {
      const message = `The harness ${harness.name} mounts ${harness.mounts[0]!.hostPath} from this machine, which a pod cannot see.`;
      out.push(makeDiagnostic("InvalidValue", atHarness(i), message, "Put those files in the harness's image (install.image), or use provider podman."));
    }
  });
  return out;
}

/**
 * Settings that would do nothing: a warm pool without agent-sandbox claims on kubernetes (only
 * claims take warm pods), a creation burst without a creation rate.
 */
export function checkWarmPool(sandbox: ResolvedSandbox, at: At): Diagnostic[] {
  const out: Diagnostic[] = [];
  const claims = sandbox.provider === "kubernetes" && sandbox.kubernetes?.useSandboxClaims === true;
  if (sandbox.warmPool > 0 && !claims) {
    const message = `warmPool ${sandbox.warmPool} keeps pods warm for agent-sandbox claims, which this ${sandbox.provider} sandbox does not use: it would do nothing.`;
    out.push(
      makeDiagnostic(
        "InvalidValue",
        at("warmPool"),
        message,
        "Set provider: kubernetes and kubernetes.useSandboxClaims: true (agent-sandbox installed), or remove warmPool.",
      ),
    );
  }
  const k = sandbox.kubernetes;
  if (k?.createBurst !== undefined && k.createsPerSecond === undefined) {
    out.push(
      makeDiagnostic(
        "InvalidValue",
        at("kubernetes", "createBurst"),
        "kubernetes.createBurst sizes the creation-rate limiter, and no kubernetes.createsPerSecond sets one: it would do nothing.",
        "Give kubernetes.createsPerSecond too, or remove createBurst.",
      ),
    );
  }
  return out;
}

/** Every check above, in order: the pods' way to the proxy, the harnesses' files, the warm pool. */
export function checkSandbox(
  sandbox: ResolvedSandbox,
  harnesses: readonly { harness?: ResolvedHarness | undefined }[],
  modelHarness: string | undefined,
  atSandbox: At,
  atHarness: (i: number) => SourcePosition,
): Diagnostic[] {
  return [
    ...checkPodProxy(sandbox, modelHarness, atSandbox),
    ...checkHarnessFiles(sandbox, harnesses, atSandbox, atHarness),
    ...checkWarmPool(sandbox, atSandbox),
  ];
}
