/**
 * The content digest of a file or a directory tree on this machine: every entry's relative path,
 * kind, executable bit and bytes (a symbolic link: its target), in a fixed order. What a harness
 * image's tag is made of.
 */
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { lstat, readdir, readFile, readlink, writeFile } from "node:fs/promises";
import { join } from "node:path";

/** Digests already taken in this process: install directories never change once complete. */
const known = new Map<string, Promise<string>>();

export function digestPath(path: string, opts: { cache?: boolean } = {}): Promise<string> {
  if (opts.cache === false) return computeDigest(path);
  let d = known.get(path);
  if (!d) {
    d = computeDigest(path);
    d.catch(() => known.delete(path));
    known.set(path, d);
  }
  return d;
}

/**
 * A complete harness install (its .reins-install.json written last) never changes: its digest is
 * kept beside that marker, valid while the marker is the same (a reinstall writes a new one).
 */
const INSTALL_MARKER = ".reins-install.json";
const KEPT_DIGEST = ".reins-digest.json";

async function computeDigest(root: string): Promise<string> {
  const marker = await readFile(join(root, INSTALL_MARKER), "utf8").catch(() => undefined);
  if (marker !== undefined) {
    const kept = await readFile(join(root, KEPT_DIGEST), "utf8")
      .then((t) => JSON.parse(t) as { marker?: string; digest?: string })
      .catch(() => undefined);
    if (kept?.marker === marker && typeof kept.digest === "string") return kept.digest;
  }
  const hash = createHash("sha256");
  await addEntry(hash, root, ".");
  const digest = `sha256:${hash.digest("hex")}`;
  if (marker !== undefined) await writeFile(join(root, KEPT_DIGEST), JSON.stringify({ marker, digest })).catch(() => undefined);
  return digest;
}

async function addEntry(hash: ReturnType<typeof createHash>, path: string, rel: string): Promise<void> {
  const st = await lstat(path);
  if (st.isSymbolicLink()) {
    hash.update(`L ${rel} ${await readlink(path)}\n`);
  } else if (st.isDirectory()) {
    hash.update(`D ${rel}\n`);
    const names = (await readdir(path)).sort();
    for (const name of names) if (!(rel === "." && name === KEPT_DIGEST)) await addEntry(hash, join(path, name), rel === "." ? name : `${rel}/${name}`);
  } else if (st.isFile()) {
    hash.update(`F ${rel} ${st.mode & 0o111 ? "x" : "-"} ${st.size}\n`);
    for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  } else {
    hash.update(`O ${rel}\n`);
  }
}
