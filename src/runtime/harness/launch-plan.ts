/**
 * Pure part of launching a harness: from a ResolvedHarness and the rollout's facts, the exact argv,
 * environment and config files. Nothing here touches the disk or spawns anything.
 *
 * The environment starts empty (no host variable leaks in, so no host secret does either): PATH,
 * LANG and HOME, then the harness's `env`, then its `optOuts`, then whatever the caller adds
 * (e.g. proxy variables of a sandbox). Templates are Handlebars in strict mode (a missing variable is
 * a problem, not an empty string), without HTML escaping, in an isolated environment whose only
 * helper is `json` (a JSON string literal, also a valid TOML basic string).
 *
 * Secrets: `${VAR}` / `${VAR:-default}` references in the harness's `env` and `homeFiles` come
 * through the plan unresolved (the compiler never substitutes them) and are read here, at the last
 * moment, from reins's own environment (`LaunchRuntime.hostEnv`); `$${...}` is a literal `${...}`.
 * A value is bound as a template variable, never spliced into the template text, so a secret is
 * never read as a template and rendered text (an instruction that says "${HOME}") never as a
 * reference. An unset variable without a default is the problem `HarnessVariableUnset`.
 *
 * The instruction is text a task wrote; one that starts with "-" must not be read as an option, so
 * the shipped harnesses put it after a "--" (end of options) at the end of their command. Args
 * reins adds (knobs, MCP) therefore go before the command's first "--", or at its end when it has
 * none (the compiler warns of a command whose instruction is not protected: harness-argv.ts).
 *
 * Knobs: for each knob the plan sets (`knobValues`: system prompt, appended system prompt, tools,
 * max turns), the harness's `knobs.<name>.args` are added to argv and its `knobs.<name>.env` set,
 * rendered with `{{value}}` added to the usual variables (a list joins with `{{join value ","}}`);
 * homeFiles templates see every knob as `{{knobs.<name>}}` (null when unset).
 */
import Handlebars from "handlebars";
import path from "node:path";
import type { ResolvedHarness } from "../../compiler/contract/plan.js";
import { KNOB_NAMES, type KnobName } from "../../compiler/contract/vocabulary.js";
import { fail, succeed, type Outcome } from "./problem.js";

export interface LaunchContext {
  instruction: string;
  /** Absolute path of the task workspace (the harness's cwd). */
  workspace: string;
  /** Proxy base URL of this rollout, without /v1 (a harness or its template appends it). */
  baseUrl: string;
  apiKey: string;
  /** Absolute path of a fresh, empty HOME for this run. */
  home: string;
  /** Overrides the harness's own `model`. */
  model?: string;
  /** The rollout's MCP servers as the harness reaches them (template variable `mcpServers`; [] when none). */
  mcpServers?: { name: string; url: string; tools: string[] | null }[];
}

export interface LaunchRuntime {
  /** Directories put first on PATH (node's bin dir, the package's .bin). */
  pathDirs: string[];
  /** Absolute path of the installed executable; replaces argv[0] when argv[0] is its name. */
  bin?: string;
  /** Absolute path of the node binary the harness runs on. */
  node: string;
  /** Absolute path of reins-agent's entry script (template variable `reinsAgent`). */
  reinsAgent: string;
  /** Variables added last (they win), e.g. HTTPS_PROXY for a sandbox's egress recorder. */
  extraEnv?: Record<string, string>;
  /** Base PATH after pathDirs; default a fixed system PATH. */
  systemPath?: string;
  lang?: string;
  /** Where `${VAR}` references in the harness's env and homeFiles are read from; default process.env. */
  hostEnv?: Readonly<Record<string, string | undefined>>;
}

export interface LaunchPlan {
  argv: string[];
  env: Record<string, string>;
  cwd: string;
  home: string;
  /** Absolute paths under `home`, content rendered. */
  homeFiles: { path: string; content: string }[];
}

export const SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

const handlebars = Handlebars.create();
handlebars.registerHelper("json", (value: unknown) => JSON.stringify(value));
handlebars.registerHelper("join", (list: unknown, sep: unknown) => (Array.isArray(list) ? list.join(typeof sep === "string" ? sep : ", ") : String(list)));
/** `{{includes knobs.tools "a" "b"}}`: whether a list holds any of the values ("true"/"false"; false for a missing list). */
handlebars.registerHelper("includes", (list: unknown, ...rest: unknown[]) => Array.isArray(list) && rest.slice(0, -1).some((v) => list.includes(v)));

export type TemplateVars = Record<string, unknown>;

/** Renders one template; `where` names it in the problem (e.g. "env.ANTHROPIC_BASE_URL"). */
export function renderTemplate(template: string, vars: TemplateVars, where: string): Outcome<string> {
  try {
    return succeed(handlebars.compile(template, { strict: true, noEscape: true })(vars));
  } catch (e) {
    const reason = (e as Error).message.split("\n")[0];
    return fail(
      "HarnessTemplateInvalid",
      `The harness template at ${where} does not render: ${reason}.`,
      `Use only {{instruction}}, {{workspace}}, {{model}}, {{baseUrl}}, {{apiKey}}, {{home}}, {{node}} and {{reinsAgent}}, {{value}} in a knob's args and env, {{knobs.<name>}} in homeFiles (and the {{json x}}, {{join list sep}} and {{includes list x…}} helpers).`,
    );
  }
}

/** `${NAME}`, `${NAME:-default}`, or the escaped `$${...}` (the same syntax as the compiler's interpolation). */
const REFERENCE = /(\$?)\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

/** Names a template refers to with `${NAME}` that have no value in `env` and no default. */
export function unsetReferences(template: string, env: Readonly<Record<string, string | undefined>>): string[] {
  const out: string[] = [];
  for (const m of template.matchAll(REFERENCE)) {
    const [, escaped, name, def] = m;
    if (escaped !== "$" && def === undefined && !env[name!]) out.push(name!);
  }
  return out;
}

/** Every `${VAR}` a harness's env and homeFiles need that `env` lacks, sorted, once each. */
export function unsetHarnessVariables(harness: ResolvedHarness, env: Readonly<Record<string, string | undefined>> = process.env): string[] {
  const templates = [...Object.values(harness.env), ...harness.homeFiles.map((f) => f.content)];
  return [...new Set(templates.flatMap((t) => unsetReferences(t, env)))].sort();
}

/** Fails with `HarnessVariableUnset` when `env` lacks a variable the harness's env or homeFiles refer to. */
export function checkHarnessVariables(harness: ResolvedHarness, env: Readonly<Record<string, string | undefined>> = process.env): Outcome<void> {
  const names = unsetHarnessVariables(harness, env);
  return names.length > 0 ? unsetProblem(harness, names) : succeed(undefined);
}

function unsetProblem<T>(harness: ResolvedHarness, names: string[]): Outcome<T> {
  const list = names.map((n) => `\${${n}}`).join(", ");
  return fail(
    "HarnessVariableUnset",
    `The harness ${harness.name} needs ${list} from reins's environment, but ${names.length === 1 ? "it is" : "they are"} not set.`,
    `Export ${names.join(", ")} before the run (the plan keeps only the reference), or give a default with \${${names[0]}:-value}.`,
  );
}

/**
 * Render a template whose `${VAR}` references are read from `env`: each becomes a private
 * template variable (`{{[$env0]}}`), so the value is inserted verbatim.
 */
function renderWithReferences(template: string, vars: TemplateVars, env: Readonly<Record<string, string | undefined>>, where: string): Outcome<string> {
  const bound: TemplateVars = { ...vars };
  let n = 0;
  const text = template.replace(REFERENCE, (whole, escaped: string, name: string, def: string | undefined) => {
    if (escaped === "$") return whole.slice(1);
    const key = `$env${n++}`;
    bound[key] = env[name] || def || "";
    return `{{[${key}]}}`;
  });
  return renderTemplate(text, bound, where);
}

function renderAll(
  entries: [string, string][],
  vars: TemplateVars,
  prefix: string,
  env?: Readonly<Record<string, string | undefined>>,
): Outcome<[string, string][]> {
  const out: [string, string][] = [];
  for (const [key, template] of entries) {
    const r = env ? renderWithReferences(template, vars, env, `${prefix}${key}`) : renderTemplate(template, vars, `${prefix}${key}`);
    if (!r.ok) return r;
    out.push([key, r.value]);
  }
  return succeed(out);
}

/** A homeFiles path: relative, inside HOME. */
function homeFilePath(home: string, relative: string): Outcome<string> {
  const target = path.resolve(home, relative);
  const rel = path.relative(home, target);
  if (path.isAbsolute(relative) || rel === "" || rel.startsWith("..")) {
    return fail("HarnessHomeFileInvalid", `homeFiles path "${relative}" is not a file inside HOME.`, 'Give a relative path such as ".codex/config.toml".');
  }
  return succeed(target);
}

export function templateVars(harness: ResolvedHarness, ctx: LaunchContext, runtime: LaunchRuntime): TemplateVars {
  return {
    instruction: ctx.instruction,
    workspace: ctx.workspace,
    model: ctx.model ?? harness.model,
    baseUrl: ctx.baseUrl.replace(/\/+$/, ""),
    apiKey: ctx.apiKey,
    home: ctx.home,
    node: runtime.node,
    reinsAgent: runtime.reinsAgent,
    mcpServers: ctx.mcpServers ?? [],
  };
}

/** The argv, env and home files to launch `harness` for one rollout. */
export function buildLaunchPlan(harness: ResolvedHarness, ctx: LaunchContext, runtime: LaunchRuntime): Outcome<LaunchPlan> {
  if (harness.command.length === 0) {
    return fail(
      "HarnessCommandEmpty",
      `The harness ${harness.name} has an empty command.`,
      'Give the command line as a list, e.g. [claude, -p, "--", "{{instruction}}"].',
    );
  }
  const hostEnv = runtime.hostEnv ?? process.env;
  const variables = checkHarnessVariables(harness, hostEnv);
  if (!variables.ok) return variables;
  const vars = templateVars(harness, ctx, runtime);
  const argv: string[] = [];
  for (const [i, template] of harness.command.entries()) {
    const r = renderTemplate(template, vars, `command[${i}]`);
    if (!r.ok) return r;
    argv.push(r.value);
  }
  const knobs = renderKnobs(harness, vars);
  if (!knobs.ok) return knobs;
  // Added args go before the command's end of options ("--"), so that what follows it stays operands.
  const end = harness.command.indexOf("--");
  const operands = end > 0 ? argv.splice(end) : [];
  argv.push(...knobs.value.args);
  // A rollout with MCP servers: the harness's `mcp` says how it is told of them.
  const mcp = ctx.mcpServers && ctx.mcpServers.length > 0 ? harness.mcp : undefined;
  if (ctx.mcpServers && ctx.mcpServers.length > 0 && !mcp) {
    return fail(
      "McpUnsupportedByHarness",
      `The harness ${harness.name} was given MCP servers but its spec has no \`mcp\` section.`,
      "Add `mcp` to the Harness spec, or drop the servers.",
    );
  }
  for (const [i, template] of (mcp?.args ?? []).entries()) {
    const r = renderTemplate(template, vars, `mcp.args[${i}]`);
    if (!r.ok) return r;
    argv.push(r.value);
  }
  argv.push(...operands);
  if (runtime.bin && argv[0] === path.basename(runtime.bin)) argv[0] = runtime.bin;

  const env: Record<string, string> = {
    PATH: [...runtime.pathDirs, runtime.systemPath ?? SYSTEM_PATH].join(path.delimiter),
    LANG: runtime.lang ?? "C.UTF-8",
    HOME: ctx.home,
  };
  for (const [source, prefix, references] of [
    [harness.env, "env.", hostEnv],
    [harness.optOuts, "optOuts.", undefined],
  ] as const) {
    const rendered = renderAll(Object.entries(source), vars, prefix, references);
    if (!rendered.ok) return rendered;
    for (const [k, v] of rendered.value) env[k] = v;
    if (prefix === "env.") Object.assign(env, knobs.value.env);
  }
  const mcpEnv = renderAll(Object.entries(mcp?.env ?? {}), vars, "mcp.env.");
  if (!mcpEnv.ok) return mcpEnv;
  for (const [k, v] of mcpEnv.value) env[k] = v;
  Object.assign(env, runtime.extraEnv ?? {});

  const homeFiles: LaunchPlan["homeFiles"] = [];
  for (const file of [...harness.homeFiles, ...(mcp?.homeFiles ?? [])]) {
    const target = homeFilePath(ctx.home, file.path);
    if (!target.ok) return target;
    const content = renderWithReferences(file.content, { ...vars, knobs: knobVariables(harness) }, hostEnv, `homeFiles[${file.path}]`);
    if (!content.ok) return content;
    homeFiles.push({ path: target.value, content: content.value });
  }
  return succeed({ argv, env, cwd: ctx.workspace, home: ctx.home, homeFiles });
}

/** Every knob as homeFiles templates see it: its value, or null when the plan does not set it. */
export function knobVariables(harness: ResolvedHarness): Record<KnobName, unknown> {
  const values = harness.knobValues ?? {};
  return Object.fromEntries(KNOB_NAMES.map((k) => [k, values[k] ?? null])) as Record<KnobName, unknown>;
}

/** The argv appended and the environment set by the knobs the plan sets, in KNOB_NAMES order. */
function renderKnobs(harness: ResolvedHarness, vars: TemplateVars): Outcome<{ args: string[]; env: Record<string, string> }> {
  const args: string[] = [];
  const env: Record<string, string> = {};
  for (const knob of KNOB_NAMES) {
    const value = harness.knobValues?.[knob];
    if (value === undefined) continue;
    const apply = harness.knobs?.[knob];
    if (!apply) {
      return fail(
        "HarnessKnobUnsupported",
        `The harness ${harness.name} does not say how to apply \`${knob}\`.`,
        `Declare knobs.${knob} in the harness's spec, or do not set it.`,
      );
    }
    const knobVars = { ...vars, value };
    for (const [i, template] of (apply.args ?? []).entries()) {
      const r = renderTemplate(template, knobVars, `knobs.${knob}.args[${i}]`);
      if (!r.ok) return r;
      args.push(r.value);
    }
    const rendered = renderAll(Object.entries(apply.env ?? {}), knobVars, `knobs.${knob}.env.`);
    if (!rendered.ok) return rendered;
    for (const [k, v] of rendered.value) env[k] = v;
  }
  return succeed({ args, env });
}
