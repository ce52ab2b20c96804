/** A resolved value with the document it came from (for positions in later diagnostics). */
import type { TypedDocument } from "../schema/validate.js";

export interface Entry<T> {
  value: T;
  doc: TypedDocument;
}
