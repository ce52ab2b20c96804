/** Glob patterns over workspace paths: `*` (within a segment), `**` (any depth), `?`, `{a,b}`, `[abc]`. */

function escapeChar(c: string): string {
  return /[.+^$()|\\/]/.test(c) ? `\\${c}` : c;
}

/** Compiles a glob to an anchored RegExp over POSIX relative paths. */
export function globToRegExp(glob: string): RegExp {
  let out = "";
  let braces = 0;
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === "*") {
      if (glob[i + 1] === "*") {
        const slashAfter = glob[i + 2] === "/";
        const atSegmentStart = i === 0 || glob[i - 1] === "/";
        if (atSegmentStart && slashAfter) {
          out += "(?:[^/]*/)*";
          i += 2;
        } else {
          out += ".*";
          i += 1;
        }
      } else out += "[^/]*";
    } else if (c === "?") out += "[^/]";
    else if (c === "{") {
      braces++;
      out += "(?:";
    } else if (c === "}" && braces > 0) {
      braces--;
      out += ")";
    } else if (c === "," && braces > 0) out += "|";
    else if (c === "[") {
      const end = glob.indexOf("]", i + 1);
      if (end === -1) out += "\\[";
      else {
        const body = glob.slice(i + 1, end).replace(/\\/g, "\\\\");
        out += `[${body.startsWith("!") ? `^${body.slice(1)}` : body}]`;
        i = end;
      }
    } else out += escapeChar(c);
  }
  while (braces-- > 0) out += ")";
  return new RegExp(`^${out}$`);
}

export function matchGlob(paths: readonly string[], glob: string): string[] {
  const re = globToRegExp(glob.replace(/^\.\//, ""));
  return paths.filter((p) => re.test(p));
}
