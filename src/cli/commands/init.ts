/**
 * `reins init family NAME` and `reins init experiment NAME`: scaffolds from src/cli/templates/.
 * Every YAML file starts with the schema modeline; existing files are never overwritten.
 *
 * Where reins is installed in the project (node_modules/reins, found the way Node finds it), the
 * scaffolds point there: the modeline at node_modules/reins/schemas/…, the family's test at
 * `reins/testing`, the experiment at node_modules/reins/examples/tasks. Otherwise (reins run from
 * a clone against another directory) they point at the running reins by relative paths.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import type { Command } from "commander";
import { parse as parseYaml } from "yaml";
import { NAME_PATTERN, ReinsError } from "../../compiler/index.js";
import { EXIT } from "../exit-codes.js";
import { outputError } from "../failure.js";
import { makeDirectory, printJson, say } from "../io.js";

const RUNNING_REINS = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
const TEMPLATES = join(RUNNING_REINS, "src/cli/templates");
const SCHEMA = "schemas/v1alpha1/any.schema.json";
const STARTER_TASKS = "examples/tasks";

export interface ScaffoldFile {
  path: string;
  content: string;
}

/** POSIX relative path from a directory to a file, starting with ./ or ../. */
function rel(fromDir: string, to: string): string {
  const r = relative(fromDir, to).split(sep).join("/");
  return r.startsWith(".") ? r : `./${r}`;
}

function fill(template: string, values: Record<string, string>): string {
  return template.replace(/__([A-Z_]+)__/g, (m, key: string) => values[key] ?? m);
}

function template(kind: "family" | "experiment", file: string): string {
  return readFileSync(join(TEMPLATES, kind, `${file}.tmpl`), "utf8");
}

/** Nearest ancestor (or the directory itself) holding a package.json; the start when none does. */
function projectRoot(start: string): string {
  for (let d = resolve(start); ; d = dirname(d)) {
    if (existsSync(join(d, "package.json"))) return d;
    if (dirname(d) === d) return resolve(start);
  }
}

/**
 * The reins a project uses: `installed` when Node resolves `reins` from `start` (a
 * node_modules/reins up the tree, kept as that path even when it is a symlink, or the reins
 * checkout itself), else the running reins.
 */
export function locateReins(start: string): { root: string; installed: boolean } {
  for (let d = resolve(start); ; d = dirname(d)) {
    const candidate = join(d, "node_modules", "reins");
    if (existsSync(join(candidate, "package.json"))) return { root: candidate, installed: true };
    if (isReinsCheckout(d)) return { root: d, installed: true };
    if (dirname(d) === d) return { root: RUNNING_REINS, installed: false };
  }
}

function isReinsCheckout(dir: string): boolean {
  try {
    return (JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { name?: unknown }).name === "reins";
  } catch {
    return false;
  }
}

/** The files of a new task family. Pure given the templates. */
export function buildFamilyScaffold(opts: { name: string; category: string; dir: string; cwd: string }): ScaffoldFile[] {
  const famDir = resolve(opts.cwd, opts.dir, opts.name);
  const famFile = join(famDir, "family.yaml");
  const testDir = join(projectRoot(famDir), "test", "tasks");
  const testFile = join(testDir, `${opts.name}.test.mjs`);
  const reins = locateReins(famDir);
  const shown = (p: string) => relative(opts.cwd, p).split(sep).join("/") || ".";
  const values = {
    NAME: opts.name,
    CATEGORY: opts.category,
    SCHEMA: rel(famDir, join(reins.root, SCHEMA)),
    FAMILY: shown(famFile),
    TEST: shown(testFile),
    TESTING: reins.installed ? "reins/testing" : rel(testDir, join(reins.root, "src/testing/entry.mjs")),
    FAMILY_FROM_TEST: rel(testDir, famFile),
  };
  return [
    { path: famFile, content: fill(template("family", "family.yaml"), values) },
    { path: join(famDir, "solution.mjs"), content: fill(template("family", "solution.mjs"), values) },
    { path: join(famDir, "README.md"), content: fill(template("family", "README.md"), values) },
    { path: testFile, content: fill(template("family", "family.test.mjs"), values) },
  ];
}

/** The families under a tasks directory (subdirectories with a family.yaml), by name. */
function listFamilies(tasksDir: string): { name: string; dir: string }[] {
  if (!existsSync(tasksDir)) return [];
  const families: { name: string; dir: string }[] = [];
  for (const d of readdirSync(tasksDir, { withFileTypes: true })) {
    const file = join(tasksDir, d.name, "family.yaml");
    if (!d.isDirectory() || !existsSync(file)) continue;
    try {
      const name = (parseYaml(readFileSync(file, "utf8")) as { metadata?: { name?: unknown } })?.metadata?.name;
      if (typeof name === "string") families.push({ name, dir: join(tasksDir, d.name) });
    } catch {
      // not a family we can read; leave it out
    }
  }
  return families.sort((a, b) => a.name.localeCompare(b.name));
}

/** The files of a new experiment (an Experiment and its Evaluation). */
export function buildExperimentScaffold(opts: { name: string; dir: string; tasks?: string; cwd: string }): ScaffoldFile[] {
  const expDir = resolve(opts.cwd, opts.dir, opts.name);
  const reins = locateReins(expDir);
  const tasksDir = opts.tasks ? resolve(opts.cwd, opts.tasks) : join(reins.root, STARTER_TASKS);
  const families = listFamilies(tasksDir);
  const selectors = families.length > 0 ? families.map((f) => `    - family: ${f.name}`).join("\n") : "    - labels: {split: train}";
  // The family directories, not the directory holding them: it may hold Experiments or
  // Evaluations of its own (the starter library does), which would make the plan target ambiguous.
  const imports = (families.length > 0 ? families.map((f) => f.dir) : [tasksDir]).map((d) => `    - ${rel(expDir, d)}`).join("\n");
  const evalFile = join(expDir, "evaluation.yaml");
  const values = {
    NAME: opts.name,
    SCHEMA: rel(expDir, join(reins.root, SCHEMA)),
    TASKS: rel(expDir, tasksDir),
    IMPORTS: imports,
    SELECTORS: selectors,
    EVAL_FILE: relative(opts.cwd, evalFile).split(sep).join("/"),
  };
  return [
    { path: join(expDir, "experiment.yaml"), content: fill(template("experiment", "experiment.yaml"), values) },
    { path: evalFile, content: fill(template("experiment", "evaluation.yaml"), values) },
  ];
}

/** Writes every file, or none when one already exists. Returns the existing paths on refusal. */
export function writeScaffold(files: readonly ScaffoldFile[]): { written: string[]; existing: string[] } {
  const existing = files.filter((f) => existsSync(f.path)).map((f) => f.path);
  if (existing.length > 0) return { written: [], existing };
  const written: string[] = [];
  for (const f of files) {
    makeDirectory(dirname(f.path));
    writeFileSync(f.path, f.content, { flag: "wx", mode: f.path.endsWith(".mjs") ? 0o755 : 0o644 });
    written.push(f.path);
  }
  return { written, existing: [] };
}

interface InitOptions {
  dir: string;
  json?: boolean;
  category?: string;
  tasks?: string;
}

function finish(kind: string, name: string, files: ScaffoldFile[], opts: InitOptions, next: string[]): void {
  const cwd = process.cwd();
  const shown = (p: string) => relative(cwd, p).split(sep).join("/");
  let result: { written: string[]; existing: string[] };
  try {
    result = writeScaffold(files);
  } catch (err) {
    throw outputError((err as NodeJS.ErrnoException)?.path ?? resolve(opts.dir), err);
  }
  if (result.existing.length > 0) {
    const list = result.existing.map(shown);
    throw new ReinsError(
      "FileExists",
      `${list.join(", ")} already exist${list.length === 1 ? "s" : ""}; reins init never overwrites files.`,
      `Choose another name or --dir, or move the existing ${list.length === 1 ? "file" : "files"} away.`,
    );
  }
  const created = result.written.map(shown);
  if (opts.json) printJson({ ok: true, kind, name, created, next });
  else {
    for (const c of created) say(`created ${c}`);
    say("");
    say("next:");
    for (const n of next) say(`  ${n}`);
  }
  process.exitCode = EXIT.ok;
}

function checkName(kind: string, name: string): void {
  if (NAME_PATTERN.test(name) && name.length <= 40) return;
  throw new ReinsError(
    "InvalidName",
    `"${name}" is not a valid ${kind} name.`,
    "Use lowercase letters, digits and '-', starting and ending with a letter or digit (at most 40 characters), e.g. invoice-triage.",
  );
}

export function register(program: Command): void {
  const init = program.command("init").description("Scaffold a task family or an experiment from templates.");
  init
    .command("family")
    .description("Create a task family: family.yaml, a reference solution with mistakes, a README and a test.")
    .argument("<name>", "family name (lowercase, digits, '-')")
    .option("--dir <dir>", "parent directory of the family", ".")
    .option("--category <category>", "category label of its tasks", "general")
    .option("--json", "print {ok, created} as JSON on stdout")
    .action((name: string, opts: InitOptions) => {
      checkName("family", name);
      const files = buildFamilyScaffold({ name, category: opts.category ?? "general", dir: opts.dir, cwd: process.cwd() });
      const shown = (p: string) => relative(process.cwd(), p).split(sep).join("/");
      finish("family", name, files, opts, [
        `reins validate ${shown(files[0].path)}`,
        `reins render ${shown(files[0].path)}`,
        `node --test ${shown(files[3].path)}`,
      ]);
    });
  init
    .command("experiment")
    .description("Create an Experiment and its Evaluation over a directory of task families.")
    .argument("<name>", "experiment name (lowercase, digits, '-')")
    .option("--dir <dir>", "parent directory of the experiment", ".")
    .option("--tasks <dir>", "directory of task families to import (default: the starter library)")
    .option("--json", "print {ok, created} as JSON on stdout")
    .action((name: string, opts: InitOptions) => {
      checkName("experiment", name);
      if (opts.tasks !== undefined && !existsSync(resolve(opts.tasks))) {
        throw new ReinsError("TasksDirNotFound", `The tasks directory ${opts.tasks} does not exist.`);
      }
      const files = buildExperimentScaffold({ name, dir: opts.dir, cwd: process.cwd(), ...(opts.tasks ? { tasks: opts.tasks } : {}) });
      const shown = (p: string) => relative(process.cwd(), p).split(sep).join("/");
      // Specs read only their project (the experiment's directory unless --project-root says
      // more): tasks of your own beside it need the directory holding both.
      const root = opts.tasks !== undefined ? commonDir(dirname(files[0].path), resolve(opts.tasks)) : undefined;
      const flag = root !== undefined && root !== dirname(files[0].path) ? ` --project-root ${shown(root) || "."}` : "";
      finish("experiment", name, files, opts, [
        `reins validate ${shown(files[0].path)}${flag}`,
        `reins plan ${shown(files[0].path)}${flag} --out plan.json`,
        `reins eval ${shown(files[1].path)}${flag}`,
      ]);
    });
}

/** The deepest directory holding both a and b (absolute). */
function commonDir(a: string, b: string): string {
  let d = a;
  const outside = (rel: string) => rel === ".." || rel.startsWith(`..${sep}`);
  while (outside(relative(d, b)) && dirname(d) !== d) d = dirname(d);
  return d;
}
