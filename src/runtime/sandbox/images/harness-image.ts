/**
 * A harness's image, as data (pure): the sandbox image it starts from, plus this machine's files the
 * harness runs from (its npm install, the node it runs on, reins-agent), copied to the very paths
 * they have here, so the harness's launch plan is the same whether its files are mounted or built
 * in — except files under a directory every sandbox mounts over (a checkout under /tmp, say): in
 * the image they would lie hidden beneath the sandbox's own directory, so they go under
 * /opt/reins/inputs instead, and the launch plan's paths are moved with them (relocate()).
 * Its tag is the digest of what goes in: the recipe, the base image's id and each input's place and
 * content digest; the same files give the same tag on every run, a changed byte a new one.
 */
import { createHash } from "node:crypto";
import { SANDBOX_ROOTS } from "../layout.js";

/** Bumped whenever what goes into a harness image changes: images of an older recipe get new tags. */
export const HARNESS_IMAGE_RECIPE = 2;

/** Where inputs that would be hidden go in the image. */
export const RELOCATED_INPUTS = "/opt/reins/inputs";

export interface ImageInput {
  /** Absolute path on this machine. */
  path: string;
  /** Content digest of the file or the tree (tree-digest.ts). */
  digest: string;
}

/** An input as the image holds it: at its own path, or under RELOCATED_INPUTS. */
export interface PlacedInput extends ImageInput {
  at: string;
}

export interface HarnessImage {
  /** repository:tag, e.g. localhost/reins-harness-claude-code:3f9a0c1d2e4b5a69 */
  name: string;
  base: string;
  inputs: PlacedInput[];
  labels: Record<string, string>;
}

/**
 * The first input under a directory every sandbox mounts over (its workspace, HOME, /tmp): in the
 * image it would lie hidden beneath the sandbox's own directory, so the harness could not start.
 */
export function hiddenInput(paths: readonly string[], roots: readonly string[] = SANDBOX_ROOTS): { path: string; root: string } | undefined {
  for (const p of paths) {
    const root = roots.find((r) => p === r || p.startsWith(`${r}/`));
    if (root) return { path: p, root };
  }
  return undefined;
}

/** Where an input lies in the image: its own path, unless a sandbox would hide it (then a place of its own under /opt/reins/inputs). */
export function imagePathOf(p: string): string {
  if (!hiddenInput([p])) return p;
  const name = p.slice(p.lastIndexOf("/") + 1) || "input";
  return `${RELOCATED_INPUTS}/${createHash("sha256").update(p).digest("hex").slice(0, 12)}/${name}`;
}

/** A path of this machine as the image's harness sees it: moved with the input that holds it. */
export function relocate(inputs: readonly PlacedInput[], p: string): string {
  for (const input of inputs) {
    if (input.at === input.path) continue;
    if (p === input.path) return input.at;
    if (p.startsWith(`${input.path}/`)) return input.at + p.slice(input.path.length);
  }
  return p;
}

/** localhost/reins-sandbox:1 → localhost/reins-harness-<harness>; a name without a registry part stays bare. */
export function harnessRepository(base: string, harness: string): string {
  const repo = base.replace(/@sha256:[0-9a-f]+$/, "").replace(/:[^/:]+$/, "");
  const slash = repo.lastIndexOf("/");
  const safe = harness
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, "-")
    .replace(/^[^a-z0-9]+/, "");
  return `${slash >= 0 ? repo.slice(0, slash + 1) : ""}reins-harness-${safe || "harness"}`;
}

export function planHarnessImage(o: { harness: string; base: string; baseId: string; inputs: readonly ImageInput[] }): HarnessImage {
  const inputs = [...o.inputs].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)).map((i) => ({ ...i, at: imagePathOf(i.path) }));
  const content = JSON.stringify({ recipe: HARNESS_IMAGE_RECIPE, base: o.baseId, inputs: inputs.map((i) => [i.at, i.digest]) });
  const tag = createHash("sha256").update(content).digest("hex").slice(0, 16);
  return {
    name: `${harnessRepository(o.base, o.harness)}:${tag}`,
    base: o.base,
    inputs,
    labels: { "reins.dev/harness": o.harness, "reins.dev/image-recipe": String(HARNESS_IMAGE_RECIPE), "reins.dev/base-image": o.baseId },
  };
}

/** The Containerfile of a build context holding each input under rootfs/<its place in the image>. */
export function containerfileOf(image: HarnessImage): string {
  const labels = Object.entries(image.labels).map(([k, v]) => `LABEL ${k}=${JSON.stringify(v)}`);
  return [`FROM ${image.base}`, "COPY rootfs/ /", ...labels, ""].join("\n");
}
