/**
 * An Algorithm document on its own (`reins trajectories --algorithm FILE`): read through the same
 * schema, defaults and checks as an Experiment's algorithm, diagnostics pointing into the file.
 */
import { hasErrors, makeDiagnostic, sortDiagnostics, type Diagnostic, type Result } from "./contract/diagnostics.js";
import { CODES } from "./contract/codes.js";
import type { ResolvedAlgorithm } from "./contract/plan.js";
import type { LoadOptions } from "./load.js";
import { loadAndResolve } from "./load-world.js";
import { resolveAlgorithm } from "./resolve/defaults.js";
import type { AlgorithmSpec } from "./schema/algorithm.js";
import { positionAt } from "./source/yaml.js";

/** The one `kind: Algorithm` document of `path` (other kinds in the file are checked, then ignored). */
export function loadAlgorithm(path: string, opts: Omit<LoadOptions, "builtins"> = {}): Result<ResolvedAlgorithm | undefined> {
  const r = loadAndResolve([path], { ...opts, builtins: false });
  const diagnostics: Diagnostic[] = [...r.diagnostics];
  if (hasErrors(diagnostics)) return { value: undefined, diagnostics };
  const found = [...r.value.world.algorithms.values()];
  if (found.length === 0) {
    const file = r.value.loaded.sources[0]?.file ?? path;
    diagnostics.push(makeDiagnostic("AlgorithmNotFound", { file, line: 1, column: 1 }, "The file has no `kind: Algorithm` document.", CODES.AlgorithmNotFound));
    return { value: undefined, diagnostics };
  }
  if (found.length > 1) {
    const second = found[1]!.doc;
    diagnostics.push(
      makeDiagnostic(
        "AlgorithmAmbiguous",
        positionAt(second.source, ["metadata", "name"]),
        `The file has ${found.length} Algorithm documents (${found.map((e) => e.doc.name).join(", ")}); one is read.`,
        CODES.AlgorithmAmbiguous,
      ),
    );
    return { value: undefined, diagnostics: sortDiagnostics(diagnostics) };
  }
  return { value: found[0]!.value, diagnostics };
}

/** The algorithm an Algorithm spec of only `type` resolves to: the compiler's defaults. */
export function defaultAlgorithm(type: AlgorithmSpec["type"] = "GRPO"): ResolvedAlgorithm {
  return resolveAlgorithm({ type });
}
