// The JavaScript entry of the reins package (package.json "exports" "."): the two front doors,
// loaded through tsx, scoped to reins's own files (one module graph, so both share their classes).
import { tsImport } from "tsx/esm/api";

const reins = await tsImport("./index.ts", { parentURL: import.meta.url, tsconfig: false });

export const { compiler, runtime } = reins;
