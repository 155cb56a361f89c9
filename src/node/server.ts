/**
 * The built Node server (`flue build --target node` → `dist/server.mjs`): `start()` with the
 * project's agents and persistence, `app.ts` served over `node:http`, the cron schedules of
 * `schedules.ts` and of `app.ts`'s `scheduled` handler armed, and SIGTERM/SIGINT draining before exit. The generated entry calls
 * `runFlueServer()`; everything it does is also reachable from `start()` for hand-written hosts.
 */
import path from 'node:path';
import type { Provider } from '../runtime/model/model-types.ts';
import type { StartAgentEntry } from './start.ts';

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
  // The server's code loads with its first call: `@flue/runtime/node` shares its files with
  // processes that only `start()`.
  const { serveApp } = await import('./server-run.ts');
  return serveApp(options);
}
