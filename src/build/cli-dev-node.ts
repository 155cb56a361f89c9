/**
 * `flue dev --target node`: build the Node server, run `dist/server.mjs`, and on every change
 * under `src/` (or of `flue.config.*`) rebuild and restart it. A restart is a real stop: the old
 * server drains on SIGTERM and the new one recovers unsettled work from the same database.
 *
 * Dev defaults (node-target.md §6): the project's `.env` (shell wins), dev mode on (`FLUE_DEV=1`)
 * and `node_modules/.cache/flue/dev.db` as the store, so history survives restarts. Without a
 * provider key the models are the offline model, as under `flue dev` on Cloudflare; its server
 * lives in this process, so it outlasts the restarts.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseEnv } from 'node:util';
import { CONFIG_FILES } from './config.ts';
import { SERVER_FILE, buildNodeServer } from './node-build.ts';
import { describeBuildError } from './build-errors.ts';
import { type ModelMode, serveModel } from './model-choice.ts';
import { DEV_STATUS_VAR, startDevStatusServer } from './dev-status.ts';
import { watchSources } from './source-watch.ts';
import { onTerminationSignal, superviseChild } from './child-supervisor.ts';

export interface NodeDevOptions {
  root: string;
  port?: string;
  stdout?: (text: string) => void;
  stderr?: (text: string) => void;
  model?: ModelMode;
}

const STOP_GRACE_MS = 10_000;

export async function devNodeCommand(options: NodeDevOptions): Promise<number> {
  const root = path.resolve(options.root);
  const stdout = options.stdout ?? ((text: string) => void process.stdout.write(text));
  const stderr = options.stderr ?? ((text: string) => void process.stderr.write(text));
  const build = () => buildNodeServer({ root, log: (line) => stderr(`${line}\n`) });
  try {
    await build();
  } catch (error) {
    stderr(`${describeBuildError(error)}\n`);
    return 1;
  }
  const scripted = await serveModel(root, options.model ?? 'auto', { vars: 'node', command: 'dev' }, stderr);

  // The server marks its responses while a rebuild is rejected (it keeps running the last good one).
  const status = await startDevStatusServer({ root });
  // Read at every (re)start, so an edited .env applies to the next server.
  const env = (): NodeJS.ProcessEnv => ({
    [DEV_STATUS_VAR]: status.url,
    ...projectEnv(root),
    ...process.env,
    FLUE_DEV: process.env.FLUE_DEV ?? '1',
    FLUE_DB: process.env.FLUE_DB ?? path.join(root, 'node_modules', '.cache', 'flue', 'dev.db'),
    ...(scripted === undefined ? {} : { FLUE_SCRIPTED_MODEL_URL: scripted.url }),
    ...(options.port === undefined ? {} : { PORT: options.port }),
  });

  return await new Promise<number>((resolve) => {
    let stopping = false;

    const server = superviseChild({
      spawn: () =>
        spawn(process.execPath, ['--enable-source-maps', path.join(root, 'dist', SERVER_FILE)], {
          cwd: root,
          env: env(),
          stdio: ['ignore', 'pipe', 'pipe'],
        }),
      output: stderr,
      readyPattern: /Listening on (http:\/\/\S+)/,
      onNewUrl: (url) => stdout(`${url}\n`),
      onExit: (code, signal) => {
        if (!stopping) stderr(`[flue] The server exited (${signal ?? `code ${code}`}); waiting for a change to restart it.\n`);
      },
      graceMs: STOP_GRACE_MS,
    });

    const sources = watchSources({
      root,
      rootFiles: new Set<string>([...CONFIG_FILES, '.env']),
      stderr,
      rebuild: async () => {
        try {
          await build();
          status.setBuildError(undefined);
        } catch (error) {
          const text = describeBuildError(error);
          status.setBuildError(text);
          stderr(`${text}\n[flue] Keeping the running server.\n`);
          return;
        }
        if (stopping) return;
        stderr('[flue] Rebuilt; restarting the server\n');
        await server.stop('SIGTERM');
        if (!stopping) server.start();
      },
    });

    const finish = (code: number) => {
      if (stopping) return;
      stopping = true;
      sources.close();
      removeSignalListeners();
      void (async () => {
        await server.stop('SIGTERM');
        await scripted?.close().catch(() => {});
        await status.close();
        resolve(code);
      })();
    };
    const removeSignalListeners = onTerminationSignal(finish);
    server.start();
  });
}

/** The project's `.env`, if any; the shell's own variables override it. */
function projectEnv(root: string): Record<string, string> {
  const file = path.join(root, '.env');
  return existsSync(file) ? (parseEnv(readFileSync(file, 'utf8')) as Record<string, string>) : {};
}
