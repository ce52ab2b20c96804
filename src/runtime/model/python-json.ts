/**
 * JSON the way Python's `json.dumps(x, ensure_ascii=False)` writes it (", " and ": " separators),
 * which is how chat templates (`tojson`) and Qwen-family models write tool-call arguments.
 */
export function toPythonJson(value: unknown): string {
  if (value === null || value === undefined) return "null";
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value === "number") return Number.isFinite(value) ? String(value) : "null";
  if (typeof value === "boolean") return value ? "true" : "false";
  if (Array.isArray(value)) return `[${value.map(toPythonJson).join(", ")}]`;
  if (typeof value === "object") {
    const parts = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => `${JSON.stringify(k)}: ${toPythonJson(v)}`);
    return `{${parts.join(", ")}}`;
  }
  return JSON.stringify(String(value));
}

/** Stable JSON with object keys sorted: two values are equal iff their canonical forms are equal. */
export function toCanonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) return `[${value.map(toCanonicalJson).join(",")}]`;
  const keys = Object.keys(value as Record<string, unknown>)
    .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
    .sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${toCanonicalJson((value as Record<string, unknown>)[k])}`).join(",")}}`;
}
