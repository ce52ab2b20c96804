// The JavaScript entry of reins/testing (package.json "exports"): loads the TypeScript module
// through tsx, scoped to reins's own files, so a plain `node --test` (or any runner) can use it.
import { tsImport } from "tsx/esm/api";

const testing = await tsImport("./index.ts", { parentURL: import.meta.url, tsconfig: false });

export const { constantJudge, describeFamily, explain, familyChecks, familyPaths, listMistakes, loadFamilyTasks, modelineSchema, solveAndVerify } = testing;
