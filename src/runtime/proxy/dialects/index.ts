/** Dialects by name. */
import type { Dialect } from "../../../compiler/contract/plan.js";
import { anthropicMessages } from "./anthropic-messages.js";
import type { DialectHandler } from "./dialect.js";
import { openaiChat } from "./openai-chat.js";
import { openaiResponses } from "./openai-responses.js";

export const DIALECT_HANDLERS: Record<Dialect, DialectHandler> = {
  "anthropic-messages": anthropicMessages,
  "openai-chat": openaiChat,
  "openai-responses": openaiResponses,
};

export type { DialectHandler, ProxyErrorKind } from "./dialect.js";
