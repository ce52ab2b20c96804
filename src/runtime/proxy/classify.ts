/** Call classification from a harness's callClasses rules: the first rule whose conditions all hold. */
import type { IncomingHttpHeaders } from "node:http";
import type { CallClass, ResolvedCallClassRule } from "../../compiler/contract/plan.js";
import type { CanonicalRequest } from "./canonical.js";

export function classifyCall(rules: readonly ResolvedCallClassRule[], req: CanonicalRequest, headers: IncomingHttpHeaders): CallClass {
  for (const rule of rules) {
    const m = rule.match;
    if (m.noTools !== undefined && m.noTools !== (req.tools.length === 0)) continue;
    if (m.systemPromptIncludes !== undefined && !systemText(req).includes(m.systemPromptIncludes)) continue;
    if (m.modelIncludes !== undefined && !req.model.includes(m.modelIncludes)) continue;
    if (m.headerEquals !== undefined) {
      const v = headers[m.headerEquals.name.toLowerCase()];
      const value = Array.isArray(v) ? v.join(", ") : v;
      if (value !== m.headerEquals.value) continue;
    }
    return rule.class;
  }
  return "main";
}

/** The system prompt plus any system messages (Claude Code moves part of it into messages). */
function systemText(req: CanonicalRequest): string {
  const parts = [req.system ?? ""];
  for (const m of req.messages) if (m.role === "system") parts.push(m.content);
  return parts.join("\n");
}
