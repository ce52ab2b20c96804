/** Task selection: by name, family, labels or category. */
import { makeDiagnostic, type Diagnostic } from "../contract/diagnostics.js";
import { CODES } from "../contract/codes.js";
import type { World } from "../resolve/world.js";
import type { TaskSelectorSpec } from "../schema/experiment.js";
import { suggest, type TypedDocument } from "../schema/validate.js";
import { positionAt, type PathSegment } from "../source/yaml.js";

export function selectTasks(
  world: World,
  selectors: readonly TaskSelectorSpec[],
  doc: TypedDocument,
  at: PathSegment[],
): { names: string[]; diagnostics: Diagnostic[] } {
  const diagnostics: Diagnostic[] = [];
  const out: string[] = [];
  const seen = new Set<string>();
  const add = (n: string) => {
    if (!seen.has(n)) {
      seen.add(n);
      out.push(n);
    }
  };
  selectors.forEach((sel, i) => {
    const pos = (field: string) => positionAt(doc.source, [...at, i, field]);
    if ("name" in sel) {
      if (world.tasks.has(sel.name)) add(sel.name);
      else if (world.families.has(sel.name)) {
        const guess = sel.name;
        diagnostics.push(
          makeDiagnostic(
            "UnknownReference",
            pos("name"),
            `No Task named "${sel.name}"; there is a TaskFamily of that name.`,
            `Select it with {family: ${guess}}.`,
          ),
        );
      } else {
        const guess = suggest(sel.name, [...world.tasks.keys()].slice(0, 5000));
        diagnostics.push(
          makeDiagnostic("UnknownReference", pos("name"), `No Task named "${sel.name}".${guess ? ` Did you mean "${guess}"?` : ""}`, CODES.UnknownReference),
        );
      }
    } else if ("family" in sel) {
      const names = world.families.get(sel.family);
      if (names) names.forEach(add);
      else {
        const guess = suggest(sel.family, [...world.families.keys()]);
        diagnostics.push(
          makeDiagnostic(
            "UnknownReference",
            pos("family"),
            `No TaskFamily named "${sel.family}".${guess ? ` Did you mean "${guess}"?` : ""}`,
            CODES.UnknownReference,
          ),
        );
      }
    } else if ("labels" in sel) {
      const want = Object.entries(sel.labels);
      let n = 0;
      for (const [name, e] of world.tasks) {
        if (want.every(([k, v]) => e.value.labels[k] === v)) {
          add(name);
          n++;
        }
      }
      if (n === 0) diagnostics.push(makeDiagnostic("NoTasksSelected", pos("labels"), "No task has all of these labels.", CODES.NoTasksSelected, "warning"));
    } else {
      let n = 0;
      for (const [name, e] of world.tasks) {
        if (e.value.category === sel.category) {
          add(name);
          n++;
        }
      }
      if (n === 0)
        diagnostics.push(makeDiagnostic("NoTasksSelected", pos("category"), `No task has category "${sel.category}".`, CODES.NoTasksSelected, "warning"));
    }
  });
  return { names: out, diagnostics };
}
