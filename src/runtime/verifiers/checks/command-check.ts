/** commandExitsZero: a command run in the sandbox, in the workspace, must exit 0. */
import { fail, pass, checkError, type CheckDefinition } from "./context.js";

const DEFAULT_TIMEOUT_SECONDS = 60;

function tail(s: string, lines = 3, max = 300): string {
  const t = s.trim().split("\n").slice(-lines).join(" | ");
  return t.length > max ? `…${t.slice(-max)}` : t;
}

function display(argv: string[]): string {
  const s = argv[0] === "sh" && argv[1] === "-c" && argv.length === 3 ? argv[2] : argv.join(" ");
  return s.length > 80 ? `${s.slice(0, 79)}…` : s;
}

export const commandCheck: CheckDefinition = {
  type: "commandExitsZero",
  label: (c) => `commandExitsZero ${display(c.command as string[])}`,
  async evaluate(c, ctx) {
    const argv = c.command as string[];
    if (!ctx.reader.exec) return checkError("ExecUnavailable", `this workspace (${ctx.reader.description}) cannot run commands`);
    const seconds = Math.min(3600, Math.max(1, (c.timeoutSeconds as number | undefined) ?? DEFAULT_TIMEOUT_SECONDS));
    const r = await ctx.reader.exec({
      argv,
      timeoutMs: seconds * 1000,
      maxOutputBytes: 64 * 1024,
      ...(ctx.options.hiddenDir !== undefined ? { hiddenDir: ctx.options.hiddenDir } : {}),
    });
    const cmd = display(argv);
    if (r.spawnError !== undefined) return checkError("CommandNotStarted", `\`${cmd}\` could not start: ${r.spawnError}`);
    if (r.timedOut) return fail(`\`${cmd}\` did not finish within ${seconds} s and was killed.`);
    if (r.exitCode === 0) return pass(`\`${cmd}\` exited 0.`);
    const why = r.exitCode === null ? `was killed by ${r.signal}` : `exited ${r.exitCode}`;
    const out = tail(r.stderr) || tail(r.stdout);
    return fail(`\`${cmd}\` ${why}${out ? `: ${out}` : ""}.`);
  },
};
