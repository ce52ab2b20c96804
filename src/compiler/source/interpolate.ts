/**
 * `${VAR}` and `${VAR:-default}` interpolation on string scalars, positions kept.
 * Variables that look like secrets (names containing KEY, TOKEN, SECRET, PASSWORD, CREDENTIAL)
 * are never substituted: they stay references (`${NAME}`) in the plan and are resolved by the
 * runtime at the last moment. `$${...}` escapes a literal `${...}`.
 */
import { isScalar, visit, type Document, type Node } from "yaml";
import { makeDiagnostic, type Diagnostic, type Result, type SourcePosition } from "../contract/diagnostics.js";
import { CODES } from "../contract/codes.js";

const PATTERN = /(\$?)\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;
const SECRET_NAME = /(KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL)/i;

export function isSecretName(name: string): boolean {
  return SECRET_NAME.test(name);
}

export function interpolateString(
  input: string,
  env: NodeJS.ProcessEnv,
): { value: string; missing: string[] } {
  const missing: string[] = [];
  const value = input.replace(PATTERN, (whole, escape: string, name: string, def: string | undefined) => {
    if (escape === "$") return whole.slice(1);
    if (isSecretName(name)) return `\${${name}}`;
    const v = env[name];
    if (v !== undefined && v !== "") return v;
    if (def !== undefined) return def;
    missing.push(name);
    return whole;
  });
  return { value, missing };
}

export function interpolateDocument(
  doc: Document.Parsed,
  env: NodeJS.ProcessEnv,
  positionOf: (node: Node) => SourcePosition,
): Result<void> {
  const diagnostics: Diagnostic[] = [];
  visit(doc, {
    Scalar(_key, node) {
      if (!isScalar(node) || typeof node.value !== "string" || !node.value.includes("${")) return;
      const { value, missing } = interpolateString(node.value, env);
      for (const name of missing) {
        diagnostics.push(
          makeDiagnostic("UndefinedVariable", positionOf(node), `The environment variable ${name} is not set.`, CODES.UndefinedVariable),
        );
      }
      node.value = value;
    },
  });
  return { value: undefined, diagnostics };
}
