import type { Command } from "commander";
import { resolve } from "node:path";
import { compileSynthesis, makeProblem } from "../../compiler/index.js";
import { runSynthesis, type SynthesisSummary } from "../../runtime/index.js";
import { EXIT } from "../exit-codes.js";
import { errorCount, printJson, PROJECT_ROOT_OPTION, projectRootOf, reportDiagnostics, say } from "../io.js";
import { renderProblems } from "../render/problems.js";
import { interruptible } from "../run-support.js";

export function register(program: Command): void {
  program
    .command("synth")
    .description("Ask a generator model for task families and keep those that pass every gate (reference passes, trivial agents fail).")
    .argument("<paths...>", "spec files or directories holding a Synthesis")
    .requiredOption("--out <dir>", "new or empty directory for the kept families and synth-report.json")
    .option("--target <name>", "the Synthesis to run when several are given")
    .option("--json", "print {candidates, kept, dropped, reverify} as JSON on stdout")
    .option("--quiet", "no progress on stderr")
    .option(...PROJECT_ROOT_OPTION)
    .action(async (paths: string[], opts: { out: string; target?: string; json?: boolean; quiet?: boolean; projectRoot?: string }) => {
      const compiled = compileSynthesis(paths, { ...projectRootOf(opts), ...(opts.target ? { target: opts.target } : {}) });
      reportDiagnostics(compiled.diagnostics, false);
      if (!compiled.value || errorCount(compiled.diagnostics) > 0) {
        process.exitCode = EXIT.failed;
        return;
      }
      const ac = interruptible();
      const summary = await runSynthesis({ synthesis: compiled.value, outDir: resolve(opts.out), signal: ac.signal, ...(opts.quiet ? {} : { log: say }) });
      if (opts.json) printJson(summary);
      else process.stdout.write(renderSummary(summary));
      const problem =
        summary.kept === 0
          ? makeProblem("NothingKept", `None of the ${summary.candidates} candidates passed the gates.`)
          : !summary.reverify.ok
            ? makeProblem(
                "ReverifyFailed",
                `Only ${summary.reverify.passed} of ${summary.reverify.tasks} kept tasks passed again (at least ${Math.ceil(summary.reverify.minPassRate * summary.reverify.tasks)} needed).`,
              )
            : undefined;
      if (problem) process.stderr.write(renderProblems([problem]));
      process.exitCode = problem ? EXIT.failed : ac.signal.aborted ? EXIT.interrupted : EXIT.ok;
    });
}

function renderSummary(s: SynthesisSummary): string {
  const dropped = Object.entries(s.dropped).map(([gate, n]) => `  ${gate.padEnd(15)} ${n}`);
  return [
    `${s.synthesis}: ${s.candidates} candidates from ${s.generator}, ${s.kept} kept`,
    ...(dropped.length > 0 ? ["dropped by gate:", ...dropped] : []),
    `re-verified: ${s.reverify.passed}/${s.reverify.tasks} tasks passed again`,
    `families: ${s.outDir}`,
    `report:   ${s.report}`,
    "",
  ].join("\n");
}
