/** Finding the host's helper programs (bwrap, socat, podman) in the usual system directories. */
import { statSync } from "node:fs";
import path from "node:path";

export function findExecutable(name: string, dirs = ["/usr/bin", "/bin", "/usr/local/bin", "/usr/sbin"]): string | null {
  for (const dir of dirs) {
    const candidate = path.join(dir, name);
    try {
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      /* next */
    }
  }
  return null;
}
