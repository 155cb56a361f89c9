/**
 * The built Node server (`flue build --target node` → `dist/server.mjs`): `start()` with the
 * project's agents and persistence, `app.ts` served over `node:http`, the cron schedules of
 * `schedules.ts` and of `app.ts`'s `scheduled` handler armed, and SIGTERM/SIGINT draining before exit. The generated entry calls
 * `runFlueServer()`; everything it does is also reachable from `start()` for hand-written hosts.
 */
import path from 'node:path';
import type { Provider } from '../runtime/model/model-types.ts';
import { devModeFromEnv, setDevMode } from '../runtime/common/dev-mode.ts';
import { serveFetchable } from './http-server.ts';
import { assertFetchable } from '../runtime/host/app-entry.ts';
import { devStatusUrl } from '../runtime/host/dev-status.ts';
import { type ScheduleRunner, type Schedules, appCronSchedules, startSchedules, validateSchedules } from './schedules.ts';
import { type PersistenceAdapter, sqlite } from './sqlite.ts';
import { hasAdapterVerbs, notAnAdapterMessage } from '../shared/persistence-adapter.ts';
import { type Flue, type StartAgentEntry, start } from './start.ts';

export const DEFAULT_PORT = 3000;
/** Relative to the working directory the server starts in. */
export const DEFAULT_DB_PATH = path.join('.flue', 'flue.db');

export interface FlueServerOptions {
  /** `app.ts`'s default export. */
  app: unknown;
  agents: readonly StartAgentEntry[];
  /** `db.ts`'s default export; default `sqlite($FLUE_DB ?? '.flue/flue.db')`. */
  db?: unknown;
  /** `schedules.ts`'s default export. */
  schedules?: unknown;
  /**
   * The crons the project declares for Cloudflare (wrangler.jsonc `triggers.crons`, read by the
   * build): each fires `app.ts`'s `scheduled` handler, when the app has one, as on Cloudflare.
   */
  crons?: readonly string[];
  providers?: readonly Provider[];
  /** Default `process.env` (PORT, HOST, FLUE_DB, FLUE_DEV, provider keys). */
  env?: Record<string, string | undefined>;
  /** Exit on SIGTERM/SIGINT after draining (default true). */
  handleSignals?: boolean;
  /** Status lines; default stdout. */
  log?: (line: string) => void;
}

export interface FlueServer {
  readonly url: string;
  /** Stops accepting requests and schedule ticks, then drains the runtime (`Flue.stop()`). */
  stop(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

export async function runFlueServer(options: FlueServerOptions): Promise<FlueServer> {
  const env = options.env ?? process.env;
  const log = options.log ?? ((line: string) => void process.stdout.write(`${line}\n`));
  assertFetchable(options.app);
  if (options.schedules !== undefined) validateSchedules(options.schedules);
  const appCrons = appCronSchedules(options.app, options.crons ?? []);
  if (appCrons !== undefined) validateSchedules(appCrons, 'wrangler.jsonc triggers.crons');
  const port = parsePort(env.PORT);
  let db: PersistenceAdapter;
  let dbLabel: string;
  if (options.db !== undefined) {
    db = assertAdapter(options.db);
    dbLabel = 'db.ts';
  } else {
    const file = env.FLUE_DB === undefined || env.FLUE_DB === '' ? DEFAULT_DB_PATH : env.FLUE_DB;
    db = file === ':memory:' ? sqlite() : sqlite(path.resolve(file));
    dbLabel = file;
  }

  const flue: Flue = await start({
    agents: options.agents,
    db,
    env,
    ...(options.providers === undefined ? {} : { providers: options.providers }),
  });
  // start() defaults to dev mode for scripts and tests; a built server is production unless
  // FLUE_DEV=1 (which `flue dev --target node` sets) says a developer reads its errors.
  setDevMode(devModeFromEnv(env, false));

  let http: Awaited<ReturnType<typeof serveFetchable>>;
  try {
    const statusUrl = devStatusUrl(env);
    http = await serveFetchable(options.app, {
      port,
      ...(env.HOST ? { host: env.HOST } : {}),
      ...(statusUrl === undefined ? {} : { devStatusUrl: statusUrl }),
    });
  } catch (error) {
    await flue.stop();
    throw error;
  }
  const runners: ScheduleRunner[] = [];
  if (options.schedules !== undefined) runners.push(startSchedules(options.schedules as Schedules));
  if (appCrons !== undefined) runners.push(startSchedules(appCrons));

  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      http.close();
      await Promise.all(runners.map((runner) => runner.stop()));
      await flue.stop();
    })();
    return stopping;
  };

  if (options.handleSignals !== false) {
    const onSignal = (signal: NodeJS.Signals) => {
      const code = signal === 'SIGINT' ? 130 : 143;
      if (stopping !== undefined) process.exit(code); // a second signal: stop waiting
      log(`[flue] ${signal}: draining (send it again to exit now)`);
      void stop().then(
        () => process.exit(code),
        (error: unknown) => {
          console.error('[flue] Shutdown failed:', error);
          process.exit(1);
        },
      );
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  }

  const scheduleCount = options.schedules === undefined ? 0 : Object.keys(options.schedules as object).length;
  const cronCount = appCrons === undefined ? 0 : Object.keys(appCrons).length;
  const armed = [
    ...(scheduleCount > 0 ? [`${scheduleCount} schedule${scheduleCount === 1 ? '' : 's'}`] : []),
    ...(cronCount > 0 ? [`${cronCount} cron${cronCount === 1 ? '' : 's'} for app.ts scheduled()`] : []),
  ];
  log(`[flue] Listening on ${http.url} (db: ${dbLabel}${armed.map((part) => `, ${part}`).join('')})`);
  if (appCrons !== undefined && cronCount === 0) {
    log(
      '[flue] Note: app.ts has a scheduled() handler but no crons are declared, so it never runs. Declare them as "triggers": { "crons": ["0 9 * * *"] } in wrangler.jsonc (both targets read them).',
    );
  }
  return { url: http.url, stop, [Symbol.asyncDispose]: stop };
}

function parsePort(value: string | undefined): number {
  if (value === undefined || value === '') return DEFAULT_PORT;
  if (!/^\d+$/.test(value) || Number(value) > 65535) throw new Error(`[flue] PORT must be a port number (0-65535); got "${value}".`);
  return Number(value);
}

function assertAdapter(value: unknown): PersistenceAdapter {
  if (!hasAdapterVerbs(value)) throw new Error(`[flue] ${notAnAdapterMessage('db.ts')}`);
  return value as PersistenceAdapter;
}
