/** Shared pieces of the spec language: document envelope, metadata, references. */
import { z } from "zod";

export const API_VERSION = "reins/v1alpha1";

export const NAME_PATTERN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

export const Name = z.string().min(1).max(63).regex(NAME_PATTERN).describe("Lowercase letters, digits and '-', at most 63 characters (a DNS-1123 label).");

export const Metadata = z
  .strictObject({
    name: Name,
    labels: z.record(z.string(), z.string()).optional().describe("Key/value labels used for selection."),
    annotations: z.record(z.string(), z.string()).optional().describe("Free-form notes for tools."),
  })
  .describe("Identifies the document: a name unique per kind, labels, annotations.");

export const Ref = z.strictObject({ name: Name.describe("Name of a document of the referenced kind.") });

export const PositiveInt = z.number().int().positive();
export const NonNegativeInt = z.number().int().nonnegative();

/** Numbers users may write as strings ("1e-6"), normalized by the compiler. */
export const LooseNumber = z.union([z.number(), z.string().regex(/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/, "a number, e.g. 1e-6")]);

export function documentSchema<K extends string, S extends z.ZodType>(kind: K, spec: S, description: string) {
  return z
    .strictObject({
      apiVersion: z.literal(API_VERSION).describe("Always reins/v1alpha1."),
      kind: z.literal(kind),
      metadata: Metadata,
      spec,
    })
    .describe(description);
}
