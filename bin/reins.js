#!/usr/bin/env node
// Entry point: runs the CLI from its bundle (bin/bundle.mjs: one file, remade when src/ changes), or,
// when no bundle can be made (or REINS_FROM_SOURCES=1), from the TypeScript sources through tsx's
// loader. reins's own compiler settings apply (not those of a tsconfig.json in the directory it runs from).
import { pathToFileURL } from "node:url";
import { bundledCli } from "./bundle.mjs";

const bundle = await bundledCli();
if (bundle) {
  await import(pathToFileURL(bundle).href);
} else {
  const { register } = await import("tsx/esm/api");
  register({ tsconfig: false });
  await import("../src/cli/main.ts");
}
