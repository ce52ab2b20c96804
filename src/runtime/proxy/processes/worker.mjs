// A proxy process (./front.ts forks it): runs ./worker-main.ts through tsx's loader, as bin/reins.js
// runs the CLI (reins's own compiler settings, not those of a tsconfig.json where it runs).
import { register } from "tsx/esm/api";
register({ tsconfig: false });
await import("./worker-main.ts");
