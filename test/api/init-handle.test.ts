/**
 * init() handles: argument validation, handle.dispatch payload rules and incarnation pinning,
 * read() (receipt or id, re-attachable, signal, onEvent), abort(), AgentRunError, and
 * getAgentInstance() (seed 004 "init()", "AgentReply", "AgentRunError", "getAgentInstance()";
 * delivery.md §6–§8).
 */
import { describe, expect, it } from 'vitest';
import {
  AgentInstanceExistsError,
  AgentInstanceNotFoundError,
  AgentRunError,
  InvalidRequestError,
  dispatch,
  getAgentInstance,
  init,
  useModel,
  type Agent,
  type ConversationStreamChunk,
} from '@flue/runtime';
import { useScriptedRuntime } from '../support/scripted-runtime.ts';
import { MODEL, expectFlueError, expectPlainFlueError, rejection, thrown, within } from './helpers.ts';

const ctx = useScriptedRuntime();

function Helper() {
  useModel(MODEL);
  return 'Be helpful.';
}

function Unregistered() {
  useModel(MODEL);
}

function BadModel() {
  useModel('nope/x');
}

describe('init(): arguments', () => {
  it('throws InvalidRequestError synchronously for a non-function agent, even with no runtime', () => {
    for (const agent of [undefined, null, 'Helper', 1, {}]) {
      const error = thrown(() => init(agent as unknown as Agent, { id: 'x' }));
      expectFlueError(error, InvalidRequestError, 'invalid_request');
    }
  });

  it('throws a plain Error for an empty, whitespace-only or non-string id', () => {
    for (const id of ['', '  ', 42, null, {}]) {
      const error = thrown(() => init(Helper, { id: id as never }));
      expectPlainFlueError(error, /instance id/);
    }
  });

  it('mints a fresh instance_<ULID> id when id is omitted', () => {
    const a = init(Helper);
    const b = init(Helper, {});
    expect(a.id).toMatch(/^instance_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(b.id).toMatch(/^instance_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(a.id).not.toBe(b.id);
    expect(init(Helper, { id: 'given' }).id).toBe('given');
  });

  it('does no I/O and creates nothing: safe before start(), instance only appears on first send', async () => {
    const handle = init(Helper, { id: 'lazy' });
    // Verbs resolve the runtime per call, so they reject while none is configured.
    expectPlainFlueError(await rejection(handle.dispatch('hi')), /configured/);
    expectPlainFlueError(await rejection(handle.read('sub_x')), /configured/);
    expectPlainFlueError(await rejection(handle.abort()), /configured/);
    await ctx.start([Helper]);
    expect(await getAgentInstance(Helper, 'lazy')).toBeNull();
    ctx.server.script({ text: 'hello' });
    const receipt = await handle.dispatch('hi');
    expect(await getAgentInstance(Helper, 'lazy')).toEqual({ id: 'lazy', uid: receipt.uid });
    await handle.read(receipt);
  });

  it('handle verbs on an unregistered agent reject with a plain Error', async () => {
    await ctx.start([Helper]);
    const handle = init(Unregistered, { id: 'x' });
    expectPlainFlueError(await rejection(handle.dispatch('hi')), /not registered/);
    expectPlainFlueError(await rejection(handle.read('sub_x')), /not registered/);
  });
});

describe('handle.dispatch()', () => {
  it('accepts the string shorthand for { message }', async () => {
    await ctx.start([Helper]);
    ctx.server.script({ text: 'reply' });
    const handle = init(Helper, { id: 'short' });
    const receipt = await handle.dispatch('STRING-SHORTHAND');
    await handle.read(receipt);
    const last = ctx.server.requests[0]!.messages.at(-1)!;
    expect(last).toMatchObject({ role: 'user', content: 'STRING-SHORTHAND' });
  });

  it.each([
    ['an empty object', {}],
    ['an object without message', { initialData: { a: 1 } }],
    ['null', null],
    ['a number', 5],
  ])('rejects a payload that is %s with a plain Error', async (_label, payload) => {
    await ctx.start([Helper]);
    const error = await rejection(init(Helper, { id: 'p' }).dispatch(payload as never));
    expectPlainFlueError(error);
    expect(await getAgentInstance(Helper, 'p')).toBeNull();
  });

  it.each([
    ['id', { message: 'hi', id: 'other' }],
    ['uid', { message: 'hi', uid: null }],
    ['uid (string)', { message: 'hi', uid: 'inst_x' }],
  ])('rejects a payload carrying %s with a plain Error', async (_label, payload) => {
    await ctx.start([Helper]);
    const error = await rejection(init(Helper, { id: 'p2' }).dispatch(payload as never));
    expectPlainFlueError(error, /init\(agent, \{ id, uid \}\)/);
    expect(await getAgentInstance(Helper, 'p2')).toBeNull();
    expect(await getAgentInstance(Helper, 'other')).toBeNull();
  });

  it('validates the message like dispatch(): malformed → InvalidRequestError', async () => {
    await ctx.start([Helper]);
    const error = await rejection(init(Helper, { id: 'p3' }).dispatch({ message: { kind: 'signal', type: 'instructions', body: 'x' } }));
    expectFlueError(error, InvalidRequestError, 'invalid_request');
  });

  it('pins the incarnation after the first receipt: later sends carry its uid and drop initialData', async () => {
    await ctx.start([Helper]);
    ctx.server.script({ text: 'a' }, { text: 'b' }, { text: 'c' });
    // uid: null on first contact = create only; an unpinned second send would fail with 409.
    const handle = init(Helper, { id: 'pin', uid: null });
    const first = await handle.dispatch({ message: 'one', initialData: { v: 1 } });
    // An unpinned string-uid send with initialData would be rejected as invalid_request.
    const second = await handle.dispatch({ message: 'two', initialData: { v: 2 } });
    const third = await handle.dispatch('three');
    expect(second.uid).toBe(first.uid);
    expect(third.uid).toBe(first.uid);
    const reply = await handle.read(third);
    expect(reply.uid).toBe(first.uid);
    // Another handle with uid: null still sees the instance as existing.
    const error = await rejection(init(Helper, { id: 'pin', uid: null }).dispatch('four'));
    expect(expectFlueError(error, AgentInstanceExistsError, 'agent_instance_exists').uid).toBe(first.uid);
  });

  it('surfaces the first-contact condition: a wrong uid rejects AgentInstanceNotFoundError', async () => {
    await ctx.start([Helper]);
    ctx.server.script({ text: 'a' });
    const created = await dispatch(Helper, { id: 'cond', message: 'hi' });
    const error = await rejection(init(Helper, { id: 'cond', uid: 'inst_01ARZ3NDEKTSV4RRFFQ69G5FAV' }).dispatch('x'));
    expectFlueError(error, AgentInstanceNotFoundError, 'agent_instance_not_found');
    const matching = await init(Helper, { id: 'cond', uid: created.uid }).dispatch({ message: 'y' });
    expect(matching.uid).toBe(created.uid);
    ctx.server.script({ text: 'b' });
    await init(Helper, { id: 'cond' }).read(matching);
  });

  it('passes an idempotencyKey through like dispatch()', async () => {
    await ctx.start([Helper]);
    ctx.server.script({ text: 'a' });
    const handle = init(Helper, { id: 'hk' });
    const first = await handle.dispatch({ message: 'hi', idempotencyKey: 'once' });
    expect(first.submissionId).toMatch(/^sub_ik_[0-9a-f]{32}$/);
    const again = await handle.dispatch({ message: 'hi', idempotencyKey: 'once' });
    expect(again).toEqual({ ...first, deduplicated: true });
    await handle.read(first);
    expect(ctx.server.requests).toHaveLength(1);
  });
});

describe('handle.read()', () => {
  it('read(receipt) resolves the reply and copies the receipt uid onto it', async () => {
    await ctx.start([Helper]);
    ctx.server.script({ text: 'The answer is 42.' });
    const handle = init(Helper, { id: 'rd' });
    const receipt = await handle.dispatch('question');
    const reply = await handle.read(receipt);
    expect(reply).toEqual({ text: 'The answer is 42.', data: {}, uid: receipt.uid, submissionId: receipt.submissionId });
  });

  it('read(submissionId) works with a bare id, from a different handle', async () => {
    await ctx.start([Helper]);
    ctx.server.script({ text: 'bare id reply' });
    const receipt = await dispatch(Helper, { id: 'rd2', message: 'q' });
    const reply = await init(Helper, { id: 'rd2' }).read(receipt.submissionId);
    expect(reply.text).toBe('bare id reply');
    expect(reply.submissionId).toBe(receipt.submissionId);
    expect(reply.data).toEqual({});
  });

  it('rejects an empty target with a plain Error', async () => {
    await ctx.start([Helper]);
    expectPlainFlueError(await rejection(init(Helper, { id: 'rd3' }).read('')));
  });

  it('rejects AgentInstanceNotFoundError on an instance never contacted', async () => {
    await ctx.start([Helper]);
    const error = await rejection(init(Helper, { id: 'never' }).read('sub_01ARZ3NDEKTSV4RRFFQ69G5FAV'));
    expectFlueError(error, AgentInstanceNotFoundError, 'agent_instance_not_found');
    expect(await getAgentInstance(Helper, 'never')).toBeNull();
  });

  it('a long-settled submission resolves at once, and reading twice gives the same reply', async () => {
    await ctx.start([Helper]);
    ctx.server.script({ text: 'settled long ago' }, { text: 'later' });
    const handle = init(Helper, { id: 'again' });
    const receipt = await handle.dispatch('q');
    const first = await handle.read(receipt);
    // More conversation afterwards does not change the earlier submission's reply.
    const later = await handle.dispatch('q2');
    await handle.read(later);
    const second = await within(handle.read(receipt), 500);
    expect(second).toEqual(first);
    const third = await within(init(Helper, { id: 'again' }).read(receipt.submissionId), 500);
    expect(third).toEqual({ ...first, uid: undefined });
    expect(first.text).toBe('settled long ago');
  });

  it('an already-aborted signal rejects with the signal reason', async () => {
    await ctx.start([Helper]);
    ctx.server.script({ text: 'x' });
    const handle = init(Helper, { id: 'sig' });
    const receipt = await handle.dispatch('q');
    const reason = new Error('caller gave up');
    expect(await rejection(handle.read(receipt, { signal: AbortSignal.abort(reason) }))).toBe(reason);
    // Default reason: a DOMException named AbortError.
    const controller = new AbortController();
    controller.abort();
    const error = await rejection(handle.read(receipt, { signal: controller.signal }));
    expect(error).toBeInstanceOf(DOMException);
    expect((error as DOMException).name).toBe('AbortError');
    // Even an already-settled submission: the signal is checked first.
    await handle.read(receipt);
    expect(await rejection(handle.read(receipt, { signal: AbortSignal.abort(reason) }))).toBe(reason);
  });

  it('cancelling a read is local: the submission keeps running and a later read gets the reply', async () => {
    await ctx.start([Helper]);
    ctx.server.script({ text: 'slow but complete reply', chunkDelayMs: 60 });
    const handle = init(Helper, { id: 'cancel' });
    const receipt = await handle.dispatch('q');
    const controller = new AbortController();
    const reading = handle.read(receipt, { signal: controller.signal });
    await ctx.server.waitForRequests(1);
    const reason = new Error('stop waiting');
    controller.abort(reason);
    expect(await rejection(reading)).toBe(reason);
    const reply = await handle.read(receipt);
    expect(reply.text).toBe('slow but complete reply');
  });

  it('onEvent receives the projected chunks: conversation-reset first, deltas, then submission-settled', async () => {
    await ctx.start([Helper]);
    ctx.server.script({ text: 'streamed words arrive here', chunkDelayMs: 5 });
    const handle = init(Helper, { id: 'events' });
    const receipt = await handle.dispatch('q');
    const chunks: ConversationStreamChunk[] = [];
    const reply = await handle.read(receipt, { onEvent: (chunk) => chunks.push(chunk) });
    const types = chunks.map((chunk) => chunk.type);
    expect(types[0]).toBe('conversation-reset');
    expect(types).toContain('message-delta');
    expect(types).not.toContain('stream-checkpoint');
    const deltas = chunks.flatMap((chunk) => (chunk.type === 'message-delta' ? [chunk.delta] : []));
    expect(deltas.join('')).toBe('streamed words arrive here');
    const settled = chunks.filter((chunk) => chunk.type === 'submission-settled');
    expect(settled).toHaveLength(1);
    expect(settled[0]).toMatchObject({ submissionId: receipt.submissionId, outcome: 'completed' });
    expect(types.at(-1)).toBe('submission-settled');
    expect(reply.text).toBe('streamed words arrive here');
  });

  it('onEvent on a later read replays earlier history from the start', async () => {
    await ctx.start([Helper]);
    ctx.server.script({ text: 'first reply' }, { text: 'second reply' });
    const handle = init(Helper, { id: 'events2' });
    const first = await handle.dispatch('q1');
    await handle.read(first);
    const second = await handle.dispatch('q2');
    const chunks: ConversationStreamChunk[] = [];
    await handle.read(second, { onEvent: (chunk) => chunks.push(chunk) });
    const settledIds = chunks.flatMap((chunk) => (chunk.type === 'submission-settled' ? [chunk.submissionId] : []));
    const reset = chunks[0];
    expect(reset?.type).toBe('conversation-reset');
    // The replay starts at the birth: its reset snapshot holds no settlement yet, and the first
    // submission's settlement follows as its own chunk, before the second's.
    expect(reset?.type === 'conversation-reset' && reset.snapshot.settlements).toEqual([]);
    expect(settledIds).toEqual([first.submissionId, second.submissionId]);
  });
});

describe('handle.abort() and AgentRunError', () => {
  it('aborts a hanging model stream and every queued submission behind it', async () => {
    await ctx.start([Helper]);
    ctx.server.script({ text: 'partial answer that never ends', hangAfterChunks: 3 });
    const handle = init(Helper, { id: 'ab' });
    const running = await handle.dispatch('first');
    await ctx.server.waitForRequests(1);
    const queued = await handle.dispatch('second');
    const readRunning = handle.read(running);
    const readQueued = handle.read(queued);
    await handle.abort();
    const runError = await rejection(readRunning);
    expect(runError).toBeInstanceOf(AgentRunError);
    expect(runError).toMatchObject({ name: 'AgentRunError', outcome: 'aborted', submissionId: running.submissionId });
    expect((runError as AgentRunError).cause).toMatchObject({ type: 'submission_aborted' });
    const queuedError = await rejection(readQueued);
    expect(queuedError).toBeInstanceOf(AgentRunError);
    expect(queuedError).toMatchObject({ outcome: 'aborted', submissionId: queued.submissionId });
    // The queued submission never reached the model: it is settled, so no call of it can follow.
    expect(ctx.server.requests).toHaveLength(1);
    // A read after the fact still sees the durable aborted settlement.
    expect(await rejection(init(Helper, { id: 'ab' }).read(running.submissionId))).toMatchObject({ outcome: 'aborted' });
  });

  it('the instance keeps working after an abort', async () => {
    await ctx.start([Helper]);
    ctx.server.script({ text: 'hang', hangAfterChunks: 1 }, { text: 'fresh answer' });
    const handle = init(Helper, { id: 'ab2' });
    const aborted = await handle.dispatch('first');
    await ctx.server.waitForRequests(1);
    await handle.abort();
    await rejection(handle.read(aborted));
    const next = await handle.dispatch('second');
    expect((await handle.read(next)).text).toBe('fresh answer');
  });

  it('abort on an idle or never-contacted instance resolves without error', async () => {
    await ctx.start([Helper]);
    await expect(init(Helper, { id: 'idle' }).abort()).resolves.toBeUndefined();
    expect(await getAgentInstance(Helper, 'idle')).toBeNull();
  });

  it('a failed submission rejects read() with AgentRunError outcome failed (unknown model specifier)', async () => {
    await ctx.start([BadModel]);
    const handle = init(BadModel, { id: 'bad' });
    const receipt = await handle.dispatch('hi');
    const error = await rejection(handle.read(receipt));
    expect(error).toBeInstanceOf(AgentRunError);
    expect(error).toMatchObject({ name: 'AgentRunError', outcome: 'failed', submissionId: receipt.submissionId });
    expect((error as AgentRunError).cause).toBeDefined();
    expect(ctx.server.requests).toHaveLength(0);
  });

  it('a model error fails the submission with cause type operation_failed', async () => {
    await ctx.start([Helper]);
    ctx.server.script({ status: 400, errorBody: 'bad request from scripted model' });
    const handle = init(Helper, { id: 'modelerr' });
    const receipt = await handle.dispatch('hi');
    const error = await rejection(handle.read(receipt));
    expect(error).toMatchObject({ outcome: 'failed', submissionId: receipt.submissionId });
    expect((error as AgentRunError).cause).toMatchObject({ type: 'operation_failed' });
  });
});

describe('getAgentInstance()', () => {
  it('is null before first contact and { id, uid } after', async () => {
    await ctx.start([Helper]);
    expect(await getAgentInstance(Helper, 'g')).toBeNull();
    ctx.server.script({ text: 'x' });
    const receipt = await dispatch(Helper, { id: 'g', message: 'hi' });
    expect(await getAgentInstance(Helper, 'g')).toEqual({ id: 'g', uid: receipt.uid });
    await init(Helper, { id: 'g' }).read(receipt);
  });

  it('rejects a non-function agent with InvalidRequestError', async () => {
    await ctx.start([Helper]);
    const error = await rejection(getAgentInstance('Helper' as unknown as Agent, 'g'));
    expectFlueError(error, InvalidRequestError, 'invalid_request');
  });

  it('rejects an unregistered agent, an empty id, and a missing runtime with plain Errors', async () => {
    expectPlainFlueError(await rejection(getAgentInstance(Helper, 'g')), /configured/);
    await ctx.start([Helper]);
    expectPlainFlueError(await rejection(getAgentInstance(Unregistered, 'g')), /not registered/);
    expectPlainFlueError(await rejection(getAgentInstance(Helper, '')), /instance id/);
    expectPlainFlueError(await rejection(getAgentInstance(Helper, '  ')), /instance id/);
  });
});
