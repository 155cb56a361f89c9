/**
 * createChannelRouter(routes) with hand-written routes: creation checks, the envelope for refusals
 * and unknown paths or methods, several deliveries per event, and a mapping bug as a logged 500.
 */
import { Hono } from 'hono';
import { describe, expect, it, vi } from 'vitest';
import {
  ChannelRefusedError,
  createChannelRouter,
  dispatch,
  getAgentInstance,
  init,
  useModel,
  type ChannelRouteDefinition,
} from '@flue/runtime';
import { useScriptedRuntime } from '../../../test/support/scripted-runtime.ts';
import { MAX_REQUEST_BODY_BYTES } from '../common/limits.ts';

const ctx = useScriptedRuntime();

function Inbox() {
  useModel('anthropic/claude-haiku-4-5');
  return 'Read the inbox.';
}

/** Verifies a shared token header; the body is `{ id, to: string[] }`. */
const tokenRoute: ChannelRouteDefinition<{ id: string; to: string[] }> = {
  method: 'post',
  path: '/hook',
  verify({ request, body }) {
    const token = request.headers.get('x-token');
    if (token === null) return new ChannelRefusedError(401, 'The X-Token header is missing.', 'Send the shared token.');
    if (token !== 'good') throw new ChannelRefusedError(403, 'This token may not post here.', 'Use the token of this channel.');
    const event = JSON.parse(new TextDecoder().decode(body)) as { id: string; to: string[] };
    return { eventId: `test:${event.id}`, event };
  },
  deliveries({ event }) {
    return event.to.map((to) => ({ agent: Inbox, id: to, message: { kind: 'signal' as const, type: 'mail', body: event.id } }));
  },
};

/**
 * The shape channel packages declare: `{ method, path, handler }`, the handler verifying the
 * webhook itself (an HMAC over the raw body here, as a package would), dispatching, and answering.
 */
const handlerRoute: ChannelRouteDefinition = {
  method: 'POST',
  path: '/events',
  async handler(c) {
    const raw = await c.req.text();
    if (c.req.header('x-signature') !== `sig:${raw.length}`) return c.json({ error: 'bad signature' }, 401);
    const event = JSON.parse(raw) as { id: string; to: string };
    if (event.to === '') throw new ChannelRefusedError(403, 'No recipient.', 'Name one.');
    const receipt = await dispatch(Inbox, {
      id: event.to,
      message: { kind: 'signal', type: 'mail', body: event.id },
      idempotencyKey: `events:${event.id}`,
    });
    return c.json({ ok: true, submissionId: receipt.submissionId });
  },
};

const mount = (routes: ChannelRouteDefinition<any>[]) => new Hono().route('/channels/test', createChannelRouter(routes));
const post = (app: Hono, body: unknown, headers: Record<string, string> = { 'x-token': 'good' }, path = '/hook') =>
  app.fetch(new Request(`http://flue.test/channels/test${path}`, { method: 'POST', headers, body: JSON.stringify(body) }));

describe('createChannelRouter()', () => {
  it('throws at creation on a malformed route or a repeated method and path', () => {
    expect(() => createChannelRouter('routes' as never)).toThrow(/array/);
    expect(() => createChannelRouter([{ ...tokenRoute, path: 'hook' }])).toThrow(/route 0: path/);
    expect(() => createChannelRouter([{ ...tokenRoute, method: 'PO ST' }])).toThrow(/route 0: method/);
    expect(() => createChannelRouter([{ ...tokenRoute, verify: undefined as never }])).toThrow(
      /route 0: give a handler .* or verify, a function authenticating the request, with deliveries/,
    );
    expect(() => createChannelRouter([{ ...tokenRoute, deliveries: undefined as never }])).toThrow(/route 0: deliveries/);
    expect(() => createChannelRouter([{ ...tokenRoute, maxBodyBytes: 0 }])).toThrow(/maxBodyBytes/);
    expect(() => createChannelRouter([tokenRoute, { ...tokenRoute, method: 'POST' }])).toThrow(/route 1 repeats POST \/hook/);
    expect(() => createChannelRouter([{ method: 'POST', path: '/x', handler: 'serve' as never }])).toThrow(
      /route 0: handler must be a function/,
    );
    expect(() => createChannelRouter([{ ...handlerRoute, verify: tokenRoute.verify } as never])).toThrow(
      /route 0 has a handler and verify\/deliveries\/maxBodyBytes: give either a handler \(it verifies the webhook itself\) or verify and deliveries, not both\./,
    );
    expect(() => createChannelRouter([{ method: 'POST', path: '/x' } as never])).toThrow(
      /route 0: give a handler \(c\) => Response that verifies the webhook itself, or verify/,
    );
    expect(() => createChannelRouter([handlerRoute, { ...tokenRoute, path: '/events' }])).toThrow(/route 1 repeats POST \/events/);
  });

  it("serves a channel package's { method, path, handler } route as written, beside a verified route; the handler verifies and dispatches itself", async () => {
    await ctx.start([Inbox]);
    ctx.server.script({ text: 'read' });
    const app = mount([handlerRoute, tokenRoute]);
    const send = (body: string, signature: string) =>
      app.fetch(new Request('http://flue.test/channels/test/events', { method: 'POST', headers: { 'x-signature': signature }, body }));
    const unsigned = await send('{"id":"h1","to":"inbox-h"}', 'sig:0');
    expect(unsigned.status).toBe(401);
    expect(await unsigned.json()).toEqual({ error: 'bad signature' });
    expect(await getAgentInstance(Inbox, 'inbox-h')).toBeNull();

    const body = '{"id":"h1","to":"inbox-h"}';
    const accepted = await send(body, `sig:${body.length}`);
    expect(accepted.status).toBe(200);
    const { submissionId } = (await accepted.json()) as { submissionId: string };
    expect((await init(Inbox, { id: 'inbox-h' }).read(submissionId)).text).toBe('read');
    expect(ctx.server.requests[0]!.messages.at(-1)!.content).toContain('<signal type="mail">');

    // A typed error thrown by the handler renders as its envelope; other methods are 405.
    const refused = await send('{"id":"h2","to":""}', 'sig:19');
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { error: { type: string } }).error.type).toBe('channel_forbidden');
    const get = await app.fetch(new Request('http://flue.test/channels/test/events'));
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    // The verified route beside it still verifies.
    expect((await post(app, { id: 'e9', to: ['a'] }, {})).status).toBe(401);
  });

  it('renders returned and thrown refusals as 401 and 403 envelopes', async () => {
    await ctx.start([Inbox]);
    const app = mount([tokenRoute]);
    const missing = await post(app, { id: 'e1', to: ['a'] }, {});
    expect(missing.status).toBe(401);
    expect(await missing.json()).toEqual({
      error: { type: 'channel_unauthenticated', message: 'The X-Token header is missing.', details: 'Send the shared token.' },
    });
    const wrong = await post(app, { id: 'e1', to: ['a'] }, { 'x-token': 'bad' });
    expect(wrong.status).toBe(403);
    expect(((await wrong.json()) as { error: { type: string } }).error.type).toBe('channel_forbidden');
    expect(await getAgentInstance(Inbox, 'a')).toBeNull();
  });

  it("reads a body exactly at a route's default limit (an HTTP admission body) and refuses one byte more", async () => {
    await ctx.start([Inbox]);
    const app = mount([tokenRoute]);
    // An event with no recipients, padded with JSON whitespace: verified, then ignored with 200.
    const send = (bytes: number) =>
      app.fetch(
        new Request('http://flue.test/channels/test/hook', {
          method: 'POST',
          headers: { 'x-token': 'good' },
          body: JSON.stringify({ id: 'e0', to: [] }).padEnd(bytes, ' '),
        }),
      );
    expect((await send(MAX_REQUEST_BODY_BYTES)).status).toBe(200);
    const over = await send(MAX_REQUEST_BODY_BYTES + 1);
    expect(over.status).toBe(413);
    expect(((await over.json()) as { error: { meta: unknown } }).error.meta).toEqual({
      field: 'request body',
      limit: MAX_REQUEST_BODY_BYTES,
      size: MAX_REQUEST_BODY_BYTES + 1,
    });
  });

  it('admits every delivery of an event, each once across redeliveries', async () => {
    await ctx.start([Inbox]);
    ctx.server.script({ text: 'a' }, { text: 'b' });
    const app = mount([tokenRoute]);
    const first = await post(app, { id: 'e2', to: ['x', 'y'] });
    expect(first.status).toBe(202);
    const body = (await first.json()) as { deliveries: { id: string; submissionId: string; deduplicated?: true }[] };
    expect(body.deliveries.map((d) => [d.id, d.deduplicated])).toEqual([
      ['x', undefined],
      ['y', undefined],
    ]);
    const again = (await (await post(app, { id: 'e2', to: ['x', 'y'] })).json()) as typeof body;
    expect(again.deliveries.map((d) => [d.submissionId, d.deduplicated])).toEqual(body.deliveries.map((d) => [d.submissionId, true]));
    for (const delivery of body.deliveries) await init(Inbox, { id: delivery.id }).read(delivery.submissionId);
    expect(ctx.server.requests).toHaveLength(2);
  });

  it('answers unknown paths 404 and other methods on a route 405 with Allow', async () => {
    await ctx.start([Inbox]);
    const app = mount([tokenRoute]);
    const unknown = await post(app, {}, {}, '/other');
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: { type: string } }).error.type).toBe('route_not_found');
    const get = await app.fetch(new Request('http://flue.test/channels/test/hook'));
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
  });

  it('turns a delivery dispatch() refuses into a logged 500, not a 4xx the platform would blame itself for', async () => {
    await ctx.start([Inbox]);
    const log = vi.spyOn(console, 'error').mockImplementation(() => {});
    try {
      const app = mount([
        { ...tokenRoute, deliveries: () => ({ agent: Inbox, id: 'z', message: { kind: 'signal', type: '', body: '' } as never }) },
      ]);
      const response = await post(app, { id: 'e3', to: [] });
      expect(response.status).toBe(500);
      expect(((await response.json()) as { error: { type: string; ref: string } }).error).toMatchObject({
        type: 'internal_error',
        ref: expect.any(String),
      });
      expect(String(log.mock.calls[0]?.[1])).toContain('channel route POST /hook mapped event "test:e3"');
    } finally {
      log.mockRestore();
    }
    expect(await getAgentInstance(Inbox, 'z')).toBeNull();
  });
});
