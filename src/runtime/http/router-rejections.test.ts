/**
 * Every caller mistake the router rejects, with its status and `error.type`, and that a rejected
 * admission stores nothing (streaming-protocol.md §4–§6, §9; delivery.md §1, §10; errors.md §3).
 */
import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import * as v from 'valibot';
import { getAgentInstance, init, useModel, type Agent } from '@flue/runtime';
import { useScriptedRuntime } from '../../../test/support/scripted-runtime.ts';
import { formatOffset } from '../engine/conversation.ts';
import { createAgentRouter } from '../routing.ts';

const ctx = useScriptedRuntime();

const ORIGIN = 'http://flue.test';
const MOUNT = '/agents/support';

function Support() {
  useModel('anthropic/claude-haiku-4-5');
  return 'Be brief.';
}

function Typed() {
  useModel('anthropic/claude-haiku-4-5');
}
Typed.initialData = v.object({ plan: v.picklist(['free', 'pro']) });

function mounted(agent: Agent = Support): Hono {
  return new Hono().route(MOUNT, createAgentRouter(agent));
}

function request(app: Hono, path: string, init?: RequestInit): Promise<Response> {
  return Promise.resolve(app.fetch(new Request(`${ORIGIN}${MOUNT}${path}`, init)));
}

function postJson(app: Hono, path: string, body: unknown): Promise<Response> {
  return request(app, path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

/** An error response: status, envelope type, the error headers; returns the envelope. */
async function expectError(response: Response, status: number, type: string) {
  const text = await response.text();
  expect(response.status, text).toBe(status);
  expect(response.headers.get('content-type')).toBe('application/json');
  expect(response.headers.get('x-content-type-options')).toBe('nosniff');
  expect(response.headers.get('cross-origin-resource-policy')).toBe('cross-origin');
  // Caller mistakes are not logged, so they carry no ref.
  expect(response.headers.get('flue-error-ref')).toBeNull();
  const body = JSON.parse(text);
  expect(body.error.type).toBe(type);
  expect(body.error.ref).toBeUndefined();
  return body.error as { type: string; message: string; details: string; meta?: Record<string, unknown> };
}

async function existing(app: Hono, id: string): Promise<string> {
  ctx.server.script({ text: 'Hello.' });
  const response = await postJson(app, `/${id}`, { kind: 'user', body: 'Hi' });
  const { submissionId } = await response.json();
  await init(Support, { id }).read(submissionId);
  return (await request(app, `/${id}`, { method: 'HEAD' })).headers.get('stream-next-offset')!;
}

describe('POST /:id rejections store nothing', () => {
  it('rejects body encoding mistakes: invalid_json, 415, missing body', async () => {
    await ctx.start([Support]);
    const app = mounted();
    const cases: [RequestInit, number, string][] = [
      [{ headers: { 'content-type': 'application/json' }, body: '{"kind":' }, 400, 'invalid_json'],
      [{ headers: { 'content-type': 'application/json' }, body: '   ' }, 400, 'invalid_json'],
      [{ headers: { 'content-type': 'text/plain' }, body: '{"kind":"user","body":"Hi"}' }, 415, 'unsupported_media_type'],
      [{ headers: { 'content-type': 'application/jsonx' }, body: '{"kind":"user","body":"Hi"}' }, 415, 'unsupported_media_type'],
      [{ body: new Blob(['{"kind":"user","body":"Hi"}']) }, 415, 'unsupported_media_type'],
      [{ headers: { 'content-type': 'application/json' } }, 400, 'invalid_request'],
      [{}, 400, 'invalid_request'],
    ];
    for (const [init, status, type] of cases) {
      await expectError(await request(app, '/fresh', { method: 'POST', ...init }), status, type);
    }
    expect(await getAgentInstance(Support, 'fresh')).toBeNull();
    expect(ctx.server.requests).toHaveLength(0);
  });

  it('accepts JSON content types with parameters and +json suffixes', async () => {
    await ctx.start([Support]);
    const app = mounted();
    ctx.server.script({ text: 'a' }, { text: 'b' });
    for (const type of ['application/json; charset=utf-8', 'application/vnd.flue+json']) {
      const response = await request(app, '/ct', {
        method: 'POST',
        headers: { 'content-type': type },
        body: '{"kind":"user","body":"Hi"}',
      });
      expect(response.status).toBe(202);
    }
  });

  it('rejects non-object bodies, the string shorthand and malformed messages as invalid_request', async () => {
    await ctx.start([Support]);
    const app = mounted();
    const bodies: [unknown, RegExp?][] = [
      [[]],
      [42],
      [null],
      [true],
      ['hello', /shorthand/],
      [{ body: 'no kind' }, /kind/],
      [{ kind: 'assistant', body: 'Hi' }, /kind/],
      [{ kind: 'user', body: 42 }, /body/],
      [{ kind: 'user', body: 'Hi', attachments: [{ type: 'document', data: 'AA==', mimeType: 'text/plain' }] }, /application\/pdf/],
      [{ kind: 'signal', type: 'compaction', body: 'x' }, /reserved/],
      [{ kind: 'signal', type: '', body: 'x' }, /type/],
      [{ kind: 'signal', type: 'ok', body: 'x', tagName: '1bad' }, /tagName/],
      [{ kind: 'signal', type: 'ok', body: 'x', tagName: 'a b' }, /tagName/],
      [{ kind: 'signal', type: 'ok', body: 'x', attributes: { n: 1 } }, /attributes/],
      [{ kind: 'user', body: 'Hi', uid: 42 }, /uid/],
      [{ kind: 'user', body: 'Hi', uid: {} }, /uid/],
      [{ kind: 'user', body: 'Hi', idempotencyKey: '' }, /idempotencyKey/],
      [{ kind: 'user', body: 'Hi', idempotencyKey: 7 }, /idempotencyKey/],
      [{ kind: 'user', body: 'Hi', idempotencyKey: 'k'.repeat(257) }, /idempotencyKey/],
      [{ kind: 'user', body: 'Hi', uid: 'inst_x', initialData: {} }, /uid/],
    ];
    for (const [body, details] of bodies) {
      const error = await expectError(await postJson(app, '/fresh', body), 400, 'invalid_request');
      if (details) expect(error.details, JSON.stringify(body)).toMatch(details);
    }
    expect(await getAgentInstance(Support, 'fresh')).toBeNull();
    expect(ctx.server.requests).toHaveLength(0);
  });

  it('refuses an attachment over 14 MiB of base64 as payload_too_large (413)', async () => {
    await ctx.start([Support]);
    const app = mounted();
    const body = {
      kind: 'user',
      body: 'Hi',
      attachments: [{ type: 'image', data: 'A'.repeat(14 * 1024 * 1024 + 4), mimeType: 'image/png' }],
    };
    const error = await expectError(await postJson(app, '/fresh', body), 413, 'payload_too_large');
    expect(error.meta).toEqual({ field: 'message.attachments[0].data', limit: 14 * 1024 * 1024, size: 14 * 1024 * 1024 + 4 });
    expect(await getAgentInstance(Support, 'fresh')).toBeNull();
  });

  it('rejects ?wait in any form, and an empty or blank id', async () => {
    await ctx.start([Support]);
    const app = mounted();
    for (const query of ['?wait', '?wait=true', '?wait=30&x=1']) {
      await expectError(await postJson(app, `/fresh${query}`, { kind: 'user', body: 'Hi' }), 400, 'invalid_request');
    }
    await expectError(await postJson(app, '/', { kind: 'user', body: 'Hi' }), 400, 'invalid_request');
    await expectError(await postJson(app, '/%20%20', { kind: 'user', body: 'Hi' }), 400, 'invalid_request');
    await expectError(await request(app, '/', { method: 'GET' }), 400, 'invalid_request');
    await expectError(await request(app, '//abort', { method: 'POST' }), 400, 'invalid_request');
    expect(await getAgentInstance(Support, 'fresh')).toBeNull();
    expect(ctx.server.requests).toHaveLength(0);
  });

  it('rejects initialData failing the agent schema on a creating send', async () => {
    await ctx.start([Typed]);
    const app = mounted(Typed);
    await expectError(await postJson(app, '/t', { kind: 'user', body: 'Hi', initialData: { plan: 'gold' } }), 400, 'invalid_request');
    await expectError(await postJson(app, '/t', { kind: 'user', body: 'Hi' }), 400, 'invalid_request');
    expect(await getAgentInstance(Typed, 't')).toBeNull();
  });

  it('a rejected send to an existing instance appends nothing', async () => {
    await ctx.start([Support]);
    const app = mounted();
    const head = await existing(app, 'live');
    const requests = ctx.server.requests.length;
    await expectError(await postJson(app, '/live', { kind: 'signal', type: 'memory', body: 'x' }), 400, 'invalid_request');
    await expectError(await postJson(app, '/live?wait', { kind: 'user', body: 'Hi' }), 400, 'invalid_request');
    const after = await request(app, '/live', { method: 'HEAD' });
    expect(after.headers.get('stream-next-offset')).toBe(head);
    const history = await (await request(app, '/live')).json();
    expect(history.settlements).toHaveLength(1);
    expect(ctx.server.requests).toHaveLength(requests);
  });
});

describe('GET /:id query rejections', () => {
  it('validates the updates query: offset exactly once and well-formed, no tail, known live modes', async () => {
    await ctx.start([Support]);
    const app = mounted();
    await existing(app, 'q');
    const bad = [
      '?view=updates',
      '?view=updates&offset=abc',
      '?view=updates&offset=1',
      '?view=updates&offset=-2',
      '?view=updates&offset=',
      '?view=updates&offset=0_',
      '?view=updates&offset=_1',
      '?view=updates&offset=0_1.5',
      '?view=updates&offset=-1&offset=-1',
      '?view=updates&offset=-1&tail=5',
      '?view=updates&offset=-1&tail',
      '?view=updates&offset=-1&live=poll',
      '?view=updates&offset=-1&live=',
      '?view=updates&offset=-1&live=sse&live=sse',
    ];
    for (const query of bad) {
      const error = await expectError(await request(app, `/q${query}`), 400, 'invalid_request');
      expect(error.details, query).not.toBe('');
    }
  });

  it('validates the history view: no offset, tail or live; known views only', async () => {
    await ctx.start([Support]);
    const app = mounted();
    await existing(app, 'q');
    for (const query of [
      '?offset=-1',
      '?view=history&offset=-1',
      '?tail=1',
      '?view=history&live=sse',
      '?live=long-poll',
      '?view=bogus',
      '?view=',
      '?view=history&view=updates',
    ]) {
      await expectError(await request(app, `/q${query}`), 400, 'invalid_request');
    }
    // Unknown query parameters are ignored (the DS client may add some).
    expect((await request(app, '/q?cursor=1')).status).toBe(200);
    expect((await request(app, '/q?view=updates&offset=-1&cursor=1')).status).toBe(200);
  });

  it('answers 416 stream_offset_gone with meta for an offset beyond the head, in every mode', async () => {
    await ctx.start([Support]);
    const app = mounted();
    const head = await existing(app, 'g');
    const headSeq = Number(head.split('_')[1]);
    const beyond = formatOffset(headSeq + 5);
    for (const live of ['', '&live=long-poll', '&live=sse']) {
      const response = await request(app, `/g?view=updates&offset=${beyond}${live}`);
      const error = await expectError(response, 416, 'stream_offset_gone');
      expect(error.meta).toEqual({ offset: beyond, nextOffset: head });
    }
    const unpadded = `0_${headSeq + 1}`;
    const error = await expectError(await request(app, `/g?view=updates&offset=${unpadded}`), 416, 'stream_offset_gone');
    expect(error.meta).toEqual({ offset: unpadded, nextOffset: head });
  });

  it('answers 404 stream_not_found for every read of a never-contacted instance', async () => {
    await ctx.start([Support]);
    const app = mounted();
    for (const query of [
      '',
      '?view=history',
      '?view=updates&offset=-1',
      '?view=updates&offset=-1&live=long-poll',
      '?view=updates&offset=-1&live=sse',
    ]) {
      await expectError(await request(app, `/nobody${query}`), 404, 'stream_not_found');
    }
    await expectError(await request(app, '/nobody/attachments/att_1'), 404, 'stream_not_found');
    const head = await request(app, '/nobody', { method: 'HEAD' });
    expect(head.status).toBe(404);
    expect(await head.text()).toBe('');
    expect(await getAgentInstance(Support, 'nobody')).toBeNull();
  });
});

describe('wrong methods and unknown paths', () => {
  it('answers 405 with Allow on known paths', async () => {
    await ctx.start([Support]);
    const app = mounted();
    const cases: [string, string, string][] = [
      ['PUT', '/x', 'GET, HEAD, POST'],
      ['DELETE', '/x', 'GET, HEAD, POST'],
      ['PATCH', '/x', 'GET, HEAD, POST'],
      ['OPTIONS', '/x', 'GET, HEAD, POST'],
      ['GET', '/x/abort', 'POST'],
      ['PUT', '/x/abort', 'POST'],
      ['POST', '/x/attachments/att_1', 'GET'],
      ['DELETE', '/x/attachments/att_1', 'GET'],
    ];
    for (const [method, path, allow] of cases) {
      const response = await request(app, path, { method });
      await expectError(response, 405, 'method_not_allowed');
      expect(response.headers.get('allow'), `${method} ${path}`).toBe(allow);
    }
    expect(await getAgentInstance(Support, 'x')).toBeNull();
  });

  it('answers 404 route_not_found for unknown paths when served on its own', async () => {
    await ctx.start([Support]);
    const router = createAgentRouter(Support);
    await expectError(await router.fetch(new Request(`${ORIGIN}/x/unknown/deeper`)), 404, 'route_not_found');
  });
});
