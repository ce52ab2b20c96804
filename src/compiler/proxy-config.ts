/**
 * `reins proxy --config FILE`: the Model the standalone proxy serves and the key it accepts.
 * The file holds one `kind: Model` document (other kinds are ignored); the shared key comes from
 * REINS_PROXY_KEY or is generated.
 */
import { randomBytes } from "node:crypto";
import { type Diagnostic, hasErrors, makeDiagnostic, type Result, sortDiagnostics } from "./contract/diagnostics.js";
import { loadSpecs } from "./load.js";
import { resolveWorld } from "./resolve/world.js";
import type { ResolvedModel } from "./contract/plan.js";

export interface ProxyConfig {
  model: ResolvedModel;
  key: string;
}

export async function loadProxyConfig(path: string, env: NodeJS.ProcessEnv = process.env): Promise<Result<ProxyConfig | undefined>> {
  const loaded = loadSpecs([path], { builtins: false, env });
  const world = resolveWorld(loaded.value.documents, loaded.value.builtins);
  const diagnostics: Diagnostic[] = sortDiagnostics([...loaded.diagnostics, ...world.diagnostics]);
  if (hasErrors(diagnostics)) return { value: undefined, diagnostics };
  const models = [...world.value.models.values()];
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
