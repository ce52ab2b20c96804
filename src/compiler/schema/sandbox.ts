/** Sandbox and Trainer: where rollouts and training run. */
import { z } from "zod";
import { NonNegativeInt, PositiveInt, documentSchema } from "./common.js";

export const SandboxSpecSchema = z
  .strictObject({
    provider: z.enum(["local", "podman", "kubernetes"]).optional().describe("Default: local (Linux namespaces)."),
    image: z.string().optional().describe("Image for podman/kubernetes."),
    resources: z
      .strictObject({ cpu: z.string().regex(/^\d+(\.\d+)?m?$/).optional(), memoryMiB: PositiveInt.optional() })
      .optional(),
    network: z.enum(["proxy-only", "none"]).optional().describe("Default proxy-only: the model proxy and nothing else."),
    concurrency: PositiveInt.max(4096).optional().describe("Rollouts at once (not part of the plan hash)."),
    timeoutSeconds: PositiveInt.max(86400).optional().describe("Default rollout timeout, sandbox creation included."),
    retries: NonNegativeInt.max(20).optional().describe("Retries for infrastructure failures (not part of the plan hash)."),
    warmPool: NonNegativeInt.optional(),
    kubernetes: z
      .strictObject({
        namespace: z.string().optional(),
        runtimeClassName: z.string().optional(),
        useSandboxClaims: z.boolean().optional(),
        ttlSeconds: PositiveInt.optional(),
      })
      .optional(),
  })
  .describe("Where rollouts run.");

export const SandboxDocument = documentSchema("Sandbox", SandboxSpecSchema, "A Sandbox: provider, resources, isolation.");

export const TrainerSpecSchema = z
  .strictObject({
    type: z.literal("torch").optional(),
    mode: z.enum(["local", "kubernetes"]).optional(),
    device: z.enum(["cpu", "cuda"]).optional(),
    gpus: NonNegativeInt.optional(),
    nodes: PositiveInt.optional(),
    checkpointDir: z.string().optional(),
    weightsFormat: z.array(z.enum(["onnx", "safetensors"])).optional(),
    python: z.string().optional().describe("Python interpreter for the local worker (default /usr/bin/python3)."),
    image: z.string().optional(),
  })
  .describe("The trainer worker.");

export const TrainerDocument = documentSchema("Trainer", TrainerSpecSchema, "A Trainer: the PyTorch worker and where it runs.");

export type SandboxSpec = z.input<typeof SandboxSpecSchema>;
export type TrainerSpec = z.input<typeof TrainerSpecSchema>;
