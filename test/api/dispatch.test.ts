/**
 * dispatch(): validation order and error classes, receipts, message snapshotting, conditional
 * sends (uid), initialData and idempotency keys (seed 004 "dispatch()", "条件发送"; delivery.md
 * §1–§4; errors.md §3, §8).
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import * as v from 'valibot';
import {
  AgentInstanceExistsError,
  AgentInstanceNotFoundError,
  InvalidRequestError,
  SubmissionConflictError,
  dispatch,
  getAgentInstance,
  init,
  useInitialData,
  useModel,
  type Agent,
} from '@flue/runtime';
import { useScriptedRuntime } from '../support/scripted-runtime.ts';
import { MODEL, expectFlueError, expectPlainFlueError, rejection, transcript } from './helpers.ts';
import { promptOf } from '../support/prompts.ts';

const ctx = useScriptedRuntime();

function Echo() {
  useModel(MODEL);
  return 'You are a test agent.';
}

function Other() {
  useModel(MODEL);
}

/** Reads a submission to its end through a handle. */
function readOf(agent: Agent, id: string, submissionId: string) {
  return init(agent, { id }).read(submissionId);
}

describe('dispatch(): configuration and addressing errors', () => {
  it('rejects with a plain [flue] Error when no runtime is configured', async () => {
    const error = await rejection(dispatch(Echo, { id: 'a', message: 'hi' }));
    expectPlainFlueError(error, /start\(/);
  });

  it('rejects a non-function agent with InvalidRequestError (invalid_request)', async () => {
    await ctx.start([Echo]);
    for (const agent of [undefined, null, 'Echo', 42, { name: 'Echo' }]) {
      const error = await rejection(dispatch(agent as unknown as Agent, { id: 'a', message: 'hi' }));
      const typed = expectFlueError(error, InvalidRequestError, 'invalid_request');
      expect(typed.status).toBe(400);
    }
  });

  it('rejects an unregistered function with a plain [flue] Error', async () => {
    await ctx.start([Echo]);
    const error = await rejection(dispatch(Other, { id: 'a', message: 'hi' }));
    expectPlainFlueError(error, /not registered/);
  });

  it('rejects a missing, empty, whitespace-only or non-string id with a plain Error', async () => {
    await ctx.start([Echo]);
    const requests = [
      { message: 'hi' },
      { id: '', message: 'hi' },
      { id: '   ', message: 'hi' },
      { id: '\n\t', message: 'hi' },
      { id: 42, message: 'hi' },
    ];
    for (const request of requests) {
      const error = await rejection(dispatch(Echo, request as never));
      expectPlainFlueError(error, /instance id/);
    }
    expect(await getAgentInstance(Echo, ' x ')).toBeNull();
  });
});

describe('dispatch(): message validation', () => {
  const malformed: [string, unknown][] = [
    ['missing message', undefined],
    ['null', null],
    ['a number', 42],
    ['an array', ['hi']],
    ['unknown kind', { kind: 'bot', body: 'x' }],
    ['no kind', { body: 'x' }],
    ['user without body', { kind: 'user' }],
    ['user with a number body', { kind: 'user', body: 5 }],
    ['attachments not an array', { kind: 'user', body: 'x', attachments: 'nope' }],
    ['attachment of unknown type', { kind: 'user', body: 'x', attachments: [{ type: 'audio', data: 'AA', mimeType: 'audio/wav' }] }],
    ['document that is not a PDF', { kind: 'user', body: 'x', attachments: [{ type: 'document', data: 'AA', mimeType: 'text/plain' }] }],
    ['signal without type', { kind: 'signal', body: 'x' }],
    ['signal with empty type', { kind: 'signal', type: '', body: 'x' }],
    ['signal without body', { kind: 'signal', type: 'slack.message' }],
    ['signal with non-string attribute', { kind: 'signal', type: 't', body: 'x', attributes: { n: 1 } }],
    ['signal with reserved type resources', { kind: 'signal', type: 'resources', body: 'x' }],
    ['signal with reserved type submission_aborted', { kind: 'signal', type: 'submission_aborted', body: 'x' }],
    ['signal with reserved type compaction', { kind: 'signal', type: 'compaction', body: 'x' }],
    ['tagName starting with a digit', { kind: 'signal', type: 't', body: 'x', tagName: '1tag' }],
    ['tagName starting with -', { kind: 'signal', type: 't', body: 'x', tagName: '-tag' }],
    ['tagName starting with .', { kind: 'signal', type: 't', body: 'x', tagName: '.tag' }],
    ['tagName with a space', { kind: 'signal', type: 't', body: 'x', tagName: 'my tag' }],
    ['tagName with markup', { kind: 'signal', type: 't', body: 'x', tagName: 'a><b' }],
  ];

  it.each(malformed)('rejects %s with InvalidRequestError and creates nothing', async (_label, message) => {
    await ctx.start([Echo]);
    const error = await rejection(dispatch(Echo, { id: 'm', message: message as never }));
    expectFlueError(error, InvalidRequestError, 'invalid_request');
    expect(await getAgentInstance(Echo, 'm')).toBeNull();
  });

  it('names the failing rule in details', async () => {
    await ctx.start([Echo]);
    const reserved = await rejection(dispatch(Echo, { id: 'm', message: { kind: 'signal', type: 'memory', body: 'x' } }));
    expect((reserved as InvalidRequestError).details).toMatch(/reserved/);
    const tag = await rejection(dispatch(Echo, { id: 'm', message: { kind: 'signal', type: 't', body: 'x', tagName: '9' } }));
    expect((tag as InvalidRequestError).details).toMatch(/tagName/);
  });

  it('accepts valid signal and user shapes', async () => {
    await ctx.start([Echo]);
    ctx.server.script({ text: 'one' }, { text: 'two' });
    const signal = await dispatch(Echo, {
      id: 'ok',
      message: { kind: 'signal', type: 'slack.message', body: 'hello', attributes: { user: 'ann' }, tagName: '_slack.msg-1' },
    });
    await readOf(Echo, 'ok', signal.submissionId);
    const user = await dispatch(Echo, { id: 'ok', message: { kind: 'user', body: '' } });
    await readOf(Echo, 'ok', user.submissionId);
    expect(transcript(ctx.server.requests[0]!)).toContain('<_slack.msg-1 type="slack.message" user="ann">');
  });
});

describe('dispatch(): idempotencyKey, uid and initialData validation', () => {
  it.each([
    ['empty', ''],
    ['longer than 256 characters', 'k'.repeat(257)],
    ['a number', 7],
    ['null', null],
    ['an object', { key: 'k' }],
  ])('rejects an idempotencyKey that is %s with InvalidRequestError', async (_label, key) => {
    await ctx.start([Echo]);
    const error = await rejection(dispatch(Echo, { id: 'k', message: 'hi', idempotencyKey: key as never }));
    expectFlueError(error, InvalidRequestError, 'invalid_request');
    expect(await getAgentInstance(Echo, 'k')).toBeNull();
  });

  it('accepts an idempotencyKey of exactly 256 characters', async () => {
    await ctx.start([Echo]);
    ctx.server.script({ text: 'ok' });
    const receipt = await dispatch(Echo, { id: 'k256', message: 'hi', idempotencyKey: 'k'.repeat(256) });
    expect(receipt.submissionId).toMatch(/^sub_ik_[0-9a-f]{32}$/);
    await readOf(Echo, 'k256', receipt.submissionId);
  });

  it('rejects a string uid combined with initialData with InvalidRequestError, before the uid check', async () => {
    await ctx.start([Echo]);
    // The instance does not exist: a uid check would say not-found, but validation comes first.
    const error = await rejection(dispatch(Echo, { id: 'u', message: 'hi', uid: 'inst_x', initialData: { a: 1 } }));
    expectFlueError(error, InvalidRequestError, 'invalid_request');
    expect(await getAgentInstance(Echo, 'u')).toBeNull();
  });

  it('rejects a uid that is neither a string nor null with InvalidRequestError', async () => {
    await ctx.start([Echo]);
    const error = await rejection(dispatch(Echo, { id: 'u', message: 'hi', uid: 5 as never }));
    expectFlueError(error, InvalidRequestError, 'invalid_request');
  });
});

describe('dispatch(): receipts and snapshotting', () => {
  it('returns { submissionId: sub_…, acceptedAt: ISO, uid: inst_… }', async () => {
    await ctx.start([Echo]);
    ctx.server.script({ text: 'ok' });
    const before = Date.now();
    const receipt = await dispatch(Echo, { id: 'r', message: 'hi' });
    const after = Date.now();
    expect(receipt.submissionId).toMatch(/^sub_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(receipt.uid).toMatch(/^inst_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(new Date(receipt.acceptedAt).toISOString()).toBe(receipt.acceptedAt);
    const accepted = Date.parse(receipt.acceptedAt);
    expect(accepted).toBeGreaterThanOrEqual(before);
    expect(accepted).toBeLessThanOrEqual(after);
    expect(receipt).not.toHaveProperty('deduplicated');
    await readOf(Echo, 'r', receipt.submissionId);
  });

  it('derives a keyed submission id as sub_ik_ + 32 hex of SHA-256(flue-submission-key, agent, id, key)', async () => {
    await ctx.start([Echo, Other]);
    ctx.server.script({ text: 'a' }, { text: 'b' });
    const receipt = await dispatch(Echo, { id: 'keyed', message: 'hi', idempotencyKey: 'approval:42' });
    const expected = createHash('sha256').update('flue-submission-key\nEcho\nkeyed\napproval:42', 'utf8').digest('hex').slice(0, 32);
    expect(receipt.submissionId).toBe(`sub_ik_${expected}`);
    // The same key on another agent (or another id) names another submission.
    const other = await dispatch(Other, { id: 'keyed', message: 'hi', idempotencyKey: 'approval:42' });
    expect(other.submissionId).toMatch(/^sub_ik_[0-9a-f]{32}$/);
    expect(other.submissionId).not.toBe(receipt.submissionId);
    await readOf(Echo, 'keyed', receipt.submissionId);
    await readOf(Other, 'keyed', other.submissionId);
  });

  it('snapshots the message at admission: mutating the caller object afterwards changes nothing', async () => {
    await ctx.start([Echo]);
    ctx.server.script({ text: 'ok' });
    const message = { kind: 'signal' as const, type: 'ticket', body: 'ORIGINAL-BODY', attributes: { priority: 'low' } };
    const pending = dispatch(Echo, { id: 'snap', message });
    // Mutate synchronously, before the admission promise even resolves, and again after.
    message.body = 'MUTATED-BODY';
    message.attributes.priority = 'MUTATED-PRIORITY';
    const receipt = await pending;
    message.type = 'mutated.type';
    await readOf(Echo, 'snap', receipt.submissionId);
    const seen = transcript(ctx.server.requests[0]!);
    expect(seen).toContain('ORIGINAL-BODY');
    expect(seen).toContain('priority="low"');
    expect(seen).toContain('type="ticket"');
    expect(seen).not.toContain('MUTATED');
    expect(seen).not.toContain('mutated.type');
  });
});

describe('conditional sends (uid)', () => {
  it('uid omitted: creates, then continues the same incarnation', async () => {
    await ctx.start([Echo]);
    ctx.server.script({ text: 'a' }, { text: 'b' });
    expect(await getAgentInstance(Echo, 'c1')).toBeNull();
    const first = await dispatch(Echo, { id: 'c1', message: 'one' });
    const second = await dispatch(Echo, { id: 'c1', message: 'two' });
    expect(second.uid).toBe(first.uid);
    expect(second.submissionId).not.toBe(first.submissionId);
    expect(await getAgentInstance(Echo, 'c1')).toEqual({ id: 'c1', uid: first.uid });
    await readOf(Echo, 'c1', second.submissionId);
  });

  it('uid: null creates; a second uid: null rejects AgentInstanceExistsError carrying the existing uid', async () => {
    await ctx.start([Echo]);
    ctx.server.script({ text: 'a' });
    const created = await dispatch(Echo, { id: 'c2', message: 'one', uid: null });
    expect(created.uid).toMatch(/^inst_/);
    const error = await rejection(dispatch(Echo, { id: 'c2', message: 'two', uid: null }));
    const exists = expectFlueError(error, AgentInstanceExistsError, 'agent_instance_exists');
    expect(exists.uid).toBe(created.uid);
    expect(exists.meta).toEqual({ uid: created.uid });
    expect(exists.status).toBe(409);
    expect(exists.details).toContain(created.uid);
    await readOf(Echo, 'c2', created.submissionId);
    // The rejected send left no trace: the model only ever saw the first message.
    expect(ctx.server.requests).toHaveLength(1);
    expect(transcript(ctx.server.requests[0]!)).not.toContain('two');
  });

  it('uid: null with initialData on an existing instance rejects AgentInstanceExistsError', async () => {
    await ctx.start([Echo]);
    ctx.server.script({ text: 'a' });
    const created = await dispatch(Echo, { id: 'c2b', message: 'one' });
    const error = await rejection(dispatch(Echo, { id: 'c2b', message: 'two', uid: null, initialData: { a: 1 } }));
    expectFlueError(error, AgentInstanceExistsError, 'agent_instance_exists');
    await readOf(Echo, 'c2b', created.submissionId);
  });

  it('a string uid continues the matching incarnation', async () => {
    await ctx.start([Echo]);
    ctx.server.script({ text: 'a' }, { text: 'b' });
    const created = await dispatch(Echo, { id: 'c3', message: 'one' });
    const continued = await dispatch(Echo, { id: 'c3', message: 'two', uid: created.uid });
    expect(continued.uid).toBe(created.uid);
    await readOf(Echo, 'c3', continued.submissionId);
    expect(transcript(ctx.server.requests.at(-1)!)).toContain('two');
  });

  it('a wrong uid rejects AgentInstanceNotFoundError and admits nothing', async () => {
    await ctx.start([Echo]);
    ctx.server.script({ text: 'a' }, { text: 'b' });
    const created = await dispatch(Echo, { id: 'c4', message: 'one' });
    const error = await rejection(dispatch(Echo, { id: 'c4', message: 'REJECTED-SEND', uid: 'inst_01ARZ3NDEKTSV4RRFFQ69G5FAV' }));
    const notFound = expectFlueError(error, AgentInstanceNotFoundError, 'agent_instance_not_found');
    expect(notFound.status).toBe(404);
    await readOf(Echo, 'c4', created.submissionId);
    const later = await dispatch(Echo, { id: 'c4', message: 'three' });
    await readOf(Echo, 'c4', later.submissionId);
    expect(transcript(ctx.server.requests.at(-1)!)).not.toContain('REJECTED-SEND');
    expect(later.uid).toBe(created.uid);
  });

  it('a string uid for an absent instance rejects AgentInstanceNotFoundError and creates nothing', async () => {
    await ctx.start([Echo]);
    const error = await rejection(dispatch(Echo, { id: 'absent', message: 'hi', uid: 'inst_01ARZ3NDEKTSV4RRFFQ69G5FAV' }));
    expectFlueError(error, AgentInstanceNotFoundError, 'agent_instance_not_found');
    expect(await getAgentInstance(Echo, 'absent')).toBeNull();
    // A later unconditional send still creates the instance fresh (no birth record was left behind).
    ctx.server.script({ text: 'ok' });
    const created = await dispatch(Echo, { id: 'absent', message: 'hi' });
    expect(created.uid).not.toBe('inst_01ARZ3NDEKTSV4RRFFQ69G5FAV');
    await readOf(Echo, 'absent', created.submissionId);
  });

  it('instances are per agent: the same id on two agents are two incarnations', async () => {
    await ctx.start([Echo, Other]);
    ctx.server.script({ text: 'a' }, { text: 'b' });
    const echo = await dispatch(Echo, { id: 'shared', message: 'hi' });
    expect(await getAgentInstance(Other, 'shared')).toBeNull();
    const other = await dispatch(Other, { id: 'shared', message: 'hi' });
    expect(other.uid).not.toBe(echo.uid);
    await readOf(Echo, 'shared', echo.submissionId);
    await readOf(Other, 'shared', other.submissionId);
  });
});

describe('initialData', () => {
  function Seeded() {
    useModel(MODEL);
    return `DATA=${JSON.stringify(useInitialData())}`;
  }
  Seeded.initialData = v.pipe(
    v.object({ issue: v.pipe(v.number(), v.integer()), label: v.optional(v.string(), 'none') }),
    v.transform((value) => ({ ...value, doubled: value.issue * 2 })),
  );

  function Untyped() {
    useModel(MODEL);
    return `DATA=${JSON.stringify(useInitialData()) ?? 'undefined'}`;
  }

  it.each([
    ['a wrong field type', { issue: 'seven' }],
    ['a non-integer', { issue: 1.5 }],
    ['absent initialData', undefined],
    ['null', null],
  ])('rejects a creating send with %s as InvalidRequestError and creates nothing', async (_label, initialData) => {
    await ctx.start([Seeded]);
    const error = await rejection(dispatch(Seeded, { id: 's1', message: 'hi', initialData }));
    expectFlueError(error, InvalidRequestError, 'invalid_request');
    expect(await getAgentInstance(Seeded, 's1')).toBeNull();
  });

  it('records the schema-parsed output, served by useInitialData(); later initialData is ignored', async () => {
    await ctx.start([Seeded]);
    ctx.server.script({ text: 'a' }, { text: 'b' });
    const created = await dispatch(Seeded, { id: 's2', message: 'hi', initialData: { issue: 7 } });
    await readOf(Seeded, 's2', created.submissionId);
    expect(ctx.server.requests[0]!.system).toBe(promptOf('DATA={"issue":7,"label":"none","doubled":14}'));
    // On an existing instance initialData is not consulted at all: not validated, not recorded.
    const later = await dispatch(Seeded, { id: 's2', message: 'again', initialData: { issue: 'not-a-number' } });
    await readOf(Seeded, 's2', later.submissionId);
    expect(ctx.server.requests[1]!.system).toBe(promptOf('DATA={"issue":7,"label":"none","doubled":14}'));
  });

  it('without a schema, records initialData as sent (and a deep copy of it)', async () => {
    await ctx.start([Untyped]);
    ctx.server.script({ text: 'a' });
    const data = { tags: ['x', 'y'], nested: { n: 1 } };
    const created = await dispatch(Untyped, { id: 'u1', message: 'hi', initialData: data });
    data.nested.n = 999;
    await readOf(Untyped, 'u1', created.submissionId);
    expect(ctx.server.requests[0]!.system).toBe(promptOf('DATA={"tags":["x","y"],"nested":{"n":1}}'));
  });

  it('without initialData and without a schema, useInitialData() is undefined', async () => {
    await ctx.start([Untyped]);
    ctx.server.script({ text: 'a' });
    const created = await dispatch(Untyped, { id: 'u2', message: 'hi' });
    await readOf(Untyped, 'u2', created.submissionId);
    expect(ctx.server.requests[0]!.system).toBe(promptOf('DATA=undefined'));
  });
});

describe('idempotencyKey', () => {
  it('an exact replay returns the original receipt with deduplicated: true and runs no second turn', async () => {
    await ctx.start([Echo]);
    ctx.server.script({ text: 'first' }, { text: 'next' });
    const request = { id: 'i1', message: { kind: 'user' as const, body: 'KEYED' }, idempotencyKey: 'k-1' };
    const original = await dispatch(Echo, request);
    await readOf(Echo, 'i1', original.submissionId);
    const replay = await dispatch(Echo, { ...request, message: { ...request.message } });
    expect(replay).toEqual({ ...original, deduplicated: true });
    // The string shorthand is the same message, so it is the same identity too.
    const shorthand = await dispatch(Echo, { id: 'i1', message: 'KEYED', idempotencyKey: 'k-1' });
    expect(shorthand.submissionId).toBe(original.submissionId);
    expect(shorthand.deduplicated).toBe(true);
    // Drive one more real submission: had the replay run, the model would see KEYED twice.
    const next = await dispatch(Echo, { id: 'i1', message: 'after' });
    await readOf(Echo, 'i1', next.submissionId);
    expect(ctx.server.requests).toHaveLength(2);
    expect(transcript(ctx.server.requests[1]!).match(/KEYED/g)).toHaveLength(1);
  });

  it('a replay while the original is still queued also deduplicates', async () => {
    await ctx.start([Echo]);
    ctx.server.script({ text: 'first' });
    const original = await dispatch(Echo, { id: 'i2', message: 'hi', idempotencyKey: 'k-2' });
    const replay = await dispatch(Echo, { id: 'i2', message: 'hi', idempotencyKey: 'k-2' });
    expect(replay.submissionId).toBe(original.submissionId);
    expect(replay.deduplicated).toBe(true);
    await readOf(Echo, 'i2', original.submissionId);
    expect(ctx.server.requests).toHaveLength(1);
  });

  it('the same key with a different payload rejects SubmissionConflictError naming the original', async () => {
    await ctx.start([Echo]);
    ctx.server.script({ text: 'first' });
    const original = await dispatch(Echo, { id: 'i3', message: 'approve', idempotencyKey: 'approval:1' });
    for (const request of [
      { id: 'i3', message: 'reject', idempotencyKey: 'approval:1' },
      { id: 'i3', message: 'approve', idempotencyKey: 'approval:1', initialData: { extra: true } },
      { id: 'i3', message: { kind: 'signal' as const, type: 'approve', body: '' }, idempotencyKey: 'approval:1' },
    ]) {
      const error = await rejection(dispatch(Echo, request));
      const conflict = expectFlueError(error, SubmissionConflictError, 'submission_conflict');
      expect(conflict.submissionId).toBe(original.submissionId);
      expect(conflict.meta).toEqual({ submissionId: original.submissionId });
      expect(conflict.status).toBe(409);
    }
    await readOf(Echo, 'i3', original.submissionId);
    expect(ctx.server.requests).toHaveLength(1);
  });

  it('a keyed retry of a successful uid: null create converges on the original instead of 409', async () => {
    await ctx.start([Echo]);
    ctx.server.script({ text: 'first' });
    const original = await dispatch(Echo, { id: 'i4', message: 'hi', uid: null, idempotencyKey: 'create-once' });
    const retry = await dispatch(Echo, { id: 'i4', message: 'hi', uid: null, idempotencyKey: 'create-once' });
    expect(retry).toEqual({ ...original, deduplicated: true });
    await readOf(Echo, 'i4', original.submissionId);
  });
});
