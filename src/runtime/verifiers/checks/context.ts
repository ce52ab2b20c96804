/**
 * What a check sees: the workspace reader, the hidden files, and memoized text/JSON/YAML reads so
 * several checks on one file read and parse it once. Reads are capped; failures become sentences.
 */
import { parse as parseYaml } from "yaml";
import type { ResolvedCheck } from "../../../compiler/contract/plan.js";
import type { McpCallRecord } from "../../records/rollout-result.js";
import { describeReadFailure, type ListResult, type WorkspaceReader } from "../workspace.js";

export const DEFAULT_MAX_FILE_BYTES = 16 * 1024 * 1024;

/** What one check concluded. `error` means the verifier itself could not judge (not a task failure). */
export type CheckOutcome = { pass: boolean; score: number; reason: string } | { error: { code: string; message: string } };

export interface CheckDefinition {
  type: string;
  /** Default label for reports, e.g. "fileExists out.txt". */
  label(check: ResolvedCheck): string;
  evaluate(check: ResolvedCheck, ctx: CheckContext): Promise<CheckOutcome>;
}

export type Loaded<T> = { ok: true; value: T } | { ok: false; reason: string };

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Bytes → text, or a sentence saying why they are not text. */
export function decodeText(path: string, bytes: Uint8Array): Loaded<string> {
  const nul = bytes.indexOf(0);
  if (nul !== -1) return { ok: false, reason: `${path} is binary, not text (a NUL byte at offset ${nul}).` };
  try {
    const text = utf8.decode(bytes);
    return { ok: true, value: text.charCodeAt(0) === 0xfeff ? text.slice(1) : text };
  } catch {
    return { ok: false, reason: `${path} is not valid UTF-8 text.` };
  }
}

function firstLine(s: string): string {
  const line = s.split("\n")[0].trim();
  return line.length > 160 ? `${line.slice(0, 159)}…` : line;
}

export class CheckContext {
  private texts = new Map<string, Promise<Loaded<string>>>();
  private docs = new Map<string, Promise<Loaded<unknown>>>();
  private listing?: Promise<ListResult>;

  constructor(
    readonly reader: WorkspaceReader,
    readonly options: {
      /** Reader over the task's hidden files (host side), for checks that compare with them. */
      hidden?: WorkspaceReader;
      /** Host directory of the hidden files, passed to commands as $REINS_HIDDEN. */
      hiddenDir?: string;
      maxFileBytes?: number;
      /** The try's MCP tools/calls as reins relayed them (absent: the rollout had no MCP servers). */
      mcpCalls?: readonly McpCallRecord[];
    } = {},
  ) {}

  get maxFileBytes(): number {
    return this.options.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES;
  }

  list(): Promise<ListResult> {
    this.listing ??= this.reader.list();
    return this.listing;
  }

  readText(path: string, from: "workspace" | "hidden" = "workspace"): Promise<Loaded<string>> {
    const key = `${from}:${path}`;
    let p = this.texts.get(key);
    if (!p) {
      p = this.loadText(path, from);
      this.texts.set(key, p);
    }
    return p;
  }

  private async loadText(path: string, from: "workspace" | "hidden"): Promise<Loaded<string>> {
    const reader = from === "hidden" ? this.options.hidden : this.reader;
    if (!reader) return { ok: false, reason: `no hidden files are available to compare ${path} with.` };
    const r = await reader.readFile(path, { maxBytes: this.maxFileBytes });
    if (r.kind === "missing" && from === "workspace") return { ok: false, reason: await this.describeMissing(path) };
    if (r.kind !== "ok") return { ok: false, reason: (from === "hidden" ? "hidden file " : "") + describeReadFailure(path, r) };
    return decodeText(path, r.bytes);
  }

  /** "out/a.json does not exist (there is a.json at the workspace root)." */
  async describeMissing(path: string): Promise<string> {
    const stem = (p: string) =>
      p
        .split("/")
        .pop()!
        .replace(/\.[^.]*$/, "")
        .toLowerCase();
    const base = path.split("/").pop()!;
    const listing = await this.list();
    // Same name elsewhere first, then the same name with another extension (report.yml for report.yaml).
    const same = listing.files.filter((f) => f !== path && f.split("/").pop() === base);
    const similar = listing.files.filter((f) => f !== path && !same.includes(f) && stem(f) === stem(path));
    const near = [...same, ...similar].slice(0, 3);
    if (near.length === 0) return `${path} does not exist.`;
    const where = near.map((f) => (f.includes("/") ? f : `${f} at the workspace root`));
    return `${path} does not exist (there is ${where.join(", ")}).`;
  }

  /** Parsed JSON (or YAML with format "yaml"), or a sentence saying why not. */
  readDocument(path: string, format: "json" | "yaml"): Promise<Loaded<unknown>> {
    const key = `${format}:${path}`;
    let p = this.docs.get(key);
    if (!p) {
      p = this.loadDocument(path, format);
      this.docs.set(key, p);
    }
    return p;
  }

  private async loadDocument(path: string, format: "json" | "yaml"): Promise<Loaded<unknown>> {
    const text = await this.readText(path);
    if (!text.ok) return text;
    if (format === "json") {
      try {
        return { ok: true, value: JSON.parse(text.value) };
      } catch (e) {
        const empty = text.value.trim() === "" ? " (the file is empty)" : "";
        return { ok: false, reason: `${path} is not valid JSON${empty}: ${firstLine((e as Error).message)}.` };
      }
    }
    try {
      return { ok: true, value: parseYaml(text.value, { maxAliasCount: 100, uniqueKeys: true, prettyErrors: false }) };
    } catch (e) {
      return { ok: false, reason: `${path} is not valid YAML: ${firstLine((e as Error).message)}.` };
    }
  }
}

/** Structured format from a file name: .yaml/.yml → yaml, else json. */
export function formatOf(path: string): "json" | "yaml" {
  return /\.ya?ml$/i.test(path) ? "yaml" : "json";
}

export const pass = (reason: string): CheckOutcome => ({ pass: true, score: 1, reason });
export const fail = (reason: string, score = 0): CheckOutcome => ({ pass: false, score, reason });
export const checkError = (code: string, message: string): CheckOutcome => ({ error: { code, message } });

/** A fractional outcome: passes only when every part holds. */
export function partial(met: number, total: number, reasons: string[], okReason: string): CheckOutcome {
  if (met === total) return pass(okReason);
  return fail(reasons.join(" "), total === 0 ? 0 : met / total);
}

export function str(check: ResolvedCheck, key: string): string {
  return check[key] as string;
}
