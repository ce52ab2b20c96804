/**
 * Command lines for containers reached by exec (podman, kubernetes), which cannot set a working
 * directory or replace the environment per call: `env -i` gives the command exactly the explicit
 * environment, and a tiny sh changes directory first. Pure.
 */
import { KILL_ALL_SCRIPT } from "./layout.js";

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export function wrapForContainer(argv: string[], cwd: string, env: Record<string, string>): string[] {
  const assignments: string[] = [];
  for (const [name, value] of Object.entries(env).sort(([a], [b]) => a.localeCompare(b))) {
    if (!ENV_NAME.test(name)) throw new Error(`invalid environment variable name "${name}"`);
    assignments.push(`${name}=${value}`);
  }
  return ["env", "-i", ...assignments, "sh", "-c", 'cd -- "$0" || exit 126; exec "$@"', cwd, ...argv];
}

/** Kills every process of the container the caller may signal, except pid 1 (the keeper). */
export const KILL_ALL_BUT_KEEPER = ["sh", "-c", "kill -9 -1 2>/dev/null; exit 0"];

/** The same for stopProcesses (see KILL_ALL_SCRIPT). */
export const KILL_ALL_REPEATED = ["sh", "-c", KILL_ALL_SCRIPT];

/** Waits until something listens on 127.0.0.1:port inside the container (reads /proc/net/tcp). */
export function waitForListenerCommand(port: number, attempts = 2000): string[] {
  const hex = port.toString(16).toUpperCase().padStart(4, "0");
  const script = [
    `i=0`,
    `while [ $i -lt ${attempts} ]; do`,
    `  while read -r sl la ra st rest; do`,
    `    if [ "$la" = "0100007F:${hex}" ] && [ "$st" = "0A" ]; then exit 0; fi`,
    `  done </proc/net/tcp`,
    `  i=$((i+1)); sleep 0.01`,
    `done`,
    `exit 1`,
  ].join("\n");
  return ["sh", "-c", script];
}
