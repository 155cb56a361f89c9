/**
 * dispatch(), init() handles and getAgentInstance() apply the same shape limits as HTTP before
 * the runtime is reached: malformed ids, keys and initialData are InvalidRequestError, while a
 * missing id stays a plain human-readable Error (seed 004 "dispatch()", "init()"; errors.md §3).
 */
import { describe, expect, it } from 'vitest';
import { InvalidRequestError, dispatch, getAgentInstance, init, useModel } from '@flue/runtime';
import { useScriptedRuntime } from '../support/scripted-runtime.ts';
import { MODEL, expectFlueError, rejection, thrown } from './helpers.ts';

const ctx = useScriptedRuntime();

function Echo() {
  useModel(MODEL);
  return 'You are a test agent.';
}

function nested(depth: number): unknown {
  let value: unknown = 0;
  for (let i = 0; i < depth; i++) value = { d: value };
  return value;
}

describe('instance ids', () => {
  it('dispatch() rejects control characters, lone surrogates and over-long ids with InvalidRequestError', async () => {
    await ctx.start([Echo]);
    const cases: [string, RegExp][] = [
      ['victim\u0000x', /^id contains the control character U\+0000 at index 6/],
      ['a\u0085', /^id contains the control character U\+0085 at index 1/],
      ['a\ud800', /^id contains a lone surrogate U\+D800 at index 1/],
      ['x'.repeat(513), /^id is 513 characters long; at most 512 are allowed/],
    ];
    for (const [id, details] of cases) {
      const error = expectFlueError(await rejection(dispatch(Echo, { id, message: 'hi' })), InvalidRequestError, 'invalid_request');
      expect(error.details).toMatch(details);
    }
    expect(await getAgentInstance(Echo, 'victim')).toBeNull();
    expect(ctx.server.requests).toHaveLength(0);
  });

  it('a missing or empty id stays a plain Error', async () => {
    await ctx.start([Echo]);
    for (const id of ['', '   ', undefined]) {
      const error = await rejection(dispatch(Echo, { id: id as string, message: 'hi' }));
      expect(error).not.toBeInstanceOf(InvalidRequestError);
      expect((error as Error).message).toMatch(/non-empty instance id/);
    }
    expect(thrown(() => init(Echo, { id: '' }))).not.toBeInstanceOf(InvalidRequestError);
  });

  it('init() checks the id when the handle is made; getAgentInstance() checks it too', async () => {
    await ctx.start([Echo]);
    const error = expectFlueError(
      thrown(() => init(Echo, { id: 'victim\u0000x' })),
      InvalidRequestError,
      'invalid_request',
    );
    expect(error.details).toMatch(/^id contains the control character U\+0000 at index 6/);
    const lookup = expectFlueError(await rejection(getAgentInstance(Echo, 'victim\u0000x')), InvalidRequestError, 'invalid_request');
    expect(lookup.details).toMatch(/U\+0000 at index 6/);
  });

  it('handle.read() rejects a submission id with control characters', async () => {
    await ctx.start([Echo]);
    const error = expectFlueError(await rejection(init(Echo, { id: 'r' }).read('sub_\u0000')), InvalidRequestError, 'invalid_request');
    expect(error.details).toMatch(/^submissionId contains the control character U\+0000 at index 4/);
  });
});

describe('admission fields', () => {
  it('idempotencyKey and uid are checked for control characters and well-formedness', async () => {
    await ctx.start([Echo]);
    const key = expectFlueError(
      await rejection(dispatch(Echo, { id: 'k', message: 'hi', idempotencyKey: 'a\u0000b' })),
      InvalidRequestError,
      'invalid_request',
    );
    expect(key.details).toMatch(/^idempotencyKey contains the control character U\+0000 at index 1/);
    const uid = expectFlueError(
      await rejection(init(Echo, { id: 'k', uid: 'inst_\ud800' }).dispatch('hi')),
      InvalidRequestError,
      'invalid_request',
    );
    expect(uid.details).toMatch(/^uid contains a lone surrogate U\+D800 at index 5/);
    expect(await getAgentInstance(Echo, 'k')).toBeNull();
  });

  it('initialData nested 12,000 deep is invalid_request, not a stack overflow', async () => {
    await ctx.start([Echo]);
    const error = expectFlueError(
      await rejection(dispatch(Echo, { id: 'deep', message: 'hi', initialData: nested(12_000) })),
      InvalidRequestError,
      'invalid_request',
    );
    expect(error.details).toMatch(/^initialData is nested more than 64 levels deep/);
    const viaHandle = await rejection(init(Echo, { id: 'deep' }).dispatch({ message: 'hi', initialData: nested(12_000) }));
    expectFlueError(viaHandle, InvalidRequestError, 'invalid_request');
    expect(await getAgentInstance(Echo, 'deep')).toBeNull();
  });

  it('initialData must be JSON-compatible', async () => {
    await ctx.start([Echo]);
    const error = expectFlueError(
      await rejection(dispatch(Echo, { id: 'fn', message: 'hi', initialData: { run: () => 1 } })),
      InvalidRequestError,
      'invalid_request',
    );
    expect(error.details).toMatch(/^initialData\.run is a function/);
  });
});
