/**
 * Call-class rules (Harness `callClasses`): each match condition decides on its own, all given
 * conditions must hold, the first matching rule wins, and a call no rule matches is `main`.
 */
import { describe, expect, it } from "vitest";
import type { ResolvedCallClassRule } from "../../src/compiler/contract/plan.js";
import { HarnessDocument } from "../../src/compiler/schema/harness.js";
import type { CanonicalMessage, CanonicalRequest } from "../../src/runtime/proxy/canonical.js";
import { classifyCall } from "../../src/runtime/proxy/classify.js";

function request(messages: CanonicalMessage[], extra: Partial<CanonicalRequest> = {}): CanonicalRequest {
  return { dialect: "anthropic-messages", model: "claude-sonnet-4-5", stream: true, messages, tools: [{ name: "Bash", parameters: {} }], ...extra };
}

const compactionPrompt = "Summarize.\n\nREMINDER: Do NOT call any tools. Respond with plain text only.";
const compaction: ResolvedCallClassRule = { class: "compaction", match: { finalUserTextIncludes: "REMINDER: Do NOT call any tools" } };

describe("finalUserTextIncludes", () => {
  it("matches when the request ends with a user message containing the text", () => {
    expect(
      classifyCall(
        [compaction],
        request([
          { role: "user", content: "task" },
          { role: "assistant", content: "ok", toolCalls: [] },
          { role: "user", content: compactionPrompt },
        ]),
        {},
      ),
    ).toBe("compaction");
  });

  it("looks past system messages after that user message (harness reminders)", () => {
    expect(
      classifyCall(
        [compaction],
        request([
          { role: "user", content: compactionPrompt },
          { role: "system", content: "<total_tokens>9 left</total_tokens>" },
        ]),
        {},
      ),
    ).toBe("compaction");
  });

  it("does not match the same text earlier in the conversation, nor in a final tool result", () => {
    const earlier = request([
      { role: "user", content: compactionPrompt },
      { role: "assistant", content: "", toolCalls: [{ id: "t1", name: "Bash", arguments: "{}" }] },
      { role: "tool", toolCallId: "t1", content: "done" },
    ]);
    expect(classifyCall([compaction], earlier, {})).toBe("main");
    const inToolResult = request([
      { role: "user", content: "task" },
      { role: "assistant", content: "", toolCalls: [{ id: "t1", name: "Bash", arguments: "{}" }] },
      { role: "tool", toolCallId: "t1", content: compactionPrompt },
    ]);
    expect(classifyCall([compaction], inToolResult, {})).toBe("main");
  });

  it("does not match a request without messages", () => {
    expect(classifyCall([compaction], request([]), {})).toBe("main");
  });
});

describe("headerIncludes", () => {
  const rule: ResolvedCallClassRule = {
    class: "compaction",
    match: { headerIncludes: { name: "X-Codex-Turn-Metadata", value: '"request_kind":"compaction"' } },
  };
  const present: ResolvedCallClassRule = { class: "subagent", match: { headerIncludes: { name: "x-claude-code-agent-id", value: "" } } };
  const req = request([{ role: "user", content: "task" }]);

  it("matches a header whose value contains the text, whatever the header name's case", () => {
    expect(classifyCall([rule], req, { "x-codex-turn-metadata": '{"turn_id":"1","request_kind":"compaction"}' })).toBe("compaction");
    expect(classifyCall([rule], req, { "x-codex-turn-metadata": '{"turn_id":"1","request_kind":"turn"}' })).toBe("main");
    expect(classifyCall([rule], req, {})).toBe("main");
  });

  it("with an empty value, matches when the header is present at all", () => {
    expect(classifyCall([present], req, { "x-claude-code-agent-id": "a877f3677fa95022a" })).toBe("subagent");
    expect(classifyCall([present], req, {})).toBe("main");
  });
});

describe("rules", () => {
  it("need every given condition to hold, and the first matching rule wins", () => {
    const rules: ResolvedCallClassRule[] = [
      { class: "compaction", match: { noTools: false, finalUserTextIncludes: "REMINDER: Do NOT call any tools" } },
      { class: "subagent", match: { systemPromptIncludes: "cc_is_subagent=true" } },
      { class: "auxiliary", match: { noTools: true } },
    ];
    const sub = { system: "x-anthropic-billing-header: cc_version=2; cc_is_subagent=true;" };
    expect(classifyCall(rules, request([{ role: "user", content: compactionPrompt }], sub), {})).toBe("compaction");
    expect(classifyCall(rules, request([{ role: "user", content: "task" }], sub), {})).toBe("subagent");
    expect(classifyCall(rules, request([{ role: "user", content: compactionPrompt }], { tools: [] }), {})).toBe("auxiliary");
    expect(classifyCall(rules, request([{ role: "user", content: "task" }]), {})).toBe("main");
  });

  it("reject an empty text to look for, and unknown conditions", () => {
    const spec = (match: unknown) => ({
      apiVersion: "reins/v1alpha1",
      kind: "Harness",
      metadata: { name: "h" },
      spec: { command: ["x"], callClasses: [{ class: "compaction", match }] },
    });
    expect(HarnessDocument.safeParse(spec({ finalUserTextIncludes: "" })).success).toBe(false);
    expect(HarnessDocument.safeParse(spec({ headerIncludes: { name: "", value: "x" } })).success).toBe(false);
    expect(HarnessDocument.safeParse(spec({ userTextIncludes: "x" })).success).toBe(false);
    expect(HarnessDocument.safeParse(spec({ finalUserTextIncludes: "x", headerIncludes: { name: "a", value: "" } })).success).toBe(true);
  });
});
