/** Canonical JSON (sorted keys, no whitespace) and sha256 content addresses. */
import { createHash } from "node:crypto";

export function canonicalJson(value: unknown): string {
  const parts: string[] = [];
  write(value, parts);
  return parts.join("");
}

function write(v: unknown, out: string[]): void {
  if (v === null || v === undefined) {
    out.push("null");
  } else if (typeof v === "number") {
    out.push(Number.isFinite(v) ? JSON.stringify(v) : "null");
  } else if (typeof v === "string" || typeof v === "boolean") {
    out.push(JSON.stringify(v));
  } else if (Array.isArray(v)) {
    out.push("[");
    for (let i = 0; i < v.length; i++) {
      if (i > 0) out.push(",");
      write(v[i] === undefined ? null : v[i], out);
    }
    out.push("]");
  } else if (typeof v === "object") {
    const keys = Object.keys(v as object)
      .filter((k) => (v as Record<string, unknown>)[k] !== undefined)
      .sort();
    out.push("{");
    keys.forEach((k, i) => {
      if (i > 0) out.push(",");
      out.push(JSON.stringify(k), ":");
      write((v as Record<string, unknown>)[k], out);
    });
    out.push("}");
  } else {
    out.push("null");
  }
}

export function sha256(data: string | Uint8Array): string {
  return `sha256:${createHash("sha256").update(data).digest("hex")}`;
}

export function digestOf(value: unknown): string {
  return sha256(canonicalJson(value));
}

/** Short hex (no prefix) for names. */
export function shortHash(value: unknown, length = 6): string {
  return createHash("sha256")
    .update(typeof value === "string" ? value : canonicalJson(value))
    .digest("hex")
    .slice(0, length);
}

/** A deterministic 32-bit seed from anything. */
export function seedOf(...parts: unknown[]): number {
  return createHash("sha256").update(canonicalJson(parts)).digest().readUInt32BE(0);
}
