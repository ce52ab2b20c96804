/** RFC 4180 CSV: quoted fields, doubled quotes, CRLF or LF, a configurable delimiter. */

export interface CsvParse {
  rows: string[][];
  /** Set when the text is not well-formed CSV (unterminated quote, stray quote). */
  error?: { line: number; message: string };
}

export function parseCsv(text: string, delimiter = ","): CsvParse {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = "";
  let inQuotes = false;
  let line = 1;
  let quoteStartLine = 1;
  let fieldStarted = false;
  const src = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  for (let i = 0; i < src.length; i++) {
    const c = src[i];
    if (inQuotes) {
      if (c === '"') {
        if (src[i + 1] === '"') {
          field += '"';
          i++;
        } else inQuotes = false;
      } else {
        if (c === "\n") line++;
        field += c;
      }
      continue;
    }
    if (c === '"') {
      if (fieldStarted && field.length > 0) return { rows, error: { line, message: "a quote in the middle of an unquoted field" } };
      inQuotes = true;
      fieldStarted = true;
      quoteStartLine = line;
    } else if (c === delimiter) {
      row.push(field);
      field = "";
      fieldStarted = false;
    } else if (c === "\n" || c === "\r") {
      if (c === "\r" && src[i + 1] === "\n") i++;
      row.push(field);
      rows.push(row);
      row = [];
      field = "";
      fieldStarted = false;
      line++;
    } else {
      field += c;
      fieldStarted = true;
    }
  }
  if (inQuotes) return { rows, error: { line: quoteStartLine, message: "a quoted field is never closed" } };
  if (fieldStarted || row.length > 0) {
    row.push(field);
    rows.push(row);
  }
  // Blank lines carry no data.
  return { rows: rows.filter((r) => !(r.length === 1 && r[0] === "")) };
}
