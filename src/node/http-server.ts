/**
 * Serves a Fetchable (`app.ts`'s default export: a Hono app or `{ fetch }`) on `node:http`.
 * Requests become WHATWG `Request`s whose signal aborts when the client goes away; response
 * bodies are streamed with backpressure, so the router's SSE and long-poll reads work unbuffered.
 * On Node the app's `fetch` receives no `env` and `ctx === undefined`.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { InvalidRequestError } from '../runtime/common/errors.ts';
import { renderError } from '../runtime/http/http-errors.ts';
import { isDevMode } from '../runtime/common/dev-mode.ts';
import { fetchBuildError, withBuildErrorHeader } from '../runtime/host/dev-status.ts';
import type { Fetchable } from '../runtime/host/app-entry.ts';

export interface HttpServerOptions {
  port: number;
  /** Default: all interfaces. */
  host?: string;
  /** `flue dev`'s status URL: responses then say when the latest build was rejected. */
  devStatusUrl?: string;
}

export interface RunningHttpServer {
  readonly server: Server;
  /** e.g. `http://127.0.0.1:3000` */
  readonly url: string;
  /** Stops accepting connections and closes idle ones; open streams end with the process. */
  close(): void;
}

export async function serveFetchable(app: Fetchable, options: HttpServerOptions): Promise<RunningHttpServer> {
  const statusUrl = options.devStatusUrl;
  // Loaded when a server starts: the runtime's entries share their files, and an app that never
  // serves HTTP from this process should not load Node's HTTP stack at start.
  const { createServer } = process.getBuiltinModule('node:http') as typeof import('node:http');
  const server = createServer((req, res) => void handle(app, req, res, statusUrl));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host =
    address.family === 'IPv6'
      ? address.address === '::'
        ? 'localhost'
        : `[${address.address}]`
      : address.address === '0.0.0.0'
        ? 'localhost'
        : address.address;
  return {
    server,
    url: `http://${host}:${address.port}`,
    close() {
      server.close();
      server.closeIdleConnections();
    },
  };
}

async function handle(app: Fetchable, req: IncomingMessage, res: ServerResponse, statusUrl: string | undefined): Promise<void> {
  const buildError = statusUrl === undefined ? undefined : fetchBuildError(statusUrl);
  const controller = new AbortController();
  res.once('close', () => {
    if (!res.writableFinished) controller.abort(new Error('The client closed the connection.'));
  });
  let response: Response;
  try {
    const request = toRequest(req, controller.signal);
    try {
      response = await app.fetch(request, undefined, undefined);
    } catch (error) {
      response = renderError(error, { devMode: isDevMode(), traceparent: req.headers['traceparent'] as string | undefined });
    }
    if (!(response instanceof Response)) throw new Error('[flue] app.ts fetch() must return a Response.');
  } catch (error) {
    response = renderError(error, { devMode: isDevMode() });
  }
  if (buildError !== undefined) response = withBuildErrorHeader(response, await buildError);
  await writeResponse(response, req, res, controller.signal);
}

function toRequest(req: IncomingMessage, signal: AbortSignal): Request {
  const host = req.headers.host ?? 'localhost';
  let url: URL;
  try {
    url = new URL(req.url ?? '/', `http://${host}`);
  } catch {
    throw new InvalidRequestError(
      'The request URL or Host header is malformed.',
      `Host "${host}" with path "${req.url ?? ''}" does not form a URL.`,
    );
  }
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    if (Array.isArray(value)) for (const v of value) headers.append(name, v);
    else headers.set(name, value);
  }
  const method = req.method ?? 'GET';
  const hasBody = method !== 'GET' && method !== 'HEAD';
  return new Request(url, {
    method,
    headers,
    signal,
    ...(hasBody ? { body: readable().toWeb(req) as ReadableStream<Uint8Array>, duplex: 'half' } : {}),
  } as RequestInit);
}

async function writeResponse(response: Response, req: IncomingMessage, res: ServerResponse, signal: AbortSignal): Promise<void> {
  const headers: Record<string, string | string[]> = {};
  response.headers.forEach((value, name) => {
    if (name !== 'set-cookie') headers[name] = value;
  });
  const cookies = response.headers.getSetCookie();
  if (cookies.length > 0) headers['set-cookie'] = cookies;
  res.writeHead(response.status, response.statusText, headers);
  if (response.body === null || req.method === 'HEAD') {
    res.end();
    await response.body?.cancel().catch(() => {});
    return;
  }
  // Streaming responses (SSE) must reach the client chunk by chunk.
  res.flushHeaders();
  const reader = response.body.getReader();
  const onAbort = () => void reader.cancel(signal.reason).catch(() => {});
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (!res.write(value))
        await new Promise<void>((resolve) => {
          const settle = () => {
            res.off('drain', settle);
            res.off('close', settle);
            resolve();
          };
          res.once('drain', settle);
          res.once('close', settle);
        });
      if (res.destroyed) break;
    }
    res.end();
  } catch {
    res.destroy();
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

/** node:stream's Readable, loaded by the first request with a body: `@flue/runtime/node` shares its files with processes that serve no HTTP. */
function readable(): typeof import('node:stream').Readable {
  return (process.getBuiltinModule('node:stream') as typeof import('node:stream')).Readable;
}
