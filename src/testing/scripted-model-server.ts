/**
 * A loopback HTTP server that impersonates OpenAI chat-completions and Anthropic messages, so
 * tests drive pi-ai's real providers over the real streaming wire formats instead of a fake
 * provider. Replies come from a FIFO script: one step per model request, in arrival order.
 *
 * Node only (node:http) and free of vitest imports: crash tests import it from plain child
 * processes through `@flue/runtime/testing`.
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

import type {
  RecordedRequest,
  ScriptedModelServer,
  ScriptedModelServerOptions,
  ScriptedResponse,
  ScriptedWireApi,
  ScriptStep,
} from './scripted-model-types.ts';
import { normalizeRequest } from './scripted-wire-requests.ts';
import { anthropicFrames, errorBody, openaiFrames, planReply, renderWhole } from './scripted-wire-replies.ts';

export type * from './scripted-model-types.ts';

/**
 * Lanes let code that cannot reach this process's memory (a Worker in workerd) script the server
 * over HTTP: a request whose `model` has a lane takes its steps from that lane's queue.
 *   POST   /__scripted/lanes/<model>            body { steps: ScriptedResponse[] }  (append)
 *   GET    /__scripted/lanes/<model>/requests   recorded requests of the lane
 *   DELETE /__scripted/lanes/<model>            drop the lane's queue and recordings
 */
export const LANE_ROUTE = '/__scripted/lanes/';

export const NO_STEP_QUEUED_MESSAGE = 'scripted model: no step queued';

const DEFAULT_WAIT_TIMEOUT_MS = 5000;

interface Waiter {
  count: number;
  resolve: (requests: RecordedRequest[]) => void;
}

export async function startScriptedModelServer(options: ScriptedModelServerOptions = {}): Promise<ScriptedModelServer> {
  const queue: ScriptStep[] = [];
  const requests: RecordedRequest[] = [];
  const lanes = new Map<string, { queue: ScriptStep[]; requests: RecordedRequest[] }>();
  let waiters: Waiter[] = [];
  let toolCallCounter = 0;
  let responseCounter = 0;
  const sockets = new Set<Socket>();
  // Cancels pending chunk delays so close() does not leave timers holding the process open.
  const lifetime = new AbortController();

  const record = (request: RecordedRequest): void => {
    requests.push(request);
    const ready = waiters.filter((waiter) => requests.length >= waiter.count);
    waiters = waiters.filter((waiter) => requests.length < waiter.count);
    for (const waiter of ready) waiter.resolve(requests.slice());
  };

  const laneRoute = async (req: IncomingMessage, res: ServerResponse, path: string): Promise<void> => {
    const [name = '', tail] = decodeURIComponent(path.slice(LANE_ROUTE.length).split('?')[0]!).split('/requests');
    let lane = lanes.get(name);
    if (req.method === 'DELETE') {
      lanes.delete(name);
      sendJson(res, 200, { ok: true });
    } else if (req.method === 'GET' && tail !== undefined) {
      sendJson(res, 200, lane?.requests ?? []);
    } else if (req.method === 'POST') {
      const { steps } = JSON.parse(await readBody(req)) as { steps: ScriptedResponse[] };
      if (lane === undefined) lanes.set(name, (lane = { queue: [], requests: [] }));
      lane.queue.push(...steps);
      sendJson(res, 200, { ok: true, pending: lane.queue.length });
    } else {
      sendJson(res, 404, { error: { message: `scripted model: no lane route for ${req.method} ${path}` } });
    }
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = req.url ?? '/';
    if (path.startsWith(LANE_ROUTE)) return laneRoute(req, res, path);
    const receivedAt = Date.now();
    const api = routeOf(req.method, path);
    if (api === undefined) {
      sendJson(res, 404, { error: { message: `scripted model: no route for ${req.method} ${path}` } });
      return;
    }
    // Without lanes the step is taken before the body is read, so concurrent requests get steps
    // in arrival order (a body that fails to parse therefore still uses up its step).
    let step = lanes.size === 0 ? queue.shift() : undefined;
    let body: unknown;
    try {
      body = JSON.parse(await readBody(req));
    } catch (error) {
      sendJson(res, 400, errorBody(api, 400, `scripted model: request body is not JSON: ${describe(error)}`));
      return;
    }
    const recorded = normalizeRequest(api, path, body, req, receivedAt);
    record(recorded);
    if (lanes.size > 0) {
      const lane = lanes.get(String((body as { model?: unknown } | null)?.model));
      lane?.requests.push(recorded);
      step = lane === undefined ? queue.shift() : lane.queue.shift();
    }
    step ??= options.fallback;
    if (step === undefined) {
      sendJson(res, 500, errorBody(api, 500, `${NO_STEP_QUEUED_MESSAGE} (request #${requests.length} to ${path})`));
      return;
    }
    let response: ScriptedResponse;
    try {
      response = typeof step === 'function' ? await step(recorded) : step;
    } catch (error) {
      sendJson(res, 500, errorBody(api, 500, `scripted model: step threw: ${describe(error)}`));
      return;
    }
    if (response.status !== undefined && response.status >= 400) {
      const payload =
        typeof response.errorBody === 'string' || response.errorBody === undefined
          ? errorBody(api, response.status, response.errorBody ?? `scripted error ${response.status}`)
          : response.errorBody;
      sendJson(res, response.status, payload, response.headers);
      return;
    }
    responseCounter += 1;
    const plan = planReply(response, recorded, () => `call_${++toolCallCounter}`);
    const model = typeof recorded.body?.model === 'string' ? recorded.body.model : 'model';
    if (recorded.body?.stream !== true) {
      sendWhole(res, response, renderWhole(api, plan, model, responseCounter));
      return;
    }
    const frames =
      api === 'openai-completions'
        ? openaiFrames(plan, model, responseCounter, recorded.body?.stream_options?.include_usage === true)
        : anthropicFrames(plan, model, responseCounter);
    await sendFrames(res, frames, response, lifetime.signal);
  };

  // Imported on use, so this entry also loads where no HTTP server exists (workerd imports the provider).
  const { createServer } = await import('node:http');
  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendJson(res, 500, { error: { message: `scripted model: ${describe(error)}` } });
      else res.destroy();
    });
  });
  // Clients in this process stop reusing an idle socket first (undici: after 4 s). With the
  // server's 5 s default, a request sent just as a busy event loop catches up can race the close.
  server.keepAliveTimeout = 60_000;
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    script(...steps) {
      queue.push(...steps);
    },
    reset() {
      queue.length = 0;
      requests.length = 0;
      toolCallCounter = 0;
      responseCounter = 0;
    },
    get requests() {
      return requests;
    },
    waitForRequests(count, timeoutMs = DEFAULT_WAIT_TIMEOUT_MS) {
      if (requests.length >= count) return Promise.resolve(requests.slice());
      return new Promise((resolve, reject) => {
        const waiter: Waiter = {
          count,
          resolve: (got) => {
            clearTimeout(timer);
            resolve(got);
          },
        };
        const timer = setTimeout(() => {
          waiters = waiters.filter((other) => other !== waiter);
          reject(new Error(`scripted model: waited ${timeoutMs} ms for ${count} request(s), got ${requests.length}`));
        }, timeoutMs);
        waiters.push(waiter);
      });
    },
    pending() {
      return queue.length;
    },
    close() {
      lifetime.abort();
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      });
    },
  };
}

function routeOf(method: string | undefined, path: string): ScriptedWireApi | undefined {
  if (method !== 'POST') return undefined;
  // pi-ai's Anthropic client posts to `/v1/messages?beta=true`: match the path alone.
  const pathname = path.split('?')[0]?.replace(/\/+$/, '');
  if (pathname === '/v1/chat/completions') return 'openai-completions';
  if (pathname === '/v1/messages') return 'anthropic-messages';
  return undefined;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

// ---------------------------------------------------------------------------------------------
// Transport

function sendJson(res: ServerResponse, status: number, payload: unknown, headers: Record<string, string> = {}): void {
  const body = JSON.stringify(payload);
  res.writeHead(status, {
    ...headers,
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}

function sendWhole(res: ServerResponse, response: ScriptedResponse, payload: unknown): void {
  if (response.hangAfterChunks !== undefined) return;
  if (response.dropAfterChunks !== undefined) {
    res.destroy();
    return;
  }
  sendJson(res, 200, payload, response.headers);
}

async function sendFrames(res: ServerResponse, frames: string[], response: ScriptedResponse, lifetime: AbortSignal): Promise<void> {
  let closed = false;
  res.on('close', () => {
    closed = true;
  });
  res.writeHead(200, {
    ...response.headers,
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
  // Headers go out now, so a client sees the response start even when zero chunks follow.
  res.flushHeaders();
  for (let i = 0; i < frames.length; i++) {
    if (response.hangAfterChunks === i) return;
    if (response.dropAfterChunks === i) {
      res.destroy();
      return;
    }
    if (i > 0 && response.chunkDelayMs) await sleep(response.chunkDelayMs, lifetime);
    if (closed || lifetime.aborted) return;
    await write(res, frames[i] as string);
  }
  if (response.hangAfterChunks !== undefined && response.hangAfterChunks >= frames.length) return;
  if (response.dropAfterChunks !== undefined && response.dropAfterChunks >= frames.length) {
    res.destroy();
    return;
  }
  if (!closed) res.end();
}

// Waits for the write to flush, so a following destroy() cannot discard chunks already "sent".
function write(res: ServerResponse, frame: string): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      res.off('close', done);
      resolve();
    };
    res.once('close', done);
    res.write(frame, done);
  });
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) {
      resolve();
      return;
    }
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
