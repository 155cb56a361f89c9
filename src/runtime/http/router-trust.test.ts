/**
 * What a client of createAgentRouter() can and cannot do: signals are refused unless the mount
 * opts in, deliveries it admits say `origin: 'http'`, and its idempotency keys cannot take a key
 * trusted code uses.
 */
import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import {
  SignalNotAcceptedError,
  dispatch,
  getAgentInstance,
  init,
  useAgentStart,
  useDelivery,
  useModel,
  type Agent,
  type DeliveryOrigin,
} from '@flue/runtime';
import { createAgentRouter, type AgentRouterOptions, type Fetchable } from '@flue/runtime/routing';
import { useScriptedRuntime } from '../../../test/support/scripted-runtime.ts';

const ctx = useScriptedRuntime();

const ORIGIN = 'http://flue.test';
const MOUNT = '/agents/desk';

/** Every delivery the agent started a response for: the message as its plain fields, and its origin. */
const seen: { message: unknown; origin: DeliveryOrigin }[] = [];

function Desk() {
  useModel('anthropic/claude-haiku-4-5');
  const delivery = useDelivery();
  useAgentStart(() => {
    seen.push({ message: { ...delivery }, origin: delivery.origin });
  });
  return 'Be brief.';
}

function mounted(agent: Agent = Desk, options?: AgentRouterOptions): Hono {
  return new Hono().route(MOUNT, createAgentRouter(agent, options));
}

function post(app: Fetchable, id: string, body: unknown): Promise<Response> {
  return Promise.resolve(
    app.fetch(
      new Request(`${ORIGIN}${MOUNT}/${encodeURIComponent(id)}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }),
    ),
  );
}

async function errorOf(response: Response): Promise<{ type: string; message: string; details: string }> {
  return ((await response.json()) as { error: { type: string; message: string; details: string } }).error;
}

const SIGNAL = { kind: 'signal', type: 'order_update', body: 'shipped', attributes: { orderId: 'A-1' } };

describe('signals posted to the router', () => {
  it('are refused with 403 signal_not_accepted by default, and nothing is admitted', async () => {
    await ctx.start([Desk]);
    const response = await post(mounted(), 'refused', SIGNAL);
    expect(response.status).toBe(403);
    expect(response.headers.get('content-type')).toBe('application/json');
    const error = await errorOf(response);
    expect(error.type).toBe('signal_not_accepted');
    // The envelope says why and what to do instead.
    expect(error.message).toBe('This endpoint does not accept signals.');
    expect(error.details).toContain('dispatch()');
    expect(error.details).toContain('createAgentRouter(agent, { signals: true })');
    expect(await getAgentInstance(Desk, 'refused')).toBeNull();
    expect(ctx.server.requests).toHaveLength(0);
  });

  it('a keyed or conditional signal is refused the same way; user messages on the same mount are admitted', async () => {
    await ctx.start([Desk]);
    const app = mounted();
    for (const extra of [{ idempotencyKey: 'k' }, { uid: null }, { initialData: { x: 1 } }]) {
      const response = await post(app, 'mixed', { ...SIGNAL, ...extra });
      expect(response.status).toBe(403);
      expect((await errorOf(response)).type).toBe('signal_not_accepted');
    }
    ctx.server.script({ text: 'Hello.' });
    const user = await post(app, 'mixed', { kind: 'user', body: 'Hi' });
    expect(user.status).toBe(202);
    const { submissionId } = (await user.json()) as { submissionId: string };
    expect((await init(Desk, { id: 'mixed' }).read(submissionId)).text).toBe('Hello.');
  });

  it('a malformed signal still gets its 400 first', async () => {
    await ctx.start([Desk]);
    const response = await post(mounted(), 'bad', { kind: 'signal', type: 'ok', body: 'x', attributes: { n: 1 } });
    expect(response.status).toBe(400);
    expect((await errorOf(response)).type).toBe('invalid_request');
  });

  it('the error is exported typed, like the others', () => {
    const error = new SignalNotAcceptedError();
    expect(error).toMatchObject({ type: 'signal_not_accepted', status: 403, name: 'SignalNotAcceptedError' });
    expect(error.getResponse().status).toBe(403);
  });

  it('with { signals: true } a posted signal is admitted and the agent sees origin "http"', async () => {
    seen.length = 0;
    await ctx.start([Desk]);
    ctx.server.script({ text: 'Noted.' });
    const response = await post(mounted(Desk, { signals: true }), 'opted', SIGNAL);
    expect(response.status).toBe(202);
    const { submissionId } = (await response.json()) as { submissionId: string };
    await init(Desk, { id: 'opted' }).read(submissionId);
    expect(seen).toEqual([{ message: SIGNAL, origin: 'http' }]);
  });

  it('{ signals: false } is the default spelled out', async () => {
    await ctx.start([Desk]);
    expect((await post(mounted(Desk, { signals: false }), 'off', SIGNAL)).status).toBe(403);
  });
});

describe('createAgentRouter() options', () => {
  it('are checked at creation: unknown keys, wrong types and non-objects throw', () => {
    expect(() => createAgentRouter(Desk, { signal: true } as AgentRouterOptions)).toThrow(
      /^\[flue\] createAgentRouter\(\) got an unknown option "signal"\. Known options: signals\.$/,
    );
    expect(() => createAgentRouter(Desk, { signals: 'yes' } as unknown as AgentRouterOptions)).toThrow(/"signals" must be a boolean/);
    expect(() => createAgentRouter(Desk, null as unknown as AgentRouterOptions)).toThrow(/must be a plain object/);
    expect(() => createAgentRouter(Desk, [] as unknown as AgentRouterOptions)).toThrow(/must be a plain object/);
  });

  it('creating a router needs no runtime and does not touch its options object', () => {
    const options = Object.freeze({ signals: true });
    expect(createAgentRouter(Desk, options)).toBeInstanceOf(Hono);
    expect(createAgentRouter(Desk, {})).toBeInstanceOf(Hono);
  });
});

describe('origins of HTTP deliveries', () => {
  it('a user message posted through the router says "http"; the same text from dispatch() says "app"', async () => {
    seen.length = 0;
    await ctx.start([Desk]);
    ctx.server.script({ text: 'One.' }, { text: 'Two.' });
    const posted = await post(mounted(), 'o', { kind: 'user', body: 'Hi' });
    await init(Desk, { id: 'o' }).read(((await posted.json()) as { submissionId: string }).submissionId);
    await init(Desk, { id: 'o' }).read(await dispatch(Desk, { id: 'o', message: 'Hi' }));
    expect(seen).toEqual([
      { message: { kind: 'user', body: 'Hi' }, origin: 'http' },
      { message: { kind: 'user', body: 'Hi' }, origin: 'app' },
    ]);
  });
});

describe('idempotency keys posted through the router', () => {
  it('cannot take a key trusted code will use: its later dispatch() is admitted (not a 409) and runs', async () => {
    seen.length = 0;
    await ctx.start([Desk]);
    const app = mounted();
    ctx.server.script({ text: 'Client.' }, { text: 'Operator.' });
    const taken = await post(app, 'keys', { kind: 'user', body: 'approve', idempotencyKey: 'approval:7' });
    expect(taken.status).toBe(202);
    const client = (await taken.json()) as { submissionId: string };
    await init(Desk, { id: 'keys' }).read(client.submissionId);

    const operator = await dispatch(Desk, { id: 'keys', message: 'approve', idempotencyKey: 'approval:7' });
    expect(operator.deduplicated).toBeUndefined();
    expect(operator.submissionId).not.toBe(client.submissionId);
    expect((await init(Desk, { id: 'keys' }).read(operator)).text).toBe('Operator.');
    expect(seen.map((delivery) => delivery.origin)).toEqual(['http', 'app']);

    // Each transport still deduplicates and conflicts within its own namespace.
    const replay = await post(app, 'keys', { kind: 'user', body: 'approve', idempotencyKey: 'approval:7' });
    expect(await replay.json()).toMatchObject({ submissionId: client.submissionId, deduplicated: true });
    const clash = await post(app, 'keys', { kind: 'user', body: 'deny', idempotencyKey: 'approval:7' });
    expect(clash.status).toBe(409);
    expect(await dispatch(Desk, { id: 'keys', message: 'approve', idempotencyKey: 'approval:7' })).toMatchObject({
      submissionId: operator.submissionId,
      deduplicated: true,
    });
    await expect(dispatch(Desk, { id: 'keys', message: 'deny', idempotencyKey: 'approval:7' })).rejects.toMatchObject({
      type: 'submission_conflict',
      meta: { submissionId: operator.submissionId },
    });
    expect(ctx.server.requests).toHaveLength(2);
  });
});
