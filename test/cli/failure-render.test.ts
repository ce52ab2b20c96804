/**
 * The one renderer of failures (src/cli/failure.ts), which src/cli/main.ts applies to anything a
 * command throws: expected failures read `error[Code]` + hint and exit 1; anything else is a bug
 * in reins: one line asking to report it, exit 70, the stack only with REINS_DEBUG=1 (`debug`).
 */
import { describe, expect, it } from "vitest";
import { CODES } from "../../src/compiler/contract/codes.js";
import { DiagnosticsError, makeDiagnostic } from "../../src/compiler/contract/diagnostics.js";
import { ReinsError } from "../../src/compiler/contract/problem.js";
import { renderFailure } from "../../src/cli/failure.js";
import { LoopError } from "../../src/runtime/control/loop-error.js";
import { EngineError } from "../../src/runtime/engines/engine.js";
import { ChatTemplateError } from "../../src/runtime/model/chat-template.js";
import { ModelLoadError } from "../../src/runtime/model/model-runtime.js";
import { TokenizerLoadError } from "../../src/runtime/model/tokenizer.js";
import { SandboxError } from "../../src/runtime/sandbox/sandbox-error.js";
import { TrainerError } from "../../src/runtime/training/trainer-error.js";

const plain = { json: false, debug: false, color: false };

function bug(): Error {
  const err = new TypeError("Cannot read properties of undefined (reading 'id')");
  err.stack = `${err.name}: ${err.message}\n    at finishedIds (src/runtime/store/run-store.ts:101:40)\n    at openRun (src/cli/run-support.ts:40:5)`;
  return err;
}

describe("a bug in reins", () => {
  it("is one line asking for a report, exit 70, no stack", () => {
    const out = renderFailure(bug(), plain);
    expect(out.exitCode).toBe(70);
    expect(out.stdout).toBe("");
    expect(out.stderr).toBe("reins: internal error (a bug): Cannot read properties of undefined (reading 'id'). Please report it with REINS_DEBUG=1 output.\n");
  });

  it("shows its stack with REINS_DEBUG=1", () => {
    const out = renderFailure(bug(), { ...plain, debug: true });
    expect(out.exitCode).toBe(70);
    expect(out.stderr.split("\n")[0]).toContain("internal error (a bug)");
    expect(out.stderr).toContain("    at finishedIds (src/runtime/store/run-store.ts:101:40)");
  });

  it("keeps stdout JSON with --json", () => {
    const out = renderFailure("a thrown string", { ...plain, json: true });
    expect(out.exitCode).toBe(70);
    expect(JSON.parse(out.stdout)).toMatchObject({ ok: false, problems: [{ code: "InternalError", message: "a thrown string" }] });
    expect(out.stderr.trim().split("\n")).toHaveLength(1);
  });
});

describe("an expected failure", () => {
  it("prints error[Code], the message and the hint, exit 1, no stack even when it has a cause", () => {
    const err = new ReinsError("RunNotFound", "runs/x does not exist.", undefined, { cause: bug() });
    const out = renderFailure(err, plain);
    expect(out.exitCode).toBe(1);
    expect(out.stderr).toBe(`error[RunNotFound]: runs/x does not exist.\n  hint: ${CODES.RunNotFound}\n`);
  });

  it("is every runtime error class, each with its code and a hint", () => {
    const errors: [Error, string][] = [
      [new TrainerError("TrainerDied", "the trainer worker died during optim_step: killed by SIGKILL", "resume from the last checkpoint"), "TrainerDied"],
      [new EngineError("cannot reach http://127.0.0.1:1/v1: ECONNREFUSED", "unreachable"), "EngineUnreachable"],
      [new EngineError("onnxruntime failed"), "EngineFailed"],
      [new SandboxError("create-failed", "sb-1", "bwrap: setting up uid map: Permission denied"), "SandboxCreateFailed"],
      [new LoopError("EngineReloadFailed", "The engine could not load the new weights v3.", "Fix the cause first."), "EngineReloadFailed"],
      [new TokenizerLoadError("tokenizer file models/t.json does not exist", "TokenizerNotFound"), "TokenizerNotFound"],
      [new ChatTemplateError("the chat template does not parse", "ChatTemplateInvalid"), "ChatTemplateInvalid"],
      [
        new ModelLoadError("StopTokenUnknown", 'stop token "<|end|>" is not in the vocabulary', "List stop tokens as the tokenizer spells them."),
        "StopTokenUnknown",
      ],
    ];
    for (const [err, code] of errors) {
      expect(err).toBeInstanceOf(ReinsError);
      const out = renderFailure(err, plain);
      expect(out.exitCode, code).toBe(1);
      expect(out.stderr, code).toMatch(new RegExp(`^error\\[${code}\\]: .+\\n  hint: \\S`));
    }
  });

  it("with --json is {ok: false, problems, diagnostics} on stdout and nothing on stderr", () => {
    const out = renderFailure(new ReinsError("PlanChanged", "The specs changed since the run started."), { ...plain, json: true });
    expect(out.exitCode).toBe(1);
    expect(out.stderr).toBe("");
    expect(JSON.parse(out.stdout)).toEqual({
      ok: false,
      problems: [{ code: "PlanChanged", message: "The specs changed since the run started.", hint: CODES.PlanChanged }],
      diagnostics: [
        { code: "PlanChanged", severity: "error", message: "The specs changed since the run started.", hint: CODES.PlanChanged, file: "", line: 0, column: 0 },
      ],
    });
  });

  it("that carries diagnostics prints each with its position", () => {
    const d = makeDiagnostic("UnknownField", { file: "specs/x.yaml", line: 6, column: 3 }, 'Unknown field "timeoutSecond".', CODES.UnknownField);
    const out = renderFailure(new DiagnosticsError([d]), plain);
    expect(out.exitCode).toBe(1);
    expect(out.stderr).toContain("specs/x.yaml:6:3: error[UnknownField]: Unknown field");
    expect(out.stderr).toContain("hint:");
  });

  it("of the operating system on a named file is FileSystemError, not a bug", () => {
    const err = Object.assign(new Error("EACCES: permission denied, open '/data/runs/x/events.jsonl'"), {
      code: "EACCES",
      syscall: "open",
      path: "/data/runs/x/events.jsonl",
    });
    const out = renderFailure(err, plain);
    expect(out.exitCode).toBe(1);
    expect(out.stderr).toContain("error[FileSystemError]: Cannot open /data/runs/x/events.jsonl: permission denied.");
  });

  it("of a full disk or quota is DiskFull with its hint, also from a write that names no file (a descriptor's), not a bug", () => {
    for (const [code, words] of [
      ["ENOSPC", "no space left on the device"],
      ["EDQUOT", "disk quota exceeded"],
    ] as const) {
      const err = Object.assign(new Error(`${code}: ${words}, write`), { code, syscall: "write" });
      err.stack = `Error: ${err.message}\n    at writeSync (node:fs:939:3)`;
      const out = renderFailure(err, plain);
      expect(out.exitCode).toBe(1);
      expect(out.stderr).toBe(`error[DiskFull]: Cannot write: ${words}.\n  hint: ${CODES.DiskFull}\n`);
    }
  });

  it("never writes a control character to the terminal", () => {
    const out = renderFailure(new ReinsError("RunCorrupt", "plan.json is not valid JSON (Unexpected token '\u001b[2J')."), plain);
    expect(out.stderr).not.toContain("\u001b");
    expect(out.stderr).toContain("\\x1b[2J");
  });
});
