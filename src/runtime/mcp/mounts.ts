/**
 * What a sandbox that runs MCP servers needs mounted: the servers shipped with reins and reins's
 * node_modules (the MCP SDK), found without loading the SDK (a rollout without servers never does).
 */
import { createRequire } from "node:module";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import type { SandboxMount } from "../sandbox/provider.js";

export const SHIPPED_SERVERS_DIR = fileURLToPath(new URL("./servers/", import.meta.url)).replace(/\/$/, "");
/** reins's node_modules: the shipped servers import the MCP SDK (and zod) from it. */
const NODE_MODULES = nodeModulesOf(createRequire(import.meta.url).resolve("@modelcontextprotocol/sdk/server/mcp.js"));

function nodeModulesOf(file: string): string {
  const at = file.lastIndexOf("/node_modules/");
  if (at < 0) throw new Error(`bug: the MCP SDK (${file}) is not under a node_modules directory`);
  return file.slice(0, at + "/node_modules".length);
}

/** What a sandbox running MCP servers needs mounted (read-only, at the same paths). */
export function mcpMounts(): SandboxMount[] {
  const mounts: SandboxMount[] = [
    { hostPath: SHIPPED_SERVERS_DIR, sandboxPath: SHIPPED_SERVERS_DIR },
    { hostPath: NODE_MODULES, sandboxPath: NODE_MODULES },
  ];
  const nodeDir = dirname(dirname(process.execPath));
  if (!process.execPath.startsWith("/usr/")) mounts.push({ hostPath: nodeDir, sandboxPath: nodeDir });
  return mounts;
}
