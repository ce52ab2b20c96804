// Workspace tools of reins-agent: read_file, write_file, list_files, run_command.
// File tools are confined to the workspace: a path that resolves (through symlinks too) outside it
// is refused. run_command runs with the workspace as its cwd; confining what a command can touch is
// the sandbox's job, not this file's.
import { spawn } from "node:child_process";
import fs from "node:fs/promises";
import path from "node:path";

const MAX_READ_BYTES = 64 * 1024;
const MAX_OUTPUT_CHARS = 16 * 1024;
const MAX_LIST_ENTRIES = 500;

export const TOOL_SCHEMAS = [
  {
    type: "function",
    function: {
      name: "read_file",
      description: "Read a UTF-8 text file from the workspace.",
      parameters: {
        type: "object",
        properties: { path: { type: "string", description: "Path relative to the workspace." } },
        required: ["path"],
      },
    },
  },
  {
    type: "function",
    function: {
      name: "write_file",
      description: "Create or overwrite a file in the workspace with the given content. Parent directories are created.",
      parameters: {
        type: "object",
        properties: {
          path: { type: "string", description: "Path relative to the workspace." },
          content: { type: "string", description: "The complete new content of the file." },
        },
        required: ["path", "content"],
      },
    },
  },
  {
    type: "function",
    function: {
      name: "list_files",
      description: "List files and directories (directories end with /).",
      parameters: {
        type: "object",
        properties: {
          path: { type: "string", description: "Directory relative to the workspace; default the workspace itself." },
          recursive: { type: "boolean", description: "List the whole tree below the directory." },
        },
      },
    },
  },
  {
    type: "function",
    function: {
      name: "run_command",
      description: "Run a shell command (bash -c) in the workspace and return its exit code and output.",
      parameters: {
        type: "object",
        properties: {
          command: { type: "string", description: "The command line." },
          timeout_seconds: { type: "number", description: "Kill the command after this many seconds (default 60, at most 600)." },
        },
        required: ["command"],
      },
    },
  },
];

class ToolError extends Error {}

function isInside(root, target) {
  const rel = path.relative(root, target);
  return rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel));
}

/** The real path of `p`, or of its nearest existing ancestor joined with the rest (for new files). */
async function realPathOf(p) {
  let current = p;
  const rest = [];
  for (;;) {
    try {
      return path.join(await fs.realpath(current), ...rest);
    } catch (e) {
      if (e.code !== "ENOENT" && e.code !== "ENOTDIR") throw e;
      const parent = path.dirname(current);
      if (parent === current) return p;
      rest.unshift(path.basename(current));
      current = parent;
    }
  }
}

async function confine(workspace, given) {
  if (typeof given !== "string" || given === "") throw new ToolError("path must be a non-empty string");
  const root = await fs.realpath(workspace);
  const target = path.resolve(root, given);
  if (!isInside(root, target) || !isInside(root, await realPathOf(target))) {
    throw new ToolError(`path ${JSON.stringify(given)} is outside the workspace`);
  }
  return target;
}

function clip(text, max) {
  if (text.length <= max) return text;
  const half = Math.floor(max / 2);
  return `${text.slice(0, half)}\n… [${text.length - max} characters omitted] …\n${text.slice(-half)}`;
}

async function readFileTool(workspace, args) {
  const target = await confine(workspace, args.path);
  const data = await fs.readFile(target);
  if (data.length > MAX_READ_BYTES) {
    return `${data.subarray(0, MAX_READ_BYTES).toString("utf8")}\n… [file is ${data.length} bytes; only the first ${MAX_READ_BYTES} are shown]`;
  }
  return data.toString("utf8");
}

async function writeFileTool(workspace, args) {
  if (typeof args.content !== "string") throw new ToolError("content must be a string");
  const target = await confine(workspace, args.path);
  await fs.mkdir(path.dirname(target), { recursive: true });
  await fs.writeFile(target, args.content);
  return `wrote ${Buffer.byteLength(args.content)} bytes to ${path.relative(await fs.realpath(workspace), target)}`;
}

async function listFilesTool(workspace, args) {
  const start = await confine(workspace, args.path ?? ".");
  const out = [];
  const walk = async (dir, prefix) => {
    const entries = (await fs.readdir(dir, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name));
    for (const e of entries) {
      if (out.length >= MAX_LIST_ENTRIES) return;
      const name = prefix + e.name + (e.isDirectory() ? "/" : "");
      out.push(name);
      if (args.recursive === true && e.isDirectory() && e.name !== ".git") await walk(path.join(dir, e.name), name);
    }
  };
  await walk(start, "");
  if (out.length >= MAX_LIST_ENTRIES) out.push(`… [stopped at ${MAX_LIST_ENTRIES} entries]`);
  return out.length === 0 ? "(empty)" : out.join("\n");
}

function runCommandTool(workspace, args) {
  if (typeof args.command !== "string" || args.command === "") throw new ToolError("command must be a non-empty string");
  const seconds = Math.min(Math.max(Number(args.timeout_seconds) || 60, 1), 600);
  return new Promise((resolve) => {
    const child = spawn("bash", ["-c", args.command], { cwd: workspace, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    let timedOut = false;
    const take = (chunk) => {
      output += chunk.toString("utf8");
      if (output.length > 4 * MAX_OUTPUT_CHARS) output = clip(output, 2 * MAX_OUTPUT_CHARS);
    };
    child.stdout.on("data", take);
    child.stderr.on("data", take);
    const timer = setTimeout(() => {
      timedOut = true;
      try { process.kill(-child.pid, "SIGKILL"); } catch { /* gone */ }
    }, seconds * 1000);
    child.on("error", (e) => { clearTimeout(timer); resolve(`error: could not start bash: ${e.message}`); });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      try { process.kill(-child.pid, "SIGKILL"); } catch { /* no leftovers */ }
      const status = timedOut ? `timed out after ${seconds} s` : signal ? `killed by ${signal}` : `exit code ${code}`;
      resolve(`${status}\n${clip(output, MAX_OUTPUT_CHARS)}`);
    });
  });
}

const TOOLS = { read_file: readFileTool, write_file: writeFileTool, list_files: listFilesTool, run_command: runCommandTool };

/** Runs one tool call; always resolves with the text to send back as the tool result. */
export async function runTool(workspace, name, rawArguments) {
  const tool = TOOLS[name];
  if (!tool) return `error: unknown tool ${JSON.stringify(name)}; the tools are ${Object.keys(TOOLS).join(", ")}`;
  let args;
  try {
    args = rawArguments === "" || rawArguments === undefined ? {} : JSON.parse(rawArguments);
  } catch (e) {
    return `error: the arguments are not valid JSON (${e.message}); call the tool again with a JSON object`;
  }
  if (args === null || typeof args !== "object" || Array.isArray(args)) return "error: the arguments must be a JSON object";
  try {
    return await tool(workspace, args);
  } catch (e) {
    if (e instanceof ToolError) return `error: ${e.message}`;
    return `error: ${e.code ? `${e.code}: ` : ""}${e.message}`;
  }
}
