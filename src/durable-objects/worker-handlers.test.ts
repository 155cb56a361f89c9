/**
 * The Worker's default export outside workerd: `scheduled` taken from app.ts or cloudflare.ts; an
 * error escaping the app is rethrown in production and rendered with its message in dev mode;
 * under `flue dev` responses carry the rejected build's error.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Fetchable } from '../runtime/routing.ts';
import { createFlueWorkerHandlers } from './worker-handlers.ts';
import { setDevMode } from '../runtime/common/dev-mode.ts';
import { type DevStatusServer, startDevStatusServer } from '../build/dev-status.ts';

type Handlers = {
  fetch(request: Request, env: unknown, ctx: unknown): Promise<Response>;
  scheduled?(controller: unknown, env: unknown, ctx: unknown): Promise<void>;
};

const app = {
  fetch(request: Request): Response {
    if (new URL(request.url).pathname === '/boom') throw new RangeError('quota table is empty');
    return new Response('fine');
  },
};
const handlers = createFlueWorkerHandlers({ app, generatedExports: [] }) as unknown as Handlers;
let status: DevStatusServer;

beforeAll(async () => {
  status = await startDevStatusServer({ root: process.cwd() });
});
afterAll(() => status.close());
afterEach(() => setDevMode(undefined));

it('rethrows an escaping error outside dev mode (workerd answers for it)', async () => {
  setDevMode(false);
  await expect(handlers.fetch(new Request('http://w.test/boom'), {}, undefined)).rejects.toThrow('quota table is empty');
});

it('renders it in dev mode with its message', async () => {
  setDevMode(true);
  vi.spyOn(console, 'error').mockImplementation(() => {});
  const response = await handlers.fetch(new Request('http://w.test/boom'), {}, undefined);
  expect(response.status).toBe(500);
  const { error } = (await response.json()) as { error: { type: string; dev: string } };
  expect(error.type).toBe('internal_error');
  expect(error.dev).toMatch(/^RangeError: quota table is empty/);
});

it("marks responses with flue dev's build error while it has one", async () => {
  const env = { FLUE_DEV_STATUS_URL: status.url };
  expect((await handlers.fetch(new Request('http://w.test/'), env, undefined)).headers.get('x-flue-build-error')).toBeNull();
  status.setBuildError('[flue] src/agents/a.ts:2: boom');
  const marked = await handlers.fetch(new Request('http://w.test/'), env, undefined);
  expect(marked.headers.get('x-flue-build-error')).toBe('[flue] src/agents/a.ts:2: boom');
  expect(await marked.text()).toBe('fine');
  // Without the var (a deployed Worker) nothing is asked.
  expect((await handlers.fetch(new Request('http://w.test/'), {}, undefined)).headers.get('x-flue-build-error')).toBeNull();
});

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
    expect(
      (createFlueWorkerHandlers({ app, cloudflare: { default: { scheduled: fromCloudflare } }, generatedExports: [] }) as Handlers)
        .scheduled,
    ).toBe(fromCloudflare);
    expect((createFlueWorkerHandlers({ app, generatedExports: [] }) as Handlers).scheduled).toBeUndefined();
    expect(() =>
      createFlueWorkerHandlers({
        app: { ...app, scheduled: async () => {} },
        cloudflare: { default: { scheduled: fromCloudflare } },
        generatedExports: [],
      }),
    ).toThrow('[flue] Both app.ts and cloudflare.ts define a scheduled handler; a Worker has one.');
  });
});
