/** Presence checks: fileExists, fileAbsent, directoryExists, fileCount. */
import type { ResolvedCheck } from "../../../compiler/contract/plan.js";
import { matchGlob } from "../glob.js";
import { fail, pass, str, type CheckContext, type CheckDefinition } from "./context.js";

function bounds(check: ResolvedCheck, n: number, what: string): { ok: boolean; reason: string } {
  const eq = check.equals as number | undefined;
  const min = check.min as number | undefined;
  const max = check.max as number | undefined;
  if (eq !== undefined && n !== eq) return { ok: false, reason: `${what} is ${n}, expected exactly ${eq}.` };
  if (min !== undefined && n < min) return { ok: false, reason: `${what} is ${n}, expected at least ${min}.` };
  if (max !== undefined && n > max) return { ok: false, reason: `${what} is ${n}, expected at most ${max}.` };
  return { ok: true, reason: `${what} is ${n}.` };
}

export { bounds as checkBounds };

export const fileChecks: CheckDefinition[] = [
  {
    type: "fileExists",
    label: (c) => `fileExists ${str(c, "path")}`,
    async evaluate(c, ctx: CheckContext) {
      const path = str(c, "path");
      const st = await ctx.reader.stat(path);
      switch (st.kind) {
        case "file":
          return pass(`${path} exists.`);
        case "missing":
          return fail(await ctx.describeMissing(path));
        case "directory":
          return fail(`${path} is a directory, not a file.`);
        case "outside":
          return fail(`${path} is a symlink leading outside the workspace (${st.target}); it was not followed.`);
        default:
          return fail(`${path} is a special file, not a regular file.`);
      }
    },
  },
  {
    type: "fileAbsent",
    label: (c) => `fileAbsent ${str(c, "path")}`,
    async evaluate(c, ctx) {
      const path = str(c, "path");
      const st = await ctx.reader.stat(path);
      if (st.kind === "missing") return pass(`${path} is absent.`);
      return fail(`${path} exists but should not.`);
    },
  },
  {
    type: "directoryExists",
    label: (c) => `directoryExists ${str(c, "path")}`,
    async evaluate(c, ctx) {
      const path = str(c, "path");
      const st = await ctx.reader.stat(path);
      if (st.kind === "directory") return pass(`${path}/ exists.`);
      if (st.kind === "missing") return fail(`the directory ${path} does not exist.`);
      if (st.kind === "outside") return fail(`${path} is a symlink leading outside the workspace (${st.target}); it was not followed.`);
      return fail(`${path} exists but is not a directory.`);
    },
  },
  {
    type: "fileCount",
    label: (c) => `fileCount ${str(c, "glob")}`,
    async evaluate(c, ctx) {
      const glob = str(c, "glob");
      const listing = await ctx.list();
      const n = matchGlob(listing.files, glob).length;
      const withDefault = c.equals === undefined && c.min === undefined && c.max === undefined ? { ...c, min: 1 } : c;
      const b = bounds(withDefault, n, `the number of files matching ${glob}`);
      const note = listing.truncated ? " (the workspace listing stopped at its entry limit)" : "";
      return b.ok ? pass(b.reason) : fail(b.reason.replace(/\.$/, `${note}.`));
    },
  },
];
