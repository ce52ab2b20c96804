/**
 * The proxy's routes: `/r/<path>/[v1/]<endpoint>`. Model calls take a short way (an exact
 * endpoint after the rollout path); everything else the general one — both must give the same
 * rollout path and route, including encoded, badly encoded and odd paths.
 */
import { describe, expect, it } from "vitest";
import { parsePath } from "../../src/runtime/proxy/server.js";

describe("parsePath", () => {
  it.each([
    ["/r/roll-1/v1/chat/completions", { path: "roll-1", route: { kind: "call", dialect: "openai-chat" } }],
    ["/r/roll-1/chat/completions", { path: "roll-1", route: { kind: "call", dialect: "openai-chat" } }],
    ["/r/roll-1/v1/messages", { path: "roll-1", route: { kind: "call", dialect: "anthropic-messages" } }],
    ["/r/roll-1/messages", { path: "roll-1", route: { kind: "call", dialect: "anthropic-messages" } }],
    ["/r/roll-1/v1/messages/count_tokens", { path: "roll-1", route: { kind: "count-tokens" } }],
    ["/r/roll-1/v1/responses", { path: "roll-1", route: { kind: "call", dialect: "openai-responses" } }],
    ["/r/roll-1/responses", { path: "roll-1", route: { kind: "call", dialect: "openai-responses" } }],
    ["/r/a%2Fb%20c/v1/chat/completions", { path: "a/b c", route: { kind: "call", dialect: "openai-chat" } }],
    ["/r/bad%zz/v1/chat/completions", { path: "bad%zz", route: { kind: "call", dialect: "openai-chat" } }],
    ["/r/roll-1/v1/chat/completions?beta=true", { path: "roll-1", route: { kind: "call", dialect: "openai-chat" } }],
    ["/r/roll-1/v1/messages/", { path: "roll-1", route: { kind: "call", dialect: "anthropic-messages" } }],
    ["/r/roll-1/v1/messages?beta=true", { path: "roll-1", route: { kind: "call", dialect: "anthropic-messages" } }],
    ["/r//v1/chat/completions", { route: { kind: "unknown", dialect: "openai-chat" } }],
    ["/r/roll-1/v2/chat/completions", { path: "roll-1", route: { kind: "unknown", dialect: "openai-chat" } }],
    ["/r/roll-1/v1/chat/completions/x", { path: "roll-1", route: { kind: "unknown", dialect: "openai-chat" } }],
    ["/v1/chat/completions", { route: { kind: "unknown", dialect: "openai-chat" } }],
  ])("POST %s", (url, expected) => {
    expect(parsePath("POST", url)).toEqual(expected);
  });

  it("a GET of a call endpoint is not a call; probes and models are GETs", () => {
    expect(parsePath("GET", "/r/roll-1/v1/chat/completions")).toEqual({ path: "roll-1", route: { kind: "unknown", dialect: "openai-chat" } });
    expect(parsePath("GET", "/r/roll-1/v1/models")).toEqual({ path: "roll-1", route: { kind: "models" } });
    expect(parsePath("HEAD", "/r/roll-1/")).toEqual({ path: "roll-1", route: { kind: "probe" } });
    expect(parsePath("POST", "/r/roll-1/mcp/files")).toEqual({ path: "roll-1", route: { kind: "mcp", name: "files" } });
  });
});
