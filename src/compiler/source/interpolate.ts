/**
 * `${VAR}` and `${VAR:-default}` interpolation on string scalars, positions kept; `$${...}` escapes
 * a literal `${...}`.
 *
 * One exception: a Harness's `env` and `homeFiles` contents, and the `env` an Experiment or Evaluation adds
 * to a harness, are left exactly as written. Their references stay references in the plan (so a
 * secret never reaches plan.json or the run directory) and the runtime resolves them from its own
 * environment at the last moment, when it launches the harness (src/runtime/harness/launch-plan.ts),
 * with the same syntax.
 *
 * Everywhere else a value would be written into plan.json, so a reference is resolved at compile
 * time only where a deployment names its surroundings — an endpoint (`baseUrl`), an `image`, a
 * `namespace` — and is an error anywhere else (`VariableOutsideHarnessEnv`): a secret the name
 * heuristic misses (DB_PASS, DATABASE_URL, SESSION_COOKIE) cannot reach the plan through an
 * instruction, a command or a file. Even there a variable whose name looks like a secret (KEY, TOKEN,
 * SECRET, PASSWORD, CREDENTIAL) is an error, and so is an endpoint whose value, once substituted,
 * carries credentials (user:password@ or a query).
 */
import { isMap, isPair, isScalar, isSeq, type Document, type Node } from "yaml";
import { makeDiagnostic, type Diagnostic, type Result, type SourcePosition } from "../contract/diagnostics.js";
import { CODES } from "../contract/codes.js";

const PATTERN = /(\$?)\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;
const SECRET_NAME = /(KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL)/i;

export function isSecretName(name: string): boolean {
  return SECRET_NAME.test(name);
}

/** Substitute every reference; `missing` lists unset variables without a default, `secrets` secret-looking names (left as written). */
export function interpolateString(input: string, env: NodeJS.ProcessEnv): { value: string; missing: string[]; secrets: string[] } {
  const missing: string[] = [];
  const secrets: string[] = [];
  const value = input.replace(PATTERN, (whole, escaped: string, name: string, def: string | undefined) => {
    if (escaped === "$") return whole.slice(1);
    if (isSecretName(name)) {
      secrets.push(name);
      return whole;
    }
    const v = env[name];
    if (v !== undefined && v !== "") return v;
    if (def !== undefined) return def;
    missing.push(name);
    return whole;
  });
  return { value, missing, secrets };
}

type Path = (string | number)[];

/** Keys whose values may name a variable resolved at compile time (the deployment's surroundings). */
const COMPILE_TIME_KEYS = new Set(["baseUrl", "image", "namespace"]);

/** The names of the references in `input` (escaped `$${...}` left out). */
function referencesIn(input: string): string[] {
  return [...input.matchAll(PATTERN)].filter((m) => m[1] !== "$").map((m) => m[2]!);
}

/** A URL with user:password@ or a query string. */
function carriesCredentials(url: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*@/i.test(url) || /\?./.test(url);
}

/** Paths (per kind; `*` matches any key or index) whose strings stay uninterpolated references. */
const KEPT_AS_REFERENCES: Record<string, Path[]> = {
  Harness: [
    ["spec", "env"],
    ["spec", "homeFiles", "*", "content"],
  ],
  Experiment: [["spec", "harnesses", "*", "env"]],
  Evaluation: [["spec", "harnesses", "*", "env"]],
};

function keptAt(kind: unknown, path: Path): boolean {
  const prefixes = typeof kind === "string" ? KEPT_AS_REFERENCES[kind] : undefined;
  return (prefixes ?? []).some((prefix) => prefix.length <= path.length && prefix.every((seg, i) => seg === "*" || seg === path[i]));
}

export function interpolateDocument(doc: Document.Parsed, env: NodeJS.ProcessEnv, positionOf: (node: Node) => SourcePosition): Result<void> {
  const diagnostics: Diagnostic[] = [];
  const kind = isMap(doc.contents) ? doc.contents.get("kind") : undefined;
  const visitScalar = (node: unknown, path: Path) => {
    if (!isScalar(node) || typeof node.value !== "string" || !node.value.includes("${")) return;
    if (keptAt(kind, path)) return;
    const key = path.at(-1);
    if (typeof key !== "string" || !COMPILE_TIME_KEYS.has(key)) {
      for (const name of referencesIn(node.value)) {
        diagnostics.push(
          makeDiagnostic(
            "VariableOutsideHarnessEnv",
            positionOf(node),
            `\${${name}} here would write its value into plan.json.`,
            CODES.VariableOutsideHarnessEnv,
          ),
        );
      }
      node.value = node.value.replace(PATTERN, (whole, escaped: string) => (escaped === "$" ? whole.slice(1) : whole));
      return;
    }
    const { value, missing, secrets } = interpolateString(node.value, env);
    if (key === "baseUrl" && referencesIn(node.value).length > 0 && secrets.length === 0 && carriesCredentials(value)) {
      diagnostics.push(
        makeDiagnostic(
          "CredentialsInEndpoint",
          positionOf(node),
          `This endpoint, once its variables are substituted, carries credentials (user:password@ or a query).`,
          CODES.CredentialsInEndpoint,
        ),
      );
      return;
    }
    for (const name of missing) {
      diagnostics.push(makeDiagnostic("UndefinedVariable", positionOf(node), `The environment variable ${name} is not set.`, CODES.UndefinedVariable));
    }
    for (const name of secrets) {
      diagnostics.push(
        makeDiagnostic(
          "SecretOutsideHarnessEnv",
          positionOf(node),
          `\${${name}} looks like a secret; here its value would be written into the plan.`,
          CODES.SecretOutsideHarnessEnv,
        ),
      );
    }
    node.value = value;
  };
  const walk = (node: unknown, path: Path, seen: Set<unknown>) => {
    if (node === null || node === undefined || seen.has(node)) return;
    seen.add(node);
    if (isMap(node)) {
      for (const pair of node.items) {
        if (!isPair(pair)) continue;
        visitScalar(pair.key, path);
        const key = isScalar(pair.key) ? String(pair.key.value) : "?";
        walk(pair.value, [...path, key], seen);
      }
    } else if (isSeq(node)) {
      node.items.forEach((item, i) => walk(item, [...path, i], seen));
    } else visitScalar(node, path);
  };
  walk(doc.contents, [], new Set());
  return { value: undefined, diagnostics };
}
