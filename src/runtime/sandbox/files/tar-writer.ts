/**
 * Tar archives (by tar-stream's pack) for copying files into containers over exec
 * (`tar -x -f -`). Long paths and link targets get a PAX header. Regular files, directories and
 * symlinks.
 */
import { pack } from "tar-stream";

export interface TarEntry {
  /** Relative POSIX path inside the archive, e.g. "workspace/a/b.txt". */
  path: string;
  type: "file" | "dir" | "symlink";
  mode: number;
  /** A symlink's text. */
  linkTarget?: string;
  content?: Uint8Array;
  /** Seconds since the epoch; now when absent. */
  mtime?: number;
}

/** The whole archive, end-of-archive blocks included. */
export function buildTar(entries: TarEntry[]): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const archive = pack();
    const parts: Buffer[] = [];
    archive.on("data", (chunk: unknown) => parts.push(chunk as Buffer));
    archive.on("end", () => resolve(Buffer.concat(parts)));
    archive.on("error", reject);
    try {
      for (const entry of entries) {
        const mtime = new Date(Math.floor(entry.mtime ?? Date.now() / 1000) * 1000);
        const mode = entry.mode & 0o7777;
        if (entry.type === "file") {
          archive.entry({ name: entry.path, type: "file", mode, mtime }, Buffer.from(entry.content ?? new Uint8Array()));
        } else if (entry.type === "dir") {
          // tar itself writes a directory's name with a trailing slash.
          const name = entry.path.endsWith("/") ? entry.path : `${entry.path}/`;
          archive.entry({ name, type: "directory", mode, mtime }).end(undefined);
        } else {
          archive.entry({ name: entry.path, type: "symlink", mode, mtime, linkname: entry.linkTarget ?? "" }).end(undefined);
        }
      }
      archive.finalize();
    } catch (e) {
      archive.destroy(e as Error);
      reject(e);
    }
  });
}
