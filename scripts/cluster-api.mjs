// What the test cluster's node agent and sandbox controller share: their command-line flags, and
// requests to the API server with the cluster's token and CA (the answer's body parsed as JSON
// when it is JSON).
import { readFileSync } from "node:fs";
import { request } from "node:https";
import { join } from "node:path";

/** `--name value` pairs of argv. */
export function parseFlags(argv) {
  return Object.fromEntries(argv.reduce((pairs, a, i, all) => (a.startsWith("--") ? [...pairs, [a.slice(2), all[i + 1]]] : pairs), []));
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The cluster in `dir`: its server, token and CA, and api(method, path, body?, contentType?) → {status, body}. */
export function connectCluster(dir, serverUrl) {
  const server = new URL(serverUrl);
  const token = readFileSync(join(dir, "token"), "utf8").trim();
  const ca = readFileSync(join(dir, "pki", "ca.crt"));
  const api = (method, path, body, contentType = "application/json") =>
    new Promise((resolve, reject) => {
      const req = request(
        { host: server.hostname, port: server.port, method, path, ca, headers: { authorization: `Bearer ${token}`, accept: "application/json", ...(body ? { "content-type": contentType } : {}) } },
        (res) => {
          let text = "";
          res.on("data", (d) => (text += d));
          res.on("end", () => {
            let parsed;
            try {
              parsed = text ? JSON.parse(text) : undefined;
            } catch {
              parsed = text;
            }
            resolve({ status: res.statusCode, body: parsed });
          });
        },
      );
      req.on("error", reject);
      req.end(body ? JSON.stringify(body) : undefined);
    });
  return { server, token, ca, api };
}
