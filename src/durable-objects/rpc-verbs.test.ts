import { describe, expect, expectTypeOf, it } from 'vitest';
import type { VerbName } from '../runtime/engine/verbs.ts';
import { envelope } from './rpc-errors.ts';
import { packValue } from './rpc-values.ts';
import { CROSSINGS, type RpcCrossing, VERB_NAMES, receiveVerb, sendVerb } from './rpc-verbs.ts';

describe('the RPC crossing table', () => {
  it('has one crossing per verb of the engine, each on its own object method', () => {
    expectTypeOf<keyof typeof CROSSINGS>().toEqualTypeOf<VerbName>();
    const methods = VERB_NAMES.map((verb) => CROSSINGS[verb].method);
    expect(new Set(methods).size).toBe(VERB_NAMES.length);
    expect(methods.every((method) => method.startsWith('__flue'))).toBe(true);
  });

  it('does not compile without a crossing for every verb', () => {
    const { poll: _poll, ...rest } = CROSSINGS;
    // @ts-expect-error -- `poll` has no crossing: the table is keyed by every verb name
    const incomplete: { [K in VerbName]: RpcCrossing } = rest;
    expect(Object.keys(incomplete)).not.toContain('poll');
  });
});

describe('sending and serving a verb', () => {
  it('answers a stub that throws as it is called with a rejection, never a synchronous throw', async () => {
    const broken = {
      __fluePoll: () => {
        throw new Error('no such object');
      },
    };
    const sent = sendVerb(broken, 'poll', ['i1', 'sub_1', { afterSeq: -1, waitMs: 10, batches: false }]);
    await expect(sent).rejects.toThrow('no such object');
  });

  it('reads a streamed result back and passes an envelope that failed as it came', async () => {
    const value = { batches: [], settled: { outcome: 'completed' as const } };
    const stub = { __fluePoll: async () => ({ ok: true as const, value: packValue(value) }) };
    await expect(sendVerb(stub, 'poll', ['i1', 'sub_1', { afterSeq: -1, waitMs: 10, batches: false }])).resolves.toEqual({
      ok: true,
      value,
    });
    const failed = { ok: false as const, error: { name: 'Error', message: 'gone' } };
    const failing = { __fluePoll: async () => failed };
    await expect(sendVerb(failing, 'poll', ['i1', 'sub_1', { afterSeq: -1, waitMs: 10, batches: false }])).resolves.toBe(failed);
  });

  it('serves with the addressed instance id, and packs what the verb answers', async () => {
    const calls: unknown[][] = [];
    const served = receiveVerb('poll').serve('i1', ['sub_1', { afterSeq: 3 }], (args) => {
      calls.push(args);
      return Promise.resolve({ batches: [] });
    });
    await expect(Promise.resolve(served)).resolves.toEqual({ batches: [] });
    expect(calls).toEqual([['i1', 'sub_1', { afterSeq: 3 }]]);
  });
});

describe('the envelope of a served call', () => {
  it('wraps an answer, a rejection and a synchronous throw alike', async () => {
    await expect(envelope(() => 7)).resolves.toEqual({ ok: true, value: 7 });
    await expect(envelope(() => Promise.reject(new Error('late')))).resolves.toMatchObject({ ok: false, error: { message: 'late' } });
    const thrown = envelope(() => {
      throw new Error('early');
    });
    await expect(thrown).resolves.toMatchObject({ ok: false, error: { message: 'early' } });
  });
});
