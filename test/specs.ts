/** Spec files the tests write often, built in one place: change a kind's shape here, not in each test. */

/**
 * A Model on the scripted engine: `texts` are its replies in order; `spec` adds lines under `spec:`
 * (each written as given, e.g. "proxy: {maxBodyBytes: 2048}").
 */
export function scriptedModelYaml(opts: { name?: string; tokenizer?: string; texts?: readonly string[]; spec?: readonly string[] } = {}): string {
  const texts = opts.texts ?? ["ok"];
  return [
    "apiVersion: reins/v1alpha1",
    "kind: Model",
    `metadata: {name: ${opts.name ?? "tiny"}}`,
    "spec:",
    `  tokenizer: ${opts.tokenizer ?? "{type: qwen3}"}`,
    ...(opts.spec ?? []).map((l) => `  ${l}`),
    "  engine:",
    "    type: scripted",
    "    script:",
    ...texts.map((t) => `      - text: ${t}`),
    "",
  ].join("\n");
}
