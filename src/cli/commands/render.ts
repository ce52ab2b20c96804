import type { Command } from "commander";
import { stringify } from "yaml";
import { loadAndResolve, renderTasks } from "../../compiler/index.js";
import { EXIT } from "../exit-codes.js";
import { errorCount, printJson, PROJECT_ROOT_OPTION, projectRootOf, reportDiagnostics } from "../io.js";

export function register(program: Command): void {
  program
    .command("render")
    .description("Print the expanded Task documents (task families rendered) as YAML.")
    .argument("<paths...>", "spec files or directories")
    .option("--json", "print {ok, diagnostics, documents} as JSON")
    .option("--family <name>", "only tasks of this family")
    .option(...PROJECT_ROOT_OPTION)
    .action((paths: string[], opts: { json?: boolean; family?: string; projectRoot?: string }) => {
      const r = loadAndResolve(paths, projectRootOf(opts));
      const ok = errorCount(r.diagnostics) === 0;
      let docs = renderTasks(r.value.world);
      if (opts.family) {
        const names = new Set(r.value.world.families.get(opts.family) ?? []);
        docs = docs.filter((d) => names.has((d.metadata as { name: string }).name));
      }
      if (opts.json) printJson({ ok, diagnostics: r.diagnostics, documents: docs });
      else {
        reportDiagnostics(r.diagnostics, false);
        process.stdout.write(docs.map((d) => stringify(d, { lineWidth: 0 })).join("---\n"));
      }
      process.exitCode = ok ? EXIT.ok : EXIT.failed;
    });
}
