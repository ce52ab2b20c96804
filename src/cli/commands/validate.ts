import type { Command } from "commander";
import { validateSpecs } from "../../compiler/index.js";
import { EXIT } from "../exit-codes.js";
import { errorCount, printJson, PROJECT_ROOT_OPTION, projectRootOf, reportDiagnostics, say } from "../io.js";

export function register(program: Command): void {
  program
    .command("validate")
    .description("Check spec files and report every problem with its position.")
    .argument("<paths...>", "spec files or directories")
    .option("--json", "print {ok, diagnostics} as JSON on stdout")
    .option(...PROJECT_ROOT_OPTION)
    .action((paths: string[], opts: { json?: boolean; projectRoot?: string }) => {
      const r = validateSpecs(paths, projectRootOf(opts));
      const ok = errorCount(r.diagnostics) === 0;
      if (opts.json) {
        printJson({ ok, diagnostics: r.diagnostics, tasks: r.value.world.tasks.size });
      } else {
        reportDiagnostics(r.diagnostics, false);
        if (ok) say(`ok: ${r.value.loaded.documents.length} document(s), ${r.value.world.tasks.size} task(s)`);
      }
      process.exitCode = ok ? EXIT.ok : EXIT.failed;
    });
}
