/**
 * `flue dev [--port <n>] [--scripted | --real-model] [-- <wrangler dev args>]` (build-and-cli.md
 * §5.4): build, run `wrangler dev` on the generated config, rebuild on change, restart wrangler
 * only when the generated config's bytes changed.
 *
 * Offline by default: without a provider key in `.dev.vars` / `.env`, every model is served by a
 * scripted local model (the server of `@flue/runtime/testing`, reached through
 * FLUE_SCRIPTED_MODEL_URL), so a new project answers before anyone has an API key.
 */
import type { ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { parseEnv } from 'node:util';
import { createBuilder } from './build.ts';
import { CONFIG_FILES } from './config.ts';
import { describeBuildError } from './build-errors.ts';
import { watchSources } from './source-watch.ts';
import { GENERATED_CONFIG_FILE } from './wrangler-config.ts';
import { offlineWranglerEnv, spawnWrangler } from './wrangler-bin.ts';
import type { RecordedRequest, ScriptedModelServer, ScriptedResponse } from '../testing/index.ts';

/** `auto`: scripted unless a provider key is configured; the flags force either way. */
export type DevModelMode = 'auto' | 'scripted' | 'real';

export interface DevOptions {
  root: string;
  port?: string;
  wranglerArgs?: readonly string[];
  stdout?: (text: string) => void;
  stderr?: (text: string) => void;
  /** Called once wrangler reports its URL (tests). */
  onReady?: (url: string) => void;
  model?: DevModelMode;
}

const WATCHED_ROOT_FILES = new Set<string>(['wrangler.jsonc', 'wrangler.json', 'wrangler.toml', ...CONFIG_FILES]);
const STOP_GRACE_MS = 5_000;

/** Resolves to the exit code: 130 on SIGINT, 143 on SIGTERM, 1 if the first build fails. */
export async function devCommand(options: DevOptions): Promise<number> {
  const root = path.resolve(options.root);
  const stdout = options.stdout ?? ((text: string) => void process.stdout.write(text));
  const stderr = options.stderr ?? ((text: string) => void process.stderr.write(text));
  const builder = createBuilder({ root, log: (line) => stderr(`${line}\n`) });

  try {
    await builder.build();
  } catch (error) {
    stderr(`${describeBuildError(error)}\n`);
    await builder.dispose();
    return 1;
  }

  const passthrough = options.wranglerArgs ?? [];
  let scripted: ScriptedModelServer | undefined;
  // A caller that passes its own FLUE_SCRIPTED_MODEL_URL (this repository's `npm run dev`) scripts
  // the model itself.
  if (!passthrough.some((arg) => arg.startsWith('FLUE_SCRIPTED_MODEL_URL:'))) {
    const choice = chooseModel(root, options.model ?? 'auto');
    if (choice.scripted) {
      const { startScriptedModelServer } = await import('../testing/index.ts');
      scripted = await startScriptedModelServer({ fallback: offlineModel });
    }
    stderr(`${choice.notice}\n`);
  }
  const wranglerArgs = [
    'dev',
    '--config',
    GENERATED_CONFIG_FILE,
    '--ip',
    '127.0.0.1',
    ...(options.port === undefined ? [] : ['--port', options.port]),
    // Dev mode: settlement errors of the user's own code carry their message and stack, and
    // error envelopes their `dev` prose (a deployed Worker has no FLUE_DEV and stays redacted).
    '--var',
    'FLUE_DEV:1',
    ...(scripted === undefined ? [] : ['--var', `FLUE_SCRIPTED_MODEL_URL:${scripted.url}`]),
    ...passthrough,
  ];

  return await new Promise<number>((resolve) => {
    let child: ChildProcess | undefined;
    let stopping = false;
    let restarting = false;
    let lastUrl: string | undefined;
    let lastError: string | undefined;

    const start = () => {
      const proc = spawnWrangler(root, wranglerArgs, { env: offlineWranglerEnv(root), stdio: ['ignore', 'pipe', 'pipe'] });
      child = proc;
      let buffered = '';
      proc.stdout?.on('data', (data: Buffer) => {
        const text = data.toString('utf8');
        stderr(text);
        buffered = (buffered + text).slice(-4096);
        const match = /Ready on (https?:\/\/[^\s\u001b]+)/.exec(buffered.replace(/\u001b\[[0-9;]*m/g, ''));
        if (match !== null) {
          buffered = '';
          if (match[1] !== lastUrl) {
            lastUrl = match[1]!;
            stdout(`${lastUrl}\n`);
          }
          options.onReady?.(match[1]!);
        }
      });
      proc.stderr?.on('data', (data: Buffer) => stderr(data.toString('utf8')));
      proc.on('exit', (code, signal) => {
        if (child === proc) child = undefined;
        if (stopping || restarting) return;
        stderr(`[flue] wrangler dev exited (${signal ?? `code ${code}`}).\n`);
        finish(code === null || code === 0 ? 1 : code);
      });
    };

    const stopChild = (signal: NodeJS.Signals) =>
      new Promise<void>((done) => {
        const proc = child;
        if (proc === undefined || proc.exitCode !== null || proc.signalCode !== null) return done();
        const kill = setTimeout(() => proc.kill('SIGKILL'), STOP_GRACE_MS);
        proc.once('exit', () => {
          clearTimeout(kill);
          done();
        });
        proc.kill(signal);
      });

    const sources = watchSources({
      root,
      rootFiles: WATCHED_ROOT_FILES,
      stderr,
      rebuild: async () => {
        try {
          const result = await builder.build();
          if (result.wranglerConfigChanged && !stopping) {
            stderr(`[flue] ${GENERATED_CONFIG_FILE} changed; restarting wrangler dev\n`);
            restarting = true;
            await stopChild('SIGTERM');
            restarting = false;
            if (!stopping) start();
          }
          lastError = undefined;
        } catch (error) {
          // The same failure reported by a burst of file events is printed once.
          const text = describeBuildError(error);
          if (text !== lastError) stderr(`${text}\n[flue] Keeping the last good build.\n`);
          lastError = text;
        }
      },
    });

    const finish = (code: number) => {
      if (stopping) return;
      stopping = true;
      sources.close();
      process.off('SIGINT', onSigint);
      process.off('SIGTERM', onSigterm);
      void (async () => {
        await stopChild('SIGINT');
        await builder.dispose().catch(() => {});
        await scripted?.close().catch(() => {});
        resolve(code);
      })();
    };
    const onSigint = () => finish(130);
    const onSigterm = () => finish(143);
    process.on('SIGINT', onSigint);
    process.on('SIGTERM', onSigterm);

    start();
  });
}

/** Variables that hold a model provider's credentials (pi-ai's names: ANTHROPIC_API_KEY, …). */
const PROVIDER_KEY = /^[A-Z][A-Z0-9_]*_(?:API_KEY|OAUTH_TOKEN)$/;

interface ModelChoice {
  scripted: boolean;
  /** The one line `flue dev` prints about the model. */
  notice: string;
}

/**
 * Scripted or real: a non-empty provider key among the variables wrangler hands the Worker
 * (`.dev.vars`, else `.env`; the process environment only with CLOUDFLARE_INCLUDE_PROCESS_ENV)
 * means real, unless a flag decides.
 */
export function chooseModel(root: string, mode: DevModelMode, env: NodeJS.ProcessEnv = process.env): ModelChoice {
  const keys = providerKeys(root, env);
  const wanted = providerKeyNames(root);
  const hint = `${wanted.map((name) => `${name}=…`).join(' or ')} in .dev.vars`;
  if (mode === 'real') {
    return { scripted: false, notice: keys.length > 0 ? `[flue] Model: real (${keys.join(', ')}).` : `[flue] Model: real (--real-model), but no provider key is set: put ${hint}.` };
  }
  if (mode === 'auto' && keys.length > 0) return { scripted: false, notice: `[flue] Model: real (${keys.join(', ')}); \`flue dev --scripted\` serves the offline scripted model.` };
  return {
    scripted: true,
    notice: `[flue] Model: scripted, offline (it echoes your message). For a real model put ${hint}${mode === 'scripted' ? ' and drop --scripted' : ''}, or pass --real-model.`,
  };
}

function providerKeys(root: string, env: NodeJS.ProcessEnv): string[] {
  const sources: Record<string, string | undefined>[] = [];
  for (const file of ['.dev.vars', '.env']) {
    const full = path.join(root, file);
    if (!existsSync(full)) continue;
    sources.push(parseEnv(readFileSync(full, 'utf8')));
    break; // wrangler reads .env only when there is no .dev.vars
  }
  if (env['CLOUDFLARE_INCLUDE_PROCESS_ENV'] === 'true') sources.push(env);
  const found = new Set<string>();
  for (const vars of sources) {
    for (const [name, value] of Object.entries(vars)) if (PROVIDER_KEY.test(name) && (value ?? '').trim() !== '') found.add(name);
  }
  return [...found].sort();
}

/** The key variables of the providers the agents name in `useModel('<provider>/…')` (default anthropic). */
function providerKeyNames(root: string): string[] {
  const providers = new Set<string>();
  const visit = (dir: string) => {
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) visit(file);
      else if (/\.[cm]?[jt]sx?$/.test(entry.name)) {
        for (const match of readFileSync(file, 'utf8').matchAll(/useModel\(\s*['"`]([a-z0-9-]+)\//g)) providers.add(match[1]!);
      }
    }
  };
  visit(path.join(root, 'src'));
  if (providers.size === 0) providers.add('anthropic');
  return [...providers].sort().map((id) => `${id.toUpperCase().replace(/-/g, '_')}_API_KEY`);
}

/** The offline model: echoes the user, reports what a tool returned. */
function offlineModel(request: RecordedRequest): ScriptedResponse {
  const last = request.messages.at(-1);
  if (last?.role === 'tool') return { text: `(scripted model) The tool returned: ${last.content}` };
  return { text: `(scripted model) You said: ${last?.content ?? ''}` };
}

