/**
 * `flue run <path> --message <text>` (build-and-cli.md §5.6, node-target.md §5): one turn of one
 * agent in this Node process. The module is bundled with esbuild (packages external) and
 * imported; `@flue/runtime` resolves to the same files the CLI imports, so the agent module and
 * the bootstrap share one runtime instance. The runtime is loaded here at run time, through the
 * package's public entry points (`@flue/runtime`, `@flue/runtime/node`), never imported
 * statically: the rest of the build stays free of engine code.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseEnv } from 'node:util';
import * as esbuild from 'esbuild';
import { AGENT_IDENTITY_PATTERN } from '../shared/identity.ts';
import { skipUnknown } from '../shared/exhaustive.ts';
import { type AdapterVerbs, hasAdapterVerbs, notAnAdapterMessage } from '../shared/persistence-adapter.ts';
import { formatEsbuildError, loadConfig, resolveEntry } from './config.ts';
import { agentGuardPlugin, importChain, nodeModulesBuildOptions, outputUrlFor, processNodeConditions } from './plugins.ts';
import { FlueBuildError } from './build-errors.ts';
import { type ModelMode, serveModel } from './model-choice.ts';
import type { ScriptedModelServer } from '../testing/index.ts';

const SHUTDOWN_GRACE_MS = 5_000;

export interface RunCommandOptions {
  /** Module path, resolved from `cwd`. */
  path: string;
  message: string;
  name?: string;
  id?: string;
  /** Parsed `--data`. */
  data?: unknown;
  uid?: string;
  createOnly?: boolean;
  /** `--env <path>` */
  envFile?: string;
  /** `--scripted` / `--real-model`; default: the offline model unless a provider key is set. */
  model?: ModelMode;
  json?: boolean;
  /** Project root; default `process.cwd()`. */
  cwd?: string;
  /** Where stdout/stderr text goes; defaults to the process streams. */
  stdout?: (text: string) => void;
  stderr?: (text: string) => void;
}

interface FoundAgent {
  exportName: string;
  identity: string;
  fn: Function;
}

/** Runs the command; resolves to the process exit code (0, 1, 130, 143). */
export async function runCommand(options: RunCommandOptions): Promise<number> {
  const root = path.resolve(options.cwd ?? process.cwd());
  const realStdoutWrite = process.stdout.write;
  // User-code stdout logging goes to stderr; only the final payload uses stdout.
  const redirected = ((chunk: unknown, ...rest: unknown[]) =>
    (process.stderr.write as (...args: unknown[]) => boolean).call(process.stderr, chunk, ...rest)) as typeof process.stdout.write;
  const payload = options.stdout ?? ((text: string) => void process.stdout.write(text));
  const stdout = (text: string) => {
    process.stdout.write = realStdoutWrite;
    try {
      payload(text);
    } finally {
      process.stdout.write = redirected;
    }
  };
  const stderr = options.stderr ?? ((text: string) => void process.stderr.write(text));
  const restoreEnv = loadEnv(root, options.envFile);
  process.stdout.write = redirected;

  let signalCode: number | undefined;
  let handle: { abort(): Promise<unknown> } | undefined;
  let forceTimer: NodeJS.Timeout | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    const code = signal === 'SIGINT' ? 130 : 143;
    if (signalCode !== undefined || handle === undefined) {
      // A second signal, or one before the run exists: stop now.
      restoreEnv();
      process.exit(signalCode ?? code);
    }
    signalCode = code;
    stderr(`\n[flue] ${signal}: aborting the run…\n`);
    handle.abort().catch(() => {});
    forceTimer = setTimeout(() => process.exit(code), SHUTDOWN_GRACE_MS);
    forceTimer.unref();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  let stopRuntime: (() => Promise<void>) | undefined;
  let scripted: ScriptedModelServer | undefined;
  const emitError = (message: string, error?: unknown) => {
    if (options.json === true) stdout(`${JSON.stringify({ outcome: 'error', error: errorFields(message, error) })}\n`);
    else stderr(`${message}\n`);
  };

  try {
    let agent: FoundAgent;
    let db: AdapterVerbs;
    try {
      if (options.envFile !== undefined && !existsSync(path.resolve(root, options.envFile))) {
        throw new FlueBuildError('RunSetupError', `--env file not found: ${options.envFile}`);
      }
      const loaded = await loadRunModules(root, options.path);
      agent = pickAgent(loaded.namespace, options.path, options.name);
      db = await resolveDb(root, loaded.dbNamespace, loaded.dbFile);
    } catch (error) {
      emitError(messageOf(error), error);
      return 1;
    }

    const { start } = await import('@flue/runtime/node');
    const { init } = await import('@flue/runtime');
    let run: ReturnType<typeof init>;
    let receipt: Awaited<ReturnType<typeof run.dispatch>>;
    try {
      const host = { vars: 'node', command: 'run', ...(options.envFile === undefined ? {} : { envFile: options.envFile }) } as const;
      scripted = await serveModel(root, options.model ?? 'auto', host, stderr);
      const flue = await start({
        agents: [{ agent: agent.fn as never, name: agent.identity }],
        db: db as never,
        // The user's code still sees process.env as loaded; only the runtime is pointed offline.
        ...(scripted === undefined ? {} : { env: { ...process.env, FLUE_SCRIPTED_MODEL_URL: scripted.url } }),
      });
      stopRuntime = () => flue.stop();
      run = init(agent.fn as never, {
        ...(options.id === undefined ? {} : { id: options.id }),
        ...(options.uid !== undefined ? { uid: options.uid } : options.createOnly === true ? { uid: null } : {}),
      });
      handle = run;
      if (options.id === undefined) stderr(`[flue] New conversation ${run.id} (continue it with --id ${run.id})\n`);
      receipt = await run.dispatch(options.data === undefined ? options.message : { message: options.message, initialData: options.data });
    } catch (error) {
      emitError(messageOf(error), error);
      return signalCode ?? 1;
    }

    const printer = new StreamPrinter(stderr);
    const base = { id: run.id, agent: agent.identity, submissionId: receipt.submissionId };
    let reply: Awaited<ReturnType<typeof run.read>>;
    try {
      reply = await run.read(receipt, { onEvent: (chunk) => printer.print(chunk as PrintedChunk) });
    } catch (error) {
      printer.end();
      const outcome = (error as { outcome?: unknown }).outcome;
      if (outcome === 'failed' || outcome === 'aborted') {
        const cause = (error as { cause?: unknown }).cause;
        const message =
          typeof (cause as { message?: unknown })?.message === 'string' ? (cause as { message: string }).message : messageOf(error);
        if (options.json === true) {
          stdout(`${JSON.stringify({ ...base, outcome, uid: receipt.uid, error: errorFields(message, cause) })}\n`);
        } else stderr(outcome === 'aborted' ? '[flue] The run was aborted.\n' : `[flue] The run failed: ${message}\n`);
        return signalCode ?? (outcome === 'aborted' ? 130 : 1);
      }
      emitError(messageOf(error), error);
      return signalCode ?? 1;
    }
    printer.end();
    if (options.json === true) {
      stdout(`${JSON.stringify({ ...base, outcome: 'completed', message: reply.text, uid: reply.uid ?? receipt.uid })}\n`);
    } else if (reply.text !== '') stdout(reply.text.endsWith('\n') ? reply.text : `${reply.text}\n`);
    return signalCode ?? 0;
  } finally {
    if (stopRuntime !== undefined) {
      const timeout = new Promise<void>((resolve) => setTimeout(resolve, SHUTDOWN_GRACE_MS).unref());
      await Promise.race([stopRuntime().catch(() => {}), timeout]);
    }
    await scripted?.close().catch(() => {});
    if (forceTimer !== undefined) clearTimeout(forceTimer);
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    process.stdout.write = realStdoutWrite;
    restoreEnv();
  }
}

/** One `[flue] …` line: a setup error as written; a runtime error's message under the same prefix. */
function messageOf(error: unknown): string {
  if (error instanceof FlueBuildError) return error.message;
  const message = error instanceof Error ? error.message : String(error);
  return `[flue] ${message.replace(/^\[flue\] /, '')}`;
}

/** `{ message }` plus `type/details/dev` when the error is a Flue error (has a string `type`). */
function errorFields(message: string, error: unknown): Record<string, string> {
  const fields: Record<string, string> = { message };
  const e = error as { type?: unknown; details?: unknown; dev?: unknown } | undefined;
  if (e !== undefined && e !== null && typeof e.type === 'string') {
    fields['type'] = e.type;
    if (typeof e.details === 'string' && e.details !== '') fields['details'] = e.details;
    if (typeof e.dev === 'string' && e.dev !== '') fields['dev'] = e.dev;
  }
  return fields;
}

// ── .env (shell wins, restored on exit) ─────────────────────────────────────────────────────────

export function loadEnv(root: string, envFile: string | undefined): () => void {
  const file = path.resolve(root, envFile ?? '.env');
  if (!existsSync(file)) return () => {};
  const parsed = parseEnv(readFileSync(file, 'utf8')) as Record<string, string>;
  const added: string[] = [];
  for (const [key, value] of Object.entries(parsed)) {
    if (process.env[key] !== undefined) continue;
    process.env[key] = value;
    added.push(key);
  }
  let restored = false;
  return () => {
    if (restored) return;
    restored = true;
    for (const key of added) delete process.env[key];
  };
}

// ── Loading the module ──────────────────────────────────────────────────────────────────────────

interface LoadedModules {
  namespace: Record<string, unknown>;
  dbNamespace: Record<string, unknown> | undefined;
  dbFile: string | undefined;
}

export async function loadRunModules(root: string, modulePath: string): Promise<LoadedModules> {
  const file = path.resolve(root, modulePath);
  if (!existsSync(file)) throw new FlueBuildError('RunSetupError', `Module not found: ${modulePath}`);
  const config = await loadConfig(root);
  const dbFile = resolveEntry(root, 'db', config);
  const entryPoints = dbFile === undefined || dbFile === file ? [file] : [file, dbFile];
  const outdir = path.join(root, 'node_modules', '.cache', 'flue', 'run');

  let result: esbuild.BuildResult<{ metafile: true }>;
  try {
    const options = nodeModulesBuildOptions({ root, entryPoints, outdir, conditions: processNodeConditions(), runtimeExternal: true });
    result = await esbuild.build({
      ...options,
      entryNames: '[name]-[hash]',
      chunkNames: 'chunks/[name]-[hash]',
      plugins: [...options.plugins, agentGuardPlugin()],
    });
  } catch (error) {
    throw new FlueBuildError('RunSetupError', `Could not bundle ${modulePath}:\n${formatEsbuildError(error)}`);
  }

  for (const entry of entryPoints) {
    const rel = path.relative(root, entry).split(path.sep).join('/');
    const chain = importChain(result.metafile, [rel], (_, imported) => imported.startsWith('cloudflare:'));
    if (chain !== undefined) {
      throw new FlueBuildError(
        'RunSetupError',
        `${rel} imports "${chain.at(-1)}", which exists only on Cloudflare Workers. Import chain:\n` +
          chain.map((step, i) => `${i === 0 ? '  ' : '  → '}${step}`).join('\n') +
          '\nRun it on the Workers runtime with `flue dev`, or use `import type` if you only need its types.',
      );
    }
  }

  const outputFor = (entry: string) => {
    const url = outputUrlFor(root, result.metafile, entry);
    if (url === undefined) throw new FlueBuildError('RunSetupError', `esbuild produced no output for ${path.relative(root, entry)}.`);
    return url;
  };
  const namespace = (await import(outputFor(file))) as Record<string, unknown>;
  const dbNamespace =
    dbFile === undefined ? undefined : dbFile === file ? namespace : ((await import(outputFor(dbFile))) as Record<string, unknown>);
  return { namespace, dbNamespace, dbFile };
}

function isClass(fn: Function): boolean {
  return /^class[\s{]/.test(Function.prototype.toString.call(fn));
}

/** The export-shape rule (build-and-cli.md §1.2) applied to a loaded module's namespace. */
export function findAgents(namespace: Record<string, unknown>): FoundAgent[] {
  const found: FoundAgent[] = [];
  const seen = new Set<Function>();
  const entries = Object.entries(namespace).sort(([a], [b]) => (a === 'default' ? 1 : b === 'default' ? -1 : 0));
  for (const [exportName, value] of entries) {
    if (typeof value !== 'function' || isClass(value) || seen.has(value)) continue;
    const fnName = exportName === 'default' ? value.name : exportName;
    if (!/^[A-Z]/.test(fnName)) continue;
    const agentName = (value as { agentName?: unknown }).agentName;
    seen.add(value);
    found.push({ exportName, identity: typeof agentName === 'string' ? agentName : fnName, fn: value });
  }
  return found;
}

export function pickAgent(namespace: Record<string, unknown>, modulePath: string, name: string | undefined): FoundAgent {
  const agents = findAgents(namespace);
  if (agents.length === 0) {
    throw new FlueBuildError(
      'RunSetupError',
      `${modulePath} defines no agent. An agent is an exported function whose name starts with an uppercase letter.`,
    );
  }
  const names = agents.map((a) => a.identity);
  let selected: FoundAgent | undefined;
  if (name !== undefined) {
    selected = agents.find((a) => a.identity === name);
    if (selected === undefined)
      throw new FlueBuildError('RunSetupError', `--name "${name}" does not match an agent of ${modulePath}. Agents: ${names.join(', ')}.`);
  } else if (agents.length > 1) {
    throw new FlueBuildError(
      'RunSetupError',
      `${modulePath} defines ${agents.length} agents (${names.join(', ')}). Pick one with --name <agent>.`,
    );
  } else selected = agents[0]!;
  if (!AGENT_IDENTITY_PATTERN.test(selected.identity)) {
    throw new FlueBuildError(
      'RunSetupError',
      `Agent identity "${selected.identity}" (export ${selected.exportName} of ${modulePath}) must match ${AGENT_IDENTITY_PATTERN}.`,
    );
  }
  return selected;
}

async function resolveDb(
  root: string,
  dbNamespace: Record<string, unknown> | undefined,
  dbFile: string | undefined,
): Promise<AdapterVerbs> {
  if (dbNamespace !== undefined) {
    const adapter = dbNamespace['default'];
    if (!hasAdapterVerbs(adapter)) throw new FlueBuildError('RunSetupError', notAnAdapterMessage(path.relative(root, dbFile!)));
    return adapter;
  }
  const { sqlite } = await import('@flue/runtime/node');
  return sqlite(path.join(root, 'node_modules', '.cache', 'flue', 'run.db'));
}

// ── Streaming to stderr ─────────────────────────────────────────────────────────────────────────

/**
 * The stream chunks (streaming-protocol.md), as far as the printer reads them. The build may not
 * import the engine's `ConversationStreamChunk`, so its types are listed here; a type test keeps
 * the two lists equal.
 */
export type PrintedChunk =
  | { type: 'message-delta'; kind: string; delta: string }
  | { type: 'tool-input'; toolCallId: string; toolName: string; input: unknown }
  | { type: 'tool-output'; toolCallId: string; durationMs?: number }
  | { type: 'tool-output-error'; toolCallId: string; errorText: string }
  | { type: 'message-completed' }
  | {
      type:
        | 'conversation-reset'
        | 'message-appended'
        | 'message-started'
        | 'message-metadata'
        | 'data-part'
        | 'submission-settled'
        | 'stream-checkpoint';
    };

class StreamPrinter {
  private atLineStart = true;
  private readonly toolNames = new Map<string, string>();
  private readonly write: (text: string) => void;

  constructor(write: (text: string) => void) {
    this.write = write;
  }

  private out(text: string): void {
    if (text === '') return;
    this.write(text);
    this.atLineStart = text.endsWith('\n');
  }

  private line(text: string): void {
    if (!this.atLineStart) this.out('\n');
    this.out(`${text}\n`);
  }

  print(chunk: PrintedChunk): void {
    switch (chunk.type) {
      case 'message-delta':
        if (chunk.kind === 'text') this.out(chunk.delta);
        break;
      case 'tool-input':
        this.toolNames.set(chunk.toolCallId, chunk.toolName);
        this.line(`  → ${chunk.toolName} ${truncate(JSON.stringify(chunk.input) ?? '')}`);
        break;
      case 'tool-output': {
        const duration = chunk.durationMs === undefined ? '' : ` (${chunk.durationMs} ms)`;
        this.line(`  ← ${this.toolNames.get(chunk.toolCallId) ?? 'tool'} ok${duration}`);
        break;
      }
      case 'tool-output-error':
        this.line(`  ← ${this.toolNames.get(chunk.toolCallId) ?? 'tool'} failed: ${truncate(chunk.errorText)}`);
        break;
      case 'message-completed':
        if (!this.atLineStart) this.out('\n');
        break;
      // The printer shows the reply as it streams; history, metadata and settlement are not shown.
      case 'conversation-reset':
      case 'message-appended':
      case 'message-started':
      case 'message-metadata':
      case 'data-part':
      case 'submission-settled':
      case 'stream-checkpoint':
        break;
      default:
        skipUnknown(chunk);
    }
  }

  end(): void {
    if (!this.atLineStart) this.out('\n');
  }
}

function truncate(text: string, max = 200): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
