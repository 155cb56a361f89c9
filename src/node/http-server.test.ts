/**
 * The Node server's HTTP layer over real sockets: requests and responses keep their method,
 * headers and bodies, streamed bodies arrive while the handler is still writing, a disconnect
 * aborts the request's signal, and errors escaping the app render as Flue envelopes.
 */
import { request as httpRequest } from 'node:http';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { InvalidRequestError } from '../runtime/common/errors.ts';
import type { Fetchable } from '../runtime/routing.ts';
import { type RunningHttpServer, serveFetchable } from './http-server.ts';

let server: RunningHttpServer | undefined;
afterEach(() => {
  server?.close();
  server?.server.closeAllConnections();
  server = undefined;
  vi.restoreAllMocks();
});

async function serve(app: Fetchable): Promise<string> {
  server = await serveFetchable(app, { port: 0, host: '127.0.0.1' });
  return server.url;
}

describe('serveFetchable', () => {
  it('passes method, URL, headers and body through, and sends every set-cookie header', async () => {
    const url = await serve({
      async fetch(request, env, ctx) {
        expect(env).toBeUndefined();
        expect(ctx).toBeUndefined();
        const headers = new Headers({ 'content-type': 'application/json' });
        headers.append('set-cookie', 'a=1');
        headers.append('set-cookie', 'b=2');
        const body = {
          method: request.method,
          path: new URL(request.url).pathname + new URL(request.url).search,
          auth: request.headers.get('authorization'),
          body: await request.text(),
        };
        return new Response(JSON.stringify(body), { status: 201, headers });
      },
    });
    const response = await fetch(`${url}/a/b?c=d`, { method: 'POST', headers: { authorization: 'Bearer t' }, body: 'hello' });
    expect(response.status).toBe(201);
    expect(response.headers.getSetCookie()).toEqual(['a=1', 'b=2']);
    expect(await response.json()).toEqual({ method: 'POST', path: '/a/b?c=d', auth: 'Bearer t', body: 'hello' });
  });

  it('streams a body chunk by chunk, and aborts the request signal when the client goes away', async () => {
    let abortedWith: unknown;
    let push!: (text: string) => void;
    const url = await serve({
      fetch(request) {
        request.signal.addEventListener('abort', () => (abortedWith = request.signal.reason));
        const body = new ReadableStream<Uint8Array>({
          start(controller) {
            push = (text) => controller.enqueue(new TextEncoder().encode(text));
          },
        });
        return new Response(body, { headers: { 'content-type': 'text/event-stream' } });
      },
    });
    const controller = new AbortController();
    const response = await fetch(`${url}/events`, { signal: controller.signal });
    const reader = response.body!.getReader();
    push('first\n');
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('first\n'); // before the body ends
    push('second\n');
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('second\n');
    controller.abort();
    await vi.waitFor(() => expect(abortedWith).toBeInstanceOf(Error));
  });

  it('answers HEAD without a body', async () => {
    const url = await serve({ fetch: () => new Response('content', { headers: { 'x-head': 'yes' } }) });
    const response = await fetch(url, { method: 'HEAD' });
    expect(response.headers.get('x-head')).toBe('yes');
    expect(await response.text()).toBe('');
  });

  it('renders a typed error escaping the app with its status, and anything else as a logged 500 with a ref', async () => {
    const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
    const url = await serve({
      fetch(request) {
        if (new URL(request.url).pathname === '/typed') throw new InvalidRequestError('The name field is missing.', 'Send { name }.');
        throw new Error('secret internals');
      },
    });
    const typed = await fetch(`${url}/typed`);
    expect(typed.status).toBe(400);
    expect(((await typed.json()) as { error: { type: string; message: string } }).error).toMatchObject({
      type: 'invalid_request',
      message: 'The name field is missing.',
    });

    const crashed = await fetch(`${url}/other`);
    expect(crashed.status).toBe(500);
    const ref = crashed.headers.get('flue-error-ref');
    const body = (await crashed.json()) as { error: { type: string; ref: string } };
    expect(body.error).toMatchObject({ type: 'internal_error', ref });
    expect(JSON.stringify(body)).not.toContain('secret internals');
    expect(logged).toHaveBeenCalledWith(expect.stringContaining(ref!), expect.objectContaining({ message: 'secret internals' }));
  });

  it('answers a malformed Host header with 400 invalid_request and keeps serving', async () => {
    const url = await serve({ fetch: (request) => new Response(new URL(request.url).host) });
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(url, { headers: { host: 'bad host' } }, (res) => {
        res.resume();
        resolve(res.statusCode!);
      });
      req.on('error', reject);
      req.end();
    });
    expect(status).toBe(400);
    expect(await (await fetch(url)).text()).toMatch(/^127\.0\.0\.1:\d+$/);
  });
});
