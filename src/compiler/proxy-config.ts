/**
 * `reins proxy --config FILE`: the Model the standalone proxy serves and the key it accepts.
 * The file holds one `kind: Model` document (other kinds are ignored); the shared key comes from
 * REINS_PROXY_KEY or is generated.
 */
import { randomBytes } from "node:crypto";
import { type Diagnostic, hasErrors, makeDiagnostic, type Result } from "./contract/diagnostics.js";
import type { ResolvedModel } from "./contract/plan.js";
import type { LoadOptions } from "./load.js";
import { loadAndResolve, settle } from "./load-world.js";

export interface ProxyConfig {
  model: ResolvedModel;
  key: string;
}

export async function loadProxyConfig(path: string, opts: Omit<LoadOptions, "builtins"> = {}): Promise<Result<ProxyConfig | undefined>> {
  const { cwd, env, projectRoot } = settle(opts);
  const loaded = loadAndResolve([path], { cwd, env, builtins: false, ...(projectRoot !== undefined ? { projectRoot } : {}) });
  const diagnostics: Diagnostic[] = [...loaded.diagnostics];
  if (hasErrors(diagnostics)) return { value: undefined, diagnostics };
  const models = [...loaded.value.world.models.values()];
  if (models.length !== 1) {
    diagnostics.push(
      makeDiagnostic(
        models.length === 0 ? "ProxyModelMissing" : "ProxyModelAmbiguous",
        { file: path, line: 1, column: 1 },
        models.length === 0 ? "The file has no Model document." : `The file has ${models.length} Model documents; the proxy serves one.`,
        "Give `reins proxy --config` a file with exactly one `kind: Model` document.",
      ),
    );
    return { value: undefined, diagnostics };
  }
  const key = env.REINS_PROXY_KEY && env.REINS_PROXY_KEY.length > 0 ? env.REINS_PROXY_KEY : `reins-${randomBytes(18).toString("base64url")}`;
  return { value: { model: models[0]!.value, key }, diagnostics };
}
