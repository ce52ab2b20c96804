/**
 * Chat templates rendered on a work budget. A Model's Jinja template is input from whoever wrote
 * the spec, and it runs on the proxy's one event loop for every new message of every rollout, with
 * inputs the policy chooses; @huggingface/jinja itself has no limit, so `{% for i in
 * range(200000000) %}` would fill the memory and nested loops would hold the proxy for hours.
 * Every render here counts its work as it runs and stops with `ChatTemplateTooMuchWork`:
 * - steps: every expression and statement evaluated is one step, every run of a loop body ten
 *   (the interpreter's cost of an iteration), every item `range` would make one (counted before the
 *   list is made), and the strings and lists filters and calls return one step per KiB or per
 *   16 items. A render may take `steps` plus `stepsPerItem` for each message and tool it is given
 *   (the work of a sound template grows with its input: the Qwen3 template takes about 100 steps
 *   a message);
 * - size: no string may grow past `chars` characters and no list past `chars` items (checked as
 *   each value is made), and an `indent`/`tojson` width is at most `maxIndent`;
 * - depth: expressions nest at most `depth` levels (a macro calling itself).
 * The compiler renders every Model's template once on a small conversation with the same budget
 * (`chatTemplateWorkProblem`), so a template that always loops fails `reins validate`; the runtime
 * renders every prompt through `renderChatTemplate`, so one that loops only for some inputs fails
 * that call with a clear error. Pure (no I/O); used by the compiler and the runtime.
 */
import { Environment as JinjaEnvironment, Interpreter as JinjaInterpreter, Template } from "@huggingface/jinja";
import { renderableChatTemplate } from "../contract/chat-template-text.js";
import { ReinsError } from "../contract/problem.js";

export interface ChatTemplateLimits {
  /** Steps any render may take. */
  steps: number;
  /** More steps for each message and each tool the render is given. */
  stepsPerItem: number;
  /** Longest string (characters) or list (items) a render may make: its output included. */
  chars: number;
  /** Widest `indent` / `tojson(indent=…)`. */
  maxIndent: number;
  /** Deepest nesting of expressions and statements. */
  depth: number;
}

export const CHAT_TEMPLATE_LIMITS: ChatTemplateLimits = {
  steps: 200_000,
  stepsPerItem: 1_000,
  chars: 32 * 1024 * 1024,
  maxIndent: 1_024,
  depth: 1_000,
};

/** The steps one run of a loop body costs (the interpreter makes a scope and a loop object each time). */
const ITERATION_STEPS = 10;
/** Node types whose string or list results are made by real work (filters, calls, list `+`). */
const MADE = new Set(["FilterExpression", "FilterStatement", "CallExpression", "BinaryExpression"]);

/** A render that passed a limit: the template's own fault, not its input's. */
export class ChatTemplateTooMuchWork extends ReinsError {
  constructor(message: string) {
    super("ChatTemplateTooMuchWork", message);
  }
}

/** Parse a chat template as transformers writes them ({% generation %} tags included). Throws the parser's error. */
export function parseChatTemplate(source: string): Template {
  return new Template(renderableChatTemplate(source));
}

/*
 * The interpreter's classes as this file uses them: the package's typings re-export them from a
 * path NodeNext does not resolve, so they are typed here (stable in @huggingface/jinja 0.5).
 */
interface Evaluated {
  type: string;
  value: unknown;
}
interface Node {
  type: string;
}
interface Environment {
  set(name: string, value: unknown): unknown;
}
interface InterpreterShape {
  run(program: unknown): Evaluated;
  evaluate(statement: Node | undefined, environment: Environment): Evaluated;
}
const Environment = JinjaEnvironment as unknown as new () => Environment;
const Interpreter = JinjaInterpreter as unknown as new (env: Environment) => InterpreterShape;

/** The interpreter's private methods this file wraps. */
interface Internals {
  evaluateBlock(statements: unknown[], environment: Environment): Evaluated;
  evaluateArguments(args: unknown[], environment: Environment): [Evaluated[], Map<string, Evaluated>];
  applyFilter(operand: Evaluated, filterNode: { type: string; value?: string; callee?: { value?: string } }, environment: Environment): Evaluated;
}

/** The work of one render so far. */
class Meter {
  spent = 0;
  constructor(
    readonly budget: number,
    readonly limits: ChatTemplateLimits,
    private readonly items: number,
  ) {}

  spend(steps: number): void {
    this.spent += steps;
    if (this.spent > this.budget) {
      throw new ChatTemplateTooMuchWork(
        `the chat template did more than ${this.budget.toLocaleString("en-US")} steps of work (${this.limits.steps.toLocaleString("en-US")} plus ${this.limits.stepsPerItem.toLocaleString("en-US")} for each of the ${this.items} messages and tools it was given): it loops too much`,
      );
    }
  }

  size(length: number, what: "string" | "list"): void {
    if (length > this.limits.chars) {
      throw new ChatTemplateTooMuchWork(
        `the chat template made a ${what} of ${length.toLocaleString("en-US")} ${what === "string" ? "characters" : "items"}; the limit is ${this.limits.chars.toLocaleString("en-US")}`,
      );
    }
  }
}

class BoundedInterpreter extends Interpreter {
  private depth = 0;
  private readonly loopBodies = new WeakSet<object>();
  private filter: string | undefined;

  constructor(
    env: Environment,
    private readonly meter: Meter,
  ) {
    super(env);
    const self = this as unknown as Internals;
    const block = self.evaluateBlock;
    const args = self.evaluateArguments;
    const apply = self.applyFilter;
    self.evaluateBlock = (statements, environment) => {
      this.meter.spend(this.loopBodies.has(statements) ? ITERATION_STEPS : 1);
      return block.call(this, statements, environment);
    };
    self.applyFilter = (operand, filterNode, environment) => {
      const outer = this.filter;
      this.filter = filterNode.type === "Identifier" ? filterNode.value : filterNode.callee?.value;
      try {
        return apply.call(this, operand, filterNode, environment);
      } finally {
        this.filter = outer;
      }
    };
    self.evaluateArguments = (list, environment) => {
      const filter = this.filter;
      this.filter = undefined;
      const out = args.call(this, list, environment);
      this.filter = filter;
      if (filter === "indent" || filter === "tojson") {
        for (const v of [...out[0], ...out[1].values()]) {
          if (typeof v.value === "number" && v.value > this.meter.limits.maxIndent) {
            throw new ChatTemplateTooMuchWork(`the chat template asks ${filter} for a width of ${v.value}; the limit is ${this.meter.limits.maxIndent}`);
          }
        }
      }
      return out;
    };
  }

  override evaluate(statement: Node | undefined, environment: Environment): Evaluated {
    this.meter.spend(1);
    if (statement?.type === "For") this.loopBodies.add((statement as unknown as { body: object }).body);
    if (++this.depth > this.meter.limits.depth) {
      throw new ChatTemplateTooMuchWork(`the chat template nests more than ${this.meter.limits.depth} levels deep (a macro that calls itself?)`);
    }
    try {
      const value = super.evaluate(statement, environment);
      const v = value.value as unknown;
      if (typeof v === "string") {
        this.meter.size(v.length, "string");
        if (statement && MADE.has(statement.type) && statement.type !== "BinaryExpression") this.meter.spend(Math.ceil(v.length / 1024));
      } else if (Array.isArray(v)) {
        this.meter.size(v.length, "list");
        if (statement && MADE.has(statement.type)) this.meter.spend(Math.ceil(v.length / 16));
      }
      return value;
    } finally {
      this.depth--;
    }
  }
}

/**
 * Render a parsed chat template with `context` (messages, tools, add_generation_prompt and the
 * tokenizer's variables) on the work budget. Throws ChatTemplateTooMuchWork past a limit, and the
 * template's own errors (raise_exception, an undefined operation) as they are.
 */
export function renderChatTemplate(template: Template, context: Record<string, unknown>, limits: Partial<ChatTemplateLimits> = {}): string {
  const l: ChatTemplateLimits = { ...CHAT_TEMPLATE_LIMITS, ...limits };
  const items = lengthOf(context.messages) + lengthOf(context.tools);
  const meter = new Meter(l.steps + l.stepsPerItem * items, l, items);
  const env = new Environment();
  // The globals @huggingface/jinja's Template.render sets, with `range` counted before it is made.
  const globals: Record<string, unknown> = {
    false: false,
    true: true,
    none: null,
    raise_exception: (message: unknown) => {
      throw new Error(String(message));
    },
    range: (start: number, stop?: number, step = 1) => boundedRange(meter, start, stop, step),
    strftime_now: (format: string) => strftime(new Date(), format),
    True: true,
    False: false,
    None: null,
  };
  for (const [key, value] of Object.entries(globals)) env.set(key, value);
  for (const [key, value] of Object.entries(context)) env.set(key, value);
  const interpreter = new BoundedInterpreter(env, meter);
  let out: Evaluated;
  try {
    out = interpreter.run(template.parsed);
  } catch (err) {
    if (err instanceof RangeError && /call stack/i.test(err.message))
      throw new ChatTemplateTooMuchWork("the chat template nests too deeply (a macro that calls itself?)");
    throw err;
  }
  return String(out.value);
}

/** A small conversation (system, user, an assistant tool call, its result, user) and one tool. */
const PROBE_CONTEXT = {
  messages: [
    { role: "system", content: "You are a careful assistant." },
    { role: "user", content: "What does a.txt say?" },
    { role: "assistant", content: "", tool_calls: [{ type: "function", id: "call_1", function: { name: "read_file", arguments: { path: "a.txt" } } }] },
    { role: "tool", content: "hello", tool_call_id: "call_1", name: "read_file" },
    { role: "user", content: "Thanks." },
  ],
  tools: [
    {
      type: "function",
      function: {
        name: "read_file",
        description: "Read a file.",
        parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
      },
    },
  ],
  add_generation_prompt: true,
};

/**
 * The compiler's check of a template that parses: rendered once on a small conversation on the
 * same budget. The message when it passes a limit; undefined otherwise (other render errors are
 * the runtime's to report, with the messages that cause them).
 */
export function chatTemplateWorkProblem(
  source: string,
  variables: Readonly<Record<string, string>> = {},
  limits: Partial<ChatTemplateLimits> = {},
): string | undefined {
  let template: Template;
  try {
    template = parseChatTemplate(source);
  } catch {
    return undefined;
  }
  try {
    renderChatTemplate(template, { ...variables, ...structuredClone(PROBE_CONTEXT) }, limits);
  } catch (err) {
    if (err instanceof ChatTemplateTooMuchWork) return err.message;
  }
  return undefined;
}

function lengthOf(v: unknown): number {
  return Array.isArray(v) ? v.length : 0;
}

/** Python's range, its length counted (and refused past the budget) before the list is made. */
function boundedRange(meter: Meter, start: number, stop: number | undefined, step: number): number[] {
  if (stop === undefined) {
    stop = start;
    start = 0;
  }
  if (step === 0) throw new Error("range() step must not be zero");
  const count = Math.max(0, Math.ceil((stop - start) / step));
  if (!Number.isFinite(count)) throw new ChatTemplateTooMuchWork("the chat template asks range() for an endless list");
  meter.spend(count);
  meter.size(count, "list");
  const out: number[] = [];
  if (step > 0) for (let i = start; i < stop; i += step) out.push(i);
  else for (let i = start; i > stop; i += step) out.push(i);
  return out;
}

/** strftime_now as @huggingface/jinja writes it (%Y %m %d %b %B %H %M %%). */
function strftime(date: Date, format: string): string {
  const pad2 = (n: number) => (n < 10 ? `0${n}` : String(n));
  return format.replace(/%[YmdbBHM%]/g, (token) => {
    switch (token) {
      case "%Y":
        return String(date.getFullYear());
      case "%m":
        return pad2(date.getMonth() + 1);
      case "%d":
        return pad2(date.getDate());
      case "%b":
        return new Intl.DateTimeFormat(undefined, { month: "short" }).format(date);
      case "%B":
        return new Intl.DateTimeFormat(undefined, { month: "long" }).format(date);
      case "%H":
        return pad2(date.getHours());
      case "%M":
        return pad2(date.getMinutes());
      default:
        return "%";
    }
  });
}
