/**
 * Host side of the proxy path: a Unix socket (bound into one sandbox) whose connections are piped
 * to the proxy's TCP port. One bridge per rollout; the socket then also identifies the rollout.
 * Each open connection holds three file descriptors in this process (the Unix side, the TCP side
 * and the proxy's end), so a sandbox may hold at most `maxConnections` at once: further ones are
 * closed as soon as they are accepted (counted in `refused`), the open ones keep working.
 */
import net from "node:net";
import { chmod, unlink } from "node:fs/promises";

export interface SocketBridge {
  readonly path: string;
  /** Connections accepted so far. */
  readonly connections: number;
  /** Connections closed at once because `maxConnections` were open. */
  readonly refused: number;
  close(): Promise<void>;
}

/** Connections one sandbox may hold open to its proxy at once: many more than a harness's parallel calls. */
export const MAX_BRIDGE_CONNECTIONS = 64;

export async function createSocketBridge(
  unixPath: string,
  targetHost: string,
  targetPort: number,
  opts: { maxConnections?: number } = {},
): Promise<SocketBridge> {
  await unlink(unixPath).catch(() => undefined);
  const open = new Set<net.Socket>();
  let connections = 0;
  let refused = 0;
  const server = net.createServer({ allowHalfOpen: true }, (inbound) => {
    connections++;
    const outbound = net.connect({ port: targetPort, host: targetHost, allowHalfOpen: true });
    open.add(inbound);
    open.add(outbound);
    const destroy = (): void => {
      inbound.destroy();
      outbound.destroy();
    };
    inbound.on("error", destroy);
    outbound.on("error", destroy);
    inbound.on("close", () => open.delete(inbound));
    outbound.on("close", () => open.delete(outbound));
    // Half-closes travel through (end → end); each side closes once both directions are done.
    inbound.pipe(outbound);
    outbound.pipe(inbound);
  });
  // Node closes a connection past this count right after accepting it ('drop' reports it).
  server.maxConnections = opts.maxConnections ?? MAX_BRIDGE_CONNECTIONS;
  server.on("drop", () => refused++);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(unixPath, () => {
      server.off("error", reject);
      resolve();
    });
  });
  // The sandbox user is not root: the socket must be connectable by anyone who can see it.
  await chmod(unixPath, 0o666);
  return {
    path: unixPath,
    get connections() {
      return connections;
    },
    get refused() {
      return refused;
    },
    async close() {
      for (const s of open) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await unlink(unixPath).catch(() => undefined);
    },
  };
}
