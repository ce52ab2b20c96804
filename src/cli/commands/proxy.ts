import type { Command } from "commander";
import { DiagnosticsError, loadProxyConfig, ReinsError } from "../../compiler/index.js";
import { startProxy } from "../../runtime/index.js";
import { EXIT } from "../exit-codes.js";
import { errorCount, printJson, PROJECT_ROOT_OPTION, projectRootOf, reportDiagnostics, say, writeOutputFile } from "../io.js";

interface ProxyFlags {
  config: string;
  port?: string;
  host?: string;
  key?: string;
  record?: string;
  json?: boolean;
  projectRoot?: string;
}

export function register(program: Command): void {
  program
    .command("proxy")
    .description("Serve a Model through the proxy (all three API dialects) until interrupted.")
    .requiredOption("--config <file>", "YAML file with one kind: Model document")
    .option("--port <n>", "port to listen on (default: a free one)")
    .option("--host <addr>", "address to listen on", "127.0.0.1")
    .option("--key <key>", "API key clients must send (default: REINS_PROXY_KEY or a generated one)")
    .option("--record <file>", "append one JSON line per model call to this file")
    .option("--json", "print {url, baseUrl, key} as JSON on stdout")
    .option(...PROJECT_ROOT_OPTION)
    .action(async (flags: ProxyFlags) => {
      process.exitCode = await runProxy(flags);
    });
}

async function runProxy(flags: ProxyFlags): Promise<number> {
  const port = flags.port === undefined ? 0 : Number(flags.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    say(`reins proxy: --port must be an integer between 0 and 65535, got ${JSON.stringify(flags.port)}`);
    return EXIT.usage;
  }
  const config = await loadProxyConfig(flags.config, projectRootOf(flags));
  if (!config.value || errorCount(config.diagnostics) > 0) throw new DiagnosticsError(config.diagnostics);
  reportDiagnostics(config.diagnostics, false);
  const key = flags.key ?? config.value.key;
  const record = flags.record;
  if (record) writeOutputFile(record, "", { flag: "a" });
  let proxy: Awaited<ReturnType<typeof startProxy>>;
  try {
    proxy = await startProxy({
      model: config.value.model,
      host: flags.host ?? "127.0.0.1",
      port,
      sharedKey: key,
      keepRecords: false,
      ...(flags.record ? { recordFile: flags.record } : {}),
    });
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e?.code === "EADDRINUSE" || e?.code === "EACCES" || e?.code === "EADDRNOTAVAIL") {
      throw new ReinsError(
        "PortUnavailable",
        `Cannot listen on ${flags.host}:${port}: ${e.code === "EADDRINUSE" ? "the port is in use" : e.code === "EACCES" ? "permission denied" : "the address is not on this machine"}.`,
        undefined,
        { cause: err },
      );
    }
    throw err;
  }
  const baseUrl = `${proxy.url}/r/<rollout-id>`;
  if (flags.json) printJson({ url: proxy.url, baseUrl, key });
  else process.stdout.write(`${baseUrl}\napi-key: ${key}\n`);
  const processes = proxy.processIds?.length ?? 1;
  say(
    `reins proxy: serving model ${config.value.model.name} (${config.value.model.engine.type} engine${processes > 1 ? `, ${processes} processes` : ""}). ` +
      `Replace <rollout-id> with any id; harnesses append /v1/...; send the key as x-api-key or Authorization: Bearer. Ctrl-C stops.`,
  );
  const code = await new Promise<number>((resolve) => {
    process.once("SIGTERM", () => resolve(EXIT.ok));
    process.once("SIGINT", () => resolve(EXIT.interrupted));
  });
  await proxy.close();
  return code;
}
