/**
 * Live progress on stderr for `reins run` and `reins eval`: one phase at a time (reference
 * replays, SFT steps, a step's rollouts, training, publishing, held-out evaluation), each with
 * its count, rate and ETA. The runtime announces a phase and its counts with `progress` events
 * ({phase, label, unit, total, done}); within a phase of rollouts, `rollout-finished` events count
 * too, with failures and the pass rate so far.
 *
 * On a terminal the current phase is one line, redrawn (at most 10 times a second, and every
 * second so the elapsed time runs), and a finished phase stays as a line. Otherwise (a log file,
 * CI) a phase prints a line when its first unit is done (the first ETA), then at most one every
 * `intervalMs` (default 5 s; also while nothing moves, so a long phase is seen alive), and one when
 * it ends: no flooding. Other talk (`say`) goes through here so it never mixes with a redrawn line.
 * Off with --quiet; --json changes stdout only.
 */

export interface ProgressOptions {
  enabled: boolean;
  stream?: { write(s: string): unknown; isTTY?: boolean };
  /** Force terminal (redrawn) or plain lines; default: the stream's isTTY, unless TERM=dumb. */
  tty?: boolean;
  /** Minimum time between two plain lines of one phase (not on a terminal). */
  intervalMs?: number;
  /** Prefix each line with the seconds since this time (ms, on `now`'s clock), as `[  12s]`. */
  since?: number;
  now?: () => number;
  /** Redraw on a timer while a phase runs (default true; tests call tick() themselves). */
  timer?: boolean;
}

interface Phase {
  key: string;
  label: string;
  unit: string;
  total: number;
  done: number;
  /** Units done when the phase was first seen (a resumed phase): the rate counts only what this process did. */
  initial: number;
  startedAt: number;
  running: number;
  failed: number;
  scored: number;
  passed: number;
  ended: boolean;
  lastPlainAt: number;
  plainLines: number;
}

export const PLAIN_INTERVAL_MS = 5_000;
const TTY_REDRAW_MS = 100;

export class Progress {
  private phase: Phase | null = null;
  private readonly stream: NonNullable<ProgressOptions["stream"]>;
  private readonly tty: boolean;
  private readonly intervalMs: number;
  private readonly now: () => number;
  private lastDraw = 0;
  private drawn = false;
  private ticker: NodeJS.Timeout | null = null;
  private readonly useTimer: boolean;

  constructor(
    private readonly enabled: boolean | ProgressOptions,
    stream?: ProgressOptions["stream"],
  ) {
    const o: ProgressOptions = typeof enabled === "boolean" ? { enabled, ...(stream ? { stream } : {}) } : enabled;
    this.stream = o.stream ?? process.stderr;
    this.tty = o.tty ?? (Boolean(this.stream.isTTY) && process.env.TERM !== "dumb");
    this.intervalMs = o.intervalMs ?? PLAIN_INTERVAL_MS;
    this.now = o.now ?? (() => Date.now());
    this.since = o.since;
    this.useTimer = o.timer ?? true;
  }

  private readonly since: number | undefined;

  private get on(): boolean {
    return typeof this.enabled === "boolean" ? this.enabled : this.enabled.enabled;
  }

  /** Start a phase of `total` rollouts (reins eval); `alreadyDone` of them finished before a resume. */
  start(label: string, total: number, alreadyDone = 0): void {
    this.update({ phase: label, label, unit: "rollouts", total, done: alreadyDone });
  }

  onEvent(e: { type: string; [k: string]: unknown }): void {
    if (e.type === "progress") {
      this.update({ phase: String(e.phase), label: String(e.label ?? e.phase), unit: String(e.unit ?? ""), total: Number(e.total), done: Number(e.done) });
      return;
    }
    const p = this.phase;
    if (!p || p.ended || p.unit !== "rollouts") return;
    if (e.type === "rollout-started" && e.try === 1) p.running++;
    else if (e.type === "rollout-finished") {
      p.running = Math.max(0, p.running - 1);
      p.done = Math.min(p.total, p.done + 1);
      if (e.status === "infra-failed" || e.status === "verifier-error") p.failed++;
      else {
        p.scored++;
        if (e.passed) p.passed++;
      }
      this.render();
    }
  }

  /** A line of talk (stderr): on a terminal, the live line is cleared first and drawn again after it. */
  say(line: string): void {
    if (!this.on) return;
    this.clear();
    this.stream.write(`${this.prefix()}${line}\n`);
    this.redraw();
  }

  /** End the current phase where it stands (the run is over or interrupted). */
  finish(): void {
    this.stopTimer();
    if (!this.on) return;
    this.clear();
  }

  /** Time passed: on a terminal the line is redrawn (elapsed, ETA); in a log, a line if the interval is up. */
  tick(): void {
    const p = this.phase;
    if (!this.on || !p || p.ended) return;
    if (this.tty) this.draw();
    else this.render();
  }

  private startTimer(): void {
    if (!this.useTimer || !this.on || this.ticker) return;
    this.ticker = setInterval(() => this.tick(), this.tty ? 1000 : Math.max(1000, this.intervalMs));
    this.ticker.unref();
  }

  private stopTimer(): void {
    if (this.ticker) clearInterval(this.ticker);
    this.ticker = null;
  }

  private update(u: { phase: string; label: string; unit: string; total: number; done: number }): void {
    const key = `${u.phase}\0${u.label}`;
    let p = this.phase;
    if (!p || p.key !== key || p.ended) {
      if (p && !p.ended && p.key !== key) this.clear();
      p = this.phase = {
        key,
        label: u.label,
        unit: u.unit,
        total: u.total,
        done: u.done,
        initial: u.done,
        startedAt: this.now(),
        running: 0,
        failed: 0,
        scored: 0,
        passed: 0,
        ended: false,
        lastPlainAt: 0,
        plainLines: 0,
      };
      if (u.done >= u.total && u.total > 0 && p.key === key) {
        // A phase announced already complete (resumed): nothing to show.
        p.ended = true;
        return;
      }
      this.startTimer();
      this.render();
      return;
    }
    p.total = u.total;
    p.done = Math.max(p.done, u.done);
    this.render();
  }

  private render(): void {
    const p = this.phase;
    if (!this.on || !p || p.ended) return;
    const now = this.now();
    const ended = p.total > 0 && p.done >= p.total;
    if (this.tty) {
      if (ended) {
        p.ended = true;
        this.clear();
        this.stream.write(`${this.prefix()}${this.line(p, true)}\n`);
        this.drawn = false;
        return;
      }
      if (now - this.lastDraw < TTY_REDRAW_MS && this.drawn) return;
      this.draw();
      return;
    }
    if (ended) {
      p.ended = true;
      this.stream.write(`${this.prefix()}${this.line(p, true)}\n`);
      return;
    }
    const firstEta = p.plainLines === 0 && p.done > p.initial;
    if (firstEta || now - (p.lastPlainAt || p.startedAt) >= this.intervalMs) {
      this.stream.write(`${this.prefix()}${this.line(p, false)}\n`);
      p.lastPlainAt = now;
      p.plainLines++;
    }
  }

  private draw(): void {
    const p = this.phase;
    if (!p || p.ended) return;
    this.stream.write(`\r\x1b[2K${this.prefix()}${this.line(p, false)}`);
    this.lastDraw = this.now();
    this.drawn = true;
  }

  private clear(): void {
    if (this.tty && this.drawn) {
      this.stream.write("\r\x1b[2K");
      this.drawn = false;
    }
  }

  private redraw(): void {
    if (this.tty && this.phase && !this.phase.ended) this.draw();
  }

  private prefix(): string {
    return this.since === undefined ? "" : `[${((this.now() - this.since) / 1000).toFixed(0).padStart(4)}s] `;
  }

  /** `label: 3/8 rollouts, 0.4/s, ETA 12s (1 running, pass 33%)`, or at the end `label: 8/8 rollouts in 20s, 0.4/s (pass 50%)`. */
  private line(p: Phase, ended: boolean): string {
    const elapsed = (this.now() - p.startedAt) / 1000;
    const fresh = p.done - p.initial;
    const rate = elapsed > 0 && fresh > 0 ? fresh / elapsed : null;
    const pace = rate === null || p.total <= 1 ? "" : rate >= 1 ? `, ${rate.toFixed(1)} ${p.unit}/s` : `, ${(rate * 60).toFixed(1)} ${p.unit}/min`;
    const extra: string[] = [];
    if (p.unit === "rollouts") {
      if (!ended && p.running > 0) extra.push(`${p.running} running`);
      if (p.failed > 0) extra.push(`${p.failed} failed`);
      if (p.scored > 0) extra.push(`pass ${((p.passed / p.scored) * 100).toFixed(0)}%`);
    }
    const tail = extra.length > 0 ? ` (${extra.join(", ")})` : "";
    if (ended)
      return p.total === 1 ? `${p.label}: done in ${duration(elapsed)}` : `${p.label}: ${p.done}/${p.total} ${p.unit} in ${duration(elapsed)}${pace}${tail}`;
    const eta = rate === null ? "ETA –" : `ETA ${duration((p.total - p.done) / rate)}`;
    const bar = this.tty ? `${barOf(p.done, p.total)} ` : "";
    return `${p.label}: ${bar}${p.done}/${p.total} ${p.unit}${pace}, ${eta}, ${duration(elapsed)} elapsed${tail}`;
  }
}

function barOf(done: number, total: number): string {
  const width = 20;
  const filled = total > 0 ? Math.round((done / total) * width) : width;
  return `${"█".repeat(filled)}${"░".repeat(width - filled)}`;
}

/** 0.4s, 7s, 1m05s, 2h03m. */
export function duration(seconds: number): string {
  if (seconds < 9.95) return `${Math.max(0, seconds).toFixed(1)}s`;
  const s = Math.round(seconds);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
}
