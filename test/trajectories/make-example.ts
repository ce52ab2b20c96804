/**
 * Writes the call records of a demo rollout (JSON lines) to the given path: a Claude-Code-shaped
 * session with a 500 retried byte-identically, a stream cut and resumed, a two-call subagent and
 * a compaction call. Used to draw the tree picture in src/runtime/trajectories/README.md:
 *   node --import tsx test/trajectories/make-example.ts /tmp/demo.jsonl
 *   node --import tsx test/trajectories/cli-entry.ts trajectories /tmp/demo.jsonl --svg OUT.svg --rollout demo
 */
import { writeFileSync } from "node:fs";
import { RolloutBuilder, seededRng } from "./synthetic.js";

const b = new RolloutBuilder("demo", seededRng(2026));
const system = b.tokens(3000);
let h = [...system, ...b.tokens(60)];
const turn = (completion: number, tool: number) => {
  h = [...h, ...b.call(h, b.tokens(completion)), ...b.tokens(tool)];
};
turn(90, 400);
b.call(h, b.tokens(70), { error: { kind: "engine", message: "HTTP 500" } });
turn(85, 600);
// Agent tool: a subagent with its own system prompt (shares only the first token).
let s = [...system.slice(0, 1), ...b.tokens(1200), ...b.tokens(80)];
s = [...s, ...b.call(s, b.tokens(60), { callClass: "subagent" }), ...b.tokens(300)];
b.call(s, b.tokens(120), { callClass: "subagent" });
turn(40, 250);
// Stream cut after 55 of 140 tokens; the harness keeps the finished part and asks to resume.
const cut = b.call(h, b.tokens(140), { finishReason: "aborted", error: { kind: "client-disconnect", message: "stream cut" } });
h = [...h, ...cut.slice(0, 55), ...b.tokens(45)];
turn(110, 300);
b.call([...h, ...b.tokens(40)], b.tokens(200), { callClass: "compaction" });
b.call(h, b.tokens(30));

const out = process.argv[2];
if (!out) {
  process.stderr.write("usage: make-example.ts OUT.jsonl\n");
  process.exitCode = 2;
} else {
  writeFileSync(out, `${b.records.map((r) => JSON.stringify(r)).join("\n")}\n`);
}
