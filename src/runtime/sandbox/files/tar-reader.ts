/**
 * A streaming tar reader (ustar, GNU and pax long names) that writes what it reads into a
 * SnapshotWriter: the host end of `tar -c` run over exec. Regular files, directories, symbolic and
 * hard links; other types are skipped. Fed chunk by chunk, so a large archive is never held whole.
 */
import { DISCARD_SINK, type FileSink, type SnapshotWriter } from "./snapshot-writer.js";

const BLOCK = 512;
/** Long names and pax headers larger than this are not names: the archive is refused. */
const MAX_META_BYTES = 1024 * 1024;

interface Header {
  name: string;
  mode: number;
  size: number;
  type: string;
  linkname: string;
}

type Phase =
  | { kind: "header" }
  | { kind: "meta"; type: string; left: number; parts: Buffer[] }
  | { kind: "data"; left: number; sink: FileSink; after: Phase }
  | { kind: "padding"; left: number }
  | { kind: "end" };

function text(block: Buffer, offset: number, width: number): string {
  const field = block.subarray(offset, offset + width);
  const nul = field.indexOf(0);
  return field.subarray(0, nul < 0 ? width : nul).toString("utf8");
}

/** A numeric field: octal text, or base-256 when the high bit of its first byte is set (GNU). */
export function parseTarNumber(block: Buffer, offset: number, width: number): number {
  if (block[offset] & 0x80) {
    let value = block[offset] & 0x7f;
    for (let i = 1; i < width; i++) value = value * 256 + block[offset + i];
    return value;
  }
  const digits = text(block, offset, width).trim();
  return digits === "" ? 0 : parseInt(digits, 8);
}

function checksumOk(block: Buffer): boolean {
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : block[i];
  return parseTarNumber(block, 148, 8) === sum;
}

/** `len key=value\n` records of a pax header. */
export function parsePax(data: Buffer): Record<string, string> {
  const out: Record<string, string> = {};
  let at = 0;
  while (at < data.length) {
    const space = data.indexOf(0x20, at);
    if (space < 0) break;
    const length = Number(data.subarray(at, space).toString("ascii"));
    if (!Number.isInteger(length) || length <= 0 || at + length > data.length) break;
    const record = data.subarray(space + 1, at + length - 1).toString("utf8");
    const eq = record.indexOf("=");
    if (eq > 0) out[record.slice(0, eq)] = record.slice(eq + 1);
    at += length;
  }
  return out;
}

function afterPadding(size: number): Phase {
  const left = (BLOCK - (size % BLOCK)) % BLOCK;
  return left > 0 ? { kind: "padding", left } : { kind: "header" };
}

export class TarReader {
  private phase: Phase = { kind: "header" };
  private pending = Buffer.alloc(0);
  private longName: string | undefined;
  private longLink: string | undefined;
  private pax: Record<string, string> = {};
  /** Set when the stream is not a tar archive (bad checksum, oversized names). */
  error: string | undefined;

  constructor(private readonly out: SnapshotWriter) {}

  /** True once the end-of-archive block was read. */
  get complete(): boolean {
    return this.phase.kind === "end";
  }

  push(chunk: Buffer): void {
    let data = this.pending.length > 0 ? Buffer.concat([this.pending, chunk]) : chunk;
    this.pending = Buffer.alloc(0);
    while (data.length > 0 && this.phase.kind !== "end" && this.error === undefined) {
      const phase = this.phase;
      if (phase.kind === "header") {
        if (data.length < BLOCK) {
          this.pending = Buffer.from(data);
          return;
        }
        this.header(data.subarray(0, BLOCK));
        data = data.subarray(BLOCK);
        continue;
      }
      const part = data.subarray(0, Math.min(phase.left, data.length));
      data = data.subarray(part.length);
      phase.left -= part.length;
      if (phase.kind === "data") {
        if (phase.sink.wanted > 0) phase.sink.write(part);
        if (phase.left === 0) {
          phase.sink.end();
          this.phase = phase.after;
        }
      } else if (phase.kind === "meta") {
        phase.parts.push(Buffer.from(part));
        if (phase.left === 0) this.meta(phase.type, Buffer.concat(phase.parts));
      } else if (phase.left === 0) {
        this.phase = { kind: "header" };
      }
    }
  }

  private header(block: Buffer): void {
    if (block.every((b) => b === 0)) {
      this.phase = { kind: "end" };
      return;
    }
    if (!checksumOk(block)) {
      this.error = "not a tar archive (bad header checksum)";
      return;
    }
    const ustar = text(block, 257, 6).startsWith("ustar");
    const prefix = ustar ? text(block, 345, 155) : "";
    const raw = text(block, 0, 100);
    const type = String.fromCharCode(block[156] || 0x30);
    const size = parseTarNumber(block, 124, 12);
    if (type === "L" || type === "K" || type === "x" || type === "g") {
      if (size > MAX_META_BYTES) this.error = `a ${size}-byte extended header`;
      else if (size === 0) this.meta(type, Buffer.alloc(0));
      else this.phase = { kind: "meta", type, left: size, parts: [] };
      return;
    }
    const h: Header = {
      name: this.pax.path ?? this.longName ?? (prefix ? `${prefix}/${raw}` : raw),
      mode: parseTarNumber(block, 100, 8),
      size: this.pax.size !== undefined ? Number(this.pax.size) : size,
      type,
      linkname: this.pax.linkpath ?? this.longLink ?? text(block, 157, 100),
    };
    this.pax = {};
    this.longName = undefined;
    this.longLink = undefined;
    this.entry(h);
  }

  private entry(h: Header): void {
    let sink = DISCARD_SINK;
    if (h.type === "0" || h.type === "7") sink = this.out.file(h.name, h.mode, h.size);
    else if (h.type === "5") this.out.directory(h.name, h.mode);
    else if (h.type === "2") this.out.symlink(h.name, h.linkname);
    else if (h.type === "1") this.out.hardlink(h.name, h.linkname);
    else this.out.skip(h.name, "not a regular file, directory or link");
    // Links and directories carry no data whatever their size field says.
    const size = "125".includes(h.type) ? 0 : h.size;
    if (size === 0) {
      sink.end();
      this.phase = { kind: "header" };
    } else {
      this.phase = { kind: "data", left: size, sink, after: afterPadding(size) };
    }
  }

  private meta(type: string, data: Buffer): void {
    const nul = data.indexOf(0);
    const body = data.subarray(0, nul < 0 ? data.length : nul).toString("utf8");
    if (type === "L") this.longName = body;
    else if (type === "K") this.longLink = body;
    else if (type === "x") this.pax = parsePax(data);
    this.phase = afterPadding(data.length);
  }
}
