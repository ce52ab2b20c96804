/**
 * The compiler's work limits: a spec of a few hundred bytes must not be able to make `validate` or
 * `plan` run for minutes or exhaust memory. Each limit is checked before the work it bounds
 * (a matrix's size from its axis lengths, a loop's iterations as they run, a helper's output
 * before it is built), and ends in its own diagnostic naming the limit and its value.
 * The values fit real task sets (tens of thousands of tasks; the compile benchmark's 135K) and
 * compile within about a minute and a couple of GiB on a small machine. Documented in the README.
 */

/** Tasks in the whole world: Task documents plus every family's expansion, counted before expanding. */
export const MAX_TASKS = 200_000;
/** Values walked to render families: tasks × values (strings, numbers, lists, maps) in the template. */
export const MAX_RENDERED_VALUES = 20_000_000;
/** Values in one YAML document once its aliases are expanded. */
export const MAX_DOCUMENT_VALUES = 1_000_000;
/** `include` / `exclude` entries × matrix cells: each entry is compared with each cell. */
export const MAX_MATRIX_COMPARISONS = 5_000_000;
/** Template work for one task: loop iterations, helper calls and rendered strings. */
export const MAX_TASK_TEMPLATE_STEPS = 100_000;
/** Template work for the whole compile. */
export const MAX_TOTAL_TEMPLATE_STEPS = 10_000_000;
/** Bytes produced while rendering one task (loop bodies and helper outputs, counted at each level). */
export const MAX_TASK_TEMPLATE_WORK_BYTES = 16 * 1024 * 1024;
/** Bytes produced while rendering, for the whole compile. */
export const MAX_TOTAL_TEMPLATE_WORK_BYTES = 1024 * 1024 * 1024;
/** One rendered string (an instruction, a file's content) and one helper's output. */
export const MAX_RENDERED_STRING_BYTES = 1024 * 1024;
/** All rendered strings of one task. */
export const MAX_RENDERED_TASK_BYTES = 2 * 1024 * 1024;
/** All rendered strings of every family: what the plan would carry. */
export const MAX_RENDERED_TOTAL_BYTES = 128 * 1024 * 1024;
/**
 * Rollouts in the plans of one compile (steps × tasks per step × group size, evaluations included;
 * `validate` plans every Experiment and Evaluation given). A million take about 2 GiB and 15 s here.
 */
export const MAX_PLAN_ROLLOUTS = 1_000_000;

export type LimitCode = "TemplateTooMuchWork" | "RenderedTooLarge";

/** Thrown inside template rendering when a limit is passed; caught by renderTemplate. */
export class LimitExceeded extends Error {
  constructor(
    readonly code: LimitCode,
    message: string,
    /** 1-based line within the template of the block or helper that passed it, when known. */
    readonly line?: number,
  ) {
    super(message);
  }
}

/**
 * Counters for template work: per task (reset by `startTask`) and for the whole compile.
 * `spend` throws LimitExceeded as soon as either is passed.
 */
export class TemplateBudget {
  taskSteps = 0;
  taskBytes = 0;
  totalSteps = 0;
  totalBytes = 0;
  renderedTask = 0;
  renderedTotal = 0;

  startTask(): void {
    this.taskSteps = 0;
    this.taskBytes = 0;
    this.renderedTask = 0;
  }

  spend(steps: number, bytes: number, line?: number): void {
    this.taskSteps += steps;
    this.totalSteps += steps;
    this.taskBytes += bytes;
    this.totalBytes += bytes;
    if (this.taskSteps > MAX_TASK_TEMPLATE_STEPS)
      throw new LimitExceeded(
        "TemplateTooMuchWork",
        `The template takes more than ${formatCount(MAX_TASK_TEMPLATE_STEPS)} steps (loop iterations, helper calls) for one task; that is the limit.`,
        line,
      );
    if (this.totalSteps > MAX_TOTAL_TEMPLATE_STEPS)
      throw new LimitExceeded(
        "TemplateTooMuchWork",
        `Templates take more than ${formatCount(MAX_TOTAL_TEMPLATE_STEPS)} steps (loop iterations, helper calls) in all; that is the limit.`,
        line,
      );
    if (this.taskBytes > MAX_TASK_TEMPLATE_WORK_BYTES)
      throw new LimitExceeded(
        "TemplateTooMuchWork",
        `The template produces more than ${formatBytes(MAX_TASK_TEMPLATE_WORK_BYTES)} while rendering one task (loop bodies and helper outputs); that is the limit.`,
        line,
      );
    if (this.totalBytes > MAX_TOTAL_TEMPLATE_WORK_BYTES)
      throw new LimitExceeded(
        "TemplateTooMuchWork",
        `Templates produce more than ${formatBytes(MAX_TOTAL_TEMPLATE_WORK_BYTES)} while rendering in all; that is the limit.`,
        line,
      );
  }

  /** A finished rendered string of `n` characters; returns the problem, if any. */
  rendered(n: number): string | undefined {
    this.renderedTask += n;
    this.renderedTotal += n;
    if (n > MAX_RENDERED_STRING_BYTES) return `A rendered string is ${formatBytes(n)}; the limit is ${formatBytes(MAX_RENDERED_STRING_BYTES)} per string.`;
    if (this.renderedTask > MAX_RENDERED_TASK_BYTES)
      return `The rendered task is more than ${formatBytes(MAX_RENDERED_TASK_BYTES)}; that is the limit per task.`;
    if (this.renderedTotal > MAX_RENDERED_TOTAL_BYTES)
      return `The rendered tasks are more than ${formatBytes(MAX_RENDERED_TOTAL_BYTES)} in all; that is the limit.`;
    return undefined;
  }

  /** Whether the whole-compile limits are spent (then every further task would fail the same way). */
  spent(): boolean {
    return this.totalSteps > MAX_TOTAL_TEMPLATE_STEPS || this.totalBytes > MAX_TOTAL_TEMPLATE_WORK_BYTES || this.renderedTotal > MAX_RENDERED_TOTAL_BYTES;
  }
}

/** Values (scalars and collections) in a plain value, and the `{{` in its strings; counting stops past `max`. */
export function countValues(root: unknown, max: number): number {
  let n = 0;
  const stack: unknown[] = [root];
  while (stack.length > 0 && n <= max) {
    const v = stack.pop();
    n++;
    if (typeof v === "string") for (let i = v.indexOf("{{"); i >= 0 && n <= max; i = v.indexOf("{{", i + 2)) n++;
    else if (Array.isArray(v)) for (const x of v) stack.push(x);
    else if (v !== null && typeof v === "object") for (const x of Object.values(v)) stack.push(x);
  }
  return n;
}

export function formatCount(n: number): string {
  return n.toLocaleString("en-US");
}

export function formatBytes(n: number): string {
  if (n >= 1024 * 1024 && n % (1024 * 1024) === 0) return `${formatCount(n / (1024 * 1024))} MiB`;
  if (n >= 1024 * 1024) return `${(n / (1024 * 1024)).toFixed(1)} MiB`;
  return `${formatCount(n)} bytes`;
}
