/**
 * The Kubernetes API client (@kubernetes/client-node 2.x; on Node 20 it needs the undici override
 * in package.json). Explicit connection settings or the default kubeconfig / in-cluster config.
 */
import { BatchV1Api, CoreV1Api, CustomObjectsApi, KubeConfig, NetworkingV1Api } from "@kubernetes/client-node";

export interface KubeConnection {
  server: string;
  token?: string;
  /** Base64 PEM of the cluster CA. */
  caData?: string;
  skipTLSVerify?: boolean;
}

export interface KubeClients {
  config: KubeConfig;
  core: CoreV1Api;
  custom: CustomObjectsApi;
  networking: NetworkingV1Api;
  batch: BatchV1Api;
}

export function makeKubeConfig(connection?: KubeConnection): KubeConfig {
  const kc = new KubeConfig();
  if (!connection) {
    kc.loadFromDefault();
    return kc;
  }
  kc.loadFromOptions({
    clusters: [{ name: "reins", server: connection.server, caData: connection.caData, skipTLSVerify: connection.skipTLSVerify ?? false }],
    users: [{ name: "reins", token: connection.token }],
    contexts: [{ name: "reins", cluster: "reins", user: "reins" }],
    currentContext: "reins",
  });
  return kc;
}

export function makeKubeClients(config: KubeConfig): KubeClients {
  return {
    config,
    core: config.makeApiClient(CoreV1Api),
    custom: config.makeApiClient(CustomObjectsApi),
    networking: config.makeApiClient(NetworkingV1Api),
    batch: config.makeApiClient(BatchV1Api),
  };
}

/** HTTP status of an API error (ApiException.code), or undefined. */
export function apiStatus(error: unknown): number | undefined {
  if (error && typeof error === "object" && "code" in error && typeof (error as { code: unknown }).code === "number") {
    return (error as { code: number }).code;
  }
  return undefined;
}

/**
 * What an API error says, in one line: the Status object's message (`pods "x" already exists`)
 * with its HTTP code, instead of the client's multi-line dump with headers.
 */
export function apiMessage(error: unknown): string {
  const code = apiStatus(error);
  const body = error && typeof error === "object" && "body" in error ? (error as { body: unknown }).body : undefined;
  if (code !== undefined && body !== undefined) {
    try {
      const status = (typeof body === "string" ? JSON.parse(body) : body) as { message?: unknown };
      if (typeof status.message === "string") return `HTTP ${code}: ${status.message}`;
    } catch {
      // not JSON: fall through
    }
    return `HTTP ${code}`;
  }
  return error instanceof Error ? error.message : String(error);
}
