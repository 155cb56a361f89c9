/**
 * Interop on the Node host: the unmodified `@flue/sdk` 2.0.3 client (reading through
 * `@durable-streams/client`) against `createAgentRouter()` mounted in a Hono app, served on
 * loopback HTTP, on `start()` with the scripted model server. Every exchange the SDK makes is
 * recorded and checked against streaming-protocol.md (support/wire-tap.ts).
 */
import { describe, expect, it } from 'vitest';
import { readSubmissionReply, type ConversationLiveMode, type ConversationStreamChunk } from '@flue/sdk';
import { useModel } from '@flue/runtime';
import type { RecordedRequest, ScriptedResponse } from '@flue/runtime/testing';
import { expectConformant, useNodeHost } from './support/node-host.ts';
import { deltaText, eventually, replyMessage, settledIn, sleep, textOf, withTimeout } from './support/observation.ts';
import {
  ALL_TEXT,
  FIRST_TEXT,
  REASONING,
  REPLY_DATA,
  REPLY_METADATA,
  REPLY_TEXT,
  Support,
  expectToolProgress,
  allChunks,
  expectOrderReply,
  orderReplySteps,
  position,
  stateOf,
} from './support/order-script.ts';
import { offsetSeq } from './support/wire-tap.ts';

const { ctx, host } = useNodeHost();

const MODEL = 'anthropic/claude-haiku-4-5';
const OFFSET = /^\d{16}_\d{16}$/;
/** The DS client's default `sseResilience.minConnectionDuration`: shorter SSE connections count as failures. */
const SSE_SHORT_CONNECTION_MS = 1_000;

/** The order conversation (support/order-script.ts), one final-text chunk every `delayMs`. */
function scriptOrderReply(delayMs = 120) {
  ctx.server.script(...orderReplySteps(delayMs));
}

// ── send / read ───────────────────────────────────────────────────────────────────────────────

describe('send → read', () => {
  it('read(admission) resolves with the reply; read(submissionId) re-attaches from the origin; history agrees', async () => {
    const h = await host(Support);
    const client = h.client('t-read');
    scriptOrderReply(0);
    const admission = await client.send({ message: { kind: 'user', body: 'Where is A-1?' } });
    expect(admission).toEqual({
      streamUrl: client.url,
      offset: expect.stringMatching(OFFSET),
      submissionId: expect.stringMatching(/^sub_/),
      uid: expect.stringMatching(/^inst_/),
    });
    const reply = await withTimeout(client.read(admission), 15_000, 'read(admission)');
    const expected = {
      text: REPLY_TEXT,
      data: REPLY_DATA,
      metadata: REPLY_METADATA,
      submissionId: admission.submissionId,
    };
    expect(reply).toEqual({ ...expected, uid: admission.uid });
    expect(await withTimeout(client.read(admission.submissionId), 10_000, 'read(id)')).toEqual(expected);
    const history = await client.history();
    expect(history).toMatchObject({
      v: 1,
      conversationId: expect.stringMatching(/^conv_/),
      offset: expect.stringMatching(OFFSET),
      incarnation: expect.any(String),
    });
    expect(readSubmissionReply(history, admission.submissionId)).toEqual({
      text: expected.text,
      data: expected.data,
      metadata: expected.metadata,
    });
    expect(history.messages[0]).toMatchObject({
      role: 'user',
      purpose: 'user',
      display: 'visible',
      submissionId: admission.submissionId,
      parts: [{ type: 'text', text: 'Where is A-1?', state: 'done' }],
    });
    expectOrderReply(history, admission.submissionId);
    expect(history.settlements).toEqual([
      { submissionId: admission.submissionId, outcome: 'completed', answeredBySubmissionId: admission.submissionId },
    ]);
    // The model saw what the SDK sent.
    expect(ctx.server.requests[0]!.messages.at(-1)).toMatchObject({ role: 'user', content: 'Where is A-1?' });
    await expectConformant(h);
  });

  it('the admission offset misses nothing of its submission: the chunks after it are exactly the origin read past it', async () => {
    const h = await host(Support);
    const client = h.client('t-offset');
    scriptOrderReply(0);
    const admission = await client.send({ message: { kind: 'user', body: 'Where is A-1?' } });
    const fromAdmission: ConversationStreamChunk[] = [];
    await withTimeout(client.wait(admission, { onEvent: (c) => void fromAdmission.push(c) }), 15_000, 'wait(admission)');
    const reference = await allChunks(client, admission);
    expect(reference[0]!.type).toBe('conversation-reset');
    expect(fromAdmission).toEqual(reference.filter((c) => position(c).batch > offsetSeq(admission.offset)));
    // Against the model script: every delta once, in order.
    const replyId = replyMessage((await client.history()).messages, admission.submissionId)!.id;
    expect(deltaText(fromAdmission, replyId)).toBe(ALL_TEXT);
    expect(
      fromAdmission
        .filter((c) => c.type === 'message-delta' && c.kind === 'reasoning')
        .map((c) => (c as { delta: string }).delta)
        .join(''),
    ).toBe(REASONING);
    expect(fromAdmission.find((c) => c.type === 'tool-input')).toMatchObject({
      toolCallId: 'call_order',
      toolName: 'lookup_order',
      input: { orderId: 'A-1' },
      messageId: replyId,
    });
    expect(fromAdmission.find((c) => c.type === 'tool-output')).toMatchObject({
      toolCallId: 'call_order',
      output: { orderId: 'A-1', status: 'shipped' },
    });
    expect(fromAdmission.at(-1)).toMatchObject({ type: 'submission-settled', submissionId: admission.submissionId, outcome: 'completed' });
    await expectConformant(h);
  });
  it('an odd conversation id round-trips: the admission streamUrl is the client URL, so read(admission) accepts it', async () => {
    const h = await host(Support);
    const client = h.client('order #42 / ü?');
    expect(client.url).toMatch(/\/agents\/support\/order%20%2342%20%2F%20%C3%BC%3F$/);
    ctx.server.script({ text: 'Odd but fine.' });
    const admission = await client.send({ message: { kind: 'user', body: 'Hi' } });
    expect(admission.streamUrl).toBe(client.url);
    expect((await withTimeout(client.read(admission), 10_000, 'read')).text).toBe('Odd but fine.');
    const watched = h.observe(client, { live: 'sse' });
    const seen = await watched.until((s) => settledIn(s, admission.submissionId) !== undefined, 5_000, 'settlement');
    expect(seen.conversation).toEqual(stateOf(await client.history()));
    // A different conversation's admission is refused by the SDK itself (the paths differ).
    await expect(h.client('order #42').read(admission)).rejects.toThrow(/different conversation/);
    watched.close();
    await expectConformant(h);
  });

  it('an offset beyond the head is a 416 stream_offset_gone with meta; wait() then restarts from the origin', async () => {
    const h = await host(Support);
    const client = h.client('t-416');
    ctx.server.script({ text: 'Done.' });
    const admission = await client.send({ message: { kind: 'user', body: 'Hi' } });
    await client.read(admission);
    const head = (await client.history()).offset;
    const beyond = `0000000000000000_${String(offsetSeq(head) + 50).padStart(16, '0')}`;
    await withTimeout(client.wait({ ...admission, offset: beyond }), 10_000, 'wait() from beyond the head');
    await withTimeout(h.tap.settled(), 5_000, 'recorded bodies');
    const gone = h.tap.exchanges.find((e) => e.status === 416)!;
    expect(gone.url.searchParams.get('offset')).toBe(beyond);
    expect(gone.json).toMatchObject({ error: { type: 'stream_offset_gone', meta: { offset: beyond, nextOffset: head } } });
    const after = h.tap.exchanges.slice(h.tap.exchanges.indexOf(gone) + 1);
    expect(after[0]!.url.searchParams.get('offset')).toBe('-1');
  });

  it('a delivery that joins a busy response settles with answeredBySubmissionId; the SDK reads the coalesced reply', async () => {
    const h = await host(Support);
    const client = h.client('t-join');
    ctx.server.script(
      {
        text: ['Checking', ' that', ' order.'],
        chunkDelayMs: 150,
        toolCalls: [{ id: 'call_order', name: 'lookup_order', arguments: { orderId: 'A-1' } }],
      },
      { text: 'Both questions are answered.' },
    );
    const host1 = await client.send({ message: { kind: 'user', body: 'Where is A-1?' } });
    await ctx.server.waitForRequests(1);
    const joined = await client.send({ message: { kind: 'user', body: 'And is it insured?' } });
    const joinedReply = await withTimeout(client.read(joined), 15_000, 'read(joined)');
    const hostReply = await client.read(host1);
    expect(hostReply.text).toBe('Checking that order.\n\nBoth questions are answered.');
    expect(joinedReply).toEqual({ ...hostReply, submissionId: joined.submissionId, uid: joined.uid });
    expect(ctx.server.requests).toHaveLength(2);
    expect(ctx.server.requests[1]!.messages.some((m) => m.role === 'user' && m.content.includes('And is it insured?'))).toBe(true);
    const history = await client.history();
    expect(history.settlements).toEqual([
      expect.objectContaining({ submissionId: host1.submissionId, outcome: 'completed', answeredBySubmissionId: host1.submissionId }),
      expect.objectContaining({ submissionId: joined.submissionId, outcome: 'completed', answeredBySubmissionId: host1.submissionId }),
    ]);
    expect(history.messages.filter((m) => m.role === 'assistant')).toHaveLength(1);
    const watched = h.observe(client, { live: 'long-poll' });
    const seen = await watched.until((s) => s.phase === 'live' && s.conversation !== undefined, 5_000, 'live');
    expect(seen.conversation).toEqual(stateOf(history));
    expect(readSubmissionReply(seen.conversation!, joined.submissionId)).toEqual(readSubmissionReply(history, joined.submissionId));
    watched.close();
    await expectConformant(h);
  });
});

describe('a regrown stream (store wiped, same conversation id)', () => {
  it.each([
    { live: 'long-poll' as const, how: 'destroy' as const },
    { live: 'sse' as const, how: 'end' as const },
  ])('observe({ live: $live }) re-hydrates on the new incarnation instead of mixing generations', async ({ live, how }) => {
    const h = await host(Support, { timing: { waitMs: 300, heartbeatMs: 1_000 } });
    const client = h.client(`t-regrow-${live}`);
    ctx.server.script({ text: 'Old generation.' });
    await client.read(await client.send({ message: { kind: 'user', body: 'First life' } }));
    const old = await client.history();
    const watched = h.observe(client, { live });
    await watched.until((s) => s.phase === 'live' && s.conversation !== undefined, 5_000, 'live');
    const following = () => h.http.requests.some((r) => r.path.includes(`live=${live}`) && r.outcome === undefined);
    await eventually(following, 5_000, `a ${live} connection`);
    // A dev-server restart on the in-memory store: the client is cut off while the store is wiped
    // and the conversation regrows past the observer's offset under the same id.
    h.tap.hold();
    await ctx.flue!.stop();
    await ctx.start([Support]);
    const other = h.inProcessClient(`t-regrow-${live}`);
    ctx.server.script({ text: 'New one.' }, { text: 'New two.' });
    await other.read(await other.send({ message: { kind: 'user', body: 'Second life' } }));
    await other.read(await other.send({ message: { kind: 'user', body: 'Still second life' } }));
    const regrown = await other.history();
    expect(regrown.incarnation).not.toBe(old.incarnation);
    expect(offsetSeq(regrown.offset)).toBeGreaterThan(offsetSeq(old.offset));
    // Cut what is still open (the old runtime's stop may already have ended it: its store is closed).
    const isUpdates = (path: string) => path.includes('view=updates');
    expect(how === 'end' ? h.http.endStreaming(isUpdates) : h.http.destroy(isUpdates)).toBeLessThanOrEqual(1);
    const releasedAt = Date.now();
    h.tap.release();
    const final = await watched.until(
      (s) => s.conversation?.conversationId === regrown.conversationId && s.conversation.settlements.length === 2,
      10_000,
      'the new generation',
    );
    expect(final.conversation).toEqual(stateOf(regrown));
    // The client learned of the new generation from the checkpoint of an updates read at its old offset.
    await withTimeout(h.tap.settled(), 5_000, 'recorded bodies');
    const reconnect = h.tap.exchanges.find((e) => e.startedAt >= releasedAt && e.url.searchParams.get('view') === 'updates');
    expect(reconnect?.url.searchParams.get('offset')).toBe(old.offset);
    const checkpoint =
      reconnect?.json !== undefined
        ? (reconnect.json as { incarnation: string }[])[0]
        : (JSON.parse(reconnect!.events![0]!.data) as { incarnation: string }[])[0];
    expect(checkpoint?.incarnation).toBe(regrown.incarnation);
    // No published state mixed the generations.
    const oldIds = new Set(old.messages.map((m) => m.id));
    const newIds = new Set(regrown.messages.map((m) => m.id));
    for (const s of watched.snapshots) {
      if (s.conversation === undefined) continue;
      const ids = s.conversation.conversationId === old.conversationId ? oldIds : newIds;
      for (const m of s.conversation.messages) expect(ids.has(m.id)).toBe(true);
    }
    watched.close();
  });
});

// ── observe ───────────────────────────────────────────────────────────────────────────────────

describe.each<ConversationLiveMode>(['long-poll', 'sse'])('observe({ live: %s })', (live) => {
  it('goes absent → live, sees every chunk in order while the reply streams, and ends equal to history', async () => {
    const h = await host(Support);
    const client = h.client(`t-observe-${live}`);
    const watched = h.observe(client, { live });
    await watched.until((s) => s.phase === 'absent', 5_000, 'absent');
    scriptOrderReply();
    const admission = await client.send({ message: { kind: 'user', body: 'Where is A-1?' } });
    // What @flue/react does after a send into an absent conversation.
    watched.observation.refresh();
    const chunks: ConversationStreamChunk[] = [];
    const waited = client.wait(admission, { onEvent: (c) => void chunks.push(c) });
    const final = await watched.until((s) => settledIn(s, admission.submissionId) !== undefined, 20_000, 'settlement');
    await withTimeout(waited, 5_000, 'wait()');
    expect(final.phase).toBe('live');
    expect(final.error).toBeUndefined();
    const history = await client.history();
    expect(final.conversation).toEqual(stateOf(history));
    expectOrderReply(history, admission.submissionId);

    // Live, not batch: the observer published the final text growing, each state a prefix of the next.
    const texts = watched.snapshots.map((s) => textOf(replyMessage(s.conversation?.messages, admission.submissionId)));
    const partial = texts.filter((t) => t.length > FIRST_TEXT.length && t.length < ALL_TEXT.length);
    expect(partial.length).toBeGreaterThan(0);
    for (let i = 1; i < texts.length; i++) expect(ALL_TEXT.startsWith(texts[i]!) && texts[i]!.startsWith(texts[i - 1]!)).toBe(true);
    // The observer's offset moved forward only, ending at the history offset.
    const offsets = watched.snapshots
      .map((s) => s.offset)
      .filter((o): o is string => o !== undefined)
      .map(offsetSeq);
    for (let i = 1; i < offsets.length; i++) expect(offsets[i]!).toBeGreaterThanOrEqual(offsets[i - 1]!);
    expect(final.offset).toBe(history.offset);

    // The chunks the SDK delivered: strictly increasing positions, the script's text exactly once.
    for (let i = 1; i < chunks.length; i++) {
      const [a, b] = [position(chunks[i - 1]!), position(chunks[i]!)];
      expect(b.batch > a.batch || (b.batch === a.batch && b.index > a.index)).toBe(true);
    }
    expect(deltaText(chunks, replyMessage(history.messages, admission.submissionId)!.id)).toBe(ALL_TEXT);
    // The tool's log lines reached the SDK in a progress chunk before the result, and its state (equal to history) ignored them.
    expectToolProgress(chunks);

    // The follow used the requested live mode after catching up with a plain read.
    const updates = h.tap.exchanges.filter(
      (e) => e.url.searchParams.get('view') === 'updates' && e.url.pathname === new URL(client.url).pathname,
    );
    expect(updates.some((e) => e.url.searchParams.get('live') === live)).toBe(true);
    watched.close();
    await expectConformant(h);
  });

  it('a reader resumed from the offset of an observer stopped mid-response misses nothing and repeats nothing', async () => {
    const h = await host(Support);
    const client = h.client(`t-resume-${live}`);
    scriptOrderReply(150);
    const admission = await client.send({ message: { kind: 'user', body: 'Where is A-1?' } });
    const first = h.observe(client, { live });
    const stopped = await first.until(
      (s) => {
        const text = textOf(replyMessage(s.conversation?.messages, admission.submissionId));
        return s.phase === 'live' && text.length > FIRST_TEXT.length && settledIn(s, admission.submissionId) === undefined;
      },
      20_000,
      'a partial final text',
    );
    first.close();
    expect(stopped.offset).toMatch(OFFSET);
    const resumed: ConversationStreamChunk[] = [];
    await withTimeout(
      client.wait({ ...admission, offset: stopped.offset! }, { onEvent: (c) => void resumed.push(c) }),
      20_000,
      'resumed wait',
    );
    const reference = await allChunks(client, admission);
    const seq = offsetSeq(stopped.offset!);
    // Exactly the batches after the observer's offset...
    expect(resumed).toEqual(reference.filter((c) => position(c).batch > seq));
    // ...and the observer had applied exactly the batches up to it.
    const replyId = replyMessage(stopped.conversation!.messages, admission.submissionId)!.id;
    const before = reference.filter((c) => position(c).batch <= seq);
    expect(textOf(replyMessage(stopped.conversation!.messages, admission.submissionId))).toBe(deltaText(before, replyId));
    expect(deltaText(resumed, replyId).length).toBeGreaterThan(0);
    expect(textOf(replyMessage(stopped.conversation!.messages, admission.submissionId)) + deltaText(resumed, replyId)).toBe(ALL_TEXT);
    await expectConformant(h);
  });
});

describe('server-side connection loss while the reply streams', () => {
  const cases: { live: ConversationLiveMode; how: 'end' | 'destroy' }[] = [
    { live: 'sse', how: 'end' },
    { live: 'sse', how: 'destroy' },
    { live: 'long-poll', how: 'destroy' },
  ];
  it.each(cases)(
    'observe({ live: $live }) recovers when the server does $how to its connection: no gap, no duplicate',
    async ({ live, how }) => {
      const h = await host(Support);
      const client = h.client(`t-drop-${live}-${how}`);
      scriptOrderReply(150);
      const admission = await client.send({ message: { kind: 'user', body: 'Where is A-1?' } });
      const watched = h.observe(client, { live });
      await watched.until(
        (s) => textOf(replyMessage(s.conversation?.messages, admission.submissionId)).length > FIRST_TEXT.length,
        20_000,
        'a partial final text',
      );
      const isUpdates = (path: string) => path.includes('view=updates') && path.includes(`live=${live}`);
      if (live === 'sse') {
        // The drop must end a connection older than the client's 1 s "short connection" threshold
        // (it counts from before its request, so from the server's start is on the safe side).
        let open: { startedAt: number } | undefined;
        await eventually(() => (open = h.http.requests.findLast((r) => isUpdates(r.path) && r.endedAt === undefined)) !== undefined);
        await sleep(Math.max(0, open!.startedAt + SSE_SHORT_CONNECTION_MS + 50 - Date.now()));
      }
      let dropped = 0;
      // Until the observer's updates connection is open (it may be between two long-polls).
      await eventually(() => (dropped = how === 'end' ? h.http.endStreaming(isUpdates) : h.http.destroy(isUpdates)) > 0);
      const droppedAt = Date.now();
      const final = await watched.until((s) => settledIn(s, admission.submissionId) !== undefined, 20_000, 'settlement after the drop');
      const history = await client.history();
      expect(final.conversation).toEqual(stateOf(history));
      expectOrderReply(history, admission.submissionId);
      const texts = watched.snapshots.map((s) => textOf(replyMessage(s.conversation?.messages, admission.submissionId)));
      for (const text of texts) expect(ALL_TEXT.startsWith(text)).toBe(true);
      // It did reconnect (rather than having finished before the drop).
      const later = h.http.requests.filter((r) => r.startedAt >= droppedAt && r.path.includes('view='));
      expect(later.length).toBeGreaterThan(0);
      if (how === 'end') {
        // A clean end: the DS client reconnects SSE from the last control offset it saw.
        const endedExchange = h.tap.exchanges.find(
          (e) => e.url.searchParams.get('live') === 'sse' && e.events?.some((ev) => ev.event === 'control'),
        )!;
        const lastControl = JSON.parse(endedExchange.events!.filter((ev) => ev.event === 'control').at(-1)!.data) as {
          streamNextOffset: string;
        };
        expect(later.some((r) => r.path.includes('live=sse') && r.path.includes(`offset=${lastControl.streamNextOffset}`))).toBe(true);
      }
      watched.close();
      await expectConformant(h);
    },
  );
});

describe('compaction', () => {
  function Chatty() {
    useModel(MODEL, { compaction: { keepRecentTokens: 20 } });
    return 'Chat.';
  }
  const long = 'word '.repeat(120);

  it.each<ConversationLiveMode>(['sse', 'long-poll'])(
    'a compaction reaches a live %s observer as conversation-reset and it stays equal to history',
    async (live) => {
      const h = await host(Chatty, { contextWindow: 2000 });
      const client = h.client(`t-compact-${live}`);
      ctx.server.script({ text: 'Hi.' });
      await client.read(await client.send({ message: { kind: 'user', body: 'Hello' } }));
      const watched = h.observe(client, { live });
      await watched.until((s) => s.phase === 'live' && s.conversation !== undefined, 5_000, 'live');
      // Summarization requests (however many the compaction makes) get a summary; turns get answers.
      const step = (request: RecordedRequest): ScriptedResponse =>
        request.system?.startsWith('Chat.') ? { text: 'second answer' } : { text: 'SUMMARY OF THE EARLIER CONVERSATION' };
      ctx.server.script({ text: long, usage: { input: 1500, output: 100 } }, step, step, step, step);
      const first = await client.send({ message: { kind: 'user', body: 'tell me a long story' } });
      expect((await withTimeout(client.read(first), 15_000, 'read(first)')).text).toBe(long);
      const second = await client.send({ message: { kind: 'user', body: 'and then?' } });
      expect((await withTimeout(client.read(second), 15_000, 'read(second)')).text).toBe('second answer');
      // The compaction happened: the last turn's context starts with the summary.
      expect(ctx.server.requests.at(-1)!.messages[0]!.content).toContain('<compaction type="context_summary">');
      const final = await watched.until((s) => settledIn(s, second.submissionId) !== undefined, 10_000, 'the second settlement');
      const history = await client.history();
      expect(final.conversation).toEqual(stateOf(history));
      const resets = (await allChunks(client, first)).filter((c) => c.type === 'conversation-reset');
      // The creation batch, then the compaction.
      expect(resets.length).toBeGreaterThanOrEqual(2);
      // ...and the observer's live follow carried the compaction reset.
      watched.close();
      await withTimeout(h.tap.settled(), 5_000, 'recorded bodies');
      const liveBodies = h.tap.exchanges
        .filter((e) => e.url.searchParams.get('live') === live)
        .map((e) => JSON.stringify(e.json ?? e.events?.map((ev) => ev.data)));
      expect(liveBodies.some((body) => body.includes('conversation-reset'))).toBe(true);
      await expectConformant(h);
    },
  );
});
