/** The csv check: well-formed, columns, row count, cell values (numbers within a tolerance). */
import type { ResolvedCheck } from "../../../compiler/contract/plan.js";
import { formatValue, numbersClose, toNumber } from "../compare.js";
import { parseCsv } from "../csv-parse.js";
import { fail, partial, pass, str, type CheckDefinition } from "./context.js";

interface CellSpec {
  row?: number;
  where?: Record<string, string>;
  column: string | number;
  equals: string | number;
  tolerance?: number;
}

function describeRow(cell: CellSpec): string {
  if (cell.row !== undefined) return `row ${cell.row}`;
  return `the row where ${Object.entries(cell.where ?? {})
    .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
    .join(", ")}`;
}

function checkCell(cell: CellSpec, header: string[] | null, data: string[][], tolerance: number | undefined): string | null {
  const col = typeof cell.column === "number" ? cell.column : header ? header.findIndex((h) => h.trim() === cell.column) : -1;
  if (col < 0) return `there is no column ${JSON.stringify(cell.column)}.`;
  const colIndex = (name: string) => (header ? header.findIndex((h) => h.trim() === name) : -1);
  let row: string[] | undefined;
  if (cell.row !== undefined) row = data[cell.row];
  else {
    const where = Object.entries(cell.where ?? {}).map(([k, v]) => [colIndex(k), v] as const);
    if (where.some(([i]) => i < 0)) return `${describeRow(cell)}: a column it names does not exist.`;
    row = data.find((r) => where.every(([i, v]) => (r[i] ?? "").trim() === v));
  }
  if (!row) return `${describeRow(cell)} does not exist.`;
  const raw = row[col];
  const where = `${describeRow(cell)}, column ${JSON.stringify(cell.column)}`;
  if (raw === undefined) return `${where} is missing.`;
  const expectedNumber = toNumber(cell.equals);
  if (expectedNumber !== null) {
    const n = toNumber(raw);
    if (n === null) return `${where} is ${formatValue(raw.trim())}, not a number (expected ${expectedNumber}).`;
    return numbersClose(n, expectedNumber, cell.tolerance ?? tolerance) ? null : `${where} is ${n}, expected ${expectedNumber}.`;
  }
  return raw.trim() === cell.equals ? null : `${where} is ${formatValue(raw.trim())}, expected ${formatValue(cell.equals)}.`;
}

export const csvCheck: CheckDefinition = {
  type: "csv",
  label: (c) => `csv ${str(c, "path")}`,
  async evaluate(c: ResolvedCheck, ctx) {
    const path = str(c, "path");
    const t = await ctx.readText(path);
    if (!t.ok) return fail(t.reason);
    const parsed = parseCsv(t.value, (c.delimiter as string | undefined) ?? ",");
    if (parsed.error) return fail(`${path} is not well-formed CSV: line ${parsed.error.line}: ${parsed.error.message}.`);
    const hasHeader = c.header !== false;
    const header = hasHeader ? (parsed.rows[0] ?? null) : null;
    const data = hasHeader ? parsed.rows.slice(1) : parsed.rows;
    if (hasHeader && !header) return fail(`${path} is empty (no header row).`);
    const failures: string[] = [];
    let total = 0;
    const assert = (problem: string | null) => {
      total++;
      if (problem) failures.push(problem);
    };

    const width = header ? header.length : (data[0]?.length ?? 0);
    const ragged = data.findIndex((r) => r.length !== width);
    assert(ragged === -1 ? null : `data row ${ragged} has ${data[ragged]?.length} fields, expected ${width}.`);

    const columns = c.columns as string[] | undefined;
    if (columns) {
      const names = (header ?? []).map((h) => h.trim());
      if (c.exactColumns === true) {
        assert(
          JSON.stringify(names) === JSON.stringify(columns)
            ? null
            : `the columns are ${formatValue(names, 120)}, expected exactly ${formatValue(columns, 120)}.`,
        );
      } else {
        const missing = columns.filter((col) => !names.includes(col));
        assert(
          missing.length === 0
            ? null
            : `column${missing.length > 1 ? "s" : ""} ${missing.map((m) => JSON.stringify(m)).join(", ")} ${missing.length > 1 ? "are" : "is"} missing.`,
        );
      }
    }
    const n = data.length;
    if (c.rowCount !== undefined) assert(n === c.rowCount ? null : `it has ${n} data rows, expected ${c.rowCount}.`);
    if (c.minRows !== undefined) assert(n >= (c.minRows as number) ? null : `it has ${n} data rows, expected at least ${c.minRows}.`);
    if (c.maxRows !== undefined) assert(n <= (c.maxRows as number) ? null : `it has ${n} data rows, expected at most ${c.maxRows}.`);
    for (const cell of (c.cells as CellSpec[] | undefined) ?? []) assert(checkCell(cell, header, data, c.tolerance as number | undefined));

    if (total === 1 && failures.length === 0) return pass(`${path} is well-formed CSV with ${n} data rows.`);
    return partial(
      total - failures.length,
      total,
      [`${path}: ${failures.slice(0, 3).join(" ")}${failures.length > 3 ? ` (${failures.length - 3} more problems)` : ""}`],
      `${path} has the expected columns, rows and cells.`,
    );
  },
};
