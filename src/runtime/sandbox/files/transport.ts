/**
 * How a sandbox's files travel, behind the contract's writeFiles/readFile/listFiles/copyOut: over
 * the host directories that back the sandbox (local, podman) or over exec alone (kubernetes;
 * podman when asked). Paths reach a transport already checked: inside one of the sandbox's
 * writable roots, normalized.
 */
import path from "node:path";
import { SANDBOX_ROOTS } from "../layout.js";
import type { SnapshotWriter } from "./snapshot-writer.js";

/** An in-sandbox path inside one of the writable roots. */
export interface SandboxPath {
  /** The root, e.g. "/workspace". */
  root: string;
  /** Relative POSIX path below the root; "" for the root itself. */
  rel: string;
  /** The absolute in-sandbox path. */
  abs: string;
}

export interface PreparedFile {
  at: SandboxPath;
  content: Uint8Array;
  mode: number;
}

export interface PreparedLink {
  at: SandboxPath;
  target: string;
}

export interface PreparedDirectory {
  at: SandboxPath;
  mode: number;
}

/** Directories and links of one write, made after its files, directories before links. */
export interface PreparedExtras {
  directories: PreparedDirectory[];
  links: PreparedLink[];
}

export interface FileTransport {
  write(files: PreparedFile[], extras?: PreparedExtras): Promise<void>;
  read(at: SandboxPath): Promise<Buffer>;
  /** Regular files below, relative, sorted. */
  list(at: SandboxPath): Promise<string[]>;
  /** Every entry below into the writer; `timeoutMs` bounds the whole copy. */
  copyOut(at: SandboxPath, into: SnapshotWriter, timeoutMs: number): Promise<void>;
}

/** Relative paths resolve against the first root (the workspace); null when outside every root. */
export function locateSandboxPath(p: string, roots: readonly string[] = SANDBOX_ROOTS): SandboxPath | null {
  const joined = p.startsWith("/") ? path.posix.normalize(p) : path.posix.join(roots[0], p);
  const abs = joined.length > 1 ? joined.replace(/\/+$/, "") : joined;
  for (const root of roots) {
    if (abs === root) return { root, rel: "", abs };
    if (abs.startsWith(`${root}/`)) {
      const rel = abs.slice(root.length + 1);
      if (rel.split("/").includes("..")) return null;
      return { root, rel, abs };
    }
  }
  return null;
}
