import { describe, expect, expectTypeOf, it } from 'vitest';
import type { VerbName } from '../runtime/engine/verbs.ts';
import { CROSSINGS, type RpcCrossing, VERB_NAMES } from './rpc-verbs.ts';

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
