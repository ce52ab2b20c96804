/** Sandbox and Trainer: where rollouts and training run. */
import { z } from "zod";
import { NonNegativeInt, PositiveInt, documentSchema } from "./common.js";

export const SandboxSpecSchema = z
  .strictObject({
    provider: z.enum(["local", "podman", "kubernetes"]).optional().describe("Default: local (Linux namespaces)."),
    image: z
      .string()
      .optional()
      .describe(
        "Image for podman/kubernetes (default localhost/reins-sandbox:1, built by scripts/build-image.sh); with harnessFiles image, the base of each harness's image. A local sandbox runs no image (rejected there).",
      ),
    harnessFiles: z
      .enum(["mount", "image"])
      .optional()
      .describe(
        "How a harness's files (its npm install, the node it runs on, reins-agent) reach its sandbox. mount (local and podman default): read-only from this machine's cache. image (kubernetes default, podman): an image reins builds offline with podman from those files on top of `image`, tagged by their content (localhost/reins-harness-<harness>:<digest>), so the sandbox mounts nothing from this machine; a cluster must be able to pull it (push it to your registry). Local sandboxes only mount.",
      ),
    resources: z
      .strictObject({
        cpu: z
          .string()
          .regex(/^\d+(\.\d+)?m?$/)
          .optional()
          .describe('CPUs the sandbox may use at once, e.g. "1" or "500m" (default 1; local: the cgroup cpu quota where the cpu controller is available).'),
        memoryMiB: PositiveInt.max(1048576)
          .optional()
          .describe(
            "Memory of the whole sandbox in MiB (default 2048). Local: memory cgroup, else RLIMIT_AS per process; files the sandbox writes to its workspace count here too.",
          ),
        pids: PositiveInt.min(16)
          .max(1048576)
          .optional()
          .describe(
            "Processes and threads the sandbox may have at once (default 1024). Local and podman: pids cgroup; kubernetes: best-effort, the kubelet's podPidsLimit applies.",
          ),
        diskMiB: PositiveInt.max(1048576)
          .optional()
          .describe(
            "Size cap of the workspace, HOME and /tmp together in MiB (default 1024): writes past it fail with ENOSPC. Local and podman: a size-capped tmpfs (memory, not the host disk); kubernetes: ephemeral-storage limit.",
          ),
        openFiles: PositiveInt.min(64)
          .max(1048576)
          .optional()
          .describe("Open files per process (RLIMIT_NOFILE, default 4096). Kubernetes: best-effort, the container runtime's default applies."),
        cpuSeconds: PositiveInt.max(31536000)
          .optional()
          .describe(
            "CPU seconds each process may use (RLIMIT_CPU, default 3600); the sandbox's total is bounded by cpu × its timeout. Kubernetes: best-effort, not expressible in a Pod.",
          ),
      })
      .optional()
      .describe("Limits of each sandbox; a process past one fails (ENOSPC, EAGAIN, EMFILE) or is killed (memory, CPU seconds)."),
    network: z.enum(["proxy-only", "none"]).optional().describe("Default proxy-only: the model proxy and nothing else."),
    concurrency: PositiveInt.max(4096).optional().describe("Rollouts at once (not part of the plan hash)."),
    timeoutSeconds: PositiveInt.max(86400)
      .optional()
      .describe("Default rollout timeout, sandbox creation included: applies to every task without its own timeoutSeconds (default 600)."),
    retries: NonNegativeInt.max(20).optional().describe("Retries for infrastructure failures (not part of the plan hash)."),
    warmPool: NonNegativeInt.max(10000)
      .optional()
      .describe(
        "Kubernetes with kubernetes.useSandboxClaims only: ready sandboxes kept waiting in each of the run's agent-sandbox warm pools (one pool per pod spec: image, resources, user), so a rollout's claim takes a running pod instead of starting one. Default 0: every claim starts a pod cold.",
      ),
    kubernetes: z
      .strictObject({
        namespace: z.string().optional(),
        runtimeClassName: z.string().optional(),
        useSandboxClaims: z
          .boolean()
          .optional()
          .describe(
            "Take each rollout's sandbox through a SandboxClaim on the run's agent-sandbox (v1, extensions.agents.x-k8s.io/v1beta1) warm pools instead of creating its Pod; needs agent-sandbox installed. Claims carry no env, so they can take warm pods; the rollout's identity is attached to the pod after the claim.",
          ),
        ttlSeconds: PositiveInt.optional().describe(
          "Life of the run's owner object (its reins.dev/expires-at annotation), and of a claim when a rollout has no timeout (default 3600).",
        ),
        maxStarting: PositiveInt.max(100000)
          .optional()
          .describe(
            "Sandboxes (pods or claims) created but not yet Ready at once, at most, across the run; more wait their turn before they are created. Separate from concurrency (rollouts in flight): it keeps a burst from saturating the cluster's startup pipeline. Default 128 (not part of the plan hash).",
          ),
        createsPerSecond: z
          .number()
          .positive()
          .max(10000)
          .optional()
          .describe(
            "Sandbox creations (pods or claims) per second, at most: a token bucket, for clusters or providers with a creation-rate limit. Default: no limit (not part of the plan hash).",
          ),
        createBurst: PositiveInt.max(100000)
          .optional()
          .describe(
            "With createsPerSecond: creations that may happen at once after a quiet spell (the bucket's size). Default createsPerSecond rounded up (not part of the plan hash).",
          ),
        startTimeoutSeconds: PositiveInt.max(86400)
          .optional()
          .describe(
            "Seconds from a sandbox's create (after admission) until it must be Ready (a pod, or a claim's sandbox); past it the try fails as an infrastructure failure (SandboxTimeout), retried and never a reward. Default 300 (not part of the plan hash).",
          ),
        proxy: z
          .strictObject({
            address: z
              .ipv4()
              .optional()
              .describe(
                "An IPv4 address of this machine that pods can reach (reins runs outside the cluster): the proxy listens there, and the run's NetworkPolicy lets pods reach that address and port only.",
              ),
            service: z
              .string()
              .regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/)
              .optional()
              .describe(
                "The DNS name of the Service in front of reins when reins runs in the cluster (e.g. reins-proxy.reins.svc): the proxy listens on all addresses.",
              ),
            port: PositiveInt.max(65535).optional().describe("The proxy's port (required with service; default with address: any free port)."),
            podLabels: z
              .record(z.string(), z.string())
              .optional()
              .describe("With service: the labels of reins' own pods, which the run's NetworkPolicy lets sandbox pods reach."),
          })
          .optional()
          .describe("How sandbox pods reach the model proxy: exactly one of address and service. Required when a harness calls a model."),
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
    python: z
      .string()
      .optional()
      .describe(
        "Python interpreter for the local worker (default /usr/bin/python3). Allowed: an interpreter inside the project (relative to this spec file, e.g. .venv/bin/python), in a Python environment reins installs ($REINS_SCALE_PYTHON_DIR, else ~/.cache/reins/scale-python; $REINS_METRICS_PYTHON_DIR, else ~/.cache/reins/metrics-python; $REINS_METRICS_PYTHON), or listed in REINS_ALLOWED_PYTHON (':'-separated absolute paths of interpreters or directories, read from reins's environment); anything else is refused (PythonNotAllowed).",
      ),
    image: z.string().optional(),
    worker: z
      .enum(["cluster", "local"])
      .optional()
      .describe(
        "With mode kubernetes: where the worker process runs. cluster (default): torchrun in the Job's pods; reins run stages the initial policy in the weights claim through rank 0's pod, drives rank 0 over the trainer protocol and copies each weights version out to its engine (one CPU process; device cuda, gpus and nodes > 1 are not driven by reins run: TrainerModeUnsupported). local: reins run creates the Job, its headless Service and the weights claim on the cluster and waits for rank 0's pod, but runs the worker on this machine as with mode local (device cpu).",
      ),
  })
  .describe("The trainer worker.");

export const TrainerDocument = documentSchema("Trainer", TrainerSpecSchema, "A Trainer: the PyTorch worker and where it runs.");

export type SandboxSpec = z.input<typeof SandboxSpecSchema>;
export type TrainerSpec = z.input<typeof TrainerSpecSchema>;
