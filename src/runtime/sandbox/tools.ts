/**
 * The six built-in model tools over a `Sandbox` (tools.md §10, sandbox.md §3.4/§4), as the model is
 * shown them. What a call does is tool-runs.ts, loaded by the first call of any of them
 * (common/lazy-part.ts), so an agent whose model never calls one does not compile it. A tool's
 * `execute` throws on failure; the engine turns the throw into an error tool result.
 */
import { lazyPart } from '../common/lazy-part.ts';
import type { AgentTool, Sandbox } from './types.ts';

export const MAX_LINES = 2000;
export const MAX_CHARS = 51_200;
export const GREP_MAX_MATCHES = 100;
export const GREP_MAX_LINE_CHARS = 500;
export const GLOB_MAX_PATHS = 1000;

/** Single-quotes a value for POSIX shells (`'` → `'\''`). */
export function shellQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

const runsPart = lazyPart('sandbox tools', () => import('./tool-runs.ts'));
let runs: Awaited<ReturnType<typeof runsPart>>['runs'] | undefined;

type ToolName = 'read' | 'write' | 'edit' | 'bash' | 'grep' | 'glob';

/** A built-in tool as the model is shown it; its calls run the tool's function in tool-runs.ts. */
function sandboxTool(sandbox: Sandbox, shown: Omit<AgentTool, 'execute'> & { name: ToolName }): AgentTool {
  return {
    ...shown,
    async execute(_id, params, signal) {
      // Loaded, a call starts within `execute()` (a shell command is running when it returns).
      runs ??= (await runsPart()).runs;
      return runs[shown.name](sandbox, params, signal);
    },
  };
}

// ── read ──────────────────────────────────────────────────────────────────────────────────────

export function createReadTool(sandbox: Sandbox): AgentTool {
  return sandboxTool(sandbox, {
    name: 'read',
    label: 'Read',
    description:
      `Read a text file. Output is limited to ${MAX_LINES} lines or ${MAX_CHARS / 1024} KB, whichever comes first; ` +
      'use offset (1-based line number) and limit (number of lines) to page through larger files.',
    parameters: {
      type: 'object',
      properties: {
        path: { type: 'string', description: 'Path of the file to read (relative to the working directory or absolute)' },
        offset: { type: 'integer', minimum: 1, description: 'Line number to start from (1-based)' },
        limit: { type: 'integer', minimum: 1, description: 'Maximum number of lines to read' },
      },
      required: ['path'],
    },
  });
}

/** Head truncation that never cuts mid-line, except a first line that alone exceeds the budget. */
export function formatRead(content: string, offset: number | undefined, limit: number | undefined): string {
  const all = content.split('\n');
  if (content.endsWith('\n')) all.pop();
  const total = all.length;
  const start = (offset ?? 1) - 1;
  if (offset !== undefined && start >= total && !(total === 0 && start === 0)) {
    throw new Error(`Offset ${offset} is beyond end of file (${total} lines total)`);
  }
  const end = limit === undefined ? total : Math.min(total, start + limit);
  const selected = all.slice(start, end);

  const first = selected[0];
  if (first !== undefined && first.length > MAX_CHARS) {
    return (
      `${first.slice(0, MAX_CHARS)}\n\n[Line ${start + 1} is ${first.length} characters long; only its first ${MAX_CHARS} are shown. ` +
      'The rest of this line cannot be reached with offset/limit; use the bash tool (e.g. cut -c or head -c) to read it.]'
    );
  }
  const kept: string[] = [];
  let chars = 0;
  for (const line of selected) {
    const cost = line.length + (kept.length > 0 ? 1 : 0);
    if (kept.length >= MAX_LINES || chars + cost > MAX_CHARS) break;
    kept.push(line);
    chars += cost;
  }
  const shownEnd = start + kept.length;
  let output = kept.join('\n');
  if (shownEnd < total && (kept.length < selected.length || limit !== undefined)) {
    output += `\n\n[Showing lines ${start + 1}-${shownEnd} of ${total}. Use offset=${shownEnd + 1} to continue.]`;
  }
  return output;
}

// ── write ─────────────────────────────────────────────────────────────────────────────────────

export function createWriteTool(sandbox: Sandbox): AgentTool {
  return sandboxTool(sandbox, {
    name: 'write',
    label: 'Write',
    description: 'Write content to a file. Creates the file and any missing parent directories; overwrites an existing file.',
    parameters: {
      type: 'object',
      properties: {
        path: { type: 'string', description: 'Path of the file to write (relative to the working directory or absolute)' },
        content: { type: 'string', description: 'The complete new content of the file' },
      },
      required: ['path', 'content'],
    },
  });
}

// ── edit ──────────────────────────────────────────────────────────────────────────────────────

export function createEditTool(sandbox: Sandbox): AgentTool {
  return sandboxTool(sandbox, {
    name: 'edit',
    label: 'Edit',
    description:
      'Edit a file by replacing exact text. oldText must match the file exactly (including whitespace and indentation) ' +
      'and must be unique unless replaceAll is true. newText is inserted literally.',
    parameters: {
      type: 'object',
      properties: {
        path: { type: 'string', description: 'Path of the file to edit (relative to the working directory or absolute)' },
        oldText: { type: 'string', description: 'Exact text to find and replace' },
        newText: { type: 'string', description: 'Text to replace it with' },
        replaceAll: { type: 'boolean', description: 'Replace every occurrence instead of requiring a unique match' },
      },
      required: ['path', 'oldText', 'newText'],
    },
  });
}

// ── bash ──────────────────────────────────────────────────────────────────────────────────────

export function createBashTool(sandbox: Sandbox): AgentTool {
  return sandboxTool(sandbox, {
    name: 'bash',
    label: 'Bash',
    description:
      `Run a shell command in the working directory. Returns stdout and stderr combined; output is truncated to the last ` +
      `${MAX_LINES} lines or ${MAX_CHARS / 1024} KB. Optionally set timeout in seconds.`,
    parameters: {
      type: 'object',
      properties: {
        command: { type: 'string', description: 'The shell command to run' },
        timeout: { type: 'number', description: 'Timeout in seconds (optional)' },
      },
      required: ['command'],
    },
  });
}

// ── grep ──────────────────────────────────────────────────────────────────────────────────────

export function createGrepTool(sandbox: Sandbox): AgentTool {
  return sandboxTool(sandbox, {
    name: 'grep',
    label: 'Grep',
    description:
      `Search file contents for a regular expression (or a literal string with literal: true). Returns matching lines as ` +
      `path:line:text, at most ${GREP_MAX_MATCHES} lines. Optionally restrict to files matching an include glob like "*.ts".`,
    parameters: {
      type: 'object',
      properties: {
        pattern: { type: 'string', description: 'Regular expression to search for' },
        path: { type: 'string', description: 'Directory or file to search (default: the working directory)' },
        include: { type: 'string', description: 'Only search files whose name matches this glob, e.g. "*.ts"' },
        literal: { type: 'boolean', description: 'Treat pattern as a literal string instead of a regular expression' },
      },
      required: ['pattern'],
    },
  });
}

// ── glob ──────────────────────────────────────────────────────────────────────────────────────

export function createGlobTool(sandbox: Sandbox): AgentTool {
  return sandboxTool(sandbox, {
    name: 'glob',
    label: 'Glob',
    description:
      `Find files whose name matches a glob pattern (e.g. "*.ts"), searching recursively under path ` +
      `(default: the working directory). Returns up to ${GLOB_MAX_PATHS} paths.`,
    parameters: {
      type: 'object',
      properties: {
        pattern: { type: 'string', description: 'File name glob, e.g. "*.md" (matched against the file name)' },
        path: { type: 'string', description: 'Directory to search (default: the working directory)' },
      },
      required: ['pattern'],
    },
  });
}

// ── the default set ───────────────────────────────────────────────────────────────────────────

export function defaultSandboxTools(sandbox: Sandbox): AgentTool[] {
  return [
    createReadTool(sandbox),
    createWriteTool(sandbox),
    createEditTool(sandbox),
    createBashTool(sandbox),
    createGrepTool(sandbox),
    createGlobTool(sandbox),
  ];
}
