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
    if (m.headerEquals !== undefined && headerValue(headers, m.headerEquals.name) !== m.headerEquals.value) continue;
    if (m.headerIncludes !== undefined && !(headerValue(headers, m.headerIncludes.name)?.includes(m.headerIncludes.value) ?? false)) continue;
    if (m.finalUserTextIncludes !== undefined && !(finalUserText(req)?.includes(m.finalUserTextIncludes) ?? false)) continue;
    return rule.class;
  }
  return "main";
}

function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name.toLowerCase()];
  return Array.isArray(v) ? v.join(", ") : v;
}

/** The system prompt plus any system messages (Claude Code moves part of it into messages). */
function systemText(req: CanonicalRequest): string {
  const parts = [req.system ?? ""];
  for (const m of req.messages) if (m.role === "system") parts.push(m.content);
  return parts.join("\n");
}

/**
 * The text of the request's last message, system messages after it aside (harness reminders), when
 * that is a user message; undefined when it is a tool result or an assistant turn. Harnesses put a
 * side call's own instruction there (a compaction prompt); in a main call that place holds the task
 * or a tool result.
 */
function finalUserText(req: CanonicalRequest): string | undefined {
  let i = req.messages.length - 1;
  while (i >= 0 && req.messages[i]!.role === "system") i--;
  const last = req.messages[i];
  return last?.role === "user" ? last.content : undefined;
}
