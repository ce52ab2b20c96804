#!/usr/bin/env node
// Entry point: runs the TypeScript CLI through tsx's loader. reins's own compiler settings apply
// (not those of a tsconfig.json in the directory it runs from).
import { register } from "tsx/esm/api";
register({ tsconfig: false });
await import("../src/cli/main.ts");
