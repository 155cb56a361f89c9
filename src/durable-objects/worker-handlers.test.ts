/**
 * The Worker's fetch handler outside workerd: an error escaping the app is rethrown in production
 * and rendered with its message in dev mode; under `flue dev` responses carry the rejected
 * build's error.
 */
import { afterAll, afterEach, beforeAll, expect, it, vi } from 'vitest';
import { createFlueWorkerHandlers } from './worker-handlers.ts';
import { setDevMode } from '../runtime/common/dev-mode.ts';
import { type DevStatusServer, startDevStatusServer } from '../build/dev-status.ts';

type Handlers = { fetch(request: Request, env: unknown, ctx: unknown): Promise<Response> };

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
