/**
 * Harnesses: install a harness from its spec into the cache, build its launch plan (argv, env,
 * config files), run it for one rollout. reins-agent, reins' own minimal agent, ships in ./reins-agent/.
 */
export { installHarness, describeInstall, type InstalledHarness, type InstallOptions } from "./install.js";
export { resolveCacheRoot, planInstall, parseNpmSpec, parseNodeSpec, type InstallLayout } from "./install-paths.js";
export { buildLaunchPlan, renderTemplate, SYSTEM_PATH, type LaunchContext, type LaunchPlan, type LaunchRuntime } from "./launch-plan.js";
export { prepareHarness, runHarness, spawnHarness, writeHomeFiles, REINS_AGENT_PATH, type HarnessExit, type SpawnOptions } from "./launch.js";
export type { HarnessProblem, Outcome } from "./problem.js";
