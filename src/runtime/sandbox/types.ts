/**
 * The sandbox contract: the verbs every environment implements, the factory an
 * agent mounts with `useSandbox`, the driver shape adapters implement for `sandboxFromDriver`, and
 * the model-tool shapes (`AgentTool`) the built-in file/shell tools are expressed in. Types only.
 */

export interface ShellResult {
  stdout: string;
  stderr: string;
  exitCode: number;
}

/** Unknown facts are omitted, never fabricated (no `size: 0`, no `mtime: new Date()`). */
export interface FileStat {
  isFile: boolean;
  isDirectory: boolean;
  isSymbolicLink?: boolean;
  size?: number;
  mtime?: Date;
}

export interface ExecOptions {
  /** Relative values resolve against the sandbox `cwd`. */
  cwd?: string;
  /** Layered over the adapter's base environment. */
  env?: Record<string, string>;
  /** Primary deadline; expiry resolves `exitCode: 124` (never rejects). */
  timeoutMs?: number;
  /** Abort rejects promptly with an `AbortError` DOMException whose `cause` is the reason. */
  signal?: AbortSignal;
}

export interface RmOptions {
  recursive?: boolean;
  force?: boolean;
}

export interface MkdirOptions {
  recursive?: boolean;
}

export interface Sandbox {
  exec(command: string, options?: ExecOptions): Promise<ShellResult>;
  /** UTF-8; throws if missing or not a file. */
  readFile(path: string): Promise<string>;
  readFileBuffer(path: string): Promise<Uint8Array>;
  /** Creates or replaces, creating missing parent directories. */
  writeFile(path: string, content: string | Uint8Array): Promise<void>;
  stat(path: string): Promise<FileStat>;
  /** Entry names only. */
  readdir(path: string): Promise<string[]>;
  /** Never throws. */
  exists(path: string): Promise<boolean>;
  mkdir(path: string, options?: MkdirOptions): Promise<void>;
  /** `recursive`/`force` exactly like Node `fs.rm`. */
  rm(path: string, options?: RmOptions): Promise<void>;
  /** Absolute POSIX path. */
  readonly cwd: string;
  /** Lexical, no I/O; two spellings of one file resolve to the same string. */
  resolvePath(p: string): string;
}

/**
 * What adapters implement: the `Sandbox` verbs without `cwd`/`resolvePath`; paths arrive absolute,
 * and `exec` always gets the directory to run in.
 */
export interface SandboxDriver extends Omit<Sandbox, 'exec' | 'cwd' | 'resolvePath'> {
  exec(command: string, options: Omit<ExecOptions, 'cwd'> & { cwd: string }): Promise<ShellResult>;
}

/** Reported when an aborted exec's underlying command finally settles; its output is discarded. */
export interface OrphanedExecSettlement {
  command: string;
  startedAt: Date;
  abortedAt: Date;
  settledAt: Date;
  result?: ShellResult;
  error?: unknown;
}

export interface SandboxFromDriverOptions {
  onOrphanSettled?: (settlement: OrphanedExecSettlement) => void;
}

/**
 * Placeholder for the subagent definition type owned by the subagents module; tool factories only
 * pass it through, so the sandbox layer does not depend on its shape.
 */
export type SandboxSubagentDefinition = unknown;

export interface SandboxToolFactoryOptions {
  subagents: Record<string, SandboxSubagentDefinition>;
}

/** Synchronous; returns a fresh array each call; replaces the six default tools when present. */
export type SandboxToolFactory = (sandbox: Sandbox, options: SandboxToolFactoryOptions) => AgentTool[];

export interface SandboxFactory {
  /** Runs once per initialized harness; `id` is the agent instance id. */
  createSandbox(options: { id: string }): Promise<Sandbox>;
  tools?: SandboxToolFactory;
}

export type JsonSchemaObject = {
  type: 'object';
  properties: Record<string, unknown>;
  required?: string[];
  additionalProperties?: boolean;
  [key: string]: unknown;
};

export type AgentToolContent = { type: 'text'; text: string } | { type: 'image'; data: string; mimeType: string };

export interface AgentToolResult<D = unknown> {
  content: AgentToolContent[];
  details?: D;
  terminate?: boolean;
}

export interface AgentTool<P = Record<string, unknown>, D = unknown> {
  name: string;
  label: string;
  description: string;
  parameters: JsonSchemaObject;
  /** Throws on failure; the engine turns the throw into an error tool result. */
  execute(
    toolCallId: string,
    params: P,
    signal?: AbortSignal,
    onUpdate?: (partial: AgentToolResult<D>) => void,
  ): Promise<AgentToolResult<D>>;
}

/** The structural shape `bash()` accepts (just-bash's `Bash` satisfies it; we never import it). */
export interface BashLikeFs {
  readFile(p: string, o?: any): Promise<string>;
  readFileBuffer(p: string): Promise<Uint8Array>;
  writeFile(p: string, c: string | Uint8Array, o?: any): Promise<void>;
  stat(p: string): Promise<any>;
  readdir(p: string): Promise<string[]>;
  exists(p: string): Promise<boolean>;
  mkdir(p: string, o?: MkdirOptions): Promise<void>;
  rm(p: string, o?: RmOptions): Promise<void>;
  resolvePath(base: string, p: string): string;
}

export interface BashLike {
  exec(command: string, options?: { cwd?: string; env?: Record<string, string>; signal?: AbortSignal }): Promise<ShellResult>;
  getCwd(): string;
  fs: BashLikeFs;
}
