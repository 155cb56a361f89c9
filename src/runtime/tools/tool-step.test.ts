import { describe, expect, it, vi } from 'vitest';
import { createToolStep } from './tool-step.ts';
import type { ToolStepOptions } from './tool-step.ts';

/** An in-memory record store standing in for the engine's durable stream. */
function harness(recorded: Record<string, unknown> = {}) {
  const records = new Map(Object.entries(recorded));
  const lines: { level: string; message: string; attributes?: Record<string, unknown> }[] = [];
  const order: string[] = [];
  const options: ToolStepOptions = {
    toolCallId: 'call_1',
    toolName: 'provision',
    lookup: (name) => (records.has(name) ? { found: true, value: records.get(name) } : { found: false }),
    record: async (name, value) => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      order.push(`record:${name}`);
      records.set(name, value);
    },
    log: {
      info: (message, attributes) => void lines.push({ level: 'info', message, attributes }),
      warn: (message, attributes) => void lines.push({ level: 'warn', message, attributes }),
      error: (message, attributes) => void lines.push({ level: 'error', message, attributes }),
    },
  };
  return { step: createToolStep(options), records, lines, order, options };
}

describe('createToolStep', () => {
  it('runs fn, records the value before resolving, and logs completion', async () => {
    const { step, records, lines, order } = harness();
    const result = await step.do('create-tenant', async () => {
      order.push('fn');
      return { id: 't1', createdAt: new Date('2024-01-01T00:00:00.000Z') };
    });
    order.push('resolved');
    expect(result).toEqual({ id: 't1', createdAt: '2024-01-01T00:00:00.000Z' });
    expect(records.get('create-tenant')).toEqual(result);
    expect(order).toEqual(['fn', 'record:create-tenant', 'resolved']);
    expect(lines).toEqual([{ level: 'info', message: 'step "create-tenant" completed', attributes: { step: 'create-tenant' } }]);
  });

  it('returns a clone, detached from the recorded copy', async () => {
    const { step, records } = harness();
    const original = { tags: ['a'] };
    const result = await step.do('tags', () => original);
    expect(result).not.toBe(original);
    result.tags.push('mutated');
    expect(records.get('tags')).toEqual({ tags: ['a'] });
  });

  it('replays a recorded value without calling fn', async () => {
    const { step, lines } = harness({ 'create-tenant': { id: 't1' } });
    const fn = vi.fn(() => ({ id: 'other' }));
    const result = await step.do('create-tenant', fn);
    expect(fn).not.toHaveBeenCalled();
    expect(result).toEqual({ id: 't1' });
    expect(lines).toEqual([{ level: 'info', message: 'step "create-tenant" replayed', attributes: { step: 'create-tenant' } }]);
  });

  it('returns identical shapes on first run and on replay', async () => {
    const first = harness();
    const value = await first.step.do('s', () => ({ when: new Date(0), skip: undefined, n: 1 }));
    const replay = harness(Object.fromEntries(first.records));
    const again = await replay.step.do('s', () => ({ when: new Date(1), n: 2 }));
    expect(again).toEqual(value);
    expect(again).toEqual({ when: '1970-01-01T00:00:00.000Z', n: 1 });
  });

  it('resumes from the first step that never completed', async () => {
    const { step, records } = harness({ 'seed:a': 'A' });
    const calls: string[] = [];
    for (const name of ['a', 'b']) {
      await step.do(`seed:${name}`, () => {
        calls.push(name);
        return name.toUpperCase();
      });
    }
    expect(calls).toEqual(['b']);
    expect(records.get('seed:b')).toBe('B');
  });

  it('allows a void step value', async () => {
    const { step, records } = harness();
    expect(await step.do('notify', () => undefined)).toBeUndefined();
    expect(records.has('notify')).toBe(true);
  });

  it('rejects an empty or missing name', async () => {
    const { step } = harness();
    await expect(step.do('', () => 1)).rejects.toThrow(
      '[flue] Tool "provision" called step.do() without a name; the name must be a non-empty string.',
    );
    await expect(step.do(undefined as unknown as string, () => 1)).rejects.toThrow('without a name');
    await expect(step.do('x', undefined as unknown as () => number)).rejects.toThrow(
      '[flue] Tool "provision" called step.do("x") without a function to run.',
    );
  });

  it('rejects reusing a name within one call, whether it completed or replayed', async () => {
    const { step } = harness({ replayed: 1 });
    await step.do('fresh', () => 1);
    await step.do('replayed', () => 2);
    for (const name of ['fresh', 'replayed']) {
      await expect(step.do(name, () => 3)).rejects.toThrow(`[flue] Tool "provision" ran step.do("${name}") twice in one call.`);
    }
  });

  it('rejects a concurrent reuse of a name', async () => {
    const { step } = harness();
    const first = step.do('same', () => 1);
    await expect(step.do('same', () => 2)).rejects.toThrow('twice in one call');
    expect(await first).toBe(1);
  });

  it('throws for values that are not JSON-serializable, without recording them', async () => {
    const { step, records } = harness();
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const cases: [string, unknown, string][] = [
      ['map', new Map([['a', 1]]), 'a Map instance at step "map"'],
      ['big', { n: 1n }, 'a BigInt at step "big".n'],
      ['cycle', cyclic, 'a circular reference at step "cycle".self'],
      ['fn', { f: () => 1 }, 'a function at step "fn".f'],
    ];
    for (const [name, value, reason] of cases) {
      await expect(step.do(name, () => value)).rejects.toThrow(
        `[flue] Tool "provision" step "${name}" produced a value that is not JSON-serializable: ${reason}`,
      );
      expect(records.has(name)).toBe(false);
    }
  });

  it('propagates a throw from fn without recording', async () => {
    const { step, records, lines } = harness();
    const failure = new Error('billing down');
    await expect(
      step.do('charge', () => {
        throw failure;
      }),
    ).rejects.toBe(failure);
    await expect(step.do('async-charge', async () => Promise.reject(failure))).rejects.toBe(failure);
    expect(records.size).toBe(0);
    expect(lines).toEqual([]);
  });

  it('propagates a failed record and does not resolve', async () => {
    const { options } = harness();
    const failure = new Error('store unavailable');
    const step = createToolStep({ ...options, record: () => Promise.reject(failure) });
    await expect(step.do('x', () => 1)).rejects.toBe(failure);
  });
});
