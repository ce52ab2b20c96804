/**
 * Where a secret could still leave: a `${VAR}` outside a Harness's env, whose name the secret
 * heuristic misses (DB_PASS, DATABASE_URL, SESSION_COOKIE), would have its value written into
 * plan.json; and an API key sent to an endpoint that redirects would follow the redirect to
 * another host. The first is refused at compile time with a position, the value printed nowhere;
 * the second is never followed: the endpoint's 3xx is an error naming it, and the other host
 * receives nothing.
 */
import { existsSync, writeFileSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ResolvedHostedApi } from "../../src/compiler/index.js";
import { askHostedText } from "../../src/runtime/engines/hosted-api.js";
import { buildHeaders, postJson } from "../../src/runtime/engines/http.js";
import { reins } from "../reins-cli.js";
import { tempDir } from "../temp.js";

const VALUES = { DB_PASS: "hunter2-Zq81x", DATABASE_URL: "postgres://app:pw-77Kx@db.internal:5432/prod", SESSION_COOKIE: "sess-4f0c1a9e77" };

describe("a ${VAR} outside a Harness's env", () => {
  it("is refused with its position, and its value is printed and written nowhere", () => {
    const dir = tempDir("reins-vars-");
    const file = join(dir, "task.yaml");
    writeFileSync(
      file,
      `apiVersion: reins/v1alpha1
kind: Task
metadata: {name: leaky}
spec:
  instruction: "Connect to \${DATABASE_URL} as app/\${DB_PASS}"
  workspace:
    files:
      - {path: cookie.txt, content: "\${SESSION_COOKIE}"}
  verifier:
    checks:
      - commandExitsZero: 'test -n "$\${HOME}"'
  timeoutSeconds: 60
`,
    );
    const out = join(dir, "plan.json");
    const r = reins(["plan", file, "--out", out], { env: VALUES });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/task\.yaml:5:\d+/);
    expect(r.stderr).toMatch(/task\.yaml:8:\d+/);
    expect(r.stderr.match(/VariableOutsideHarnessEnv/g)?.length).toBeGreaterThanOrEqual(3);
    expect(r.stderr).not.toMatch(/\n\s+at /);
    for (const v of Object.values(VALUES)) expect(r.stdout + r.stderr).not.toContain(v);
    expect(existsSync(out)).toBe(false);
  });

  it("in an endpoint is substituted, but not when the endpoint then carries credentials", () => {
    const dir = tempDir("reins-vars-");
    const model = (baseUrl: string) => `apiVersion: reins/v1alpha1
kind: Model
metadata: {name: remote}
spec:
  tokenizer: {type: qwen3}
  engine: {type: openai-compatible, baseUrl: "${baseUrl}", model: qwen}
`;
    const validate = (text: string, env: Record<string, string>) => {
      const file = join(dir, "model.yaml");
      writeFileSync(file, text);
      return reins(["validate", file], { env });
    };
    expect(validate(model("${REINS_TEST_VLLM_URL}"), { REINS_TEST_VLLM_URL: "http://vllm.internal:8000/v1" }).code).toBe(0);
    const withPass = validate(model("http://app:${DB_PASS}@vllm.internal:8000/v1"), VALUES);
    expect(withPass.code).toBe(1);
    expect(withPass.stderr).toContain("CredentialsInEndpoint");
    const withUrl = validate(model("${DATABASE_URL}"), VALUES);
    expect(withUrl.code).toBe(1);
    expect(withUrl.stderr).toContain("CredentialsInEndpoint");
    for (const r of [withPass, withUrl]) for (const v of Object.values(VALUES)) expect(r.stdout + r.stderr).not.toContain(v);
  });
});

/** A server on loopback; `seen` holds the headers of every request it received. */
async function listen(handler: (req: any, res: any) => void): Promise<{ server: Server; url: string; seen: IncomingHttpHeaders[] }> {
  const seen: IncomingHttpHeaders[] = [];
  const server = createServer((req, res) => {
    seen.push(req.headers);
    req.resume();
    req.on("end", () => handler(req, res));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

describe("an API key and a redirect", () => {
  const KEY = "sk-ant-redirect-test-5d1e0c";
  let other: Awaited<ReturnType<typeof listen>>;
  let redirector: Awaited<ReturnType<typeof listen>>;
  beforeAll(async () => {
    other = await listen((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ content: [{ type: "text", text: "stolen" }], choices: [{ message: { content: "stolen" } }] }));
    });
    // "localhost" is another origin than "127.0.0.1": fetch's own rule (drop Authorization across origins) does not cover x-api-key.
    const target = other.url.replace("127.0.0.1", "localhost");
    redirector = await listen((req, res) => {
      res.writeHead(307, { location: `${target}${req.url}` });
      res.end();
    });
  });
  afterAll(() => {
    other.server.close();
    redirector.server.close();
  });

  for (const api of ["anthropic-messages", "openai-chat"] as const) {
    it(`${api}: a hosted model's key is not sent on to where the endpoint redirects`, async () => {
      other.seen.length = 0;
      redirector.seen.length = 0;
      const hosted: ResolvedHostedApi = { api, model: "m", baseUrl: redirector.url, apiKeyEnv: "REINS_TEST_HOSTED_KEY", timeoutSeconds: 10 };
      const ask = askHostedText(hosted, { system: "s", user: "u", maxTokens: 8, temperature: 0 }, { REINS_TEST_HOSTED_KEY: KEY });
      await expect(ask).rejects.toThrow(/does not follow redirects/);
      expect(other.seen).toEqual([]);
      expect(redirector.seen.length).toBe(1);
    });
  }

  it("an engine's apiKeyEnv key is not sent on either", async () => {
    other.seen.length = 0;
    process.env.REINS_TEST_ENGINE_KEY = KEY;
    try {
      await expect(postJson(`${redirector.url}/v1/completions`, { prompt: "x" }, buildHeaders("REINS_TEST_ENGINE_KEY"))).rejects.toThrow(
        /does not follow redirects/,
      );
    } finally {
      delete process.env.REINS_TEST_ENGINE_KEY;
    }
    expect(other.seen).toEqual([]);
  });
});
