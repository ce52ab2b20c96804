/**
 * Fields reins used to accept and silently ignore. They are not in the schemas (so editors flag
 * them too); `reins validate` names them with a precise code, message and hint instead of a plain
 * "unknown field".
 */
import type { DiagnosticCode } from "../contract/codes.js";
import type { PathSegment } from "../source/yaml.js";

export interface UnsupportedField {
  kind: string;
  /** Path of the object holding the field (indexes match any index). */
  at: string[];
  field: string;
  code: DiagnosticCode;
  message: string;
  hint: string;
}

export const UNSUPPORTED_FIELDS: readonly UnsupportedField[] = [
  {
    kind: "Model",
    at: ["spec", "engine"],
    field: "weightsDir",
    code: "FieldHasNoEffect",
    message: "`weightsDir` does nothing: the onnx engine loads `modelPath`, and during `reins run` it reloads the trainer's new weights by itself.",
    hint: "Remove `weightsDir`; point `modelPath` at the weights to start from (a directory with model.onnx, or an .onnx file).",
  },
];

/** The entry for `field` of the object at `path` in a document of `kind`, if it is a known unsupported field. */
export function unsupportedField(kind: unknown, path: readonly PathSegment[], field: string): UnsupportedField | undefined {
  const at = path.filter((p) => typeof p === "string");
  return UNSUPPORTED_FIELDS.find((u) => u.kind === kind && u.field === field && u.at.length === at.length && u.at.every((s, i) => s === at[i]));
}
