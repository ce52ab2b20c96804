/**
 * Host side of the proxy path: a Unix socket (bound into one sandbox) whose connections are piped
 * to the proxy's TCP port. One bridge per rollout; the socket then also identifies the rollout.
 */
import net from "node:net";
import { chmod, unlink } from "node:fs/promises";

export interface SocketBridge {
  readonly path: string;
  /** Connections accepted so far. */
  readonly connections: number;
  close(): Promise<void>;
}

export async function createSocketBridge(unixPath: string, targetHost: string, targetPort: number): Promise<SocketBridge> {
  await unlink(unixPath).catch(() => undefined);
  const open = new Set<net.Socket>();
  let connections = 0;
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
    async close() {
      for (const s of open) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await unlink(unixPath).catch(() => undefined);
    },
  };
}
