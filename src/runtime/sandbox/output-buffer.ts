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
