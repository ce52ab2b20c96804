/**
 * Secrets a run must never write. A harness's `env` and `homeFiles` carry `${VAR}` references
 * that stay references in the plan and are resolved only at launch (launch-plan.ts); whatever a
 * reference resolved to is a secret, whatever the variable's name. The scrubber replaces each
 * such value (4 characters or more), and its URL-encoded and base64 forms, with the reference
 * `${VAR}` in every text reins writes: rollout results (error messages, harness stderr tails,
 * verifier details), events, summaries and the text fields of call records. Token ids cannot be
 * scrubbed: a secret the policy read and repeated is in its prompt and completion ids. Pure.
 */
import type { ResolvedHarness } from "../../compiler/contract/plan.js";

/** `${NAME}` or `${NAME:-default}`, not the escaped `$${...}` (launch-plan.ts's syntax). */
const REFERENCE = /(\$?)\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-[^}]*)?\}/g;

/** Values shorter than this are left alone: they would turn ordinary text into references. */
export const MIN_SECRET_LENGTH = 4;

export interface ResolvedSecret {
  name: string;
  value: string;
}

/** Every value a `${VAR}` in these harnesses' env and homeFiles resolves to from `env`. */
export function resolvedSecrets(harnesses: readonly ResolvedHarness[], env: Readonly<Record<string, string | undefined>> = process.env): ResolvedSecret[] {
  const out = new Map<string, string>();
  for (const h of harnesses) {
    for (const template of [...Object.values(h.env), ...h.homeFiles.map((f) => f.content)]) {
      for (const m of template.matchAll(REFERENCE)) {
        const [, escaped, name] = m;
        const value = env[name!];
        if (escaped === "$" || !value || value.length < MIN_SECRET_LENGTH) continue;
        out.set(value, name!);
      }
    }
  }
  return [...out].map(([value, name]) => ({ name, value }));
}

export class SecretScrubber {
  private readonly forms: [string, string][];

  constructor(secrets: readonly ResolvedSecret[]) {
    const forms = new Map<string, string>();
    for (const { name, value } of secrets) {
      const reference = `\${${name}}`;
      const base64 = Buffer.from(value, "utf8").toString("base64");
      for (const form of [value, encodeURIComponent(value), base64, base64.replace(/=+$/, "")]) {
        if (form.length >= MIN_SECRET_LENGTH && !forms.has(form)) forms.set(form, reference);
      }
    }
    // Longest first, so that a value containing another is replaced whole.
    this.forms = [...forms].sort((a, b) => b[0].length - a[0].length);
  }

  /** Whether there is anything to scrub at all. */
  get empty(): boolean {
    return this.forms.length === 0;
  }

  text(s: string): string {
    let out = s;
    for (const [form, reference] of this.forms) if (out.includes(form)) out = out.split(form).join(reference);
    return out;
  }

  /** Every string inside a JSON-like value (object keys included), scrubbed; the value is copied only where it changes. */
  value<T>(v: T): T {
    if (this.empty) return v;
    return this.walk(v) as T;
  }

  private walk(v: unknown): unknown {
    if (typeof v === "string") return this.text(v);
    if (Array.isArray(v)) {
      let changed = false;
      const out = v.map((x) => {
        if (typeof x === "number") return x;
        const y = this.walk(x);
        if (y !== x) changed = true;
        return y;
      });
      return changed ? out : v;
    }
    if (v !== null && typeof v === "object") {
      let changed = false;
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) {
        const key = this.text(k);
        const y = this.walk(x);
        if (y !== x || key !== k) changed = true;
        out[key] = y;
      }
      return changed ? out : v;
    }
    return v;
  }
}
