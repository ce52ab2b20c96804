/**
 * A streaming tar reader (ustar, GNU and pax long names, by tar-stream) that writes what it reads
 * into a SnapshotWriter: the host end of `tar -c` run over exec. Regular files, directories,
 * symbolic and hard links; other types are skipped. Fed chunk by chunk, so a large archive is
 * never held whole. The archive comes from the sandbox and is not trusted: names go through the
 * SnapshotWriter, names and link texts longer than MAX_NAME_BYTES refuse the archive, and an
 * extended header (pax or GNU long name) is never buffered past tar-stream's own cap (4 MiB).
 */
import { extract, type Extract, type ExtractEvents, type Header } from "tar-stream";
import { DISCARD_SINK, type FileSink, type SnapshotWriter } from "./snapshot-writer.js";

const BLOCK = 512;
type EntryStream = ExtractEvents["entry"][1];
/** Names and link texts longer than this are not names: the archive is refused. */
export const MAX_NAME_BYTES = 1024 * 1024;

/** tar-stream's errors, as said to whoever copies the tree out. */
function describeError(message: string): string {
  if (/Invalid tar header\. Maybe/.test(message)) return "not a tar archive (bad header checksum)";
  if (/Header exceeds max size/.test(message)) return "not a tar archive (an extended header larger than 4 MiB)";
  if (message === "Invalid header") return "not a tar archive (an entry with an invalid size)";
  return `not a tar archive (${message})`;
}

export class TarReader {
  private readonly parser: Extract;
  /** Resolves once the parser is closed (ended or failed). */
  private readonly closed: Promise<void>;
  /** The file being written, until its data ends. */
  private sink: FileSink | undefined;
  /** Bytes pushed so far. */
  private pushed = 0;
  /**
   * Where the last entry (its header, data and padding) ends in the stream: tar-stream skips
   * zero blocks without saying so, so the end-of-archive block is found here, as zeros after it.
   */
  private lastEnd = 0;
  /** How many bytes at the end of what was pushed are zero. */
  private zeroTail = 0;
  /** Set by tar-stream when the input ended inside an entry or a header. */
  private truncated = false;
  private finished = false;
  /** Set when the stream is not a tar archive (bad checksum, oversized names, a bad size). */
  error: string | undefined;

  constructor(private readonly out: SnapshotWriter) {
    // Pre-POSIX (v7) headers carry no magic; their checksum is still checked. The option is
    // tar-stream's, missing from its typings.
    this.parser = extract({ allowUnknownFormat: true } as Parameters<typeof extract>[0]);
    this.parser.on("entry", (header, stream, next) => {
      try {
        this.entry(header, stream, next);
      } catch (e) {
        this.fail(e instanceof Error ? e.message : String(e));
      }
    });
    this.parser.on("error", (e: Error) => {
      if (e.message === "Unexpected end of data") this.truncated = true;
      else if (this.error === undefined) this.error = describeError(e.message);
    });
    this.closed = new Promise((resolve) => {
      this.parser.once("close", () => resolve());
    });
  }

  /**
   * True once the whole archive was read, up to its end-of-archive block: an input that stops
   * after a whole entry but before that block is not complete. Meaningful after end().
   */
  get complete(): boolean {
    const tail = this.pushed - this.lastEnd;
    return this.finished && !this.truncated && this.error === undefined && tail >= BLOCK && this.zeroTail >= tail;
  }

  push(chunk: Buffer): void {
    if (this.error !== undefined || this.parser.destroying || chunk.length === 0) return;
    this.pushed += chunk.length;
    let last = chunk.length - 1;
    while (last >= 0 && chunk[last] === 0) last--;
    this.zeroTail = last < 0 ? this.zeroTail + chunk.length : chunk.length - 1 - last;
    this.parser.write(chunk);
  }

  /** Ends the input and waits until every entry read is written (or the archive is refused). */
  async end(): Promise<void> {
    if (!this.parser.destroying) this.parser.end(undefined);
    await this.closed;
    this.finished = true;
    this.closeSink();
  }

  private fail(why: string): void {
    if (this.error === undefined) this.error = why;
    this.closeSink();
    this.parser.destroy(new Error(why));
  }

  private closeSink(): void {
    const sink = this.sink;
    this.sink = undefined;
    sink?.end();
  }

  private entry(h: Header, stream: EntryStream, next: (err?: Error | null) => void): void {
    const name = h.name;
    const linkname = h.linkname ?? "";
    if (Buffer.byteLength(name) > MAX_NAME_BYTES || Buffer.byteLength(linkname) > MAX_NAME_BYTES) {
      return this.fail(`not a tar archive (a name or link text longer than ${MAX_NAME_BYTES} bytes)`);
    }
    const start = (h as Header & { byteOffset: number }).byteOffset;
    const type: string | null = h.type;
    // tar-stream reads no data for a directory, whatever its size field says, and ends its
    // stream only when that field is 0: go on at once.
    if (type === "directory") {
      this.lastEnd = start;
      this.out.directory(name, h.mode);
      stream.resume();
      next();
      return;
    }
    this.lastEnd = start + Math.ceil(h.size / BLOCK) * BLOCK;
    let sink = DISCARD_SINK;
    if (type === "file" || type === "contiguous-file") sink = this.out.file(name, h.mode, h.size);
    else if (type === "symlink") this.out.symlink(name, linkname);
    else if (type === "link") this.out.hardlink(name, linkname);
    else this.out.skip(name, "not a regular file, directory or link");
    this.sink = sink;
    stream.on("data", (chunk: unknown) => {
      try {
        if (sink.wanted > 0) sink.write(chunk as Buffer);
      } catch (e) {
        this.fail(e instanceof Error ? e.message : String(e));
      }
    });
    stream.on("end", () => {
      try {
        this.closeSink();
      } catch (e) {
        return this.fail(e instanceof Error ? e.message : String(e));
      }
      next();
    });
  }
}
