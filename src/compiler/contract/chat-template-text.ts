/**
 * Chat template text as @huggingface/jinja reads it. transformers' templates may mark assistant
 * output with `{% generation %}…{% endgeneration %}` (its extension for assistant-token masks),
 * which renders its body unchanged; the tags become `{% if true %}…{% endif %}`, keeping their
 * whitespace control, so the text renders exactly as transformers renders it. Pure; used by the
 * compiler (which parses a directory's template) and the runtime (which renders it).
 */
const GENERATION_TAG = /\{%(-?)(\s*)(end)?generation(\s*)(-?)%\}/g;

export function renderableChatTemplate(source: string): string {
  return source.replace(
    GENERATION_TAG,
    (_all, l: string, s1: string, end: string | undefined, s2: string, r: string) => `{%${l}${s1}${end ? "endif" : "if true"}${s2}${r}%}`,
  );
}
