/** JSON Schemas (draft-07) generated from the zod schemas, for editors and other tools. */
import { z } from "zod";
import { API_VERSION } from "./common.js";
import { KINDS, KIND_NAMES } from "./kinds.js";

export const SCHEMA_DIR = "v1alpha1";
const BASE_ID = "https://reins.dev/schemas/v1alpha1";

export interface GeneratedSchema {
  /** Relative path under schemas/, e.g. v1alpha1/task.schema.json */
  path: string;
  json: Record<string, unknown>;
}

export function generateJsonSchemas(): GeneratedSchema[] {
  const out: GeneratedSchema[] = [];
  for (const kind of KIND_NAMES) {
    const { schema, file } = KINDS[kind];
    const json = z.toJSONSchema(schema, { target: "draft-7", io: "input", unrepresentable: "any" }) as Record<string, unknown>;
    out.push({ path: `${SCHEMA_DIR}/${file}.schema.json`, json: { $id: `${BASE_ID}/${file}.schema.json`, title: kind, ...json } });
  }
  // any.schema.json: dispatches on `kind` so one modeline serves multi-kind files.
  const anyOf = KIND_NAMES.map((kind) => ({
    if: { properties: { kind: { const: kind } }, required: ["kind"] },
    // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then keyword
    then: { $ref: `./${KINDS[kind].file}.schema.json` },
  }));
  out.push({
    path: `${SCHEMA_DIR}/any.schema.json`,
    json: {
      $schema: "http://json-schema.org/draft-07/schema#",
      $id: `${BASE_ID}/any.schema.json`,
      title: "Any reins document",
      type: "object",
      required: ["apiVersion", "kind", "metadata", "spec"],
      properties: { apiVersion: { const: API_VERSION }, kind: { enum: KIND_NAMES } },
      allOf: anyOf,
    },
  });
  return out;
}

export function serializeSchema(json: Record<string, unknown>): string {
  return `${JSON.stringify(json, null, 2)}\n`;
}
