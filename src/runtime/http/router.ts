/**
 * `createAgentRouter(agent)`: the HTTP surface of one agent, speaking the
 * conversation wire protocol that the official `@flue/sdk` and
 * `@flue/react` clients read. A pure factory: the runtime is resolved per request, and storage is
 * keyed by agent identity and instance id, never by where the router is mounted.
 *
 * The router cannot know who is calling: its deliveries say `origin: 'http'`, its idempotency keys
 * live apart from trusted code's, and it refuses signals unless the mount opts in.
 */
import { Hono, type Context } from 'hono';
import { stream } from 'hono/streaming';
import type { StreamingApi } from 'hono/utils/stream';
import { formatOffset } from '../engine/conversation.ts';
import { parseDeliveredMessage } from '../engine/delivered-message.ts';
import { parseAdmissionFields } from '../host/admission-fields.ts';
import { readBoundedBody } from './bounded-body.ts';
import type { AdmissionRequest } from '../engine/verbs.ts';
import {
  AttachmentNotFoundError,
  FlueHttpError,
  InvalidRequestError,
  MethodNotAllowedError,
  RouteNotFoundError,
  SignalNotAcceptedError,
  StreamNotFoundError,
  StreamOffsetGoneError,
} from '../common/errors.ts';
import { InvalidJsonError, SECURITY_HEADERS, UnsupportedMediaTypeError, defaultLogger, isDevMode, renderError } from './http-errors.ts';
import { type Agent, resolveAgentIdentity } from '../authoring/identity.ts';
import { MAX_TOKEN_LENGTH, assertInstanceIdShape, assertText, mimeTypeProblem, quoted } from '../common/input-limits.ts';
import { newId } from '../common/ids.ts';
import { registrationHint } from '../common/host-kind.ts';
import { MAX_REQUEST_BODY_BYTES, checkDeliveredMessage } from '../common/limits.ts';
import type { ConversationStreamChunk } from '../engine/projection.ts';
import { type FlueRuntime, type UpdatesResult, requireRuntime } from '../host/runtime.ts';

/** Waiting windows of the live modes; only tests shorten them. */
export interface RouterTiming {
  /** How long a caught-up long-poll parks, and a caught-up SSE connection waits between controls. */
  waitMs: number;
  /** Interval of SSE `: heartbeat` comments. */
  heartbeatMs: number;
}

/** Load-bearing: the SDK treats a stream silent for 90 s as dead. */
export const DEFAULT_ROUTER_TIMING: Readonly<RouterTiming> = Object.freeze({ waitMs: 30_000, heartbeatMs: 15_000 });

/** Batches per plain read, long-poll answer and SSE loop step (streaming-protocol.md §6). */
const MAX_BATCHES = 100;

// `[^/]*` rather than the default `[^/]+`, so an empty id reaches a handler and gets its 400
// instead of falling through to a 404.
const ID = '/:id{[^/]*}';
const ABORT = `${ID}/abort`;
const ATTACHMENT = `${ID}/attachments/:attachmentId{[^/]*}`;

/** The second argument of `createAgentRouter()`. */
export interface AgentRouterOptions {
  /**
   * Admit `kind: 'signal'` bodies from clients (default `false`: they are refused with 403
   * `signal_not_accepted`). The router cannot tell who posted a message, and agents often act on
   * a signal's attributes (an approval, a customer id), so opt in only where every client that can
   * reach this mount may send any signal. Such deliveries still say `origin: 'http'`.
   */
  signals?: boolean;
}

const ROUTER_OPTION_KEYS = new Set<string>(['signals']);

export function createAgentRouter(agent: Agent, options?: AgentRouterOptions): Hono {
  return buildAgentRouter(agent, {}, options);
}

/** `createAgentRouter` with adjustable waiting windows; internal, for tests. */
export function buildAgentRouter(agent: Agent, timing: Partial<RouterTiming> = {}, options?: AgentRouterOptions): Hono {
  // Throws at creation for an anonymous or invalid identity (delivery.md §10), or bad options.
  const identity = resolveAgentIdentity(agent);
  const { signals } = routerOptions(options);
  const { waitMs, heartbeatMs } = { ...DEFAULT_ROUTER_TIMING, ...timing };
  const target = () => resolveTarget(agent, identity);

  const app = new Hono();
  // Hono's `route()` keeps a sub-app's own onError when it is mounted, so this holds anywhere.
  app.onError((error, c) => renderError(error, { devMode: isDevMode(), traceparent: c.req.header('traceparent') }));

  app.post(ID, async (c) => {
    const id = instanceId(c);
    if (c.req.queries('wait') !== undefined) {
      throw new InvalidRequestError(
        'The "wait" query parameter is not supported.',
        'Admission answers 202 at once; follow the stream (view=updates) for the outcome.',
      );
    }
    const request = parseAdmission(id, await readJsonBody(c));
    // After validation, so a malformed signal still gets its 400 explaining what is wrong.
    if (request.message.kind === 'signal' && !signals) throw new SignalNotAcceptedError();
    checkDeliveredMessage(request.message, request.initialData);
    const { runtime, agentName } = target();
    const { receipt, head } = await runtime.admit(agentName, request, 'http');
    const streamUrl = conversationUrl(c.req.url);
    // A keyed replay does not know the original's offset; clients then read from the start (delivery.md §3).
    const offset = receipt.deduplicated ? '-1' : formatOffset(head);
    const body = {
      streamUrl,
      offset,
      submissionId: receipt.submissionId,
      uid: receipt.uid,
      ...(receipt.deduplicated ? { deduplicated: true } : {}),
    };
    return json(c, body, 202, { location: streamUrl, 'stream-next-offset': offset });
  });

  // Hono answers HEAD with this GET handler and drops the body, errors included (errors.md §2).
  app.get(ID, async (c) => {
    const id = instanceId(c);
    if (c.req.method === 'HEAD') return headOf(c, id);
    const view = singleQuery(c, 'view') ?? 'history';
    if (view === 'history') return historyOf(c, id);
    if (view === 'updates') return updatesOf(c, id);
    throw new InvalidRequestError(`Unknown view ${quoted(view)}.`, 'view must be "history" (the default) or "updates".');
  });

  app.all(ID, () => {
    throw new MethodNotAllowedError(['GET', 'HEAD', 'POST']);
  });

  app.post(ABORT, async (c) => {
    const id = instanceId(c);
    const { runtime, agentName } = target();
    return json(c, { aborted: await runtime.abort(agentName, id) }, 200, {});
  });
  app.all(ABORT, () => {
    throw new MethodNotAllowedError(['POST']);
  });

  app.get(ATTACHMENT, async (c) => {
    const id = instanceId(c);
    const attachmentId = c.req.param('attachmentId') ?? '';
    assertText(attachmentId, 'attachmentId', MAX_TOKEN_LENGTH, 'The attachment id is malformed.');
    const { runtime, agentName } = target();
    const found = await runtime.attachment(agentName, id, attachmentId);
    if (found === undefined) throw new StreamNotFoundError(id);
    if (found === null) throw new AttachmentNotFoundError(attachmentId);
    return c.body(found.bytes, 200, {
      // Admission checks mimeType; one stored before that check may not be a valid header value.
      'content-type': mimeTypeProblem(found.mimeType) === undefined ? found.mimeType : 'application/octet-stream',
      'content-length': String(found.bytes.byteLength),
      'content-disposition': 'inline',
      'cache-control': 'private, max-age=31536000, immutable',
      // Bytes are caller-supplied: a sandboxed, non-sniffed document cannot script our origin.
      'content-security-policy': 'sandbox',
      ...SECURITY_HEADERS,
    });
  });
  app.all(ATTACHMENT, () => {
    throw new MethodNotAllowedError(['GET']);
  });

  // Anything else under the mount is ours to answer: without this, a mounted router's unmatched
  // paths would fall through to the parent's notFound and lose the protocol's envelope.
  app.all('*', () => {
    throw new RouteNotFoundError();
  });

  // ── reads ──────────────────────────────────────────────────────────────────────────────────

  async function headOf(c: Context, id: string): Promise<Response> {
    const { runtime, agentName } = target();
    const head = await runtime.streamHead(agentName, id);
    // Thrown like any error: Hono's HEAD handling strips the envelope body, leaving the headers.
    if (head === null) throw new StreamNotFoundError(id);
    return c.body(null, 200, {
      'content-type': 'application/json',
      'cache-control': 'no-store',
      'stream-next-offset': formatOffset(head.head),
      'stream-up-to-date': 'true',
      ...SECURITY_HEADERS,
    });
  }

  async function historyOf(c: Context, id: string): Promise<Response> {
    for (const name of ['offset', 'tail', 'live']) {
      if (c.req.queries(name) !== undefined) {
        throw new InvalidRequestError(
          `"${name}" is not allowed on the history view.`,
          'Use view=updates with an offset to read increments.',
        );
      }
    }
    const { runtime, agentName } = target();
    const snapshot = await runtime.history(agentName, id);
    if (snapshot === null) throw new StreamNotFoundError(id);
    return json(c, snapshot, 200, {
      'cache-control': 'no-store',
      'stream-next-offset': snapshot.offset,
      'stream-up-to-date': 'true',
    });
  }

  async function updatesOf(c: Context, id: string): Promise<Response> {
    // Validation first, so a caller mistake is a 4xx even without a runtime (§11 item 6).
    if (c.req.queries('tail') !== undefined) {
      throw new InvalidRequestError('"tail" is not supported.', 'Read from an offset the server gave you, or from "-1".');
    }
    const offsets = c.req.queries('offset');
    if (offsets === undefined || offsets.length !== 1) {
      throw new InvalidRequestError(
        offsets === undefined ? 'The updates view requires an offset.' : 'The offset query parameter is repeated.',
        'Pass exactly one offset: "-1" or a value from Stream-Next-Offset.',
      );
    }
    const offset = offsets[0]!;
    assertText(offset, 'offset', MAX_TOKEN_LENGTH, 'The offset query parameter is malformed.');
    const afterSeq = parseOffset(offset);
    const live = singleQuery(c, 'live');
    if (live !== undefined && live !== 'long-poll' && live !== 'sse') {
      throw new InvalidRequestError(`Unknown live mode ${quoted(live)}.`, 'live must be "long-poll" or "sse", or absent for a plain read.');
    }
    const { runtime, agentName } = target();
    const read = async (seq: number, wait: number, signal?: AbortSignal) =>
      runtime.updates(agentName, id, seq, { waitMs: wait, maxBatches: MAX_BATCHES, ...(signal ? { signal } : {}) });

    if (live === 'sse') {
      // 404/416 must be decided before the event-stream headers commit (§6).
      const first = okOrThrow(await read(afterSeq, 0), id, offset);
      return sse(c, first, read);
    }
    if (live === 'long-poll') {
      const signal = c.req.raw.signal;
      let result: UpdatesResult;
      try {
        result = await read(afterSeq, waitMs, signal);
      } catch (error) {
        if (signal.aborted) return clientClosed();
        throw error;
      }
      if (signal.aborted) return clientClosed();
      return updatesResponse(c, okOrThrow(result, id, offset));
    }
    return updatesResponse(c, okOrThrow(await read(afterSeq, 0), id, offset));
  }

  /**
   * The SSE loop of §6: a `[checkpoint]` data event, then per read an optional data event and
   * always a control event; caught up, it waits for an append or the window; heartbeats between.
   */
  function sse(c: Context, first: OkRead, read: (seq: number, wait: number, signal: AbortSignal) => Promise<UpdatesResult>): Response {
    c.header('content-type', 'text/event-stream');
    c.header('cache-control', 'no-cache');
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) c.header(name, value);
    return stream(c, async (out) => {
      const closed = new AbortController();
      const close = () => closed.abort();
      out.onAbort(close);
      c.req.raw.signal.addEventListener('abort', close, { once: true });
      const heartbeat = setInterval(() => void out.write(': heartbeat\n\n'), heartbeatMs);
      try {
        await out.write(sseEvent('data', [checkpoint(first.incarnation)]));
        let current = first;
        while (!closed.signal.aborted) {
          await writeRead(out, current);
          const next = await read(current.nextSeq, current.upToDate ? waitMs : 0, closed.signal);
          // A wiped or recreated stream ends the connection; the client's reconnect gets the
          // 404/416 or the new incarnation's checkpoint.
          if (closed.signal.aborted || next.kind !== 'ok' || next.incarnation !== first.incarnation) break;
          current = next;
        }
      } catch (error) {
        // Headers are committed: a failure can only end the stream (errors.md §2). Expected ones
        // (a runtime draining or reloading) end it quietly; the client reconnects. Others are logged.
        if (!closed.signal.aborted && !(error instanceof FlueHttpError)) defaultLogger(c.req.header('traceparent'))(newId('err'), error);
      } finally {
        clearInterval(heartbeat);
        c.req.raw.signal.removeEventListener('abort', close);
      }
    });
  }

  return app;
}

// ── helpers ─────────────────────────────────────────────────────────────────────────────────

/** Checked at creation: a misspelt key (`signal: true`) must not silently leave signals refused or allowed. */
function routerOptions(options: unknown): Required<AgentRouterOptions> {
  if (options === undefined) return { signals: false };
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new Error('[flue] createAgentRouter() options must be a plain object, e.g. { signals: true }.');
  }
  for (const key of Object.keys(options)) {
    if (!ROUTER_OPTION_KEYS.has(key)) {
      throw new Error(`[flue] createAgentRouter() got an unknown option "${key}". Known options: ${[...ROUTER_OPTION_KEYS].join(', ')}.`);
    }
  }
  const { signals } = options as AgentRouterOptions;
  if (signals !== undefined && typeof signals !== 'boolean') {
    throw new Error(`[flue] createAgentRouter() option "signals" must be a boolean; got ${JSON.stringify(signals)}.`);
  }
  return { signals: signals ?? false };
}

type OkRead = Extract<UpdatesResult, { kind: 'ok' }>;

/**
 * The runtime is looked up per request (a router may be built before bootstrap). A function
 * registered under an entry name uses that name; otherwise the identity resolved at creation
 * (a reloaded module's new function value still maps to its storage).
 */
function resolveTarget(agent: Agent, identity: string): { runtime: FlueRuntime; agentName: string } {
  const runtime = requireRuntime('createAgentRouter()');
  const { registry } = runtime;
  if (registry.has(agent)) return { runtime, agentName: registry.identityOf(agent) };
  if (registry.get(identity) !== undefined) return { runtime, agentName: identity };
  throw new Error(`[flue] createAgentRouter() serves agent "${identity}", which is not registered in this app. ${registrationHint()}`);
}

function instanceId(c: Context): string {
  const id = c.req.param('id') ?? '';
  // Whitespace-only counts as empty, as for dispatch() (delivery.md §2).
  if (id.trim() === '') {
    throw new InvalidRequestError('The instance id is empty.', 'The URL must name an agent instance: <mount path>/<id>.');
  }
  // A NUL would otherwise reach storage and address the conversation named by the text before it.
  assertInstanceIdShape(id);
  return id;
}

/** A query parameter that may appear at most once; repeats are ambiguous, so rejected. */
function singleQuery(c: Context, name: string): string | undefined {
  const values = c.req.queries(name);
  if (values === undefined) return undefined;
  if (values.length > 1) throw new InvalidRequestError(`The ${name} query parameter is repeated.`, `Pass ${name} at most once.`);
  assertText(values[0]!, name, MAX_TOKEN_LENGTH, `The ${name} query parameter is malformed.`);
  return values[0];
}

/** `-1`, or `<digits>_<digits>` compared on the second component; padding optional (§2). */
function parseOffset(offset: string): number {
  if (offset === '-1') return -1;
  const match = /^\d+_(\d+)$/.exec(offset);
  if (match === null) {
    throw new InvalidRequestError(
      `Malformed offset ${quoted(offset)}.`,
      'An offset is "-1" or a value from Stream-Next-Offset, e.g. 0000000000000000_0000000000000003.',
    );
  }
  return Number(match[1]);
}

function okOrThrow(result: UpdatesResult, id: string, offset: string): OkRead {
  if (result.kind === 'not_found') throw new StreamNotFoundError(id);
  if (result.kind === 'gone') throw new StreamOffsetGoneError(offset, formatOffset(result.head));
  return result;
}

function checkpoint(incarnation: string): ConversationStreamChunk {
  return { type: 'stream-checkpoint', incarnation };
}

/** Plain and long-poll answers: `[checkpoint, ...chunks]` (§6). */
function updatesResponse(c: Context, read: OkRead): Response {
  return json(c, [checkpoint(read.incarnation), ...read.chunks], 200, {
    'cache-control': 'no-store',
    'stream-next-offset': formatOffset(read.nextSeq),
    // The DS client tests presence, not value: send it only when true (§3).
    ...(read.upToDate ? { 'stream-up-to-date': 'true' } : {}),
  });
}

/** The original's framing: no space after `data:` (§6). JSON never contains a raw newline. */
function sseEvent(event: 'data' | 'control', payload: unknown): string {
  return `event: ${event}\ndata:${JSON.stringify(payload)}\n\n`;
}

async function writeRead(out: StreamingApi, read: OkRead): Promise<void> {
  if (read.chunks.length > 0) await out.write(sseEvent('data', read.chunks));
  const control = { streamNextOffset: formatOffset(read.nextSeq), ...(read.upToDate ? { upToDate: true } : {}) };
  await out.write(sseEvent('control', control));
}

/** A parked long-poll whose client went away: 499, empty body (errors.md §2). */
function clientClosed(): Response {
  return new Response(null, { status: 499 });
}

function json(c: Context, body: unknown, status: 200 | 202, headers: Record<string, string>): Response {
  return c.body(JSON.stringify(body), status, { 'content-type': 'application/json', ...SECURITY_HEADERS, ...headers });
}

/** The absolute URL the client posted to, without query or fragment (§4). */
function conversationUrl(requestUrl: string): string {
  const url = new URL(requestUrl);
  url.search = '';
  url.hash = '';
  return url.href;
}

const JSON_CONTENT_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;

/**
 * Hono's json validator reports bad JSON and a wrong content type with its own 400, which is not
 * our envelope's `invalid_json`/415 split (§4), so the body is read here.
 */
async function readJsonBody(c: Context): Promise<unknown> {
  const text = new TextDecoder().decode(await readBoundedBody(c.req.raw, MAX_REQUEST_BODY_BYTES));
  if (text === '') {
    throw new InvalidRequestError(
      'The request body is missing.',
      'POST a DeliveredMessage object as JSON, e.g. {"kind":"user","body":"Hi"}.',
    );
  }
  const contentType = c.req.header('content-type');
  if (contentType === undefined || !JSON_CONTENT_TYPE.test(contentType)) throw new UnsupportedMediaTypeError(contentType);
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new InvalidJsonError(error instanceof Error ? error.message : 'The body could not be parsed.');
  }
}

/**
 * The body is one object: reserved siblings plus the message fields (§4). Checks follow
 * dispatch()'s order — message, key, uid, uid with initialData — so both transports agree.
 */
function parseAdmission(id: string, body: unknown): AdmissionRequest {
  if (typeof body === 'string') parseDeliveredMessage(body, { allowString: false }); // throws: shorthand
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new InvalidRequestError(
      'The request body must be a JSON object.',
      'POST a DeliveredMessage object, e.g. {"kind":"user","body":"Hi"}.',
    );
  }
  const { initialData, uid, idempotencyKey, ...fields } = body as Record<string, unknown>;
  const message = parseDeliveredMessage(fields, { allowString: false });
  return { id, message, ...parseAdmissionFields({ uid, idempotencyKey, initialData }) };
}
