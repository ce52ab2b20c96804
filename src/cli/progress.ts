/**
 * Progress on stderr: a live line on a terminal (rollouts done, running, failed, pass rate so far),
 * plain lines otherwise (every 10% or 10 s). Off with --quiet; --json changes stdout only.
 */
export class Progress {
  private done = 0;
  private running = 0;
  private failed = 0;
  private passed = 0;
  private scored = 0;
  private total = 0;
  private label = "";
  private lastPlain = 0;
  private lastPlainDone = -1;
  private readonly tty: boolean;

  constructor(private readonly enabled: boolean, stream: NodeJS.WriteStream = process.stderr) {
    this.tty = Boolean(stream.isTTY) && process.env.TERM !== "dumb";
  }

  start(label: string, total: number, alreadyDone = 0): void {
    this.label = label;
    this.total = total;
    this.done = alreadyDone;
    this.running = 0;
    this.failed = 0;
    this.passed = 0;
    this.scored = 0;
    this.lastPlain = 0;
    this.lastPlainDone = -1;
    this.render(true);
  }

  onEvent(e: { type: string; [k: string]: unknown }): void {
    if (e.type === "rollout-started" && e.try === 1) this.running++;
    else if (e.type === "rollout-finished") {
      this.running = Math.max(0, this.running - 1);
      this.done++;
      if (e.status === "infra-failed" || e.status === "verifier-error") this.failed++;
      else {
        this.scored++;
        if (e.passed) this.passed++;
      }
    } else return;
    this.render(false);
  }

  finish(): void {
    this.render(true);
    if (this.enabled && this.tty) process.stderr.write("\n");
  }

  private line(): string {
    const pct = this.total > 0 ? Math.floor((this.done / this.total) * 100) : 100;
    const width = 24;
    const filled = Math.round((pct / 100) * width);
    const bar = `${"█".repeat(filled)}${"░".repeat(width - filled)}`;
    const rate = this.scored > 0 ? `${((this.passed / this.scored) * 100).toFixed(0)}%` : "–";
    return `${this.label} ${bar} ${this.done}/${this.total} done, ${this.running} running, ${this.failed} failed, pass ${rate}`;
  }

  private render(force: boolean): void {
    if (!this.enabled) return;
    if (this.tty) {
      process.stderr.write(`\r\x1b[2K${this.line()}`);
      return;
    }
    const now = Date.now();
    const step = Math.max(1, Math.ceil(this.total / 10));
    if (force || this.done - this.lastPlainDone >= step || now - this.lastPlain > 10_000) {
      if (this.done === this.lastPlainDone && !force) return;
      process.stderr.write(`${this.line()}\n`);
      this.lastPlain = now;
      this.lastPlainDone = this.done;
    }
  }
}
