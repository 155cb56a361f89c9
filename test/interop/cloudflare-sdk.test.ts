/**
 * Interop on the Cloudflare host: the unmodified `@flue/sdk` 2.0.3 client against
 * `createAgentRouter()` mounted in a Worker's app.ts, on real workerd. The fixture project
 * (fixtures/cloudflare-app: wrangler.jsonc with migrations, a 'use agent' module, app.ts) is copied
 * to a throwaway directory, built with `flue build` and served by `wrangler dev` on loopback
 * (started here, stopped by PID in afterAll). The model is the scripted server, reached through
 * FLUE_SCRIPTED_MODEL_URL. The router's live-mode windows are the production 30 s here, so no test
 * waits on an idle window.
 */
import { cpSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  FlueApiError,
  FlueExecutionError,
  createFlueClient,
  type ConversationLiveMode,
  type ConversationStreamChunk,
  type FlueClient,
} from '@flue/sdk';
import { startScriptedModelServer, type ScriptedModelServer } from '@flue/runtime/testing';
import { packageRoot } from '../../src/build/package-root.ts';
import { removeDir, tempProject } from '../../src/build/test-project.ts';
import { buildProject, startWranglerDev, type DevServer } from '../support/wrangler-dev.ts';
import { deltaText, replyMessage, settledIn, textOf, watch, withTimeout, type Watched } from './support/observation.ts';
import {
  ALL_TEXT,
  FIRST_TEXT,
  REPLY_DATA,
  REPLY_METADATA,
  REPLY_TEXT,
  allChunks,
  expectOrderReply,
  expectToolProgress,
  orderReplySteps,
  position,
  stateOf,
} from './support/order-script.ts';
import { offsetSeq, protocolViolations, wireTap, type WireTap } from './support/wire-tap.ts';

const FIXTURE = path.join(packageRoot(), 'test/interop/fixtures/cloudflare-app');
const MOUNT = '/agents/support';
const OFFSET = /^\d{16}_\d{16}$/;

let server: ScriptedModelServer;
let project: string | undefined;
let dev: DevServer | undefined;
let base: string;
let tap: WireTap;
const watchers: Watched[] = [];

beforeAll(async () => {
  server = await startScriptedModelServer();
  project = tempProject('interop-cf');
  cpSync(FIXTURE, project, { recursive: true });
  buildProject(project);
  dev = await startWranglerDev(project, { FLUE_SCRIPTED_MODEL_URL: server.url });
  base = dev.base;
}, 150_000);

afterEach(() => {
  for (const watched of watchers.splice(0)) watched.close();
  server.reset();
});

afterAll(async () => {
  await dev?.stop();
  await server?.close();
  if (project !== undefined) removeDir(project);
}, 30_000);

function client(id: string): FlueClient {
  tap = wireTap();
  return createFlueClient({ url: `${base}${MOUNT}/${encodeURIComponent(id)}`, fetch: tap.fetch });
}

function observe(c: FlueClient, live: ConversationLiveMode): Watched {
  const watched = watch(c.observe({ live }));
  watchers.push(watched);
  return watched;
}

async function expectConformant() {
  await withTimeout(tap.settled(), 5_000, 'recorded bodies');
  expect(protocolViolations(tap.exchanges)).toEqual([]);
}

describe('Cloudflare host (wrangler dev)', () => {
  it('serves the fixture app', async () => {
    const response = await fetch(`${base}/`);
    expect(await response.text()).toContain('flue interop fixture');
  });

  it('send → read(admission) resolves with the reply; read(id) and history agree', async () => {
    const c = client('cf-read');
    server.script(...orderReplySteps(0));
    const admission = await c.send({ message: { kind: 'user', body: 'Where is A-1?' } });
    expect(admission).toEqual({
      streamUrl: c.url,
      offset: expect.stringMatching(OFFSET),
      submissionId: expect.stringMatching(/^sub_/),
      uid: expect.stringMatching(/^inst_/),
    });
    const expected = { text: REPLY_TEXT, data: REPLY_DATA, metadata: REPLY_METADATA, submissionId: admission.submissionId };
    expect(await withTimeout(c.read(admission), 30_000, 'read(admission)')).toEqual({ ...expected, uid: admission.uid });
    expect(await withTimeout(c.read(admission.submissionId), 15_000, 'read(id)')).toEqual(expected);
    const history = await c.history();
    expectOrderReply(history, admission.submissionId);
    expect(history.settlements).toEqual([
      { submissionId: admission.submissionId, outcome: 'completed', answeredBySubmissionId: admission.submissionId },
    ]);
    expect(server.requests.at(-1)!.body.model).toBe('claude-haiku-4-5');
    await expectConformant();
  }, 60_000);

  it('observe() in SSE and in long-poll mode both follow a streaming reply live and end equal to history', async () => {
    const c = client('cf-observe');
    server.script({ text: 'Hello.' });
    await withTimeout(c.read(await c.send({ message: { kind: 'user', body: 'Hi' } })), 30_000, 'first read');
    const observers = { sse: observe(c, 'sse'), 'long-poll': observe(c, 'long-poll') };
    for (const watched of Object.values(observers))
      await watched.until((s) => s.phase === 'live' && s.conversation !== undefined, 10_000, 'live');
    server.script(...orderReplySteps(150));
    const admission = await c.send({ message: { kind: 'user', body: 'Where is A-1?' } });
    const chunks: ConversationStreamChunk[] = [];
    const waited = c.wait(admission, { onEvent: (chunk) => void chunks.push(chunk) });
    const finals = await Promise.all(
      Object.values(observers).map((watched) =>
        watched.until((s) => settledIn(s, admission.submissionId) !== undefined, 30_000, 'settlement'),
      ),
    );
    await withTimeout(waited, 10_000, 'wait()');
    const history = await c.history();
    expectOrderReply(history, admission.submissionId);
    for (const [mode, watched] of Object.entries(observers)) {
      const final = finals[Object.keys(observers).indexOf(mode)]!;
      expect(final.conversation, mode).toEqual(stateOf(history));
      const texts = watched.snapshots.map((s) => textOf(replyMessage(s.conversation?.messages, admission.submissionId)));
      expect(
        texts.some((t) => t.length > FIRST_TEXT.length && t.length < ALL_TEXT.length),
        `${mode} saw the text grow`,
      ).toBe(true);
      for (let i = 1; i < texts.length; i++) expect(texts[i]!.startsWith(texts[i - 1]!), mode).toBe(true);
    }
    for (let i = 1; i < chunks.length; i++) {
      const [a, b] = [position(chunks[i - 1]!), position(chunks[i]!)];
      expect(b.batch > a.batch || (b.batch === a.batch && b.index > a.index)).toBe(true);
    }
    expect(deltaText(chunks, replyMessage(history.messages, admission.submissionId)!.id)).toBe(ALL_TEXT);
    // The tool's progress chunk reached the SDK before its result; the observers' states (equal to history) ignored it.
    expectToolProgress(chunks);
    for (const mode of ['sse', 'long-poll']) expect(tap.exchanges.some((e) => e.url.searchParams.get('live') === mode)).toBe(true);
    for (const watched of Object.values(observers)) watched.close();
    await expectConformant();
  }, 90_000);

  it('a reader resumed from the offset of an SSE observer stopped mid-response misses nothing and repeats nothing', async () => {
    const c = client('cf-resume');
    server.script(...orderReplySteps(200));
    const admission = await c.send({ message: { kind: 'user', body: 'Where is A-1?' } });
    const first = observe(c, 'sse');
    const stopped = await first.until(
      (s) => {
        const text = textOf(replyMessage(s.conversation?.messages, admission.submissionId));
        return s.phase === 'live' && text.length > FIRST_TEXT.length && settledIn(s, admission.submissionId) === undefined;
      },
      30_000,
      'a partial final text',
    );
    first.close();
    const resumed: ConversationStreamChunk[] = [];
    await withTimeout(
      c.wait({ ...admission, offset: stopped.offset! }, { onEvent: (chunk) => void resumed.push(chunk) }),
      30_000,
      'resumed wait',
    );
    const reference = await allChunks(c, admission);
    const seq = offsetSeq(stopped.offset!);
    expect(resumed).toEqual(reference.filter((chunk) => position(chunk).batch > seq));
    const replyId = replyMessage(stopped.conversation!.messages, admission.submissionId)!.id;
    expect(textOf(replyMessage(stopped.conversation!.messages, admission.submissionId))).toBe(
      deltaText(
        reference.filter((chunk) => position(chunk).batch <= seq),
        replyId,
      ),
    );
    expect(textOf(replyMessage(stopped.conversation!.messages, admission.submissionId)) + deltaText(resumed, replyId)).toBe(ALL_TEXT);
    await expectConformant();
  }, 90_000);

  it('abort: a hanging model stream is aborted; read() rejects aborted; the observer and history show it', async () => {
    const c = client('cf-abort');
    server.script({ text: ['Working', ' on', ' it', ' now'], hangAfterChunks: 4 });
    const admission = await c.send({ message: { kind: 'user', body: 'Take your time.' } });
    const watched = observe(c, 'sse');
    await watched.until(
      (s) => textOf(replyMessage(s.conversation?.messages, admission.submissionId)) === 'Working on',
      30_000,
      'the partial text before the hang',
    );
    const reading = c.read(admission).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(await withTimeout(c.abort(), 10_000, 'abort')).toEqual({ aborted: true });
    const error = await withTimeout(reading, 30_000, 'read() after abort');
    expect(error).toBeInstanceOf(FlueExecutionError);
    expect(error).toMatchObject({ targetId: admission.submissionId, failure: 'aborted' });
    const final = await watched.until((s) => settledIn(s, admission.submissionId) !== undefined, 15_000, 'the aborted settlement');
    const history = await c.history();
    expect(final.conversation).toEqual(stateOf(history));
    expect(settledIn(final, admission.submissionId)).toMatchObject({ outcome: 'aborted' });
    expect(history.messages.find((m) => m.settlement !== undefined)).toMatchObject({
      role: 'system',
      purpose: 'advisory',
      settlement: { outcome: 'aborted' },
    });
    expect(await c.abort()).toEqual({ aborted: false });
    server.script({ text: 'Back again.' });
    expect((await withTimeout(c.read(await c.send({ message: { kind: 'user', body: 'Hello?' } })), 30_000, 'read after abort')).text).toBe(
      'Back again.',
    );
    watched.close();
    await expectConformant();
  }, 90_000);

  it('conditions and errors surface as the SDK errors with the right status', async () => {
    const c = client('cf-errors');
    const missing = await c.history().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(missing).toBeInstanceOf(FlueApiError);
    expect(missing).toMatchObject({ status: 404, body: { error: { type: 'stream_not_found' } } });
    const watched = observe(c, 'sse');
    await watched.until((s) => s.phase === 'absent', 10_000, 'absent');
    server.script({ text: 'Once.' });
    const created = await c.send({ message: { kind: 'user', body: 'Hi' }, uid: null, idempotencyKey: 'k-1' });
    const replay = await c.send({ message: { kind: 'user', body: 'Hi' }, uid: null, idempotencyKey: 'k-1' });
    expect(replay).toEqual({ ...created, offset: '-1', deduplicated: true });
    expect((await withTimeout(c.read(replay), 30_000, 'read(replay)')).text).toBe('Once.');
    const rejected = async (promise: Promise<unknown>) =>
      (await promise.then(
        () => undefined,
        (e: unknown) => e,
      )) as FlueApiError;
    expect(await rejected(c.send({ message: { kind: 'user', body: 'Again' }, uid: null }))).toMatchObject({
      status: 409,
      body: { error: { type: 'agent_instance_exists', meta: { uid: created.uid } } },
    });
    expect(await rejected(c.send({ message: { kind: 'user', body: 'Again' }, uid: 'inst_other' }))).toMatchObject({
      status: 404,
      body: { error: { type: 'agent_instance_not_found' } },
    });
    expect(await rejected(c.send({ message: { kind: 'user', body: 'Different' }, idempotencyKey: 'k-1' }))).toMatchObject({
      status: 409,
      body: { error: { type: 'submission_conflict', meta: { submissionId: created.submissionId } } },
    });
    expect(server.requests).toHaveLength(1);
    // An offset beyond the head: 416 stream_offset_gone with meta; wait() restarts from the origin.
    const head = (await c.history()).offset;
    const beyond = `0000000000000000_${String(offsetSeq(head) + 50).padStart(16, '0')}`;
    await withTimeout(c.wait({ ...created, offset: beyond }), 15_000, 'wait() from beyond the head');
    const gone = tap.exchanges.find((e) => e.status === 416)!;
    await gone.done;
    expect(gone.json).toMatchObject({ error: { type: 'stream_offset_gone', meta: { offset: beyond, nextOffset: head } } });
    watched.close();
    await expectConformant();
  }, 60_000);
});
