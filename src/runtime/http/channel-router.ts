/**
 * `createChannelRouter(routes)`: the HTTP surface of a channel package.
 * A route comes in one of two shapes:
 *
 * - `{ method, path, handler }`, the shape channel packages declare: the handler (a Hono handler)
 *   verifies the webhook itself, dispatches, and answers. The router serves it as written.
 * - `{ method, path, verify, deliveries }`: the router reads the body, `verify` authenticates it,
 *   `deliveries` maps the verified event, and the router admits them with `dispatch()`, keyed by
 *   the platform's event id so a redelivered webhook is admitted once. Routes answer at
 *   admission: platforms retry webhooks that answer slowly.
 *
 * Either way the route is the verifier of what it admits, so its deliveries are trusted: they say
 * `origin: 'app'` and may be signals, unlike a client of createAgentRouter().
 */
import { Hono, type Context, type Handler } from 'hono';
import { dispatch } from '../host/addressing.ts';
import { readBoundedBody } from './bounded-body.ts';
import { FlueHttpError, MethodNotAllowedError, RouteNotFoundError } from '../common/errors.ts';
import { SECURITY_HEADERS, isDevMode, renderError } from './http-errors.ts';
import type { Agent } from '../authoring/identity.ts';
import { MAX_REQUEST_BODY_BYTES } from '../common/limits.ts';
import { requireRuntime } from '../host/runtime.ts';
import type { DeliveredMessageInput, DispatchReceipt } from '../common/types.ts';

/** What a route's hooks get: the request (its body already read), the body's bytes, and the host's env. */
export interface ChannelRequest {
  readonly request: Request;
  readonly body: Uint8Array<ArrayBuffer>;
  /** Cloudflare: the Worker's bindings; Node: what the server passes as Hono's env. */
  readonly env: unknown;
}

/** A webhook the route has authenticated: the platform's id for it, and the event itself. */
export interface ChannelVerifiedEvent<Event = unknown> {
  /**
   * Stable across the platform's redeliveries of the same event (GitHub: `X-GitHub-Delivery`).
   * Prefix it with the channel's name: it keys the admissions. At most 200 characters.
   */
  eventId: string;
  event: Event;
}

/** One message to admit, addressed like `dispatch()`. */
export interface ChannelDelivery {
  agent: Agent;
  id: string;
  message: DeliveredMessageInput;
  initialData?: unknown;
}

export type ChannelDeliveries = ChannelDelivery | readonly ChannelDelivery[] | null | undefined;

/**
 * A route whose handler does everything: verifies the webhook (signature over the raw body, replay
 * window), dispatches, answers. What channel packages declare in their `routes` array.
 */
export interface ChannelHandlerRoute {
  /** An HTTP method, e.g. `'POST'`. */
  method: string;
  /** Relative to the mount, starting with `/` (`'/'` is the mount itself). */
  path: string;
  /** A Hono handler. A `FlueHttpError` it throws renders as its envelope, anything else as a logged 500. */
  handler: Handler<any>;
}

/** One entry of a channel package's `routes` array: a handler route, or a verified route. */
export type ChannelRouteDefinition<Event = unknown> = ChannelHandlerRoute | ChannelVerifiedRoute<Event>;

/** A route the router verifies and admits for: `verify` then `deliveries`, then `dispatch()`. */
export interface ChannelVerifiedRoute<Event = unknown> {
  /** An HTTP method, e.g. `'POST'`. */
  method: string;
  /** Relative to the mount, starting with `/` (`'/'` is the mount itself). */
  path: string;
  /** Larger bodies are refused with 413 before `verify` runs. Default: the admission body limit. */
  maxBodyBytes?: number;
  /**
   * Authenticates the request. Returns the verified event, or returns or throws a
   * `ChannelRefusedError` (401/403); any other FlueHttpError (a 400 for a malformed header, a 415)
   * renders as itself.
   */
  verify(
    request: ChannelRequest,
  ): ChannelVerifiedEvent<Event> | ChannelRefusedError | Promise<ChannelVerifiedEvent<Event> | ChannelRefusedError>;
  /**
   * The deliveries a verified event becomes; none means the event is ignored (answered 200, nothing
   * admitted). Must be deterministic: a redelivery is matched to the first delivery by its position.
   */
  deliveries(verified: ChannelVerifiedEvent<Event>, request: ChannelRequest): ChannelDeliveries | Promise<ChannelDeliveries>;
}

/** What a route answers: 202 when anything was admitted, else 200 with `ignored: true`. */
export interface ChannelAdmission {
  eventId: string;
  ignored?: true;
  deliveries: (DispatchReceipt & { agent: string; id: string })[];
}

const REFUSAL_TYPES = { 401: 'channel_unauthenticated', 403: 'channel_forbidden' } as const;

/**
 * A channel route refusing a webhook: 401 `channel_unauthenticated` when it cannot tell who sent
 * it (missing or wrong signature), 403 `channel_forbidden` when the sender is known but not allowed.
 */
export class ChannelRefusedError extends FlueHttpError {
  constructor(status: 401 | 403, message: string, details: string) {
    if (status !== 401 && status !== 403) throw new TypeError(`ChannelRefusedError status must be 401 or 403; got ${String(status)}.`);
    super(REFUSAL_TYPES[status], status, { message, details });
    this.name = 'ChannelRefusedError';
  }
}

/** Event ids become idempotency keys (at most 256 characters) with a `#<index>` suffix. */
const MAX_EVENT_ID_LENGTH = 200;

const METHOD = /^[A-Z]+$/;

export function createChannelRouter(routes: readonly ChannelRouteDefinition<any>[]): Hono {
  const checked = checkRoutes(routes);
  const app = new Hono();
  // Hono's `route()` keeps a sub-app's own onError when it is mounted, so this holds anywhere.
  app.onError((error, c) => renderError(error, { devMode: isDevMode(), traceparent: c.req.header('traceparent') }));

  const methodsByPath = new Map<string, string[]>();
  for (const route of checked) {
    methodsByPath.set(route.path, [...(methodsByPath.get(route.path) ?? []), route.method]);
    if ('handler' in route) app.on(route.method, route.path, route.handler);
    else app.on(route.method, route.path, (c) => serve(route, c));
  }
  for (const [path, methods] of methodsByPath) {
    app.all(path, () => {
      throw new MethodNotAllowedError(methods);
    });
  }
  // Unmatched paths under the mount are ours to answer, in the envelope.
  app.all('*', () => {
    throw new RouteNotFoundError();
  });
  return app;
}

async function serve(route: ChannelVerifiedRoute, c: Context): Promise<Response> {
  const body = await readBoundedBody(c.req.raw, route.maxBodyBytes ?? MAX_REQUEST_BODY_BYTES);
  const request: ChannelRequest = { request: c.req.raw, body, env: c.env };
  const verdict = await route.verify(request);
  if (verdict instanceof Error) throw verdict;
  const eventId = verifiedEventId(route, verdict);
  const deliveries = normalize(route, await route.deliveries(verdict, request));
  if (deliveries.length === 0) return json(c, { eventId, ignored: true, deliveries: [] } satisfies ChannelAdmission, 200);
  // Concurrent: a failure answers 5xx, the platform redelivers, and the keys skip what got in.
  const receipts = await Promise.all(deliveries.map((delivery, index) => admit(route, eventId, delivery, index)));
  return json(c, { eventId, deliveries: receipts } satisfies ChannelAdmission, 202);
}

async function admit(route: ChannelVerifiedRoute, eventId: string, delivery: ChannelDelivery, index: number) {
  const agent = requireRuntime('createChannelRouter()').registry.identityOf(delivery.agent);
  try {
    const receipt = await dispatch(delivery.agent, {
      id: delivery.id,
      message: delivery.message,
      idempotencyKey: `${eventId}#${index}`,
      ...(delivery.initialData === undefined ? {} : { initialData: delivery.initialData }),
    });
    return { agent, id: delivery.id, ...receipt };
  } catch (error) {
    // The mapping built the delivery from a verified event, so a refusal of it is this server's
    // bug, not the sender's: a logged 500, never a 4xx the platform would read as its fault.
    if (error instanceof FlueHttpError && error.status < 500) {
      throw new Error(
        `[flue] ${describe(route)} mapped event "${eventId}" to a delivery for ${agent} "${delivery.id}" that dispatch() refused: ${error.message}`,
        { cause: error },
      );
    }
    throw error;
  }
}

function verifiedEventId(route: ChannelVerifiedRoute, verdict: unknown): string {
  const eventId = (verdict as Partial<ChannelVerifiedEvent> | null)?.eventId;
  if (
    typeof verdict !== 'object' ||
    verdict === null ||
    typeof eventId !== 'string' ||
    eventId.trim() === '' ||
    eventId.length > MAX_EVENT_ID_LENGTH
  ) {
    throw new Error(
      `[flue] ${describe(route)}: verify() must return { eventId, event } with a non-empty eventId of at most ${MAX_EVENT_ID_LENGTH} characters, or a ChannelRefusedError.`,
    );
  }
  return eventId;
}

function normalize(route: ChannelVerifiedRoute, value: unknown): ChannelDelivery[] {
  if (value === null || value === undefined) return [];
  const list = Array.isArray(value) ? value : [value];
  list.forEach((delivery, index) => {
    const { agent, id, message } = (delivery ?? {}) as Partial<ChannelDelivery>;
    if (
      typeof delivery !== 'object' ||
      delivery === null ||
      typeof agent !== 'function' ||
      typeof id !== 'string' ||
      message === undefined
    ) {
      throw new Error(
        `[flue] ${describe(route)}: deliveries() entry ${index} must be { agent, id, message, initialData? } with an agent function and a string id.`,
      );
    }
  });
  return list as ChannelDelivery[];
}

/** Checked at creation, so a typo is a startup error rather than a webhook answered 404. */
function checkRoutes(routes: unknown): ChannelRouteDefinition[] {
  if (!Array.isArray(routes))
    throw new Error("[flue] createChannelRouter() takes an array of route definitions (a channel package's routes).");
  const seen = new Set<string>();
  return routes.map((route: unknown, index) => {
    const where = `createChannelRouter() route ${index}`;
    if (typeof route !== 'object' || route === null) {
      throw new Error(`[flue] ${where} must be an object { method, path, handler } or { method, path, verify, deliveries }.`);
    }
    const { method, path, handler, verify, deliveries, maxBodyBytes } = route as Partial<ChannelHandlerRoute & ChannelVerifiedRoute>;
    if (typeof method !== 'string' || !METHOD.test(method.toUpperCase()))
      throw new Error(`[flue] ${where}: method must be an HTTP method such as "POST"; got ${JSON.stringify(method)}.`);
    if (typeof path !== 'string' || !path.startsWith('/'))
      throw new Error(`[flue] ${where}: path must be a string starting with "/"; got ${JSON.stringify(path)}.`);
    if (handler !== undefined) {
      if (typeof handler !== 'function')
        throw new Error(`[flue] ${where}: handler must be a function (c) => Response that verifies the webhook and answers it.`);
      // Two ways to verify one request would leave it unclear which one ran: a route picks one.
      if (verify !== undefined || deliveries !== undefined || maxBodyBytes !== undefined) {
        throw new Error(
          `[flue] ${where} has a handler and verify/deliveries/maxBodyBytes: give either a handler (it verifies the webhook itself) or verify and deliveries, not both.`,
        );
      }
    } else {
      if (typeof verify !== 'function')
        throw new Error(
          `[flue] ${where}: give a handler (c) => Response that verifies the webhook itself, or verify, a function authenticating the request, with deliveries.`,
        );
      if (typeof deliveries !== 'function')
        throw new Error(`[flue] ${where}: deliveries must be a function mapping the verified event to deliveries.`);
      if (maxBodyBytes !== undefined && !(Number.isSafeInteger(maxBodyBytes) && maxBodyBytes > 0)) {
        throw new Error(`[flue] ${where}: maxBodyBytes must be a positive integer; got ${JSON.stringify(maxBodyBytes)}.`);
      }
    }
    const normalized = { ...(route as ChannelRouteDefinition), method: method.toUpperCase() };
    const key = `${normalized.method} ${path}`;
    if (seen.has(key)) throw new Error(`[flue] ${where} repeats ${key}: each method and path may be served once.`);
    seen.add(key);
    return normalized;
  });
}

function describe(route: ChannelVerifiedRoute): string {
  return `channel route ${route.method} ${route.path}`;
}

function json(c: Context, body: ChannelAdmission, status: 200 | 202): Response {
  return c.body(JSON.stringify(body), status, { 'content-type': 'application/json', ...SECURITY_HEADERS });
}
