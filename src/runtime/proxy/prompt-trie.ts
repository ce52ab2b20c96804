/**
 * Per-rollout trie of already-tokenized prompt segments. A path from the root spells a prompt:
 * header (system + tools), then one node per message group or spliced assistant turn. Rendering a
 * new prompt walks the longest existing path and tokenizes only what lies past it.
 */
export interface SegmentNode {
  readonly key: string;
  readonly ids: readonly number[];
  /** For a spliced assistant turn: the seq of the call whose completion it holds. */
  readonly seq?: number;
  readonly parent: SegmentNode | undefined;
  /** Tokens from the root to the end of this node. */
  readonly depth: number;
  readonly children: Map<string, SegmentNode>;
}

export function createRoot(): SegmentNode {
  return { key: "", ids: [], parent: undefined, depth: 0, children: new Map() };
}

/** The child with this key, creating it from `make()` when absent. `created` says which happened. */
export function childOf(node: SegmentNode, key: string, make: () => { ids: readonly number[]; seq?: number }): { node: SegmentNode; created: boolean } {
  const existing = node.children.get(key);
  if (existing) return { node: existing, created: false };
  const made = make();
  const child: SegmentNode = {
    key,
    ids: made.ids,
    parent: node,
    depth: node.depth + made.ids.length,
    children: new Map(),
    ...(made.seq !== undefined ? { seq: made.seq } : {}),
  };
  node.children.set(key, child);
  return { node: child, created: true };
}

/** The ids along the path root → node, followed by `tail`. */
export function idsOfPath(node: SegmentNode, tail: readonly number[] = []): number[] {
  const chain: SegmentNode[] = [];
  for (let n: SegmentNode | undefined = node; n; n = n.parent) chain.push(n);
  const out = new Array<number>(node.depth + tail.length);
  let at = 0;
  for (let i = chain.length - 1; i >= 0; i--) {
    const ids = chain[i]!.ids;
    for (let j = 0; j < ids.length; j++) out[at++] = ids[j]!;
  }
  for (let j = 0; j < tail.length; j++) out[at++] = tail[j]!;
  return out;
}
