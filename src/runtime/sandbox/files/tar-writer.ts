/**
 * A minimal ustar writer (pure), for copying files into containers over exec (`tar -x -f -`).
 * Long paths and link targets get a PAX header. Regular files, directories and symlinks.
 */

export interface TarEntry {
  /** Relative POSIX path inside the archive, e.g. "workspace/a/b.txt". */
  path: string;
  type: "file" | "dir" | "symlink";
  mode: number;
  /** A symlink's text. */
  linkTarget?: string;
  content?: Uint8Array;
  mtime?: number;
}

const BLOCK = 512;

function octal(value: number, width: number): string {
  return value.toString(8).padStart(width - 1, "0") + "\0";
}

function writeString(buf: Buffer, offset: number, width: number, value: string): void {
  const bytes = Buffer.from(value, "utf8");
  if (bytes.length > width) throw new Error(`tar field too long: ${value}`);
  bytes.copy(buf, offset);
}

function header(name: string, prefix: string, size: number, mode: number, mtime: number, typeflag: string, linkname = ""): Buffer {
  const h = Buffer.alloc(BLOCK);
  writeString(h, 0, 100, name);
  writeString(h, 157, 100, linkname);
  writeString(h, 100, 8, octal(mode & 0o7777, 8));
  writeString(h, 108, 8, octal(0, 8));
  writeString(h, 116, 8, octal(0, 8));
  writeString(h, 124, 12, octal(size, 12));
  writeString(h, 136, 12, octal(Math.floor(mtime), 12));
  h.fill(0x20, 148, 156);
  writeString(h, 156, 1, typeflag);
  writeString(h, 257, 6, "ustar\0");
  writeString(h, 263, 2, "00");
  writeString(h, 345, 155, prefix);
  let sum = 0;
  for (const byte of h) sum += byte;
  writeString(h, 148, 8, sum.toString(8).padStart(6, "0") + "\0 ");
  return h;
}

function pad(length: number): Buffer {
  const rest = length % BLOCK;
  return Buffer.alloc(rest === 0 ? 0 : BLOCK - rest);
}

/** Splits a path into ustar (prefix, name); null when it does not fit. */
function splitUstar(path: string): { prefix: string; name: string } | null {
  if (Buffer.byteLength(path) <= 100) return { prefix: "", name: path };
  for (let i = path.indexOf("/"); i >= 0; i = path.indexOf("/", i + 1)) {
    const prefix = path.slice(0, i);
    const name = path.slice(i + 1);
    if (Buffer.byteLength(prefix) <= 155 && Buffer.byteLength(name) <= 100 && name.length > 0) return { prefix, name };
  }
  return null;
}

function paxRecord(key: string, value: string): string {
  const body = ` ${key}=${value}\n`;
  let length = Buffer.byteLength(body) + 1;
  while (String(length).length + Buffer.byteLength(body) !== length) length = String(length).length + Buffer.byteLength(body);
  return `${length}${body}`;
}

export function buildTar(entries: TarEntry[]): Buffer {
  const parts: Buffer[] = [];
  for (const entry of entries) {
    const path = entry.type === "dir" && !entry.path.endsWith("/") ? `${entry.path}/` : entry.path;
    const content = entry.type === "file" ? Buffer.from(entry.content ?? new Uint8Array()) : Buffer.alloc(0);
    const mtime = entry.mtime ?? Date.now() / 1000;
    let split = splitUstar(path);
    const target = entry.type === "symlink" ? (entry.linkTarget ?? "") : "";
    const longTarget = Buffer.byteLength(target) > 100;
    if (!split || longTarget) {
      const pax = Buffer.from((split ? "" : paxRecord("path", path)) + (longTarget ? paxRecord("linkpath", target) : ""), "utf8");
      parts.push(header("PaxHeader", "", pax.length, 0o644, mtime, "x"), pax, pad(pax.length));
      split ??= { prefix: "", name: path.slice(0, 99) };
    }
    const typeflag = entry.type === "dir" ? "5" : entry.type === "symlink" ? "2" : "0";
    parts.push(header(split.name, split.prefix, content.length, entry.mode, mtime, typeflag, longTarget ? "" : target));
    if (content.length > 0) parts.push(content, pad(content.length));
  }
  parts.push(Buffer.alloc(BLOCK * 2));
  return Buffer.concat(parts);
}
