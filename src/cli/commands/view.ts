/**
 * `reins view RUN_DIR [RUN_DIR2]`: serve the run viewer (src/runtime/view) on loopback and print
 * its URL on stderr (with --json, `{url}` on stdout); Ctrl-C or SIGTERM stops it. Another address
 * (--host) needs --allow-remote, and then a warning says who can read the runs.
 */
import type { Command } from "commander";
import { ReinsError } from "../../compiler/index.js";
import { isLoopbackHost, startViewServer, type ViewHandle } from "../../runtime/index.js";
import { EXIT } from "../exit-codes.js";
import { printJson, say } from "../io.js";

interface ViewFlags {
  port?: string;
  host?: string;
  allowRemote?: boolean;
  json?: boolean;
}

export function register(program: Command): void {
  program
    .command("view")
    .description("Serve a web page over a run directory (live): curves, rollouts, prefix trees, tokens, verdicts; a second run to compare")
    .argument("<run>", "run directory (the --out of reins run or reins eval)")
    .argument("[run2]", "a second run directory, to compare with the first")
    .option("--port <n>", "port to listen on (0 picks a free one)", "0")
    .option("--host <address>", "address to listen on (other than loopback only with --allow-remote)", "127.0.0.1")
    .option("--allow-remote", "let --host be an address other than loopback: anyone who reaches it reads the runs, with no password")
    .option("--json", "print {url} as JSON on stdout")
    .action(async (run: string, run2: string | undefined, flags: ViewFlags) => {
      process.exitCode = await runView([run, ...(run2 ? [run2] : [])], flags);
    });
}

async function runView(runDirs: string[], flags: ViewFlags): Promise<number> {
  const port = Number(flags.port ?? "0");
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    say(`reins view: --port must be an integer between 0 and 65535, got ${JSON.stringify(flags.port)}`);
    return EXIT.usage;
  }
  const host = flags.host ?? "127.0.0.1";
  let view: ViewHandle;
  try {
    view = await startViewServer({ runDirs, host, port, allowRemote: flags.allowRemote === true });
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e?.code === "EADDRINUSE" || e?.code === "EACCES" || e?.code === "EADDRNOTAVAIL") {
      throw new ReinsError(
        "PortUnavailable",
        `Cannot listen on ${host}:${port}: ${e.code === "EADDRINUSE" ? "the port is in use" : e.code === "EACCES" ? "permission denied" : "the address is not on this machine"}.`,
        undefined,
        { cause: err },
      );
    }
    throw err;
  }
  if (!isLoopbackHost(host)) {
    const wildcard = host === "0.0.0.0" || host === "::" || host === "[::]";
    say(
      `reins view: warning: listening on ${host} (--allow-remote): anyone who can reach ${wildcard ? "this machine" : host} on port ${view.port} can read these runs ` +
        `(prompts, completions, harness output, workspace diffs); there is no password${wildcard ? ", and any Host header is accepted" : ""}. Use loopback and an SSH tunnel to keep them private.`,
    );
  }
  if (flags.json) printJson({ url: view.url });
  say(`reins view: ${view.url}  (${runDirs.join(" vs ")}; Ctrl-C stops)`);
  const code = await new Promise<number>((resolve) => {
    process.once("SIGTERM", () => resolve(EXIT.ok));
    process.once("SIGINT", () => resolve(EXIT.interrupted));
  });
  await view.close();
  return code;
}
