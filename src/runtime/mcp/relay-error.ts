/** An MCP server that could not be started, or that ended while a call was under way: an infrastructure failure of the try. */
export class McpRelayError extends Error {
  constructor(
    readonly code: "McpServerUnavailable" | "McpServerCrashed",
    message: string,
  ) {
    super(message);
  }
}
