/**
 * The built Node server's cron schedules: `src/schedules.ts` default-exports an object mapping
 * cron expressions to callbacks. Each callback receives the tick the way a Cloudflare
 * `scheduled` handler receives its controller (`cron`, `scheduledTime`), so the same
 * `idempotencyKey: \`cron:${cron}:${scheduledTime}\`` keying makes a tick's dispatch exactly-once.
 */
import { type CronSchedule, parseCron } from './cron.ts';
import { InvalidSchedulesError } from './schedule-errors.ts';

export { InvalidSchedulesError };

export interface ScheduledTick {
  /** The expression as written in `schedules.ts`. */
  readonly cron: string;
  /** The instant this tick was due (ms since epoch, UTC minute). */
  readonly scheduledTime: number;
}

export type ScheduleCallback = (tick: ScheduledTick) => unknown;

/** The default export of `src/schedules.ts`. */
export type Schedules = Readonly<Record<string, ScheduleCallback>>;

export interface ScheduleRunner {
  /** Clears the timers, then waits for the callbacks already running. */
  stop(): Promise<void>;
}

export interface ScheduleOptions {
  /** Where a failing callback is reported; default `console.error`. */
  onError?: (tick: ScheduledTick, error: unknown) => void;
}

/** Checks the shape and every expression before anything is armed. */
export function validateSchedules(value: unknown, file = 'schedules.ts'): { cron: CronSchedule; run: ScheduleCallback }[] {
  if (typeof value !== 'object' || value === null || Array.isArray(value) || Object.getPrototypeOf(value) !== Object.prototype) {
    throw new InvalidSchedulesError(
      `${file} must default-export an object mapping cron expressions to callbacks, e.g. export default { '0 9 * * *': (tick) => dispatch(…) }.`,
    );
  }
  return Object.entries(value).map(([expression, run]) => {
    if (typeof run !== 'function') {
      throw new InvalidSchedulesError(
        `${file}: the value for "${expression}" must be a function (tick) => …; got ${run === null ? 'null' : typeof run}.`,
      );
    }
    return { cron: parseCron(expression), run: run as ScheduleCallback };
  });
}

/** What a Cloudflare `scheduled(controller, env, ctx)` handler gets as its controller. */
interface CronController extends ScheduledTick {
  noRetry(): void;
}

/**
 * `app.ts`'s `scheduled(controller, env, ctx)` handler as schedules, one per cron the project
 * declares (wrangler.jsonc `triggers.crons`), so the cron callback beside `fetch` fires on the Node
 * server at the instants it fires on Cloudflare. The handler gets a controller with `cron` and
 * `scheduledTime`, no `env` (as `fetch` gets none on Node) and a context whose `waitUntil` work the
 * tick waits for. Undefined when the app has no such handler.
 */
export function appCronSchedules(app: unknown, crons: readonly string[]): Schedules | undefined {
  const scheduled = (app as { scheduled?: unknown } | null)?.scheduled;
  if (typeof scheduled !== 'function') return undefined;
  return Object.fromEntries(
    crons.map((cron) => [
      cron,
      async (tick: ScheduledTick) => {
        const pending: Promise<unknown>[] = [];
        const controller: CronController = { cron: tick.cron, scheduledTime: tick.scheduledTime, noRetry() {} };
        const ctx = {
          waitUntil: (work: Promise<unknown>) => void pending.push(Promise.resolve(work)),
          passThroughOnException() {},
          props: {},
        };
        await scheduled.call(app, controller, undefined, ctx);
        await Promise.all(pending);
      },
    ]),
  );
}

/**
 * Arms one timer per expression. A tick missed while the process was down is not replayed, and
 * ticks never overlap-block each other: a slow callback does not delay the next tick.
 */
export function startSchedules(value: Schedules, options: ScheduleOptions = {}): ScheduleRunner {
  const entries = validateSchedules(value);
  const onError =
    options.onError ??
    ((tick, error) => console.error(`[flue] Schedule "${tick.cron}" (${new Date(tick.scheduledTime).toISOString()}) failed:`, error));
  const timers = new Set<NodeJS.Timeout>();
  const running = new Set<Promise<void>>();
  let stopped = false;

  const arm = (cron: CronSchedule, run: ScheduleCallback, after: number) => {
    const due = cron.next(after);
    // setTimeout holds at most ~24.8 days; longer waits re-arm from the same due time.
    const wait = (target: number) => {
      const timer = setTimeout(
        () => {
          timers.delete(timer);
          if (stopped) return;
          if (Date.now() < target) return wait(target);
          const tick: ScheduledTick = { cron: cron.expression, scheduledTime: target };
          arm(cron, run, target);
          const job = (async () => {
            try {
              await run(tick);
            } catch (error) {
              onError(tick, error);
            }
          })();
          running.add(job);
          void job.finally(() => running.delete(job));
        },
        Math.min(Math.max(0, target - Date.now()), 2 ** 31 - 1),
      );
      timers.add(timer);
    };
    wait(due);
  };
  const now = Date.now();
  for (const { cron, run } of entries) arm(cron, run, now);

  return {
    async stop() {
      stopped = true;
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      await Promise.all([...running]);
    },
  };
}
