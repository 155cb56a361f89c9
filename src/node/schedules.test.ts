import { afterEach, describe, expect, it, vi } from 'vitest';
import { InvalidSchedulesError, type ScheduledTick, appCronSchedules, startSchedules, validateSchedules } from './schedules.ts';

afterEach(() => {
  vi.useRealTimers();
});

describe('startSchedules', () => {
  it('calls each callback at its cron times with { cron, scheduledTime }, and stop() waits for running callbacks', async () => {
    vi.useFakeTimers({ now: Date.parse('2026-07-17T09:58:30.000Z') });
    const ticks: ScheduledTick[] = [];
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const runner = startSchedules({
      '* * * * *': (tick) => void ticks.push(tick),
      '0 10 * * *': async (tick) => {
        ticks.push(tick);
        await held;
      },
    });
    await vi.advanceTimersByTimeAsync(30_000);
    expect(ticks).toEqual([{ cron: '* * * * *', scheduledTime: Date.parse('2026-07-17T09:59:00.000Z') }]);
    await vi.advanceTimersByTimeAsync(60_000);
    // Ticks due at the same instant fire in no particular order.
    expect(ticks.slice(1).sort((a, b) => a.cron.localeCompare(b.cron))).toEqual([
      { cron: '* * * * *', scheduledTime: Date.parse('2026-07-17T10:00:00.000Z') },
      { cron: '0 10 * * *', scheduledTime: Date.parse('2026-07-17T10:00:00.000Z') },
    ]);

    let stopped = false;
    const stopping = runner.stop().then(() => (stopped = true));
    await vi.advanceTimersByTimeAsync(120_000);
    expect(stopped).toBe(false); // the 10:00 callback still runs
    expect(ticks).toHaveLength(3); // and no tick fires after stop()
    release();
    await stopping;
  });

  it('reports a failing callback and keeps the schedule armed', async () => {
    vi.useFakeTimers({ now: Date.parse('2026-07-17T10:00:00.000Z') });
    const errors: [ScheduledTick, unknown][] = [];
    const runner = startSchedules(
      { '* * * * *': () => Promise.reject(new Error('boom')) },
      { onError: (tick, error) => errors.push([tick, error]) },
    );
    await vi.advanceTimersByTimeAsync(120_000);
    expect(errors.map(([tick, error]) => [tick.scheduledTime, (error as Error).message])).toEqual([
      [Date.parse('2026-07-17T10:01:00.000Z'), 'boom'],
      [Date.parse('2026-07-17T10:02:00.000Z'), 'boom'],
    ]);
    await runner.stop();
  });

  it('rejects a default export that is not an object of callbacks, naming the entry', () => {
    expect(() => validateSchedules([() => {}])).toThrow(InvalidSchedulesError);
    expect(() => validateSchedules(undefined)).toThrow(
      '[flue] schedules.ts must default-export an object mapping cron expressions to callbacks',
    );
    expect(() => validateSchedules({ '0 9 * * *': 'dispatch' })).toThrow(
      '[flue] schedules.ts: the value for "0 9 * * *" must be a function (tick) => …; got string.',
    );
    expect(() => validateSchedules({ 'every day': () => {} })).toThrow('[flue] Invalid cron expression "every day": found 2 fields');
  });
});

describe('appCronSchedules', () => {
  it("fires app.ts's scheduled(controller, env, ctx) on each declared cron, with the app as this, and waits for its waitUntil work", async () => {
    vi.useFakeTimers({ now: Date.parse('2026-07-17T08:59:30.000Z') });
    const calls: { self: unknown; cron: string; scheduledTime: number; env: unknown }[] = [];
    let finishLater!: () => void;
    const later = new Promise<void>((resolve) => (finishLater = resolve));
    const app = {
      fetch: () => new Response('ok'),
      scheduled(
        this: unknown,
        controller: { cron: string; scheduledTime: number; noRetry(): void },
        env: unknown,
        ctx: { waitUntil(p: Promise<unknown>): void },
      ) {
        controller.noRetry();
        calls.push({ self: this, cron: controller.cron, scheduledTime: controller.scheduledTime, env });
        ctx.waitUntil(later);
      },
    };
    expect(appCronSchedules({ fetch: app.fetch }, ['0 9 * * *'])).toBeUndefined();
    const runner = startSchedules(appCronSchedules(app, ['0 9 * * *', '*/30 * * * *'])!);
    await vi.advanceTimersByTimeAsync(30_000);
    expect(calls.sort((a, b) => a.cron.localeCompare(b.cron))).toEqual([
      { self: app, cron: '*/30 * * * *', scheduledTime: Date.parse('2026-07-17T09:00:00.000Z'), env: undefined },
      { self: app, cron: '0 9 * * *', scheduledTime: Date.parse('2026-07-17T09:00:00.000Z'), env: undefined },
    ]);
    let stopped = false;
    const stopping = runner.stop().then(() => (stopped = true));
    await vi.advanceTimersByTimeAsync(1_000);
    expect(stopped).toBe(false); // the ticks still wait for their waitUntil work
    finishLater();
    await stopping;
  });
});
