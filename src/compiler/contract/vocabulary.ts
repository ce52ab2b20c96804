/**
 * The closed lists of the spec language that the runtime also needs at run time, defined once.
 * The zod schemas build their enums from these (src/compiler/schema/), so the JSON Schemas, the
 * compiler and the runtime (proxy, call records, trajectory filters) can never disagree. Plain
 * constants: the contract stays a leaf.
 */

/** API dialects a harness may speak to its model; the proxy speaks all of them. */
export const DIALECTS = ["anthropic-messages", "openai-chat", "openai-responses"] as const;
export type Dialect = (typeof DIALECTS)[number];

/** The dialects a hosted model is asked in (a Synthesis's hosted generator): the stateless ones. */
export const HOSTED_APIS = DIALECTS.filter((d): d is Exclude<Dialect, "openai-responses"> => d !== "openai-responses");
export type HostedApi = (typeof HOSTED_APIS)[number];

/** Classes a call is sorted into (Harness `callClasses`; Algorithm `filters.dropClasses`). */
export const CALL_CLASSES = ["main", "subagent", "compaction", "title", "auxiliary"] as const;
export type CallClass = (typeof CALL_CLASSES)[number];

/** Harness knobs an Experiment or Evaluation may set (`harnesses[]`), if the Harness declares how (`knobs`). */
export const KNOB_NAMES = ["systemPrompt", "appendSystemPrompt", "tools", "maxTurns"] as const;
export type KnobName = (typeof KNOB_NAMES)[number];
