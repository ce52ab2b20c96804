/**
 * Builds a harness's image with podman, offline: `podman build --pull=never` from a context that
 * links this machine's files in (hard links where they share a filesystem, copies otherwise), on
 * top of the sandbox image. An image already built with the same tag is reused as it is.
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { findExecutable } from "../host/executables.js";
import { runHostCommand } from "../host/process-runner.js";
import { preparePodmanCli, runPodman, type PodmanCli } from "../podman/cli.js";
import { containerfileOf, planHarnessImage, type HarnessImage } from "./harness-image.js";
import { digestPath } from "./tree-digest.js";

export interface HarnessImageRequest {
  harness: string;
  /** The sandbox image it starts from. */
  base: string;
  /** Absolute paths of the files and directories the harness runs from. */
  paths: readonly string[];
}

/** A harness image could not be made: what failed and what to do. */
export class HarnessImageError extends Error {
  constructor(
    message: string,
    readonly hint: string,
  ) {
    super(message);
  }
}

export interface HarnessImageBuilder {
  /** The image's name (repository:tag), built first when this machine's podman lacks it. */
  ensure(request: HarnessImageRequest): Promise<{ image: HarnessImage; built: boolean; seconds: number }>;
}

export async function createHarnessImageBuilder(o: { workDir?: string; podmanPath?: string } = {}): Promise<HarnessImageBuilder> {
  const binary = o.podmanPath ?? findExecutable("podman");
  if (!binary)
    throw new HarnessImageError(
      "Harness images are built with podman, which is not installed here.",
      "apt-get install -y podman runc catatonit; then scripts/build-image.sh",
    );
  const workDir = o.workDir ?? path.join(os.tmpdir(), "reins-images");
  await mkdir(workDir, { recursive: true });
  const cli = await preparePodmanCli(binary, workDir);
  const pending = new Map<string, Promise<{ image: HarnessImage; built: boolean; seconds: number }>>();
  return {
    ensure(request) {
      const key = JSON.stringify(request);
      let p = pending.get(key);
      if (!p) pending.set(key, (p = ensureImage(cli, workDir, request)));
      return p;
    },
  };
}

async function ensureImage(cli: PodmanCli, workDir: string, r: HarnessImageRequest): Promise<{ image: HarnessImage; built: boolean; seconds: number }> {
  const started = performance.now();
  const baseId = await podman(
    cli,
    ["image", "inspect", "--format", "{{.Id}}", r.base],
    `The sandbox image ${r.base} is not on this machine`,
    "Build it with scripts/build-image.sh, or set the sandbox's image to one podman has.",
  );
  const inputs = await Promise.all(r.paths.map(async (p) => ({ path: p, digest: await digestPath(p) })));
  const image = planHarnessImage({ harness: r.harness, base: r.base, baseId: baseId.trim(), inputs });
  const exists = await runPodman(cli, ["image", "exists", image.name]);
  if (exists.code === 0) return { image, built: false, seconds: (performance.now() - started) / 1000 };
  const context = await mkdtemp(path.join(workDir, "context-"));
  try {
    for (const input of image.inputs) await linkInto(path.join(context, "rootfs"), input.path, input.at);
    await writeFile(path.join(context, "Containerfile"), containerfileOf(image));
    await podman(
      cli,
      ["build", "--pull=never", "--layers=false", "-f", path.join(context, "Containerfile"), "-t", image.name, context],
      `podman could not build ${image.name}`,
      "Check podman's storage (podman system df) and the files the harness runs from.",
      600_000,
    );
  } finally {
    await rm(context, { recursive: true, force: true });
  }
  return { image, built: true, seconds: (performance.now() - started) / 1000 };
}

/** `source` (absolute) at rootfs/<at>: hard links where possible, else a copy; parents 0755. */
async function linkInto(rootfs: string, source: string, at: string): Promise<void> {
  const target = path.join(rootfs, at);
  await mkdir(path.dirname(target), { recursive: true, mode: 0o755 });
  const linked = await runHostCommand(["/bin/cp", "-a", "--link", source, target], { env: {}, timeoutMs: 300_000 });
  if (linked.exitCode === 0) return;
  await rm(target, { recursive: true, force: true });
  const copied = await runHostCommand(["/bin/cp", "-a", source, target], { env: {}, timeoutMs: 600_000 });
  if (copied.exitCode !== 0)
    throw new HarnessImageError(
      `cannot copy ${source} into the image's build context: ${copied.stderr.trim() || copied.spawnError}`,
      "Check the free space of the temporary directory.",
    );
}

async function podman(cli: PodmanCli, args: string[], what: string, hint: string, timeoutMs?: number): Promise<string> {
  const r = await runPodman(cli, args, timeoutMs);
  if (r.code !== 0) throw new HarnessImageError(`${what}: ${r.stderr.trim().split("\n").slice(-3).join(" ") || `podman exited ${r.code}`}`, hint);
  return r.stdout;
}
