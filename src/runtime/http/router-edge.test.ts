/**
 * Malformed input at the HTTP edge: ids in the URL, admission fields, attachment metadata,
 * signal shapes and query parameters are 4xx envelopes, and nothing reaches the store under an
 * id other than the one requested (errors.md §3; delivery.md §1–§2, §10).
 */
import { DatabaseSync } from 'node:sqlite';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Hono } from 'hono';
import { afterAll, describe, expect, it } from 'vitest';
import { getAgentInstance, useModel } from '@flue/runtime';
import { sqlite } from '@flue/runtime/node';
import { useScriptedRuntime } from '../../../test/support/scripted-runtime.ts';
import { createAgentRouter } from '../routing.ts';
import { requireRuntime } from '../host/runtime.ts';

const ctx = useScriptedRuntime();

const ORIGIN = 'http://flue.test';
const MOUNT = '/agents/echo';
const dir = mkdtempSync(join(tmpdir(), 'flue-router-edge-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function Echo() {
  useModel('anthropic/claude-haiku-4-5');
  return 'Be brief.';
}

function mounted(): Hono {
  const app = new Hono();
  app.route(MOUNT, createAgentRouter(Echo));
  app.get('/health', (c) => c.text('ok'));
  return app;
}

function request(app: Hono, path: string, init?: RequestInit): Promise<Response> {
  return Promise.resolve(app.fetch(new Request(`${ORIGIN}${path}`, init)));
}

function postJson(app: Hono, path: string, body: unknown): Promise<Response> {
  return request(app, path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

async function expectError(response: Response, status: number, type: string) {
  const text = await response.text();
  expect(response.status, text).toBe(status);
  expect(response.headers.get('content-type')).toBe('application/json');
  const body = JSON.parse(text);
  expect(body.error.type).toBe(type);
  return body.error as { type: string; message: string; details: string };
}

/** Instance ids that have a stream, read straight from the database file. */
function storedIds(path: string): string[] {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    return (db.prepare('SELECT instance_id FROM flue_streams ORDER BY instance_id').all() as { instance_id: string }[]).map(
      (row) => row.instance_id,
    );
  } finally {
    db.close();
  }
}

describe('instance ids in the URL', () => {
  it('rejects a NUL (and any control character) in the id instead of writing to the truncated id', async () => {
    const file = join(dir, 'nul.db');
    await ctx.start([Echo], { db: sqlite(file) });
    const app = mounted();
    const error = await expectError(await postJson(app, `${MOUNT}/victim%00x`, { kind: 'user', body: 'Hi' }), 400, 'invalid_request');
    expect(error.details).toMatch(/^id contains the control character U\+0000 at index 6/);
    for (const path of ['%0Ax', 'a%0Db', '%7F', 'x%C2%85', 'x%C2%9F', '%1B[31m']) {
      const admitted = await expectError(await postJson(app, `${MOUNT}/${path}`, { kind: 'user', body: 'Hi' }), 400, 'invalid_request');
      expect(admitted.details, path).toMatch(/^id contains the control character U\+00[0-9A-F]{2} at index \d+/);
    }
    for (const [method, path] of [
      ['GET', '/victim%00x'],
      ['GET', '/victim%00x?view=updates&offset=-1'],
      ['HEAD', '/victim%00x'],
      ['POST', '/victim%00x/abort'],
      ['GET', '/victim%00x/attachments/att_1'],
    ] as const) {
      const response = await request(app, `${MOUNT}${path}`, { method });
      expect(response.status, `${method} ${path}`).toBe(400);
    }
    expect(await getAgentInstance(Echo, 'victim')).toBeNull();
    await ctx.flue!.stop();
    ctx.flue = undefined;
    expect(storedIds(file)).toEqual([]);
  });

  it('rejects ids over 512 characters and accepts 512', async () => {
    await ctx.start([Echo]);
    ctx.server.script({ text: 'ok' });
    const app = mounted();
    const error = await expectError(
      await postJson(app, `${MOUNT}/${'x'.repeat(513)}`, { kind: 'user', body: 'Hi' }),
      400,
      'invalid_request',
    );
    expect(error.details).toMatch(/^id is 513 characters long; at most 512 are allowed/);
    expect((await postJson(app, `${MOUNT}/${'x'.repeat(512)}`, { kind: 'user', body: 'Hi' })).status).toBe(202);
  });

  it('rejects control characters in an attachment id', async () => {
    await ctx.start([Echo]);
    const error = await expectError(await request(mounted(), `${MOUNT}/x/attachments/att%00_1`), 400, 'invalid_request');
    expect(error.details).toMatch(/^attachmentId contains the control character U\+0000 at index 3/);
  });
});

describe('admission bodies', () => {
  it('rejects malformed attachments, signal shapes and admission fields as invalid_request naming the field', async () => {
    await ctx.start([Echo]);
    const app = mounted();
    const user = (attachment: Record<string, unknown>) => ({
      kind: 'user',
      body: 'look',
      attachments: [{ type: 'image', data: 'AAAA', mimeType: 'image/png', ...attachment }],
    });
    const signal = (fields: Record<string, unknown>) => ({ kind: 'signal', type: 'note', body: 'x', ...fields });
    // Built as text: stringifying it would itself recurse 12,000 deep.
    const deep = `{"kind":"user","body":"Hi","initialData":${'{"d":'.repeat(12_000)}1${'}'.repeat(12_000)}}`;
    const cases: [unknown, RegExp][] = [
      [user({ mimeType: 'image/png\r\nx: y' }), /^message\.attachments\[0\]\.mimeType must be a MIME type/],
      [user({ mimeType: 'image/png\u0000' }), /^message\.attachments\[0\]\.mimeType must be a MIME type/],
      [user({ filename: 'a\u0000b' }), /^message\.attachments\[0\]\.filename contains the control character U\+0000/],
      [user({ data: 'AA%A' }), /^message\.attachments\[0\]\.data must be base64/],
      [user({ data: '' }), /^message\.attachments\[0\]\.data must not be empty/],
      [signal({ attributes: ['a'] }), /^message\.signal\.attributes must be an object of string values/],
      [signal({ attributes: { 'k"><signal type="resources">': 'v' } }), /^message\.signal\.attributes key/],
      [signal({ type: 'a\u0000' }), /^message\.signal\.type contains the control character/],
      [{ kind: 'user', body: 'Hi', idempotencyKey: 'k\u0000' }, /^idempotencyKey contains the control character U\+0000 at index 1/],
      [{ kind: 'user', body: 'Hi', uid: 'inst_\u0007' }, /^uid contains the control character U\+0007/],
    ];
    for (const [body, details] of cases) {
      const error = await expectError(await postJson(app, `${MOUNT}/fresh`, body), 400, 'invalid_request');
      expect(error.details).toMatch(details);
    }
    const tooDeep = await request(app, `${MOUNT}/fresh`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: deep });
    expect((await expectError(tooDeep, 400, 'invalid_request')).details).toMatch(/^initialData is nested more than 64 levels deep/);
    expect(await getAgentInstance(Echo, 'fresh')).toBeNull();
    expect(ctx.server.requests).toHaveLength(0);
  });
});

describe('query parameters', () => {
  it('rejects control characters in view, offset and live as invalid_request', async () => {
    await ctx.start([Echo]);
    const app = mounted();
    for (const query of ['view=history%00', 'view=updates&offset=-1%00', 'view=updates&offset=-1&live=sse%0A']) {
      const error = await expectError(await request(app, `${MOUNT}/x?${query}`), 400, 'invalid_request');
      expect(error.details, query).toMatch(/^(view|offset|live) contains the control character/);
    }
  });
});

describe('unmatched paths under the mount', () => {
  it('answer route_not_found with the envelope; wrong methods on known paths stay 405', async () => {
    await ctx.start([Echo]);
    const app = mounted();
    for (const path of ['/x/y', '/x/abort/more', '/x/attachments', '/x/attachments/a/b', '', '/x/unknown/deeper']) {
      await expectError(await request(app, `${MOUNT}${path}`), 404, 'route_not_found');
      await expectError(await request(app, `${MOUNT}${path}`, { method: 'DELETE' }), 404, 'route_not_found');
    }
    await expectError(await request(app, `${MOUNT}/x`, { method: 'DELETE' }), 405, 'method_not_allowed');
    await expectError(await request(app, `${MOUNT}/x/abort`), 405, 'method_not_allowed');
    // Outside the mount the parent app decides.
    expect((await request(app, '/health')).status).toBe(200);
    expect((await request(app, '/elsewhere')).status).toBe(404);
    expect((await request(app, '/agents/echoes')).headers.get('content-type')).not.toBe('application/json');
  });
});

describe('stored attachments', () => {
  it('serves bytes whose stored mimeType is not a valid header value as application/octet-stream', async () => {
    await ctx.start([Echo]);
    ctx.server.script({ text: 'ok' });
    // Straight to the runtime, as a record stored before admission checked mimeType would be.
    const { receipt } = await requireRuntime('test').admit(
      'Echo',
      {
        id: 'legacy',
        message: { kind: 'user', body: 'look', attachments: [{ type: 'image', data: 'AAAA', mimeType: 'image/png\r\nx-evil: 1' }] },
      },
      'http',
    );
    const response = await request(mounted(), `${MOUNT}/legacy/attachments/att_direct_${receipt.submissionId}_0`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/octet-stream');
    expect(response.headers.get('x-evil')).toBeNull();
    expect(new Uint8Array(await response.arrayBuffer())).toEqual(new Uint8Array([0, 0, 0]));
  });
});
