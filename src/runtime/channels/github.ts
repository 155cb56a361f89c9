/**
 * `@flue/runtime/channels/github`: GitHub webhooks as deliveries. A request is admitted only when
 * `X-Hub-Signature-256` is the HMAC-SHA256 of the raw body under the webhook's secret; each
 * `X-GitHub-Delivery` is admitted once, so GitHub's redeliveries are harmless.
 */
import type { Hono } from 'hono';
import {
  ChannelRefusedError,
  createChannelRouter,
  type ChannelDeliveries,
  type ChannelRequest,
  type ChannelRouteDefinition,
  type ChannelVerifiedRoute,
  type ChannelVerifiedEvent,
} from '../http/channel-router.ts';
import { InvalidRequestError } from '../common/errors.ts';
import { InvalidJsonError, UnsupportedMediaTypeError } from '../http/http-errors.ts';

/** A verified webhook, as the channel's routes receive it. */
export interface GitHubWebhookEvent {
  /** `X-GitHub-Event`, e.g. `'issues'`, `'pull_request'`, `'ping'`. */
  name: string;
  /** `X-GitHub-Delivery`: one id per event, kept by redeliveries. */
  deliveryId: string;
  /** `X-GitHub-Hook-ID`, when sent. */
  hookId?: string;
  /** `payload.action` when it is a string (most events have one: `'opened'`, `'closed'`…). */
  action?: string;
  /** The parsed JSON payload, as GitHub documents it per event. */
  payload: Record<string, any>;
}

/** Maps one event type to its deliveries; nothing returned means the event is ignored. */
export type GitHubEventRoute = (event: GitHubWebhookEvent, request: ChannelRequest) => ChannelDeliveries | Promise<ChannelDeliveries>;

export interface GitHubChannelOptions {
  /**
   * The webhook's secret, or a function reading it from the host's env per request (Cloudflare:
   * the Worker's bindings, e.g. a secret set with `wrangler secret put`).
   */
  secret: string | ((env: unknown) => string | Promise<string>);
  /** Keyed by `X-GitHub-Event`. Events without a route are answered 200 `ignored` and not admitted. */
  routes: Record<string, GitHubEventRoute>;
  /** Relative to the mount; default `'/'`, the mount itself. */
  path?: string;
  /** Default 25 MiB, the most GitHub sends. */
  maxBodyBytes?: number;
}

export interface GitHubChannel {
  /** The declarative route, for `createChannelRouter()` alongside other channels' routes. */
  readonly routes: ChannelRouteDefinition<GitHubWebhookEvent>[];
  /** `createChannelRouter(routes)`: mount with `app.route('/channels/github', github.route())`. */
  route(): Hono;
}

const GITHUB_MAX_PAYLOAD_BYTES = 25 * 1024 * 1024;
const SIGNATURE = /^sha256=([0-9a-f]{64})$/i;
/** GitHub sends GUIDs; anything printable and short is accepted, since it only keys admissions. */
const DELIVERY_ID = /^[\x21-\x7e]{1,128}$/;
const EVENT_NAME = /^[a-z0-9_.-]{1,64}$/i;

export function githubChannel(options: GitHubChannelOptions): GitHubChannel {
  const { secret, routes, path = '/', maxBodyBytes = GITHUB_MAX_PAYLOAD_BYTES } = checkOptions(options);
  const keys = new KeyCache();

  const definition: ChannelVerifiedRoute<GitHubWebhookEvent> = {
    method: 'POST',
    path,
    maxBodyBytes,
    async verify(request) {
      const key = await keys.get(typeof secret === 'string' ? secret : await secret(request.env));
      const headers = request.request.headers;
      const header = headers.get('x-hub-signature-256');
      const match = header === null ? null : SIGNATURE.exec(header.trim());
      if (match === null) {
        return new ChannelRefusedError(
          401,
          header === null ? 'The X-Hub-Signature-256 header is missing.' : 'The X-Hub-Signature-256 header is malformed.',
          'Configure the webhook with a secret; GitHub then signs each delivery as "sha256=<64 hex digits>".',
        );
      }
      // subtle.verify compares in constant time, so the comparison leaks nothing about the secret.
      if (!(await crypto.subtle.verify('HMAC', key, hexBytes(match[1]!), request.body))) {
        return new ChannelRefusedError(
          401,
          'The X-Hub-Signature-256 signature does not match the body.',
          'The webhook secret differs from the one configured here, or the body was changed in transit.',
        );
      }
      const name = requiredHeader(headers, 'X-GitHub-Event', EVENT_NAME);
      const deliveryId = requiredHeader(headers, 'X-GitHub-Delivery', DELIVERY_ID);
      const payload = parsePayload(headers.get('content-type'), request.body);
      const hookId = headers.get('x-github-hook-id');
      const event: GitHubWebhookEvent = {
        name,
        deliveryId,
        ...(hookId === null ? {} : { hookId }),
        ...(typeof payload.action === 'string' ? { action: payload.action } : {}),
        payload,
      };
      return { eventId: `github:${deliveryId}`, event } satisfies ChannelVerifiedEvent<GitHubWebhookEvent>;
    },
    deliveries({ event }, request) {
      // Own properties only: an event named "constructor" must not reach Object.prototype.
      return Object.hasOwn(routes, event.name) ? routes[event.name]!(event, request) : null;
    },
  };

  return {
    routes: [definition],
    route: () => createChannelRouter([definition]),
  };
}

function checkOptions(options: GitHubChannelOptions): GitHubChannelOptions {
  if (typeof options !== 'object' || options === null) throw new Error('[flue] githubChannel() takes { secret, routes }.');
  const { secret, routes, path, maxBodyBytes } = options;
  if (!(typeof secret === 'function' || (typeof secret === 'string' && secret !== ''))) {
    throw new Error(
      '[flue] githubChannel() option "secret" must be the webhook\'s secret (a non-empty string) or a function reading it from env.',
    );
  }
  if (typeof routes !== 'object' || routes === null || Array.isArray(routes)) {
    throw new Error(
      '[flue] githubChannel() option "routes" must be an object keyed by event name, e.g. { issues: (event) => ({ agent, id, message }) }.',
    );
  }
  for (const [name, route] of Object.entries(routes)) {
    if (typeof route !== 'function')
      throw new Error(`[flue] githubChannel() option routes.${name} must be a function mapping the event to deliveries.`);
  }
  if (path !== undefined && (typeof path !== 'string' || !path.startsWith('/'))) {
    throw new Error(`[flue] githubChannel() option "path" must start with "/"; got ${JSON.stringify(path)}.`);
  }
  if (maxBodyBytes !== undefined && !(Number.isSafeInteger(maxBodyBytes) && maxBodyBytes > 0)) {
    throw new Error(`[flue] githubChannel() option "maxBodyBytes" must be a positive integer; got ${JSON.stringify(maxBodyBytes)}.`);
  }
  return options;
}

/** Imported HMAC keys by secret: importing per request would be wasted work, and a secret read from env may rotate. */
class KeyCache {
  #secret: string | undefined;
  #key: Promise<CryptoKey> | undefined;

  get(secret: string): Promise<CryptoKey> {
    if (typeof secret !== 'string' || secret === '') {
      return Promise.reject(
        new Error('[flue] githubChannel() "secret" resolved to an empty or non-string value; set the webhook secret in env.'),
      );
    }
    if (secret !== this.#secret || this.#key === undefined) {
      this.#secret = secret;
      this.#key = crypto.subtle.importKey('raw', new TextEncoder().encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['verify']);
    }
    return this.#key;
  }
}

function requiredHeader(headers: Headers, name: string, shape: RegExp): string {
  const value = headers.get(name);
  if (value === null || !shape.test(value)) {
    throw new InvalidRequestError(
      value === null ? `The ${name} header is missing.` : `The ${name} header is malformed.`,
      `GitHub sends ${name} with every webhook delivery.`,
    );
  }
  return value;
}

/** GitHub offers two content types for a webhook: the JSON itself, or a form with a `payload` field. */
function parsePayload(contentType: string | null, body: Uint8Array<ArrayBuffer>): Record<string, any> {
  const type = contentType?.split(';')[0]!.trim().toLowerCase();
  const text = new TextDecoder().decode(body);
  let json: string | null;
  if (type === 'application/json') json = text;
  else if (type === 'application/x-www-form-urlencoded') json = new URLSearchParams(text).get('payload');
  else throw new UnsupportedMediaTypeError(contentType ?? undefined);
  if (json === null)
    throw new InvalidRequestError('The form body has no "payload" field.', 'GitHub sends form-encoded webhooks as payload=<JSON>.');
  let payload: unknown;
  try {
    payload = JSON.parse(json);
  } catch (error) {
    throw new InvalidJsonError(error instanceof Error ? error.message : 'The payload could not be parsed.');
  }
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) {
    throw new InvalidRequestError('The webhook payload must be a JSON object.', 'GitHub sends every event payload as an object.');
  }
  return payload as Record<string, any>;
}

function hexBytes(hex: string): Uint8Array<ArrayBuffer> {
  const bytes = new Uint8Array(hex.length / 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = Number.parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return bytes;
}
