/**
 * What the generator is asked: the TaskFamily format reins accepts and the rules a kept task must
 * meet (system), and one persona × scenario × skill (user). The combinations are ordered by the
 * synthesis's seed. Pure.
 */
import { createHash } from "node:crypto";
import type { ResolvedSynthesis } from "../../compiler/index.js";
import { shuffledIndexes } from "../../compiler/contract/rng.js";
import { seededStream } from "../../compiler/contract/seeds.js";
import type { GeneratorPrompt } from "./generator.js";

export interface Combination {
  persona: string;
  scenario: string;
  skill: string;
}

/** `count` combinations: every persona × scenario × skill in a seeded order, repeated when count is larger. */
export function combinations(s: Pick<ResolvedSynthesis, "personas" | "scenarios" | "skills" | "count" | "seed">): Combination[] {
  const all: Combination[] = [];
  for (const persona of s.personas) for (const scenario of s.scenarios) for (const skill of s.skills) all.push({ persona, scenario, skill });
  const order = shuffledIndexes(all.length, seededStream(s.seed, "synthesis-order"));
  return Array.from({ length: s.count }, (_, i) => all[order[i % all.length]!]!);
}

const SYSTEM = `You write one reins TaskFamily: a templated task for training and evaluating coding agents.
Answer with the YAML in one \`\`\`yaml block:
apiVersion: reins/v1alpha1
kind: TaskFamily
metadata: {name: <lowercase-name>, labels: {category: <category>}}
spec:
  parameters: [{name: <p>, type: string|integer|number|boolean}]
  matrix: {include: [{<p>: <value>}, ...]}      # 2 to 8 tasks
  template:
    instruction: <what to do, naming every file to write and its format>
    workspace: {files: [{path: <relative path>, content: <text>}]}   # inline content only
    verifier: {checks: [<declarative checks: fileEquals, fileContains, jsonPath, csv, lineCount, ...>]}
    timeoutSeconds: 120
    reference:
      turns:                                   # the reference solution, as model turns
        - toolCalls: [{name: write_file, arguments: {path: <path>, content: <text>}}]
        - text: done
Rules: the instruction must not contain the answers the verifier expects; a do-nothing agent must
fail; a solution with a file missing or a value wrong must fail; the reference must pass.
Reference tools: write_file {path, content}, read_file {path}, list_files {path}, run_command {command}.`;

export function promptFor(c: Combination): GeneratorPrompt {
  return { system: SYSTEM, user: `Persona: ${c.persona}\nScenario: ${c.scenario}\nSkill: ${c.skill}\nWrite one TaskFamily for them.` };
}

export function promptHash(p: GeneratorPrompt): string {
  return `sha256:${createHash("sha256").update(p.system).update("\0").update(p.user).digest("hex")}`;
}
