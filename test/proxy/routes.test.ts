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

  it("never throws: a model id with a malformed percent-escape is a bad path (400), a well-formed one is decoded", () => {
    for (const url of ["/r/roll-1/v1/models/%E0%A4%A", "/v1/models/%zz", "/models/%", "/r/%E0%A4%A/v1/models/a%2"]) {
      const { route } = parsePath("GET", url);
      expect(route, url).toMatchObject({ kind: "bad-path", dialect: "openai-chat", message: expect.stringContaining("not valid percent-encoding") });
    }
    expect(parsePath("GET", "/r/roll-1/v1/models/qwen%2Ftiny")).toEqual({ path: "roll-1", route: { kind: "models", id: "qwen/tiny" } });
    for (const method of ["GET", "POST", "HEAD", "PUT"])
      for (const url of ["/r/%E0%A4%A/v1/models", "/r/%/mcp/x", "/%zz", "/r/%zz/%zz/%zz"]) expect(() => parsePath(method, url)).not.toThrow();
  });
});
