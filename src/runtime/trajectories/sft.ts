/**
 * SFT export (ClawGym style): one sample per kept root-to-leaf path of a rollout whose reward is
 * at least `minReward`; the loss covers the tokens the model generated on that path, and every
 * environment token (system prompt, user messages, tool results, harness-injected text) is masked.
 * Each path is a standalone conversation, so by default a generated token shared by several paths
 * is trained on each of them; `exactlyOnce` keeps only the owner path's mask instead.
 */
import type { RewardTable } from "./batch-builder.js";
import type { RolloutAnalysis } from "./rollout.js";
import type { TreeNode } from "./tree.js";

export interface SftSample {
  rollout: string;
  task: string;
  harness: string;
  reward: number;
  leaf: number;
  tokens: number[];
  /** 1 on generated tokens, 0 on environment tokens. */
  lossMask: number[];
}

export interface SftOptions {
  minReward: number;
  exactlyOnce?: boolean;
}

export function buildSftSamples(analyses: readonly RolloutAnalysis[], rewards: RewardTable, options: SftOptions): SftSample[] {
  const out: SftSample[] = [];
  for (const a of analyses) {
    const entry = rewards.get(a.rollout);
    if (!entry || a.dropped || !(entry.reward >= options.minReward)) continue;
    a.filter.keptLeaves.forEach((leaf, leafIndex) => {
      const chain: TreeNode[] = [];
      for (let n: TreeNode | null = leaf; n; n = n.parent) chain.push(n);
      chain.reverse();
      const tokens: number[] = [];
      const lossMask: number[] = [];
      for (const node of chain) {
        const on = node.generated && (!options.exactlyOnce || a.ownership.owner[node.id] === leafIndex) ? 1 : 0;
        for (const t of node.tokens) {
          tokens.push(t);
          lossMask.push(on);
        }
      }
      out.push({ rollout: a.rollout, task: entry.task, harness: entry.harness, reward: entry.reward, leaf: leafIndex, tokens, lossMask });
    });
  }
  return out;
}
