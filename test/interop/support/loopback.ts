/**
 * Interop test support: a fetch handler (a Hono app's `fetch`) served over real HTTP on loopback
 * with node:http, so the official clients talk to it through the global `fetch` exactly as they
 * would to a deployed app — headers, chunked streaming bodies (SSE flushed per write), client
 * disconnects (turned into the Request's abort signal) and server-side connection drops.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export type FetchHandler = (request: Request) => Response | Promise<Response>;

/** One request as the server saw it. */
export interface ServedRequest {
  method: string;
  /** Request headers as received (lower-case names). */
  headers: Record<string, string>;
  /** Path and query, e.g. `/agents/support/t-1?view=updates&offset=-1&live=sse`. */
  path: string;
  /** Status the handler answered with (undefined while it is still deciding, e.g. a parked long-poll). */
  status?: number;
  startedAt: number;
  /** When the exchange ended (any way). */
  endedAt?: number;
  /** How it ended: the body was sent completely, the client went away, or a test dropped it. */
  outcome?: 'complete' | 'client-closed' | 'ended-by-server' | 'destroyed-by-server';
}

export interface LoopbackServer {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  /** Every request, in arrival order. */
  readonly requests: readonly ServedRequest[];
  /**
   * Ends, as a clean end of body, every response whose streaming body is in flight and whose path
   * matches: the client sees a normal EOF (for SSE: a connection the server closed).
   */
  endStreaming(match?: (path: string) => boolean): number;
  /** Destroys the sockets of every in-flight exchange that matches (parked or streaming). */
  destroy(match?: (path: string) => boolean): number;
  close(): Promise<void>;
}

interface InFlight {
  record: ServedRequest;
  res: ServerResponse;
  socket: Socket;
  /** Set once a streaming body is being piped. */
  reader?: ReadableStreamDefaultReader<Uint8Array>;
}

export async function serveFetch(handler: FetchHandler): Promise<LoopbackServer> {
  const requests: ServedRequest[] = [];
  const inFlight = new Set<InFlight>();
  const sockets = new Set<Socket>();

  const server = createServer((req, res) => {
    void serve(req, res);
  });
  server.on('connection', (socket) => {
    socket.setNoDelay(true);
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const record: ServedRequest = {
      method: req.method ?? 'GET',
      headers: Object.fromEntries(
        Object.entries(req.headers).map(([name, value]) => [name, Array.isArray(value) ? value.join(', ') : (value ?? '')]),
      ),
      path: req.url ?? '/',
      startedAt: Date.now(),
    };
    requests.push(record);
    const entry: InFlight = { record, res, socket: req.socket };
    inFlight.add(entry);
    const finish = (outcome: ServedRequest['outcome']) => {
      record.outcome ??= outcome;
      record.endedAt ??= Date.now();
      inFlight.delete(entry);
    };
    const disconnected = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) {
        disconnected.abort(new DOMException('The client went away.', 'AbortError'));
        finish('client-closed');
      }
    });
    try {
      const body = req.method === 'GET' || req.method === 'HEAD' ? undefined : await readBody(req);
      const headers = new Headers();
      for (const [name, value] of Object.entries(req.headers)) {
        if (value === undefined) continue;
        for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one);
      }
      const request = new Request(new URL(record.path, `http://${req.headers.host ?? '127.0.0.1'}`), {
        method: record.method,
        headers,
        ...(body === undefined || body.byteLength === 0 ? {} : { body: Uint8Array.from(body) }),
        signal: disconnected.signal,
      });
      const response = await handler(request);
      record.status = response.status;
      if (res.destroyed) {
        await response.body?.cancel().catch(() => {});
        return;
      }
      res.statusCode = response.status;
      for (const [name, value] of response.headers) {
        if (name === 'set-cookie') continue;
        res.setHeader(name, value);
      }
      const cookies = response.headers.getSetCookie();
      if (cookies.length > 0) res.setHeader('set-cookie', cookies);
      if (response.body === null || record.method === 'HEAD') {
        await response.body?.cancel().catch(() => {});
        res.end();
        finish('complete');
        return;
      }
      res.flushHeaders();
      const reader = response.body.getReader();
      entry.reader = reader;
      res.on('close', () => void reader.cancel().catch(() => {}));
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        if (res.destroyed || res.writableEnded) return;
        if (!res.write(value))
          await new Promise<void>((resolve) => {
            res.once('drain', resolve);
            res.once('close', resolve);
          });
      }
      if (!res.writableEnded && !res.destroyed) res.end();
      finish('complete');
    } catch (error) {
      if (res.destroyed || res.writableEnded) return;
      // The handler itself failed (not an HTTP error answer): a bare 500 so the test sees it.
      if (!res.headersSent) {
        res.statusCode = 500;
        res.setHeader('content-type', 'text/plain');
      }
      res.end(`loopback: handler threw: ${error instanceof Error ? error.stack : String(error)}`);
      finish('complete');
    }
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  const select = (match: ((path: string) => boolean) | undefined) =>
    [...inFlight].filter((entry) => match === undefined || match(entry.record.path));

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    endStreaming(match) {
      const ended = select(match).filter((entry) => entry.reader !== undefined);
      for (const entry of ended) {
        entry.record.outcome = 'ended-by-server';
        entry.record.endedAt = Date.now();
        inFlight.delete(entry);
        void entry.reader!.cancel().catch(() => {});
        entry.res.end();
      }
      return ended.length;
    },
    destroy(match) {
      const dropped = select(match);
      for (const entry of dropped) {
        entry.record.outcome = 'destroyed-by-server';
        entry.record.endedAt = Date.now();
        inFlight.delete(entry);
        entry.socket.destroy();
      }
      return dropped.length;
    },
    close() {
      for (const socket of sockets) socket.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/**
 * The other way to reach a router: a `fetch` the SDK accepts as its `fetch` option that calls the
 * app in process (no socket). The request's abort signal follows the caller's.
 */
export function inProcessFetch(handler: FetchHandler): typeof fetch {
  return (async (input: RequestInfo | URL, init?: RequestInit) => handler(new Request(input, init))) as typeof fetch;
}
