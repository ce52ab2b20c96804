/** Check definitions by `type`. */
import { commandCheck } from "./command-check.js";
import type { CheckDefinition } from "./context.js";
import { csvCheck } from "./csv-check.js";
import { fileChecks } from "./file-checks.js";
import { mcpCallCheck } from "./mcp-call-check.js";
import { jsonEqualsCheck, structuredChecks } from "./structured-checks.js";
import { textChecks } from "./text-checks.js";
import { valueChecks } from "./value-checks.js";

const definitions: CheckDefinition[] = [
  ...fileChecks,
  ...textChecks,
  ...structuredChecks,
  jsonEqualsCheck,
  csvCheck,
  ...valueChecks,
  commandCheck,
  mcpCallCheck,
];

export const CHECKS: ReadonlyMap<string, CheckDefinition> = new Map(definitions.map((d) => [d.type, d]));

export function findCheck(type: string): CheckDefinition | undefined {
  return CHECKS.get(type);
}
