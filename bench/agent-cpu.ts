/**
 * The CPU one reins-agent process costs for a rollout of the quickstart's shape (a streamed tool
 * call of ~36 chunks, write_file, a streamed "done"), against a scripted model on loopback, beside
 * a bare `node -e 0` in the same rounds: the agent's CPU as a multiple of node's own start. Every
 * sandboxed rollout pays it once, so it bounds how many rollouts two cores run per second.
 * Variants alternate within each round so load affects them alike; CPU is the children's user +
 * system time as the shell that ran each one counts it (`times`, in 10 ms ticks: means are printed).
 *   node --import tsx bench/agent-cpu.ts [--rounds N]
 */
import { execFile, execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import os from "node:os";
import path from "node:path";
import { REINS_AGENT_PATH } from "../src/runtime/harness/launch.js";

const i = process.argv.indexOf("--rounds");
const rounds = i >= 0 ? Number(process.argv[i + 1]) : 20;

/** The model's two answers: a write_file call streamed a character at a time, then "done". */
function chunksFor(turn: number): object[] {
  if (turn > 0) return [{ choices: [{ delta: { content: "done" } }] }, { choices: [{ delta: {}, finish_reason: "stop" }] }];
  const args = JSON.stringify({ path: "answer.txt", content: "hi" });
  return [
    { choices: [{ delta: { tool_calls: [{ index: 0, id: "c1", type: "function", function: { name: "write_file", arguments: "" } }] } }] },
    ...[...args].map((ch) => ({ choices: [{ delta: { tool_calls: [{ index: 0, function: { arguments: ch } }] } }] })),
    { choices: [{ delta: {}, finish_reason: "tool_calls" }] },
  ];
}

const server = createServer((req, res) => {
  let body = "";
  req.on("data", (c) => (body += c));
  req.on("end", () => {
    const turn = (JSON.parse(body).messages as { role: string }[]).filter((m) => m.role === "assistant").length;
    res.writeHead(200, { "content-type": "text/event-stream" });
    for (const c of chunksFor(turn)) res.write(`data: ${JSON.stringify(c)}\n\n`);
    res.end("data: [DONE]\n\n");
  });
});
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
const port = (server.address() as { port: number }).port;
const workspace = mkdtempSync(path.join(os.tmpdir(), "reins-agent-cpu-"));

/** CPU seconds (user + system) of `command` run by sh, from the shell's `times`. */
async function cpuOf(command: string, env: NodeJS.ProcessEnv = {}): Promise<number> {
  const out = await new Promise<string>((resolve, reject) =>
    execFile("sh", ["-c", `${command} >/dev/null 2>&1; times`], { env: { PATH: process.env.PATH, ...env } }, (e, stdout) => (e ? reject(e) : resolve(stdout))),
  );
  // The second line of `times`: the children's user and system time, e.g. "0m0.110000s 0m0.010000s".
  const [user, sys] = out
    .trim()
    .split("\n")[1]!
    .split(/\s+/)
    .map((t) => {
      const m = /(\d+)m([\d.]+)s/.exec(t)!;
      return Number(m[1]) * 60 + Number(m[2]);
    });
  return user! + sys!;
}

/** The mean: `times` counts in clock ticks (10 ms), so a median would be one tick or the next. */
function mean(xs: number[]): number {
  return xs.reduce((a, b) => a + b, 0) / xs.length;
}

const agentEnv = { REINS_BASE_URL: `http://127.0.0.1:${port}/v1`, REINS_MODEL: "m", REINS_WORKSPACE: workspace, REINS_TOOLS: "write_file" };
const bare: number[] = [];
const agent: number[] = [];
for (let r = 0; r < rounds; r++) {
  bare.push(await cpuOf(`${process.execPath} -e 0`));
  agent.push(await cpuOf(`${process.execPath} ${REINS_AGENT_PATH} -- 'write hi'`, agentEnv));
}
execFileSync("test", ["-f", path.join(workspace, "answer.txt")]);
server.close();
rmSync(workspace, { recursive: true, force: true });
const ms = (s: number) => `${(s * 1000).toFixed(0)} ms`;
console.log(
  `reins-agent, one rollout (2 streamed calls, 1 tool): ${ms(mean(agent))} CPU (mean of ${rounds}, range ${ms(Math.min(...agent))}–${ms(Math.max(...agent))})`,
);
console.log(`bare node -e 0:                                     ${ms(mean(bare))} CPU`);
console.log(`ratio agent / bare node: ${(mean(agent) / mean(bare)).toFixed(2)}×`);
