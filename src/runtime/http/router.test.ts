/**
 * createAgentRouter() against the real Node runtime and the scripted model server: admission,
 * history, plain updates, HEAD, abort, attachments and mounting (delivery.md §10,
 * streaming-protocol.md §1–§9).
 */
import { Hono } from 'hono';
import { describe, expect, it, vi } from 'vitest';
import { AgentRunError, dispatch, getAgentInstance, init, useModel, type Agent } from '@flue/runtime';
import { useScriptedRuntime } from '../../../test/support/scripted-runtime.ts';
import { createAgentRouter, type AgentRouterOptions, type Fetchable } from '@flue/runtime/routing';

const ctx = useScriptedRuntime();

const MODEL = 'anthropic/claude-haiku-4-5';
const ORIGIN = 'http://flue.test';
const MOUNT = '/agents/support';
const OFFSET = /^\d{16}_\d{16}$/;

function Support() {
  useModel(MODEL);
  return 'Be brief.';
}

function mounted(agent: Agent = Support, options?: AgentRouterOptions): Hono {
  return new Hono().route(MOUNT, createAgentRouter(agent, options));
}

function url(path: string): string {
  return `${ORIGIN}${MOUNT}${path}`;
}

function send(app: Fetchable, id: string, body: unknown, query = ''): Promise<Response> {
  return Promise.resolve(
    app.fetch(
      new Request(url(`/${encodeURIComponent(id)}${query}`), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }),
    ),
  );
}

function get(app: Fetchable, path: string, init?: RequestInit): Promise<Response> {
  return Promise.resolve(app.fetch(new Request(url(path), init)));
}

interface AdmissionBody {
  streamUrl: string;
  offset: string;
  submissionId: string;
  uid: string;
  deduplicated?: true;
}

/** Sends one user message, waits for its settlement, returns the admission body. */
async function converse(app: Fetchable, id: string, text = 'Hi', reply = 'Hello there.'): Promise<AdmissionBody> {
  ctx.server.script({ text: reply });
  const response = await send(app, id, { kind: 'user', body: text });
  expect(response.status).toBe(202);
  const admission = (await response.json()) as AdmissionBody;
  await init(Support, { id }).read(admission.submissionId);
  return admission;
}

function expectSecurityHeaders(response: Response) {
  expect(response.headers.get('x-content-type-options')).toBe('nosniff');
  expect(response.headers.get('cross-origin-resource-policy')).toBe('cross-origin');
}

type Chunk = { type: string; position?: { batch: number; index: number }; [key: string]: unknown };

describe('createAgentRouter(): the factory', () => {
  it('throws at creation for an anonymous or invalid identity', () => {
    expect(() => createAgentRouter((() => undefined) as Agent)).toThrow(/anonymous/);
    const Bad = Object.assign(function Bad() {}, { agentName: '9-lives' }) as Agent;
    expect(() => createAgentRouter(Bad)).toThrow(/Invalid agent identity/);
  });

  it('needs no runtime to be created; a request without one is a 500 envelope with a ref', async () => {
    const app = mounted();
    const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
    const response = await get(app, '/t-1');
    expect(response.status).toBe(500);
    const body = await response.json();
    expect(body.error).toMatchObject({ type: 'internal_error', ref: expect.stringMatching(/^err_/) });
    expect(response.headers.get('flue-error-ref')).toBe(body.error.ref);
    // The log line carries the ref and the developer-facing cause.
    expect(logged).toHaveBeenCalledWith(
      `[flue] ${body.error.ref}`,
      expect.objectContaining({ message: expect.stringMatching(/configured Flue runtime/) }),
    );
    logged.mockRestore();
  }, 10_000);

  it('keys storage by identity, not mount path: two mounts see one conversation', async () => {
    await ctx.start([Support]);
    const router = createAgentRouter(Support);
    const app = new Hono().route(MOUNT, router).route('/elsewhere', createAgentRouter(Support));
    await converse(app, 'shared');
    const history = await app.fetch(new Request(`${ORIGIN}/elsewhere/shared`));
    expect(history.status).toBe(200);
    expect((await history.json()).messages).toHaveLength(2);
    // Served on its own too (routes relative to the root).
    expect((await router.fetch(new Request(`${ORIGIN}/shared`))).status).toBe(200);
  });

  it('serves an agent registered under an entry name', async () => {
    await ctx.start([{ agent: Support, name: 'help-desk' }]);
    const app = mounted();
    await converse(app, 'named');
    expect(await getAgentInstance(Support, 'named')).toMatchObject({ id: 'named' });
  });
});

describe('POST /:id (admission)', () => {
  it('answers 202 with streamUrl, offset, submissionId and uid, and the coordination headers', async () => {
    await ctx.start([Support]);
    const app = mounted();
    ctx.server.script({ text: 'Hello.' });
    const response = await send(app, 't 1/x', { kind: 'user', body: 'Hi' }, '?utm=1');
    expect(response.status).toBe(202);
    expect(response.headers.get('content-type')).toBe('application/json');
    const body = (await response.json()) as AdmissionBody;
    expect(body).toEqual({
      streamUrl: `${ORIGIN}${MOUNT}/t%201%2Fx`,
      offset: expect.stringMatching(OFFSET),
      submissionId: expect.stringMatching(/^sub_/),
      uid: expect.stringMatching(/^inst_/),
    });
    expect(response.headers.get('location')).toBe(body.streamUrl);
    expect(response.headers.get('stream-next-offset')).toBe(body.offset);
    // The id is decoded from the URL: the instance is "t 1/x".
    await init(Support, { id: 't 1/x' }).read(body.submissionId);
    expect(await getAgentInstance(Support, 't 1/x')).toEqual({ id: 't 1/x', uid: body.uid });
    // The offset is a resume point that does not miss this submission's settlement.
    const updates = await get(app, `/t%201%2Fx?view=updates&offset=${body.offset}`);
    const chunks = (await updates.json()) as Chunk[];
    expect(chunks.some((chunk) => chunk.type === 'submission-settled' && chunk.submissionId === body.submissionId)).toBe(true);
  });

  it('replays a keyed send as deduplicated with offset -1; a different payload is a 409', async () => {
    await ctx.start([Support]);
    const app = mounted();
    ctx.server.script({ text: 'Once.' });
    const first = (await (await send(app, 'k', { kind: 'user', body: 'Hi', idempotencyKey: 'key-1' })).json()) as AdmissionBody;
    await init(Support, { id: 'k' }).read(first.submissionId);
    const replay = await send(app, 'k', { idempotencyKey: 'key-1', kind: 'user', body: 'Hi' });
    expect(replay.status).toBe(202);
    const body = (await replay.json()) as AdmissionBody;
    expect(body).toEqual({ ...first, offset: '-1', deduplicated: true });
    expect(replay.headers.get('stream-next-offset')).toBe('-1');
    const conflict = await send(app, 'k', { kind: 'user', body: 'Other', idempotencyKey: 'key-1' });
    expect(conflict.status).toBe(409);
    expect((await conflict.json()).error).toMatchObject({ type: 'submission_conflict', meta: { submissionId: first.submissionId } });
    // Keys posted over HTTP live apart from dispatch()'s: the same key from trusted code is a new
    // submission, neither a replay of the client's nor a conflict with it.
    ctx.server.script({ text: 'Twice.' });
    const trusted = await dispatch(Support, { id: 'k', message: { kind: 'user', body: 'Hi' }, idempotencyKey: 'key-1' });
    expect(trusted.submissionId).toMatch(/^sub_ik_[0-9a-f]{32}$/);
    expect(trusted.submissionId).not.toBe(first.submissionId);
    expect(trusted.deduplicated).toBeUndefined();
    expect((await init(Support, { id: 'k' }).read(trusted)).text).toBe('Twice.');
  });

  it('applies uid conditions and initialData', async () => {
    await ctx.start([Support]);
    const app = mounted();
    const created = await send(app, 'u', { kind: 'user', body: 'Hi', uid: null, initialData: { plan: 'pro' } });
    expect(created.status).toBe(202);
    const { uid } = (await created.json()) as AdmissionBody;
    const exists = await send(app, 'u', { kind: 'user', body: 'Again', uid: null });
    expect(exists.status).toBe(409);
    expect((await exists.json()).error).toMatchObject({ type: 'agent_instance_exists', meta: { uid } });
    const stale = await send(app, 'u', { kind: 'user', body: 'Again', uid: 'inst_other' });
    expect(stale.status).toBe(404);
    expect((await stale.json()).error.type).toBe('agent_instance_not_found');
    const absent = await send(app, 'never', { kind: 'user', body: 'Hi', uid: 'inst_x' });
    expect(absent.status).toBe(404);
    expect(await getAgentInstance(Support, 'never')).toBeNull();
    ctx.server.script({ text: 'Hi.' }, { text: 'Again.' });
    const continued = await send(app, 'u', { kind: 'user', body: 'Again', uid });
    expect(continued.status).toBe(202);
  });

  it('admits a signal message where the mount opts in', async () => {
    await ctx.start([Support]);
    const app = mounted(Support, { signals: true });
    ctx.server.script({ text: 'Noted.' });
    const response = await send(app, 's', {
      kind: 'signal',
      type: 'order_update',
      body: '{"id":1}',
      attributes: { orderId: '1' },
      tagName: 'order',
    });
    expect(response.status).toBe(202);
    const { submissionId } = (await response.json()) as AdmissionBody;
    await init(Support, { id: 's' }).read(submissionId);
    const history = await (await get(app, '/s')).json();
    expect(history.messages[0]).toMatchObject({
      role: 'system',
      purpose: 'dispatch',
      display: 'diagnostic',
      signal: { tagName: 'order', attributes: { orderId: '1' } },
      parts: [{ type: 'text', text: '{"id":1}' }],
    });
  });
});

describe('GET /:id (history)', () => {
  it('returns the reduced root conversation with offset, incarnation and headers', async () => {
    await ctx.start([Support]);
    const app = mounted();
    const admission = await converse(app, 'h', 'Hi', 'Hello there.');
    for (const path of ['/h', '/h?view=history']) {
      const response = await get(app, path);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('application/json');
      expect(response.headers.get('cache-control')).toBe('no-store');
      expect(response.headers.get('stream-up-to-date')).toBe('true');
      expectSecurityHeaders(response);
      const snapshot = await response.json();
      expect(response.headers.get('stream-next-offset')).toBe(snapshot.offset);
      expect(snapshot).toMatchObject({
        v: 1,
        conversationId: expect.stringMatching(/^conv_/),
        offset: expect.stringMatching(OFFSET),
        incarnation: expect.stringMatching(/^inc_/),
      });
      expect(snapshot.messages).toEqual([
        expect.objectContaining({
          role: 'user',
          purpose: 'user',
          display: 'visible',
          submissionId: admission.submissionId,
          parts: [{ type: 'text', text: 'Hi', state: 'done' }],
        }),
        expect.objectContaining({
          role: 'assistant',
          purpose: 'assistant',
          display: 'visible',
          parts: [{ type: 'text', text: 'Hello there.', state: 'done' }],
        }),
      ]);
      expect(snapshot.settlements).toEqual([expect.objectContaining({ submissionId: admission.submissionId, outcome: 'completed' })]);
    }
  });
});

describe('GET /:id?view=updates (plain)', () => {
  it('reads from -1: checkpoint first, then a reset, …, the settlement; positions strictly increase', async () => {
    await ctx.start([Support]);
    const app = mounted();
    const admission = await converse(app, 'p');
    const history = await (await get(app, '/p')).json();
    const response = await get(app, '/p?view=updates&offset=-1');
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(response.headers.get('stream-next-offset')).toBe(history.offset);
    expect(response.headers.get('stream-up-to-date')).toBe('true');
    expectSecurityHeaders(response);
    const chunks = (await response.json()) as Chunk[];
    expect(chunks[0]).toEqual({ type: 'stream-checkpoint', incarnation: history.incarnation });
    expect(chunks[1].type).toBe('conversation-reset');
    expect(chunks.map((chunk) => chunk.type)).toContain('message-appended');
    expect(chunks.at(-1)).toMatchObject({ type: 'submission-settled', submissionId: admission.submissionId, outcome: 'completed' });
    expectIncreasing(chunks.slice(1));
  });

  it('reads from a mid offset: only later batches; at the head, just the checkpoint', async () => {
    await ctx.start([Support]);
    const app = mounted();
    await converse(app, 'm');
    const all = ((await (await get(app, '/m?view=updates&offset=-1')).json()) as Chunk[]).slice(1);
    const batches = [...new Set(all.map((chunk) => chunk.position!.batch))];
    const mid = batches[Math.floor((batches.length - 1) / 2)]!;
    // Unpadded offsets are accepted (§2).
    const later = await get(app, `/m?view=updates&offset=0_${mid}`);
    const chunks = ((await later.json()) as Chunk[]).slice(1);
    expect(chunks.length).toBeGreaterThan(0);
    expect(chunks.every((chunk) => chunk.position!.batch > mid)).toBe(true);
    expect(chunks).toEqual(all.filter((chunk) => chunk.position!.batch > mid));
    expectIncreasing(chunks);

    const head = later.headers.get('stream-next-offset')!;
    const atHead = await get(app, `/m?view=updates&offset=${head}`);
    expect(atHead.status).toBe(200);
    expect(await atHead.json()).toEqual([{ type: 'stream-checkpoint', incarnation: expect.stringMatching(/^inc_/) }]);
    expect(atHead.headers.get('stream-next-offset')).toBe(head);
    expect(atHead.headers.get('stream-up-to-date')).toBe('true');
  });
});

describe('HEAD /:id', () => {
  it('answers headers only, and 404 without a body for an unknown instance', async () => {
    await ctx.start([Support]);
    const app = mounted();
    await converse(app, 'hd');
    const history = await (await get(app, '/hd')).json();
    const head = await get(app, '/hd', { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe('');
    expect(head.headers.get('content-type')).toBe('application/json');
    expect(head.headers.get('cache-control')).toBe('no-store');
    expect(head.headers.get('stream-next-offset')).toBe(history.offset);
    expect(head.headers.get('stream-up-to-date')).toBe('true');
    expectSecurityHeaders(head);

    const missing = await get(app, '/nobody', { method: 'HEAD' });
    expect(missing.status).toBe(404);
    expect(await missing.text()).toBe('');
    expect(missing.headers.get('content-type')).toBe('application/json');
    expectSecurityHeaders(missing);
  });
});

describe('POST /:id/abort', () => {
  it('is false for an instance with nothing unsettled, true for running work, which then settles aborted', async () => {
    await ctx.start([Support]);
    const app = mounted();
    const none = await get(app, '/ghost/abort', { method: 'POST' });
    expect(none.status).toBe(200);
    expect(await none.json()).toEqual({ aborted: false });
    expect(await getAgentInstance(Support, 'ghost')).toBeNull();

    ctx.server.script({ text: 'A very long answer', hangAfterChunks: 2 });
    const { submissionId } = (await (await send(app, 'busy', { kind: 'user', body: 'Go' })).json()) as AdmissionBody;
    await ctx.server.waitForRequests(1);
    const aborted = await get(app, '/busy/abort', { method: 'POST' });
    expect(await aborted.json()).toEqual({ aborted: true });
    const error = await init(Support, { id: 'busy' })
      .read(submissionId)
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(AgentRunError);
    expect((error as AgentRunError).outcome).toBe('aborted');
    const history = await (await get(app, '/busy')).json();
    expect(history.settlements).toEqual([expect.objectContaining({ submissionId, outcome: 'aborted' })]);
  });
});

describe('GET /:id/attachments/:attachmentId', () => {
  it('serves the stored bytes with the §9 headers; 404s name what is missing', async () => {
    await ctx.start([Support]);
    const app = mounted();
    const bytes = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3]);
    const data = btoa(String.fromCharCode(...bytes));
    ctx.server.script({ text: 'Nice picture.' });
    const response = await send(app, 'pics', {
      kind: 'user',
      body: 'Look',
      attachments: [{ type: 'image', data, mimeType: 'image/png', filename: 'a.png' }],
    });
    const { submissionId } = (await response.json()) as AdmissionBody;
    await init(Support, { id: 'pics' }).read(submissionId);
    const history = await (await get(app, '/pics')).json();
    const file = history.messages[0].parts.find((part: { type: string }) => part.type === 'file');
    expect(file).toMatchObject({ type: 'file', mediaType: 'image/png', size: bytes.length, filename: 'a.png' });

    const download = await get(app, `/pics/attachments/${encodeURIComponent(file.id)}`);
    expect(download.status).toBe(200);
    expect(new Uint8Array(await download.arrayBuffer())).toEqual(bytes);
    expect(download.headers.get('content-type')).toBe('image/png');
    expect(download.headers.get('content-length')).toBe(String(bytes.length));
    expect(download.headers.get('content-disposition')).toBe('inline');
    expect(download.headers.get('cache-control')).toBe('private, max-age=31536000, immutable');
    expect(download.headers.get('content-security-policy')).toBe('sandbox');
    expectSecurityHeaders(download);

    const unknown = await get(app, '/pics/attachments/att_direct_sub_nope_0');
    expect(unknown.status).toBe(404);
    expect((await unknown.json()).error.type).toBe('attachment_not_found');
    // Another instance's attachment is not this conversation's.
    await converse(app, 'other');
    const foreign = await get(app, `/other/attachments/${encodeURIComponent(file.id)}`);
    expect(foreign.status).toBe(404);
    expect((await foreign.json()).error.type).toBe('attachment_not_found');
    const noStream = await get(app, `/nobody/attachments/${encodeURIComponent(file.id)}`);
    expect(noStream.status).toBe(404);
    expect((await noStream.json()).error.type).toBe('stream_not_found');
    expect(await getAgentInstance(Support, 'nobody')).toBeNull();
  });
});

describe('errors from routes mounted next to the router', () => {
  it('a FlueHttpError escaping a user Hono route renders as its envelope through getResponse()', async () => {
    await ctx.start([Support]);
    const app = mounted();
    // The seed's approval gate: first decision wins; a different one for the same key is a 409.
    app.post('/approvals/:approvalId/:decision', async (c) => {
      const receipt = await dispatch(Support, {
        id: 'approvals',
        message: { kind: 'signal', type: 'approval', body: c.req.param('decision') },
        idempotencyKey: `approval:${c.req.param('approvalId')}`,
      });
      return c.json(receipt, 202);
    });
    ctx.server.script({ text: 'Approved.' });
    const first = await app.fetch(new Request(`${ORIGIN}/approvals/a1/approve`, { method: 'POST' }));
    expect(first.status).toBe(202);
    const second = await app.fetch(new Request(`${ORIGIN}/approvals/a1/reject`, { method: 'POST' }));
    expect(second.status).toBe(409);
    expect(second.headers.get('content-type')).toBe('application/json');
    expect((await second.json()).error).toMatchObject({
      type: 'submission_conflict',
      meta: { submissionId: expect.stringMatching(/^sub_ik_/) },
    });
  });
});

function expectIncreasing(chunks: Chunk[]) {
  for (let i = 1; i < chunks.length; i++) {
    const previous = chunks[i - 1].position!;
    const current = chunks[i].position!;
    const increasing = current.batch > previous.batch || (current.batch === previous.batch && current.index > previous.index);
    expect(increasing, `position ${i}`).toBe(true);
  }
}
