/**
 * The answer to `/r/<path>/mcp/<name>`, in one process or in the front of several
 * (./processes/front.ts): the rollout's MCP handler, or MCP's own 401 and 404.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { closeAfterAnswer, sendJson } from "./call-answer.js";
import type { Rollout } from "./rollouts.js";

/**
 * `/r/<path>/mcp/<name>`: MCP's streamable HTTP to one of the rollout's MCP servers, with the
 * rollout's own key (another rollout's key, or none, is refused like a model call's).
 */
export async function handleMcp(rollout: Pick<Rollout, "mcp"> | undefined, name: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (!rollout) {
    req.resume();
    closeAfterAnswer(res);
    sendJson(res, 401, { jsonrpc: "2.0", error: { code: -32001, message: "invalid x-api-key or bearer token for this rollout" }, id: null });
    return;
  }
  if (!rollout.mcp || !(await rollout.mcp(name, req, res))) {
    req.resume();
    sendJson(res, 404, { jsonrpc: "2.0", error: { code: -32001, message: `this rollout has no MCP server named ${name}` }, id: null });
  }
}
