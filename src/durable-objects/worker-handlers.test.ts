import { describe, expect, it } from 'vitest';
import type { Fetchable } from '../runtime/routing.ts';
import { createFlueWorkerHandlers } from './worker-handlers.ts';

type Handlers = { fetch(request: Request, env: unknown, ctx: unknown): Promise<Response>; scheduled?(controller: unknown, env: unknown, ctx: unknown): Promise<void> };

describe('createFlueWorkerHandlers', () => {
  it("exposes a scheduled handler beside fetch on app.ts's default export as the Worker's cron handler", async () => {
    const calls: unknown[][] = [];
    const app = {
      fetch: () => new Response('ok'),
      async scheduled(this: unknown, controller: unknown, env: unknown, ctx: unknown) {
        calls.push([this, controller, env, ctx]);
      },
    } satisfies Fetchable;
    const handlers = createFlueWorkerHandlers({ app, generatedExports: [] }) as Handlers;
    const controller = { cron: '0 9 * * *', scheduledTime: 1764493200000, noRetry() {} };
    const env = { NAME: 'worker' };
    const ctx = { waitUntil() {} };
    await handlers.scheduled!(controller, env, ctx);
    expect(calls).toEqual([[app, controller, env, ctx]]);
    expect(await (await handlers.fetch(new Request('http://w/'), env, ctx)).text()).toBe('ok');
  });

  it('takes scheduled from cloudflare.ts when the app has none, and refuses two of them', async () => {
    const fromCloudflare = async () => {};
    const app = { fetch: () => new Response('ok') };
    expect((createFlueWorkerHandlers({ app, cloudflare: { default: { scheduled: fromCloudflare } }, generatedExports: [] }) as Handlers).scheduled).toBe(fromCloudflare);
    expect((createFlueWorkerHandlers({ app, generatedExports: [] }) as Handlers).scheduled).toBeUndefined();
    expect(() =>
      createFlueWorkerHandlers({ app: { ...app, scheduled: async () => {} }, cloudflare: { default: { scheduled: fromCloudflare } }, generatedExports: [] }),
    ).toThrow('[flue] Both app.ts and cloudflare.ts define a scheduled handler; a Worker has one.');
  });
});
