/**
 * `flue dev`'s status channel, both ends on Node: the endpoint the dev process serves, the app's
 * client of it (the build error header, the Worker's source map load), and the Node server
 * marking its responses while a rebuild is rejected.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type DevStatusServer, startDevStatusServer } from './dev-status.ts';
import { BUILD_ERROR_HEADER, fetchBuildError, loadDevSourceMap, withBuildErrorHeader } from '../runtime/host/dev-status.ts';
import { describeForDeveloper, setDevSourceMap } from '../runtime/common/dev-stack.ts';
import { oneLineHeader } from '../shared/dev-status.ts';
import { type RunningHttpServer, serveFetchable } from '../node/http-server.ts';

const root = mkdtempSync(path.join(os.tmpdir(), 'flue-dev-status-'));
let status: DevStatusServer;

beforeAll(async () => {
  mkdirSync(path.join(root, 'dist'));
  // Generated line 1 maps to src/agents/orders.ts line 3, column 5 (esbuild writes sources relative to dist/).
  writeFileSync(
    path.join(root, 'dist', 'worker.js.map'),
    JSON.stringify({ version: 3, sources: ['../src/agents/orders.ts'], mappings: 'AAEI', names: [] }),
  );
  status = await startDevStatusServer({ root, sourceMap: path.join(root, 'dist', 'worker.js.map') });
});

afterAll(async () => {
  setDevSourceMap(undefined);
  await status.close();
  rmSync(root, { recursive: true, force: true });
});

describe('the status endpoint and its client', () => {
  it('reports a rejected build on one line until a build succeeds', async () => {
    expect(await fetchBuildError(status.url)).toBeUndefined();
    status.setBuildError('[flue] Bundling failed: src/app.ts:3:1: Expected "}"\n  but found end of file — fix it');
    expect(await fetchBuildError(status.url)).toBe('[flue] Bundling failed: src/app.ts:3:1: Expected "}" but found end of file ? fix it');
    status.setBuildError(undefined);
    expect(await fetchBuildError(status.url)).toBeUndefined();
  });

  it('treats an unreachable flue dev as no build error', async () => {
    expect(await fetchBuildError('http://127.0.0.1:9/')).toBeUndefined();
  });

  it('sets the header on a copy of the response, keeping status, headers and body', async () => {
    const original = new Response('hello', { status: 201, headers: { 'x-app': 'kept' } });
    expect(withBuildErrorHeader(original, undefined)).toBe(original);
    const marked = withBuildErrorHeader(original, 'bad build');
    expect(marked.status).toBe(201);
    expect(marked.headers.get('x-app')).toBe('kept');
    expect(marked.headers.get(BUILD_ERROR_HEADER)).toBe('bad build');
    expect(await marked.text()).toBe('hello');
  });

  it('shortens a long error to a bounded header value', () => {
    const value = oneLineHeader('x'.repeat(5_000));
    expect(value).toHaveLength(1_000);
    expect(value.endsWith('...')).toBe(true);
  });

  it('serves the bundle source map with project-relative sources; loading it maps bundle frames', async () => {
    const response = await fetch(`${status.url}/source-map`);
    expect(await response.json()).toEqual({ bundle: 'worker.js', sources: ['src/agents/orders.ts'], mappings: 'AAEI' });
    await loadDevSourceMap(status.url);
    const error = new Error('no orders');
    error.stack = 'Error: no orders\n    at Orders (file:///bundle/worker.js:1:1)';
    expect(describeForDeveloper(error)).toBe('Error: no orders (at src/agents/orders.ts:3:5)\n    at Orders (src/agents/orders.ts:3:5)');
    expect((await fetch(`${status.url}/elsewhere`)).status).toBe(404);
  });
});

describe('the Node server under flue dev', () => {
  let server: RunningHttpServer;
  afterAll(() => server?.close());

  it('marks every response, errors included, while the latest build is rejected', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => {});
    const app = {
      fetch: (request: Request) => {
        if (new URL(request.url).pathname === '/fail') throw new Error('route failed');
        return new Response('ok');
      },
    };
    server = await serveFetchable(app, { port: 0, host: '127.0.0.1', devStatusUrl: status.url });
    expect((await fetch(`${server.url}/`)).headers.get(BUILD_ERROR_HEADER)).toBeNull();
    status.setBuildError('[flue] src/agents/hello.ts:4: tool input must be an object schema');
    for (const route of ['/', '/fail']) {
      const response = await fetch(`${server.url}${route}`);
      expect(response.headers.get(BUILD_ERROR_HEADER)).toBe('[flue] src/agents/hello.ts:4: tool input must be an object schema');
      await response.body?.cancel();
    }
    status.setBuildError(undefined);
    expect((await fetch(`${server.url}/`)).headers.get(BUILD_ERROR_HEADER)).toBeNull();
  });
});
