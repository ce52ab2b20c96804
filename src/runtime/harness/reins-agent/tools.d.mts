/** Types of reins-agent's workspace tools (the implementation is dependency-free JavaScript). */
export interface ToolSchema {
  type: "function";
  function: { name: string; description: string; parameters: Record<string, unknown> };
}
export const TOOL_SCHEMAS: ToolSchema[];
/** Runs one tool call; resolves with the text sent back as the tool result (errors start with "error:"). */
export function runTool(workspace: string, name: string, rawArguments: string | undefined): Promise<string>;
