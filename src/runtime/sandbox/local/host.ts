/**
 * What the local provider learns about the host once: which top-level entries to show, what to
 * hide, where bwrap and socat live, the passwd/group files that name the sandbox user, and where
 * sandboxes get control groups. It also prunes the state a crashed runner left: its state
 * directories under this root, and its control groups wherever they are, even when its state
 * root is gone (a killed runner whose temporary directory was removed).
 */
import { execFile } from "node:child_process";
import { existsSync, lstatSync, readdirSync, readFileSync, readlinkSync } from "node:fs";
import { mkdir, readdir, readFile, rename, writeFile } from "node:fs/promises";
import path from "node:path";
import { detectCgroups, groupsUnder, removeSandboxCgroups, sandboxGroupParents, type CgroupHost } from "../host/cgroups.js";
import { findExecutable } from "../host/executables.js";
import { nativeProgram } from "./native.js";
import { DEFAULT_HIDDEN, SYSTEM_DIRS, type HiddenPath, type HostEntry } from "./keeper-args.js";
import { isDeadRunnersGroup, isOwnerAlive, OWNER_FILE } from "./owner.js";
import { removeState } from "./state.js";
import { pruneUidLeases } from "./uids.js";

export interface LocalHost {
  bwrap: string | null;
  socat: string | null;
  hostEntries: HostEntry[];
  hide: HiddenPath[];
  emptyFile: string;
  passwdFile: string;
  groupFile: string;
  /** The host's passwd and group, for sandboxes with a user of their own. */
  passwdText: string;
  groupText: string;
  /** Where sandboxes get control groups; null where this host has none for the runner. */
  cgroups: CgroupHost | null;
  /** The runner is root: it can mount capped filesystems and give each sandbox a uid of its own. */
  root: boolean;
  /** bwrap can cap the size of a tmpfs it makes (`--size`, bubblewrap 0.8 and later). */
  bwrapSizes: boolean;
  /** The one-process way into a sandbox (enter.c, native.ts); null: commands take the chain of programs. */
  enterHelper: string | null;
  /** The spawner's binary (spawn.c, native.ts); null: the runner spawns its processes itself. */
  spawnBinary: string | null;
}

/** Whether this bwrap takes `--size` (its help lists it). */
function bwrapTakesSize(bwrap: string | null): Promise<boolean> {
  if (!bwrap) return Promise.resolve(false);
  return new Promise((resolve) => {
    execFile(bwrap, ["--help"], { env: {}, timeout: 10_000 }, (_error, stdout) => resolve(/^\s*--size\b/m.test(String(stdout))));
  });
}

export function scanHostRoot(systemDirs: string[] = SYSTEM_DIRS): HostEntry[] {
  const out: HostEntry[] = [];
  for (const e of readdirSync("/", { withFileTypes: true })) {
    if (!systemDirs.includes(e.name)) continue;
    if (e.isSymbolicLink()) out.push({ name: e.name, kind: "symlink", target: readlinkSync(`/${e.name}`) });
    else if (e.isDirectory()) out.push({ name: e.name, kind: "dir" });
  }
  return out.sort((a, b) => a.name.localeCompare(b.name));
}

/** Resolves hide paths to existing, visible entries (only those under shown system directories matter). */
export function resolveHidden(paths: string[], hostEntries: HostEntry[]): HiddenPath[] {
  const shown = new Set(hostEntries.filter((e) => e.kind === "dir").map((e) => e.name));
  const out: HiddenPath[] = [];
  const seen = new Set<string>();
  for (const raw of paths) {
    const p = path.posix.normalize(raw);
    const top = p.split("/")[1] ?? "";
    if (!shown.has(top) || p === `/${top}` || seen.has(p)) continue;
    let info;
    try {
      info = lstatSync(p);
    } catch {
      continue;
    }
    if (info.isSymbolicLink()) continue;
    seen.add(p);
    out.push({ path: p, kind: info.isDirectory() ? "dir" : "file" });
  }
  return out;
}

/** The host's passwd/group with the sandbox user's entry (replacing any entry with the same id). */
export function withSandboxUser(text: string, line: string, id: number, field: number): string {
  const kept = text.split("\n").filter((l) => l.trim() !== "" && l.split(":")[field] !== String(id));
  return `${[...kept, line].join("\n")}\n`;
}

export async function prepareLocalHost(
  stateRoot: string,
  uid: number,
  gid: number,
  home: string,
  extraHidden: string[],
  systemDirs?: string[],
  useNative = true,
): Promise<LocalHost> {
  const hostDir = path.join(stateRoot, ".host");
  await mkdir(hostDir, { recursive: true });
  const emptyFile = path.join(hostDir, "empty");
  const passwdFile = path.join(hostDir, "passwd");
  const groupFile = path.join(hostDir, "group");
  const readOr = (p: string): string => (existsSync(p) ? readFileSync(p, "utf8") : "");
  const passwdText = readOr("/etc/passwd");
  const groupText = readOr("/etc/group");
  // Replaced atomically: other runners sharing this root may be binding these files right now.
  await writeAtomic(emptyFile, "");
  await writeAtomic(passwdFile, withSandboxUser(passwdText, `sandbox:x:${uid}:${gid}:sandbox:${home}:/bin/sh`, uid, 2));
  await writeAtomic(groupFile, withSandboxUser(groupText, `sandbox:x:${gid}:`, gid, 2));
  const cgroups = detectCgroups();
  await Promise.all([pruneStale(stateRoot), cgroups ? pruneStaleGroups(cgroups) : 0]);
  const hostEntries = scanHostRoot(systemDirs);
  const bwrap = findExecutable("bwrap");
  const [bwrapSizes, helper, spawnBinary] = await Promise.all([
    bwrapTakesSize(bwrap),
    useNative ? nativeProgram("enter") : null,
    useNative ? nativeProgram("spawn") : null,
  ]);
  return {
    bwrap,
    socat: findExecutable("socat"),
    hostEntries,
    hide: resolveHidden([...DEFAULT_HIDDEN, ...extraHidden, stateRoot], hostEntries),
    emptyFile,
    passwdFile,
    groupFile,
    passwdText,
    groupText,
    cgroups,
    root: process.getuid?.() === 0,
    bwrapSizes,
    enterHelper: helper,
    spawnBinary,
  };
}

async function writeAtomic(file: string, content: string): Promise<void> {
  const temp = `${file}.${process.pid}.tmp`;
  await writeFile(temp, content);
  await rename(temp, file);
}

export { ownerStamp } from "./owner.js";

/**
 * Removes sandbox state left by runners that no longer exist (their processes died with them):
 * directories, control groups, mounts and uid leases. A live runner's sandboxes are never touched.
 * `endSandbox` first ends what outlives a runner (a podman pod) for each such state directory.
 */
export async function pruneStale(stateRoot: string, endSandbox?: (stateDir: string) => Promise<void>): Promise<number> {
  let removed = 0;
  for (const name of await readdir(stateRoot).catch(() => [] as string[])) {
    if (name.startsWith(".")) continue;
    const dir = path.join(stateRoot, name);
    const owner = await readFile(path.join(dir, OWNER_FILE), "utf8").catch(() => null);
    if (owner === null) continue;
    if (isOwnerAlive(owner)) continue;
    await endSandbox?.(dir).catch(() => undefined);
    if (await removeState(stateRoot, dir).catch(() => false)) removed++;
  }
  pruneUidLeases(stateRoot);
  return removed;
}

/**
 * Removes the control groups of sandboxes whose runner no longer exists (its pid namespace's, told
 * by the group's name: owner.ts), killing anything still in them: what remains when a runner was
 * killed and its state root removed before anyone pruned it. Groups of live runners, of other pid
 * namespaces and groups whose name says no owner are left alone. Returns how many went.
 */
export async function pruneStaleGroups(cgroups: CgroupHost): Promise<number> {
  const stale = sandboxGroupParents(cgroups)
    .flatMap(groupsUnder)
    .filter((dir) => isDeadRunnersGroup(path.basename(dir)));
  const removed = await Promise.all(stale.map((dir) => removeSandboxCgroups([dir])));
  return removed.filter(Boolean).length;
}
