import { appendFileSync, writeFileSync } from "node:fs";
import type { Command } from "commander";
import { loadProxyConfig } from "../../compiler/index.js";
import { ModelLoadError, startProxy } from "../../runtime/index.js";
import { EXIT } from "../exit-codes.js";
import { errorCount, printJson, reportDiagnostics, say } from "../io.js";

interface ProxyFlags {
  config: string;
  port?: string;
  host?: string;
  key?: string;
  record?: string;
  json?: boolean;
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
  const config = await loadProxyConfig(flags.config);
  reportDiagnostics(config.diagnostics, false);
  if (!config.value || errorCount(config.diagnostics) > 0) return EXIT.failed;
  const key = flags.key ?? config.value.key;
  if (flags.record) writeFileSync(flags.record, "", { flag: "a" });
  let proxy: Awaited<ReturnType<typeof startProxy>>;
  try {
    proxy = await startProxy({
      model: config.value.model,
      host: flags.host ?? "127.0.0.1",
      port,
      sharedKey: key,
      keepRecords: false,
      onRecord: (record) => {
        if (flags.record) appendFileSync(flags.record, `${JSON.stringify(record)}\n`);
      },
    });
  } catch (err) {
    if (err instanceof ModelLoadError) {
      reportDiagnostics([{ ...err.diagnostic, file: flags.config, line: 1, column: 1 }], false);
      return EXIT.failed;
    }
    const e = err as NodeJS.ErrnoException;
    if (e.code === "EADDRINUSE" || e.code === "EACCES") {
      say(`reins proxy: cannot listen on ${flags.host}:${port}: ${e.code}`);
      return EXIT.failed;
    }
    throw err;
  }
  const baseUrl = `${proxy.url}/r/<rollout-id>`;
  if (flags.json) printJson({ url: proxy.url, baseUrl, key });
  else process.stdout.write(`${baseUrl}\napi-key: ${key}\n`);
  say(
    `reins proxy: serving model ${config.value.model.name} (${config.value.model.engine.type} engine). ` +
      `Replace <rollout-id> with any id; harnesses append /v1/...; send the key as x-api-key or Authorization: Bearer. Ctrl-C stops.`,
  );
  const code = await new Promise<number>((resolve) => {
    process.once("SIGTERM", () => resolve(EXIT.ok));
    process.once("SIGINT", () => resolve(EXIT.interrupted));
  });
  await proxy.close();
  return code;
}
