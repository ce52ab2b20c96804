/** The proxy path: host-side socket bridge, and both in-sandbox forwarders (socat and node). */
import net from "node:net";
import path from "node:path";
import { rmSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { LocalSandboxProvider } from "../../src/runtime/sandbox/local/provider.js";
import { fetchScript, startFakeProxy, tempDir } from "./helpers.js";

const root = tempDir("reins-proxy-path-");

afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("socket bridge", () => {
  it("pipes a Unix socket to the proxy's TCP port and counts connections", async () => {
    const proxy = await startFakeProxy(path.join(root, "bridge.sock"));
    try {
      const reply = await new Promise<string>((resolve, reject) => {
        const c = net.connect(proxy.bridge.path);
        let data = "";
        c.on("data", (d) => (data += d.toString()));
        c.on("end", () => resolve(data));
        c.on("error", reject);
        c.end("GET /ping HTTP/1.0\r\n\r\n");
      });
      expect(reply).toContain("proxy-ok /ping");
      expect(proxy.bridge.connections).toBe(1);
    } finally {
      await proxy.close();
    }
  });
});

describe.each(["socat", "node"] as const)("in-sandbox forwarder (%s)", (forwarder) => {
  it("serves the proxy on the sandbox's 127.0.0.1 port", async () => {
    const provider = new LocalSandboxProvider({ rootDir: path.join(root, forwarder), forwarder });
    const proxy = await startFakeProxy(path.join(root, `${forwarder}.sock`));
    try {
      const box = await provider.create({ id: `fwd-${forwarder}`, runId: "proxy-path", proxySocketPath: proxy.bridge.path, proxyPort: 18123 });
      expect(box.proxyUrl).toBe("http://127.0.0.1:18123");
      const first = await box.exec(fetchScript(`${box.proxyUrl}/r/one`));
      const second = await box.exec(fetchScript(`${box.proxyUrl}/r/two`));
      expect(first.stdout.trim()).toBe("BODY proxy-ok /r/one");
      expect(second.stdout.trim()).toBe("BODY proxy-ok /r/two");
      expect(proxy.requests).toEqual(["/r/one", "/r/two"]);
    } finally {
      await provider.close();
      await proxy.close();
    }
  });
});
