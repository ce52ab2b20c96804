import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Command } from "commander";
import { generateJsonSchemas, serializeSchema } from "../../compiler/index.js";
import { makeProblem } from "../../compiler/index.js";
import { EXIT } from "../exit-codes.js";
import { printJson, say, writeOutputFile } from "../io.js";
import { renderProblems } from "../render/problems.js";

export function register(program: Command): void {
  program
    .command("schema")
    .description("Write the JSON Schemas (draft-07) generated from the spec language.")
    .option("--out <dir>", "output directory", "schemas")
    .option("--check", "exit 1 if the files under --out differ from the generated ones")
    .option("--json", "print the list of files as JSON")
    .action((opts: { out: string; check?: boolean; json?: boolean }) => {
      const schemas = generateJsonSchemas();
      const stale: string[] = [];
      for (const s of schemas) {
        const file = join(opts.out, s.path);
        const text = serializeSchema(s.json);
        if (opts.check) {
          let current = "";
          try {
            current = readFileSync(file, "utf8");
          } catch {
            /* missing counts as stale */
          }
          if (current !== text) stale.push(file);
        } else {
          writeOutputFile(file, text);
        }
      }
      const files = schemas.map((s) => join(opts.out, s.path));
      if (opts.json) printJson({ ok: stale.length === 0, files, stale });
      else if (opts.check && stale.length > 0) {
        const problem = makeProblem(
          "SchemasStale",
          `${stale.length} schema file(s) differ from the spec language:\n  ${stale.join("\n  ")}`,
          `Regenerate them: reins schema --out ${opts.out}`,
        );
        process.stderr.write(renderProblems([problem]));
      } else if (opts.check) say("schemas are up to date");
      else say(`wrote ${files.length} schemas to ${opts.out}`);
      process.exitCode = stale.length === 0 ? EXIT.ok : EXIT.failed;
    });
}
