/**
 * The unit lane's guard refuses what makes a test slow or host-dependent: a spawned process, a
 * listening or connecting socket. It runs in both lanes; in the full lane it installs the guard
 * itself and puts the originals back afterwards.
 */
import childProcess from "node:child_process";
import { syncBuiltinESMExports } from "node:module";
import net from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";

const originals = {
  spawn: childProcess.spawn,
  spawnSync: childProcess.spawnSync,
  exec: childProcess.exec,
  execSync: childProcess.execSync,
  execFile: childProcess.execFile,
  execFileSync: childProcess.execFileSync,
  fork: childProcess.fork,
};
const listen = net.Server.prototype.listen;
const connect = net.Socket.prototype.connect;

beforeAll(async () => {
  await import("./unit-guard.js");
});
afterAll(() => {
  for (const [name, value] of Object.entries(originals)) Object.defineProperty(childProcess, name, { value, writable: true, configurable: true });
  net.Server.prototype.listen = listen;
  net.Socket.prototype.connect = connect;
  syncBuiltinESMExports();
});

it("refuses every way to start a process, named imports included", async () => {
  const named = await import("node:child_process");
  expect(() => named.spawnSync("true")).toThrow(/unit lane: child_process.spawnSync is not allowed/);
  expect(() => named.execFileSync("true")).toThrow(/unit lane: child_process.execFileSync/);
  expect(() => childProcess.spawn("true")).toThrow(/unit lane: child_process.spawn /);
  expect(() => childProcess.exec("true")).toThrow(/unit lane: child_process.exec /);
  expect(() => childProcess.fork("x.js")).toThrow(/unit lane: child_process.fork/);
});

it("refuses to listen on a socket or to open one", () => {
  expect(() => net.createServer().listen(0, "127.0.0.1")).toThrow(/unit lane: listening on a socket/);
  expect(() => net.connect(1, "127.0.0.1")).toThrow(/unit lane: opening a socket/);
});
