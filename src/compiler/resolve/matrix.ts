/**
 * Matrix expansion with GitHub Actions semantics, and seeded parameter generation.
 * Pure functions.
 *  - cells = cartesian product of the axes, in declaration order;
 *  - `exclude`: a cell is removed when every key of an exclude entry matches it;
 *  - `include`: an entry is merged into every cell where it overwrites no original axis value;
 *    if it can be merged nowhere, it becomes a new cell.
 */
import { canonicalJson } from "../contract/hash.js";
import { MAX_MATRIX_COMPARISONS, MAX_TASKS, countValues } from "./limits.js";

export type Cell = Record<string, unknown>;

/** How large a matrix is, from its axis lengths and entry counts, before anything is expanded. */
export interface MatrixSize {
  /** Cells of the product of the axes. */
  product: number;
  /** At most this many cells after `include` (each entry may add one). */
  cells: number;
  /** `include`/`exclude` entries (weighed by their values) × product cells: the comparisons expansion makes. */
  comparisons: number;
}

export function measureMatrix(matrix: Record<string, unknown> | undefined): MatrixSize {
  if (!matrix) return { product: 1, cells: 1, comparisons: 0 };
  const { include, exclude, ...axes } = matrix as { include?: Cell[]; exclude?: Cell[] } & Record<string, unknown[]>;
  const names = Object.keys(axes);
  let product = names.length === 0 ? 0 : 1;
  for (const n of names) product *= (axes[n] as unknown[]).length;
  // Each entry is compared with each cell, key by key (canonical JSON for lists and maps): its size counts.
  let entries = 0;
  for (const e of [...(include ?? []), ...(exclude ?? [])]) entries += countValues(e, MAX_MATRIX_COMPARISONS);
  return { product, cells: product + (include?.length ?? 0), comparisons: entries * Math.max(product, 1) };
}

/**
 * `unusedExcludes`: indexes of `exclude` entries that removed no cell. `maxCells` bounds the cells
 * (measured before expanding: `tooLarge` and no cells when passed); the comparisons that
 * `include`/`exclude` make are bounded by MAX_MATRIX_COMPARISONS (`tooManyEntries`).
 */
export function expandMatrix(
  matrix: Record<string, unknown> | undefined,
  maxCells: number = MAX_TASKS,
): { cells: Cell[]; tooLarge: boolean; tooManyEntries: boolean; unusedExcludes: number[]; size: MatrixSize } {
  const size = measureMatrix(matrix);
  if (!matrix) return { cells: [{}], tooLarge: false, tooManyEntries: false, unusedExcludes: [], size };
  if (size.cells > maxCells) return { cells: [], tooLarge: true, tooManyEntries: false, unusedExcludes: [], size };
  if (size.comparisons > MAX_MATRIX_COMPARISONS) return { cells: [], tooLarge: false, tooManyEntries: true, unusedExcludes: [], size };
  const { include, exclude, ...axes } = matrix as { include?: Cell[]; exclude?: Cell[] } & Record<string, unknown[]>;
  const names = Object.keys(axes);
  let cells: Cell[] = names.length === 0 ? [] : [{}];
  for (const n of names) {
    const next: Cell[] = [];
    for (const c of cells) for (const v of axes[n] as unknown[]) next.push({ ...c, [n]: v });
    cells = next;
  }
  const used = new Set<number>();
  if (exclude && exclude.length > 0) {
    cells = cells.filter((c) => {
      const hit = exclude.findIndex((ex) => Object.entries(ex).every(([k, v]) => equal(c[k], v)));
      if (hit >= 0) used.add(hit);
      return hit < 0;
    });
  }
  const unusedExcludes = (exclude ?? []).map((_, i) => i).filter((i) => !used.has(i));
  const axisNames = new Set(names);
  const original = [...cells];
  for (const inc of include ?? []) {
    let merged = false;
    for (const c of original) {
      const conflicts = Object.entries(inc).some(([k, v]) => axisNames.has(k) && k in c && !equal(c[k], v));
      if (!conflicts) {
        // Merge only into cells that came from the product (original axis values are kept).
        Object.assign(c, Object.fromEntries(Object.entries(inc).filter(([k]) => !(axisNames.has(k) && k in c))));
        merged = true;
      }
    }
    if (!merged) cells.push({ ...inc });
  }
  return { cells, tooLarge: false, tooManyEntries: false, unusedExcludes, size };
}

export interface MatrixKeyProblem {
  list: "include" | "exclude";
  index: number;
  key: string;
  /** Closest allowed key, for a did-you-mean. */
  allowed: string[];
}

/**
 * Keys of `include`/`exclude` entries the matrix does not have (GitHub Actions semantics, with
 * declared parameters): an exclude entry may name only axes; an include entry may also add a
 * declared parameter to the cells it matches. Anything else is a typo that would do nothing (or
 * add a value no template can be checked against).
 */
export function unknownMatrixKeys(matrix: Record<string, unknown> | undefined, parameters: readonly string[]): MatrixKeyProblem[] {
  if (!matrix) return [];
  const { include, exclude, ...axes } = matrix as { include?: Cell[]; exclude?: Cell[] } & Record<string, unknown>;
  const axisNames = Object.keys(axes);
  const forInclude = [...new Set([...axisNames, ...parameters])];
  const out: MatrixKeyProblem[] = [];
  for (const [list, entries, allowed] of [
    ["exclude", exclude ?? [], axisNames],
    ["include", include ?? [], forInclude],
  ] as const) {
    entries.forEach((entry, index) => {
      for (const key of Object.keys(entry)) if (!allowed.includes(key)) out.push({ list, index, key, allowed: [...allowed] });
    });
  }
  return out;
}

function equal(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  return canonicalJson(a) === canonicalJson(b);
}

export interface Generator {
  name: string;
  pick?: unknown[];
  sample?: { from: unknown[]; count: number };
  int?: { min: number; max: number };
  float?: { min: number; max: number; decimals?: number };
  bool?: { p?: number };
  template?: string;
}

/** Generate one set of values; `renderTemplate` renders `template` generators over earlier values. */
export function generateValues(
  generators: readonly Generator[],
  random: () => number,
  base: Cell,
  renderTemplate: (source: string, ctx: Cell) => string,
): Cell {
  const out: Cell = { ...base };
  for (const g of generators) {
    if (g.pick) out[g.name] = g.pick[Math.floor(random() * g.pick.length)];
    else if (g.sample) {
      const pool = [...g.sample.from];
      const picked: unknown[] = [];
      for (let i = 0; i < Math.min(g.sample.count, pool.length); i++) {
        const j = Math.floor(random() * pool.length);
        picked.push(pool.splice(j, 1)[0]);
      }
      out[g.name] = picked;
    } else if (g.int) out[g.name] = g.int.min + Math.floor(random() * (g.int.max - g.int.min + 1));
    else if (g.float) {
      const d = g.float.decimals ?? 2;
      const v = g.float.min + random() * (g.float.max - g.float.min);
      out[g.name] = Number(v.toFixed(d));
    } else if (g.bool) out[g.name] = random() < (g.bool.p ?? 0.5);
    else if (g.template !== undefined) out[g.name] = renderTemplate(g.template, out);
  }
  return out;
}

/** Which single generator form a generator uses; more or fewer than one is a mistake. */
export function generatorForms(g: Generator): string[] {
  return (["pick", "sample", "int", "float", "bool", "template"] as const).filter((k) => g[k] !== undefined);
}
