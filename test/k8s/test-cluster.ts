/**
 * The test cluster for one test file (scripts/test-cluster.sh): started before its tests with a
 * directory and port of its own, stopped after them. `get` reads the API with the admin token;
 * `watch` follows a collection's events (from now; ended by the function it returns);
 * `leftovers` lists what runs left behind (agent-sandbox objects too), waiting for the garbage collector.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { request } from "node:https";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll } from "vitest";

export interface TestCluster {
  kubeconfig: string;
  /** The cluster's state directory (logs/pods/<namespace>_<pod>.log: a Job pod's command output). */
  dir: string;
  get(path: string): Promise<any>;
  del(path: string): Promise<number>;
  watch(path: string, onEvent: (type: string, object: any) => void): Promise<() => void>;
  leftovers(): Promise<string[]>;
}

export function useTestCluster(): TestCluster {
  const dir = mkdtempSync(join(tmpdir(), "reins-test-cluster-"));
  let port = "";
  const cluster: TestCluster = {
    kubeconfig: "",
    dir,
    get(path) {
      const token = readFileSync(join(dir, "token"), "utf8").trim();
      return new Promise((done, fail) => {
        const req = request(
          { host: "127.0.0.1", port, path, ca: readFileSync(join(dir, "pki", "ca.crt")), headers: { authorization: `Bearer ${token}` } },
          (res) => {
            let text = "";
            res.on("data", (d) => (text += d));
            res.on("end", () => done(JSON.parse(text)));
          },
        );
        req.on("error", fail);
        req.end();
      });
    },
    del(path) {
      const token = readFileSync(join(dir, "token"), "utf8").trim();
      return new Promise((done, fail) => {
        const req = request(
          { host: "127.0.0.1", port, path, method: "DELETE", ca: readFileSync(join(dir, "pki", "ca.crt")), headers: { authorization: `Bearer ${token}` } },
          (res) => {
            res.resume();
            res.on("end", () => done(res.statusCode ?? 0));
          },
        );
        req.on("error", fail);
        req.end();
      });
    },
    async watch(path, onEvent) {
      const list = await cluster.get(path);
      const token = readFileSync(join(dir, "token"), "utf8").trim();
      const sep = path.includes("?") ? "&" : "?";
      let rv = list.metadata.resourceVersion;
      let stopped = false;
      let current: ReturnType<typeof request> | undefined;
      // Re-established from the last resourceVersion whenever the server ends it.
      const open = () => {
        if (stopped) return;
        current = request(
          {
            host: "127.0.0.1",
            port,
            path: `${path}${sep}watch=1&resourceVersion=${rv}`,
            ca: readFileSync(join(dir, "pki", "ca.crt")),
            headers: { authorization: `Bearer ${token}` },
          },
          (res) => {
            let buffer = "";
            res.on("data", (d) => {
              buffer += d;
              let nl;
              while ((nl = buffer.indexOf("\n")) >= 0) {
                const e = JSON.parse(buffer.slice(0, nl));
                buffer = buffer.slice(nl + 1);
                if (e.object?.metadata?.resourceVersion) rv = e.object.metadata.resourceVersion;
                onEvent(e.type, e.object);
              }
            });
            res.on("end", open);
          },
        );
        current.on("error", () => undefined);
        current.end();
      };
      open();
      return () => {
        stopped = true;
        current?.destroy();
      };
    },
    async leftovers() {
      const paths = [
        "/api/v1/namespaces/default/pods?labelSelector=reins.dev%2Frun",
        "/api/v1/namespaces/default/configmaps?labelSelector=reins.dev%2Frun",
        "/api/v1/namespaces/default/services?labelSelector=reins.dev%2Frun",
        "/apis/batch/v1/namespaces/default/jobs?labelSelector=reins.dev%2Frun",
        "/apis/networking.k8s.io/v1/namespaces/default/networkpolicies?labelSelector=reins.dev%2Frun",
        "/api/v1/namespaces/default/persistentvolumeclaims?labelSelector=app.kubernetes.io%2Fmanaged-by%3Dreins",
        "/api/v1/persistentvolumes",
        "/apis/agents.x-k8s.io/v1beta1/namespaces/default/sandboxes?labelSelector=reins.dev%2Frun",
        "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/default/sandboxclaims?labelSelector=reins.dev%2Frun",
        "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/default/sandboxwarmpools?labelSelector=reins.dev%2Frun",
        "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/default/sandboxtemplates?labelSelector=reins.dev%2Frun",
      ];
      let names: string[] = [];
      for (let i = 0; i < 40; i++) {
        const lists = await Promise.all(paths.map((p) => cluster.get(p)));
        names = lists.flatMap((l, j) => (l.items ?? []).map((o: any) => `${paths[j]!.split("?")[0]!.split("/").at(-1)}/${o.metadata.name}`));
        if (names.length === 0) return names;
        await new Promise((r) => setTimeout(r, 500));
      }
      return names;
    },
  };
  const env = () => ({ ...process.env, REINS_TEST_CLUSTER_DIR: dir, REINS_TEST_CLUSTER_PORT: port });
  beforeAll(async () => {
    port = String(await freePorts(6));
    const out = execFileSync("bash", ["scripts/test-cluster.sh", "start"], { env: env(), encoding: "utf8", timeout: 1_800_000 });
    cluster.kubeconfig = out.trim().split("\n").at(-1)!;
  }, 1_800_000);
  afterAll(() => {
    execFileSync("bash", ["scripts/test-cluster.sh", "stop"], { env: env(), timeout: 120_000 });
    rmSync(dir, { recursive: true, force: true });
  }, 180_000);
  return cluster;
}

/** The first of `n` consecutive loopback ports free now (the cluster's servers listen on them). */
async function freePorts(n: number): Promise<number> {
  const free = (p: number) =>
    new Promise<boolean>((done) => {
      const server = createServer();
      server.once("error", () => done(false));
      server.listen(p, "127.0.0.1", () => server.close(() => done(true)));
    });
  for (;;) {
    const base = 20000 + Math.floor(Math.random() * 2000) * 10;
    let ok = true;
    for (let i = 0; i < n && ok; i++) ok = await free(base + i);
    if (ok) return base;
  }
}
