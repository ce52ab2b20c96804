/** Task spec → ResolvedTask: workspace and hidden files, verifier (inline or by reference), digest. */
import { makeDiagnostic, type Diagnostic, type Result, type SourcePosition } from "../contract/diagnostics.js";
import { CODES } from "../contract/codes.js";
import { digestOf } from "../contract/hash.js";
import type { ResolvedTask, ResolvedVerifier } from "../contract/plan.js";
import type { TaskSpec } from "../schema/task.js";
import type { VerifierSpec } from "../schema/verifier.js";
import { resolveMcpServers } from "./mcp-servers.js";
import { resolveVerifierSpec } from "./verifier.js";
import { verifierDiagnostics } from "./verifier-problems.js";
import { resolveWorkspace } from "./workspace.js";
import { suggest } from "../schema/validate.js";
import type { ProjectRoot } from "../source/project.js";

export const DEFAULT_TASK_TIMEOUT_SECONDS = 600;

export interface TaskContext {
  name: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  category?: string;
  /** Absolute spec file path (for `from` / `fromDir`). */
  specFile: string;
  /** Where `from` / `fromDir` may read (the spec file's project). */
  roots?: readonly ProjectRoot[] | undefined;
  /** Position of a path under the task spec (e.g. ["workspace","files",0,"path"]). */
  positionOf: (path: (string | number)[]) => SourcePosition;
  verifiers: ReadonlyMap<string, ResolvedVerifier>;
  provenance?: ResolvedTask["provenance"];
  notes?: string[];
}

export function resolveTask(spec: TaskSpec, ctx: TaskContext): Result<ResolvedTask | undefined> {
  const diagnostics: Diagnostic[] = [];
  const ws = resolveWorkspace(spec.workspace, {
    specFile: ctx.specFile,
    ...(ctx.roots ? { roots: ctx.roots } : {}),
    positionOfFile: (i, field) => ctx.positionOf(field ? ["workspace", "files", i, field] : ["workspace", "files", i]),
    positionOfDir: () => ctx.positionOf(["workspace", "fromDir"]),
    notes: ctx.notes,
  });
  diagnostics.push(...ws.diagnostics);
  const hidden = resolveWorkspace(spec.hidden, {
    specFile: ctx.specFile,
    ...(ctx.roots ? { roots: ctx.roots } : {}),
    positionOfFile: (i, field) => ctx.positionOf(field ? ["hidden", "files", i, field] : ["hidden", "files", i]),
    positionOfDir: () => ctx.positionOf(["hidden", "fromDir"]),
    notes: ctx.notes,
  });
  diagnostics.push(...hidden.diagnostics);
  const mcp = resolveMcpServers(spec.mcpServers, {
    specFile: ctx.specFile,
    roots: ctx.roots,
    positionOf: (p) => ctx.positionOf(["mcpServers", ...p]),
    ...(ctx.notes ? { notes: ctx.notes } : {}),
  });
  diagnostics.push(...mcp.diagnostics);

  let verifier: ResolvedVerifier | undefined;
  const v = spec.verifier as { ref?: string } & VerifierSpec;
  if (typeof v.ref === "string") {
    verifier = ctx.verifiers.get(v.ref);
    if (!verifier) {
      const guess = suggest(v.ref, [...ctx.verifiers.keys()]);
      diagnostics.push(
        makeDiagnostic(
          "UnknownReference",
          ctx.positionOf(["verifier", "ref"]),
          `No Verifier named "${v.ref}".${guess ? ` Did you mean "${guess}"?` : ""}`,
          CODES.UnknownReference,
          "error",
          ctx.notes,
        ),
      );
    }
  } else {
    verifier = resolveVerifierSpec(v, "inline");
    diagnostics.push(...verifierDiagnostics(verifier, (p) => ctx.positionOf(["verifier", ...p]), ctx.notes));
  }

  if (diagnostics.some((d) => d.severity === "error") || !verifier) return { value: undefined, diagnostics };
  const category = spec.category ?? ctx.category ?? ctx.labels.category ?? "uncategorized";
  const timeoutSeconds = spec.timeoutSeconds ?? DEFAULT_TASK_TIMEOUT_SECONDS;
  const digest = digestOf({
    instruction: spec.instruction,
    files: ws.value.map((f) => [f.path, f.digest, f.mode]),
    hidden: hidden.value.map((f) => [f.path, f.digest, f.mode]),
    verifier,
    timeoutSeconds,
    reference: spec.reference ?? null,
    // Only when present, so a task without servers keeps the digest it always had.
    ...(mcp.value.length > 0 ? { mcpServers: mcp.value.map((m) => ({ ...m, files: m.files.map((f) => [f.path, f.digest, f.mode]) })) } : {}),
  });
  const task: ResolvedTask = {
    name: ctx.name,
    category,
    labels: ctx.labels,
    annotations: ctx.annotations,
    instruction: spec.instruction,
    files: ws.value,
    hiddenFiles: hidden.value,
    verifier,
    timeoutSeconds,
    digest,
  };
  if (ctx.provenance) task.provenance = ctx.provenance;
  if (mcp.value.length > 0) task.mcpServers = mcp.value;
  if (spec.timeoutSeconds === undefined) task.timeoutDefaulted = true;
  if (spec.reference) task.reference = spec.reference.turns.map((t) => ({ ...t }) as ResolvedTask["reference"] extends (infer U)[] | undefined ? U : never);
  return { value: task, diagnostics };
}
