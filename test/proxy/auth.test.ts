import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CallRecord } from "../../src/runtime/records/index.js";
import type { ProxyHandle } from "../../src/runtime/proxy/api.js";
import { startProxy } from "../../src/runtime/proxy/server.js";
import { httpCall, scriptedModel } from "./helpers.js";

const chatBody = { model: "m", messages: [{ role: "user", content: "hi" }] };
const msgBody = { model: "m", max_tokens: 100, messages: [{ role: "user", content: "hi" }] };
const respBody = { model: "m", input: "hi" };

describe("credentials and routes", () => {
  let proxy: ProxyHandle;
  const seen: CallRecord[] = [];
  beforeAll(async () => {
    proxy = await startProxy({ model: scriptedModel(Array.from({ length: 20 }, () => ({ text: "ok" }))), onRecord: (r) => seen.push(r) });
  });
  afterAll(() => proxy.close());

  it("refuses missing, wrong and other rollouts' keys with each dialect's 401 and records nothing", async () => {
    const a = proxy.registerRollout("auth-a");
    const b = proxy.registerRollout("auth-b", { apiKey: "key-of-b" });
    expect(b.apiKey).toBe("key-of-b");
    expect(a.apiKey).not.toBe(b.apiKey);
    const cases: [string, unknown, Record<string, string>][] = [
      [`${a.baseUrl}/v1/chat/completions`, chatBody, {}],
      [`${a.baseUrl}/v1/chat/completions`, chatBody, { authorization: "Bearer wrong" }],
      [`${a.baseUrl}/v1/chat/completions`, chatBody, { authorization: `Bearer ${b.apiKey}` }],
      [`${a.baseUrl}/v1/messages`, msgBody, { "x-api-key": b.apiKey }],
      [`${a.baseUrl}/v1/responses`, respBody, { authorization: "Bearer " }],
      [`${proxy.url}/r/not-registered/v1/chat/completions`, chatBody, { authorization: `Bearer ${a.apiKey}` }],
    ];
    for (const [url, body, headers] of cases) {
      const reply = await httpCall(url, { body, headers });
      expect(reply.status).toBe(401);
      const j = JSON.parse(reply.text);
      if (url.endsWith("/messages")) expect(j).toEqual({ type: "error", error: { type: "authentication_error", message: expect.any(String) } });
      else expect(j.error).toMatchObject({ type: "invalid_request_error", code: "invalid_api_key" });
    }
    expect(proxy.records("auth-a")).toHaveLength(0);
    expect(proxy.records("auth-b")).toHaveLength(0);
    expect(seen.filter((r) => r.rolloutId.startsWith("auth-"))).toHaveLength(0);
  });

  it("accepts x-api-key and Bearer, with or without /v1, and stops serving after unregister", async () => {
    const r = proxy.registerRollout("auth-ok");
    expect((await httpCall(`${r.baseUrl}/v1/messages`, { body: msgBody, headers: { "x-api-key": r.apiKey } })).status).toBe(200);
    expect((await httpCall(`${r.baseUrl}/messages`, { body: msgBody, headers: { authorization: `Bearer ${r.apiKey}` } })).status).toBe(200);
    expect((await httpCall(`${r.baseUrl}/chat/completions`, { body: chatBody, headers: { authorization: `bearer ${r.apiKey}` } })).status).toBe(200);
    expect((await httpCall(`${r.baseUrl}/responses`, { body: respBody, headers: { authorization: `Bearer ${r.apiKey}` } })).status).toBe(200);
    const recs = proxy.unregisterRollout("auth-ok");
    expect(recs.map((x) => [x.seq, x.dialect])).toEqual([
      [0, "anthropic-messages"],
      [1, "anthropic-messages"],
      [2, "openai-chat"],
      [3, "openai-responses"],
    ]);
    expect(seen.filter((x) => x.rolloutId === "auth-ok")).toHaveLength(4);
    expect((await httpCall(`${r.baseUrl}/v1/messages`, { body: msgBody, headers: { "x-api-key": r.apiKey } })).status).toBe(401);
  });

  it("answers probes, model lists and unknown routes", async () => {
    const r = proxy.registerRollout("auth-probe");
    expect((await httpCall(`${proxy.url}/`, { method: "HEAD" })).status).toBe(200);
    expect((await httpCall(`${r.baseUrl}`, { method: "HEAD" })).status).toBe(200);
    expect((await httpCall(`${r.baseUrl}/v1`, { method: "GET" })).status).toBe(200);
    const models = JSON.parse((await httpCall(`${r.baseUrl}/v1/models`, { headers: { authorization: `Bearer ${r.apiKey}` } })).text);
    expect(models.object).toBe("list");
    expect(models.data[0]).toMatchObject({ id: "qwen3-test", object: "model" });
    expect(JSON.parse((await httpCall(`${r.baseUrl}/v1/models/gpt-5-codex`)).text).id).toBe("gpt-5-codex");
    const unknown = await httpCall(`${r.baseUrl}/v1/embeddings`, { body: {}, headers: { authorization: `Bearer ${r.apiKey}` } });
    expect(unknown.status).toBe(404);
    expect(JSON.parse(unknown.text).error.message).toMatch(/no route/);
    expect(proxy.records("auth-probe")).toHaveLength(0);
  });

  it("reads gzip bodies, and records malformed bodies as bad requests", async () => {
    const r = proxy.registerRollout("auth-body");
    const ok = await httpCall(`${r.baseUrl}/v1/chat/completions`, { body: chatBody, gzip: true, headers: { authorization: `Bearer ${r.apiKey}` } });
    expect(ok.status).toBe(200);
    const bad = await httpCall(`${r.baseUrl}/v1/messages`, { raw: Buffer.from("{nope"), headers: { "x-api-key": r.apiKey } });
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.text).error.type).toBe("invalid_request_error");
    const noMessages = await httpCall(`${r.baseUrl}/v1/chat/completions`, { body: { model: "m" }, headers: { authorization: `Bearer ${r.apiKey}` } });
    expect(noMessages.status).toBe(400);
    const weird = await httpCall(`${r.baseUrl}/v1/chat/completions`, {
      raw: Buffer.from("x"),
      headers: { authorization: `Bearer ${r.apiKey}`, "content-encoding": "compress" },
    });
    expect(weird.status).toBe(415);
    const recs = proxy.records("auth-body");
    expect(recs.map((x) => x.error?.kind ?? "ok")).toEqual(["ok", "bad-request", "bad-request", "bad-request"]);
  });

  it("serves any rollout id with the shared key in shared-key mode", async () => {
    const shared = await startProxy({ model: scriptedModel([{ text: "ok" }]), sharedKey: "shared-secret" });
    try {
      const good = await httpCall(`${shared.url}/r/anything-1/v1/chat/completions`, { body: chatBody, headers: { authorization: "Bearer shared-secret" } });
      expect(good.status).toBe(200);
      const bad = await httpCall(`${shared.url}/r/anything-2/v1/chat/completions`, { body: chatBody, headers: { authorization: "Bearer other" } });
      expect(bad.status).toBe(401);
      expect(shared.records("anything-1")).toHaveLength(1);
      expect(shared.records()).toHaveLength(1);
    } finally {
      await shared.close();
    }
  });

  it("classifies calls with the rollout's callClasses", async () => {
    const r = proxy.registerRollout("auth-classes", {
      callClasses: [
        { class: "title", match: { noTools: true, systemPromptIncludes: "title generator" } },
        { class: "subagent", match: { headerEquals: { name: "X-Agent", value: "sub" } } },
      ],
    });
    const h = { authorization: `Bearer ${r.apiKey}` };
    await httpCall(`${r.baseUrl}/v1/chat/completions`, {
      body: {
        model: "m",
        messages: [
          { role: "system", content: "You are a title generator" },
          { role: "user", content: "x" },
        ],
      },
      headers: h,
    });
    await httpCall(`${r.baseUrl}/v1/chat/completions`, { body: chatBody, headers: { ...h, "x-agent": "sub" } });
    await httpCall(`${r.baseUrl}/v1/chat/completions`, { body: chatBody, headers: h });
    expect(proxy.records("auth-classes").map((x) => x.callClass)).toEqual(["title", "subagent", "main"]);
  });
});
