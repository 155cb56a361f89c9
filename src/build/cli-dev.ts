/**
 * `flue dev [--port <n>] [--scripted | --real-model] [-- <wrangler dev args>]` (build-and-cli.md
 * §5.4): build, run `wrangler dev` on the generated config, rebuild on change, restart wrangler
 * only when the generated config's bytes changed.
 *
 * Offline by default: without a provider key in `.dev.vars` / `.env`, every model is the offline
 * model of offline-model.ts (it echoes, and calls the agent's tools on `/tool <name> {…}`), so a
 * new project answers before anyone has an API key.
 */
import path from 'node:path';
import { createBuilder } from './build.ts';
import { CONFIG_FILES } from './config.ts';
import { describeBuildError } from './build-errors.ts';
import { DEV_STATUS_VAR, startDevStatusServer } from './dev-status.ts';
import { watchSources } from './source-watch.ts';
import { GENERATED_CONFIG_FILE } from './wrangler-config.ts';
import { offlineWranglerEnv, spawnWrangler } from './wrangler-bin.ts';
import { type ModelMode, serveModel } from './model-choice.ts';
import { onTerminationSignal, superviseChild } from './child-supervisor.ts';
import type { ScriptedModelServer } from '../testing/index.ts';

export interface DevOptions {
  root: string;
  port?: string;
  wranglerArgs?: readonly string[];
  stdout?: (text: string) => void;
  stderr?: (text: string) => void;
  /** Called once wrangler reports its URL (tests). */
  onReady?: (url: string) => void;
  model?: ModelMode;
}

const WATCHED_ROOT_FILES = new Set<string>(['wrangler.jsonc', 'wrangler.json', 'wrangler.toml', ...CONFIG_FILES]);
const STOP_GRACE_MS = 5_000;

/** Resolves to the exit code: 130 on SIGINT, 143 on SIGTERM, 1 if the first build fails. */
export async function devCommand(options: DevOptions): Promise<number> {
  const root = path.resolve(options.root);
  const stdout = options.stdout ?? ((text: string) => void process.stdout.write(text));
  const stderr = options.stderr ?? ((text: string) => void process.stderr.write(text));
  const builder = createBuilder({ root, split: false, log: (line) => stderr(`${line}\n`) });

  try {
    await builder.build();
  } catch (error) {
    stderr(`${describeBuildError(error)}\n`);
    await builder.dispose();
    return 1;
  }

  // The Worker marks its responses while a rebuild is rejected, and maps its stacks to src/.
  const status = await startDevStatusServer({ root, sourceMap: path.join(root, 'dist', 'worker.js.map') });
  const passthrough = options.wranglerArgs ?? [];
  let scripted: ScriptedModelServer | undefined;
  // A caller that passes its own FLUE_SCRIPTED_MODEL_URL (this repository's `npm run dev`) scripts
  // the model itself.
  if (!passthrough.some((arg) => arg.startsWith('FLUE_SCRIPTED_MODEL_URL:'))) {
    scripted = await serveModel(root, options.model ?? 'auto', { vars: 'wrangler', command: 'dev' }, stderr);
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
    '--var',
    `${DEV_STATUS_VAR}:${status.url}`,
    ...(scripted === undefined ? [] : ['--var', `FLUE_SCRIPTED_MODEL_URL:${scripted.url}`]),
    ...passthrough,
  ];

  return await new Promise<number>((resolve) => {
    let stopping = false;
    let lastError: string | undefined;

    const wrangler = superviseChild({
      spawn: () => spawnWrangler(root, wranglerArgs, { env: offlineWranglerEnv(root), stdio: ['ignore', 'pipe', 'pipe'] }),
      output: stderr,
      readyPattern: /Ready on (https?:\/\/[^\s\u001b]+)/,
      onNewUrl: (url) => stdout(`${url}\n`),
      onReady: options.onReady,
      onExit: (code, signal) => {
        if (stopping) return;
        stderr(`[flue] wrangler dev exited (${signal ?? `code ${code}`}).\n`);
        finish(code === null || code === 0 ? 1 : code);
      },
      graceMs: STOP_GRACE_MS,
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
            await wrangler.stop('SIGTERM');
            if (!stopping) wrangler.start();
          }
          lastError = undefined;
          status.setBuildError(undefined);
        } catch (error) {
          // The same failure reported by a burst of file events is printed once.
          const text = describeBuildError(error);
          status.setBuildError(text);
          if (text !== lastError) stderr(`${text}\n[flue] Keeping the last good build.\n`);
          lastError = text;
        }
      },
    });

    const finish = (code: number) => {
      if (stopping) return;
      stopping = true;
      sources.close();
      removeSignalListeners();
      void (async () => {
        await wrangler.stop('SIGINT');
        await builder.dispose().catch(() => {});
        await scripted?.close().catch(() => {});
        await status.close();
        resolve(code);
      })();
    };
    const removeSignalListeners = onTerminationSignal(finish);

    wrangler.start();
  });
}
