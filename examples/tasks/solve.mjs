#!/usr/bin/env node
// A stand-in "agent" for evaluating the starter library without a model: it recognizes the task
// family from the workspace and applies that family's reference solution, or one of its mistakes.
// Which one is a pure function of the task (its instruction), except for one task in three, which
// flips a coin on every attempt — so an evaluation shows pass@k and pass^k that differ. With
// SOLVE_ATTEMPT set, the coin is a hash of the instruction and the attempt (reproducible runs).
// Prints "<family>: reference solution" or "<family>: mistake <name>".
// Usage: node solve.mjs WORKSPACE INSTRUCTION
import { execFileSync } from "node:child_process";
import { createHash, randomInt } from "node:crypto";
import { existsSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const HERE = dirname(fileURLToPath(import.meta.url));
// The instruction comes after "--" (end of options), so one that starts with "-" is still the instruction.
const argv = process.argv.slice(2);
const [ws, instruction = ""] = argv[1] === "--" ? [argv[0], argv[2]] : argv;
if (!ws) {
  console.error("usage: solve.mjs WORKSPACE [--] INSTRUCTION");
  process.exit(2);
}

const has = (p) => existsSync(join(ws, p));
const family = has("src/stats.js")
  ? "fix-stats-bug"
  : has("config/monitoring.yaml")
    ? "log-triage"
    : has("team.yaml") && has("notes")
      ? "meeting-actions"
      : has("data") && readdirSync(join(ws, "data")).some((f) => /^sales-.*\.csv$/.test(f))
        ? "sales-summary"
        : has("backlog.yaml")
          ? "sprint-plan"
          : has("product/facts.yaml")
            ? "support-faq"
            : undefined;
if (!family) {
  console.error("solve.mjs: this workspace belongs to no starter family");
  process.exit(1);
}

const solution = join(HERE, family, "solution.mjs");
const mistakes = Object.keys(JSON.parse(execFileSync(process.execPath, [solution, "--mistakes"], { encoding: "utf8" })));
const h = createHash("sha256").update(instruction).digest();
const kind = h[0] % 3; // 0: always right, 1: always a mistake, 2: a coin flip per attempt
const attempt = process.env.SOLVE_ATTEMPT;
const coin = attempt === undefined ? randomInt(2) : createHash("sha256").update(`${instruction}\n${attempt}`).digest()[0] % 2;
const wrong = kind === 1 || (kind === 2 && coin === 1);
const args = [solution, ws, ...(wrong ? ["--mistake", mistakes[h[1] % mistakes.length]] : [])];
console.log(`${family}: ${wrong ? `mistake ${args[3]}` : "reference solution"}`);
execFileSync(process.execPath, args, { stdio: "inherit" });
