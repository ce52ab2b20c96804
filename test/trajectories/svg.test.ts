/** The SVG renderer draws one box per node, colored by kind, and escapes text. */
import { describe, expect, it } from "vitest";
import { defaultAlgorithm } from "../../src/compiler/index.js";
import { analyzeRollout } from "../../src/runtime/trajectories/rollout.js";
import { renderTreeSvg } from "../../src/runtime/trajectories/svg.js";
import { appendOnlyChain, DEFAULT_SHAPE, RolloutBuilder, seededRng } from "./synthetic.js";

const DEFAULT_ALGORITHM = defaultAlgorithm();

describe("renderTreeSvg", () => {
  it("draws every node once: green kept generated, grey kept context, red dashed dropped", () => {
    const b = new RolloutBuilder("r<&>", seededRng(51));
    const h = appendOnlyChain(b, { ...DEFAULT_SHAPE, turns: 3 });
    b.call(h.slice(0, 500), b.tokens(9), { callClass: "subagent" });
    const a = analyzeRollout(b.rollout, b.records, DEFAULT_ALGORITHM.filters);
    const svg = renderTreeSvg(a.tree, a.filter, a.lineage);
    const boxes = [...svg.matchAll(/<rect x="[\d.]+" y="[\d.]+" width="[\d.]+" height="26" rx="4" fill="(#\w+)"/g)].map((m) => m[1]);
    expect(boxes).toHaveLength(a.tree.nodes.length);
    const kinds = a.tree.nodes.map((n) => (a.filter.kept[n.id] === 0 ? "#fbe3e1" : n.generated ? "#7cc47c" : "#d5d8dc"));
    expect(boxes).toEqual(kinds);
    expect(kinds).toContain("#fbe3e1");
    expect(svg).toContain("rollout r&lt;&amp;&gt;");
    expect(svg).not.toContain("r<&>");
    expect(svg).toContain("✕ subagent");
    // Labels carry the call seq and the token count.
    for (const n of a.tree.nodes) expect(svg).toContain(`${n.generated ? `c${n.genSeq}` : `p${n.firstSeq}`} · ${n.tokens.length}<`);
  });
});
