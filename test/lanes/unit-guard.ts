/**
 * The unit lane's guard (vitest.unit.config.ts): a unit test spawns no process and opens no socket.
 * Each such call throws, so a file that needs the CLI, a sandbox, a server or an interpreter fails
 * here at once and belongs in the full lane (`npm test`) instead.
 */
import childProcess from "node:child_process";
import { syncBuiltinESMExports } from "node:module";
import net from "node:net";

function refuse(what: string): never {
  throw new Error(`unit lane: ${what} is not allowed in a unit test; list the file in the full lane only (test/lanes/unit-files.ts)`);
}

for (const name of ["spawn", "spawnSync", "exec", "execSync", "execFile", "execFileSync", "fork"] as const) {
  Object.defineProperty(childProcess, name, { value: () => refuse(`child_process.${name}`), writable: true, configurable: true });
}
net.Server.prototype.listen = function listen(): never {
  refuse("listening on a socket");
};
net.Socket.prototype.connect = function connect(): never {
  refuse("opening a socket");
};
syncBuiltinESMExports();
