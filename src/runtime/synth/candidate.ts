/**
 * A generator's answer → the TaskFamily YAML it holds: the first ```yaml block (or the whole
 * answer), its name made unique among the synthesis's candidates, provenance annotations added
 * without disturbing the generator's formatting. Pure.
 */
import { isMap, parseDocument } from "yaml";

const FENCE = /```(?:ya?ml)?[^\n]*\n([\s\S]*?)```/;

export function extractYaml(answer: string): string {
  const m = FENCE.exec(answer);
  return `${(m ? m[1]! : answer).trim()}\n`;
}

/** The family's metadata.name, or undefined when the text has none (the schema gate then says why). */
export function familyName(yamlText: string): string | undefined {
  try {
    const name = parseDocument(yamlText).getIn(["metadata", "name"]);
    return typeof name === "string" ? name : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The text with metadata.name set to `name` (when it has a metadata mapping) and the annotations
 * added; the text as it was when it does not parse as one mapping (the schema gate reports it).
 */
export function annotate(yamlText: string, name: string | undefined, annotations: Record<string, string>): string {
  const doc = parseDocument(yamlText);
  if (doc.errors.length > 0 || !isMap(doc.contents) || !isMap(doc.get("metadata"))) return yamlText;
  if (name !== undefined) doc.setIn(["metadata", "name"], name);
  for (const [k, v] of Object.entries(annotations)) doc.setIn(["metadata", "annotations", k], v);
  return doc.toString({ lineWidth: 0 });
}

/** `name`, or name-2, name-3… when taken. */
export function uniqueName(name: string, taken: ReadonlySet<string>): string {
  if (!taken.has(name)) return name;
  for (let i = 2; ; i++) {
    const suffix = `-${i}`;
    const candidate = `${name.slice(0, 63 - suffix.length)}${suffix}`;
    if (!taken.has(candidate)) return candidate;
  }
}
