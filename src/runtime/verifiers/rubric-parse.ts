/**
 * Scores out of a judge's free text: a JSON object (possibly fenced, possibly nested under
 * "scores", values as numbers, "8/10", "80%", {score: x}, true/false), or "id: score" lines.
 * Scores are clamped to [0, 1]; an item without a score makes the whole answer unparseable. Pure.
 */

export type JudgeScores = { ok: true; scores: Record<string, number> } | { ok: false; reason: string };

function toScore(v: unknown): number | null {
  if (typeof v === "boolean") return v ? 1 : 0;
  if (typeof v === "number") return Number.isFinite(v) ? Math.min(1, Math.max(0, v)) : null;
  if (typeof v === "string") {
    const t = v.trim().toLowerCase();
    if (["yes", "pass", "true", "met"].includes(t)) return 1;
    if (["no", "fail", "false", "not met"].includes(t)) return 0;
    const frac = /^([-+]?\d*\.?\d+)\s*\/\s*(\d*\.?\d+)$/.exec(t);
    if (frac) return Number(frac[2]) > 0 ? toScore(Number(frac[1]) / Number(frac[2])) : null;
    const pct = /^([-+]?\d*\.?\d+)\s*%$/.exec(t);
    if (pct) return toScore(Number(pct[1]) / 100);
    if (/^[-+]?\d*\.?\d+$/.test(t)) return toScore(Number(t));
    return null;
  }
  if (v !== null && typeof v === "object" && !Array.isArray(v)) {
    const o = v as Record<string, unknown>;
    for (const k of ["score", "value", "grade"]) if (k in o) return toScore(o[k]);
  }
  return null;
}

/** Balanced {...} substrings, last first (strings and escapes respected). */
function jsonObjects(text: string): string[] {
  const out: string[] = [];
  for (let start = text.indexOf("{"); start !== -1 && out.length < 50; start = text.indexOf("{", start + 1)) {
    let depth = 0;
    let inStr = false;
    for (let i = start; i < text.length; i++) {
      const c = text[i];
      if (inStr) {
        if (c === "\\") i++;
        else if (c === '"') inStr = false;
      } else if (c === '"') inStr = true;
      else if (c === "{") depth++;
      else if (c === "}" && --depth === 0) {
        out.push(text.slice(start, i + 1));
        break;
      }
    }
  }
  return out.reverse();
}

function fromObject(o: Record<string, unknown>, ids: readonly string[]): Record<string, number> | null {
  const src = o.scores !== null && typeof o.scores === "object" && !Array.isArray(o.scores) ? (o.scores as Record<string, unknown>) : o;
  const lower = new Map(Object.entries(src).map(([k, v]) => [k.toLowerCase(), v]));
  const scores: Record<string, number> = {};
  for (const id of ids) {
    const s = toScore(lower.get(id.toLowerCase()));
    if (s !== null) scores[id] = s;
  }
  return Object.keys(scores).length > 0 ? scores : null;
}

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function fromLines(text: string, ids: readonly string[]): Record<string, number> {
  const scores: Record<string, number> = {};
  for (const id of ids) {
    const re = new RegExp(
      `^[\\s>*\\-#"'\`]*${escapeRe(id)}[*"'\`]*\\s*[:=\\-–]\\s*\\**\\s*([-+]?\\d*\\.?\\d+\\s*(?:/\\s*\\d*\\.?\\d+|%)?|yes|no|pass|fail|true|false)`,
      "im",
    );
    const m = re.exec(text);
    if (m) {
      const s = toScore(m[1]);
      if (s !== null) scores[id] = s;
    }
  }
  return scores;
}

export function parseJudgeScores(text: string, ids: readonly string[]): JudgeScores {
  const cleaned = text.replace(/<think>[\s\S]*?<\/think>/g, "");
  let best: Record<string, number> = {};
  for (const candidate of jsonObjects(cleaned)) {
    let v: unknown;
    try {
      v = JSON.parse(candidate);
    } catch {
      continue;
    }
    if (v === null || typeof v !== "object" || Array.isArray(v)) continue;
    const s = fromObject(v as Record<string, unknown>, ids);
    if (s && Object.keys(s).length > Object.keys(best).length) best = s;
    if (Object.keys(best).length === ids.length) break;
  }
  if (Object.keys(best).length < ids.length) {
    const lines = fromLines(cleaned, ids);
    if (Object.keys(lines).length > Object.keys(best).length) best = lines;
  }
  const missing = ids.filter((id) => !(id in best));
  if (missing.length === 0) return { ok: true, scores: best };
  const excerpt = cleaned.trim().slice(0, 160).replace(/\s+/g, " ");
  if (Object.keys(best).length === 0) return { ok: false, reason: `the judge's answer has no scores (it begins ${JSON.stringify(excerpt)})` };
  return { ok: false, reason: `the judge gave no score for ${missing.join(", ")}` };
}
