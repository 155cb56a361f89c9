/**
 * Interop on the Node host, continued from node-sdk.test.ts: abort, failure, signals, errors as
 * the SDK surfaces them, idle and returning readers, host auth middleware. The same setup: the
 * unmodified `@flue/sdk` 2.0.3 client against `createAgentRouter()` on loopback HTTP, every
 * exchange checked against streaming-protocol.md (support/wire-tap.ts).
 */
import type { MiddlewareHandler } from 'hono';
import { describe, expect, it } from 'vitest';
import { FlueApiError, FlueExecutionError, createFlueClient, type ConversationStreamChunk } from '@flue/sdk';
import { MOUNT, expectConformant, useNodeHost } from './support/node-host.ts';
import { eventually, replyMessage, settledIn, sleep, textOf, withTimeout } from './support/observation.ts';
import { FIRST_TEXT, REPLY_TEXT, Support, orderReplySteps, stateOf } from './support/order-script.ts';
import { offsetSeq } from './support/wire-tap.ts';

const { ctx, host } = useNodeHost();

/** The order conversation (support/order-script.ts), one final-text chunk every `delayMs`. */
function scriptOrderReply(delayMs = 120) {
  ctx.server.script(...orderReplySteps(delayMs));
}

// ── abort ─────────────────────────────────────────────────────────────────────────────────────

describe('abort', () => {
  it('aborts a hanging response: read()/wait() reject with the aborted FlueExecutionError; observer and history show it', async () => {
    const h = await host(Support);
    const client = h.client('t-abort');
    expect(await withTimeout(client.abort(), 5_000, 'abort (never contacted)')).toEqual({ aborted: false });
    ctx.server.script({ text: ['Working', ' on', ' it', ' now'], hangAfterChunks: 4 });
    const admission = await client.send({ message: { kind: 'user', body: 'Take your time.' } });
    const watched = h.observe(client, { live: 'sse' });
    await watched.until(
      (s) => textOf(replyMessage(s.conversation?.messages, admission.submissionId)) === 'Working on',
      10_000,
      'the partial text before the hang',
    );
    const reading = client.read(admission).then(
      () => undefined,
      (error: unknown) => error,
    );
    // Queued behind the hanging model call (it cannot join before a turn boundary).
    const queued = await client.send({ message: { kind: 'user', body: 'And another thing.' } });
    expect(await withTimeout(client.abort(), 5_000, 'abort')).toEqual({ aborted: true });
    await expect(withTimeout(client.read(queued), 10_000, 'read(queued)')).rejects.toMatchObject({
      name: 'FlueExecutionError',
      targetId: queued.submissionId,
      failure: 'aborted',
    });
    const error = await withTimeout(reading, 15_000, 'read() after abort');
    expect(error).toBeInstanceOf(FlueExecutionError);
    expect(error).toMatchObject({ target: 'agent_submission', targetId: admission.submissionId, failure: 'aborted' });
    await expect(withTimeout(client.wait(admission), 10_000, 'wait()')).rejects.toMatchObject({
      name: 'FlueExecutionError',
      failure: 'aborted',
    });
    const final = await watched.until((s) => settledIn(s, admission.submissionId) !== undefined, 10_000, 'the aborted settlement');
    expect(settledIn(final, admission.submissionId)).toMatchObject({ outcome: 'aborted' });
    const history = await client.history();
    expect(final.conversation).toEqual(stateOf(history));
    expect(history.settlements).toEqual([
      expect.objectContaining({ submissionId: admission.submissionId, outcome: 'aborted' }),
      expect.objectContaining({ submissionId: queued.submissionId, outcome: 'aborted' }),
    ]);
    expect(history.messages.find((m) => m.settlement !== undefined)).toMatchObject({
      role: 'system',
      purpose: 'advisory',
      display: 'diagnostic',
      submissionId: admission.submissionId,
      settlement: { outcome: 'aborted' },
    });
    expect(await client.abort()).toEqual({ aborted: false });

    // The conversation goes on.
    ctx.server.script({ text: 'Back again.' });
    const next = await client.send({ message: { kind: 'user', body: 'Hello?' } });
    expect((await withTimeout(client.read(next), 10_000, 'read after abort')).text).toBe('Back again.');
    await watched.until((s) => settledIn(s, next.submissionId)?.outcome === 'completed', 10_000, 'the next settlement');
    expect(watched.observation.getSnapshot().conversation).toEqual(stateOf(await client.history()));
    watched.close();
    await expectConformant(h);
  });
});

describe('failure', () => {
  it('a failed submission: read() rejects with the failed FlueExecutionError carrying the settlement error; observer and history agree', async () => {
    const h = await host(Support);
    const client = h.client('t-failed');
    ctx.server.script({ status: 400, errorBody: 'The model refused the request.' });
    const admission = await client.send({ message: { kind: 'user', body: 'Break, please.' } });
    const watched = h.observe(client, { live: 'sse' });
    const error = await withTimeout(
      client.read(admission).then(
        () => undefined,
        (e: unknown) => e,
      ),
      15_000,
      'read()',
    );
    expect(error).toBeInstanceOf(FlueExecutionError);
    expect(error).toMatchObject({
      failure: 'failed',
      targetId: admission.submissionId,
      error: expect.objectContaining({ message: expect.any(String) }),
    });
    const final = await watched.until((s) => settledIn(s, admission.submissionId) !== undefined, 10_000, 'settlement');
    const history = await client.history();
    expect(final.conversation).toEqual(stateOf(history));
    const settlement = history.settlements.find((x) => x.submissionId === admission.submissionId)!;
    expect(settlement.outcome).toBe('failed');
    expect((error as FlueExecutionError).error).toEqual(settlement.error);
    expect(history.messages.find((m) => m.settlement !== undefined)).toMatchObject({
      role: 'system',
      purpose: 'advisory',
      display: 'diagnostic',
      submissionId: admission.submissionId,
      settlement: { outcome: 'failed' },
    });
    watched.close();
    await expectConformant(h);
  });
});

describe('signals and long conversations', () => {
  it('a signal sent through the SDK to a mount that did not opt in is refused: FlueApiError 403 signal_not_accepted', async () => {
    const h = await host(Support);
    const client = h.client('t-signal-refused');
    const refused = await rejection(client.send({ message: { kind: 'signal', type: 'order_update', body: 'shipped' } }));
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ error: { type: 'signal_not_accepted' } });
    expect(ctx.server.requests).toHaveLength(0);
    await expect(rejection(client.history())).resolves.toMatchObject({ status: 404 });
    await expectConformant(h);
  });

  it('a signal sent through the SDK is a system/dispatch message with its tag and attributes', async () => {
    // The mount opts in: without it the router refuses client signals (above).
    const h = await host(Support, { router: { signals: true } });
    const client = h.client('t-signal');
    ctx.server.script({ text: 'Noted the shipment.' });
    const admission = await client.send({
      message: {
        kind: 'signal',
        type: 'order_update',
        body: '{"orderId":"A-1","status":"shipped"}',
        attributes: { orderId: 'A-1' },
        tagName: 'order',
      },
    });
    expect((await client.read(admission)).text).toBe('Noted the shipment.');
    const watched = h.observe(client, { live: 'long-poll' });
    const seen = await watched.until((s) => s.phase === 'live' && s.conversation !== undefined, 5_000, 'live');
    expect(seen.conversation!.messages[0]).toMatchObject({
      role: 'system',
      purpose: 'dispatch',
      display: 'diagnostic',
      submissionId: admission.submissionId,
      signal: { tagName: 'order', attributes: { orderId: 'A-1' } },
      parts: [{ type: 'text', text: '{"orderId":"A-1","status":"shipped"}', state: 'done' }],
    });
    expect(seen.conversation).toEqual(stateOf(await client.history()));
    watched.close();
    await expectConformant(h);
  });

  it('read(bare id) of the last submission of a conversation longer than 100 batches pages through plain reads', async () => {
    const h = await host(Support);
    const client = h.client('t-long');
    const last: { id?: string } = {};
    // At least one batch a turn (the input with the reply and its settlement when no reader follows
    // yet, else two): 101 turns are more than 100 batches.
    for (let turn = 0; turn < 101; turn++) {
      ctx.server.script({ text: `Reply ${turn}.` });
      const admission = await client.send({ message: { kind: 'user', body: `Turn ${turn}` } });
      await client.read(admission);
      last.id = admission.submissionId;
    }
    const history = await client.history();
    expect(offsetSeq(history.offset)).toBeGreaterThan(100);
    const before = h.tap.exchanges.length;
    const chunks: ConversationStreamChunk[] = [];
    const reply = await withTimeout(client.read(last.id!, { onEvent: (c) => void chunks.push(c) }), 10_000, 'read(bare id)');
    expect(reply.text).toBe('Reply 100.');
    const reads = h.tap.exchanges.slice(before).filter((e) => e.url.searchParams.get('view') === 'updates');
    // The first page stops at 100 batches, not up to date; the client continues from its offset.
    expect(reads.length).toBeGreaterThanOrEqual(2);
    expect(reads[0]!.url.searchParams.get('offset')).toBe('-1');
    expect(reads[0]!.headers['stream-up-to-date']).toBeUndefined();
    expect(reads[0]!.headers['stream-next-offset']).toBe(`0000000000000000_${String(99).padStart(16, '0')}`);
    expect(reads[1]!.url.searchParams.get('offset')).toBe(reads[0]!.headers['stream-next-offset']);
    expect(reads[1]!.url.searchParams.has('live')).toBe(false);
    // Every submission's settlement arrived exactly once, in order.
    const settled = chunks.filter((c) => c.type === 'submission-settled').map((c) => (c as { submissionId: string }).submissionId);
    expect(settled).toEqual(history.settlements.map((x) => x.submissionId));
    await expectConformant(h);
  });
});

// ── conditions, idempotency, errors ───────────────────────────────────────────────────────────

async function rejection(promise: Promise<unknown>): Promise<FlueApiError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(FlueApiError);
  return error as FlueApiError;
}

describe('conditions and errors as the SDK surfaces them', () => {
  it('uid conditions: create-only and continue-this-incarnation', async () => {
    const h = await host(Support);
    const client = h.client('t-uid');
    ctx.server.script({ text: 'One.' }, { text: 'Two.' });
    const created = await client.send({ message: { kind: 'user', body: 'Hi' }, uid: null, initialData: { plan: 'pro' } });
    await client.read(created);
    const exists = await rejection(client.send({ message: { kind: 'user', body: 'Hi again' }, uid: null }));
    expect(exists.status).toBe(409);
    expect(exists.body).toMatchObject({ error: { type: 'agent_instance_exists', meta: { uid: created.uid } } });
    const stale = await rejection(client.send({ message: { kind: 'user', body: 'Hi again' }, uid: 'inst_not_this_one' }));
    expect(stale.status).toBe(404);
    expect(stale.body).toMatchObject({ error: { type: 'agent_instance_not_found' } });
    const absent = await rejection(h.client('t-uid-absent').send({ message: { kind: 'user', body: 'Hi' }, uid: created.uid }));
    expect(absent.status).toBe(404);
    const mixed = await rejection(client.send({ message: { kind: 'user', body: 'Hi' }, uid: created.uid, initialData: {} }));
    expect(mixed.status).toBe(400);
    expect(mixed.body).toMatchObject({ error: { type: 'invalid_request' } });
    const continued = await client.send({ message: { kind: 'user', body: 'Hi again' }, uid: created.uid });
    expect(continued.uid).toBe(created.uid);
    expect((await client.read(continued)).text).toBe('Two.');
    // Nothing was delivered by the rejected sends.
    expect((await client.history()).messages.filter((m) => m.role === 'user').map((m) => textOf(m))).toEqual(['Hi', 'Hi again']);
    await expectConformant(h);
  });

  it('idempotency: a keyed replay converges (deduplicated, offset -1, readable); another payload is a 409 conflict', async () => {
    const h = await host(Support);
    const client = h.client('t-key');
    ctx.server.script({ text: 'Once only.' });
    const first = await client.send({ message: { kind: 'user', body: 'Charge me' }, idempotencyKey: 'pay-1' });
    expect(first.deduplicated).toBeUndefined();
    const replay = await client.send({ message: { kind: 'user', body: 'Charge me' }, idempotencyKey: 'pay-1' });
    expect(replay).toEqual({ ...first, offset: '-1', deduplicated: true });
    expect((await withTimeout(client.read(replay), 10_000, 'read(replay)')).text).toBe('Once only.');
    expect((await client.read(first)).text).toBe('Once only.');
    const conflict = await rejection(client.send({ message: { kind: 'user', body: 'Charge me twice' }, idempotencyKey: 'pay-1' }));
    expect(conflict.status).toBe(409);
    expect(conflict.body).toMatchObject({ error: { type: 'submission_conflict', meta: { submissionId: first.submissionId } } });
    expect(ctx.server.requests).toHaveLength(1);
    expect((await client.history()).messages.filter((m) => m.role === 'user')).toHaveLength(1);
    await expectConformant(h);
  });

  it('a never-contacted conversation: history 404, observe absent, read of a bare id rejects with 404', async () => {
    const h = await host(Support);
    const client = h.client('t-nobody');
    const missing = await rejection(client.history());
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({ error: { type: 'stream_not_found' } });
    const watched = h.observe(client, { live: 'sse' });
    await watched.until((s) => s.phase === 'absent', 5_000, 'absent');
    const read = await withTimeout(
      client.read('sub_unknown').then(
        () => undefined,
        (e: unknown) => e,
      ),
      5_000,
      'read(bare id)',
    );
    expect(read).toMatchObject({ status: 404 });
    // Reading no reply never created the instance.
    expect((await rejection(client.history())).status).toBe(404);
  });
});

// ── the live-mode windows ─────────────────────────────────────────────────────────────────────

describe('idle live modes', () => {
  it('a long-poll with nothing to read answers within the window with [checkpoint]; the observer stays live', async () => {
    const h = await host(Support, { timing: { waitMs: 400, heartbeatMs: 150 } });
    const client = h.client('t-window');
    ctx.server.script({ text: 'Hi.' });
    await client.read(await client.send({ message: { kind: 'user', body: 'Hi' } }));
    const watched = h.observe(client, { live: 'long-poll' });
    const live = await watched.until((s) => s.phase === 'live' && s.conversation !== undefined, 5_000, 'live');
    const longPolls = () => h.tap.exchanges.filter((e) => e.url.searchParams.get('live') === 'long-poll');
    // Three polls seen: the first two were answered (the observer asks again only after an answer).
    await eventually(() => longPolls().length >= 3);
    const polls = longPolls();
    const history = await client.history();
    for (const poll of polls.slice(0, -1)) {
      // Answered by the server with a checkpoint (not cut by the client), after holding it for the window.
      expect(poll.status).toBe(200);
      expect(poll.answeredAt - poll.startedAt).toBeGreaterThanOrEqual(300);
      expect(poll.headers['stream-up-to-date']).toBe('true');
      expect(poll.headers['stream-next-offset']).toBe(history.offset);
      expect(poll.url.searchParams.get('offset')).toBe(history.offset);
    }
    await withTimeout(Promise.all(polls.slice(0, -1).map((poll) => poll.done)), 2_000, "the answered polls' bodies");
    for (const poll of polls.slice(0, -1)) expect(poll.json).toEqual([{ type: 'stream-checkpoint', incarnation: history.incarnation }]);
    const now = watched.observation.getSnapshot();
    expect(now.phase).toBe('live');
    expect(now.error).toBeUndefined();
    expect(now.conversation).toBe(live.conversation);
    watched.close();
    await expectConformant(h);
  });

  it('an idle SSE connection carries a control event every window and heartbeats; the observer stays live', async () => {
    const h = await host(Support, { timing: { waitMs: 400, heartbeatMs: 150 } });
    const client = h.client('t-sse-idle');
    ctx.server.script({ text: 'Hi.' });
    await client.read(await client.send({ message: { kind: 'user', body: 'Hi' } }));
    const watched = h.observe(client, { live: 'sse' });
    await watched.until((s) => s.phase === 'live' && s.conversation !== undefined, 5_000, 'live');
    const sseOf = () => h.tap.exchanges.find((e) => e.url.searchParams.get('live') === 'sse');
    // The SSE connection stays open; its events are recorded as they arrive.
    await eventually(() => sseOf() !== undefined);
    const sse = sseOf()!;
    await eventually(() => sse.events!.filter((e) => e.event === 'control').length >= 3 && sse.heartbeats! >= 3);
    const controls = sse.events!.filter((e) => e.event === 'control');
    const history = await client.history();
    for (const control of controls) expect(JSON.parse(control.data)).toEqual({ streamNextOffset: history.offset, upToDate: true });
    expect(sse.heartbeats).toBeGreaterThanOrEqual(3);
    expect(watched.observation.getSnapshot()).toMatchObject({ phase: 'live', error: undefined });
    watched.close();
    await expectConformant(h);
  });

  it('with the default 30 s window, a parked long-poll answers as soon as a send appends', async () => {
    const h = await host(Support);
    const client = h.client('t-parked');
    ctx.server.script({ text: 'First.' });
    await client.read(await client.send({ message: { kind: 'user', body: 'Hi' } }));
    const watched = h.observe(client, { live: 'long-poll' });
    await watched.until((s) => s.phase === 'live' && s.conversation !== undefined, 5_000, 'live');
    const parked = () =>
      h.http.requests.find((r) => r.path.includes('live=long-poll') && r.status === undefined && r.outcome === undefined);
    await eventually(() => parked() !== undefined);
    const poll = parked()!;
    ctx.server.script({ text: 'Second.' });
    const next = await client.send({ message: { kind: 'user', body: 'Again' } });
    await watched.until((s) => settledIn(s, next.submissionId) !== undefined, 10_000, 'the second settlement');
    expect(poll.status).toBe(200);
    // The parked poll itself carried the new submission: the append woke it (an answer at the end
    // of the 30 s window would carry a bare checkpoint).
    const answered = h.tap.exchanges.find((e) => e.url.pathname + e.url.search === poll.path)!;
    expect(answered).toBeDefined();
    await answered.done;
    expect(JSON.stringify(answered.json)).toContain(next.submissionId);
    expect(watched.observation.getSnapshot().conversation).toEqual(stateOf(await client.history()));
    watched.close();
    // Closing the observer leaves its parked long-poll as a client disconnect.
    const last = h.http.requests.filter((r) => r.path.includes('live=long-poll')).at(-1)!;
    await eventually(() => last.outcome !== undefined);
    expect(last.outcome).toBe('client-closed');
    // The router noticed (an answer at the end of the 30 s window would be a 200): 499, empty body.
    await eventually(() => last.status !== undefined);
    expect(last.status).toBe(499);
    await expectConformant(h);
  });
});

describe('reconnecting after a long absence', () => {
  it.each([
    { live: 'sse' as const, how: 'end' as const },
    { live: 'long-poll' as const, how: 'destroy' as const },
  ])('observe({ live: $live }) catches up over more than 100 batches appended while it was cut off', async ({ live, how }) => {
    const h = await host(Support);
    const client = h.client(`t-away-${live}`);
    ctx.server.script({ text: 'Hi.' });
    await client.read(await client.send({ message: { kind: 'user', body: 'Hi' } }));
    const watched = h.observe(client, { live });
    await watched.until((s) => s.phase === 'live' && s.conversation !== undefined, 5_000, 'live');
    await eventually(
      () => h.http.requests.some((r) => r.path.includes(`live=${live}`) && r.outcome === undefined),
      5_000,
      `a ${live} connection`,
    );
    // Past the DS client's 1 s short-connection threshold, so a clean SSE end reconnects at once.
    if (live === 'sse') await sleep(1_100);
    const cutAt = (await client.history()).offset;
    h.tap.hold();
    const isLive = (path: string) => path.includes(`live=${live}`);
    expect(how === 'end' ? h.http.endStreaming(isLive) : h.http.destroy(isLive)).toBe(1);
    const other = h.inProcessClient(`t-away-${live}`);
    for (let turn = 0; turn < 52; turn++) {
      ctx.server.script({ text: `Reply ${turn}.` });
      await other.read(await other.send({ message: { kind: 'user', body: `Turn ${turn}` } }));
    }
    const history = await other.history();
    expect(offsetSeq(history.offset) - offsetSeq(cutAt)).toBeGreaterThan(100);
    const releasedAt = Date.now();
    h.tap.release();
    const final = await watched.until((s) => s.conversation?.settlements.length === 53, 15_000, 'all 53 settlements');
    expect(final.conversation).toEqual(stateOf(history));
    await eventually(() => watched.observation.getSnapshot().offset === history.offset, 5_000, 'the head offset');
    // It resumed from where it was cut off and paged: a first answer not up to date, then more.
    const resumed = h.tap.exchanges.filter((e) => e.startedAt >= releasedAt && e.url.searchParams.get('view') === 'updates');
    expect(resumed[0]!.url.searchParams.get('offset')).toBe(cutAt);
    if (live === 'sse') {
      // The SSE connection is still open: its recorded events are read as they arrive.
      const controlsOf = () =>
        resumed[0]!.events!.filter((e) => e.event === 'control').map((e) => JSON.parse(e.data) as { upToDate?: true });
      await eventually(() => controlsOf().at(-1)?.upToDate === true, 5_000, 'an up-to-date control');
      const controls = controlsOf();
      expect(controls.length).toBeGreaterThanOrEqual(2);
      expect(controls[0]!.upToDate).toBeUndefined();
      expect(controls.at(-1)!.upToDate).toBe(true);
    } else {
      expect(resumed[0]!.headers['stream-up-to-date']).toBeUndefined();
      expect(resumed[1]!.url.searchParams.get('offset')).toBe(resumed[0]!.headers['stream-next-offset']);
    }
    // No state in between went backwards or duplicated a message.
    for (const s of watched.snapshots) {
      const ids = (s.conversation?.messages ?? []).map((m) => m.id);
      expect(new Set(ids).size).toBe(ids.length);
    }
    watched.close();
    await expectConformant(h);
  });
});

describe('host auth middleware in front of the mount', () => {
  const requireToken: MiddlewareHandler = async (c, next) => {
    if (c.req.header('authorization') !== 'Bearer secret-token')
      return c.json({ error: { type: 'unauthorized', message: 'Bad token.' } }, 401);
    await next();
  };

  it('the SDK sends its token and headers on every request, stream reconnects included', async () => {
    const h = await host(Support, { middleware: requireToken });
    const url = `${h.http.url}${MOUNT}/t-auth`;
    let resolved = 0;
    const client = createFlueClient({ url, token: 'secret-token', headers: () => ({ 'x-app': `call-${++resolved}` }) });
    scriptOrderReply(150);
    const admission = await client.send({ message: { kind: 'user', body: 'Where is A-1?' } });
    const watched = h.observe(client, { live: 'sse' });
    await watched.until(
      (s) => textOf(replyMessage(s.conversation?.messages, admission.submissionId)).length > FIRST_TEXT.length,
      15_000,
      'partial text',
    );
    await sleep(1_100);
    expect(h.http.endStreaming((path) => path.includes('live=sse'))).toBe(1);
    expect((await withTimeout(client.read(admission), 15_000, 'read')).text).toBe(REPLY_TEXT);
    const final = await watched.until((s) => settledIn(s, admission.submissionId) !== undefined, 10_000, 'settlement');
    expect(final.conversation).toEqual(stateOf(await client.history()));
    const sse = h.http.requests.filter((r) => r.path.includes('live=sse'));
    expect(sse.length).toBeGreaterThanOrEqual(2);
    for (const request of h.http.requests) {
      expect(request.headers.authorization, request.path).toBe('Bearer secret-token');
      expect(request.headers['x-app'], request.path).toMatch(/^call-\d+$/);
    }
    expect(h.http.requests.every((r) => r.status !== 401)).toBe(true);
    watched.close();
  });

  it('a rejected token: send and history throw FlueApiError 401; observe() ends in error after its retries', async () => {
    const h = await host(Support, { middleware: requireToken });
    const client = createFlueClient({ url: `${h.http.url}${MOUNT}/t-auth-bad`, token: 'wrong' });
    const send = await client.send({ message: { kind: 'user', body: 'Hi' } }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(send).toBeInstanceOf(FlueApiError);
    expect(send).toMatchObject({ status: 401 });
    const watched = h.observe(client, { live: 'sse' });
    const failed = await watched.until((s) => s.phase === 'error', 10_000, 'the error phase');
    expect(failed.error).toMatchObject({ status: 401 });
    expect(h.http.requests.filter((r) => r.path.endsWith('view=history')).length).toBe(3);
  });
});

// ── in process, attachments ───────────────────────────────────────────────────────────────────

describe('other ways in', () => {
  it('the SDK reaches the app in process through its fetch option: send, read, observe over SSE, abort', async () => {
    const h = await host(Support);
    const client = h.inProcessClient('t-in-process');
    scriptOrderReply(50);
    const admission = await client.send({ message: { kind: 'user', body: 'Where is A-1?' } });
    expect(admission.streamUrl).toBe('http://flue.test/agents/support/t-in-process');
    const watched = h.observe(client, { live: 'sse' });
    expect((await withTimeout(client.read(admission), 15_000, 'read')).text).toBe(REPLY_TEXT);
    const final = await watched.until((s) => settledIn(s, admission.submissionId) !== undefined, 10_000, 'settlement');
    expect(final.conversation).toEqual(stateOf(await client.history()));
    expect(await client.abort()).toEqual({ aborted: false });
    watched.close();
  });

  it('an image attachment round-trips: file part with id and size, SDK-filled url, bytes served', async () => {
    const h = await host(Support);
    const client = h.client('t-attach');
    ctx.server.script({ text: 'Nice picture.' });
    const png = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');
    const admission = await client.send({
      message: {
        kind: 'user',
        body: 'Look',
        attachments: [{ type: 'image', data: png.toString('base64'), mimeType: 'image/png', filename: 'dot.png' }],
      },
    });
    await client.read(admission);
    const history = await client.history();
    const file = history.messages[0]!.parts.find((p) => p.type === 'file');
    expect(file).toMatchObject({ type: 'file', mediaType: 'image/png', id: expect.any(String), size: png.byteLength, filename: 'dot.png' });
    const id = (file as { id: string }).id;
    expect((file as { url?: string }).url).toBe(client.attachmentUrl(id));
    const bytes = await fetch(client.attachmentUrl(id));
    expect(bytes.status).toBe(200);
    expect(bytes.headers.get('content-type')).toBe('image/png');
    expect(Buffer.from(await bytes.arrayBuffer()).equals(png)).toBe(true);
    const watched = h.observe(client, { live: 'long-poll' });
    const seen = await watched.until((s) => s.phase === 'live' && s.conversation !== undefined, 5_000, 'live');
    expect(seen.conversation!.messages[0]!.parts.find((p) => p.type === 'file')).toEqual(file);
    watched.close();
    await expectConformant(h);
  });
});
