// The CLI as one JavaScript file: src/cli/main.ts and everything it imports from src/, bundled by
// esbuild into node_modules/.cache/reins-cli/cli-<stamp>/ (main.mjs and the chunks it imports when a
// command needs them, as src/ does: the Kubernetes client only for a kubernetes sandbox), where
// <stamp> hashes the path, size and
// modification time of every file under src/. A process starts from that file in about a third of
// the time tsx's loader takes to compile and link ~370 modules one by one; an edit under src/ changes
// the stamp, and the next start bundles again (~1 s). Packages stay in node_modules (not bundled).
//
// Each module's `import.meta.url` is kept: it is rewritten to the URL of its own source file, found
// relative to the bundle, so a module still finds the files beside it (reins-agent, the trainer's
// Python, the view's web pages, the built-in specs).
import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

/** Changes when the way a bundle is made changes, so that older bundles are not used. */
const FORMAT = "1";
const ROOT = fileURLToPath(new URL("..", import.meta.url));
const SRC = join(ROOT, "src");
export const CACHE = join(ROOT, "node_modules", ".cache", "reins-cli");

/** A hash of every file under `dir` (src/): its path, size and modification time. */
export function stampSources(dir = SRC) {
  const hash = createHash("sha256").update(`format ${FORMAT}\n`);
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else {
        const s = statSync(path);
        hash.update(`${relative(dir, path)}\0${s.size}\0${s.mtimeMs}\n`);
      }
    }
  };
  walk(dir);
  return hash.digest("hex").slice(0, 16);
}

/** An esbuild plugin: `import.meta.url` in a module of src/ becomes its source file's URL, relative to the bundle. */
const sourceUrls = {
  name: "source-urls",
  setup(build) {
    build.onLoad({ filter: /\.ts$/ }, (args) => {
      const text = readFileSync(args.path, "utf8");
      if (!args.path.startsWith(SRC) || !text.includes("import.meta.url")) return { contents: text, loader: "ts" };
      const url = `new URL(${JSON.stringify(relative(build.initialOptions.outdir, args.path))}, import.meta.url).href`;
      return { contents: text.replaceAll("import.meta.url", url), loader: "ts" };
    });
  },
};

async function bundle(out) {
  const esbuild = await import("esbuild");
  const tmp = `${out}.${process.pid}.tmp`;
  rmSync(tmp, { recursive: true, force: true });
  await esbuild.build({
    entryPoints: [join(SRC, "cli", "main.ts")],
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    packages: "external",
    splitting: true,
    outdir: tmp,
    outExtension: { ".js": ".mjs" },
    chunkNames: "chunk-[hash]",
    logLevel: "silent",
    plugins: [sourceUrls],
  });
  try {
    renameSync(tmp, out);
  } catch (e) {
    // Another process made the same bundle first.
    rmSync(tmp, { recursive: true, force: true });
    if (e.code !== "ENOTEMPTY" && e.code !== "EEXIST") throw e;
  }
  pruneBundles(out);
}

/**
 * Removes bundles of earlier sources made more than two days ago. Not sooner: a command started
 * from one (a long `reins run`) may still load a chunk of it, and an edit under src/ must not take
 * that from under it.
 */
function pruneBundles(keep) {
  const before = Date.now() - 2 * 24 * 3600 * 1000;
  for (const name of readdirSync(CACHE)) {
    const path = join(CACHE, name);
    if (!name.startsWith("cli-") || path === keep) continue;
    try {
      if (statSync(path).mtimeMs < before) rmSync(path, { recursive: true, force: true });
    } catch {
      // Gone already (another process pruned it).
    }
  }
}

/**
 * The path of an up-to-date bundle of the CLI, made first when src/ changed since the last one;
 * null when none can be had (esbuild missing, node_modules not writable): run from the sources then.
 */
export async function bundledCli() {
  if (process.env.REINS_FROM_SOURCES === "1") return null;
  try {
    const out = join(CACHE, `cli-${stampSources()}`);
    try {
      statSync(join(out, "main.mjs"));
    } catch {
      mkdirSync(CACHE, { recursive: true });
      await bundle(out);
    }
    return join(out, "main.mjs");
  } catch {
    return null;
  }
}
