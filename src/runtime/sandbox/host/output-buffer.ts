/** A byte-capped buffer that keeps the tail of a stream (the end of a log says why it failed). */
export class OutputBuffer {
  private chunks: Buffer[] = [];
  private size = 0;
  private dropped = 0;

  constructor(private readonly maxBytes: number) {}

  push(chunk: Buffer): void {
    if (this.maxBytes <= 0) {
      this.dropped += chunk.length;
      return;
    }
    this.chunks.push(chunk);
    this.size += chunk.length;
    while (this.size > this.maxBytes && this.chunks.length > 0) {
      const excess = this.size - this.maxBytes;
      const head = this.chunks[0];
      if (head.length <= excess) {
        this.chunks.shift();
        this.size -= head.length;
        this.dropped += head.length;
      } else {
        this.chunks[0] = head.subarray(excess);
        this.size -= excess;
        this.dropped += excess;
      }
    }
  }

  get truncated(): boolean {
    return this.dropped > 0;
  }

  bytes(): Buffer {
    return Buffer.concat(this.chunks, this.size);
  }

  text(): string {
    return this.bytes().toString("utf8");
  }
}

/** Both output streams of one command, each capped, with every chunk also passed to `onOutput`. */
export class OutputCapture {
  readonly stdout: OutputBuffer;
  readonly stderr: OutputBuffer;

  constructor(
    maxBytes: number,
    private readonly onOutput?: (stream: "stdout" | "stderr", chunk: Buffer) => void,
  ) {
    this.stdout = new OutputBuffer(maxBytes);
    this.stderr = new OutputBuffer(maxBytes);
  }

  push(stream: "stdout" | "stderr", chunk: Buffer): void {
    this[stream].push(chunk);
    this.onOutput?.(stream, chunk);
  }

  /** The captured text and whether each stream lost its head. */
  fields(): { stdout: string; stderr: string; stdoutTruncated: boolean; stderrTruncated: boolean } {
    return { stdout: this.stdout.text(), stderr: this.stderr.text(), stdoutTruncated: this.stdout.truncated, stderrTruncated: this.stderr.truncated };
  }
}
