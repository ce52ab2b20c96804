/**
 * Finds the problem codes written in TypeScript source: PascalCase string literals in the places
 * codes are written. Parses with oxc (through vite's parseSync) and walks the ESTree:
 * - arguments of code-taking calls: makeDiagnostic, makeProblem, fail, failWith, checkError, error, diagnosticOf,
 *   and every `new …Error(…)` / `new …Failure(…)`;
 * - the value of an object property named `code` (`{ code: "X" }`, `code: cond ? "X" : "Y"`);
 * - comparisons with a code (`err.code === "X"`, `code !== "X"`), `switch (x.code) { case "X": }`;
 * - variables named `code` / `…Code` (`const code = missing ? "X" : "Y"`);
 * - variables named `…CODES` (arrays and maps of codes);
 * - types: aliases named `…Code`, and fields or parameters named `code` with literal types.
 * Conditionals, `??`/`||`, `as`/`satisfies` and arrays are looked through.
 */
import { parseSync } from "vite";

export interface CodeUse {
  code: string;
  file: string;
  line: number;
}

const CODE_LITERAL = /^[A-Z][A-Za-z0-9]*$/;
const CODE_TAKERS = new Set(["makeDiagnostic", "makeProblem", "fail", "failWith", "checkError", "error", "diagnosticOf"]);

type Node = { type: string; start: number; end: number; [k: string]: unknown };

function isNode(v: unknown): v is Node {
  return typeof v === "object" && v !== null && typeof (v as Node).type === "string";
}

function nameOf(n: unknown): string | undefined {
  if (!isNode(n)) return undefined;
  if (n.type === "Identifier") return n.name as string;
  if (n.type === "MemberExpression" && !n.computed) return nameOf(n.property);
  if (n.type === "Literal" && typeof n.value === "string") return n.value;
  return undefined;
}

/** String literals an expression may evaluate to (looking through ?:, ??, ||, as, satisfies, arrays, object values). */
function literalsOf(n: unknown, out: Node[], objects = false): void {
  if (!isNode(n)) return;
  switch (n.type) {
    case "Literal":
      if (typeof n.value === "string") out.push(n);
      return;
    case "TemplateLiteral":
      if ((n.expressions as unknown[]).length === 0) out.push({ ...n, value: (n.quasis as { value: { cooked: string } }[])[0]!.value.cooked });
      return;
    case "ConditionalExpression":
      literalsOf(n.consequent, out, objects);
      literalsOf(n.alternate, out, objects);
      return;
    case "LogicalExpression":
      literalsOf(n.left, out, objects);
      literalsOf(n.right, out, objects);
      return;
    case "TSAsExpression":
    case "TSSatisfiesExpression":
    case "TSNonNullExpression":
    case "ParenthesizedExpression":
      literalsOf(n.expression, out, objects);
      return;
    case "ArrayExpression":
      for (const e of n.elements as unknown[]) literalsOf(e, out, objects);
      return;
    case "ObjectExpression":
      if (objects) for (const p of n.properties as Node[]) if (p.type === "Property") literalsOf(p.value, out, objects);
      return;
    default:
      return;
  }
}

/** Literal types in a type annotation (unions looked through). */
function literalTypesOf(n: unknown, out: Node[]): void {
  if (!isNode(n)) return;
  if (n.type === "TSTypeAnnotation") return literalTypesOf(n.typeAnnotation, out);
  if (n.type === "TSUnionType") for (const t of n.types as unknown[]) literalTypesOf(t, out);
  if (n.type === "TSLiteralType") literalsOf(n.literal, out);
}

function isCodeName(name: string | undefined): boolean {
  return name === "code" || (name !== undefined && /Code$/.test(name));
}

export function findCodeLiterals(source: string, file: string): CodeUse[] {
  const parsed = parseSync(file, source, { lang: "ts", sourceType: "module" });
  if (parsed.errors.length > 0) throw new Error(`${file} does not parse: ${parsed.errors[0]!.message}`);
  const found: Node[] = [];
  const visit = (n: Node): void => {
    switch (n.type) {
      case "CallExpression":
      case "NewExpression": {
        const callee = nameOf(n.callee);
        const takesCode = callee !== undefined && (CODE_TAKERS.has(callee) || (n.type === "NewExpression" && /(Error|Failure)$/.test(callee)));
        if (takesCode) for (const a of n.arguments as unknown[]) literalsOf(a, found);
        break;
      }
      case "Property":
        if (nameOf(n.key) === "code") literalsOf(n.value, found);
        break;
      case "BinaryExpression":
        if (["===", "!==", "==", "!="].includes(n.operator as string)) {
          if (isCodeName(nameOf(n.left))) literalsOf(n.right, found);
          if (isCodeName(nameOf(n.right))) literalsOf(n.left, found);
        }
        break;
      case "SwitchStatement":
        if (isCodeName(nameOf(n.discriminant))) for (const c of n.cases as Node[]) literalsOf(c.test, found);
        break;
      case "VariableDeclarator": {
        const name = nameOf(n.id);
        if (isCodeName(name)) literalsOf(n.init, found);
        if (name !== undefined && /CODES$/.test(name)) literalsOf(n.init, found, true);
        if (name === "code") literalTypesOf((n.id as Node).typeAnnotation, found);
        break;
      }
      case "TSTypeAliasDeclaration":
        if (/Codes?$/.test(nameOf(n.id) ?? "")) literalTypesOf(n.typeAnnotation, found);
        break;
      case "PropertyDefinition":
      case "TSPropertySignature":
        if (nameOf(n.key) === "code") literalTypesOf(n.typeAnnotation, found);
        break;
      case "TSParameterProperty":
        if (nameOf(n.parameter) === "code") literalTypesOf((n.parameter as Node).typeAnnotation, found);
        break;
      case "Identifier":
        // a parameter `code: "X" | "Y"`
        if (n.name === "code" && n.typeAnnotation) literalTypesOf(n.typeAnnotation, found);
        break;
    }
    for (const [key, v] of Object.entries(n)) {
      if (key === "parent") continue;
      if (Array.isArray(v)) for (const c of v) isNode(c) && visit(c);
      else if (isNode(v)) visit(v);
    }
  };
  visit(parsed.program as unknown as Node);
  const lineOf = (offset: number) => source.slice(0, offset).split("\n").length;
  const unique = [...new Map(found.map((l) => [l.start, l])).values()];
  return unique
    .filter((l) => typeof l.value === "string" && CODE_LITERAL.test(l.value) && /[a-z]/.test(l.value))
    .map((l) => ({ code: l.value as string, file, line: lineOf(l.start) }));
}
