/**
 * The README and docs/ say only what is true of this repository: every relative link resolves, the
 * README links every docs page and stays short, every `reins <command>` they name is a command (and
 * every flag the README writes beside it is one of its flags), every `npm run X` is a script, every
 * repository path in backticks exists, and the README's example spec validates.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { reinsAsync } from "../reins-cli.js";
import { tempDir } from "../temp.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const MAX_README_LINES = 250;
const REPO_PATH_PREFIXES = ["src/", "test/", "examples/", "scripts/", "bench/", "docs/", "bin/"];

interface Page {
  /** Relative to the repository root, e.g. "docs/setup.md". */
  name: string;
  text: string;
  /** The text without its fenced code blocks. */
  prose: string;
  /** Inline code spans of the prose. */
  spans: string[];
  /** Lines of the fenced code blocks. */
  blockLines: string[];
}

const FENCE = /^(```|~~~)[^\n]*\n([\s\S]*?)^\1[ \t]*$/gm;

function page(name: string): Page {
  const text = readFileSync(join(ROOT, name), "utf8");
  const blockLines = [...text.matchAll(FENCE)].flatMap((m) => m[2]!.split("\n"));
  const prose = text.replace(FENCE, "");
  const spans = [...prose.matchAll(/`([^`\n]+)`/g)].map((m) => m[1]!);
  return { name, text, prose, spans, blockLines };
}

const docsPages = readdirSync(join(ROOT, "docs"))
  .filter((f) => f.endsWith(".md"))
  .sort();
const readme = page("README.md");
const pages = [readme, ...docsPages.map((f) => page(`docs/${f}`))];

/** `reins <command>`, `npx reins <command>` or `node bin/reins.js <command>`, where code shows it. */
const COMMAND = /(?:^|(?<=[\s([]))(?:node bin\/reins\.js|npx reins|reins)\s+([a-z][a-z-]*)/g;

interface Mention {
  page: string;
  command: string;
  /** The words after the command up to the end of the span or line, or the next command. */
  rest: string;
}

function mentions(p: Page): Mention[] {
  const out: Mention[] = [];
  for (const code of [...p.spans, ...p.blockLines]) {
    for (const m of code.matchAll(COMMAND)) {
      const after = code.slice(m.index! + m[0].length);
      const rest = after.split(/&&|\s\|\s|;|(?:node bin\/reins\.js|npx reins|\breins)\s/)[0]!;
      out.push({ page: p.name, command: m[1]!, rest });
    }
  }
  return out;
}

function flagsIn(rest: string): string[] {
  return [...rest.matchAll(/(?<![\w-])--[a-z][a-z0-9-]*/g)].map((m) => m[0]);
}

/** A subcommand listed under "Commands:" in a command's help. */
function subcommands(help: string): string[] {
  const section = help.split(/^Commands:\s*$/m)[1];
  if (!section) return [];
  return [...section.matchAll(/^ {2}([a-z][a-z-]*)\b/gm)].map((m) => m[1]!).filter((c) => c !== "help");
}

describe("README.md and docs/", () => {
  it("every relative link resolves to a file of the repository", () => {
    const broken: string[] = [];
    for (const p of pages) {
      for (const m of p.prose.matchAll(/!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
        const target = m[1]!;
        if (/^[a-z][a-z+.-]*:/i.test(target) || target.startsWith("#")) continue;
        const file = target.split("#")[0]!;
        if (!existsSync(normalize(join(ROOT, dirname(p.name), decodeURIComponent(file))))) broken.push(`${p.name}: ${target}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it("the README links every docs page", () => {
    const unlinked = docsPages.filter((f) => !new RegExp(`\\]\\((?:\\./)?docs/${f.replace(/\./g, "\\.")}(?:#[^)]*)?\\)`).test(readme.text));
    expect(unlinked).toEqual([]);
  });

  it(`the README is at most ${MAX_README_LINES} lines`, () => {
    expect(readme.text.replace(/\n+$/, "").split("\n").length).toBeLessThanOrEqual(MAX_README_LINES);
  });

  it("the README keeps the quickstart's seed table between its markers", () => {
    const start = readme.text.indexOf("<!-- seed-table -->");
    const end = readme.text.indexOf("<!-- /seed-table -->");
    expect(start).toBeGreaterThanOrEqual(0);
    expect(end).toBeGreaterThan(start);
    expect(readme.text.slice(start, end)).toMatch(/^\| seed \|/m);
  });

  it("every `npm run X` is a script of package.json", () => {
    const scripts = Object.keys(JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).scripts ?? {});
    const missing = pages.flatMap((p) =>
      [...p.text.matchAll(/npm run ([\w:.-]+)/g)]
        .map((m) => m[1]!)
        .filter((s) => !scripts.includes(s))
        .map((s) => `${p.name}: npm run ${s}`),
    );
    expect(missing).toEqual([]);
  });

  it("every repository path in backticks exists", () => {
    const missing: string[] = [];
    for (const p of pages) {
      for (const span of p.spans) {
        for (const word of span.split(/\s+/)) {
          const path = word.replace(/^[("'[]+|[)"',;:.\]]+$/g, "").replace(/:\d+$/, "");
          if (!REPO_PATH_PREFIXES.some((prefix) => path.startsWith(prefix))) continue;
          // Placeholders: bench/<name>.ts, test/tasks/NAME.test.mjs, globs, elisions.
          if (/[<>*{}$…[\]]|\.\.\./.test(path) || /(?:^|\/)[A-Z][A-Z_]+(?:\.|\/|$)/.test(path)) continue;
          if (!existsSync(join(ROOT, path))) missing.push(`${p.name}: ${path}`);
        }
      }
    }
    expect(missing).toEqual([]);
  });

  describe("every command named is a real one", () => {
    const all = pages.flatMap(mentions);
    const commands = [...new Set(all.map((m) => m.command))].sort();
    const help = new Map<string, { code: number | null; text: string }>();

    beforeAll(async () => {
      // One `--help` per distinct command (and per subcommand the README uses), two at a time.
      const keys = new Set<string>(commands);
      const queue = [...keys];
      const runOne = async (key: string) => {
        const r = await reinsAsync([...key.split(" "), "--help"], { cwd: ROOT, timeout: 60_000 });
        help.set(key, { code: r.code, text: r.stdout + r.stderr });
      };
      const worker = async () => {
        for (let key = queue.shift(); key !== undefined; key = queue.shift()) await runOne(key);
      };
      await Promise.all([worker(), worker()]);
      // Subcommands written in the README (`reins init family …`): their own help, for their flags.
      const subs = new Set<string>();
      for (const m of mentions(readme)) {
        const sub = m.rest.trim().split(/\s+/)[0] ?? "";
        if (subcommands(help.get(m.command)?.text ?? "").includes(sub)) subs.add(`${m.command} ${sub}`);
      }
      queue.push(...subs);
      await Promise.all([worker(), worker()]);
    }, 300_000);

    it("names at least the commands of the two-command quickstart", () => {
      expect(commands).toContain("run");
    });

    it("`reins <command> --help` exits 0 with that command's own usage for each", () => {
      // An unknown command with --help prints the program's usage and exits 0 too: the usage line tells them apart.
      const isCommand = (c: string) => help.get(c)?.code === 0 && new RegExp(`^Usage: reins ${c}(?![\\w-])`, "m").test(help.get(c)!.text);
      const failing = commands
        .filter((c) => !isCommand(c))
        .map((c) => `reins ${c} (named in ${[...new Set(all.filter((m) => m.command === c).map((m) => m.page))].join(", ")})`);
      expect(failing).toEqual([]);
    });

    it("every flag the README writes beside a command is in that command's help", () => {
      const unknown: string[] = [];
      for (const m of mentions(readme)) {
        const sub = m.rest.trim().split(/\s+/)[0] ?? "";
        const key = help.has(`${m.command} ${sub}`) ? `${m.command} ${sub}` : m.command;
        const text = help.get(key)?.text ?? "";
        for (const flag of flagsIn(m.rest)) {
          if (!new RegExp(`(?<![\\w-])${flag}(?![\\w-])`).test(text)) unknown.push(`reins ${key} ${flag}`);
        }
      }
      expect(unknown).toEqual([]);
    });
  });

  it("the README's example spec validates", async () => {
    const yaml = [...readme.text.matchAll(/^```yaml\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
    expect(yaml.length).toBeGreaterThan(0);
    const dir = tempDir("reins-readme-");
    const file = join(dir, "family.yaml");
    writeFileSync(file, yaml[0]!);
    const r = await reinsAsync(["validate", file, "--json"], { cwd: ROOT, timeout: 120_000 });
    expect(r.code, r.stdout + r.stderr).toBe(0);
  }, 150_000);
});
