/**
 * A try's MCP servers: each started fresh — `where: sandbox` in the rollout's own sandbox,
 * `where: beside` in a sandbox of its own (no network) — opened by reins before the harness
 * starts, relayed to the harness through the proxy, and stopped with the try (beside sandboxes
 * destroyed), so no state crosses rollouts or tries. Servers shipped with reins run with reins's
 * node from src/runtime/mcp/servers, with reins's node_modules (the MCP SDK) mounted read-only.
 */
import { join } from "node:path";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { ResolvedMcpServer } from "../../compiler/contract/plan.js";
import type { McpCallRecord, RolloutMcp } from "../records/rollout-result.js";
import type { Sandbox } from "../sandbox/provider.js";
import { RecordBudget } from "./limits.js";
import { McpRelay, McpRelayError } from "./relay.js";
import { ServerProcess } from "./server-process.js";
import { SHIPPED_SERVERS_DIR } from "./mounts.js";

export { mcpMounts, SHIPPED_SERVERS_DIR } from "./mounts.js";

/** The server's argv in `box`: a shipped server runs with the node the sandbox has (the host's where mounted, else its image's). */
export function serverArgv(s: ResolvedMcpServer, box: Pick<Sandbox, "nodePath">): string[] {
  return s.shipped ? [box.nodePath ?? "node", join(SHIPPED_SERVERS_DIR, `${s.shipped}.mjs`), ...s.command] : [...s.command];
}

/** How long past the try's deadline a server's own timer waits before it kills the server (reins stops it first). */
const SERVER_BACKSTOP_MS = 60_000;

export interface RolloutServers {
  /** Serves one HTTP request of the harness to the server `name`; false when the try has no such server. */
  handle(name: string, req: IncomingMessage, res: ServerResponse): Promise<boolean>;
  /** What the harness is told: each server's URL under the rollout's base URL, and its tools. */
  urls(baseUrl: string): { name: string; url: string; tools: string[] }[];
  /**
   * The first server that ended while the harness ran: before `before` (ms epoch), the harness's
   * end or the try's deadline, whichever came first. A server seen ending later is no failure, so
   * a harness killed at its timeout is a timeout, whatever its servers did meanwhile.
   */
  failure(before?: number): McpRelayError | undefined;
  record(): RolloutMcp;
  close(): Promise<void>;
}

export interface StartOptions {
  servers: readonly ResolvedMcpServer[];
  /** The rollout's sandbox (for `where: sandbox`). */
  sandbox: Sandbox;
  /** A fresh sandbox of its own for a `where: beside` server (no network, the MCP mounts). */
  createBeside: (server: ResolvedMcpServer) => Promise<Sandbox>;
  /** ms epoch of the try's start (calls are timed from it) and of its deadline. */
  startedAt: number;
  deadline: number;
}

/** Starts and opens every server; on a failure, stops what was started and throws McpRelayError. */
export async function startRolloutServers(o: StartOptions): Promise<RolloutServers> {
  const calls: McpCallRecord[] = [];
  const budget = new RecordBudget();
  const relays: { relay: McpRelay; server: ResolvedMcpServer; process: ServerProcess }[] = [];
  const beside: Sandbox[] = [];
  const stop = async () => {
    await Promise.all(relays.map((r) => r.relay.close().catch(() => undefined)));
    await Promise.all(beside.map((s) => s.destroy().catch(() => undefined)));
  };
  try {
    for (const s of o.servers) {
      let box = o.sandbox;
      if (s.where === "beside") {
        box = await o.createBeside(s);
        beside.push(box);
      }
      if (s.files.length > 0)
        await box.writeFiles(
          s.files.map((f) => ({ path: f.path, content: f.encoding === "base64" ? Buffer.from(f.content, "base64") : f.content, mode: f.mode })),
        );
      // The server's own timer is only a backstop (reins closes it with the try): it must never end the server before the harness's timeout is seen.
      const proc = new ServerProcess(box, serverArgv(s, box), {
        cwd: box.workspacePath,
        env: s.env,
        timeoutMs: Math.max(1, o.deadline - Date.now()) + SERVER_BACKSTOP_MS,
        ...(s.maxResultBytes !== undefined ? { maxLineBytes: s.maxResultBytes } : {}),
      });
      const relay = new McpRelay(s.name, proc, {
        allowed: s.tools,
        startedAt: o.startedAt,
        record: (c) => calls.push(c),
        budget,
        ...(s.maxArgumentBytes !== undefined ? { maxArgumentBytes: s.maxArgumentBytes } : {}),
        ...(s.maxResultBytes !== undefined ? { maxResultBytes: s.maxResultBytes } : {}),
      });
      relays.push({ relay, server: s, process: proc });
      await relay.open(Math.min(s.startupSeconds * 1000, Math.max(1, o.deadline - Date.now())));
    }
  } catch (e) {
    await stop();
    if (e instanceof McpRelayError) throw e;
    throw new McpRelayError("McpServerUnavailable", `An MCP server could not be started: ${(e as Error).message}`);
  }
  return {
    async handle(name, req, res) {
      const r = relays.find((x) => x.server.name === name);
      if (!r) return false;
      await r.relay.handle(req, res);
      return true;
    },
    urls: (baseUrl) => relays.map((r) => ({ name: r.server.name, url: `${baseUrl.replace(/\/+$/, "")}/mcp/${r.server.name}`, tools: r.relay.tools })),
    failure: (before) => relays.map((r) => r.relay.failure(before)).find((f) => f !== undefined),
    record: () => ({
      servers: relays.map((r) => ({
        name: r.server.name,
        where: r.server.where,
        tools: r.relay.tools,
        ...(r.process.exit ? { exit: { code: r.process.exit.exitCode, signal: r.process.exit.signal } } : {}),
      })),
      calls: [...calls].sort((a, b) => a.atMs - b.atMs),
    }),
    close: stop,
  };
}
