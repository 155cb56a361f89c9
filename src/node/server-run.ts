/**
 * `runFlueServer()`'s work (see server.ts): loaded by its first call, so a process that only
 * `start()`s never loads the HTTP server, the schedules or the cron parser.
 */
import path from 'node:path';
import { devModeFromEnv, setDevMode } from '../runtime/common/dev-mode.ts';
import { serveFetchable } from './http-server.ts';
import { assertFetchable } from '../runtime/host/app-entry.ts';
import { devStatusUrl } from '../runtime/host/dev-status.ts';
import { type ScheduleRunner, type Schedules, appCronSchedules, startSchedules, validateSchedules } from './schedules.ts';
import { type PersistenceAdapter, sqlite } from './sqlite.ts';
import { hasAdapterVerbs, notAnAdapterMessage } from '../shared/persistence-adapter.ts';
import { type Flue, start } from './start.ts';
import { DEFAULT_DB_PATH, DEFAULT_PORT, type FlueServer, type FlueServerOptions } from './server.ts';

export async function serveApp(options: FlueServerOptions): Promise<FlueServer> {
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
