/** TaskFamily: a templated Task expanded over a matrix and/or generated parameters. */
import { z } from "zod";
import { PositiveInt, documentSchema } from "./common.js";
import { TaskSpecSchema } from "./task.js";

const Scalar = z.union([z.string(), z.number(), z.boolean()]);
const ParamValue = z.union([Scalar, z.array(z.unknown()), z.record(z.string(), z.unknown())]);

export const ParameterSpec = z
  .strictObject({
    name: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/)
      .describe("Identifier used in templates as {{name}}."),
    type: z.enum(["string", "integer", "number", "boolean", "list", "object"]).optional().describe("Default: string."),
    default: ParamValue.optional(),
    enum: z.array(Scalar).optional().describe("Allowed values."),
    description: z.string().optional(),
  })
  .describe("A typed parameter of the family.");

export const MatrixSpec = z
  .object({
    include: z.array(z.record(z.string(), ParamValue)).optional().describe("Extra cells, or values added to matching cells (GitHub Actions semantics)."),
    exclude: z.array(z.record(z.string(), ParamValue)).optional().describe("Cells removed when all listed values match."),
  })
  .catchall(z.array(ParamValue))
  .describe("Axes (lists of values) whose cartesian product gives the cells.");

export const GeneratorSpec = z
  .strictObject({
    name: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/),
    pick: z.array(ParamValue).optional().describe("One value chosen uniformly."),
    sample: z
      .strictObject({ from: z.array(ParamValue), count: PositiveInt })
      .optional()
      .describe("Distinct values chosen uniformly, as a list."),
    int: z.strictObject({ min: z.number().int(), max: z.number().int() }).optional(),
    float: z.strictObject({ min: z.number(), max: z.number(), decimals: z.number().int().min(0).max(12).optional() }).optional(),
    bool: z.strictObject({ p: z.number().min(0).max(1).optional() }).optional(),
    template: z.string().optional().describe("A Handlebars string over the values generated before this one."),
  })
  .describe("A seeded value generator: exactly one of pick, sample, int, float, bool, template.");

export const GenerateSpec = z
  .strictObject({
    count: PositiveInt.max(10_000_000).describe("Tasks generated (per matrix cell when a matrix is present)."),
    seed: z.number().int().optional().describe("Seed of the generators (default 0)."),
    values: z.array(GeneratorSpec).describe("Generated parameters, in order."),
  })
  .describe("Seeded parameter generation.");

/** The template is a Task spec whose numeric fields may also be a single `{{parameter}}`. */
const TemplateString = z.string().regex(/^\{\{\s*[A-Za-z_][A-Za-z0-9_]*\s*\}\}$/, "a number or a single {{parameter}}");
export const TaskTemplateSchema = TaskSpecSchema.extend({
  timeoutSeconds: z
    .union([PositiveInt.max(86400), TemplateString])
    .optional()
    .describe("Seconds, or a single {{parameter}}."),
}).describe("A Task spec whose strings and file contents are Handlebars templates.");

export const TaskFamilySpecSchema = z
  .strictObject({
    parameters: z.array(ParameterSpec).optional(),
    matrix: MatrixSpec.optional(),
    generate: GenerateSpec.optional(),
    category: z.string().optional().describe("Category of every task (defaults to the `category` label)."),
    taskLabels: z.record(z.string(), z.string()).optional().describe('Labels added to each task; values are templates (e.g. split: "{{split}}").'),
    template: TaskTemplateSchema,
  })
  .describe("A family of tasks rendered from one template.");

export const TaskFamilyDocument = documentSchema(
  "TaskFamily",
  TaskFamilySpecSchema,
  "A TaskFamily: a templated Task expanded deterministically into many Tasks.",
);

export type TaskFamilySpec = z.input<typeof TaskFamilySpecSchema>;
