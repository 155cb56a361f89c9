/**
 * The live modes of the updates view against the real Node runtime: long-poll parking, timeout
 * and client disconnect, and the SSE framing and loop (streaming-protocol.md §6).
 */
import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { init, useModel } from '@flue/runtime';
import { useScriptedRuntime } from '../../../test/support/scripted-runtime.ts';
import { buildAgentRouter, type RouterTiming } from './router.ts';
import { configuredRuntime } from '../host/runtime.ts';
import type { ConversationView } from '../engine/conversation-view.ts';
import { until } from '../../../test/support/engine.ts';

const ctx = useScriptedRuntime();

const ORIGIN = 'http://flue.test';
const MOUNT = '/agents/support';

function Support() {
  useModel('anthropic/claude-haiku-4-5');
  return 'Be brief.';
}

function mounted(timing: Partial<RouterTiming>): Hono {
  return new Hono().route(MOUNT, buildAgentRouter(Support, timing));
}

function request(app: Hono, path: string, init?: RequestInit): Promise<Response> {
  return Promise.resolve(app.fetch(new Request(`${ORIGIN}${MOUNT}${path}`, init)));
}

async function send(app: Hono, id: string, text: string, reply: string): Promise<string> {
  ctx.server.script({ text: reply });
  const response = await request(app, `/${id}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ kind: 'user', body: text }),
  });
  expect(response.status).toBe(202);
  return ((await response.json()) as { submissionId: string }).submissionId;
}

/** Sends and waits for the settlement; returns the head after it. */
async function converse(app: Hono, id: string): Promise<string> {
  const submissionId = await send(app, id, 'Hi', 'Hello.');
  await init(Support, { id }).read(submissionId);
  return (await request(app, `/${id}`, { method: 'HEAD' })).headers.get('stream-next-offset')!;
}

function seqOf(offset: string): number {
  return offset === '-1' ? -1 : Number(offset.split('_')[1]);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Reads parked on the conversation: the listeners of its fold in the Node runtime's engine. */
function waitersOf(id: string): number {
  const engine = configuredRuntime() as unknown as { view: ConversationView };
  return engine.view.live('Support', id).listeners.size;
}

type Chunk = { type: string; position?: { batch: number; index: number }; [key: string]: unknown };

/** A long-poll window no test outlives. */
const PARK_FOREVER_MS = 3_600_000;

describe('live=long-poll', () => {
  it('parks at the head and answers as soon as an append lands', async () => {
    await ctx.start([Support]);
    const app = mounted({ waitMs: 10_000 });
    const head = await converse(app, 'lp');
    let settled = false;
    const listening = waitersOf('lp');
    const parked = request(app, `/lp?view=updates&offset=${head}&live=long-poll`).finally(() => {
      settled = true;
    });
    // Parked: the read waits on the conversation (a sleep here would pass without parking on a
    // slow machine, the append then answering at once).
    await until(() => waitersOf('lp') > listening);
    expect(settled).toBe(false);
    await send(app, 'lp', 'Again', 'Hello again.');
    // An answer at the end of the window would carry nothing but the checkpoint: the batches after
    // the head below show the append woke it.
    const response = await parked;
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    const chunks = (await response.json()) as Chunk[];
    expect(chunks[0].type).toBe('stream-checkpoint');
    expect(chunks.length).toBeGreaterThan(1);
    expect(chunks.slice(1).every((chunk) => chunk.position!.batch > seqOf(head))).toBe(true);
    expect(seqOf(response.headers.get('stream-next-offset')!)).toBeGreaterThan(seqOf(head));
  });

  it('answers at once when batches exist after the offset', async () => {
    await ctx.start([Support]);
    // A window far beyond the test's timeout: an answer at all shows it did not park.
    const app = mounted({ waitMs: PARK_FOREVER_MS });
    await converse(app, 'now');
    const response = await request(app, '/now?view=updates&offset=-1&live=long-poll');
    const chunks = (await response.json()) as Chunk[];
    expect(chunks.map((chunk) => chunk.type).slice(0, 2)).toEqual(['stream-checkpoint', 'conversation-reset']);
    expect(response.headers.get('stream-up-to-date')).toBe('true');
  });

  it('times out with [checkpoint], the offset unchanged and Stream-Up-To-Date', async () => {
    await ctx.start([Support]);
    const app = mounted({ waitMs: 150 });
    const head = await converse(app, 'idle');
    const started = Date.now();
    const response = await request(app, `/idle?view=updates&offset=${head}&live=long-poll`);
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual([{ type: 'stream-checkpoint', incarnation: expect.stringMatching(/^inc_/) }]);
    expect(response.headers.get('stream-next-offset')).toBe(head);
    expect(response.headers.get('stream-up-to-date')).toBe('true');
  });

  it('answers 499 with an empty body when the client disconnects while parked', async () => {
    await ctx.start([Support]);
    // A window far beyond the test's timeout: the answer can only come from noticing the disconnect.
    const app = mounted({ waitMs: PARK_FOREVER_MS });
    const head = await converse(app, 'gone');
    const client = new AbortController();
    const listening = waitersOf('gone');
    const parked = request(app, `/gone?view=updates&offset=${head}&live=long-poll`, { signal: client.signal });
    await until(() => waitersOf('gone') > listening);
    client.abort();
    const response = await parked;
    expect(response.status).toBe(499);
    expect(await response.text()).toBe('');
  });
});

interface SseEvent {
  raw: string;
  event?: string;
  data?: unknown;
  comment?: string;
}

/** Splits an event stream into its blocks; keeps each raw block to check the exact framing. */
function sseReader(response: Response) {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  return {
    async next(timeoutMs = 5_000): Promise<SseEvent> {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const end = buffer.indexOf('\n\n');
        if (end >= 0) {
          const raw = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          return parseBlock(raw);
        }
        const remaining = deadline - Date.now();
        if (remaining <= 0) throw new Error(`no SSE event within ${timeoutMs} ms`);
        const read = await Promise.race([reader.read(), sleep(remaining).then(() => undefined)]);
        if (read === undefined) continue;
        if (read.done) throw new Error('SSE stream ended');
        buffer += read.value;
      }
    },
    /** Next event that is not a heartbeat. */
    async nextEvent(timeoutMs?: number): Promise<SseEvent> {
      for (;;) {
        const event = await this.next(timeoutMs);
        if (event.comment === undefined) return event;
      }
    },
    async ended(): Promise<boolean> {
      for (;;) {
        const read = await reader.read();
        if (read.done) return true;
      }
    },
    cancel: () => reader.cancel(),
  };
}

function parseBlock(raw: string): SseEvent {
  if (raw.startsWith(':')) return { raw, comment: raw.slice(1).trim() };
  const event: SseEvent = { raw };
  for (const line of raw.split('\n')) {
    if (line.startsWith('event: ')) event.event = line.slice('event: '.length);
    else if (line.startsWith('data:')) event.data = JSON.parse(line.slice('data:'.length));
  }
  return event;
}

describe('live=sse', () => {
  it('frames checkpoint, data and control events exactly, then follows appends', async () => {
    await ctx.start([Support]);
    const app = mounted({ waitMs: 5_000, heartbeatMs: 60_000 });
    const head = await converse(app, 'sse');
    const history = await (await request(app, '/sse')).json();
    const response = await request(app, '/sse?view=updates&offset=-1&live=sse');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    expect(response.headers.get('cache-control')).toBe('no-cache');
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    expect(response.headers.get('cross-origin-resource-policy')).toBe('cross-origin');
    expect(response.headers.get('stream-next-offset')).toBeNull();
    const events = sseReader(response);

    const first = await events.next();
    expect(first.raw).toBe(`event: data\ndata:${JSON.stringify([{ type: 'stream-checkpoint', incarnation: history.incarnation }])}`);
    const data = await events.nextEvent();
    expect(data.event).toBe('data');
    const chunks = data.data as Chunk[];
    expect(chunks[0].type).toBe('conversation-reset');
    expect(chunks.at(-1)!.type).toBe('submission-settled');
    const control = await events.nextEvent();
    expect(control.raw).toBe(`event: control\ndata:${JSON.stringify({ streamNextOffset: head, upToDate: true })}`);

    // An append while the connection waits arrives as data, followed by a control.
    const submissionId = await send(app, 'sse', 'Again', 'Hello again.');
    const seen: Chunk[] = [];
    let lastControl: { streamNextOffset: string; upToDate?: true } | undefined;
    while (!seen.some((chunk) => chunk.type === 'submission-settled' && chunk.submissionId === submissionId)) {
      const event = await events.nextEvent();
      if (event.event === 'data') seen.push(...(event.data as Chunk[]));
      else lastControl = event.data as typeof lastControl;
    }
    expect(seen.every((chunk) => chunk.position!.batch > seqOf(head))).toBe(true);
    for (let i = 1; i < seen.length; i++) {
      const [a, b] = [seen[i - 1].position!, seen[i].position!];
      expect(b.batch > a.batch || (b.batch === a.batch && b.index > a.index)).toBe(true);
    }
    const afterData = await events.nextEvent();
    expect(afterData.event).toBe('control');
    expect(lastControl === undefined || seqOf(lastControl.streamNextOffset) > seqOf(head)).toBe(true);
    await events.cancel();
  });

  it('resumes from a mid offset and emits a control at least every window while caught up', async () => {
    await ctx.start([Support]);
    const app = mounted({ waitMs: 100, heartbeatMs: 60_000 });
    const head = await converse(app, 'quiet');
    const events = sseReader(await request(app, `/quiet?view=updates&offset=${head}&live=sse`));
    expect((await events.next()).data).toEqual([{ type: 'stream-checkpoint', incarnation: expect.stringMatching(/^inc_/) }]);
    // At the head: no data event, only controls, repeated every window.
    for (let i = 0; i < 3; i++) {
      const control = await events.nextEvent(2_000);
      expect(control.event).toBe('control');
      expect(control.data).toEqual({ streamNextOffset: head, upToDate: true });
    }
    await events.cancel();
  });

  it('sends heartbeat comments and stops when the client goes away', async () => {
    await ctx.start([Support]);
    const app = mounted({ waitMs: 10_000, heartbeatMs: 30 });
    const head = await converse(app, 'hb');
    const client = new AbortController();
    const events = sseReader(await request(app, `/hb?view=updates&offset=${head}&live=sse`, { signal: client.signal }));
    let heartbeat: SseEvent | undefined;
    while (heartbeat === undefined) {
      const event = await events.next(2_000);
      if (event.comment !== undefined) heartbeat = event;
    }
    expect(heartbeat.raw).toBe(': heartbeat');
    client.abort();
    expect(await events.ended()).toBe(true);
  });
});
